"""Decoder plugin: base64 of gzip (``H4sI...``), as crash dumps and Kubernetes objects carry.

Registered under the ``leakcheck.plugins`` entry-point group; active only because ``zlib``
is importable (it always is). Output is capped so a compression bomb cannot exhaust memory.
"""

from __future__ import annotations

import base64
import binascii
import re
import zlib
from collections.abc import Iterator

__all__ = ["DECODERS", "gzip_base64_runs"]

MAX_OUTPUT = 16 * 1024 * 1024
_GZIP_BASE64 = re.compile(rb"H4sI[A-Za-z0-9+/]{16,}={0,2}")


def gzip_base64_runs(buf: bytes) -> Iterator[tuple[int, int, bytes]]:
    for match in _GZIP_BASE64.finditer(buf):
        run = match.group()
        if len(run) % 4:  # (cut short: keyed decoding reads a few KiB around its start)
            unpadded = run.rstrip(b"=")
            run = unpadded[: len(unpadded) // 4 * 4]
        try:
            packed = base64.b64decode(run)
            inflater = zlib.decompressobj(wbits=31)
            yield match.start(), match.end(), inflater.decompress(packed, MAX_OUTPUT)
        except (binascii.Error, ValueError, zlib.error):
            continue


# Compressed data holds none of a secret's keys (the runs of letters and digits that keyed
# decoding looks for, past 256 KiB): the run's start is searched for in their pass instead,
# and the few KiB around it decoded (a state blob in a large log was missed, and a small file
# scanned beside a large one too: found by a hunting helper). A regex starting with a literal
# byte, as ``decode.DENSE_ESCAPES``.
gzip_base64_runs.keyed_shapes = (rb"H4sI[A-Za-z0-9+/]{16}",)  # type: ignore[attr-defined]


DECODERS = {"gzip": gzip_base64_runs}
