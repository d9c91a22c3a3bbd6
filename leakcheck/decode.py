"""The decoding second pass: find encoded runs in the haystack and decode them.

The first pass encodes the needles, which catches every single-layer form. Chains (base64
of JSON, percent-encoded base64, base64 of base64) need the haystack decoded. Each decoder
yields ``(start, end, decoded bytes)`` for the runs it recognises; the scanner searches the
decoded bytes with the same engine and, to ``depth`` layers, decodes them again.
"""

from __future__ import annotations

import _thread
import base64
import binascii
import bisect
import codecs
import re
import sys
from collections import OrderedDict
from collections.abc import Callable, Container, Iterable, Iterator, Sequence

from ._lazy import lazy_compile

__all__ = [
    "DECODERS",
    "DENSE_ESCAPES",
    "Decoder",
    "Run",
    "all_decoders",
    "decode_runs",
    "masking_base64_runs",
    "masking_decoders",
    "octet_runs",
]

Decoder = Callable[[bytes], Iterator[tuple[int, int, bytes]]]

# A base64 run, possibly wrapped (real newlines, JSON-escaped "\n", or escaped twice: the
# repr of a JSON text, JSON in JSON) at any width.
_BASE64_RUN = re.compile(
    rb"[A-Za-z0-9+/_-]{16,}(?:(?:\r?\n|\\\\r\\\\n|\\\\n|\\r\\n|\\n)[A-Za-z0-9+/_-]{4,})*={0,2}"
)
_WRAP = re.compile(rb"\r?\n|\\\\r\\\\n|\\\\n|\\r\\n|\\n|=")
_NOT_IDENTIFIER = re.compile(rb"[0-9+/]")
_URLSAFE = bytes.maketrans(b"-_", b"+/")
#: A hex run: 32 characters or more on one line, or lines of 16 or more, each continued by
#: a line of hex alone, of 2 or more (``textwrap.wrap(token.hex(), 24)``: each line too
#: short to count, the token shown whole), at real or JSON-escaped line breaks. A
#: continuation must end its line: "2024" starting a log line's date continues no digest.
_HEX_RUN = re.compile(
    rb"[0-9a-fA-F]{16,}(?:(?:\r?\n(?:E {2,})?|\\\\r\\\\n|\\\\n|\\r\\n|\\n)[0-9a-fA-F]{2,}"
    rb"(?=\s|\\[rn\"']|\\\\[rn]|[\"'<>,;)\]}]|$))+"
    rb"|[0-9a-fA-F]{32,}"
)
#: ``_HEX_RUN``'s one-line runs alone: what a text holding no hex line continued by another
#: is searched with (the joint's branch, tried at every hex character, ran at a third of
#: the speed on log-like text full of ids)
_HEX_LINE_RUN = re.compile(rb"[0-9a-fA-F]{32,}")
#: where a hex line is continued: a line break (real or JSON-escaped) after 16 hex
#: characters and before two. Each branch begins with its break's byte and looks behind
#: only there: searched in C at some 340 MiB/s on log-like text (a class of hex first was
#: tried at every character: 50)
_HEX_LINE_CONTINUED = re.compile(
    rb"\n(?<=[0-9a-fA-F]{16}\n)[0-9a-fA-F]{2}"
    rb"|\r\n(?<=[0-9a-fA-F]{16}\r\n)[0-9a-fA-F]{2}"
    rb"|\\n(?<=[0-9a-fA-F]{16}\\n)[0-9a-fA-F]{2}"
    rb"|\\r\\n(?<=[0-9a-fA-F]{16}\\r\\n)[0-9a-fA-F]{2}"
    rb"|\\\\n(?<=[0-9a-fA-F]{16}\\\\n)[0-9a-fA-F]{2}"
    rb"|\\\\r\\\\n(?<=[0-9a-fA-F]{16}\\\\r\\\\n)[0-9a-fA-F]{2}"
    rb"|\nE {2}(?<=[0-9a-fA-F]{16}\nE  ) *[0-9a-fA-F]{2}"
)
#: (a line of a failure that pytest shows behind its ``E`` and spaces continues too)
_LINE_BREAKS = re.compile(rb"\r?\n(?:E {2,})?|\\\\r\\\\n|\\\\n|\\r\\n|\\n")
_PERCENT_ESCAPE = re.compile(rb"%[0-9A-Fa-f]{2}")
_TOKEN_REST = re.compile(rb"[^\s\"'<>]*")


def base64_runs(buf: bytes) -> Iterator[tuple[int, int, bytes]]:
    return _base64_runs(buf, _AT_START)


_AT_START = frozenset({0})


def _base64_runs(buf: bytes, starts: Container[int]) -> Iterator[tuple[int, int, bytes]]:
    """``base64_runs`` of texts joined into ``buf``, each beginning at one of ``starts``."""
    for match in _BASE64_RUN.finditer(buf):
        run = match.group()
        # Identifiers (snake_case, CamelCase) look like base64url; a real encoding of 12+
        # bytes almost always holds a digit, "+" or "/" (all but 1 in 10^4 of 64 chars),
        # and one without them mixes the cases (24 characters lack all three 1 time in 140:
        # such a piece of a token's base64 was shown whole, found by a fuzzer).
        if len(run) < 64 and not _NOT_IDENTIFIER.search(run) and _one_case_mostly(run):
            continue
        if b"\n" in run or b"\\" in run or b"=" in run:
            run = _WRAP.sub(b"", run)
        run = run.translate(_URLSAFE)
        # A run cut by the buffer's start may begin off the 4-character grid (and, for a
        # masker, any run: ``masking_base64_runs``).
        for shift in range(4 if match.start() in starts else 1):
            body = run[shift:]
            # padding was stripped with the line breaks: put it back, so the last group
            # (the secret's end, in a blob that ends with it) is decoded too
            extra = len(body) % 4
            body = body[:-1] if extra == 1 else body + b"=" * ((4 - extra) % 4)
            try:
                yield match.start(), match.end(), base64.b64decode(body)
            except (binascii.Error, ValueError):
                continue


class _Anywhere:
    """Every position (``_base64_runs``'s ``starts`` for a masker)."""

    def __contains__(self, position: object) -> bool:
        return True


_ANYWHERE = _Anywhere()


def masking_base64_runs(buf: bytes) -> Iterator[tuple[int, int, bytes]]:
    """``base64_runs`` with every run decoded at each of the four shifts, for the maskers
    of our own output: a piece the app cut from a longer base64 (``b64[9:45]`` printed
    after a word) or one glued to the line before it (a token's tail, then its base64 on
    the next line) begins off the grid, and showed in full (found by a fuzzer). Not for
    detection: it took the decoding pass over small log-like texts from 7.0 to 4.2 MiB/s,
    and a whole secret's base64 is a needle at every offset there."""
    return _base64_runs(buf, _ANYWHERE)


def _one_case_mostly(run: bytes) -> bool:
    """Whether a quarter or fewer of ``run``'s letters are of one case (an identifier's
    words: snake_case, CamelCase, CONSTANT_CASE), not the half a random base64 has."""
    upper = sum(map(_UPPER.__contains__, run))
    lower = sum(map(_LOWER.__contains__, run))
    return 4 * min(upper, lower) <= upper + lower


_UPPER = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_LOWER = frozenset(b"abcdefghijklmnopqrstuvwxyz")


def hex_runs(buf: bytes) -> Iterator[tuple[int, int, bytes]]:
    runs = _HEX_RUN if _HEX_LINE_CONTINUED.search(buf) else _HEX_LINE_RUN
    for match in runs.finditer(buf):
        run = match.group()
        if len(run) > 16 and not run.isalnum():  # wrapped: its breaks, real or escaped, out
            run = _LINE_BREAKS.sub(b"", run)
            if len(run) < 32:
                continue
        even = run[: len(run) - len(run) % 2]
        yield match.start(), match.end(), bytes.fromhex(even.decode("ascii"))
        odd = run[1 : 1 + (len(run) - 1) - (len(run) - 1) % 2]
        yield match.start(), match.end(), bytes.fromhex(odd.decode("ascii"))


# Bytes written one by one: hex pairs with a separator (``token.encode().hex(":")``, a
# fingerprint's way; ``hex(" ")``, ``hex("-")``), a list of ``0x..`` literals (C, a dump) or
# of numbers (``list(token.encode())``). Such a test passed, and a failed ``assert`` showed
# the token so (found by a hunting helper). 12 bytes at least; each shape is looked for by
# a literal-led mark first (a class-led search of every line ran at 13 MB/s).
_OCTET = rb"[0-9A-Fa-f]{2}"
_OCTET_MARKS = {
    b":": lazy_compile(b":" + _OCTET + b":" + _OCTET + b":" + _OCTET + b":"),
    b"-": lazy_compile(b"-" + _OCTET + b"-" + _OCTET + b"-" + _OCTET + b"-"),
    b" ": lazy_compile(b" " + _OCTET + b" " + _OCTET + b" " + _OCTET + b" "),
}
_OCTET_RUNS = {
    separator: lazy_compile(
        rb"(?<![0-9A-Za-z])" + _OCTET + b"(?:" + re.escape(separator) + _OCTET + rb"){11,}"
        rb"(?![0-9A-Za-z])"
    )
    for separator in _OCTET_MARKS
}
_HEX_LITERALS = lazy_compile(rb"0[xX][0-9A-Fa-f]{2}(?:, ?0[xX][0-9A-Fa-f]{2}){11,}")
_NUMBERS_MARK = lazy_compile(rb", [0-9]{1,3}, [0-9]{1,3}, [0-9]{1,3}, ")
_NUMBERS = lazy_compile(rb"(?<![0-9.])[0-9]{1,3}(?:, [0-9]{1,3}){11,}(?![0-9.])")


def octet_runs(buf: bytes) -> Iterator[tuple[int, int, bytes]]:
    """Runs of bytes written one by one (hex pairs with a separator, ``0x`` literals,
    numbers), decoded."""
    for separator, mark in _OCTET_MARKS.items():
        for start, end in _lines_marked(buf, mark):
            for run in _OCTET_RUNS[separator].finditer(buf, start, end):
                pairs = run.group().replace(separator, b"")
                yield run.start(), run.end(), bytes.fromhex(pairs.decode("ascii"))
    if b"0x" in buf or b"0X" in buf:
        for run in _HEX_LITERALS.finditer(buf):
            pairs = run.group().replace(b"0x", b"").replace(b"0X", b"").replace(b",", b"")
            yield run.start(), run.end(), bytes.fromhex(pairs.decode("ascii"))
    for start, end in _lines_marked(buf, _NUMBERS_MARK):
        for run in _NUMBERS.finditer(buf, start, end):
            values = [int(n) for n in run.group().split(b", ")]
            if max(values) <= 255:
                yield run.start(), run.end(), bytes(values)


def _lines_marked(buf: bytes, mark: re.Pattern[bytes]) -> Iterator[tuple[int, int]]:
    """The lines of ``buf`` that ``mark`` is found in (each once)."""
    found = mark.search(buf)
    while found is not None:
        start = buf.rfind(b"\n", 0, found.start()) + 1
        end = buf.find(b"\n", found.end())
        end = len(buf) if end < 0 else end
        yield start, end
        found = mark.search(buf, end)


# (not in keyed decoding: such a run holds no key, and a shape for it, ":" or "-" and hex
# pairs, took hyperscan's pass over log-like text from 5,000 to 1,800 MiB/s of decoding:
# measured and left out, README)


def percent_runs(buf: bytes) -> Iterator[tuple[int, int, bytes]]:
    """Whole tokens (up to whitespace, quotes or angle brackets) holding a ``%XX`` escape,
    every escape decoded (of any character, in either case)."""
    for start, end in _token_runs(buf, _PERCENT_ESCAPE):
        run = buf[start:end]
        yield start, end, _unquote(run)
        if b"+" in run:
            yield start, end, _unquote(run.replace(b"+", b" "))


def _unquote(run: bytes) -> bytes:
    """``urllib.parse.unquote_to_bytes``, in C when every ``%`` starts an escape: each
    ``%`` read as ``\\x`` and each backslash doubled, as the bytes escape decoder reads
    them (4 times as fast on a densely escaped token; a ``%`` that starts none fails it)."""
    try:
        return codecs.escape_decode(run.replace(b"\\", b"\\\\").replace(b"%", b"\\x"))[0]
    except ValueError:
        # imported here: with its ipaddress, 2 ms of a scan's start-up, for a rare run
        from urllib.parse import unquote_to_bytes

        return unquote_to_bytes(run)


def _token_runs(buf: bytes, marker: re.Pattern[bytes]) -> Iterator[tuple[int, int]]:
    """Whole tokens (up to whitespace, quotes or angle brackets) holding a ``marker``."""
    done = 0
    # the next marker searched for after the token (not every marker of the token
    # skipped: a dense token holds dozens); none that starts inside the token ends past it
    found = marker.search(buf)
    while found is not None:
        start = found.start()
        floor = max(done, start - 4096)
        before = _TOKEN_BEFORE.match(buf[floor:start][::-1])
        start -= before.end() if before else 0
        rest = _TOKEN_REST.match(buf, found.start())
        assert rest is not None  # the pattern matches the empty string too
        done = rest.end()
        yield start, done
        found = marker.search(buf, done)


#: a token's bytes before a marker, read backwards: 0x21-0xff but quotes, angle brackets, DEL
_TOKEN_BEFORE = re.compile(rb"[!#-&(-;=?-~\x80-\xff]*")
#: (``\\U0001d518`` too: Python's ``ascii()`` and ``unicode_escape`` of a character beyond
#: the BMP, PyYAML's dump; under JSON, no run began at it: found by a hunting helper)
_BACKSLASH_ESCAPE = re.compile(rb"\\(?:[ux][0-9A-Fa-f]{2}|U[0-9A-Fa-f]{8})")
_ONE_ESCAPE = lazy_compile(
    rb"\\u([0-9A-Fa-f]{4})|\\x([0-9A-Fa-f]{2})|\\U([0-9A-Fa-f]{8})|\\([nrt\"'/\\])"
)
_SIMPLE = {b"n": b"\n", b"r": b"\r", b"t": b"\t"}


def _unescape_one(match: re.Match[bytes]) -> bytes:
    wide, byte, wider, simple = match.groups()
    if byte is not None:
        return bytes([int(byte, 16)])
    if simple is not None:
        return _SIMPLE.get(simple, simple)
    code = int(wide if wide is not None else wider, 16)
    if code > 0x10FFFF:
        return match.group()
    return chr(code).encode("utf-8", "surrogatepass")


def _join_surrogates(data: bytes) -> bytes:
    """UTF-8 of lone surrogates (``\\ud83d\\udd11`` unescaped one at a time) made into the
    characters the pairs spell."""
    if b"\xed" not in data:
        return data
    try:
        text = data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:  # other bytes that are not UTF-8 (``\\xd6`` alone)
        return data
    pairs = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return pairs.encode("utf-8", "surrogatepass")


def backslash_runs(buf: bytes) -> Iterator[tuple[int, int, bytes]]:
    """Tokens holding ``\\uXXXX``, ``\\UXXXXXXXX`` or ``\\xXX`` escapes (JSON, JavaScript,
    Python reprs), the escapes (and ``\\n``, ``\\"``, ``\\/``...) decoded."""
    for start, end in _token_runs(buf, _BACKSLASH_ESCAPE):
        yield start, end, _join_surrogates(_unescape(buf[start:end]))


#: a token whose escapes are all ones the bytes escape decoder reads as _ONE_ESCAPE does
#: (``\\xXX``, ``\\n``, ``\\r``, ``\\t``, quotes, backslash): a Python bytes repr
_C_ESCAPES = lazy_compile(rb"(?:[^\\]|\\x[0-9A-Fa-f]{2}|\\[nrt\"'\\])*")


def _unescape(token: bytes) -> bytes:
    """The token with its escapes decoded: in C for a bytes repr's (a callback per escape
    otherwise)."""
    if _C_ESCAPES.fullmatch(token):
        return codecs.escape_decode(token)[0]
    return _ONE_ESCAPE.sub(_unescape_one, token)


_ENTITY = re.compile(rb"&(?:#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")


def html_runs(buf: bytes) -> Iterator[tuple[int, int, bytes]]:
    """Tokens holding an HTML character reference, unescaped."""
    for start, end in _token_runs(buf, _ENTITY):
        import html  # here, at the first reference: its entity table is 1.5 ms of start-up

        text = buf[start:end].decode("utf-8", "surrogateescape")
        yield start, end, html.unescape(text).encode("utf-8", "surrogateescape")


# quoted-printable: "=XX" escapes and "=" soft line breaks; a run is whole lines (any
# printable text, spaces and quotes included), joined by soft breaks
_QP_MARK = re.compile(rb"=(?:[0-9A-F]{2}|\r?\n)")
_QP_REST = re.compile(rb"(?:=\r?\n|[^\r\n])*")
_QP_ESCAPE = re.compile(rb"=[0-9A-F]{2}")
_QP_SOFT = re.compile(rb"=\r?\n")


def qp_runs(buf: bytes) -> Iterator[tuple[int, int, bytes]]:
    """Quoted-printable runs (an ``=XX`` escape and one more or a soft line break),
    decoded."""
    return _qp_runs(buf, _AT_START_LIST)


_AT_START_LIST = [0]


def _qp_runs(buf: bytes, starts: Sequence[int]) -> Iterator[tuple[int, int, bytes]]:
    """``qp_runs`` of texts joined into ``buf``, each beginning at one of ``starts``
    (sorted): a run starts no earlier than its text."""
    done = 0
    found = _QP_MARK.search(buf)  # the next mark after each run (as in _token_runs)
    while found is not None:
        mark = found.start()
        floor = max(done, starts[bisect.bisect_right(starts, mark) - 1])
        # (a line longer than that: the run starts 4 KiB back, not at the text's start,
        # where it masked every line before it)
        low = max(0, mark - 4096)
        start = max(floor, low, buf.rfind(b"\n", low, mark) + 1)
        rest = _QP_REST.match(buf, found.start())
        assert rest is not None  # the pattern matches the empty string too
        done = rest.end()
        found = _QP_MARK.search(buf, done)
        run = buf[start:done]
        # an escape and one more escape or soft break (base64 padding at a line's end
        # looks like a soft break), or a soft break folding a full line: an encoder folds
        # at 76 columns, and a line of letters and digits holds no escape (a token cut
        # there, with no "=XX" on its lines, was never joined: found by a hunting helper)
        escapes = len(_QP_ESCAPE.findall(run))
        if escapes >= 2 or (escapes and _QP_SOFT.search(run)) or _folds_a_full_line(run):
            yield start, done, binascii.a2b_qp(run)


def _folds_a_full_line(run: bytes) -> bool:
    """Whether a line of ``run`` is one a quoted-printable encoder folded: 70 to 78
    characters, its soft break included, and a line after it (a base64 line's padding
    ends a shorter one, or a last line: the text's, or a MIME body's of 76)."""
    for soft in _QP_SOFT.finditer(run):
        at = soft.start()
        if soft.end() >= len(run) or run[at - 1 : at] == b"=":
            continue  # nothing folded into it, or base64's "==" (never a quoted-printable fold)
        line_start = run.rfind(b"\n", 0, at) + 1
        if _QP_FOLDED_FROM <= at + 1 - line_start <= _QP_FOLDED_AT:
            return True
    return False


#: the widths of a line a quoted-printable encoder folds, the "=" included (RFC 2045: 76
#: at most, as ``quopri`` folds; ``email`` folds at its policy's ``max_line_length``, 78)
_QP_FOLDED_FROM, _QP_FOLDED_AT = 70, 78


#: Shapes that hide letters and digits themselves (an encoder that escapes every
#: character): the keyed decoding pass decodes the token around any of them. Each starts
#: with a literal byte (the fallback engine runs them with ``re``) and compiles in
#: hyperscan too.
DENSE_ESCAPES: tuple[bytes, ...] = (
    rb"%[0-9A-Fa-f]{2}(?:%[0-9A-Fa-f]{2}){5}",
    # (escaped again, a backslash doubled: JSON or a repr around them, found by a hunting
    # helper, as percent escapes percent-escaped, ``%2567``)
    rb"\\u[0-9A-Fa-f]{4}(?:\\u[0-9A-Fa-f]{4}){3}",
    rb"\\x[0-9A-Fa-f]{2}(?:\\x[0-9A-Fa-f]{2}){5}",
    # (each shape costs hyperscan's build: ``\\{1,2}`` in the two above took 4.2 ms, a
    # shape of their own 1)
    rb"\\\\u[0-9A-Fa-f]{4}(?:\\\\u[0-9A-Fa-f]{4}){3}",
    rb"\\\\x[0-9A-Fa-f]{2}(?:\\\\x[0-9A-Fa-f]{2}){5}",
    rb"%25[0-9A-Fa-f]{2}(?:%25[0-9A-Fa-f]{2}){3}",
    # a percent-encoded UTF-16 text: its letters and digits one apart (``g%00h%00``; three
    # unescaped in a row: an escaped one between, ``(?:[^%\s]|%XX)``, took 1.4 ms of
    # hyperscan's build, this 0.3)
    rb"%00[^%\s]%00[^%\s]%00[^%\s]%00",
    rb"&#[xX]?[0-9A-Fa-f]{2,6};(?:&#[xX]?[0-9A-Fa-f]{2,6};){5}",
    # pieces of five characters or fewer between what a terminal does not show (colour
    # sequences, zero-width characters, soft hyphens): no key survives them, not even a
    # piece key (``forms.PIECE_KEY_CHARS``; found by a hunting helper: a coloured token in
    # a large log). Colour sequences come in runs: a reset before each piece's colour, as
    # a formatter closes what it opened (a piece between two of a run is none: found by
    # a hunting helper). (``re.escape`` keeps every run of letters and digits: a secret's
    # keys survive it, and one without keys is never keyed.)
    # (``[0-9;]*``: bounded, ``{0,16}``, the shape took 4.0 ms of hyperscan's build, 1.6)
    rb"\x1b\[[0-9;]*m(?:[^\x1b\s]{1,5}(?:\x1b\[[0-9;]*m)+){3}",
    # (the same escaped: a coloured line in JSON or a repr)
    rb"\\(?:u001[bB]|x1[bB])\[[0-9;]*m(?:[^\\\s]{1,5}(?:\\(?:u001[bB]|x1[bB])\[[0-9;]*m)+){3}",
    rb"\xe2[\x80\x81][\x8b-\x8f\xa0-\xa4](?:\S{1,12}?(?:\xe2[\x80\x81][\x8b-\x8f\xa0-\xa4]|\xc2\xad)){2}",
    rb"\xc2\xad(?:\S{1,12}?(?:\xe2[\x80\x81][\x8b-\x8f\xa0-\xa4]|\xc2\xad)){2}",
)
# (quoted-printable never escapes a letter or digit: keys find it)


# --- wrapped text ----------------------------------------------------------------------------
#
# A log handler that lays out columns (rich's, fastmcp's default) folds a long line at its
# message column's width and indents the rest; a terminal or a pager hard-wraps at its
# width; a box (a panel, a table) draws a border each side. A secret, encoded or not, then
# arrives in pieces too short to count. ``wrapped_runs`` rejoins such lines: the last token
# of a line, and the content of each line that continues it.

#: a border character: box-drawing verticals (UTF-8) or an ASCII bar
_BORDERS = (
    *(b"\xe2\x94" + bytes([c]) for c in b"\x82\x83\x86\x87\x8a\x8b"),
    *(b"\xe2\x95" + bytes([c]) for c in b"\x8e\x8f\x91"),
    b"|",
)
_BORDER = b"(?:" + b"|".join(re.escape(b) for b in _BORDERS) + b")"
#: a continuation line's lead: indentation, or a border (with any spaces around it)
_LEAD = re.compile(rb"[ \t]*" + _BORDER + rb"[ \t]*|[ \t]{2,}")
#: a right-aligned column such as rich's ``app.py:42`` (after two spaces at least)
_PATH_COLUMN = re.compile(rb"[ \t]*[\w.-]+:\d+")
#: common terminal widths: a line this long may be hard-wrapped
_TERMINAL_WIDTHS = frozenset({80, 100, 120, 132, 160, 200})
#: A line that holds a token of 16 or more, matched atomically. Python 3.10's ``re`` has no
#: atomic group: there a lookahead's capture, matched again by reference, is the same (a
#: lookahead is never backtracked into).
_ATOMIC_LONG_TOKEN_LINE = rb"(?>[^\n]*?\S{16}[^\n]*)"
_REFERENCED_LONG_TOKEN_LINE = rb"(?=([^\n]*?\S{16}[^\n]*))\1"
_LONG_TOKEN_LINE = (
    _ATOMIC_LONG_TOKEN_LINE if sys.version_info >= (3, 11) else _REFERENCED_LONG_TOKEN_LINE
)
#: where a continuation may follow: a line ending in a long token before an indented or
#: bordered line, or a line as long as a terminal
#: (Anchored at line starts, the line's part atomic: a search is linear in the text. The
#: unanchored ``\S{16}[^\n]*\n`` retried every position of a long line, quadratic: a
#: 20 KB line took 0.25 s, the suite's multi-megabyte JSON reports minutes.)
_JOINT = re.compile(
    rb"^" + _LONG_TOKEN_LINE + rb"\n(?:[ \t]{2,}|[ \t]*" + _BORDER + rb")"
    rb"|^(?:[^\n]{79}|[^\n]{99}|[^\n]{119}|[^\n]{131}|[^\n]{159}|[^\n]{199})\S\r?\n",
    re.MULTILINE,
)
#: a piece shorter than this is not taken for a wrapped line's part (a line before that
#: is as long as a terminal aside)
_WRAP_MIN_PIECE = 16
_WRAP_MIN_LINE = 35


def _content(line: bytes) -> tuple[int, int]:
    """Where a line's content lies: its lead, padding, right border and right-aligned
    path column left out."""
    lead = _LEAD.match(line)
    start = lead.end() if lead else 0
    end = len(line.rstrip(b" \t\r"))
    for border in _BORDERS:
        if line.endswith(border, start, end):
            end = len(line[: end - len(border)].rstrip(b" \t"))
            break
    gap = line.rfind(b"  ", start, end)
    if gap >= 0 and _PATH_COLUMN.fullmatch(line, gap + 2, end):
        end = len(line[:gap].rstrip(b" \t"))
    return start, max(start, end)


def _last_token(line: bytes) -> tuple[int, int, bool]:
    """(start, end) of the last token of a line's content, and whether the content holds
    whitespace before it."""
    start, end = _content(line)
    token = max(line.rfind(b" ", start, end), line.rfind(b"\t", start, end)) + 1
    return max(token, start), end, token > start


def wrapped_runs(buf: bytes) -> Iterator[tuple[int, int, bytes]]:
    """Lines that continue one another (a continuation is indented or bordered, or the
    line before it is as long as a terminal or its neighbours), rejoined: from the last
    token of the first line to the end of the last one's content. A piece is a token
    folded at the width: a continuation that holds a space ends the block."""
    if b"\n" not in buf:
        return
    joint = _JOINT.search(buf)
    if joint is None:
        return
    lines, offset = [], buf.rfind(b"\n", 0, joint.start() + 1) + 1
    for line in buf[offset:].split(b"\n"):
        lines.append((offset, line))
        offset += len(line) + 1
    block: list[tuple[int, int]] = []  # (start, end) of each piece, absolute
    for k, (offset, line) in enumerate(lines):
        if not block and len(line) < _WRAP_MIN_PIECE:
            # (no block to continue, and too short to start one: no token of a piece's
            # length, no terminal's width; most lines of a report's strings joined)
            continue
        start, end = _content(line)
        spaced = b" " in line[start:end] or b"\t" in line[start:end]
        if block and start < end and _continues(lines, k):
            block.append((offset + start, offset + end))
            if not spaced:
                continue
        if len(block) > 1:
            yield _joined(buf, block)
        block = []
        token, end, _ = _last_token(line)
        full = len(line.rstrip(b"\r")) in _TERMINAL_WIDTHS
        if token < end and (end - token >= _WRAP_MIN_PIECE or full):
            block = [(offset + token, offset + end)]
    if len(block) > 1:
        yield _joined(buf, block)


def _continues(lines: list[tuple[int, bytes]], k: int) -> bool:
    """Whether line ``k`` continues line ``k - 1``."""
    line, before = lines[k][1], lines[k - 1][1].rstrip(b"\r")
    if _LEAD.match(line):
        return True
    # a hard wrap: no lead, the line before full to a terminal's width or as long as its
    # own line before (a run of equally long lines)
    width = len(before)
    if width < _WRAP_MIN_LINE or before[-1:].isspace():
        return False
    return width in _TERMINAL_WIDTHS or (k >= 2 and len(lines[k - 2][1].rstrip(b"\r")) == width)


def _joined(buf: bytes, block: list[tuple[int, int]]) -> tuple[int, int, bytes]:
    return block[0][0], block[-1][1], b"".join(buf[start:end] for start, end in block)


def _line_at(buf: bytes, position: int, floor: int, ceiling: int) -> tuple[int, int]:
    """(start, end) of the line holding ``position``, within ``[floor, ceiling)``."""
    start = max(floor, buf.rfind(b"\n", floor, position) + 1)
    end = buf.find(b"\n", position, ceiling)
    return start, ceiling if end < 0 else end


def _starts_block(line: bytes) -> bool:
    token, end, _ = _last_token(line)
    return end - token >= _WRAP_MIN_PIECE or len(line.rstrip(b"\r")) in _TERMINAL_WIDTHS


#: the first byte of a line that ``_LEAD`` can match: a space, a tab, a border's (a tuple:
#: a stream's buffer is a bytearray, whose slices cannot be hashed)
_LEAD_FIRST = tuple(dict.fromkeys((b" ", b"\t", *(border[:1] for border in _BORDERS))))


def _may_continue(line: bytes, first: bytes) -> bool:
    """False when a line beginning with the byte ``first`` surely does not continue
    ``line`` (``_continues``: no lead, and ``line`` is not as long as a terminal): the
    common case, told without a regular expression."""
    return first in _LEAD_FIRST or len(line.rstrip(b"\r")) in _TERMINAL_WIDTHS


def _continued_to(buf: bytes, bol: int, eol: int, floor: int, ceiling: int) -> int | None:
    """Where the next line ends, when it is a piece that continues the line ``[bol, eol)``
    (as ``wrapped_runs`` joins them); None when it is not."""
    if eol >= ceiling:
        return None
    line = buf[bol:eol]
    if not _may_continue(line, buf[eol + 1 : eol + 2]):
        return None
    nxt = _line_at(buf, eol + 1, floor, ceiling)[1]
    if not _continues([(0, line), (0, buf[eol + 1 : nxt])], 1) or not _starts_block(line):
        return None
    return nxt


def wrap_extent(buf: bytes, low: int, high: int, limit: int) -> tuple[int, int]:
    """``[low, high)`` widened over the whole lines that continue it or that it continues
    (as ``wrapped_runs`` joins them), at most ``limit`` bytes each way."""
    floor, ceiling = max(0, low - limit), min(len(buf), high + limit)
    # a line break inside: a token read across it (a line of letters and digits looks
    # like a wrapped base64 blob's) may be a hard wrap's, whose lines are told by their
    # width, so both whole (an AWS key wrapped at 80 columns in a large log passed: found
    # by a hunting helper)
    eol = buf.find(b"\n", low, high)
    while eol >= 0:
        bol = _line_at(buf, eol, floor, ceiling)[0]
        nxt = _continued_to(buf, bol, eol, floor, ceiling)
        if nxt is not None:
            low, high = min(low, bol), max(high, nxt)
        eol = buf.find(b"\n", eol + 1, high)
    while True:  # forwards: is the next line a piece that continues this one?
        bol, eol = _line_at(buf, high, floor, ceiling)
        nxt = _continued_to(buf, bol, eol, floor, ceiling)
        if nxt is None:
            break
        # (this line whole too: a hard wrap is told by the width of the line it cut)
        low, high = min(low, bol), nxt
        if _last_token(buf[eol + 1 : nxt])[2]:  # a spaced line ends the block
            break
    while True:  # backwards: is this line a piece that continues the one before?
        bol, eol = _line_at(buf, low, floor, ceiling)
        if bol <= floor:
            break
        before = _line_at(buf, bol - 1, floor, ceiling)[0]
        if not _may_continue(buf[before : bol - 1], buf[bol : bol + 1]):
            break
        line, previous = buf[bol:eol], buf[before : bol - 1]
        if not _continues([(0, previous), (0, line)], 1) or not _starts_block(previous):
            break
        if _last_token(line)[2] and low > bol + _content(line)[0]:
            break  # this line's piece is not at its start
        low = before
    return low, high


#: What a terminal shows as nothing: an ANSI escape sequence (CSI: colours, cursor moves;
#: OSC up to BEL or ST: a hyperlink, a title; a two-byte escape) or a Unicode format
#: character (zero-width space, non-joiner and joiner, marks, word joiner and the invisible
#: operators, byte order mark, soft hyphen)
_INVISIBLE = re.compile(
    rb"\x1b\[[0-?]*[ -/]*[@-~]"
    rb"|\x1b\][^\x07\x1b]{0,4096}(?:\x07|\x1b\\)"
    rb"|\x1b[@-Z\\-_]"
    rb"|\xe2\x80[\x8b-\x8f]|\xe2\x81[\xa0-\xa4]|\xef\xbb\xbf|\xc2\xad"
)
#: the bytes one of them starts with, looked for in C first (a clean text pays for these)
_INVISIBLE_LEADS = (b"\x1b", b"\xe2\x80", b"\xe2\x81", b"\xef\xbb\xbf", b"\xc2\xad")


def invisible_runs(buf: bytes) -> Iterator[tuple[int, int, bytes]]:
    """Each line holding an ANSI escape sequence or an invisible format character, with
    every one taken out: a terminal shows the token that a log formatter or rich coloured
    piece by piece, or that zero-width spaces split, as the token, and each piece between
    them was too short to count (found by a hunting helper: a token coloured every four
    characters passed, and showed whole in ``-rA``). A whole line, not a token: a hostile
    canary holds a space and quotes."""
    if not any(lead in buf for lead in _INVISIBLE_LEADS):
        return iter(())
    lines = list(_lines_holding(buf, _INVISIBLE, b""))
    return iter([*lines, *_wrapped_in(buf, lines)])


def _wrapped_in(
    buf: bytes, lines: list[tuple[int, int, bytes]]
) -> Iterator[tuple[int, int, bytes]]:
    """The wrapped lines (``wrapped_runs``) of each block of adjacent ``lines`` (each with
    its invisible characters taken out), rejoined, as the lines of the block they span:
    rich folds a coloured line at the terminal's width with the colour sequences on each
    piece, and the pieces of a token folded there, too short to count, were never joined
    (found by a hunting helper: chain ``ansi>wrap`` at the second layer joined nothing,
    each line being decoded apart)."""
    block: list[tuple[int, int, bytes]] = []
    for line in [*lines, (-1, -1, b"")]:
        if block and line[0] == block[-1][1] + 1:
            block.append(line)
            continue
        if len(block) >= 2:
            joined = b"\n".join(text for *_, text in block)
            # where each line of the block begins, joined and in ``buf``
            starts, at = [], 0
            for _, _, text in block:
                starts.append(at)
                at += len(text) + 1
            for start, end, decoded in wrapped_runs(joined):
                first = bisect.bisect_right(starts, start) - 1
                last = bisect.bisect_right(starts, max(start, end - 1)) - 1
                yield block[first][0], block[last][1], decoded
        block = [line]


def _lines_holding(
    buf: bytes, pattern: re.Pattern[bytes], replacement: bytes
) -> Iterator[tuple[int, int, bytes]]:
    """Each line of ``buf`` that ``pattern`` matches in, with every match replaced."""
    for start, end in _lines_marked(buf, pattern):
        yield start, end, pattern.sub(replacement, buf[start:end])


#: An RFC 2047 encoded word (``=?utf-8?b?...?=``, ``=?utf-8?q?...?=``): a mail header's
#: text, folded into words of at most 75 characters
_ENCODED_WORD = re.compile(rb"=\?([!->@-~]{1,64})\?([bBqQ])\?([!->@-~]*)\?=")
_QP_HEX = re.compile(rb"=([0-9A-Fa-f]{2})")


def encoded_word_runs(buf: bytes) -> Iterator[tuple[int, int, bytes]]:
    """Runs of RFC 2047 encoded words (whitespace and line breaks between them), each
    run's words decoded and joined, as a mail reader shows them: ``email.header.Header``
    folds a token into words whose base64 pieces were too short to count, the second
    word shown as written (found by a hunting helper)."""
    if b"=?" not in buf:
        return
    start = end = -1
    parts: list[bytes] = []
    for word in _ENCODED_WORD.finditer(buf):
        if parts and buf[end : word.start()].strip(b" \t\r\n"):
            yield start, end, b"".join(parts)
            parts = []
        if not parts:
            start = word.start()
        parts.append(_word_bytes(*word.groups()))
        end = word.end()
    if parts:
        yield start, end, b"".join(parts)


def _word_bytes(charset: bytes, encoding: bytes, text: bytes) -> bytes:
    """An encoded word's text, as UTF-8 where its charset is another one (latin-1)."""
    if encoding in b"bB":
        text = text + b"=" * (-len(text) % 4)
        try:
            data = base64.b64decode(text)
        except (binascii.Error, ValueError):
            return b""
    else:
        data = _QP_HEX.sub(lambda m: bytes.fromhex(m.group(1).decode()), text.replace(b"_", b" "))
    name = charset.split(b"*")[0].decode("ascii", "replace").lower()  # (RFC 2231 language)
    if name in ("utf-8", "utf8", "us-ascii"):
        return data
    try:
        return data.decode(name).encode("utf-8", "surrogatepass")
    except (LookupError, ValueError, TypeError):  # ("undefined" raises a UnicodeError)
        return data


#: A backslash before a character ``re.escape`` escapes (two: the ``repr`` of the pattern,
#: as pytest's ``Expected regex: '...'`` shows it); never before a backslash or a quote
_REGEX_ESCAPE = re.compile(rb"\\{1,2}([()\[\]{}?*+\-|^$.&~# ])")


def regex_escape_runs(buf: bytes) -> Iterator[tuple[int, int, bytes]]:
    """Each line holding what ``re.escape`` writes, those backslashes taken out:
    ``pytest.raises(match=re.escape(token))`` put one before every separator of a token
    (a recovery code's dashes), and a failing test showed the pattern's repr, each group
    between them too short to count (found by a hunting helper). A whole line: a hostile
    canary holds a space, which ``re.escape`` escapes too."""
    if b"\\" not in buf:
        return iter(())
    return _lines_holding(buf, _REGEX_ESCAPE, rb"\1")


DECODERS: dict[str, Decoder] = {
    "base64": base64_runs,
    "hex": hex_runs,
    "pct": percent_runs,
    "esc": backslash_runs,
    "html": html_runs,
    "qp": qp_runs,
    "wrap": wrapped_runs,
    "ansi": invisible_runs,
    "mime": encoded_word_runs,
    "regex": regex_escape_runs,
    "octets": octet_runs,
}


def all_decoders() -> dict[str, Decoder]:
    """The built-in decoders plus those of installed plugins."""
    from .extensions import plugin_decoders

    return {**DECODERS, **plugin_decoders()}


def masking_decoders() -> dict[str, Decoder]:
    """``all_decoders`` as a masker of our own output decodes: base64 at every shift
    (``masking_base64_runs``)."""
    return {**all_decoders(), "base64": masking_base64_runs}


Run = tuple[str, int, int, bytes]

#: Texts up to this size have their runs kept, up to _CACHE_BYTES of texts and runs in all,
#: the least recently used dropped first. A pytest session decodes the same texts in test
#: after test (the same log lines, the same traceback of the same failure, the same error
#: envelope): a 4 KB traceback costs 0.7 ms to decode, and its runs depend on no secret.
_CACHED_TEXT_BYTES = 16 * 1024
_CACHE_BYTES = 8 * 1024 * 1024
_cache: OrderedDict[tuple[bytes, tuple[tuple[str, Decoder], ...]], tuple[Run, ...]] = OrderedDict()
_cache_size = 0
_decoder_sets: dict[tuple[tuple[str, Decoder], ...], tuple[tuple[str, Decoder], ...]] = {}
_DECODER_SETS_KEPT = 64
_cache_lock = _thread.allocate_lock()  # (not threading: 0.5 ms of start-up)


def decode_runs(buf: bytes, decoders: dict[str, Decoder] | None = None) -> Iterable[Run]:
    """Every decodable run of ``buf``: ``(decoder name, start, end, decoded)``."""
    chosen = DECODERS if decoders is None else decoders
    if len(buf) > _CACHED_TEXT_BYTES or not isinstance(buf, bytes):
        return _runs(buf, chosen)
    try:
        with _cache_lock:
            # one tuple per set of decoders, shared by every key: each key held its own
            # (ten objects the garbage collector walked, two thousand keys in a session)
            items = tuple(chosen.items())
            if len(_decoder_sets) < _DECODER_SETS_KEPT:
                items = _decoder_sets.setdefault(items, items)
            key = (buf, _decoder_sets.get(items, items))
            runs = _cache.get(key)
            if runs is not None:
                _cache.move_to_end(key)
                return runs
    except TypeError:  # a plugin's decoder that cannot be hashed: not kept
        return _runs(buf, chosen)
    runs = tuple(_runs(buf, chosen))
    _keep(key, runs)
    return runs


#: Between the texts that ``decode_pieces`` joins: no built-in decoder's run reaches into
#: it or across it (a line break and a carriage return end every token, base64 and hex
#: run; "\r\r" after an "=" is no quoted-printable soft break; an empty line continues no
#: wrapped line, and wrapped lines are rejoined text by text anyway).
PIECE_SEPARATOR = b"\r\r\n\n"


def _hex_pieces(buf: bytes, starts: list[int]) -> Iterator[tuple[int, int, bytes]]:
    return hex_runs(buf)


def _percent_pieces(buf: bytes, starts: list[int]) -> Iterator[tuple[int, int, bytes]]:
    return percent_runs(buf)


def _backslash_pieces(buf: bytes, starts: list[int]) -> Iterator[tuple[int, int, bytes]]:
    return backslash_runs(buf)


def _html_pieces(buf: bytes, starts: list[int]) -> Iterator[tuple[int, int, bytes]]:
    return html_runs(buf)


#: the built-in decoders that read texts joined by PIECE_SEPARATOR as they read each text
#: alone (given where each begins); the others (``wrapped_runs``, a plugin's) read each text
_JOINED: dict[Decoder, Callable[[bytes, list[int]], Iterator[tuple[int, int, bytes]]]] = {
    base64_runs: lambda buf, starts: _base64_runs(buf, frozenset(starts)),
    masking_base64_runs: lambda buf, starts: _base64_runs(buf, _ANYWHERE),
    hex_runs: _hex_pieces,
    percent_runs: _percent_pieces,
    backslash_runs: _backslash_pieces,
    html_runs: _html_pieces,
    qp_runs: _qp_runs,
    octet_runs: lambda buf, starts: octet_runs(buf),  # (no run crosses a line break)
}


def decode_pieces(texts: Sequence[bytes], decoders: dict[str, Decoder]) -> list[list[Run]]:
    """``decode_runs`` of each of ``texts`` (the same runs in the same order), with one
    pass of each built-in decoder over all of them: a GiB of log-like text holds some
    6,000 tokens to decode, and a decoder called per token cost more in calls than in
    decoding."""
    per: list[list[Run]] = [[] for _ in texts]
    if not texts:
        return per
    starts, position = [], 0
    for text in texts:
        starts.append(position)
        position += len(text) + len(PIECE_SEPARATOR)
    joined = PIECE_SEPARATOR.join(texts)
    for name, decoder in decoders.items():
        together = _JOINED.get(decoder)
        if together is None:
            for text, runs in zip(texts, per, strict=True):
                runs += [
                    (name, start, end, decoded)
                    for start, end, decoded in decoder(text)
                    if decoded and decoded != text[start:end]
                ]
            continue
        for start, end, decoded in together(joined, starts):
            i = bisect.bisect_right(starts, start) - 1
            base = starts[i]
            if end - base > len(texts[i]):  # (none does: see PIECE_SEPARATOR)
                continue
            if decoded and decoded != joined[start:end]:
                per[i].append((name, start - base, end - base, decoded))
    return per


def _runs(buf: bytes, decoders: dict[str, Decoder]) -> Iterator[Run]:
    for name, decoder in decoders.items():
        for start, end, decoded in decoder(buf):
            if decoded and decoded != buf[start:end]:
                yield name, start, end, decoded


def _keep(key: tuple[bytes, tuple[tuple[str, Decoder], ...]], runs: tuple[Run, ...]) -> None:
    global _cache_size
    size = len(key[0]) + sum(len(run[3]) for run in runs) + 64
    with _cache_lock:
        if key in _cache:
            return
        _cache[key] = runs
        _cache_size += size
        while _cache_size > _CACHE_BYTES and _cache:
            old, dropped = _cache.popitem(last=False)
            _cache_size -= len(old[0]) + sum(len(run[3]) for run in dropped) + 64
