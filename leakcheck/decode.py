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
_URLSAFE = bytes.maketrans(b"-_", b"+/")
_HEX_RUN = re.compile(rb"(?:[0-9a-fA-F]{2}){16,}")
_PERCENT_RUN = re.compile(rb"[^\s\"'<>]*%[0-9A-Fa-f]{2}[^\s\"'<>]*")


def base64_runs(buf: bytes) -> Iterator[tuple[int, int, bytes]]:
    for match in _BASE64_RUN.finditer(buf):
        run = _WRAP.sub(b"", match.group()).translate(_URLSAFE)
        # A run cut by a chunk edge (or a blob that starts mid-token) may begin off the
        # 4-character grid: every alignment is tried.
        for shift in range(4):
            body = run[shift:]
            body = body[: len(body) - len(body) % 4]
            if len(body) < 12:
                break
            try:
                yield match.start(), match.end(), base64.b64decode(body)
            except (binascii.Error, ValueError):
                continue


def hex_runs(buf: bytes) -> Iterator[tuple[int, int, bytes]]:
    for match in _HEX_RUN.finditer(buf):
        run = match.group()
        yield match.start(), match.end(), bytes.fromhex(run.decode("ascii"))
        if len(run) > 33:
            yield match.start(), match.end(), bytes.fromhex(run[1:-1].decode("ascii"))


def percent_runs(buf: bytes) -> Iterator[tuple[int, int, bytes]]:
    for match in _PERCENT_RUN.finditer(buf):
        run = match.group()
        yield match.start(), match.end(), unquote_to_bytes(run)
        if b"+" in run:
            yield match.start(), match.end(), unquote_to_bytes(run.replace(b"+", b" "))


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
