"""The fallback engine's search of small texts by their 4-byte substrings: a pattern is
searched for only when its first and its last 4 bytes are both in the text."""

from __future__ import annotations

import random
from array import array
from collections import Counter

import pytest
from conftest import brute_force

import leakcheck.engine as engine_module
from leakcheck.engine import (
    AhoCorasickEngine,
    _KeyIndex,
    add_substring_keys,
    substring_keys_in,
)

pytestmark = pytest.mark.skipif(
    "ahocorasick" not in engine_module.available_backends(), reason="no pyahocorasick"
)


def _present(data: bytes) -> set[int]:
    grams = {data[i : i + 4] for i in range(len(data) - 3)}
    return set(array(engine_module.KEY_CODE, b"".join(grams)))


def test_a_shared_fixed_head_makes_no_candidate() -> None:
    # masks and token prefixes: the head is in the text, the random tail is not
    patterns = [b"ending in Ab12Cd34", b"ending in 9QzX4mKw", b"ghp_Zr4Tq8WnAb", b"****Ab12"]
    index = _KeyIndex(patterns)
    text = b"the credential ending in 7KQ2 was rejected; ghp_**** masked; ****ab99"
    assert index.candidates(_present(text)) == []
    assert index.candidates(_present(text + b" Ab12Cd34")) == [0, 3]


def test_short_patterns_are_always_candidates() -> None:
    index = _KeyIndex([b"abc", b"abcdef", b"xyz"])
    assert index.candidates(_present(b"nothing here")) == [0, 2]


@pytest.mark.parametrize("seed", range(20))
def test_hits_by_keys_are_every_occurrence(seed: int) -> None:
    rng = random.Random(seed)
    alphabet = b"ab\x00\xffcd"
    patterns = list(
        dict.fromkeys(
            bytes(rng.choice(alphabet) for _ in range(rng.randrange(1, 12))) for _ in range(40)
        )
    )
    data = bytes(rng.choice(alphabet) for _ in range(2000))  # (under the budget)
    engine = AhoCorasickEngine(patterns)
    hits = engine.scan(data)
    assert engine._automaton is None, "searched by keys"
    assert Counter(hits) == brute_force(patterns, data)


def test_the_keys_found_in_a_text_are_those_among_its_substrings() -> None:
    """``substring_keys_in`` finds what the set of every 4-byte substring holds, at every
    offset and length (the tail of a text whose length is no multiple of four included)."""
    rng = random.Random(4)
    for length in range(0, 41):
        data = bytes(rng.choice(b"ab\x00\xff") for _ in range(length))
        every: set[int] = set()
        add_substring_keys(data, every)
        absent = {int.from_bytes(rng.randbytes(4), "little") for _ in range(20)} - every
        for present in (set(), every, set(rng.sample(sorted(every), min(3, len(every))))):
            asked = frozenset(present | absent)
            assert substring_keys_in(data, asked) == set(present), length
