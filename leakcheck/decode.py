"""The decoding second pass: find encoded runs in the haystack and decode them.

The first pass encodes the needles, which catches every single-layer form. Chains (base64
of JSON, percent-encoded base64, base64 of base64) need the haystack decoded. Each decoder
yields ``(start, end, decoded bytes)`` for the runs it recognises; the scanner searches the
decoded bytes with the same engine and, to ``depth`` layers, decodes them again.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterator
from urllib.parse import unquote_to_bytes

__all__ = ["DECODERS", "Decoder", "all_decoders", "decode_runs"]

Decoder = Callable[[bytes], Iterator[tuple[int, int, bytes]]]

# A base64 run, possibly wrapped (real newlines or JSON-escaped "\n") at any width.
_BASE64_RUN = re.compile(rb"[A-Za-z0-9+/_-]{16,}(?:(?:\r?\n|\\r\\n|\\n)[A-Za-z0-9+/_-]{4,})*={0,2}")
_WRAP = re.compile(rb"\r?\n|\\r\\n|\\n|=")
_NOT_IDENTIFIER = re.compile(rb"[0-9+/]")
_URLSAFE = bytes.maketrans(b"-_", b"+/")
_HEX_RUN = re.compile(rb"[0-9a-fA-F]{32,}")
_PERCENT_ESCAPE = re.compile(rb"%[0-9A-Fa-f]{2}")
_TOKEN_REST = re.compile(rb"[^\s\"'<>]*")
_TOKEN_BYTES = frozenset(set(range(0x21, 0x100)) - set(b"\"'<>\x7f"))


def base64_runs(buf: bytes) -> Iterator[tuple[int, int, bytes]]:
    for match in _BASE64_RUN.finditer(buf):
        run = match.group()
        # Identifiers (snake_case, CamelCase) look like base64url; a real encoding of 12+
        # bytes almost always holds a digit, "+" or "/" (all but 1 in 10^4 of 64 chars).
        if len(run) < 64 and not _NOT_IDENTIFIER.search(run):
            continue
        if b"\n" in run or b"\\" in run or b"=" in run:
            run = _WRAP.sub(b"", run)
        run = run.translate(_URLSAFE)
        # A run cut by the buffer's start may begin off the 4-character grid.
        for shift in range(4 if match.start() == 0 else 1):
            body = run[shift:]
            # padding was stripped with the line breaks: put it back, so the last group
            # (the secret's end, in a blob that ends with it) is decoded too
            extra = len(body) % 4
            body = body[:-1] if extra == 1 else body + b"=" * ((4 - extra) % 4)
            try:
                yield match.start(), match.end(), base64.b64decode(body)
            except (binascii.Error, ValueError):
                continue


def hex_runs(buf: bytes) -> Iterator[tuple[int, int, bytes]]:
    for match in _HEX_RUN.finditer(buf):
        run = match.group()
        even = run[: len(run) - len(run) % 2]
        yield match.start(), match.end(), bytes.fromhex(even.decode("ascii"))
        odd = run[1 : 1 + (len(run) - 1) - (len(run) - 1) % 2]
        yield match.start(), match.end(), bytes.fromhex(odd.decode("ascii"))


def percent_runs(buf: bytes) -> Iterator[tuple[int, int, bytes]]:
    """Whole tokens (up to whitespace, quotes or angle brackets) holding a ``%XX`` escape."""
    done = 0
    for escape in _PERCENT_ESCAPE.finditer(buf):
        if escape.start() < done:
            continue
        start = escape.start()
        floor = max(done, start - 4096)
        while start > floor and buf[start - 1] in _TOKEN_BYTES:
            start -= 1
        rest = _TOKEN_REST.match(buf, escape.start())
        assert rest is not None  # the pattern matches the empty string too
        end = rest.end()
        done = end
        run = buf[start:end]
        yield start, end, unquote_to_bytes(run)
        if b"+" in run:
            yield start, end, unquote_to_bytes(run.replace(b"+", b" "))


DECODERS: dict[str, Decoder] = {
    "base64": base64_runs,
    "hex": hex_runs,
    "pct": percent_runs,
}


def all_decoders() -> dict[str, Decoder]:
    """The built-in decoders plus those of installed plugins."""
    from .extensions import plugin_decoders

    return {**DECODERS, **plugin_decoders()}


def decode_runs(
    buf: bytes, decoders: dict[str, Decoder] | None = None
) -> Iterator[tuple[str, int, int, bytes]]:
    """Every decodable run of ``buf``: ``(decoder name, start, end, decoded)``."""
    for name, decoder in (DECODERS if decoders is None else decoders).items():
        for start, end, decoded in decoder(buf):
            if decoded and decoded != buf[start:end]:
                yield name, start, end, decoded
