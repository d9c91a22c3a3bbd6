"""What a hit looks like to the outside world: located, named, and masked by matched span."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence

from ._lazy import lazy_compile
from ._values import Value
from .canaries import Secret
from .forms import TAIL_BITS, is_piece

__all__ = [
    "Finding",
    "SecretPieces",
    "Span",
    "mask_all",
    "mask_label",
    "masked_excerpt",
    "without_random_tokens",
]

#: Characters shown on each side of a hit in an excerpt.
CONTEXT_BYTES = 40
#: A masked span swallows adjacent token characters, at most this many on each side, so that
#: what surrounds a matched core (base64 padding, the rest of a truncated encoding, a token's
#: neighbours) is never printed next to it (gitleaks --redact printed neighbours).
WIDEN_BYTES = 256

_TOKEN_BYTES = frozenset(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-%.~\\*"
    + bytes(range(0x80, 0x100))
)


_TOKEN_CLASS = b"[" + re.escape(bytes(sorted(_TOKEN_BYTES))) + b"]"
_TOKEN_RUN = lazy_compile(_TOKEN_CLASS + b"*")
#: the same characters in UTF-16-LE (a byte of them, then NUL), and read backwards
_TOKEN_RUN_UTF16 = lazy_compile(b"(?:" + _TOKEN_CLASS + b"\x00)*")
_TOKEN_RUN_UTF16_BACK = lazy_compile(b"(?:\x00" + _TOKEN_CLASS + b")*")


class Finding(Value, frozen=True):
    """One occurrence of one secret. Carries the secret's id and kind, never its value."""

    secret_id: str
    kind: str
    secret_class: str
    form: str
    source: str
    line: int
    column: int
    offset: int
    length: int
    excerpt: str

    def to_dict(self) -> dict[str, object]:
        return {name: getattr(self, name) for name in self._field_names}

    @property
    def location(self) -> str:
        return f"{self.source}:{self.line}:{self.column}"


class Span(Value, frozen=True):
    """A matched byte range in a buffer and the label that replaces it."""

    start: int
    end: int
    kind: str
    form: str
    #: On equal length, the higher names the mask: a reported hit outranks the pieces
    #: found inside the same decoded run.
    rank: int = 0


def mask_label(kind: str, form: str) -> str:
    return f"\u00abcanary:{kind}:{form}\u00bb"


#: What ``mask_label`` writes: where masked text shows that a secret was there.
MASK_LABEL = re.compile(r"\u00abcanary:[^\u00bb\n]*\u00bb")


#: A word in one case or capitalized, or a number: what a name or a path is made of, and
#: a random key is not (its pieces mix case and digits).
_WORD = r"(?:[a-z]+|[A-Z][a-z]+|[A-Z]+|[0-9]+)"
#: A parameter's name and its ``=`` (``key=``, ``X-Amz-Signature=``, ``api_key=``, a
#: command line's ``--token=``): words between ``_ . -``.
_PARAMETER_NAME = lazy_compile(rf"(?:--?)?{_WORD}(?:[_.\-]{_WORD})*=".encode())
#: A path of words right after a whole secret (a host's ``/v1/uploads``): a version's
#: ``v1`` is a word here.
_PATH_WORD = rf"(?:[a-z]+[0-9]*|{_WORD})"
_PATH_AFTER = lazy_compile(rf"(?:/{_PATH_WORD}(?:[_.\-]{_PATH_WORD})*)+/?".encode())


#: An ANSI colour (SGR) sequence ending where the text searched ends.
_SGR_END = lazy_compile(rb"\x1b\[[0-9;]*m\Z")


def widen(buf: bytes, start: int, end: int, *, whole: bool = False) -> tuple[int, int]:
    """``[start, end)`` widened over the token characters around it. ``whole``: the span is
    a whole secret (no piece of one), so what ends right before it and what starts right
    after it are no part of it: a parameter's name and ``=`` or a URL's ``//`` before it,
    a path of words after it, stay shown (``key=«canary:api_key:pct»``,
    ``https://«canary:hostname:raw»/v1/uploads?``); around a piece they may be the rest of
    the secret."""
    low = max(0, start - WIDEN_BYTES)
    before = _TOKEN_RUN.match(buf[low:start][::-1])
    swallowed = before.end() if before else 0
    if swallowed and _SGR_END.search(buf, max(0, start - swallowed - 2), start):
        # a terminal colour code's parameters right before it (``\x1b[33m``): no part of
        # it, and swallowed they left the terminal the escape's half
        swallowed = 0
    if whole and swallowed:
        if buf[start - swallowed : start] == b"//" or _PARAMETER_NAME.fullmatch(
            buf, start - swallowed, start
        ):
            swallowed = 0
    high = min(len(buf), end + WIDEN_BYTES)
    after = _TOKEN_RUN.match(buf, end, high)
    stop = after.end() if after else end
    if whole and stop > end and _PATH_AFTER.fullmatch(buf, end, stop):
        stop = end
    return start - swallowed, stop


def _widen_utf16(buf: bytes, start: int, end: int, parity: int) -> tuple[int, int]:
    """``widen`` in UTF-16-LE text: the span first put on character boundaries (offsets of
    ``parity``), then over the token's characters, two bytes each (a byte at a time, a
    token's next character would stop at its NUL and show unmasked)."""
    start -= (start - parity) % 2
    end += (end - parity) % 2
    low = max(0, start - 2 * WIDEN_BYTES)
    before = _TOKEN_RUN_UTF16_BACK.match(buf[low:start][::-1])
    after = _TOKEN_RUN_UTF16.match(buf, end, min(len(buf), end + 2 * WIDEN_BYTES))
    return start - (before.end() if before else 0), after.end() if after else end


def _merge(
    buf: bytes, spans: Sequence[Span], utf16_parity: int | None = None, *, names: bool = False
) -> list[Span]:
    """Widen every span over its token and merge overlaps; the longest match names the mask.
    ``utf16_parity``: the text is UTF-16-LE, its characters at offsets of that parity.
    ``names``: a parameter's name before a whole secret stays shown (``widen``): for an
    excerpt, which a person reads; masked texts (``mask_all``: error-text snapshots, our
    output) keep the token swallowed whole, as their stored copies have it.

    A span inside another one that outranks it (longer, or as long with a higher rank) is
    left out before widening: it widens to within the other's widened extent (a token run
    read from inside a span stops where the run read from its edge does, or sooner), and
    it cannot name the mask. The masking windows of a secret lie inside the secret's own
    hit: about 20 spans a finding in a log line, widened for nothing."""
    spans = _outranked_dropped(spans)
    if utf16_parity is None:
        bounds = [widen(buf, s.start, s.end, whole=names and not is_piece(s.form)) for s in spans]
    else:
        bounds = [_widen_utf16(buf, s.start, s.end, utf16_parity) for s in spans]
    widened = sorted(
        ((*b, (s.end - s.start, s.rank), s) for b, s in zip(bounds, spans, strict=True)),
        key=lambda t: t[0],
    )
    merged: list[tuple[int, int, tuple[int, int], Span]] = []
    for start, end, size, span in widened:
        if merged and start <= merged[-1][1]:
            m_start, m_end, m_size, m_span = merged[-1]
            if size > m_size:
                m_size, m_span = size, span
            merged[-1] = (m_start, max(m_end, end), m_size, m_span)
        else:
            merged.append((start, end, size, span))
    return [Span(start, end, span.kind, span.form) for start, end, _, span in merged]


def _outranked_dropped(spans: Sequence[Span]) -> Sequence[Span]:
    """``spans`` without those that lie inside a span that outranks them, in their order."""
    if len(spans) < 2:
        return spans
    order = sorted(range(len(spans)), key=lambda i: (spans[i].start, -spans[i].end))
    dropped: set[int] = set()
    cover: Span | None = None  # of the spans so far, one reaching furthest
    for i in order:
        span = spans[i]
        if cover is not None and span.end <= cover.end:
            # cover.start <= span.start: cover holds span, and is as long or longer
            if (span.end - span.start, span.rank) < (cover.end - cover.start, cover.rank):
                dropped.add(i)
                continue
        if cover is None or span.end > cover.end:
            cover = span
    if not dropped:
        return spans
    return [span for i, span in enumerate(spans) if i not in dropped]


_CONTROL_ESCAPES = {0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"}


def _printable(chunk: bytes, keep_layout: bool = False, encoding: str = "utf-8") -> str:
    text = chunk.decode(encoding, "backslashreplace")
    out = []
    for ch in text:
        code = ord(ch)
        if keep_layout and ch in "\n\t":
            out.append(ch)
        elif code in _CONTROL_ESCAPES:
            out.append(_CONTROL_ESCAPES[code])
        elif code < 0x20 or code == 0x7F or 0x80 <= code < 0xA0:
            out.append(f"\\x{code:02x}")
        else:
            out.append(ch)
    return "".join(out)


#: What an excerpt's context shows in place of a token that looks like a credential.
OPAQUE_LABEL = "\u00abopaque\u00bb"
#: A run of credential characters (base64, base64url, hex, a JWT's dots) long enough to be
#: a key (``_looks_random`` judges it).
#: (not from the letter of an escape an excerpt writes, ``\n``: "\«opaque»" cut it in two)
_CREDENTIAL_RUN = lazy_compile(r"(?<!\\)[A-Za-z0-9+/_=~.\-]{20,}")
#: The same, as bytes: an excerpt's window is widened so as never to cut one.
_CREDENTIAL_BYTES = lazy_compile(rb"[A-Za-z0-9+/_=~.\-]*")
#: What an excerpt's window is widened over: those, and the ``\`` and ``%`` of escapes
#: (``\u0056``, ``%2F``): a window cut inside a run of ``\uXXXX`` escapes showed the
#: escaped characters after the cut, too few for a masking span to match.
_WINDOW_BYTES = lazy_compile(rb"[A-Za-z0-9+/_=~.\-\\%]*")
#: The same characters, for ``str.strip`` and ``bytes.translate`` (in C, linear: a regex
#: anchored at a text's end retried every start, quadratic on a long run)
_CREDENTIAL_STR = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_=~.-"
_CREDENTIAL_CHARS = _CREDENTIAL_STR.encode()
_HEX_SEGMENT = lazy_compile(r"[0-9a-f]{24,}|[0-9A-F]{24,}")
_SYMBOL = lazy_compile(r"[+/_=\-]")
#: A path of words, as in a URL (``//developer.mozilla.org/en-US/docs/Web/HTTP/Status/401``,
#: which httpx's status errors end with): words in one case or capitalized, or numbers,
#: between ``/ . _ -``. No ``+`` or ``=`` (base64's), and every piece a word: a random key
#: with a slash in it has pieces that mix case and digits.
_WORD_PATH = lazy_compile(rf"[/._\-]*{_WORD}(?:[/._\-]+{_WORD})+[/._\-]*")


def _looks_random(token: str) -> bool:
    """Whether ``token`` (20 or more credential characters) looks like a key, not like a
    word, a path, a host, a name or an id: mixed case with a digit (two or more upper and
    lower case letters), or with ``+/_-=`` (24 or more characters, three or more of each
    case), or, with neither, case changing at two letters in five or more (a name in
    CamelCase changes at its words only); or a hex run of 24 or more characters mixing
    digits and letters, or spelling printable text (``_hex_of_text``). A UUID's groups
    are shorter: a request id stays readable. Measured
    misses on random keys in README ("Output")."""
    if "/" in token and _WORD_PATH.fullmatch(token):
        return False  # a path of words (a URL's): no key is spelled so
    upper = sum(map(str.isupper, token))
    lower = sum(map(str.islower, token))
    if upper >= 2 and lower >= 2:
        if any(map(str.isdigit, token)):
            return True
        if len(token) >= 24 and upper >= 3 and lower >= 3 and _SYMBOL.search(token):
            return True
        letters = [c for c in token if c.isalpha()]
        pairs = zip(letters, letters[1:], strict=False)
        changes = sum(a.isupper() != b.isupper() for a, b in pairs)
        if len(letters) >= 20 and changes * 5 >= len(letters) * 2:
            return True
    for run in _HEX_SEGMENT.findall(token):
        letters = sum(c.isalpha() for c in run)
        if 4 <= letters <= len(run) - 4 or _hex_of_text(run):
            return True
    return False


def _hex_of_text(run: str) -> bool:
    """Whether ``run`` (hex digits) spells printable ASCII text, every byte of it: the hex
    of a token's piece has too few letters a-f to look random (a piece of 15 characters
    was shown whole in an excerpt's context: found by a hunting helper), and a number of
    24 digits or more reads as no text."""
    if len(run) % 2:
        run = run[:-1]
    data = bytes.fromhex(run)
    return all(0x21 <= b <= 0x7E for b in data) and not data.isdigit()


#: The pieces a name in CamelCase, snake_case or kebab-case is made of.
_NAME_PIECE = lazy_compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_NAME_SEPARATORS = lazy_compile(r"[._\-/+=~]+")


def _in_words(run: str) -> bool:
    """Whether ``run`` is a name of words (``OAuth2TokenRefresher``,
    ``MyCompanyInternalHttpTransport2``): each part between separators made of letter
    pieces of four letters on average, at most one of a single letter, and at most two
    numbers of three digits at most. A random key of 32 alphanumeric characters reads so
    once in 10,000, one of 20 about once in 400 (measured); a urlsafe token never."""
    for part in filter(None, _NAME_SEPARATORS.split(run)):
        pieces = _NAME_PIECE.findall(part)
        if "".join(pieces) != part:
            return False
        letters = [p for p in pieces if p.isalpha()]
        numbers = [p for p in pieces if p.isdigit()]
        if len(numbers) > 2 or any(len(n) > 3 for n in numbers):
            return False
        if not letters or sum(len(p) == 1 for p in letters) > 1:
            return False
        if sum(map(len, letters)) < 4 * len(letters):
            return False
    return True


def hides_a_key(text: str) -> bool:
    """Whether ``text`` (a value a usage error would quote) holds a run that looks like a
    key (``_looks_random``) and is no name of words: a class or logger name such as
    ``OAuth2TokenRefresher`` is quoted, a token given in its place is not."""
    return any(_looks_random(run) and not _in_words(run) for run in _CREDENTIAL_RUN.findall(text))


def without_random_tokens(text: str) -> str:
    """``text`` (an excerpt's context) with each token that looks like a credential shown
    as OPAQUE_LABEL: a real key the app printed beside a canary is no secret leakcheck
    knows, and an excerpt is printed where the app's output is not (a JSON report, a SARIF
    file uploaded to a code-scanning service)."""
    if len(text) < 20:
        return text
    return _CREDENTIAL_RUN.sub(
        lambda m: OPAQUE_LABEL if _looks_random(m.group()) else m.group(), text
    )


def masked_excerpt(
    buf: bytes,
    start: int,
    end: int,
    spans: Sequence[Span],
    context: int = CONTEXT_BYTES,
    *,
    utf16: bool = False,
) -> str:
    """``buf[start:end]`` with ``context`` bytes each side, every span in it masked, and
    every token of the context that looks like a credential shown as OPAQUE_LABEL.

    ``spans`` must hold every match near the window (of every secret and form): masking is
    by matched span, so no form of any secret survives, and a span cut by the window edge is
    masked whole rather than shown in part. ``utf16``: the text around is UTF-16-LE (a
    PowerShell transcript), read as such, twice the context in bytes.
    """
    merged = _merge(buf, spans, start % 2 if utf16 else None, names=True)
    if utf16:  # text between masks starts at a character boundary: an even distance away
        context, floor = 2 * context, start % 2

        def text(low: int, high: int) -> str:
            return without_random_tokens(_utf16_text(buf[low:high], (low - start) % 2))
    else:
        floor = 0

        def text(low: int, high: int) -> str:
            return without_random_tokens(_printable(buf[low:high]))

    w_start, w_end = max(floor, start - context), min(len(buf), end + context)
    if not utf16:  # never cut a token of credential characters: it is judged whole
        back = _WINDOW_BYTES.match(buf[max(floor, w_start - WIDEN_BYTES) : w_start][::-1])
        w_start -= back.end() if back else 0
        ahead = _WINDOW_BYTES.match(buf, w_end, min(len(buf), w_end + WIDEN_BYTES))
        w_end = ahead.end() if ahead else w_end
    for span in merged:  # never start or stop the window inside a masked span
        if span.start < w_start < span.end:
            w_start = span.start
        if span.start < w_end < span.end:
            w_end = span.end
    inside = [span for span in merged if span.end > w_start and span.start < w_end]
    # A run of credential characters longer than the widening is cut at the window's
    # edge: its piece is shown as OPAQUE_LABEL (another secret's hex cut there was a piece
    # that no masking needle of it matches), up to the first masked span.
    head_end = tail_start = None
    if not utf16:
        first = inside[0].start if inside else w_end
        last = inside[-1].end if inside else w_start
        if w_start > floor and _cuts_a_run(buf, w_start):
            head_end = _run_end(buf, w_start, first)
        if w_end < len(buf) and _cuts_a_run(buf, w_end):
            tail_start = max(_run_start(buf, w_end, last), head_end or w_start)
    out, cursor = [], w_start
    if head_end is not None:
        out.append(OPAQUE_LABEL)
        cursor = head_end
    for span in inside:
        out.append(text(cursor, span.start))
        out.append(mask_label(span.kind, span.form))
        cursor = span.end
    if tail_start is not None:
        out.append(text(cursor, tail_start))
        out.append(OPAQUE_LABEL)
    else:
        out.append(text(cursor, w_end))
    prefix = "\u2026" if w_start > 0 else ""
    suffix = "\u2026" if w_end < len(buf) else ""
    return prefix + "".join(out) + suffix


def cut_whole(text: str, size: int, *, keep_end: bool = False) -> str:
    """``text`` cut to its first ``size`` characters (``keep_end``: its last), a run of
    credential characters that the cut falls inside shown as OPAQUE_LABEL: a piece of a
    secret's hex or base64 cut there is one no masking needle matches (a server's stderr
    line, a long dict key, a program's name, cut before the report masked them)."""
    if len(text) <= size:
        return text
    if keep_end:
        kept = text[len(text) - size :]
        if _credential(text[len(text) - size - 1]) and _credential(kept[:1]):
            return OPAQUE_LABEL + kept.lstrip(_CREDENTIAL_STR)
        return kept
    kept = text[:size]
    if _credential(kept[-1:]) and _credential(text[size]):
        return kept[: credential_run_start(kept)] + OPAQUE_LABEL
    return kept


def _credential(char: str) -> bool:
    return bool(char) and char in _CREDENTIAL_STR


def credential_run_start(text: str) -> int:
    """Where the run of credential characters that ends ``text`` starts (its length when
    it ends with none)."""
    return len(text.rstrip(_CREDENTIAL_STR))


def _cuts_a_run(buf: bytes, at: int) -> bool:
    """Whether a window edge at ``at`` falls inside a run of credential characters."""
    return buf[at - 1 : at + 1].translate(None, _CREDENTIAL_CHARS) == b""


def _run_end(buf: bytes, start: int, limit: int) -> int:
    """Where the run of credential characters at ``start`` ends, at ``limit`` at most."""
    return _CREDENTIAL_BYTES.match(buf, start, limit).end()  # type: ignore[union-attr]  # (``*``: always)


def _run_start(buf: bytes, end: int, floor: int) -> int:
    """Where the run of credential characters that ends at ``end`` starts, at ``floor``
    at the earliest."""
    back = _CREDENTIAL_BYTES.match(buf[floor:end][::-1])
    return end - (back.end() if back else 0)


def _utf16_text(chunk: bytes, stray: int) -> str:
    """UTF-16-LE text, after ``stray`` bytes (the end of a character a mask cut) escaped."""
    head = _printable(chunk[:stray]) if stray else ""
    return head + _printable(chunk[stray:], encoding="utf-16-le").replace("\ufeff", "")


#: A label a masked text shows (a secret's or ``«opaque»``): ``mask_windows`` leaves it whole.
_SHOWN_LABEL = re.compile(f"{MASK_LABEL.pattern}|{re.escape(OPAQUE_LABEL)}")


def mask_windows(text: str, kind: str, windows: Sequence[str]) -> str:
    """``text`` (masked once already) with every run of ``windows`` (pieces of a secret of
    ``kind``) outside its labels masked, one ``window-raw`` label a run; the labels left
    whole (masked again whole, a label's words beside a window went into a new label)."""
    if not text:
        return text
    out, at = [], 0
    for label in _SHOWN_LABEL.finditer(text):
        out += [_windows_masked(text[at : label.start()], kind, windows), label.group()]
        at = label.end()
    out.append(_windows_masked(text[at:], kind, windows))
    return "".join(out)


def _windows_masked(text: str, kind: str, windows: Sequence[str]) -> str:
    runs: list[tuple[int, int]] = []
    for window in windows:
        at = text.find(window)
        while at != -1:
            runs.append((at, at + len(window)))
            at = text.find(window, at + 1)
    if not runs:
        return text
    out, cursor, label = [], 0, mask_label(kind, "window-raw")
    for start, end in sorted(runs):
        if start > cursor:
            out += [text[cursor:start], label]
        elif not out:
            out.append(label)
        cursor = max(cursor, end)
    out.append(text[cursor:])
    return "".join(out)


def mask_all(buf: bytes, spans: Sequence[Span], keep_layout: bool = True) -> str:
    """The whole of ``buf`` as printable text, every span masked; line breaks and tabs are
    kept (it is a whole message), other control characters escaped."""
    out, cursor = [], 0
    for span in _merge(buf, spans):
        out.append(_printable(buf[cursor : span.start], keep_layout))
        out.append(mask_label(span.kind, span.form))
        cursor = span.end
    out.append(_printable(buf[cursor:], keep_layout))
    return "".join(out)


# --- pieces of a secret in another case, escaped or in hex -----------------------------

#: The fewest characters of a secret that an excerpt may not show in any case, escaped
#: (``\\uXXXX``, ``\\xXX``, ``%XX``) or as hex (twice as many hex digits). Masking is by
#: matched span, and the masking windows are raw and case-sensitive: an app's log line
#: "(normalized: HP_OHBV...)" upper-casing a token, or a key id spelled in hex, showed 38
#: characters, or the hex of 11, of a token beside its masked hit (found by a tester).
PIECE_CHARS = 8

_TEXT_PIECE, _HEX_PIECE = "piece", "hex>piece"
_ESCAPE = lazy_compile(r"\\u[0-9a-fA-F]{4}|\\x[0-9a-fA-F]{2}|%[0-9a-fA-F]{2}")
_HEX_RUN = lazy_compile(f"[0-9a-fA-F]{{{2 * PIECE_CHARS},}}")
#: What a masked piece swallows beside it: the rest of the token it lies in (a piece's
#: edge of fewer than PIECE_CHARS characters, or what the secret's public head left out).
_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


def _fold(text: str) -> str:
    """``text`` lower-cased character by character, its length kept (a character whose
    lower case is longer, "\u0130", kept as it is)."""
    if text.isascii():
        return text.lower()
    return "".join(low if len(low := c.lower()) == 1 else c for c in text)


def _piece_bits(secret: Secret) -> tuple[float, ...]:
    """What each character of ``secret`` carries, as masking counts it: a user secret's
    mask bits (the class bits, never fewer than the full estimate) or its bits."""
    for bits in (secret.mask_bits, secret.bits):
        if len(bits) == len(secret.value):
            return bits
    return (6.0,) * len(secret.value)


def _strong_starts(bits: Sequence[float]) -> Iterator[int]:
    """Where a run of PIECE_CHARS units carrying TAIL_BITS starts (what a masking window
    must carry, here over more characters): a canary's fixed text (a host name's
    ``.corp.internal``, a PEM's armour) carries none, and masking it would blot every
    "internal" near a hit."""
    total = 0.0
    for i, b in enumerate(bits):
        total += b
        if i >= PIECE_CHARS:
            total -= bits[i - PIECE_CHARS]
        if i >= PIECE_CHARS - 1 and total >= TAIL_BITS - 1e-9:
            yield i + 1 - PIECE_CHARS


def _pieces_of(secret: Secret) -> tuple[list[str], list[bytes]]:
    """The case-folded runs of PIECE_CHARS characters of ``secret`` that carry TAIL_BITS,
    and the same of its UTF-8 bytes (a character's bits spread over its bytes)."""
    value, bits = secret.value, _piece_bits(secret)
    folded = _fold(value)
    texts = [folded[i : i + PIECE_CHARS] for i in _strong_starts(bits)]
    data = value.encode("utf-8", "surrogatepass").lower()
    if len(data) == len(value):
        byte_bits: Sequence[float] = bits
    else:
        byte_bits = [
            b / n for c, b in zip(value, bits, strict=True)
            for n in [len(c.encode("utf-8", "surrogatepass"))] for _ in range(n)
        ]  # fmt: skip
    pieces = [data[i : i + PIECE_CHARS] for i in _strong_starts(byte_bits)]
    return texts, pieces


def _unescaped(text: str) -> tuple[str, list[int] | None]:
    """``text`` with its ``\\uXXXX``, ``\\xXX`` and ``%XX`` escapes read, and where each
    character read starts in ``text`` (None when there was none to read: the same)."""
    if "\\" not in text and "%" not in text:
        return text, None
    chars: list[str] = []
    starts: list[int] = []
    at = 0
    for m in _ESCAPE.finditer(text):
        chars += text[at : m.start()]
        starts += range(at, m.start())
        escape = m.group()
        chars.append(chr(int(escape[1 if escape[0] == "%" else 2 :], 16)))
        starts.append(m.start())
        at = m.end()
    if not starts:
        return text, None
    chars += text[at:]
    starts += range(at, len(text))
    starts.append(len(text))  # where the last one ends
    return "".join(chars), starts


class SecretPieces:
    """Masks, in a short text (an excerpt, a source's name), every run of PIECE_CHARS
    characters of some secrets that a masking span misses: in any case, escaped, or
    hex-encoded (case-folded too). Not for every text a masker masks (the pytest plugin's,
    every test's output): a finding's excerpt and source only, a few hundred characters,
    looked up at each of their places in a dict of the secrets' pieces."""

    __slots__ = ("_texts", "_bytes")

    def __init__(self, secrets: Iterable[Secret]) -> None:
        self._texts: dict[str, str] = {}  # a folded piece -> the kind of a secret holding it
        self._bytes: dict[bytes, str] = {}
        for secret in secrets:
            texts, pieces = _pieces_of(secret)
            for text in texts:
                self._texts.setdefault(text, secret.kind)
            for piece in pieces:
                self._bytes.setdefault(piece, secret.kind)

    @classmethod
    def found_in(cls, secrets: Iterable[Secret], texts: Iterable[str]) -> SecretPieces:
        """Over those of ``secrets`` with a piece in ``texts`` (what a scan of many secrets
        prints: its pieces looked up, not those of every secret)."""
        probe = cls(())
        for text in texts:
            for segment in _unlabelled(text):
                probe._add_runs(segment)
        texts, pieces = probe._texts.keys(), probe._bytes.keys()
        chosen = []
        for secret in secrets:
            # (every run of the value first, in any case: cheap, and most secrets have
            # none in these texts; the runs that carry too few bits are left out after)
            folded = _fold(secret.value)
            data = secret.value.encode("utf-8", "surrogatepass").lower()
            runs = range(len(folded) - PIECE_CHARS + 1)
            if texts.isdisjoint([folded[i : i + PIECE_CHARS] for i in runs]) and (
                not pieces
                or pieces.isdisjoint(
                    [data[i : i + PIECE_CHARS] for i in range(len(data) - PIECE_CHARS + 1)]
                )
            ):
                continue
            texts_of, pieces_of = _pieces_of(secret)
            if not texts.isdisjoint(texts_of) or not pieces.isdisjoint(pieces_of):
                chosen.append(secret)
        return cls(chosen)

    def _add_runs(self, segment: str) -> None:
        """Index every run of PIECE_CHARS of ``segment`` as ``mask`` reads it."""
        for folded, _ in _spellings(segment):
            for i in range(len(folded) - PIECE_CHARS + 1):
                self._texts[folded[i : i + PIECE_CHARS]] = ""
        for data, _ in _hex_pieces(segment):
            self._bytes[data] = ""

    def mask(self, text: str) -> str:
        """``text`` with every such piece (and the letters and digits around it) shown as
        a label naming its secret's kind; labels already in it left whole."""
        if not (self._texts or self._bytes) or len(text) < PIECE_CHARS:
            return text
        out, at = [], 0
        for label in _SHOWN_LABEL.finditer(text):
            out += [self._masked(text[at : label.start()]), label.group()]
            at = label.end()
        out.append(self._masked(text[at:]))
        return "".join(out)

    def _masked(self, segment: str) -> str:
        if len(segment) < PIECE_CHARS:
            return segment
        labels: list[str | None] = [None] * len(segment)
        for folded, starts in _spellings(segment) if self._texts else ():
            for i in range(len(folded) - PIECE_CHARS + 1):
                kind = self._texts.get(folded[i : i + PIECE_CHARS])
                if kind is not None:
                    low, high = (i, i + PIECE_CHARS) if starts is None else (
                        starts[i], starts[i + PIECE_CHARS]
                    )  # fmt: skip
                    _mark(labels, low, high, mask_label(kind, _TEXT_PIECE))
        if self._bytes:
            for data, (low, high) in _hex_pieces(segment):
                kind = self._bytes.get(data)
                if kind is not None:
                    _mark(labels, low, high, mask_label(kind, _HEX_PIECE))
        if not any(labels):
            return segment
        _widened(segment, labels)
        out: list[str] = []
        for k, char in enumerate(segment):
            label = labels[k]
            if label is None:
                out.append(char)
            elif k == 0 or labels[k - 1] is None:
                out.append(label)
        return "".join(out)


def _spellings(segment: str) -> list[tuple[str, list[int] | None]]:
    """``segment`` case-folded as it is, and with its escapes read (``_unescaped``) when
    it holds any: a secret may hold ``%2F`` itself."""
    decoded, starts = _unescaped(segment)
    folded = _fold(segment)
    return [(folded, None)] if starts is None else [(folded, None), (_fold(decoded), starts)]


def _unlabelled(text: str) -> list[str]:
    """The parts of ``text`` between the labels it shows."""
    return _SHOWN_LABEL.split(text)


def _hex_pieces(segment: str) -> Iterator[tuple[bytes, tuple[int, int]]]:
    """Each run of PIECE_CHARS bytes spelled by a run of hex digits in ``segment`` (read
    from either digit: a run may start with half a byte), lower-cased, and where its
    digits lie."""
    for m in _HEX_RUN.finditer(segment):
        run = m.group()
        for parity in (0, 1):
            count = (len(run) - parity) // 2
            if count < PIECE_CHARS:
                continue
            data = bytes.fromhex(run[parity : parity + 2 * count]).lower()
            for j in range(count - PIECE_CHARS + 1):
                low = m.start() + parity + 2 * j
                yield data[j : j + PIECE_CHARS], (low, low + 2 * PIECE_CHARS)


def _mark(labels: list[str | None], low: int, high: int, label: str) -> None:
    for k in range(low, high):
        if labels[k] is None:
            labels[k] = label


def _widened(segment: str, labels: list[str | None]) -> None:
    """Each masked run of ``labels`` widened over the letters and digits beside it."""
    size = len(segment)
    for k in range(size):
        label = labels[k]
        if label is None:
            continue
        if k == 0 or labels[k - 1] is None:
            j = k - 1
            while j >= 0 and labels[j] is None and segment[j] in _ALNUM:
                labels[j] = label
                j -= 1
        if k + 1 < size and labels[k + 1] is None:
            j = k + 1
            while j < size and labels[j] is None and segment[j] in _ALNUM:
                labels[j] = label
                j += 1
