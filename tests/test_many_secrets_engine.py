"""The automaton's anchors, chosen in C per pattern (engine._anchors), are the ones the
per-pattern Python choice made: the same anchor and offset for every pattern over pivots
that cover every pattern (engine._pivots), so the same hits in the same order."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from conftest import brute_force

from leakcheck import engine
from leakcheck.engine import (
    _BYTE_WEIGHT,
    ANCHOR_BYTES,
    _anchor_starts,
    _anchors,
    _pivots,
)


def _reference_anchors(
    patterns: list[bytes], pivots: dict[int, float]
) -> dict[bytes, list[tuple[int, int]]]:
    """The anchor choice as it was written first: a set intersection and two ``min``."""
    pivot_bytes = set(pivots)
    anchors: dict[bytes, list[tuple[int, int]]] = {}
    for index, pattern in enumerate(patterns):
        starts = _anchor_starts(pattern)
        present = pivot_bytes.intersection(starts)
        rarest = min(pivots[byte] for byte in present)
        offset = min(starts.index(byte) for byte in present if pivots[byte] == rarest)
        anchors.setdefault(pattern[offset : offset + ANCHOR_BYTES], []).append((index, offset))
    return anchors


def _patterns(seed: int, count: int) -> list[bytes]:
    rng = random.Random(seed)
    alphabets = [
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
        b"0123456789abcdef",
        bytes(range(256)),  # every byte, the unweighted (equally rare) ones too
        b"\x00\x01\x02\x03\xfe\xff",  # only bytes of one weight: ties decide
        b"%25AF",
    ]
    found: dict[bytes, None] = {}
    while len(found) < count:
        alphabet = rng.choice(alphabets)
        size = rng.choice([1, 2, 5, 6, 7, 12, 40, 90])
        prefix = rng.choice([b"", b"ghp_", b"sk_live_", b"ending in ", b"****"])
        found[prefix + bytes(rng.choice(alphabet) for _ in range(size))] = None
    return list(found)


@pytest.mark.parametrize("seed", range(6))
def test_pivots_and_anchors_are_the_per_pattern_choice(seed: int) -> None:
    patterns = _patterns(seed, 900)
    pivots = _pivots(patterns)
    # the cover: every pattern holds a pivot where an anchor can start
    assert all(set(_anchor_starts(p)) & set(pivots) for p in patterns)
    assert _anchors(patterns, pivots) == _reference_anchors(patterns, pivots)


def test_ties_of_equally_rare_pivots_go_to_the_first_place() -> None:
    # bytes of one weight (0: never seen in the corpus) are equally rare
    rare = [b for b in range(256) if _BYTE_WEIGHT[b] == 0][:3]
    assert len(rare) == 3
    pivots = {rare[0]: 1.0, rare[1]: 1.0, rare[2]: 1.0}
    pattern = bytes([65, 66, rare[2], 67, rare[0], rare[1]]) + b"xyzxyzxyz"
    assert _anchors([pattern], pivots) == {pattern[2 : 2 + ANCHOR_BYTES]: [(0, 2)]}
    assert _anchors([pattern], pivots) == _reference_anchors([pattern], pivots)


def test_the_automaton_finds_every_hit_through_those_anchors() -> None:
    patterns = _patterns(7, engine.ANCHOR_FROM_PATTERNS + 100)
    rng = random.Random(8)
    text = b"|".join(rng.choice(patterns) for _ in range(300))
    found = engine.AhoCorasickEngine(patterns)
    found._build()  # noqa: SLF001 - the automaton, not the search by keys
    assert Counter(found.scan(text)) == brute_force(patterns, text)
