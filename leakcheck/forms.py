"""Every form a secret takes in real output: encode the needle once, search in one pass.

Each form is a function ``secret -> iterable of (form name, needle bytes)``. ``FORMS`` lists
them in priority order: when two forms of one secret produce the same bytes, the first
name wins (so a secret without letters reports ``raw``, not ``lower``).

Fragment lengths are chosen from the secret's per-character entropy, not guessed:

* a bare prefix or suffix fragment must carry ``FRAGMENT_BITS`` (64) bits. With N needles
  over B bytes of text the expected number of chance hits is about ``B * N / 2**bits``:
  32 MiB x 2,000 needles / 2**64 ~ 4e-9, and a terabyte of CI logs stays below 1e-4;
* a masked tail (``****7KQ2``, "ending in 7KQ2") is only searched behind a masking
  context, and its few characters must carry ``TAIL_BITS`` (23) bits, so a 4-character tail
  is searched only for tokens drawn from 54+ symbols (mixed-case alphanumerics), never for
  hex. Realistic gateway logs hold about 770 masking contexts followed by 4 alphanumerics
  per MiB (measured on bench/corpus.py), so with 20 secrets over 32 MiB a 4-character tail
  gives about ``770 * 32 * 20 / 2**23.8`` ~ 0.035 expected chance hits; 6 and 8 characters
  make that negligible. A 4-character tail is weak evidence by nature: treat a lone
  ``masked-tail-4`` hit in a large log as a lead, not a proof. A scan for more than 20
  secrets at once reports only pieces carrying log2(n / 20) bits more (``masked_bits_for``):
  the chance grows with the secrets searched;
* base64 fragments (for wrapped or truncated blobs) are cut from the part of the encoded
  core spelled by the secret's own characters (a fragment of fixed text, PEM armour or a
  kind's constant prefix or suffix, would match every secret of the kind): at least half
  of that part and at most 32 characters, 14 or more for every generated canary.
"""

from __future__ import annotations

import binascii
import contextlib
import functools
import json
import math
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextvars import ContextVar
from itertools import accumulate, chain, compress, count, repeat
from operator import itemgetter

from . import canaries as _canaries
from ._values import Value
from .canaries import FRAGMENT_BITS, Secret, estimate_bits

__all__ = [
    "PIECES",
    "Piece",
    "is_piece",
    "FORMS",
    "RUN_KEEPING_FORMS",
    "RUN_KEEPING_MAX_NEEDLES",
    "anchor_run",
    "FRAGMENT_BITS",
    "TAIL_BITS",
    "masked_bits_for",
    "weak_masks",
    "Needle",
    "needles_for",
]

TAIL_BITS = 23.0
#: TAIL_BITS is measured for a search of up to this many secrets (see masked_bits_for).
TAIL_BITS_SECRETS = 20
#: Wrapped base64 lines are at least this wide (PEM 64, MIME 76).
WRAP_WIDTH = 64

FormFn = Callable[[Secret], Iterable[tuple[str, bytes]]]


class Piece(Value, frozen=True):
    """A family of form names that spell a *piece* of the secret, not all of it: the names
    the generators below make start with ``prefix``. A piece found where the decoding pass
    saw the whole secret adds nothing; a ``mask_only`` piece (a masking window) never makes
    a finding at all: it only masks leakcheck's own output."""

    prefix: str
    mask_only: bool = False

    def name(self, suffix: object = "") -> str:
        return f"{self.prefix}{suffix}"


PREFIX = Piece("prefix-")
SUFFIX = Piece("suffix-")
MASKED_TAIL = Piece("masked-tail-")
MASKED_HEAD = Piece("masked-head-")
LINE = Piece("line-")
BASE64_WRAPPED = Piece("base64-wrapped@")
UTF16_PREFIX = Piece("utf16-prefix-")
UTF16_SUFFIX = Piece("utf16-suffix-")
WINDOW = Piece("fragment", mask_only=True)
#: every family of piece names, the one place their properties are written
PIECES = (
    PREFIX,
    SUFFIX,
    MASKED_TAIL,
    MASKED_HEAD,
    LINE,
    BASE64_WRAPPED,
    UTF16_PREFIX,
    UTF16_SUFFIX,
    WINDOW,
)
_PIECE_PREFIXES = tuple(piece.prefix for piece in PIECES)


def is_piece(form: str) -> bool:
    """Whether the form name ``form`` (a chain such as ``base64>prefix-12`` included: its
    last link names it) spells a piece of the secret."""
    return form.rpartition(">")[2].startswith(_PIECE_PREFIXES)


class Needle:
    """One encoded form of one secret. A plain slotted class: a test builds a few hundred
    of these, and a frozen dataclass costs several times more to create."""

    __slots__ = ("pattern", "secret", "form")

    def __init__(self, pattern: bytes, secret: Secret, form: str) -> None:
        self.pattern = pattern
        self.secret = secret
        self.form = form

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Needle) and (self.pattern, self.secret, self.form) == (
            other.pattern,
            other.secret,
            other.form,
        )

    def __hash__(self) -> int:
        return hash((self.pattern, self.form))

    def __repr__(self) -> str:  # the pattern is the secret, encoded: never shown
        return f"Needle(form={self.form!r}, secret={self.secret!r}, bytes={len(self.pattern)})"

    def _repr_pretty_(self, printer: object, cycle: bool) -> None:
        printer.text(repr(self))  # type: ignore[attr-defined]  # IPython's printer: no dependency


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


# --- the forms ----------------------------------------------------------------------------


def raw(s: Secret) -> Iterator[tuple[str, bytes]]:
    yield "raw", _utf8(s.value)
    if "\r\n" in s.value:
        # a value given with CRLF line endings (a PEM key from a Windows checkout or a JSON
        # secrets file) is written with LF ones by most code: that one was not found
        # (found by a hunting helper)
        yield "raw", _utf8(s.value.replace("\r\n", "\n"))


def casefold(s: Secret) -> Iterator[tuple[str, bytes]]:
    spelled_before = {s.value}
    for name, variant in (
        ("lower", s.value.lower()),
        ("upper", s.value.upper()),
        ("casefold", s.value.casefold()),
    ):
        yield name, _utf8(variant)
        # the variant as ``repr`` and JSON spell it, where they escape something: pytest
        # shows ``assert token.upper() == ...``'s operand as its repr, and a canary's
        # quotes, backslash and "é" made that spelling no form (found by a fuzzing helper)
        if variant in spelled_before or _ESCAPED_BY_NONE.fullmatch(variant):
            continue  # (the value's own spellings, or spelled as it is: made every test)
        spelled_before.add(variant)
        spellings = [("repr", _py_escape(variant, "'"))]
        if "'" in variant and '"' not in variant:  # (only then does repr choose it)
            spellings.append(("repr-dq", _py_escape(variant, '"')))
        spellings.append(("json-ascii", _json_escape(variant, ascii_only=True)))
        if not variant.isascii():  # (else the same as those above)
            spellings.append(("json", _json_escape(variant, ascii_only=False)))
            spellings.append(("repr-bytes", _py_bytes_escape(_utf8(variant), "'")))
        for suffix, spelled in spellings:
            if spelled != variant:
                yield f"{name}-{suffix}", _utf8(spelled)


#: A text that ``repr`` (either quote) and JSON write as it is: printable ASCII, no quote,
#: no backslash
_ESCAPED_BY_NONE = re.compile(r"[ !#-&(-\[\]-~]*")


# Safe sets of the quoting functions that real clients apply (characters left unencoded).
_SUB_DELIMS = "!$&'()*+,;="
PERCENT_SAFE_SETS = {
    "pct": "",  # strict: only unreserved characters survive
    "pct-path": "/",  # urllib.parse.quote default
    "pct-requests": "!#$%&'()*+,/:;=?@[]~",  # requests.utils.requote_uri
    "pct-urllib3": _SUB_DELIMS + ":@/?",  # urllib3 query/path chars
    "pct-userinfo": _SUB_DELIMS + ":",  # urllib3 / httpx userinfo
    "pct-httpx": _SUB_DELIMS + ":/?[]@",  # httpx query
}


# --- what HTTP clients make of a secret pasted into a URL string ---------------------------
#
# A client normalises the URL it is given: a secret placed in a query (``?key=SECRET``) or a
# path is split where it holds ``?`` or ``#`` (those stay literal and start the next
# component), and each piece is quoted with that component's safe set. The safe sets and the
# handling of ``%`` differ per client (checked against urllib3 2.x, requests 2.3x and
# httpx 0.28): a hostile canary holds ``? # % [ ] \`` and so takes a different form in each.

_UNRESERVED = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_URLLIB3_USERINFO = _UNRESERVED + _SUB_DELIMS + ":"
_URLLIB3_PATH = _URLLIB3_USERINFO + "@/"
_URLLIB3_SETS = {
    "path": _URLLIB3_PATH,
    "query": _URLLIB3_PATH + "?",
    "fragment": _URLLIB3_PATH + "?",
}


def _printable_except(excluded: str) -> str:
    return "".join(chr(i) for i in range(0x21, 0x7F) if chr(i) not in excluded)


# httpx 0.28 follows the WHATWG percent-encode sets; 0.25-0.27 used RFC 3986 sets widened
# by the characters WHATWG leaves alone.
_HTTPX_SETS = {
    "path": _printable_except('"#<>?`{}'),
    "query": _printable_except('"#<>'),
    "fragment": _printable_except('"<>`'),
}
_HTTPX_WHATWG_SAFE = '`{}%|^\\"'
_HTTPX_027_SETS = {
    "path": _SUB_DELIMS + _HTTPX_WHATWG_SAFE + ":/[]@",
    "query": _SUB_DELIMS + _HTTPX_WHATWG_SAFE + ":/?[]@",
    "fragment": _SUB_DELIMS + _HTTPX_WHATWG_SAFE + ":/?#[]@",
}
_HTTPX_PASSWORD = _printable_except('"#<>?`{}/:;=@[\\]^|')
_HTTPX_USERINFO = _HTTPX_PASSWORD + ":"
# requests.utils.requote_uri
_REQUOTE_SAFE = "!#$%&'()*+,/:;=?@[]~"


def _pct_escape(char: str) -> str:
    return "".join(f"%{b:02X}" for b in _utf8(char))


def _url_pieces(value: str, start: str) -> list[tuple[str, str, str]]:
    """``(component, text, separator)`` pieces of ``value`` pasted into a URL's ``start``
    component (path or query): a path ends at ``?`` or ``#``, a query at ``#``."""
    pieces, component, rest = [], start, value
    while True:
        ends = {"path": "?#", "query": "#"}.get(component, "")
        cut = min((i for i in (rest.find(c) for c in ends) if i >= 0), default=-1)
        if cut < 0:
            pieces.append((component, rest, ""))
            return pieces
        pieces.append((component, rest[:cut], rest[cut]))
        component = "query" if rest[cut] == "?" else "fragment"
        rest = rest[cut + 1 :]


class _EscapeTable(dict):
    """A ``str.translate`` table: characters outside ``allowed`` become ``%XX`` escapes
    (of their UTF-8 bytes), filled in on first use. Per-character Python loops made
    needle generation the largest part of the plugin's per-test cost."""

    def __init__(self, allowed: str, keep_percent: bool, *, lower: bool = False) -> None:
        super().__init__()
        self.allowed = set(allowed) - {"%"}
        self.keep_percent = keep_percent
        self.lower = lower

    def __missing__(self, code: int) -> str:
        char = chr(code)
        if char in self.allowed or (char == "%" and self.keep_percent):
            value = char
        else:
            value = _pct_escape(char)
            if self.lower:
                value = value.lower()
        self[code] = value
        return value


@functools.lru_cache(maxsize=64)
def _escape_table(allowed: str, keep_percent: bool) -> _EscapeTable:
    return _EscapeTable(allowed, keep_percent)


def _quote_table(safe: str) -> _EscapeTable:
    """The ``str.translate`` table of ``urllib.parse.quote(text, safe)``: unreserved
    characters and ``safe`` (ASCII) stay, everything else becomes ``%XX`` of its UTF-8."""
    return _escape_table(_UNRESERVED + safe, "%" in safe)


_REQUOTE_TABLE = _quote_table(_REQUOTE_SAFE)
_HEX_PAIR = re.compile("[0-9a-fA-F]{2}")
_REQUOTE_NO_PERCENT_TABLE = _quote_table(_REQUOTE_SAFE.replace("%", ""))


def _urllib3_quote(text: str, allowed: str, keep_escapes: bool) -> str:
    """urllib3 ``_encode_invalid_chars``: valid escapes are upper-cased; ``%`` itself is kept
    only when every ``%`` of the component starts a valid escape."""
    text = _ESCAPE.sub(lambda m: m.group().upper(), text)
    return text.translate(_escape_table(allowed, keep_escapes))


def _httpx_quote(text: str, safe: str) -> str:
    """httpx ``quote``: valid escapes verbatim, everything outside ``safe`` encoded."""
    table = _escape_table(_UNRESERVED + safe, "%" in safe)
    out, position = [], 0
    for match in _ESCAPE.finditer(text):
        out.append(text[position : match.start()].translate(table))
        out.append(match.group())
        position = match.end()
    out.append(text[position:].translate(table))
    return "".join(out)


def _requote_uri(text: str) -> Iterator[str]:
    """requests ``requote_uri``: unquote escapes of unreserved characters, then quote; when
    the URL holds an invalid escape anywhere it quotes ``%`` too (both may apply)."""
    if "%" not in text:  # nothing to unquote: both quotings agree
        quoted = text.translate(_REQUOTE_TABLE)
        yield quoted
        yield quoted
        return
    parts = text.split("%")
    valid = True
    for i in range(1, len(parts)):
        h = parts[i][:2]
        if len(h) == 2 and h.isalnum():
            if not _HEX_PAIR.fullmatch(h):
                valid = False
                break
            c = chr(int(h, 16))
            parts[i] = c + parts[i][2:] if c in _UNRESERVED else "%" + parts[i]
        else:
            parts[i] = "%" + parts[i]
    if valid:
        yield "".join(parts).translate(_REQUOTE_TABLE)
    yield text.translate(_REQUOTE_NO_PERCENT_TABLE)


def client_url_forms(value: str) -> Iterator[tuple[str, str]]:
    """The secret's text in the URL that urllib3, requests and httpx print (error messages,
    ``response.url``) when the secret was pasted into a URL's query or path."""
    value.encode("utf-8")  # the clients encode strictly: a lone surrogate raises
    # Without "%" the two policies quote alike: the second would only repeat the first.
    policies = ("auto", "quote-percent") if "%" in value else ("auto",)
    requoted: dict[str, tuple[str, ...]] = {}  # the same URL text recurs across policies
    for start in ("query", "path"):
        pieces = _url_pieces(value, start)
        for policy in policies:
            normalised, no_empty_query = [], []
            for i, (component, text, separator) in enumerate(pieces):
                keep = policy == "auto" and len(_ESCAPE.findall(text)) == text.count("%")
                quoted = _urllib3_quote(text, _URLLIB3_SETS[component], keep)
                normalised.append(quoted + separator)
                # requests' urlunparse drops the "?" of an empty query
                empty_query = separator == "?" and not pieces[i + 1][1]
                no_empty_query.append(quoted if empty_query else quoted + separator)
            urllib3_text = "".join(normalised)
            yield "pct-urllib3", urllib3_text
            # requests: urllib3's parse_url, then requote_uri
            for text in dict.fromkeys((urllib3_text, "".join(no_empty_query))):
                if text not in requoted:
                    requoted[text] = tuple(_requote_uri(text))
                for quoted in requoted[text]:
                    yield "pct-requests", quoted
        for safe_sets in (_HTTPX_SETS, _HTTPX_027_SETS):
            yield (
                "pct-httpx",
                "".join(
                    _httpx_quote(text, safe_sets[component]) + separator
                    for component, text, separator in pieces
                ),
            )
    yield from (("pct-requests", requoted) for requoted in _requote_uri(value))
    # userinfo: "https://bob:SECRET@host" (urllib3, httpx) and httpx.URL(password=SECRET)
    for keep in (True, False) if "%" in value else (False,):
        if not keep or len(_ESCAPE.findall(value)) == value.count("%"):
            yield "pct-userinfo", _urllib3_quote(value, _URLLIB3_USERINFO, keep)
    yield "pct-userinfo", _httpx_quote(value, _HTTPX_USERINFO)
    yield "pct-userinfo", _httpx_quote(value, _HTTPX_PASSWORD)
    # httpx 0.25-0.27: URL(userinfo=...) and URL(password=...), quoted twice
    yield "pct-userinfo", _httpx_quote(value, _SUB_DELIMS + ":")
    yield "pct-userinfo", _httpx_quote(value, "")


_STRICT = _quote_table("")
#: ``quote_plus(text, safe="")``: quoted with the space kept, then the space made "+".
_PLUS = _quote_table(" ")
_LOWER_ESCAPE = _EscapeTable(_UNRESERVED, False, lower=True)
_LOWER_PLUS_ESCAPE = _EscapeTable(_UNRESERVED + " ", False, lower=True)
_PERCENT_TABLES = tuple((name, _quote_table(safe)) for name, safe in PERCENT_SAFE_SETS.items())


def percent(s: Secret) -> Iterator[tuple[str, bytes]]:
    v = s.value
    # ``quote`` encodes strictly: a lone surrogate raises here as it did there
    v.encode("utf-8")
    if v.isascii() and not v.strip(_UNRESERVED):
        # Nothing to escape: every form below is the value itself, first name winning.
        yield "pct", _utf8(v)
        return
    seen: set[str] = set()  # a later form spelling the same text would lose to the first
    for name, table in _PERCENT_TABLES:
        text = v.translate(table)
        if text not in seen:
            seen.add(text)
            yield name, _utf8(text)
    for name, text in client_url_forms(v):
        if text not in seen:
            seen.add(text)
            yield name, _utf8(text)
    strict = v.translate(_STRICT)
    # Escapes are the only "%" of a strictly quoted text: lower-casing their hex digits
    # is quoting with lower-case escapes.
    for name, text in (
        ("pct-lower", v.translate(_LOWER_ESCAPE)),
        ("pct-plus", v.translate(_PLUS).replace(" ", "+")),  # form encoding: space -> "+"
        ("pct-plus-lower", v.translate(_LOWER_PLUS_ESCAPE).replace(" ", "+")),
        ("pct-double", strict.translate(_STRICT)),
    ):
        if text not in seen:
            seen.add(text)
            yield name, _utf8(text)


_URLSAFE = bytes.maketrans(b"+/", b"-_")


def _base64_cores(data: bytes) -> list[bytes]:
    """For the offsets 0, 1 and 2: the base64 characters that depend only on ``data`` when
    it starts that many bytes into a larger blob, such as ``base64(b"bob:" + secret)``."""
    size = len(data)
    return [
        binascii.b2a_base64(pad + data, newline=False)[first : (8 * (offset + size)) // 6]
        for offset, pad, first in _BASE64_OFFSETS
    ]


#: ``(offset, its padding, where the core starts: ceil(8 * offset / 6))``
_BASE64_OFFSETS = tuple((offset, b"\0" * offset, math.ceil(8 * offset / 6)) for offset in range(3))


@functools.cache
def _base64_names(label: str) -> tuple[tuple[str, str], ...]:
    """The names of the standard and URL-safe cores at the offsets 0, 1 and 2."""
    url_label = label.replace("base64", "base64url")
    return tuple((f"{label}@{offset}", f"{url_label}@{offset}") for offset in range(3))


def _base64_variants(data: bytes, label: str) -> list[tuple[str, bytes]]:
    variants = []
    for (name, url_name), core in zip(_base64_names(label), _base64_cores(data), strict=True):
        # urlsafe_b64encode is b64encode with "+/" translated
        variants += [(name, core), (url_name, core.translate(_URLSAFE))]
    return variants


def _chunks(core: bytes) -> Iterator[bytes]:
    """Pieces of which any line-wrapped or truncated copy of ``core`` holds at least one.

    A wrapped copy is cut into pieces; a full line is >= WRAP_WIDTH characters and the
    outermost pieces of a short core hold >= half of it. Chunks of length F at step F, plus
    the last F characters, put a whole chunk inside every such piece.
    """
    size = min(WRAP_WIDTH // 2, math.ceil(len(core) / 2))
    starts = list(range(0, len(core) - size + 1, size))
    if starts[-1] != len(core) - size:
        starts.append(len(core) - size)
    for start in starts:
        yield core[start : start + size]


def _random_bytes(s: Secret, data: bytes) -> tuple[int, int]:
    """``[head, tail)``: the bytes of ``data`` (the UTF-8 value) from the first to the last
    character that carries bits; ``(len, len)`` when none does."""
    bits = _bits(s)
    # (in C: a float is true unless it is zero; from each end, where a canary's fixed
    # head and tail are short)
    first = next(compress(count(), bits), None)
    if first is None:
        return len(data), len(data)
    last = len(bits) - next(compress(count(), reversed(bits))) - 1
    value = s.value
    if len(data) == len(value):  # ASCII: one byte per character
        return first, last + 1
    return len(_utf8(value[:first])), len(_utf8(value[: last + 1]))


def base64_forms(s: Secret) -> list[tuple[str, bytes]]:
    data = _utf8(s.value)
    forms = _base64_variants(data, "base64")
    forms += _base64_variants(s.value.encode("utf-16-le", "surrogatepass"), "base64-utf16")
    # Chunks cover the part of the core spelled by the secret's own characters: text that
    # every secret of the kind shares (a PEM armour line, a constant prefix or suffix, the
    # prose marker's phrase: the leading and trailing characters that carry no entropy)
    # would match every secret of the kind.
    head, tail = _random_bytes(s, data)
    for offset in range(3):
        core = forms[2 * offset][1]  # the core at this offset
        first = math.ceil(8 * offset / 6)  # where the core starts in base64(b"\0" * offset + data)
        # core characters whose 6 bits all come from bytes [head, tail)
        low = math.ceil(8 * (offset + head) / 6) - first
        high = 8 * (offset + tail) // 6 - first
        if high - low >= 2:
            name = BASE64_WRAPPED.name(offset)
            forms += [(name, chunk) for chunk in _chunks(core[low:high])]
    return forms


def hex_forms(s: Secret) -> Iterator[tuple[str, bytes]]:
    data = _utf8(s.value)
    yield "hex", data.hex().encode()
    yield "hex-upper", data.hex().upper().encode()


def _json_escape(text: str, *, ascii_only: bool) -> str:
    return json.dumps(text, ensure_ascii=ascii_only)[1:-1]


def json_spelling(text: str) -> str:
    """``text`` as ``json.dumps(text, ensure_ascii=False)`` writes it between the quotes
    (how a report's strings are dumped)."""
    return _json_escape(text, ascii_only=False)


def json_forms(s: Secret) -> Iterator[tuple[str, bytes]]:
    for ascii_only, suffix in ((False, ""), (True, "-ascii")):
        once = _json_escape(s.value, ascii_only=ascii_only)
        yield f"json{suffix}", _utf8(once)
        yield f"json-slash{suffix}", _utf8(once.replace("/", "\\/"))
        # JSON text carried as a string inside other JSON (an error body in a log event)
        yield f"json-nested{suffix}", _utf8(_json_escape(once, ascii_only=ascii_only))
    # The common mix: a body rendered with ensure_ascii=False (Starlette's JSONResponse)
    # logged by a renderer with the default ensure_ascii=True (structlog's JSONRenderer).
    inner = _json_escape(s.value, ascii_only=False)
    yield "json-nested-ascii", _utf8(_json_escape(inner, ascii_only=True))


class _ReprTable(dict):
    """``str.translate`` table of what ``repr`` writes for each character between the
    quotes when it chose ``quote_char``; filled in on first use."""

    def __init__(self, quote_char: str) -> None:
        super().__init__()
        self.quote_char = quote_char

    def __missing__(self, code: int) -> str:
        ch = chr(code)
        if ch == "\\":
            value = "\\\\"
        elif ch == self.quote_char:
            value = "\\" + ch
        elif ch in "'\"":
            value = ch
        else:
            value = repr(ch)[1:-1]
        self[code] = value
        return value


_REPR_TABLES = {q: _ReprTable(q) for q in "'\""}


class _JsonAsciiTable(dict):
    """``str.translate`` table of what ``json.dumps`` (``ensure_ascii``) writes for each
    character between the quotes; filled in on first use."""

    def __missing__(self, code: int) -> str:
        value = json.dumps(chr(code))[1:-1]
        self[code] = value
        return value


#: The spellings whose masking windows ``window_forms`` makes beside the value's own:
#: ``repr`` with either quote, JSON with ``ensure_ascii``. Each escapes character by
#: character.
_ESCAPED_SPELLINGS: tuple[dict[int, str], ...] = (*_REPR_TABLES.values(), _JsonAsciiTable())


def text_spellings(text: str) -> set[str]:
    """``text`` as it is, as JSON writes it between the quotes (``ensure_ascii`` on and
    off) and as ``repr`` does (either quote): where a short label is looked at for a value
    (``LeakCheck.expose``'s name), not a scan."""
    return {text, json_spelling(text), *(text.translate(table) for table in _ESCAPED_SPELLINGS)}


def _bytes_repr_table(quote_char: str) -> dict[int, str]:
    """The same for ``bytes``, by byte (applied to the latin-1 decoding)."""
    table = {}
    for byte in range(256):
        ch = chr(byte)
        if ch == "\\":
            table[byte] = "\\\\"
        elif ch == quote_char:
            table[byte] = "\\" + ch
        elif ch in "'\"":
            table[byte] = ch
        else:
            table[byte] = repr(bytes([byte]))[2:-1]
    return table


_BYTES_REPR_TABLES = {q: _bytes_repr_table(q) for q in "'\""}


def _py_escape(text: str, quote_char: str) -> str:
    """What ``repr`` writes between the quotes when it chose ``quote_char``."""
    table = _REPR_TABLES.get(quote_char)
    return text.translate(_ReprTable(quote_char) if table is None else table)


def _py_bytes_escape(data: bytes, quote_char: str) -> str:
    table = _BYTES_REPR_TABLES.get(quote_char)
    if table is None:
        table = _bytes_repr_table(quote_char)
    return data.decode("latin-1").translate(table)


def repr_forms(s: Secret) -> Iterator[tuple[str, bytes]]:
    yield "repr", _utf8(_py_escape(s.value, "'"))
    yield "repr-dq", _utf8(_py_escape(s.value, '"'))
    data = _utf8(s.value)
    yield "repr-bytes", _py_bytes_escape(data, "'").encode()
    yield "repr-bytes-dq", _py_bytes_escape(data, '"').encode()
    yield "unicode-escape", s.value.encode("unicode_escape")


#: The form of a secret in UTF-16-LE text as written: its finding's column and excerpt are
#: read as UTF-16-LE.
UTF16_FORM = "utf16-le"


def utf16_forms(s: Secret) -> Iterator[tuple[str, bytes]]:
    """The secret as UTF-16-LE text is written (a PowerShell transcript, a Windows API's
    buffer) and as the ``repr`` of those bytes (``b'a\\x00b\\x00'``)."""
    data = s.value.encode("utf-16-le", "surrogatepass")
    yield UTF16_FORM, data
    # a truncated token in the transcript: the bare prefix and suffix fragment_forms makes
    head, tail = _fragment_lengths(s)
    if head is not None:
        yield UTF16_PREFIX.name(head), s.value[:head].encode("utf-16-le", "surrogatepass")
    if tail is not None:
        yield UTF16_SUFFIX.name(tail), s.value[-tail:].encode("utf-16-le", "surrogatepass")
    yield "repr-bytes-utf16", _py_bytes_escape(data, "'").encode()
    yield "repr-bytes-utf16-dq", _py_bytes_escape(data, '"').encode()


def index_utf16_forms(s: Secret) -> Iterator[tuple[str, bytes]]:
    """``utf16_forms`` but none for a value of printable ASCII without quotes or a
    backslash (no ``_NOT_PLAIN`` character, no ``"``): such a character's UTF-16-LE bytes
    and their ``repr`` (either quote), narrowed (``masking._narrowed``), are the character,
    so each needle is the value, its bare prefix or its bare suffix, all three needles of
    the forms beside it (``raw``, ``fragment_forms``) that the session masker's index has."""
    if '"' not in s.value and not _NOT_PLAIN.search(s.value):
        return iter(())
    return utf16_forms(s)


def _html_escape(text: str, quote: bool) -> str:
    """``html.escape``, which tests/test_forms.py holds it equal to: importing ``html``
    loads its entity table, 1.5 ms of a scan's start-up."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace('"', "&quot;").replace("'", "&#x27;") if quote else text


def html_forms(s: Secret) -> Iterator[tuple[str, bytes]]:
    v = s.value
    yield "html", _utf8(_html_escape(v, quote=True))
    yield "html-noquote", _utf8(_html_escape(v, quote=False))
    # markupsafe / Jinja2 spelling of the quotes
    yield (
        "html-markupsafe",
        _utf8(
            v.replace("&", "&amp;")
            .replace("<", "&lt;")
            .replace(">", "&gt;")
            .replace("'", "&#39;")
            .replace('"', "&#34;")
        ),
    )
    yield "html-numeric", _utf8(v.translate(_NUMERIC_ENTITIES))


class _NumericEntities(dict):
    """``str.translate`` table: ASCII letters and digits stay, the rest become ``&#N;``."""

    def __missing__(self, code: int) -> str:
        ch = chr(code)
        value = ch if ch.isalnum() and ch.isascii() else f"&#{code};"
        self[code] = value
        return value


_NUMERIC_ENTITIES = _NumericEntities()


def _bits(s: Secret) -> tuple[float, ...]:
    return s.bits if len(s.bits) == len(s.value) else (6.0,) * len(s.value)


def _mask_bits(s: Secret) -> tuple[float, ...]:
    """What masking windows count: the secret's bits, or for a user secret accepted early
    (``Secret.mask_bits``: its class bits, ``bits`` a lower bound of the full estimate)
    the full estimate's wherever the two bounds would make other windows
    (``_exact_mask_bits``)."""
    upper = s.mask_bits
    if len(upper) != len(s.value):
        return _bits(s)
    if _UPPER_MASK_BITS.get():
        return upper
    return _exact_mask_bits(s.value, _bits(s), upper)


#: Set where the windows of many secrets are only a superset to narrow (the scan's masker
#: looks for the secrets whose windows can be in what it prints): the class bits then,
#: whose windows hold every window of the full estimate, with no zxcvbn for each secret.
_UPPER_MASK_BITS: ContextVar[bool] = ContextVar("leakcheck_upper_mask_bits", default=False)


@contextlib.contextmanager
def upper_mask_bits() -> Iterator[None]:
    """Within it, masking windows count a secret's upper bits (see ``_UPPER_MASK_BITS``)."""
    token = _UPPER_MASK_BITS.set(True)
    try:
        yield
    finally:
        _UPPER_MASK_BITS.reset(token)


@functools.lru_cache(maxsize=1024)
def _exact_mask_bits(
    value: str, least: tuple[float, ...], upper: tuple[float, ...]
) -> tuple[float, ...]:
    """The bits masking windows count for a value whose full estimate lies between
    ``least`` and ``upper`` at each character: ``upper`` when both make the same windows
    (a random token: no zxcvbn), else the full estimate (zxcvbn). Masking with ``upper``
    where the estimate says a dictionary word masked that word wherever it appears, our
    own fixed text included: a report reading "93 «canary:secret:fragment»" for "93
    needles" told that the secret holds "needles" (a weak secret's refusal, blotted so,
    spelled it whole)."""
    if least == upper or _window_decisions(least) == _window_decisions(upper):
        return upper
    full = estimate_bits(value)  # (zxcvbn: only here, and rarely)
    return tuple(min(max(b, low), high) for b, low, high in zip(full, least, upper, strict=True))


def _window_decisions(bits: Sequence[float]) -> tuple[tuple[bool, ...], ...]:
    """For each run of 1 to WINDOW_CHARS characters of a value whose characters carry
    ``bits``, whether it carries ESCAPED_WINDOW_BITS (a window of an escaped spelling
    counts the characters it spells) and, for whole windows, TAIL_BITS: what decides
    every masking window and every masked piece that holds one."""
    total = list(accumulate(bits, initial=0.0))
    size = len(bits)
    decisions = [
        tuple(total[i + n] - total[i] >= ESCAPED_WINDOW_BITS for i in range(size - n + 1))
        for n in range(1, min(WINDOW_CHARS, size) + 1)
    ]
    decisions.append(
        tuple(
            total[i + WINDOW_CHARS] - total[i] >= TAIL_BITS for i in range(size - WINDOW_CHARS + 1)
        )
    )
    return tuple(decisions)


def _shortest(bits: Iterable[float], need: float) -> int | None:
    """The fewest leading ``bits`` that sum to ``need`` (None when all of them do not). A
    loop that stops there: bisecting the running sums, all made in C, cost more
    instructions (the prefix fragments stop some 11 characters in)."""
    total = 0.0
    for n, b in enumerate(bits, start=1):
        total += b
        if total >= need:
            return n
    return None


# Text that precedes a masked tail ("****7KQ2", "credential ending in 7KQ2") or follows a
# visible head ("ghp_ab12****"). Each is rare in ordinary text; see the module docstring.
TAIL_CONTEXTS = (
    "**",
    "\u2022",
    "\u2026",
    "...",
    "xxxx",
    "XXXX",
    "####",
    "ending in ",
    " ending ",  # "token ending 7KQ2" (the space: not "sending", "pending")
    "ending with ",
    "ends in ",
    "ends with ",
    "last 4: ",
    "last four: ",
    "ending in '",
    'ending in "',
    "ending in `",
    "suffix ",
    "suffix: ",
)
MASKED_SIZES = (4, 6, 8)
HEAD_CONTEXTS = ("**", "\u2022", "\u2026", "...", "xxxx", "XXXX", "####")
_TAIL_CONTEXT_BYTES = tuple(_utf8(c) for c in TAIL_CONTEXTS)
_HEAD_CONTEXT_BYTES = tuple(_utf8(c) for c in HEAD_CONTEXTS)


#: A token family's public head: lower-case words (and digits) each ending in ``_``, ``-``
#: or ``.`` (``sk-ant-api03-``, ``xoxe.xoxp-1-``, ``dop_v1_``, ``lin_api_``, ``ghp_``), or
#: an upper-case family prefix. Every token of the family starts so: its characters carry
#: no randomness, whatever a strength estimate gave them.
_PUBLIC_HEAD = re.compile(r"(?:[a-z0-9]{1,10}[_.-]){1,4}|(?:AKIA|ASIA|AIDA|AROA|AGPA|AIza)")


def head_bits(s: Secret) -> tuple[float, ...]:
    """The per-character bits of ``s`` with a user secret's public head (``_PUBLIC_HEAD``)
    at none: what the prefix fragments and masked heads are measured on. A generated
    canary's bits are exact already."""
    return _headless(s, _bits(s))


def _headless(s: Secret, bits: tuple[float, ...]) -> tuple[float, ...]:
    """``bits`` (of ``s``'s characters) with a user secret's public head at none."""
    if s.generated:
        return bits
    # made once per value and bits: a secret's forms and keys ask nine times
    return _head_bits(s.value, bits)


@functools.lru_cache(maxsize=1024)
def _head_bits(value: str, bits: tuple[float, ...]) -> tuple[float, ...]:
    head = _PUBLIC_HEAD.match(value)
    if head is None or head.end() >= len(value):
        return bits
    # the body's characters at most what its own classes give (the head's "_" or "-"
    # made a random alphanumeric body look drawn from 94 symbols)
    most = math.log2(_body_alphabet(value[head.end() :]))
    return (0.0,) * head.end() + tuple(min(b, most) for b in bits[head.end() :])


def _body_alphabet(text: str) -> int:
    size = 0
    for chars, symbols in ((str.islower, 26), (str.isupper, 26), (str.isdigit, 10)):
        if any(chars(c) and c.isascii() for c in text):
            size += symbols
    if any(not c.isascii() or not c.isalnum() for c in text):
        size += 33
    return max(size, 2)


def _fragment_lengths(s: Secret) -> tuple[int | None, int | None]:
    """The characters of the bare prefix and suffix fragments, None where there is none
    (shorter than the whole value). A prefix carries FRAGMENT_BITS in its random part: the
    family's head ahead of it counts for nothing (``lin_api_`` + 2 characters matched every
    such token). Counted with ``_upper_bits``: for a user secret accepted early, a superset
    of the full estimate's pieces, whose hits are verified (``unsure_pieces``)."""
    upper = _upper_bits(s)
    return _piece_sizes(s.value, upper, _headless(s, upper))[:2]


def _upper_bits(s: Secret) -> tuple[float, ...]:
    """What the bare fragments and the masked heads and tails of ``s`` are sized from: its
    bits, or for a user secret accepted early its class bits (``Secret.mask_bits``, never
    fewer than the full estimate's at any character). Its ``bits``, a lower bound of that
    estimate, made them longer than zxcvbn would wherever a character could begin a word
    (an ``sk-`` key's suffix 15 characters against 10, an ``xoxb-`` token's prefix 44
    against 20): pieces that ``--full-estimate`` found went unreported by default. Sized
    from the class bits they are never longer than the full estimate's, so every piece it
    reports is found; the hit of one that the lower bound would not make is checked against
    the full estimate (``unsure_pieces``, ``verify_piece``: zxcvbn only then)."""
    upper = s.mask_bits
    return upper if len(upper) == len(s.value) else _bits(s)


_PieceSizes = tuple[int | None, int | None, frozenset[int], frozenset[int]]


@functools.lru_cache(maxsize=1024)
def _piece_sizes(value: str, bits: tuple[float, ...], head: tuple[float, ...]) -> _PieceSizes:
    """(bare prefix length, bare suffix length, masked tail sizes, masked head sizes) of a
    value whose characters carry ``bits`` (``head``: with its public head at none): each
    piece carries FRAGMENT_BITS, a masked one TAIL_BITS (a gateway shows 4 characters
    whatever they carry; each length is searched whose characters carry TAIL_BITS)."""
    n = len(value)
    first = _shortest(head, FRAGMENT_BITS)
    last = _shortest(reversed(bits), FRAGMENT_BITS)
    return (
        first if first is not None and first < n else None,
        last if last is not None and last < n else None,
        frozenset(size for size in MASKED_SIZES if size < n and sum(bits[-size:]) >= TAIL_BITS),
        frozenset(size for size in MASKED_SIZES if size < n and sum(head[:size]) >= TAIL_BITS),
    )


@functools.lru_cache(maxsize=1024)
def unsure_pieces(s: Secret) -> frozenset[str]:
    """The names of the pieces of ``s`` (bare prefix and suffix, their UTF-16-LE spellings,
    masked heads and tails) whose hits must be verified with the full estimate before they
    are reported (``verify_piece``): those of a user secret accepted early that its class
    bits make and its lower bound would make otherwise (the full estimate lies between the
    two at every character, and a piece's length or presence only grows as its characters'
    bits fall: where both bounds agree, so does the full estimate, and no zxcvbn is run)."""
    if len(s.mask_bits) != len(s.value):
        return frozenset()
    upper = _piece_sizes(s.value, s.mask_bits, _headless(s, s.mask_bits))
    lower = _piece_sizes(s.value, _bits(s), head_bits(s))
    names: set[str] = set()
    if upper[0] is not None and upper[0] != lower[0]:
        names |= {PREFIX.name(upper[0]), UTF16_PREFIX.name(upper[0])}
    if upper[1] is not None and upper[1] != lower[1]:
        names |= {SUFFIX.name(upper[1]), UTF16_SUFFIX.name(upper[1])}
    names |= {MASKED_TAIL.name(size) for size in upper[2] - lower[2]}
    names |= {MASKED_HEAD.name(size) for size in upper[3] - lower[3]}
    return frozenset(names)


def _full_estimate(s: Secret) -> Secret:
    """``s`` with the bits of its full estimate (zxcvbn, once per value: ``_bits_of``), as
    ``Secret.from_user(..., early=False)`` makes it."""
    bits = _canaries._bits_of(s.value)
    return Secret(
        value=s.value, kind=s.kind, id=s.id, secret_class=s.secret_class, bits=bits,
        generated=s.generated,
    )  # fmt: skip


#: bare pieces of the value's head, and of its tail: a longer piece of the same family
#: holds a shorter one at its start, or at its end
_LEADING = (PREFIX.prefix, UTF16_PREFIX.prefix)
_TRAILING = (SUFFIX.prefix, UTF16_SUFFIX.prefix)


def _family(name: str) -> str:
    """What ``verify_piece`` matches a piece by: a bare piece's family (its length aside),
    a masked head's or tail's own name (its size is what the bits decide)."""
    family = name.rstrip("0123456789")
    return family if family in _LEADING or family in _TRAILING else name


@functools.lru_cache(maxsize=256)
def _full_pieces(s: Secret) -> dict[str, tuple[tuple[str, bytes], ...]]:
    """The pieces the full estimate makes of ``s`` (``unsure_pieces``' kinds), by
    ``_family``: every spelling ``fragment_forms`` and ``utf16_forms`` give them."""
    full = _full_estimate(s)
    pieces: dict[str, list[tuple[str, bytes]]] = {}
    for name, pattern in chain(fragment_forms(full), utf16_forms(full)):
        if name.startswith((*_LEADING, *_TRAILING, MASKED_TAIL.prefix, MASKED_HEAD.prefix)):
            pieces.setdefault(_family(name), []).append((name, pattern))
    return {family: tuple(found) for family, found in pieces.items()}


def verify_piece(
    s: Secret, form: str, buf: bytes, start: int, end: int
) -> tuple[str, bytes, int, int] | None:
    """The piece the full estimate makes of ``s`` that ``buf`` holds where the needle
    named ``form`` (one of ``unsure_pieces(s)``) was found at ``[start, end)``: (its name,
    its bytes, where it starts and ends), or None when the full estimate reports nothing
    there. A bare prefix or suffix the full estimate makes longer holds the one found, at
    its start or its end (a piece's spellings escape character by character), so every
    piece it reports is one of these hits; the longest that ``buf`` holds is taken. A
    masked head or tail is the same needle, or none."""
    family = _family(form)
    best: tuple[str, bytes, int, int] | None = None
    for name, pattern in _full_pieces(s).get(family, ()):
        if family in _LEADING:
            low, high = start, start + len(pattern)
        elif family in _TRAILING:
            low, high = end - len(pattern), end
        else:
            low, high = start, end
        if low < 0 or high > len(buf) or buf[low:high] != pattern:
            continue
        if best is None or high - low > best[3] - best[2]:
            best = (name, pattern, low, high)
    return best


def masked_bits_for(secrets: int) -> float:
    """The bits a masked head or tail must carry to be reported in a scan for ``secrets``
    secrets at once: TAIL_BITS up to TAIL_BITS_SECRETS, and one more for each doubling
    past it. A masking context followed by four random characters is some secret's masked tail by
    chance n times as often for n secrets: with 100,000 secrets, the first MiB of the bench
    corpus gave a ``masked-head-4`` finding of text that held none (204 masked tokens x
    100,000 / 62**4 ~ 1.4 expected). Raised by log2(n / 20) bits, the chance stays the
    figure stated for 20 secrets (module docstring): a scan for 100,000 secrets reports
    6 and 8 characters of a mixed-case alphanumeric tail, not 4."""
    if secrets <= TAIL_BITS_SECRETS:
        return TAIL_BITS
    return TAIL_BITS + math.log2(secrets / TAIL_BITS_SECRETS)


def weak_masks(s: Secret, need: float) -> frozenset[str]:
    """The names of the masked heads and tails of ``s`` whose characters carry less than
    ``need`` bits (``masked_bits_for``): not reported in such a search (still masked).
    Asked of a hit only: for a user secret accepted early, counted with the full estimate
    where its two bounds disagree (the lower bound called pieces weak that it reports)."""
    if need <= TAIL_BITS:
        return frozenset()
    weak = _weak_masks(s.value, _bits(s), head_bits(s), need)
    if len(s.mask_bits) == len(s.value):
        upper = s.mask_bits
        if weak != _weak_masks(s.value, upper, _headless(s, upper), need):
            full = _full_estimate(s)
            weak = _weak_masks(s.value, full.bits, head_bits(full), need)
    return weak


@functools.lru_cache(maxsize=1024)
def _weak_masks(
    value: str, bits: tuple[float, ...], head: tuple[float, ...], need: float
) -> frozenset[str]:
    weak = {MASKED_TAIL.name(n) for n in MASKED_SIZES if n < len(value) and sum(bits[-n:]) < need}
    weak |= {MASKED_HEAD.name(n) for n in MASKED_SIZES if n < len(value) and sum(head[:n]) < need}
    return frozenset(weak)


def fragment_forms(s: Secret) -> list[tuple[str, bytes]]:
    return _fragment_forms(s, windows_apart=False)


def index_fragment_forms(s: Secret) -> list[tuple[str, bytes]]:
    """``fragment_forms`` less the masked heads and tails of WINDOW_CHARS characters or
    more that hold one of the secret's own masking windows (``window_forms``, on the
    value): a text holding one holds that window, whose head the session masker's index
    has; of a canary's masked needles, those were more than half."""
    return _fragment_forms(s, windows_apart=True)


def _fragment_spellings(name: str, piece: str) -> list[tuple[str, bytes]]:
    """A bare prefix or suffix as it is, and, where it holds a character they escape, as
    ``repr`` and JSON spell it: a PEM key's first line ends in a newline, which a repr cut
    to 80 characters (rich's locals, pytest's ``-l``) shows as ``\\n``, and no form matched
    the header and some 50 characters of the key that it showed (found by a hunting
    helper)."""
    spellings = [(name, _utf8(piece))]
    if not _ESCAPED_BY_NONE.fullmatch(piece):
        for spelled in dict.fromkeys(
            (_py_escape(piece, "'"), _json_escape(piece, ascii_only=True))
        ):
            if spelled != piece:
                spellings.append((name, _utf8(spelled)))
    return spellings


def _fragment_forms(s: Secret, *, windows_apart: bool) -> list[tuple[str, bytes]]:
    v, bits = s.value, _bits(s)
    forms = []
    # the running sums of the masking bits, as _window_starts reads them: only the windows
    # at either end are asked about
    total = list(accumulate(_mask_bits(s), initial=0)) if windows_apart else []

    def holds_window(start: int, size: int) -> bool:
        """Whether ``v[start : start + size]`` holds a masking window of the value."""
        return windows_apart and any(
            total[i + WINDOW_CHARS] - total[i] >= TAIL_BITS
            for i in range(start, start + size - WINDOW_CHARS + 1)
        )

    # (sized from the upper bits: a superset of the full estimate's, see _upper_bits)
    upper = _upper_bits(s)
    first, last, tails, heads = _piece_sizes(v, upper, _headless(s, upper))
    if first is not None:
        forms += _fragment_spellings(PREFIX.name(first), v[:first])
    if last is not None:
        forms += _fragment_spellings(SUFFIX.name(last), v[-last:])
    # Masked heads and tails: a gateway shows 4 characters whatever they carry; each length
    # is searched whose characters carry TAIL_BITS.
    for size in MASKED_SIZES:
        if size in tails:
            if not holds_window(len(v) - size, size):
                name, tail = MASKED_TAIL.name(size), _utf8(v[-size:])
                forms += [(name, context + tail) for context in _TAIL_CONTEXT_BYTES]
        if size in heads:
            if not holds_window(0, size):
                name, head = MASKED_HEAD.name(size), _utf8(v[:size])
                forms += [(name, head + context) for context in _HEAD_CONTEXT_BYTES]
    # Multi-line secrets (PEM) leak a line at a time.
    if "\n" in v:
        start = 0
        for number, line in enumerate(v.split("\n"), start=1):
            line_bits = bits[start : start + len(line)]
            start += len(line) + 1
            if sum(line_bits) >= FRAGMENT_BITS:
                # (without a CR that ends it: the line as an LF log writes it)
                forms.append((LINE.name(number), _utf8(line.removesuffix("\r"))))
    return forms


FORMS: tuple[FormFn, ...] = (
    raw,
    casefold,
    percent,
    base64_forms,
    hex_forms,
    json_forms,
    repr_forms,
    utf16_forms,
    html_forms,
    fragment_forms,
)

#: Forms every needle of which holds the secret's ``anchor_run`` verbatim: each maps the
#: value character by character and leaves ASCII letters and digits as they are (quoting
#: for URLs, JSON, repr and HTML escaping), except that the URL forms upper-case or decode
#: the two characters after a ``%``. A scanner may put off making these needles until a
#: text holds that run: without it, none of them can occur.
RUN_KEEPING_FORMS: frozenset[FormFn] = frozenset({percent, json_forms, repr_forms, html_forms})
#: An anchor run shorter than this would be found too often to be worth putting off for.
ANCHOR_RUN_CHARS = 8
#: At most this many distinct needles come from the RUN_KEEPING_FORMS for one secret,
#: whatever its value (the URL forms are a fixed list of quotings): a scanner puts needles
#: off only when the count it would reach stays below the one that changes its engine.
RUN_KEEPING_MAX_NEEDLES = 64
_ALNUM_RUN = re.compile(rf"[A-Za-z0-9]{{{ANCHOR_RUN_CHARS},}}")


def anchor_run(secret: Secret) -> bytes | None:
    """The longest run of ASCII letters and digits of the value (at least
    ANCHOR_RUN_CHARS) that holds none of the two characters after a ``%``; every needle
    of the RUN_KEEPING_FORMS holds it. None when there is no such run."""
    value = secret.value
    at = value.find("%")
    if at != -1:  # (from each "%" on, not each character: a canary holds one or two)
        chars = list(value)
        while at != -1:
            chars[at + 1 : at + 3] = "%" * len(chars[at + 1 : at + 3])
            at = value.find("%", at + 1)
        value = "".join(chars)
    return max((m.encode() for m in _ALNUM_RUN.findall(value)), key=len, default=None)


@functools.cache
def eager_forms(forms: tuple[FormFn, ...]) -> tuple[FormFn, ...]:
    """``forms`` but the RUN_KEEPING_FORMS, whose needles a scanner puts off until a text
    holds the secret's anchor run."""
    return tuple(form for form in forms if form not in RUN_KEEPING_FORMS)


def needle_material(
    secret: Secret, forms: tuple[FormFn, ...], *, cached: bool = True
) -> list[bytes]:
    """What a text must hold for a scanner with ``forms`` to find anything of ``secret``:
    the needles of its forms that keep no anchor run, and its anchor run, which every
    needle of the others holds (RUN_KEEPING_FORMS); every needle when it has no anchor
    run. (The tables are the ones a scanner makes, from ``needle_table``'s cache; with
    ``cached`` false, the same needles made afresh, unnamed: ``needle_bytes``.)"""
    run = anchor_run(secret)
    make = needle_table if cached else needle_bytes
    if run is None:
        return list(make(secret, forms))
    return [*make(secret, eager_forms(forms)), run]


def needles_for(secret: Secret, forms: Iterable[FormFn] = FORMS) -> list[Needle]:
    """All distinct needles of one secret, first form name winning on equal bytes."""
    return [
        Needle(pattern, secret, name)
        for pattern, name in needle_table(secret, tuple(forms)).items()
    ]


@functools.lru_cache(maxsize=512)
def needle_table(secret: Secret, forms: tuple[FormFn, ...]) -> dict[bytes, str]:
    """``{needle bytes: form name}`` of one secret, in form order (read-only: cached).

    What a ``Scanner`` keeps: plain bytes and names, no object per needle. A scanner per
    test holds a few hundred needles, and pytest keeps every test's harness alive to the
    end of the session: objects the garbage collector has to walk made whole-suite runs
    slower with every test. (A dict of bytes and str is never tracked by the collector.)
    """
    # Cached: a test's detection scanner and its report masker share a secret's needles.
    # Names interned: a few dozen distinct ones, shared by every table kept alive (a form
    # names its needles in runs: the same object, interned once).
    seen: dict[bytes, str] = {}
    last = shared = ""
    for form in forms:
        for name, pattern in form(secret):
            if pattern and pattern not in seen:
                if name is not last:
                    last, shared = name, sys.intern(name)
                seen[pattern] = shared
    return seen


_PATTERN = itemgetter(1)


def needle_bytes(secret: Secret, forms: tuple[FormFn, ...]) -> list[bytes]:
    """``needle_table``'s needles, in its order, without their names and not cached: for
    the session masker's index, which takes each secret once and wants no names (naming
    and interning them one by one was a third of the cost of a test's needles, issue 13)."""
    # (one dict for every form's needles: a dict of each form's, merged, was a tenth of it)
    seen = dict.fromkeys(chain.from_iterable(_patterns(form, secret) for form in forms))
    seen.pop(b"", None)
    return list(seen)


def _patterns(form: FormFn, secret: Secret) -> Iterable[bytes]:
    """The needles of ``form``, without their names: made so where a form can
    (``_UNNAMED``: the masking windows, a test's most numerous needles)."""
    unnamed = _UNNAMED.get(form)
    return map(_PATTERN, form(secret)) if unnamed is None else unnamed(secret)


#: Characters in a masking window; see ``window_forms``.
WINDOW_CHARS = 6
#: What a window of an escaped spelling carries at least: two random characters (of an
#: alphabet of 32 symbols or more). An escape spells one character in up to twelve, so few
#: windows of a hostile canary's repr carry TAIL_BITS. Every window holding a letter or
#: digit was kept instead, and the runs inside the escapes of a kind's fixed characters
#: (``\\u00e9``, ``\\xe2\\x``) are alike in every canary of the kind: every escaped "é"
#: that pytest printed was masked, and in a session of 1,000 tests a JSON line holding one
#: cost six seconds to mask (a scanner over every test's secrets).
ESCAPED_WINDOW_BITS = 10.0


def window_forms(s: Secret) -> list[tuple[str, bytes]]:
    """Every run of WINDOW_CHARS characters of the secret that carries TAIL_BITS, and of
    its repr and JSON spellings every run whose characters carry ESCAPED_WINDOW_BITS (an
    escape counts the bits of the character it spells). Too short for detection (chance
    hits), they are for masking our own output, where a false hit costs little and a
    truncated repr such as pytest's ``'lck_gAGC@<+u...\\p=é f:€g1NCE'`` must not show
    its pieces."""
    return _named_windows(_window_forms(s, narrowed_apart=False))


def index_window_forms(s: Secret) -> list[tuple[str, bytes]]:
    """``window_forms`` less the windows that are, without their NULs and ``\\x00``
    escapes, the value's own window at the same place: the UTF-16-LE bytes of a run of
    printable ASCII characters and their ``repr`` (no quote or backslash in it). The
    session masker indexes its needles narrowed so (``masking._narrowed``): for its index
    they are the same heads, and made every test (a third of a canary's windows), they
    were a tenth of the plugin's cost in a test with three canaries."""
    return _named_windows(_window_forms(s, narrowed_apart=True))


def _window_starts(bits: Sequence[float], total: list[float] | None = None) -> list[int]:
    """Where a value's own masking windows start: each run of WINDOW_CHARS characters whose
    ``bits`` (``_mask_bits``; ``total``, their running sums, if made already) reach
    TAIL_BITS."""
    if total is None:
        total = list(accumulate(bits, initial=0))  # window sums in O(1) each
    size = WINDOW_CHARS
    return [i for i in range(len(bits) - size + 1) if total[i + size] - total[i] >= TAIL_BITS]


def _window_forms(s: Secret, *, narrowed_apart: bool) -> dict[bytes, None]:
    """The masking windows (``window_forms``), unnamed, in order."""
    bits = _mask_bits(s)
    value, last = s.value, WINDOW_CHARS - 1
    total = list(accumulate(bits, initial=0))  # window sums in O(1) each
    starts = _window_starts(bits, total)
    windows: dict[bytes, None] = dict.fromkeys(_encoded_windows(value, starts))
    seen = {value}
    for table in _ESCAPED_SPELLINGS:
        spelling = value.translate(table)  # (in C: most canaries' spellings are the value)
        if spelling in seen:
            continue
        seen.add(spelling)
        # the character of the value that each character of the spelling spells
        # (comprehensions: chains of maps were slower on values of 30 to 60 characters)
        owner = [
            k for k, piece in enumerate(map(table.__getitem__, map(ord, value))) for _ in piece
        ]
        kept = [
            i
            for i in range(len(spelling) - last)
            if total[owner[i + last] + 1] - total[owner[i]] >= ESCAPED_WINDOW_BITS
        ]
        windows.update(dict.fromkeys(_encoded_windows(spelling, kept)))
    windows.update(dict.fromkeys(_byte_spelling_windows(value, starts, narrowed_apart)))
    return windows


def _named_windows(windows: dict[bytes, None]) -> list[tuple[str, bytes]]:
    return list(zip(repeat(WINDOW.name()), windows))


#: Forms whose needles ``needle_bytes`` takes without naming them (the names a form
#: yields its needles with are made and dropped for each of them).
_UNNAMED: dict[FormFn, Callable[[Secret], Iterable[bytes]]] = {
    window_forms: functools.partial(_window_forms, narrowed_apart=False),
    index_window_forms: functools.partial(_window_forms, narrowed_apart=True),
}


# ``-l`` locals holding ``token.encode()`` or ``token.encode("utf-16-le")`` (a Windows API,
# a PowerShell transcript) show nearly every piece of the secret in a truncated ``b'...'``.
@functools.cache
def _char_spellings(char: str) -> tuple[bytes, ...]:
    """``char`` as the ``repr`` of its UTF-16-LE bytes (both quotes), as those raw bytes,
    and as the ``repr`` of its UTF-8 bytes (both quotes): a window's spelling is the join
    of its characters'."""
    utf16 = char.encode("utf-16-le", "surrogatepass")
    utf8 = char.encode("utf-8", "surrogatepass")
    return (
        *(_py_bytes_escape(utf16, quote).encode() for quote in "'\""),
        utf16,
        *(_py_bytes_escape(utf8, quote).encode() for quote in "'\""),
    )


#: Characters whose byte spellings differ from the value's own: beyond ASCII; quotes
#: (the double-quoted ``repr`` differs from the single-quoted one only around one); and
#: all but printable ASCII other than ``'`` and ``\\``, whose UTF-16-LE ``repr`` (single
#: quotes), narrowed, is not the character itself.
_BEYOND_ASCII = re.compile(r"[^\x00-\x7f]")
_QUOTE = re.compile("['\"]")
_NOT_PLAIN = re.compile(r"[^ -&(-\[\]-~]")


def _byte_spelling_windows(
    value: str, starts: list[int], narrowed_apart: bool = False
) -> list[bytes]:
    """Windows of WINDOW_CHARS characters of the secret (those starting at ``starts``,
    ``_window_starts``) as the ``repr`` of its encoded bytes spells them, and as raw
    UTF-16-LE: one window per run of the secret's characters, whatever the number of
    escapes that spell it. (The UTF-8 ``repr`` of a window of ASCII characters is its
    ``str`` repr, which window_forms has already.) ``narrowed_apart``: not the UTF-16-LE
    windows (raw, and ``repr`` with single quotes) of runs of plain characters, which
    narrowed are the value's own window (``index_window_forms``)."""
    if not starts:
        return []

    def holding(pattern: re.Pattern[str]) -> list[int]:
        """The starts of the windows holding a character that ``pattern`` matches."""
        near: set[int] = set()
        for match in pattern.finditer(value):
            at = match.start()
            near.update(range(at - WINDOW_CHARS + 1, at + 1))
        return [i for i in starts if i in near] if near else []

    # (a test's canaries are made every test: each window's characters were looked at one
    # by one, the plugin's costliest needle work)
    beyond_ascii = [] if value.isascii() else holding(_BEYOND_ASCII)
    quoted = set(holding(_QUOTE)) if "'" in value or '"' in value else set()
    utf16 = holding(_NOT_PLAIN) if narrowed_apart else starts
    chosen = (
        utf16,
        sorted(quoted),
        utf16,
        beyond_ascii,
        [i for i in beyond_ascii if i in quoted],
    )
    if not any(chosen):
        return []
    by_char = list(map(_char_spellings, value))
    windows: list[bytes] = []
    for k, positions in enumerate(chosen):
        if not positions:
            continue
        # the value's whole spelling, each window a slice of it
        spelled = list(map(itemgetter(k), by_char))
        at = list(accumulate(map(len, spelled), initial=0))
        whole = b"".join(spelled)
        windows += [whole[at[i] : at[i + WINDOW_CHARS]] for i in positions]
    return windows


#: Joins a spelling's windows for encoding them in one call (split again after).
_WINDOW_SEPARATOR = "\n\ufdd0\n"
_WINDOW_SEPARATOR_BYTES = _utf8(_WINDOW_SEPARATOR)


def _encoded_windows(spelling: str, kept: Iterable[int]) -> list[bytes]:
    """The UTF-8 bytes of the windows of ``spelling`` that start at ``kept``."""
    size = WINDOW_CHARS
    if spelling.isascii():  # one byte per character
        data = spelling.encode()
        return [data[i : i + size] for i in kept]
    pieces = [spelling[i : i + size] for i in kept]
    encoded = _utf8(_WINDOW_SEPARATOR.join(pieces)).split(_WINDOW_SEPARATOR_BYTES)
    if len(encoded) != len(pieces):  # a window holding the separator: one at a time
        encoded = [_utf8(piece) for piece in pieces]
    return encoded


#: What ``Scanner.mask`` style maskers use: every form plus the short windows.
MASKING_FORMS: tuple[FormFn, ...] = (*FORMS, window_forms)
#: Forms that mask but never make a finding (a scanner built with MASKING_FORMS detects
#: exactly what one built with FORMS does).
MASK_ONLY_FORMS = frozenset(piece.name() for piece in PIECES if piece.mask_only)


# --- keys of the decoding pass ------------------------------------------------------------
#
# On a large input the decoding pass decodes only the tokens around a *key*: a short run of
# ASCII letters and digits that every decodable chain of a secret holds (see
# ``leakcheck.detect``, "keyed decoding"). Escaping layers (percent, JSON, repr, HTML,
# quoted-printable, ``\uXXXX``) leave letters and digits alone, so a run of them that a
# needle holds survives any number of such layers; a base64 or hex layer maps it to a run
# that ``key images`` below spell (at each of the three byte offsets a base64 encoder can
# meet it at). Escapes of letters and digits themselves are found by shape instead
# (``leakcheck.decode.DENSE_ESCAPES``).

#: A key is at least this many characters ...
KEY_MIN_CHARS = 5
#: ... and a secret's own run (the base of its keys) carries at least this many bits.
KEY_MIN_BITS = 24.0
_ALNUM_ANY = re.compile(rb"[A-Za-z0-9]+")


def _alnum_anchor(text: bytes) -> bytes | None:
    """The longest run of ASCII letters and digits of ``text`` (KEY_MIN_CHARS or more)."""
    best = max(_ALNUM_ANY.findall(text), key=len, default=b"")
    return best if len(best) >= KEY_MIN_CHARS else None


def _key_run(value: str, bits: tuple[float, ...]) -> str | None:
    """The run of ASCII letters and digits of ``value`` carrying the most bits (at least
    KEY_MIN_BITS and KEY_MIN_CHARS characters), the two characters after a ``%`` left out
    (a URL form may upper-case or decode them)."""
    span = _key_run_span(value, bits)
    return None if span is None else value[span[0] : span[1]]


def _key_run_span(value: str, bits: tuple[float, ...]) -> tuple[int, int] | None:
    """Where ``_key_run``'s run lies in ``value``."""
    if "%" in value:
        hidden = {i + k for i, c in enumerate(value) if c == "%" for k in (1, 2)}
        value = "".join("%" if i in hidden else c for i, c in enumerate(value))
    best, best_bits = None, KEY_MIN_BITS
    for match in re.finditer(r"[A-Za-z0-9]+", value):
        if match.end() - match.start() < KEY_MIN_CHARS:
            continue
        carried = sum(bits[match.start() : match.end()])
        if carried >= best_bits:
            best, best_bits = match.span(), carried
    return best


# A transformation that splits the token, not escapes it, leaves no piece holding the whole
# run: colour sequences between its pieces (a log formatter colouring a token piece by
# piece), a terminal's hard wrap or rich's fold at a column, a box's border, a hex or
# base64 dump wrapped at 32 or 76 columns. The whole run was the only key, and such a token
# in a large input was never decoded (found by a hunting helper: a coloured ``ghp_`` token,
# an AWS key wrapped at 80 columns, beside 9 MB of clean log in one scan). So a secret
# also has *piece keys*: every window of its run, so that any piece of the run
# PIECE_KEY_CHARS long holds one; and what one base64 or hex layer makes of every
# PIECE_KEY_STRIDE-th window (and a base64 layer of its UTF-16), for a wrapped blob
# (each of its lines holds a dozen bytes of the run or more). A piece shorter than
# PIECE_KEY_CHARS, the token split every few characters, is found by the split's shape
# (``decode.DENSE_ESCAPES``: three pieces of five characters or fewer).

#: A piece of a secret's run this long holds one of its piece keys (one more than the
#: longest piece ``decode.DENSE_ESCAPES``'s split shapes count).
PIECE_KEY_CHARS = 6
#: the windows a hex or base64 layer's keys are made of start this far apart (a line of
#: the blob holding 11 of the run's characters whole holds one: a middle line of hex
#: wrapped at 32 holds 16, of base64 wrapped at 30 in a box 22; each key costs hyperscan's
#: build, every third window's took 4 ms more for 20 secrets)
PIECE_KEY_STRIDE = 6
#: what a base64 layer makes of a window is a key from this many characters (a shorter
#: one, cut by ``+`` or ``/``, would be met in a random blob too often)
_PIECE_IMAGE_MIN = 6


def _piece_keys(run: str, bits: tuple[float, ...]) -> list[bytes]:
    """The piece keys of a secret's key run ``run`` (its characters carrying ``bits``):
    windows of PIECE_KEY_CHARS characters or more carrying KEY_MIN_BITS, and what a hex or
    base64 layer makes of every PIECE_KEY_STRIDE-th of them (lower-case hex, base64's
    longest runs of letters and digits at each offset, the shortest left out) and a
    base64 layer of its UTF-16."""
    size = PIECE_KEY_CHARS
    if len(run) <= size:
        return []
    # from each start, the shortest window carrying the bits (a judged user token counts
    # some characters low: an AWS key's ``AKIA`` none), a window holding a shorter one
    # left out (a piece that holds it holds the shorter)
    spans: list[tuple[int, int]] = []
    for start in range(len(run) - size + 1):
        end, carried = start + size, sum(bits[start : start + size])
        while carried < KEY_MIN_BITS - 1e-9 and end < len(run):
            carried += bits[end]
            end += 1
        if carried < KEY_MIN_BITS - 1e-9:
            break  # (nor from any later start)
        while spans and spans[-1][1] >= end:
            spans.pop()
        spans.append((start, end))
    windows = [run[start:end] for start, end in spans]
    if windows == [run]:
        return []  # (the run's own key)
    keys = [window.encode() for window in windows]
    # (the last window too: the run's tail is a piece of the blob's last line)
    spaced = {*windows[::PIECE_KEY_STRIDE], *windows[-1:]}
    for window in sorted(spaced):
        data = window.encode()
        # its lower-case hex and its base64, and its UTF-16's base64 (a Windows text's
        # blob); not upper-case hex nor the UTF-16's hex: each key costs hyperscan's build,
        # paid once by every large scan (20 bench canaries: 38 ms without piece keys, 63
        # with every image of both at every third window, 49 as here)
        cores = [*_base64_cores(data), *_base64_cores(window.encode("utf-16-le"))]
        anchors = [_alnum_anchor(core) for core in cores]
        keys += [a for a in anchors if a is not None and len(a) >= _PIECE_IMAGE_MIN]
        keys.append(data.hex().encode())
    return keys


def _key_images(text: bytes) -> list[bytes]:
    """What a base64 (standard or URL-safe, each byte offset) or hex layer makes of
    ``text``, as the runs a key can be: the letters and digits common to both alphabets."""
    images = []
    for core in _base64_cores(text):
        anchor = _alnum_anchor(core)  # "+/" and "-_" split alike
        if anchor is not None:
            images.append(anchor)
    images += [text.hex().encode(), text.hex().upper().encode()]
    return images


@functools.lru_cache(maxsize=512)
def decode_keys(secret: Secret) -> tuple[bytes, ...] | None:
    """The keys of ``secret`` for keyed decoding: every reportable needle of the secret
    (masked heads and tails and base64-wrapped pieces aside) holds one, and so does what
    one base64 or hex layer, with escaping layers around it, makes of one. None when the
    secret has no run to build them on (the scanner then decodes every run)."""
    value, bits = secret.value, _bits(secret)
    base = _key_run(value, bits)
    if base is None:
        return None
    run = _utf8(base)
    utf16 = base.encode("utf-16-le")
    bases = [run, run.lower(), run.upper()]
    # fragments: the prefix and suffix pieces need not hold the secret's run. Those the
    # lower bound makes, as before pieces were verified on a hit: the shorter pieces sized
    # from the upper bits gave short keys that benign text holds, and the 64 MiB bench scan
    # decoded three times the regions (0.21 s to 0.30 s). An encoded piece between the two
    # lengths is found in a small scan, not in a keyed one (README).
    first_size, last_size = _piece_sizes(value, bits, head_bits(secret))[:2]
    for size, at_head in ((first_size, True), (last_size, False)):
        if size is not None:
            text, piece_bits = (
                (value[:size], bits[:size]) if at_head else (value[-size:], bits[-size:])
            )
            own = _key_run(text, tuple(piece_bits))
            if own is not None:
                bases.append(_utf8(own))
    for name, fragment in fragment_forms(secret):
        if name.startswith(LINE.prefix):
            text = fragment.decode("utf-8", "surrogatepass")
            own = _key_run(text, (6.0,) * len(text))
            if own is not None:
                bases.append(_utf8(own))
    # one layer: the base64 and hex needles of the secret hold these
    first = [*_key_images(run), *_key_images(utf16)]
    # their full cores (with "+/" or "-_"), for a second scrambling layer over them
    cores = [c for core in _base64_cores(run) for c in (core, core.translate(_URLSAFE))]
    keys: dict[bytes, None] = dict.fromkeys(k for k in bases if len(k) >= KEY_MIN_CHARS)
    keys.update(dict.fromkeys(first))
    for layer in (*bases[:1], *bases[3:], *cores, run.hex().encode(), run.hex().upper().encode()):
        keys.update(dict.fromkeys(_key_images(layer)))
    # and the keys of its pieces, for a token split by colour, a wrap or a border
    span = _key_run_span(value, bits)
    if span is not None:
        keys.update(dict.fromkeys(_piece_keys(base, bits[span[0] : span[1]])))
    return tuple(keys)
