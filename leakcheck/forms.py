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
  ``masked-tail-4`` hit in a large log as a lead, not a proof;
* base64 fragments (for wrapped or truncated blobs) are cut from the part of the encoded
  core spelled by the secret's own characters (a fragment of fixed text, PEM armour or a
  kind's constant prefix or suffix, would match every secret of the kind): at least half
  of that part and at most 32 characters, 14 or more for every generated canary.
"""

from __future__ import annotations

import base64
import functools
import html
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator
from urllib.parse import quote, quote_plus

from .canaries import Secret

__all__ = [
    "FORMS",
    "FRAGMENT_BITS",
    "TAIL_BITS",
    "Needle",
    "needles_for",
    "base64_core",
]

FRAGMENT_BITS = 64.0
TAIL_BITS = 23.0
#: Wrapped base64 lines are at least this wide (PEM 64, MIME 76).
WRAP_WIDTH = 64

FormFn = Callable[[Secret], Iterable[tuple[str, bytes]]]


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
        printer.text(repr(self))  # type: ignore[attr-defined]


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


# --- the forms ----------------------------------------------------------------------------


def raw(s: Secret) -> Iterator[tuple[str, bytes]]:
    yield "raw", _utf8(s.value)


def casefold(s: Secret) -> Iterator[tuple[str, bytes]]:
    yield "lower", _utf8(s.value.lower())
    yield "upper", _utf8(s.value.upper())
    yield "casefold", _utf8(s.value.casefold())


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


def _lower_hex_escapes(text: str) -> str:
    return re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), text)


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


class _EscapeTable(dict):  # type: ignore[type-arg]
    """A ``str.translate`` table: characters outside ``allowed`` become ``%XX`` escapes
    (of their UTF-8 bytes), filled in on first use. Per-character Python loops made
    needle generation the largest part of the plugin's per-test cost."""

    def __init__(self, allowed: str, keep_percent: bool) -> None:
        super().__init__()
        self.allowed = set(allowed) - {"%"}
        self.keep_percent = keep_percent

    def __missing__(self, code: int) -> str:
        char = chr(code)
        if char in self.allowed or (char == "%" and self.keep_percent):
            value = char
        else:
            value = _pct_escape(char)
        self[code] = value
        return value


@functools.lru_cache(maxsize=64)
def _escape_table(allowed: str, keep_percent: bool) -> _EscapeTable:
    return _EscapeTable(allowed, keep_percent)


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
    parts = text.split("%")
    valid = True
    for i in range(1, len(parts)):
        h = parts[i][:2]
        if len(h) == 2 and h.isalnum():
            if not all(c in "0123456789abcdefABCDEF" for c in h):
                valid = False
                break
            c = chr(int(h, 16))
            parts[i] = c + parts[i][2:] if c in _UNRESERVED else "%" + parts[i]
        else:
            parts[i] = "%" + parts[i]
    if valid:
        yield quote("".join(parts), safe=_REQUOTE_SAFE)
    yield quote(text, safe=_REQUOTE_SAFE.replace("%", ""))


def client_url_forms(value: str) -> Iterator[tuple[str, str]]:
    """The secret's text in the URL that urllib3, requests and httpx print (error messages,
    ``response.url``) when the secret was pasted into a URL's query or path."""
    for start in ("query", "path"):
        pieces = _url_pieces(value, start)
        for policy in ("auto", "quote-percent"):
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
                for requoted in _requote_uri(text):
                    yield "pct-requests", requoted
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
    for keep in (True, False):
        if not keep or len(_ESCAPE.findall(value)) == value.count("%"):
            yield "pct-userinfo", _urllib3_quote(value, _URLLIB3_USERINFO, keep)
    yield "pct-userinfo", _httpx_quote(value, _HTTPX_USERINFO)
    yield "pct-userinfo", _httpx_quote(value, _HTTPX_PASSWORD)
    # httpx 0.25-0.27: URL(userinfo=...) and URL(password=...), quoted twice
    yield "pct-userinfo", _httpx_quote(value, _SUB_DELIMS + ":")
    yield "pct-userinfo", _httpx_quote(value, "")


def percent(s: Secret) -> Iterator[tuple[str, bytes]]:
    v = s.value
    for name, safe in PERCENT_SAFE_SETS.items():
        yield name, _utf8(quote(v, safe=safe))
    for name, text in client_url_forms(v):
        yield name, _utf8(text)
    strict = quote(v, safe="")
    yield "pct-lower", _utf8(_lower_hex_escapes(strict))
    yield "pct-plus", _utf8(quote_plus(v, safe=""))  # form encoding: space -> "+"
    yield "pct-plus-lower", _utf8(_lower_hex_escapes(quote_plus(v, safe="")))
    yield "pct-double", _utf8(quote(strict, safe=""))


def base64_core(data: bytes, offset: int, *, urlsafe: bool = False) -> bytes:
    """The base64 characters that depend only on ``data`` when it starts ``offset`` bytes
    (0, 1 or 2) into a larger blob, such as ``base64(b"bob:" + secret)``."""
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    encoded = encode(b"\0" * offset + data)
    start = math.ceil(8 * offset / 6)
    end = (8 * (offset + len(data))) // 6
    return encoded[start:end]


def _base64_variants(data: bytes, label: str) -> Iterator[tuple[str, bytes]]:
    for offset in range(3):
        yield f"{label}@{offset}", base64_core(data, offset)
        yield (
            f"{label.replace('base64', 'base64url')}@{offset}",
            base64_core(data, offset, urlsafe=True),
        )


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


def base64_forms(s: Secret) -> Iterator[tuple[str, bytes]]:
    data = _utf8(s.value)
    yield from _base64_variants(data, "base64")
    yield from _base64_variants(s.value.encode("utf-16-le", "surrogatepass"), "base64-utf16")
    # Chunks cover the part of the core spelled by the secret's own characters: text that
    # every secret of the kind shares (a PEM armour line, a constant prefix or suffix, the
    # prose marker's phrase: the leading and trailing characters that carry no entropy)
    # would match every secret of the kind.
    byte_fixed = [b == 0.0 for c, b in zip(s.value, _bits(s), strict=True) for _ in _utf8(c)]
    head = next((i for i, fixed in enumerate(byte_fixed) if not fixed), len(data))
    tail = len(data) - next((i for i, fixed in enumerate(reversed(byte_fixed)) if not fixed), 0)
    for offset in range(3):
        core = base64_core(data, offset)
        first = math.ceil(8 * offset / 6)  # where the core starts in base64(b"\0" * offset + data)
        # core characters whose 6 bits all come from bytes [head, tail)
        low = math.ceil(8 * (offset + head) / 6) - first
        high = 8 * (offset + tail) // 6 - first
        if high - low >= 2:
            for chunk in _chunks(core[low:high]):
                yield f"base64-wrapped@{offset}", chunk


def hex_forms(s: Secret) -> Iterator[tuple[str, bytes]]:
    data = _utf8(s.value)
    yield "hex", data.hex().encode()
    yield "hex-upper", data.hex().upper().encode()


def _json_escape(text: str, *, ascii_only: bool) -> str:
    return json.dumps(text, ensure_ascii=ascii_only)[1:-1]


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


def _py_escape(text: str, quote_char: str) -> str:
    """What ``repr`` writes between the quotes when it chose ``quote_char``."""
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == quote_char:
            out.append("\\" + ch)
        elif ch in "'\"":
            out.append(ch)
        else:
            out.append(repr(ch)[1:-1])
    return "".join(out)


def _py_bytes_escape(data: bytes, quote_char: str) -> str:
    out = []
    for byte in data:
        ch = chr(byte)
        if ch == "\\":
            out.append("\\\\")
        elif ch == quote_char:
            out.append("\\" + ch)
        elif ch in "'\"":
            out.append(ch)
        else:
            out.append(repr(bytes([byte]))[2:-1])
    return "".join(out)


def repr_forms(s: Secret) -> Iterator[tuple[str, bytes]]:
    yield "repr", _utf8(_py_escape(s.value, "'"))
    yield "repr-dq", _utf8(_py_escape(s.value, '"'))
    data = _utf8(s.value)
    yield "repr-bytes", _py_bytes_escape(data, "'").encode()
    yield "repr-bytes-dq", _py_bytes_escape(data, '"').encode()
    yield "unicode-escape", s.value.encode("unicode_escape")


def html_forms(s: Secret) -> Iterator[tuple[str, bytes]]:
    v = s.value
    yield "html", _utf8(html.escape(v, quote=True))
    yield "html-noquote", _utf8(html.escape(v, quote=False))
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
    yield (
        "html-numeric",
        _utf8("".join(c if c.isalnum() and c.isascii() else f"&#{ord(c)};" for c in v)),
    )


def _bits(s: Secret) -> tuple[float, ...]:
    return s.bits if len(s.bits) == len(s.value) else (6.0,) * len(s.value)


def _shortest(bits: Iterable[float], need: float) -> int | None:
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


def fragment_forms(s: Secret) -> Iterator[tuple[str, bytes]]:
    v, bits = s.value, _bits(s)
    n = _shortest(bits, FRAGMENT_BITS)
    if n is not None and n < len(v):
        yield f"prefix-{n}", _utf8(v[:n])
    n = _shortest(reversed(bits), FRAGMENT_BITS)
    if n is not None and n < len(v):
        yield f"suffix-{n}", _utf8(v[-n:])
    # Masked heads and tails: a gateway shows 4 characters whatever they carry; each length
    # is searched whose characters carry TAIL_BITS.
    for size in MASKED_SIZES:
        if size < len(v) and sum(bits[-size:]) >= TAIL_BITS:
            for context in TAIL_CONTEXTS:
                yield f"masked-tail-{size}", _utf8(context + v[-size:])
        if size < len(v) and sum(bits[:size]) >= TAIL_BITS:
            for context in HEAD_CONTEXTS:
                yield f"masked-head-{size}", _utf8(v[:size] + context)
    # Multi-line secrets (PEM) leak a line at a time.
    if "\n" in v:
        start = 0
        for number, line in enumerate(v.split("\n"), start=1):
            line_bits = bits[start : start + len(line)]
            start += len(line) + 1
            if sum(line_bits) >= FRAGMENT_BITS:
                yield f"line-{number}", _utf8(line)


FORMS: tuple[FormFn, ...] = (
    raw,
    casefold,
    percent,
    base64_forms,
    hex_forms,
    json_forms,
    repr_forms,
    html_forms,
    fragment_forms,
)


def needles_for(secret: Secret, forms: Iterable[FormFn] = FORMS) -> list[Needle]:
    """All distinct needles of one secret, first form name winning on equal bytes."""
    return list(_needles(secret, tuple(forms)))


@functools.lru_cache(maxsize=512)
def _needles(secret: Secret, forms: tuple[FormFn, ...]) -> tuple[Needle, ...]:
    # Cached: a test's detection scanner and its report masker share a secret's needles.
    seen: dict[bytes, Needle] = {}
    for form in forms:
        for name, pattern in form(secret):
            if pattern and pattern not in seen:
                seen[pattern] = Needle(pattern, secret, name)
    return tuple(seen.values())


#: Characters in a masking window; see ``window_forms``.
WINDOW_CHARS = 6


def window_forms(s: Secret) -> Iterator[tuple[str, bytes]]:
    """Every run of WINDOW_CHARS characters of the secret (raw, repr and JSON spellings)
    that carries random bits. Too short for detection (chance hits), they are for masking
    our own output, where a false hit costs nothing and a truncated repr such as pytest's
    ``'lck_gAGC@<+u...\\p=é f:€g1NCE'`` must not show its pieces."""
    bits = _bits(s)
    spellings = {
        s.value,
        _py_escape(s.value, "'"),
        _py_escape(s.value, '"'),
        _json_escape(s.value, ascii_only=True),
    }
    for spelling in spellings:
        for i in range(len(spelling) - WINDOW_CHARS + 1):
            window = spelling[i : i + WINDOW_CHARS]
            if spelling is s.value and sum(bits[i : i + WINDOW_CHARS]) < TAIL_BITS:
                continue
            if spelling is not s.value and not any(c.isalnum() for c in window):
                continue
            yield "fragment", _utf8(window)


#: What ``Scanner.mask`` style maskers use: every form plus the short windows.
MASKING_FORMS: tuple[FormFn, ...] = (*FORMS, window_forms)
#: Forms that mask but never make a finding (a scanner built with MASKING_FORMS detects
#: exactly what one built with FORMS does).
MASK_ONLY_FORMS = frozenset({"fragment"})
