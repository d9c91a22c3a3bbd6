"""Hostile fixture secrets ("canaries") and user-supplied secrets.

A canary is unique, carries at least 96 random bits, and contains, wherever its kind
allows, the characters that every encoding changes (``+ / = % ~ : @``, space, quotes,
backslash, non-ASCII), so that a transformation shows up as an encoded form and is never
lost silently. Canaries are reproducible from a seed.

A ``Secret`` never shows its value in ``repr``/``str``: only its id and kind.
"""

from __future__ import annotations

import functools
import math
import random
import re
import string
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

__all__ = [
    "KINDS",
    "CanaryFactory",
    "Kind",
    "Secret",
    "SecretClass",
    "WeakSecretError",
    "canary_lookalikes",
    "estimate_bits",
    "MIN_SECRET_BITS",
]

#: A user-supplied secret must carry at least this many estimated bits to be accepted.
MIN_SECRET_BITS = 64.0
#: Every generated canary carries at least this many random bits.
MIN_CANARY_BITS = 96.0


class SecretClass(str, Enum):
    """Policy class: direct secrets may appear nowhere, the others only in operator sinks."""

    DIRECT = "direct"
    CONTEXT = "context"
    PROSE = "prose"


class WeakSecretError(ValueError):
    """A secret too short or too guessable for reliable detection. Never carries the value."""


@dataclass(frozen=True, repr=False, eq=False)
class Secret:
    """A secret to search for. ``bits`` holds the per-character entropy estimate."""

    value: str
    kind: str
    id: str
    secret_class: SecretClass
    bits: tuple[float, ...] = field(default=())
    generated: bool = False

    @property
    def total_bits(self) -> float:
        return sum(self.bits)

    def __repr__(self) -> str:
        return f"Secret(id={self.id!r}, kind={self.kind!r}, chars={len(self.value)})"

    __str__ = __repr__

    def _repr_pretty_(self, printer: object, cycle: bool) -> None:
        # Hypothesis (failing examples) and IPython print a dataclass field by field,
        # bypassing __repr__: they would show the value.
        printer.text(repr(self))  # type: ignore[attr-defined]  # IPython's printer: no dependency

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and (self.value, self.id) == (other.value, other.id)

    def __hash__(self) -> int:
        return hash((self.value, self.id))

    @classmethod
    def from_user(
        cls,
        value: str,
        *,
        kind: str = "secret",
        id: str = "secret",
        secret_class: SecretClass | str | None = None,
        min_bits: float = MIN_SECRET_BITS,
    ) -> Secret:
        """Accept a user-supplied secret (a real token format such as ``ghp_...``).

        Raises ``WeakSecretError`` when it is too short or too guessable; the message
        names the secret's id and kind, never its value or a fragment of it.
        """
        if not isinstance(value, str):
            raise TypeError(f"secret {id!r}: expected str, got {type(value).__name__}")
        if secret_class is None:
            secret_class = KINDS[kind].secret_class if kind in KINDS else SecretClass.DIRECT
        bits = _bits_of(value)
        total = sum(bits)
        label = f"secret {id!r} (kind {kind}, {len(value)} chars)"
        if len(value.strip()) < 12:
            raise WeakSecretError(
                _without_pieces_of(
                    value,
                    f"{label} is too short for reliable detection: use at least 12 characters "
                    "(every hit must be attributable and fragments distinctive)",
                )
            )
        if total < min_bits:
            raise WeakSecretError(
                _without_pieces_of(
                    value,
                    f"{label} is too guessable for reliable detection: estimated {total:.0f} "
                    f"bits, need {min_bits:.0f}. Dictionary words, repeats, sequences and "
                    "common token prefixes count for little because they occur in ordinary "
                    "text; use a random token or let leakcheck generate a canary",
                )
            )
        return cls(value=value, kind=kind, id=id, secret_class=SecretClass(secret_class), bits=bits)


@functools.lru_cache(maxsize=512)
def _bits_of(value: str) -> tuple[float, ...]:
    """``estimate_bits``, once per value: a suite registers the same real-format token in
    test after test, and judging one costs zxcvbn 3 to 40 ms."""
    return tuple(estimate_bits(value))


def _without_pieces_of(value: str, message: str, size: int = 4) -> str:
    """``message`` with every run that also occurs in ``value`` (``size`` characters or more)
    blotted out: a weak secret made of words can share them with the message's own words
    or with a user-chosen id, and the error must not echo any piece of it."""
    pieces = {value[i : i + size] for i in range(len(value) - size + 1)}
    hide = [False] * len(message)
    for i in range(len(message) - size + 1):
        if message[i : i + size] in pieces:
            hide[i : i + size] = [True] * size
    # a blot character that the value lacks cannot start a new match
    blot = next((c for c in "*#~?" if c not in value), "")
    return "".join(blot if hidden else c for c, hidden in zip(message, hide, strict=True))


# --- entropy estimation -------------------------------------------------------------------

_SYMBOLS = set(string.punctuation + " ")
_LOWER_HEX = set("0123456789abcdef")
_UPPER_HEX = set("0123456789ABCDEF")
# Public structure: text that every token of a family shares carries no bits, or its
# fragments would match every such token in a log (``ghp_****``, a JWT's header, PEM armour).
_PUBLIC_STRUCTURE = re.compile(
    r"-----(?:BEGIN|END)[A-Z0-9 ]*-----"
    r"|^(?:gh[pousr]_|github_pat_|glpat-|xox[abeprs]-|xapp-|(?:sk|pk|rk)_(?:live|test)_"
    r"|whsec_|sk-(?:proj-|ant-)?|AKIA|ASIA|AIza|ya29\.|SG\.|npm_|pypi-|hf_"
    r"|(?:Bearer|Basic|Token|token) )"
    # a JWT's header and claims: base64url of standard JSON, shared or predictable; its
    # secrecy is the signature
    r"|^eyJ[A-Za-z0-9_-]*\.(?:eyJ[A-Za-z0-9_-]*\.)?",
    re.MULTILINE,
)
_ZXCVBN_WINDOW = 32  # dictionary words are shorter; zxcvbn is quadratic in it


def _class_alphabet(text: str) -> int:
    """Size of the alphabet a random token drawn from these character classes would use."""
    if text and (set(text) <= _LOWER_HEX or set(text) <= _UPPER_HEX):
        return 16
    size = 0
    if any(c.islower() and c.isascii() for c in text):
        size += 26
    if any(c.isupper() and c.isascii() for c in text):
        size += 26
    if any(c.isdigit() and c.isascii() for c in text):
        size += 10
    if any(c in _SYMBOLS for c in text):
        size += 33
    if any(not c.isascii() for c in text):
        size += 100
    return max(size, 2)


@functools.cache
def _zxcvbn() -> tuple[Callable[..., Any], Callable[..., Any], dict[str, dict[str, int]]]:
    """zxcvbn's matcher and scorer, and its dictionaries merged into one (imported lazily:
    only user-supplied secrets need them).

    ``zxcvbn()`` looks every substring up in each of its dictionaries in turn (a Python
    loop per dictionary); one merged dictionary gives the same matches in one loop. A word
    in several would score as its best (lowest) rank, which the merge keeps. Same estimate,
    in less than half the time; no time estimates or feedback made.
    """
    from zxcvbn import matching, scoring

    merged: dict[str, int] = {}
    for name, ranked in matching.RANKED_DICTIONARIES.items():
        if name == "user_inputs":  # what zxcvbn() is told about the user: nothing here
            continue
        shared = merged.keys() & ranked.keys()  # none in zxcvbn 4.x: its lists are disjoint
        kept = {word: merged[word] for word in shared if merged[word] < ranked[word]}
        merged.update(ranked)
        merged.update(kept)
    return matching.omnimatch, scoring.most_guessable_match_sequence, {"merged": merged}


def estimate_bits(value: str) -> list[float]:
    """Per-character entropy estimate of a user-supplied secret.

    zxcvbn splits the value into dictionary words, keyboard patterns, repeats, sequences and
    dates (which occur in ordinary text and are cheap to guess) and random runs. A pattern's
    bits are spread over its characters; a random run gets ``log2(alphabet)`` per character,
    the alphabet being that of the character classes the whole secret uses.
    """
    omnimatch, best_sequence, dictionaries = _zxcvbn()
    body = _PUBLIC_STRUCTURE.sub("", value)
    alphabet_bits = math.log2(_class_alphabet(body or value))
    bits = [alphabet_bits] * len(value)
    # zxcvbn is quadratic in the length and refuses more than 72 characters: a long secret
    # (a PEM key) is judged in windows, each pattern's bits spread over its characters.
    # Past 256 characters (a PEM body) only the head is judged: zxcvbn costs ~0.5 s per
    # kilobyte, and a long tail of random material gets its class-based bits.
    judged = len(value) if len(value) <= 256 else _ZXCVBN_WINDOW
    # overlapping windows, so a word across a window edge is still seen whole
    for offset in range(0, max(judged - _ZXCVBN_WINDOW // 2, 1), _ZXCVBN_WINDOW // 2):
        window = value[offset : offset + _ZXCVBN_WINDOW]
        for match in best_sequence(window, omnimatch(window, dictionaries))["sequence"]:
            if match["pattern"] == "bruteforce":
                continue
            start, end = offset + match["i"], offset + match["j"] + 1
            spread = math.log2(max(float(match["guesses"]), 2.0)) / (end - start)
            for i in range(start, end):
                bits[i] = min(bits[i], spread)
    for match in _PUBLIC_STRUCTURE.finditer(value):
        for i in range(match.start(), match.end()):
            bits[i] = 0.0
    return bits


# --- canary shapes ----------------------------------------------------------------------

#: generated canary kinds with a fixed prefix (see the generators below), and what follows
#: it (random characters)
_LOOKALIKES = {
    "bearer": re.compile(r"lcb\.[A-Za-z0-9._~+/-]{8}"),  # an RFC 6750 b64token
    "api_key": re.compile(r"lck_[A-Za-z0-9]{8}"),
    "cookie": re.compile(r"lcs=[A-Za-z0-9]{8}"),
    "hostname": re.compile(r"lc-[a-z0-9]{8}[a-z0-9-]*\.corp\.internal"),
    "local_path": re.compile(r"/srv/lc-[A-Za-z0-9]{8}"),
    "prose": re.compile(r"lc-repair [A-Za-z0-9]{8}"),
    "pem": re.compile(r"-----BEGIN (?:[A-Z]+ )*(?:PRIVATE KEY|CERTIFICATE)-----"),
}


def canary_lookalikes(text: str) -> list[str]:
    """The generated canary kinds whose shape (fixed prefix + random characters) occurs in
    ``text``: a backstop where the secrets themselves are not known."""
    return [kind for kind, pattern in _LOOKALIKES.items() if pattern.search(text)]


# --- generation ---------------------------------------------------------------------------

_ALNUM = string.ascii_letters + string.digits
_LOWER_ALNUM = string.ascii_lowercase + string.digits
_B64 = _ALNUM + "+/"
# Characters every encoding changes: percent, JSON, repr, HTML, base64-alignment all see them.
_URL_HOSTILE = "+/=%~:@ '\"\\&<>#?"
_NON_ASCII = "é€ß"
#: what a header value may hold that breaks quoting, splitting and escaping (no space: a
#: value that a client trims would not be the secret any more)
_HEADER_HOSTILE = "+/=%~:@'\"\\&<>#?;,{}[]|^`$!*()"


@dataclass(frozen=True)
class Kind:
    """A kind of secret: its policy class and how to generate a hostile one."""

    name: str
    secret_class: SecretClass
    generate: Callable[[random.Random], tuple[str, tuple[float, ...]]]
    description: str


def _below(getrandbits: Callable[[int], int], n: int, width: int) -> int:
    """A uniform int in [0, n) from ``width``-bit draws, rejecting those >= n: exactly
    what ``Random.choice`` and ``randrange`` do, so canaries replay the random stream they
    always have (one Python call per character instead of three)."""
    if n <= 0:
        raise ValueError("empty range")
    r = getrandbits(width)
    while r >= n:
        r = getrandbits(width)
    return r


def _token(
    rng: random.Random,
    *,
    prefix: str,
    alphabet: str,
    length: int,
    hostile: str = "",
    suffix: str = "",
) -> tuple[str, tuple[float, ...]]:
    """prefix + random body (with every hostile character inserted once) + suffix."""
    getrandbits = rng.getrandbits
    size, width = len(alphabet), len(alphabet).bit_length()
    body = []
    for _ in range(length):
        body.append(alphabet[_below(getrandbits, size, width)])
    bits = [math.log2(size)] * length
    for ch in hostile:
        # kept off the first and last eight characters: those show up as masked heads and
        # tails ("****7KQ2"), which must be random to be attributable
        span = len(body) - 15
        at = 8 + _below(getrandbits, span, span.bit_length())
        body.insert(at, ch)
        bits.insert(at, 0.0)
    fixed_head, fixed_tail = (0.0,) * len(prefix), (0.0,) * len(suffix)
    return prefix + "".join(body) + suffix, (*fixed_head, *bits, *fixed_tail)


def _pem(label: str) -> Callable[[random.Random], tuple[str, tuple[float, ...]]]:
    import base64

    def generate(rng: random.Random) -> tuple[str, tuple[float, ...]]:
        raw = bytes(rng.getrandbits(8) for _ in range(120))
        body = base64.b64encode(raw).decode()
        lines = [body[i : i + 64] for i in range(0, len(body), 64)]
        head, tail = f"-----BEGIN {label}-----\n", f"\n-----END {label}-----\n"
        text = head + "\n".join(lines) + tail
        # 6 bits per base64 character of the body, nothing for the armour
        bits = [0.0] * len(head)
        for i, line in enumerate(lines):
            bits += [6.0] * len(line) + ([0.0] if i < len(lines) - 1 else [])
        bits += [0.0] * len(tail)
        return text, tuple(bits)

    return generate


def _kind(name: str, cls: SecretClass, description: str, **token_args: object) -> Kind:
    def generate(rng: random.Random) -> tuple[str, tuple[float, ...]]:
        return _token(rng, **token_args)  # type: ignore[arg-type]  # each kind's own _token args

    return Kind(name, cls, generate, description)


_D, _C, _P = SecretClass.DIRECT, SecretClass.CONTEXT, SecretClass.PROSE

KINDS: dict[str, Kind] = {
    k.name: k
    for k in [
        # RFC 6750 b64token: ALPHA / DIGIT / "-._~+/" then "=" padding only at the end
        _kind(
            "bearer",
            _D,
            "OAuth bearer token (Authorization header)",
            prefix="lcb.",
            alphabet=_ALNUM + "-._~+/",
            length=24,
            hostile="+/~",
        ),
        _kind(
            "api_key",
            _D,
            "API key sent in a query string",
            prefix="lck_",
            alphabet=_ALNUM,
            length=22,
            hostile=_URL_HOSTILE + "é€",
        ),
        # a header value (RFC 9110 field-vchar): visible ASCII only, so the client sends it;
        # still every character that quoting, splitting or escaping gets wrong
        _kind(
            "header_key",
            _D,
            "API key sent in a request header (visible ASCII, as a header value must be)",
            prefix="lch_",
            alphabet=_ALNUM,
            length=22,
            hostile=_HEADER_HOSTILE,
        ),
        _kind(
            "password",
            _D,
            "password in URL userinfo",
            prefix="",
            alphabet=_ALNUM,
            length=22,
            hostile=_URL_HOSTILE + "é🔑",
        ),
        # RFC 6265 cookie-octet: no space, DQUOTE, comma, semicolon or backslash
        _kind(
            "cookie",
            _D,
            "session cookie value",
            prefix="lcs=",
            alphabet=_ALNUM,
            length=22,
            hostile="+/=%~:@!#$&'()*<>?[]^`{|}",
        ),
        _kind(
            "signature",
            _D,
            "signed-URL signature (base64 with + / =)",
            prefix="",
            alphabet=_B64,
            length=24,
            hostile="+/=",
        ),
        Kind("pem_private_key", _D, _pem("PRIVATE KEY"), "PEM private key (multi-line)"),
        Kind("client_cert", _D, _pem("CERTIFICATE"), "PEM client certificate (multi-line)"),
        _kind(
            "ssh_password",
            _D,
            "SSH password",
            prefix="",
            alphabet=_ALNUM,
            length=22,
            hostile=_URL_HOSTILE + "$`é€ß",
        ),
        # DNS labels: lower-case letters, digits, hyphen; case-insensitive on the wire
        _kind(
            "hostname",
            _C,
            "internal hostname",
            prefix="lc-",
            alphabet=_LOWER_ALNUM,
            length=22,
            suffix=".corp.internal",
        ),
        _kind(
            "local_path",
            _C,
            "local filesystem path",
            prefix="/srv/lc-",
            alphabet=_ALNUM,
            length=20,
            hostile=" ~%'+=@:é",
            suffix="/id_ed25519",
        ),
        # POSIX portable user names: [a-z_][a-z0-9_-]*
        _kind(
            "user_name",
            _C,
            "user name",
            prefix="lc_",
            alphabet=_LOWER_ALNUM,
            length=22,
            hostile="_-",
        ),
        _kind(
            "resource_id",
            _C,
            "repository or resource id",
            prefix="acme-",
            alphabet=_LOWER_ALNUM,
            length=22,
            hostile="/-_.",
        ),
        _kind(
            "prose",
            _P,
            "marker phrase planted in upstream error bodies",
            prefix="Run this command to repair your credentials: lc-repair ",
            alphabet=_ALNUM,
            length=22,
        ),
    ]
}


class CanaryFactory:
    """Generates unique hostile canaries, reproducibly from ``seed``.

    The n-th canary of a kind depends only on (seed, kind, n), so a failing test can be
    replayed by printing the seed.
    """

    def __init__(self, seed: int | str | None = None, *, namespace: str = "") -> None:
        if seed is None:
            seed = random.SystemRandom().getrandbits(64)
        self.seed = seed
        self.namespace = namespace
        self._counts: dict[str, int] = {}

    def __call__(self, kind: str) -> Secret:
        return self.secret(kind)

    def secret(self, kind: str) -> Secret:
        try:
            spec = KINDS[kind]
        except KeyError:
            known = ", ".join(sorted(KINDS))
            raise ValueError(f"unknown secret kind {kind!r}; known kinds: {known}") from None
        n = self._counts.get(kind, 0) + 1
        self._counts[kind] = n
        return self.nth(kind, n, spec)

    def nth(self, kind: str, n: int, spec: Kind | None = None) -> Secret:
        """The ``n``-th canary of ``kind`` (from 1), whatever was drawn before: what a
        ``leakcheck scan --canaries-from`` rebuilds from a run's report."""
        spec = KINDS[kind] if spec is None else spec
        rng = random.Random(f"leakcheck:{self.seed}:{self.namespace}:{kind}:{n}")
        value, bits = spec.generate(rng)
        assert sum(bits) >= MIN_CANARY_BITS, (kind, sum(bits))
        return Secret(value, kind, f"{kind}#{n}", spec.secret_class, bits, generated=True)

    def all_kinds(self) -> Iterator[Secret]:
        for kind in KINDS:
            yield self.secret(kind)
