"""One pass over the text for every needle of every secret.

Hyperscan when importable, pyahocorasick otherwise. Never a ``re`` alternation of literals:
it collapses to under 1 MB/s at a few hundred needles.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Sequence
from typing import Protocol

__all__ = ["Engine", "build_engine", "available_backends", "BACKENDS"]

BACKENDS = ("hyperscan", "ahocorasick")
#: pyahocorasick searches this many input bytes at a time (see AhoCorasickEngine.scan).
_SLICE_BYTES = 1 << 20


class Engine(Protocol):
    name: str

    def scan(self, data: bytes | memoryview) -> list[tuple[int, int]]:
        """Every occurrence of every pattern: ``(pattern index, end offset)``, any order."""
        ...


class HyperscanEngine:
    name = "hyperscan"

    def __init__(self, patterns: Sequence[bytes]) -> None:
        import hyperscan

        self._hs = hyperscan
        self._db = None
        if patterns:
            # Escaped byte by byte rather than compiled as literals: the binding passes
            # literals as C strings, so a NUL byte would end the pattern.
            expressions = [b"".join(b"\\x%02x" % byte for byte in p) for p in patterns]
            self._db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
            self._db.compile(
                expressions=expressions,
                ids=list(range(len(patterns))),
                elements=len(patterns),
                flags=0,
            )
            self._scratch = hyperscan.Scratch(self._db)

    def scan(self, data: bytes | memoryview) -> list[tuple[int, int]]:
        hits: list[tuple[int, int]] = []
        if self._db is None or not data:
            return hits

        def on_match(index: int, _start: int, end: int, _flags: int, _ctx: object) -> None:
            hits.append((index, end))

        self._db.scan(data, match_event_handler=on_match, scratch=self._scratch)
        return hits


#: 8 x log2(1 + count) of each byte value over 80 MiB of source code and gateway logs
#: (bench/corpus.py): how common a byte is in the text leakcheck searches.
_BYTE_WEIGHT = bytes.fromhex(
    "00000000000000000063a800007b000000000000000000000000000000000000c26ca58c67776a969c9c89"
    "83a19aa1909e9b9b96959694939393a1727899896d7394868f8c928a8b868f7d818d8a918b8d7d8f939586"
    "8489807e808f838f62a285ad9ba6a5b3a39d9dab8694a7a0abaaa38aacacaea195949599878473846100655"
    "857544d504c4a554b4c494d454648514b444963535b494b5046475057474e4c4956494a49514948"
    "4a48494a4947474a4b494c4b4a46464c4e4949524a4b430000444e433d2f2f323d392941314e47524a3131"
    "2d34333d575633370d080d1047536d5445504d4b494644373d2e08355c0000100000000000000000000000"
    "08"
)
#: Bytes in an anchor (see AhoCorasickEngine).
ANCHOR_BYTES = 5
#: Below this many patterns the automaton's fan-out costs little (45 MiB/s at 500) and
#: choosing anchors (a few ms) would cost more than it saves on a test's small texts.
ANCHOR_FROM_PATTERNS = 800


def _pivots(patterns: Sequence[bytes]) -> dict[int, float]:
    """A small set of rare bytes such that every pattern holds one where an anchor can
    start (greedy weighted set cover); ``{byte: frequency}``."""
    starts = [
        range(len(p) - ANCHOR_BYTES + 1) if len(p) > ANCHOR_BYTES else range(1) for p in patterns
    ]
    cover = [0] * 256
    for index, (pattern, positions) in enumerate(zip(patterns, starts, strict=True)):
        bit = 1 << index
        for byte in {pattern[j] for j in positions}:
            cover[byte] |= bit
    frequency = [2.0 ** (w / 8) for w in _BYTE_WEIGHT]
    uncovered = (1 << len(patterns)) - 1
    chosen: dict[int, float] = {}
    while uncovered:
        best, best_score = -1, math.inf
        for byte in range(256):
            count = (cover[byte] & uncovered).bit_count()
            if count and frequency[byte] / count < best_score:
                best, best_score = byte, frequency[byte] / count
        chosen[best] = frequency[best]
        uncovered &= ~cover[best]
    return chosen


class AhoCorasickEngine:
    """pyahocorasick over short anchors, each match verified against its whole needle.

    pyahocorasick slows with the fan-out of its automaton (about 115 MiB/s at 10 needles,
    30 at 1,700). Each needle is represented by an ANCHOR_BYTES window starting at one of a
    few rare "pivot" bytes (chosen so that every needle holds one), so the root has few
    children and most text positions leave it at once; an anchor hit is confirmed by
    comparing the whole needle in place. Same hits, about 1.6x faster on 2,000 needles.
    """

    name = "ahocorasick"

    def __init__(self, patterns: Sequence[bytes]) -> None:
        import ahocorasick

        self._automaton = None
        self._patterns = list(patterns)
        self._overlap = max((len(p) for p in patterns), default=1) - 1
        if patterns:
            anchored = len(self._patterns) >= ANCHOR_FROM_PATTERNS
            pivots = _pivots(self._patterns) if anchored else {}
            anchors: dict[bytes, list[tuple[int, int]]] = {}
            for index, pattern in enumerate(self._patterns):
                if not anchored:  # the whole pattern is its own anchor
                    anchors.setdefault(pattern, []).append((index, 0))
                    continue
                positions = (
                    range(len(pattern) - ANCHOR_BYTES + 1)
                    if len(pattern) > ANCHOR_BYTES
                    else range(1)
                )
                offset = min(
                    (j for j in positions if pattern[j] in pivots),
                    key=lambda j, p=pattern: pivots[p[j]],
                )
                anchor = pattern[offset : offset + ANCHOR_BYTES]
                anchors.setdefault(anchor, []).append((index, offset))
            automaton = ahocorasick.Automaton()
            for anchor, entries in anchors.items():
                # latin-1 maps bytes to code points one to one, so a str automaton
                # searches bytes exactly, valid UTF-8 or not.
                automaton.add_word(anchor.decode("latin-1"), (len(anchor), tuple(entries)))
            automaton.make_automaton()
            self._automaton = automaton

    def scan(self, data: bytes | memoryview) -> list[tuple[int, int]]:
        if self._automaton is None or not data:
            return []
        # The automaton searches a UCS-4 copy of its str (4 bytes per input byte): slices
        # keep that copy small. A slice starts ``overlap`` bytes early and reports only the
        # anchors that end inside it, so each anchor occurrence is seen exactly once; the
        # needle around it is compared against the whole buffer.
        view = memoryview(data)
        size = len(view)
        patterns = self._patterns
        hits: list[tuple[int, int]] = []
        for start in range(0, size, _SLICE_BYTES):
            low = max(0, start - self._overlap)
            text = str(view[low : start + _SLICE_BYTES], "latin-1")
            for last, (length, entries) in self._automaton.iter(text):
                if low + last < start:
                    continue
                anchor_start = low + last - length + 1
                for index, offset in entries:
                    pattern = patterns[index]
                    begin = anchor_start - offset
                    end = begin + len(pattern)
                    if begin >= 0 and end <= size and view[begin:end] == pattern:
                        hits.append((index, end))
        return hits


def available_backends() -> list[str]:
    found = []
    if importlib.util.find_spec("hyperscan") is not None:
        found.append("hyperscan")
    if importlib.util.find_spec("ahocorasick") is not None:
        found.append("ahocorasick")
    return found


def build_engine(patterns: Sequence[bytes], backend: str = "auto") -> Engine:
    """Compile ``patterns`` (distinct, non-empty byte strings) for one-pass search."""
    if backend not in ("auto", *BACKENDS):
        raise ValueError(f"unknown engine {backend!r}; choose auto, hyperscan or ahocorasick")
    if backend in ("auto", "hyperscan"):
        try:
            return HyperscanEngine(patterns)
        except ImportError:
            if backend == "hyperscan":
                raise RuntimeError(
                    "engine 'hyperscan' requested but the hyperscan package is not importable"
                ) from None
    try:
        return AhoCorasickEngine(patterns)
    except ImportError:
        raise RuntimeError(
            "no search engine available: install hyperscan or pyahocorasick"
        ) from None
