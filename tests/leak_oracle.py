"""An independent search for secrets in leakcheck's own output, sharing no code with it.

The plugin masks with its own scanner; proving the masking with that same scanner would
let one bug hide another. This oracle spells each secret with the standard library alone
(raw, percent-encoded, base64 at the three byte offsets, hex, JSON, ``repr`` of the text
and of its UTF-8 and UTF-16-LE bytes, XML- and HTML-escaped) and looks for every spelling
whole, and for every 6-character window of the secret's random part in each textual
spelling, with ``bytes in``. It reports what it found by secret id and spelling name only.
"""

from __future__ import annotations

import base64
import html
import json
import urllib.parse
from collections.abc import Iterable, Iterator
from xml.sax.saxutils import escape

from leakcheck import Secret

WINDOW = 6


def _xml(text: str) -> str:
    return escape(text, {'"': "&quot;", "'": "&apos;"})


def _inner_repr(text: str) -> str:
    return repr(text)[1:-1]


def _bytes_repr(data: bytes) -> str:
    return repr(data)[2:-1]


#: Textual spellings: each is applied to the whole secret and to each window of it.
TEXTUAL = {
    "raw": lambda text: text,
    "json": lambda text: json.dumps(text)[1:-1],
    "json-utf8": lambda text: json.dumps(text, ensure_ascii=False)[1:-1],
    "repr": _inner_repr,
    "repr-utf8-bytes": lambda text: _bytes_repr(text.encode("utf-8", "surrogatepass")),
    "repr-utf16le-bytes": lambda text: _bytes_repr(text.encode("utf-16-le", "surrogatepass")),
    "xml": _xml,
    "html": lambda text: html.escape(text, quote=True),
}


def _base64_cores(data: bytes) -> Iterator[tuple[str, bytes]]:
    """The base64 characters that depend on ``data`` alone, with 0, 1 or 2 bytes before
    it (``Basic base64(user:SECRET)`` puts it at any offset)."""
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + data)
        first = -(-offset * 8 // 6)  # the first character made of the data's bits only
        last = (offset + len(data)) * 8 // 6  # one past the last such character
        core = encoded[first:last]
        yield f"base64@{offset}", core
        yield f"base64url@{offset}", core.translate(bytes.maketrans(b"+/", b"-_"))


def spellings(secret: Secret) -> Iterator[tuple[str, bytes]]:
    """Every whole spelling of ``secret`` this oracle knows."""
    value = secret.value
    data = value.encode("utf-8", "surrogatepass")
    for name, spell in TEXTUAL.items():
        yield name, spell(value).encode("utf-8", "surrogatepass")
    yield "percent", urllib.parse.quote(value, safe="").encode()
    yield "percent-lower", urllib.parse.quote(value, safe="").lower().encode()
    yield "percent-plus", urllib.parse.quote_plus(value).encode()
    yield "percent-path", urllib.parse.quote(value, safe="/:@").encode()
    yield from _base64_cores(data)
    yield "hex", data.hex().encode()
    yield "hex-upper", data.hex().upper().encode()


def windows(secret: Secret) -> Iterator[tuple[str, bytes]]:
    """Every WINDOW-character run of the secret's random characters, in each textual
    spelling (a truncated ``repr`` or a cut log line shows such pieces)."""
    value, bits = secret.value, secret.bits
    for start in range(len(value) - WINDOW + 1):
        if not all(bits[start : start + WINDOW]):
            continue  # a kind's fixed prefix or suffix: shared with every other canary
        piece = value[start : start + WINDOW]
        if "\n" in piece:
            continue
        for name, spell in TEXTUAL.items():
            yield f"window-{name}", spell(piece).encode("utf-8", "surrogatepass")


def hits(data: str | bytes, secrets: Iterable[Secret]) -> list[str]:
    """``"id as spelling"`` for each spelling of each secret found in ``data``."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    found = []
    for secret in secrets:
        seen: set[bytes] = set()
        for name, needle in (*spellings(secret), *windows(secret)):
            if needle not in seen and needle in data:
                found.append(f"{secret.id} as {name}")
                break  # one is enough to name the secret
            seen.add(needle)
    return found
