"""One pass over the text for every needle of every secret.

Hyperscan when importable, pyahocorasick otherwise. Never a ``re`` alternation of literals:
it collapses to under 1 MB/s at a few hundred needles.
"""

from __future__ import annotations

import importlib.util
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


class AhoCorasickEngine:
    name = "ahocorasick"

    def __init__(self, patterns: Sequence[bytes]) -> None:
        import ahocorasick

        self._automaton = None
        self._overlap = max((len(p) for p in patterns), default=1) - 1
        if patterns:
            automaton = ahocorasick.Automaton()
            for index, pattern in enumerate(patterns):
                # latin-1 maps bytes to code points one to one, so a str automaton
                # searches bytes exactly, valid UTF-8 or not.
                automaton.add_word(pattern.decode("latin-1"), index)
            automaton.make_automaton()
            self._automaton = automaton

    def scan(self, data: bytes | memoryview) -> list[tuple[int, int]]:
        if self._automaton is None or not data:
            return []
        # The automaton searches a UCS-4 copy of its str (4 bytes per input byte): slices
        # keep that copy small. A slice starts ``overlap`` bytes early and reports only the
        # matches that end inside it, so a match across a slice edge is found exactly once.
        hits: list[tuple[int, int]] = []
        for start in range(0, len(data), _SLICE_BYTES):
            low = max(0, start - self._overlap)
            text = str(data[low : start + _SLICE_BYTES], "latin-1")
            for last, index in self._automaton.iter(text):
                if low + last >= start:
                    hits.append((index, low + last + 1))
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
