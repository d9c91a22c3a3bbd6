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
import re
import string
import zlib
from collections.abc import Callable, Iterable, Iterator
from enum import Enum

from ._lazy import lazy_compile
from ._values import Value, field
from .errors import (
    LeakcheckUsageError,
    NotASecretError,
    did_you_mean,
    looks_like_a_key,
    quoted,
    with_article,
)

TYPE_CHECKING = False  # not typing's: its import was a twentieth of a scan's start-up
if TYPE_CHECKING:  # generation only: a scan of user secrets never imports random
    import random
    from typing import Any

__all__ = [
    "CANARY_ID",
    "KINDS",
    "CanaryFactory",
    "Kind",
    "Secret",
    "SecretClass",
    "KindNameError",
    "UnknownKindError",
    "WeakSecretError",
    "canary_lookalikes",
    "drawn_again",
    "estimate_bits",
    "MIN_SECRET_BITS",
    "announce",
    "watch_secrets",
]

#: A user-supplied secret must carry at least this many estimated bits to be accepted.
MIN_SECRET_BITS = 64.0
#: Every generated canary carries at least this many random bits.
MIN_CANARY_BITS = 96.0
#: How canaries are made from a seed, numbered: a seed replays the same canaries under
#: every leakcheck of the same generation. 2: each kind's hostile characters kept off the
#: random characters at either end that carry FRAGMENT_BITS (1 kept them off eight, and a
#: token's last 11 or 12 characters were a fragment for some seeds only). A JSON report
#: says which made its canaries; ``leakcheck scan --canaries-from`` rebuilds only its own.
CANARY_GENERATION = 2
#: What a bare prefix or suffix fragment carries at least (the shortest head or tail of a
#: secret's random part reaching it is reported; ``forms`` re-exports it).
FRAGMENT_BITS = 64.0


class SecretClass(str, Enum):
    """Policy class: direct secrets may appear nowhere, the others only in operator sinks."""

    DIRECT = "direct"
    CONTEXT = "context"
    PROSE = "prose"


class WeakSecretError(LeakcheckUsageError, ValueError):
    """A secret too short or too guessable for reliable detection. Never carries the value."""


class UnknownKindError(LeakcheckUsageError, ValueError):
    """A canary kind leakcheck does not make (the message lists those it does)."""


class SecretIdError(LeakcheckUsageError, ValueError):
    """An id given to a secret of one's own that looks like a key: more likely a secret
    passed where its id goes (``register(value, id=token)``, a secrets file's ``id``).
    The id names the secret in every report: described, never quoted."""


class KindNameError(UnknownKindError):
    """A kind given to a secret of one's own that has no name's shape: more likely the
    secret itself, passed where its kind goes (``register(name, token)``). Described by
    its type and length, never quoted."""


class Secret(Value, frozen=True):
    """A secret to search for. ``bits`` holds the per-character entropy estimate."""

    value: str
    kind: str
    id: str
    secret_class: SecretClass
    bits: tuple[float, ...] = field(default=())
    generated: bool = False
    #: the bits masking counts on, where they differ from ``bits`` (an early-accepted user
    #: secret: ``bits`` is a lower bound of the estimate, and these are its class bits, so
    #: that every piece the full estimate would mask is masked; its bare fragments and
    #: masked heads and tails are sized from these too, and a hit of one verified with the
    #: full estimate: ``forms.unsure_pieces``)
    mask_bits: tuple[float, ...] = field(default=(), repr=False)

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
        # (its bits too: a value judged in full and accepted early makes other fragments
        # and windows, and the needle caches keyed by a secret gave one the other's)
        return (
            isinstance(other, Secret)
            and (self.value, self.id) == (other.value, other.id)
            and (self.bits, self.mask_bits) == (other.bits, other.mask_bits)
        )

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
        early: bool = True,
    ) -> Secret:
        """Accept a user-supplied secret (a real token format such as ``ghp_...``).

        ``early``: accept a value whose estimate provably reaches ``min_bits`` without
        zxcvbn (its fragments are then verified with the full estimate when one is found);
        false, every value is judged in full.

        Raises ``WeakSecretError`` when it is too short or too guessable; the message
        names the secret's id and kind, never its value or a fragment of it.
        """
        if looks_like_a_key(id):  # (checked first: every message below names the id)
            raise SecretIdError(
                f"a secret's id of {len(str(id))} characters looks like a key (a value given "
                "where the id goes?): an id names the secret in every report; use a name "
                "such as 'deploy_token'"
            )
        if not isinstance(value, str):
            raise NotASecretError(f"secret {id!r}: expected str, got {type(value).__name__}")
        if kind != "secret":
            # (a kind names the secret in every mask label: the value given as its kind was
            # spelled out in each one, found by a hunting helper)
            check_kind_name(kind, "Secret.from_user(value, kind=...)")
        if secret_class is None:
            secret_class = KINDS[kind].secret_class if kind in KINDS else SecretClass.DIRECT
        if not isinstance(secret_class, str) or secret_class not in _CLASS_VALUES:
            known = ", ".join(sorted(_CLASS_VALUES))
            raise LeakcheckUsageError(f"secret_class is one of {known}, not {quoted(secret_class)}")

        def label() -> str:
            # The id and the kind are the caller's, and may share pieces with a weak value:
            # blotted. The rest of the message is ours: blotting a piece of it that the
            # value shares ("********* 63 ****" for "estimated 63 bits") spelled the value
            # out. (A kind without a name's shape may be a value: described, never quoted.)
            if kind == "secret" or kind in KINDS:  # (our own: public words, never blotted)
                shown = kind
            elif is_kind_name(kind):
                shown = _without_pieces_of(value, kind)
            else:
                shown = f"of {len(str(kind))} characters"
            return (
                f"secret {_without_pieces_of(value, repr(id))} (kind {shown}, {len(value)} chars)"
            )

        # (the length first: the strength estimate of an empty value failed inside zxcvbn,
        # an IndexError where a "too short" refusal was due)
        if len(value.strip()) < 12:
            _announce_refused(value, kind, id, secret_class)
            raise WeakSecretError(
                f"{label()} is too short for reliable detection: use at least 12 characters "
                "(every hit must be attributable and fragments distinctive)"
            )
        # (``early`` false: judged by zxcvbn whatever the value, its fragments and masked
        # pieces as the full estimate makes them, not from the early accept's lower bound)
        bound = _early_bits(value, min_bits) if early else None
        mask_bits: tuple[float, ...] = ()
        if bound is None:
            bits = _bits_of(value)
        else:
            mask_bits, bits = bound
        total = sum(bits)
        if total < min_bits:
            _announce_refused(value, kind, id, secret_class)
            raise WeakSecretError(
                f"{label()} is too guessable for reliable detection: estimated {total:.0f} "
                f"bits, need {min_bits:.0f}. Dictionary words, repeats, sequences and "
                "common token prefixes count for little because they occur in ordinary "
                "text; use a random token or let leakcheck generate a canary"
            )
        # (after the strength checks: a weak value's refusal blots what it shares instead)
        for name, given in (("id", id), ("kind", kind)):
            # (in any case: an id holding a lower-cased piece of the value went unmasked
            # into every finding, found by a reviewing helper)
            folded = str(given).casefold()
            if _without_pieces_of(value.casefold(), folded, _SHARED_PIECE) != folded:
                raise SecretIdError(
                    f"a secret's {name} shares a run of {_SHARED_PIECE} characters or more "
                    "with its value: it names the secret in every report, where the piece "
                    "would show; use a name such as 'deploy_token'"
                )
        return cls(
            value=value, kind=kind, id=id, secret_class=SecretClass(secret_class), bits=bits,
            mask_bits=mask_bits,
        )  # fmt: skip


@functools.lru_cache(maxsize=512)
def _bits_of(value: str) -> tuple[float, ...]:
    """``estimate_bits``, once per value: a suite registers the same real-format token in
    test after test, and judging one costs zxcvbn 3 to 40 ms."""
    return tuple(estimate_bits(value))


#: A run an id or a kind may not share with its secret's value (``from_user``): long enough
#: that an ordinary name shares none with a random token, short enough that a piece of the
#: value (its first 12 characters given as the id) is refused.
_SHARED_PIECE = 8
#: What ``secret_class`` may be, as its members and their values.
_CLASS_VALUES = frozenset(SecretClass) | frozenset(member.value for member in SecretClass)


def _without_pieces_of(value: str, message: str, size: int = 4) -> str:
    """``message`` (what the caller chose: an id) with every run that also occurs in
    ``value`` (``size`` characters or more) blotted out: a weak secret made of words can
    share them with a user-chosen id, and the error must not echo any piece of it."""
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
    for start, end in _public_spans(value):
        for i in range(start, end):
            bits[i] = 0.0
    return bits


def _public_spans(value: str) -> Iterator[tuple[int, int]]:
    """The characters of ``value`` that every token of its family shares, or that are
    public: ``_PUBLIC_STRUCTURE``, inside a PEM key's body its structure and public key
    (``pem_structure``), and the structure of a URL or a connection string
    (``_structure_spans``)."""
    for match in _PUBLIC_STRUCTURE.finditer(value):
        yield match.span()
    if "-----BEGIN " in value:
        from .pem_structure import public_spans

        yield from public_spans(value)
    yield from _structure_spans(value)


# A URL's scheme, host and port, its path's words and its query's names, and a connection
# string's names and its values that name a protocol or a host, are what every secret of
# the service shares, and documentation prints them: counted as random, the first 25
# characters of a Slack webhook URL (``https://hooks.slack.com/s``) made a prefix fragment
# that the documentation's placeholder matched, and a database URL's suffix (its host,
# port and database) matched another URL beside ``<password>`` (found by a hunting helper).
_URL_HEAD = re.compile(
    r"[A-Za-z][A-Za-z0-9+.-]*://(?:[^:@/\s]*(?::[^@/\s]*)?@)?(?P<host>[^/?#\s:@]+(?::\d+)?)"
)
_PATH_WORD = re.compile(r"(?<=/)(?:[a-z]+(?:[-_][a-z]+)*|v\d+)(?:/|(?=$|\?|#))")
_QUERY_NAME = re.compile(r"(?<=[?&;])[A-Za-z_][A-Za-z0-9_.-]*=")
_PAIR = re.compile(r"(?P<name>[A-Za-z][A-Za-z0-9 _.-]*)=(?P<value>[^;]*)(?:;|$)")
_PUBLIC_VALUE = re.compile(
    r"(?i)(?:https?|tcp|true|false|yes|no|require|disable|[a-z0-9-]+(?:\.[a-z0-9-]+)+)"
)


def _structure_spans(value: str) -> Iterator[tuple[int, int]]:
    """A URL's (``value`` begins with one) scheme, userinfo separators, host and port,
    path words (``/services/``, ``/v1/``) and query names (``?sslmode=``); a connection
    string's (two or more ``name=value;`` pairs) names and its values that are a protocol,
    a flag or a host name. The user name, password, ids and keys keep their bits."""
    head = _URL_HEAD.match(value)
    if head is not None:
        yield 0, value.index("://") + 3
        yield head.start("host"), head.end() + value.startswith("/", head.end())
        rest = head.end()
        for word in _PATH_WORD.finditer(value, rest):
            yield word.span()
        for name in _QUERY_NAME.finditer(value, rest):
            yield name.span()
        return
    pairs = list(_PAIR.finditer(value))
    if (
        len(pairs) < 2
        or pairs[0].start() != 0
        or sum(p.end() - p.start() for p in pairs) != len(value)
    ):
        return
    for pair in pairs:
        yield pair.start("name"), pair.start("value")  # the name and its "="
        yield pair.end("value"), pair.end()  # the ";"
        if _PUBLIC_VALUE.fullmatch(pair.group("value")):
            yield pair.span("value")


# --- early accept -------------------------------------------------------------------------
#
# zxcvbn costs 3 to 40 ms a value, and its import and dictionaries another 25 ms: most of
# what ``leakcheck scan`` spent on a few secrets, and hours on 100,000. A value whose
# estimate provably reaches the bar is accepted without it. The proof is a lower bound of
# ``estimate_bits``, character by character: zxcvbn gives a match that is not a whole
# window at least 50 guesses (10 for one character: MIN_SUBMATCH_GUESSES_*), a dictionary
# word at least its rank, and ``estimate_bits`` spreads log2(guesses) over the match's
# characters. So a character inside no possible match keeps its class bits, and one inside
# possible matches gets at least log2(guesses) / length of the longest of them. The
# possible matches are a superset of zxcvbn's, found with its public data
# (``zxcvbn_bound``, generated from the installed zxcvbn and checked against it by the
# tests):
#
# * dictionary words (forward, reversed, l33t) of 1 to 3 characters, at their best rank;
#   longer ones wherever every 4-gram of a run (each character lowered, or any letter its
#   l33t spelling stands for) occurs in some word: 50 guesses over the whole run;
# * runs of 3 or more adjacent keys on any of its keyboards, runs of a constant code-point
#   step of at most 5, periodic runs (repeats), 50 guesses each; runs of digits and date
#   separators (years, dates: a match of at most 11 characters), 50 guesses per 11.
#
# A value with a possible match of EARLY_LONGEST characters or more (it could be a whole
# window, which has no such floor), whose lowering changes its length (zxcvbn's positions
# would shift), or judged by another zxcvbn than the data was made from, takes the full
# estimate; so does one whose bound falls short of the bar: a value that the full estimate
# rejects is never accepted early. An early-accepted value's bits are its class bits, as a
# generated canary's: never fewer than zxcvbn's at any character, so every 6-character
# masking window that the full estimate would make is made (a lower figure would leave a
# piece of the secret unmasked in what is printed).

#: A possible match this long could be a whole window (a window is at least 12 characters,
#: as a secret is): the value takes the full estimate.
EARLY_LONGEST = 12
_FLOOR = math.log2(50.0)  # zxcvbn's MIN_SUBMATCH_GUESSES_MULTI_CHAR
_FLOOR_SINGLE = math.log2(10.0)  # MIN_SUBMATCH_GUESSES_SINGLE_CHAR
#: 4-gram buckets: these characters, and the 37th for any other
_BUCKETS = "abcdefghijklmnopqrstuvwxyz0123456789"
_BUCKET = {c: i for i, c in enumerate(_BUCKETS)}
_DATE_RUN = re.compile(r"[\d\s/\\_.-]{4,}")
#: zxcvbn's longest date token: 1-4 digits, separator, 1-2, separator, 1-4, and the line
#: end that its ``$`` lets through
_DATE_LONGEST = 11
_SQUARE = re.compile(r"(?=(.+?)\1)", re.DOTALL)
#: zxcvbn's longest dictionary word (checked by the tests)
_LONGEST_WORD = 23


class _EarlyData(Value, frozen=True):
    short: dict[str, int]  # each spelling of a word of 1 to 3 characters: its best rank
    fourgrams: bytes  # a bit per 4-gram of buckets: set when some longer word holds it
    words: bytes  # a Bloom filter of the words of 4 characters or more (_bloom_bits)
    adjacent: frozenset[str]  # adjacent keys (previous + next), on any keyboard
    readings: dict[str, tuple[str, ...]]  # l33t: the letters a character may stand for


@functools.cache
def _early_data() -> _EarlyData | None:
    """The bound's data, when made from the zxcvbn installed (its files' sizes match);
    else None, and every value takes the full estimate.

    The two bit tables are read raw from ``zxcvbn_bound.bin`` beside the module (its
    base64 and zlib text cost 2 ms to unpack, a thirtieth of a scan's start-up)."""
    import importlib.util
    import os

    from . import zxcvbn_bound as data

    try:
        spec = importlib.util.find_spec("zxcvbn")
        where = list(spec.submodule_search_locations or []) if spec else []
        sizes = {name: os.stat(os.path.join(where[0], name)).st_size for name in data.FILES}
        with open(os.path.join(os.path.dirname(data.__file__), EARLY_TABLES), "rb") as tables:
            packed = tables.read(data.FOURGRAM_BYTES + data.WORD_BYTES + 1)
    except (ImportError, OSError, IndexError, ValueError):
        return None
    if sizes != data.FILES or len(packed) != data.FOURGRAM_BYTES + data.WORD_BYTES:
        return None
    readings: dict[str, tuple[str, ...]] = {}
    for letter, spellings in data.L33T.items():
        for spelling in spellings:
            readings[spelling] = (*readings.get(spelling, ()), letter)
    pairs = data.ADJACENT
    return _EarlyData(
        short=data.SHORT_WORDS,
        fourgrams=packed[: data.FOURGRAM_BYTES],
        words=packed[data.FOURGRAM_BYTES :],
        adjacent=frozenset(pairs[i : i + 2] for i in range(0, len(pairs), 2)),
        readings=readings,
    )


def _possible_matches(value: str, data: _EarlyData) -> list[tuple[int, int, float]] | None:
    """``(start, end, least bits per character)`` of each match zxcvbn could make in
    ``value`` (a superset of them), or None when one could be EARLY_LONGEST characters
    or more."""
    n = len(value)
    lower = value.lower()
    found: list[tuple[int, int, float]] = []
    # dictionary words of 1 to 3 characters, forward or reversed, l33t spellings included
    rank_of = data.short.get
    for size in (1, 2, 3):
        floor = _FLOOR_SINGLE if size == 1 else _FLOOR
        for start in range(n - size + 1):
            rank = rank_of(lower[start : start + size])
            if rank is not None:
                found.append((start, start + size, max(math.log2(rank), floor) / size))
    # longer words: runs whose every 4-gram some word holds
    grams = data.fourgrams
    readings = data.readings
    buckets = [(_BUCKET.get(c, 36), *(_BUCKET[x] for x in readings.get(c, ()))) for c in lower]
    single = [b[0] if len(b) == 1 else -1 for b in buckets]
    start = -1
    for k in range(n - 2):
        held = False
        if k < n - 3:
            x0, x1, x2, x3 = single[k : k + 4]
            if x0 >= 0 and x1 >= 0 and x2 >= 0 and x3 >= 0:
                key = ((x0 * 37 + x1) * 37 + x2) * 37 + x3
                held = grams[key >> 3] >> (key & 7) & 1 == 1
            else:
                b0, b1, b2, b3 = buckets[k : k + 4]
                held = any(
                    grams[key >> 3] >> (key & 7) & 1
                    for key in (
                        ((y0 * 37 + y1) * 37 + y2) * 37 + y3
                        for y0 in b0
                        for y1 in b1
                        for y2 in b2
                        for y3 in b3
                    )
                )
        if held and start < 0:
            start = k
        elif not held and start >= 0:
            found += _words_in(lower[start : k + 3], start, data)
            start = -1
    runs: list[tuple[int, int]] = []
    # keyboard runs of 3 keys or more
    start = 0
    for k in range(1, n + 1):
        if k == n or value[k - 1 : k + 1] not in data.adjacent:
            if k - start >= 3:
                runs.append((start, k))
            start = k
    # constant steps of at most 5 (2 characters for a step of 1, else 3)
    start = 0
    for k in range(2, n + 1):
        step = ord(value[k - 1]) - ord(value[k - 2])
        if k < n and ord(value[k]) - ord(value[k - 1]) == step:
            continue
        if 0 < abs(step) <= 5 and (k - start >= 3 or abs(step) == 1):
            runs.append((start, k))
        start = k - 1
    # repeats: each starts with a square (a unit twice), extended as far as the period holds
    for square in _SQUARE.finditer(value):
        at = square.start()
        for unit in range(len(square.group(1)), (n - at) // 2 + 1):
            if value[at : at + unit] == value[at + unit : at + 2 * unit]:
                end = at + 2 * unit
                while end < n and value[end] == value[end - unit]:
                    end += 1
                runs.append((at, end))
    for start, end in runs:
        if end - start >= EARLY_LONGEST:
            return None
        found.append((start, end, _FLOOR / (end - start)))
    # years and dates: no match is longer than _DATE_LONGEST
    for run in _DATE_RUN.finditer(value):
        if any(c.isdigit() for c in run.group()):
            found.append((run.start(), run.end(), _FLOOR / min(len(run.group()), _DATE_LONGEST)))
    return found


_BLOOM_HASHES = 7


def _bloom_bits(word: str, size: int) -> list[int]:
    """The filter's bits for ``word`` (double hashing over crc32 and adler32)."""
    data = word.encode("utf-8", "surrogatepass")
    h1, h2 = zlib.crc32(data), zlib.adler32(data) | 1
    return [(h1 + i * h2) % size for i in range(_BLOOM_HASHES)]


#: Spellings of one piece followed at most (l33t readings multiply them; those that hold a
#: 4-gram no word holds are dropped as they appear): past this, the piece is taken for a word.
_MAX_SPELLINGS = 4096


def _words_in(run: str, offset: int, data: _EarlyData) -> list[tuple[int, int, float]]:
    """The possible words of 4 characters or more in ``run`` (lowered; every 4-gram held),
    read as written or through l33t, forward or reversed: 50 guesses each.

    From each start, the piece grows a character at a time with its spellings; a spelling
    holding a 4-gram that no word (forward or reversed) holds is dropped, for no longer
    piece holding it is a word either, and once none is left the start is done. (Giving up
    at 64 spellings made a run of symbols, each read as a letter or two, a possible word of
    any length: zxcvbn's full estimate for a header value full of punctuation.)

    A spelling carries the buckets of its last three characters (base 37), so that its
    next 4-gram is one multiplication away, and the Bloom filter is read in one loop
    (``_any_in_words``): judging 20 user secrets took 4.8 ms, 3.9 ms this way."""
    readings, grams, words = data.readings, data.fourgrams, data.words
    word_bits = len(words) * 8
    found = []
    longest = min(len(run), _LONGEST_WORD)
    # each character's readings (itself first, then the letters l33t lets it stand for)
    # with their buckets
    ways = [tuple((r, _BUCKET.get(r, 36)) for r in (c, *readings.get(c, ()))) for c in run]
    for start in range(len(run) - 3):
        spellings: list[tuple[str, int]] = [("", 0)]
        for end in range(start, min(len(run), start + longest)):
            size = end - start + 1
            if size < 4:
                spellings = [(s + r, tail * 37 + b) for s, tail in spellings for r, b in ways[end]]
                continue
            grown = []
            for s, tail in spellings:
                for r, b in ways[end]:
                    key = tail * 37 + b
                    if grams[key >> 3] >> (key & 7) & 1:
                        grown.append((s + r, key % _TAIL_KEYS))
            spellings = grown
            if not spellings:
                break
            if len(spellings) > _MAX_SPELLINGS:  # taken for a word, whatever its length
                if min(len(run) - start, longest) >= EARLY_LONGEST:
                    raise _TooLong
                found += [
                    (offset + start, offset + start + k, _FLOOR / k)
                    for k in range(max(size, 4), min(len(run) - start, longest) + 1)
                ]
                break
            if _any_in_words(spellings, words, word_bits):
                if size >= EARLY_LONGEST:
                    raise _TooLong
                found.append((offset + start, offset + end + 1, _FLOOR / size))
    return found


#: the buckets of three characters, base 37, take this many values
_TAIL_KEYS = 37**3


def _any_in_words(spellings: list[tuple[str, int]], words: bytes, word_bits: int) -> bool:
    """Whether a spelling, or a spelling reversed, may be a dictionary word (a Bloom
    filter: never a false no): ``_bloom_bits`` of each, stopping at the first bit not set."""
    crc32, adler32 = zlib.crc32, zlib.adler32
    for spelling, _ in spellings:
        for word in (spelling, spelling[::-1]):
            encoded = word.encode("utf-8", "surrogatepass")
            h1, h2 = crc32(encoded), adler32(encoded) | 1
            for i in range(_BLOOM_HASHES):
                b = (h1 + i * h2) % word_bits
                if not words[b >> 3] >> (b & 7) & 1:
                    break
            else:
                return True
    return False


class _TooLong(Exception):
    """A possible match could be a whole window."""


@functools.lru_cache(maxsize=4096)
def _early(value: str) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    """(the class bits of ``value``, a lower bound of each of ``estimate_bits(value)``),
    or None when the bound cannot be made (see above)."""
    bound = early_bound(value)
    return None if bound is None else (tuple(bound[0]), tuple(bound[1]))


def early_bound(value: str) -> tuple[list[float], list[float]] | None:
    """(the bits of ``value`` if accepted early, a lower bound of each of
    ``estimate_bits(value)``), or None when the bound cannot be made (see above)."""
    data = _early_data()
    if data is None or len(value) < EARLY_LONGEST or len(value.lower()) != len(value):
        return None
    judged = len(value) if len(value) <= 256 else _ZXCVBN_WINDOW
    try:
        found = _possible_matches(value[:judged], data)
    except _TooLong:
        return None
    if found is None:
        return None
    body = _PUBLIC_STRUCTURE.sub("", value)
    alphabet_bits = math.log2(_class_alphabet(body or value))
    least = [alphabet_bits] * len(value)
    kept = [alphabet_bits] * len(value)
    for start, end, spread in found:
        for i in range(start, end):
            least[i] = min(least[i], spread)
    for start, end in _public_spans(value):
        for i in range(start, end):
            least[i] = kept[i] = 0.0
    return kept, least


#: the bit tables of the early accept, beside ``zxcvbn_bound.py``: the 4-grams, then the words
EARLY_TABLES = "zxcvbn_bound.bin"


def early_data_source() -> str:
    """The text of ``leakcheck/zxcvbn_bound.py`` made from the installed zxcvbn (the
    tests check that the file's values are these, and ``early_data_tables()`` those of
    ``zxcvbn_bound.bin``; after a zxcvbn upgrade, write both anew:
    ``python -c "import leakcheck.canaries as c; print(c.early_data_source(), end='')"
    > leakcheck/zxcvbn_bound.py``, and the bytes of ``early_data_tables()`` to
    ``leakcheck/zxcvbn_bound.bin``: ``python -c "import sys, leakcheck.canaries as c;
    sys.stdout.buffer.write(c.early_data_tables())" > leakcheck/zxcvbn_bound.bin``)."""
    return _early_data_made()[0]


def early_data_tables() -> bytes:
    """The bytes of ``leakcheck/zxcvbn_bound.bin`` (see ``early_data_source``)."""
    return _early_data_made()[1]


@functools.cache
def _early_data_made() -> tuple[str, bytes]:
    import importlib.util
    import os

    from zxcvbn import adjacency_graphs, matching

    _, _, dictionaries = _zxcvbn()
    words = dictionaries["merged"]
    # every way of writing a word of 1 to 3 characters or its reverse (l33t), best rank
    short: dict[str, int] = {}
    for word, rank in sorted(words.items()):
        for spelling in (word, word[::-1]) if len(word) <= 3 else ():
            written = [""]
            for letter in spelling:
                ways = (letter, *matching.L33T_TABLE.get(letter, ()))
                written = [w + c for w in written for c in ways]
            for w in written:
                short[w] = min(rank, short.get(w, rank))
    short = dict(sorted(short.items()))
    grams = bytearray((37**4 + 7) // 8)
    for word in words:
        for spelling in (word, word[::-1]) if len(word) >= 4 else ():
            b = [_BUCKET.get(c, 36) for c in spelling]
            for i in range(len(b) - 3):
                key = ((b[i] * 37 + b[i + 1]) * 37 + b[i + 2]) * 37 + b[i + 3]
                grams[key >> 3] |= 1 << (key & 7)
    bloom = bytearray(1 << 17)  # 2^20 bits: 11 a word, about 0.5% false yes
    for word in words:
        assert len(word) <= _LONGEST_WORD
        for bit in _bloom_bits(word, len(bloom) * 8) if len(word) >= 4 else []:
            bloom[bit >> 3] |= 1 << (bit & 7)
    pairs = sorted(
        {
            key + c
            for graph in adjacency_graphs.ADJACENCY_GRAPHS.values()
            for key, adjacents in graph.items()
            for adjacent in adjacents or ()
            for c in adjacent or ""
        }
    )
    spec = importlib.util.find_spec("zxcvbn")
    assert spec is not None and spec.submodule_search_locations
    where = list(spec.submodule_search_locations)[0]
    files = {
        name: os.stat(os.path.join(where, name)).st_size
        for name in ("adjacency_graphs.py", "frequency_lists.py", "matching.py", "scoring.py")
    }
    lines = [
        '"""Generated by ``leakcheck.canaries.early_data_source()`` from zxcvbn\'s public',
        "data (dictionaries, keyboards, l33t table): what the early accept of a user secret",
        'needs (see ``canaries``, "early accept"). Do not edit; regenerate."""',
        "",
        "# ruff: noqa: E501",
        "# fmt: off",
        f"FILES = {files!r}",
        f"L33T = {dict(matching.L33T_TABLE)!r}",
        "# each way of writing a word of 1 to 3 characters: its best rank",
        "SHORT_WORDS = {",
        *(f"    {word!r}: {rank}," for word, rank in short.items()),
        "}",
        f"ADJACENT = {''.join(pairs)!r}",
        "# the sizes of the two tables of zxcvbn_bound.bin: a bit per 4-gram of buckets, held",
        "# by some word of 4 characters or more; a Bloom filter of those words",
        f"FOURGRAM_BYTES = {len(grams)}",
        f"WORD_BYTES = {len(bloom)}",
        "",
    ]
    return "\n".join(lines), bytes(grams) + bytes(bloom)


def _early_bits(value: str, min_bits: float) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    """(mask bits, bits) of a value whose estimate provably reaches ``min_bits``: the lower
    bound of the estimate at each character is the bits, the class bits are the mask bits
    (never fewer than the full estimate: every piece it would mask is masked, and the
    fragments sized from them are a superset of its, each hit verified with it, so that a
    dictionary word in the value, the ``internal`` of a host name, is reported as no masked
    tail: ``forms.unsure_pieces``); None when that takes the full estimate."""
    early = _early(value)
    return early if early is not None and sum(early[1]) >= min_bits else None


# --- canary shapes ----------------------------------------------------------------------

#: generated canary kinds with a fixed prefix (see the generators below), and what follows
#: it (random characters)
_LOOKALIKES = {
    "bearer": lazy_compile(r"lcb\.[A-Za-z0-9._~+/-]{8}"),  # an RFC 6750 b64token
    "api_key": lazy_compile(r"lck_[A-Za-z0-9]{8}"),
    "cookie": lazy_compile(r"lcs=[A-Za-z0-9]{8}"),
    "hostname": lazy_compile(r"lc-[a-z0-9]{8}[a-z0-9-]*\.corp\.internal"),
    "local_path": lazy_compile(r"/srv/lc-[A-Za-z0-9]{8}"),
    "prose": lazy_compile(r"lc-repair [A-Za-z0-9]{8}"),
    "pem": lazy_compile(r"-----BEGIN (?:[A-Z]+ )*(?:PRIVATE KEY|CERTIFICATE)-----"),
}


def _fixed_prefix(kind: str) -> str:
    """The characters every canary of ``kind`` starts with (those that carry no bits)."""
    secret = CanaryFactory(0, announce=False).secret(kind)
    return secret.value[: next((i for i, bits in enumerate(secret.bits) if bits), 0)]


@functools.cache
def _encoded_lookalikes() -> dict[str, re.Pattern[str]]:
    """The shapes of the kinds with a fixed prefix (3 characters or more), hex- or
    base64-encoded: the encoded prefix, then the encoding of random characters (16 hex
    digits, 12 base64 characters). A pending snapshot edited by hand, or fetched from a
    fork's CI run, showed a canary's hex and base64 to ``leakcheck review`` as they were,
    and accepting wrote them into the snapshot."""
    import base64

    shapes: dict[str, re.Pattern[str]] = {}
    for kind in KINDS:
        data = _fixed_prefix(kind).encode()
        if len(data) < 3:
            continue
        shapes[f"{kind} (hex)"] = re.compile(f"(?i){data.hex()}[0-9a-f]{{16}}")
        cores: list[str] = []
        for offset in range(3):
            core = base64.b64encode(b"\0" * offset + data).decode()
            fixed = core[math.ceil(8 * offset / 6) : (8 * (offset + len(data))) // 6]
            cores += {re.escape(fixed), re.escape(fixed.translate(str.maketrans("+/", "-_")))}
        shapes[f"{kind} (base64)"] = re.compile(f"(?:{'|'.join(cores)})[A-Za-z0-9+/_-]{{12}}")
    return shapes


def canary_lookalikes(text: str) -> list[str]:
    """The generated canary kinds whose shape (fixed prefix + random characters) occurs in
    ``text``, as it is or hex- or base64-encoded: a backstop where the secrets themselves
    are not known."""
    found = [kind for kind, pattern in _LOOKALIKES.items() if pattern.search(text)]
    return found + [kind for kind, pattern in _encoded_lookalikes().items() if pattern.search(text)]


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


class Kind(Value, frozen=True):
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


def random_edge(alphabet: str) -> int:
    """The random characters of ``alphabet`` that carry FRAGMENT_BITS: a canary's body
    keeps that many at each end free of its hostile characters."""
    return math.ceil(FRAGMENT_BITS / math.log2(len(alphabet)))


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
    if not size:
        raise ValueError("empty alphabet")
    body = []
    for _ in range(length):
        # _below, inlined: a call per character was a fifth of making a canary
        r = getrandbits(width)
        while r >= size:
            r = getrandbits(width)
        body.append(alphabet[r])
    bits = [math.log2(size)] * length
    edge = random_edge(alphabet)
    for ch in hostile:
        # kept off the first and last ``edge`` characters: random, those carry the bare
        # prefix and suffix fragments (the same length for every seed: a gateway showing
        # a token's last 11 characters fails whatever the seed) and the masked heads and
        # tails ("****7KQ2"), which must be random to be attributable
        span = len(body) - 2 * edge + 1
        at = edge + _below(getrandbits, span, span.bit_length())
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


def _kind(name: str, cls: SecretClass, description: str, **token_args: Any) -> Kind:
    if token_args.get("hostile"):
        edges = 2 * random_edge(token_args["alphabet"])
        if token_args["length"] < edges:
            raise ValueError(
                f"canary kind {name}: a body of {edges}+ characters holds hostile ones"
            )

    def generate(rng: random.Random) -> tuple[str, tuple[float, ...]]:
        return _token(rng, **token_args)

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
            length=30,
            hostile="+/~",
        ),
        _kind(
            "api_key",
            _D,
            "API key sent in a query string",
            prefix="lck_",
            alphabet=_ALNUM,
            length=28,
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
            length=28,
            hostile=_HEADER_HOSTILE,
        ),
        _kind(
            "password",
            _D,
            "password in URL userinfo",
            prefix="",
            alphabet=_ALNUM,
            length=28,
            hostile=_URL_HOSTILE + "é🔑",
        ),
        # RFC 6265 cookie-octet: no space, DQUOTE, comma, semicolon or backslash
        _kind(
            "cookie",
            _D,
            "session cookie value",
            prefix="lcs=",
            alphabet=_ALNUM,
            length=28,
            hostile="+/=%~:@!#$&'()*<>?[]^`{|}",
        ),
        _kind(
            "signature",
            _D,
            "signed-URL signature (base64 with + / =)",
            prefix="",
            alphabet=_B64,
            length=30,
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
            length=28,
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
            length=26,
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
            length=26,
            hostile="_-",
        ),
        _kind(
            "resource_id",
            _C,
            "repository or resource id",
            prefix="acme-",
            alphabet=_LOWER_ALNUM,
            length=32,
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


#: Told of each secret announced (``watch_secrets``).
_WATCHERS: list[Callable[[Secret], None]] = []


def watch_secrets(watcher: Callable[[Secret], None]) -> Callable[[], None]:
    """Have ``watcher`` told of every secret announced from now on: each canary a
    ``CanaryFactory`` makes and each secret a ``LeakCheck`` registers, unless made with
    ``announce=False`` (the pytest fixture's check: it hands its secrets to the masker
    itself). Returns the function that stops it.

    The pytest plugin's session watches, and masks each one in everything pytest prints: a
    canary drawn by a Hypothesis strategy (``leakcheck.strategies``), or a secret of a
    factory or a check of the test's own, is a test argument, a local, an assertion's
    operand, and pytest printed it in full in a failure."""
    _WATCHERS.append(watcher)

    def unwatch() -> None:
        if watcher in _WATCHERS:
            _WATCHERS.remove(watcher)

    return unwatch


def announce(secret: Secret) -> None:
    """Tell ``secret`` to the watchers (``watch_secrets``)."""
    for watcher in tuple(_WATCHERS):
        watcher(secret)


#: A refused value shorter than this is not masked: it would hide ordinary words ("1234")
#: wherever pytest prints them, and it is no secret leakcheck could tell from text anyway.
REFUSED_MASKED_FROM = 6


def _announce_refused(value: str, kind: str, id: str, secret_class: SecretClass | str) -> None:
    """Tell the watchers of a value refused as too weak, for masking only: the caller's
    frame and ours hold it while the error travels, and pytest prints a failing frame's
    arguments (``value = '...'``), so the pytest plugin masks it like any secret. It
    carries no bits: no piece of it is masked (a weak value's pieces are ordinary text),
    and no scan searches for it."""
    if _WATCHERS and len(value.strip()) >= REFUSED_MASKED_FROM:
        nothing = (0.0,) * len(value)
        announce(Secret(value, kind, id, SecretClass(secret_class), nothing, False))


#: The shape of a kind given to a secret of one's own (``register(value, kind=...)``):
#: words of letters with a few digits ("oauth2_token", "s3 key"), joined by "_", "-", "."
#: or a space. A kind is printed wherever the secret is reported (its id, the mask label
#: ``«canary:KIND:form»``, the JSON report), so a value without that shape is refused
#: rather than printed: most often the secret itself, given as the kind by position.
_USER_KIND = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[ _.\-][A-Za-z0-9]+)*")
_USER_KIND_SEPARATORS = re.compile(r"[ _.\-]")
USER_KIND_MAX_CHARS = 40
#: Digits in a kind's name, at most (a random token of 16 letters and digits has 2.6 on
#: average, one of hex or base32 many more) ...
USER_KIND_MAX_DIGITS = 3
#: ... capitals in a word of it that is not all capitals ("OpenAI": 3; a random
#: mixed-case run of 16 characters has 6 or 7) ...
USER_KIND_MAX_CAPITALS = 3
#: ... and characters in one of its words ("authentication": 14), in one holding a digit
#: ("oauth2": 6; an AWS access key id, all capitals and one digit, has 20).
USER_KIND_MAX_WORD = 20
USER_KIND_MAX_WORD_WITH_DIGITS = 8


def is_kind_name(kind: object) -> bool:
    """Whether ``kind`` has the shape of a name for a secret of one's own. (A name of
    lower-case letters alone cannot be told from a password of lower-case letters: such
    a value given as a kind is taken as its name.)"""
    if not isinstance(kind, str) or len(kind) > USER_KIND_MAX_CHARS:
        return False
    if not _USER_KIND.fullmatch(kind) or sum(map(str.isdigit, kind)) > USER_KIND_MAX_DIGITS:
        return False
    for word in _USER_KIND_SEPARATORS.split(kind):
        if len(word) > USER_KIND_MAX_WORD:
            return False
        if len(word) > USER_KIND_MAX_WORD_WITH_DIGITS and not word.isalpha():
            return False
        if not word.isupper() and sum(map(str.isupper, word)) > USER_KIND_MAX_CAPITALS:
            return False
    return True


def check_kind_name(kind: object, call: str) -> None:
    """Refuse a ``kind`` for a secret of one's own that has no name's shape
    (``is_kind_name``), telling the watchers of it (masked in all that pytest prints, as
    a refused secret is: the caller's line and frame hold it) and describing it by type
    and length only. ``call``: how the function is called right (``register(value,
    kind=...)``), its name first."""
    if is_kind_name(kind):
        return
    if isinstance(kind, str):
        _announce_refused(kind, "secret", "kind", SecretClass.DIRECT)
        given = f"a str of {len(kind)} characters"
    else:
        given = with_article(type(kind).__name__)
    raise KindNameError(
        f"{call.partition('(')[0]}: kind must be a name for the secret, such as 'bearer' or "
        f"'github_token' (words of letters and at most {USER_KIND_MAX_DIGITS} digits joined "
        f"by '_', '-', '.' or a space, {USER_KIND_MAX_CHARS} characters at most); it was "
        f"given {given}, which looks like a value, not a name: was the secret passed as its "
        f"kind? The value comes first: {call}"
    )


def unknown_kind(given: Iterable[object]) -> UnknownKindError:
    """The error for kinds leakcheck does not make. Each is named only if it has a name's
    shape (``is_kind_name``, as a kind ``register`` takes): anything else given as a kind
    is more likely a value (``secret(token)`` where ``register(token)`` was meant), and is
    described by its type and length."""
    named, values = [], False
    for kind in given:
        if is_kind_name(kind):
            named.append(f"{kind!r}{did_you_mean(kind, KINDS)}")
        else:
            values = True
            size = f" of {len(kind)} characters" if isinstance(kind, str) else ""
            named.append(f"{with_article(type(kind).__name__)}{size}, not a kind's name")
    hint = " (to search for a value of your own: register(value, kind=...))" if values else ""
    known = ", ".join(sorted(KINDS))
    return UnknownKindError(f"unknown secret kind {'; '.join(named)}{hint}; known kinds: {known}")


class CanaryFactory:
    """Generates unique hostile canaries, reproducibly from ``seed``.

    The n-th canary of a kind depends only on (seed, kind, n), so a failing test can be
    replayed by printing the seed. ``announce``: tell each canary made to the watchers
    (``watch_secrets``: the pytest plugin masks them in all that pytest prints).
    """

    def __init__(
        self, seed: int | str | None = None, *, namespace: str = "", announce: bool = True
    ) -> None:
        if seed is None:
            import random

            seed = random.SystemRandom().getrandbits(64)
        self.seed = seed
        self.namespace = namespace
        self.announce = announce
        self._counts: dict[str, int] = {}

    def __call__(self, kind: str) -> Secret:
        return self.secret(kind)

    @property
    def made(self) -> int:
        """How many canaries ``secret`` has made so far."""
        return sum(self._counts.values())

    def secret(self, kind: str) -> Secret:
        spec = KINDS.get(kind) if isinstance(kind, str) else None
        if spec is None:
            raise unknown_kind([kind])
        n = self._counts.get(kind, 0) + 1
        self._counts[kind] = n
        return self.nth(kind, n, spec)

    def nth(self, kind: str, n: int, spec: Kind | None = None) -> Secret:
        """The ``n``-th canary of ``kind`` (from 1), whatever was drawn before: what a
        ``leakcheck scan --canaries-from`` rebuilds from a run's report."""
        spec = KINDS[kind] if spec is None else spec
        import random

        rng = random.Random(f"leakcheck:{self.seed}:{self.namespace}:{kind}:{n}")
        value, bits = spec.generate(rng)
        assert sum(bits) >= MIN_CANARY_BITS, (kind, sum(bits))
        # (by position: a keyword takes ``Value``'s long way, a microsecond a canary)
        secret = Secret(value, kind, f"{kind}#{n}", spec.secret_class, bits, True)
        if self.announce:
            announce(secret)
        return secret

    def all_kinds(self) -> Iterator[Secret]:
        for kind in KINDS:
            yield self.secret(kind)


#: A canary's id as a report names it: KIND#N, N from 1 (ASCII digits: "²".isdigit() is
#: true)
CANARY_ID = re.compile(r"([a-z_]{1,32})#([1-9][0-9]{0,8})")


def drawn_again(seed: int | str, namespace: str, ids: Iterable[object]) -> list[Secret]:
    """The canaries that ``ids`` (``KIND#N``) name, as a factory of ``seed`` draws them in
    ``namespace``: what a report's ids stand for, never a value read. An id that names no
    kind this leakcheck makes is left out."""
    factory = CanaryFactory(seed, namespace=namespace)
    drawn = []
    for canary_id in ids:
        match = CANARY_ID.fullmatch(canary_id) if isinstance(canary_id, str) else None
        if match is not None and match.group(1) in KINDS:
            drawn.append(factory.nth(match.group(1), int(match.group(2))))
    return drawn
