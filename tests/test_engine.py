"""The one-pass search engines: every occurrence of every pattern, on any bytes."""

from __future__ import annotations

import importlib.util
import platform
import random
import sys
from collections import Counter

import pytest
from conftest import brute_force

import leakcheck.engine as engine_module
from leakcheck.engine import BACKENDS, available_backends, build_engine
from leakcheck.forms import needles_for


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    if request.param not in available_backends():
        pytest.skip(f"{request.param} is not importable here")
    return request.param


def test_both_backends_available_on_this_platform() -> None:
    # hyperscan is a dependency on linux x86_64, pyahocorasick everywhere: a broken install
    # must not silently test one backend only.
    assert "ahocorasick" in available_backends()
    if sys.platform == "linux" and platform.machine() == "x86_64":
        assert "hyperscan" in available_backends()


def test_every_overlapping_occurrence_with_end_offsets(backend: str, search_path: str) -> None:
    patterns = [b"abc", b"bcd", b"abcd", b"aa", b"cdab", b"d"]
    data = b"xxabcdabcdaaaa-abcd\nabc"
    engine = build_engine(patterns, backend)
    assert engine.name == backend
    hits = engine.scan(data)
    assert Counter(hits) == brute_force(patterns, data)
    # spot checks: overlapping runs of one pattern, and nested patterns ending together
    assert {end for index, end in hits if index == 3} == {12, 13, 14}
    assert (0, 5) in hits and (2, 6) in hits and (1, 6) in hits


def test_nul_and_non_utf8_bytes(backend: str, search_path: str) -> None:
    patterns = [
        b"\x00",
        b"a\x00b",
        b"\x00\x00\x00",
        b"\xff\xfe\x00",
        b"\xc3\x28",  # invalid UTF-8 sequence
        b"\x80\x81\x82",  # lone continuation bytes
        "é€".encode(),
        b"\xe2\x82",  # truncated UTF-8 sequence: a prefix of "€"
    ]
    data = (
        b"\x00\x00\x00\x00a\x00b\xff\xfe\x00\xc3\x28\xc3\xa9\xe2\x82\xac"
        b"\x80\x81\x82\x80\x81\x82\x00"
    )
    engine = build_engine(patterns, backend)
    expected = brute_force(patterns, data)
    assert {i for i, _ in expected} == set(range(len(patterns)))  # every pattern occurs
    assert Counter(engine.scan(data)) == expected


@pytest.fixture(params=["plain", "anchored"])
def anchoring(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The fallback's automaton holds large pattern sets as short anchors and verifies each
    hit: force either whatever the pattern count, and the automaton whatever the input
    size (small inputs are searched without it)."""
    threshold = 10**9 if request.param == "plain" else 1
    monkeypatch.setattr(engine_module, "ANCHOR_FROM_PATTERNS", threshold)
    monkeypatch.setattr(engine_module, "AUTOMATON_AFTER_BYTES", 0)
    return request.param


@pytest.fixture(params=["plain", "anchored", "keys"])
def search_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every way the fallback searches: the automaton (whole patterns or anchors), or,
    before it is built, the patterns whose first 4 bytes the text holds."""
    if request.param == "keys":
        monkeypatch.setattr(engine_module, "AUTOMATON_AFTER_BYTES", 10**9)
    else:
        threshold = 10**9 if request.param == "plain" else 1
        monkeypatch.setattr(engine_module, "ANCHOR_FROM_PATTERNS", threshold)
        monkeypatch.setattr(engine_module, "AUTOMATON_AFTER_BYTES", 0)
    return request.param


@pytest.mark.parametrize("seed", range(6))
def test_random_patterns_match_brute_force(backend: str, seed: int, search_path: str) -> None:
    rng = random.Random(seed)
    alphabet = b"ab\x00\xff\n\x80"  # few symbols: plenty of overlaps and nesting
    patterns = list(
        dict.fromkeys(
            bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 6))) for _ in range(40)
        )
    )
    data = bytes(rng.choice(alphabet) for _ in range(3000))
    assert Counter(build_engine(patterns, backend).scan(data)) == brute_force(patterns, data)


@pytest.mark.parametrize("slice_bytes", [1, 2, 5, 64])
def test_matches_across_internal_slices(
    backend: str, slice_bytes: int, monkeypatch: pytest.MonkeyPatch, anchoring: str
) -> None:
    # pyahocorasick searches in slices to bound its memory: shrink them to put an edge
    # inside every occurrence
    monkeypatch.setattr(engine_module, "_SLICE_BYTES", slice_bytes)
    rng = random.Random(slice_bytes)
    alphabet = b"ab\x00\xff"
    patterns = list(
        dict.fromkeys(
            bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 9))) for _ in range(30)
        )
    )
    data = bytes(rng.choice(alphabet) for _ in range(700))
    assert Counter(build_engine(patterns, backend).scan(data)) == brute_force(patterns, data)


def test_match_across_a_real_slice_edge(backend: str, anchoring: str) -> None:
    pattern = b"\x00needle\xff"
    edge = 1 << 20
    # one occurrence per slice edge, split after k bytes for every k
    starts = [(k + 1) * edge - k for k in range(len(pattern) + 1)]
    data = bytearray(b"." * (starts[-1] + edge))
    for start in starts:
        data[start : start + len(pattern)] = pattern
    hits = build_engine([pattern, b"needle"], backend).scan(bytes(data))
    assert sorted(hits) == sorted(
        [(0, s + len(pattern)) for s in starts] + [(1, s + 7) for s in starts]
    )


def test_real_needles_agree_between_backends(canaries, search_path: str) -> None:
    if set(available_backends()) != set(BACKENDS):
        pytest.skip("needs both backends")
    patterns = list(dict.fromkeys(n.pattern for s in canaries.all_kinds() for n in needles_for(s)))
    rng = random.Random(7)
    pieces = [bytes(rng.randrange(256) for _ in range(50))]
    for pattern in rng.sample(patterns, 60):
        pieces += [pattern, bytes(rng.randrange(256) for _ in range(rng.randint(0, 30)))]
    data = b"".join(pieces)
    expected = brute_force(patterns, data)
    assert sum(expected.values()) >= 60
    for name in BACKENDS:
        assert Counter(build_engine(patterns, name).scan(data)) == expected, name


def test_empty_pattern_list_and_empty_data(backend: str) -> None:
    engine = build_engine([], backend)
    assert engine.name == backend
    assert engine.scan(b"anything at all \x00\xff") == []
    assert engine.scan(b"") == []
    assert build_engine([b"abc"], backend).scan(b"") == []


def test_memoryview_and_bytearray_input(backend: str, search_path: str) -> None:
    # the streaming scanner may hand the engine a view over its buffer
    engine = build_engine([b"needle"], backend)
    data = bytearray(b"..needle..needle")
    assert sorted(engine.scan(bytes(data))) == [(0, 8), (0, 16)]
    assert sorted(engine.scan(memoryview(data)[:12])) == [(0, 8)]


def test_unknown_backend_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown engine 're'"):
        build_engine([b"abc"], "re")


def test_auto_prefers_hyperscan_when_importable() -> None:
    if importlib.util.find_spec("hyperscan") is None:
        pytest.skip("hyperscan is not installed here")
    assert build_engine([b"abc"], "auto").name == "hyperscan"
    assert build_engine([b"abc"]).name == "hyperscan"


def test_without_hyperscan_auto_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "hyperscan", None)
    assert available_backends() == ["ahocorasick"]
    engine = build_engine([b"abc", b"bc"], "auto")
    assert engine.name == "ahocorasick"
    assert sorted(engine.scan(b"zabc")) == [(0, 4), (1, 4)]
    with pytest.raises(RuntimeError, match="hyperscan") as info:
        build_engine([b"abc"], "hyperscan")
    assert "not importable" in str(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_without_any_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "hyperscan", None)
    monkeypatch.setitem(sys.modules, "ahocorasick", None)
    assert available_backends() == []
    with pytest.raises(RuntimeError, match="no search engine available"):
        build_engine([b"abc"], "auto")
    with pytest.raises(RuntimeError, match="no search engine available"):
        build_engine([b"abc"], "ahocorasick")


# --- the fallback without its automaton -----------------------------------------------------


def test_small_inputs_are_searched_without_building_the_automaton() -> None:
    rng = random.Random(11)
    alphabet = b"abc\x00\xff"
    patterns = list(
        dict.fromkeys(
            bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 8))) for _ in range(50)
        )
    )
    engine = engine_module.AhoCorasickEngine(patterns)
    budget = engine_module.AUTOMATON_AFTER_BYTES * len(patterns)
    small = [bytes(rng.choice(alphabet) for _ in range(200)) for _ in range(budget // 400)]
    for data in small:
        assert Counter(engine.scan(data)) == brute_force(patterns, data)
    assert engine._automaton is None, "built for a few small texts"
    big = bytes(rng.choice(alphabet) for _ in range(budget))
    assert Counter(engine.scan(big)) == brute_force(patterns, big)
    assert engine._automaton is not None, "never built for a large text"
    for data in small[:3]:  # the automaton from now on, same hits
        assert Counter(engine.scan(data)) == brute_force(patterns, data)


@pytest.mark.parametrize("anchored", [False, True], ids=["whole patterns", "anchored"])
def test_search_without_the_automaton_reports_hits_in_its_order(
    monkeypatch: pytest.MonkeyPatch, anchored: bool
) -> None:
    """By end offset, the longest first: which of two equally long needles names a mask
    depends on it, and a small text is searched without the automaton. Anchored (many
    patterns), the automaton finds hits in its anchors' order: they are sorted."""
    rng = random.Random(3)
    alphabet = b"ab\x00"
    patterns = list(
        dict.fromkeys(
            bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 7))) for _ in range(40)
        )
    )
    data = bytes(rng.choice(alphabet) for _ in range(400))
    monkeypatch.setattr(engine_module, "AUTOMATON_AFTER_BYTES", 10**9)
    by_keys = engine_module.AhoCorasickEngine(patterns).scan(data)
    monkeypatch.setattr(engine_module, "AUTOMATON_AFTER_BYTES", 0)
    if anchored:
        monkeypatch.setattr(engine_module, "ANCHOR_FROM_PATTERNS", 1)
    automaton = engine_module.AhoCorasickEngine(patterns)
    by_automaton = automaton.scan(data)
    assert automaton._anchored is anchored
    assert len(by_keys) > 100
    assert by_keys == by_automaton


_NEEDS_BOTH = pytest.mark.skipif(
    available_backends() != ["hyperscan", "ahocorasick"], reason="needs both engines"
)


@_NEEDS_BOTH
def test_auto_takes_the_automaton_for_a_needle_hyperscan_refuses() -> None:
    """Hyperscan cannot compile a needle past HYPERSCAN_MAX_NEEDLE_BYTES (a PEM key's):
    ``auto`` takes the automaton, an explicit ``hyperscan`` is a clear error."""
    rng = random.Random(7)
    long = bytes(rng.randrange(256) for _ in range(engine_module.HYPERSCAN_MAX_NEEDLE_BYTES + 1))
    short = b"lck_short-needle"
    engine = build_engine([long, short], "auto")
    assert engine.name == "ahocorasick"
    assert sorted(engine.scan(b"x" + long + short)) == [(0, len(long) + 1), (1, len(long) + 17)]
    with pytest.raises(RuntimeError, match="cannot search for needles over 4000 bytes"):
        build_engine([long], "hyperscan")
    assert build_engine([short], "auto").name == "hyperscan"


@_NEEDS_BOTH
def test_auto_never_compiles_too_many_needles_with_hyperscan() -> None:
    """Whatever the input (stdin: unknown size), past HYPERSCAN_MAX_NEEDLES the automaton
    is taken; below it, an unknown size keeps hyperscan."""
    cap = engine_module.HYPERSCAN_MAX_NEEDLES
    assert engine_module.resolve_backend("auto", cap + 1, None) == "ahocorasick"
    assert engine_module.resolve_backend("auto", cap, None) == "auto"
    assert engine_module.resolve_backend("hyperscan", cap + 1, None) == "hyperscan"


def test_many_patterns_or_a_large_text_take_the_automaton(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The search by keys holds an index of every pattern and the set of a text's 4-byte
    substrings: a batch of many secrets (hundreds of thousands of needles) or a large text
    gets the automaton, whatever the budget would allow."""
    rng = random.Random(5)
    many = list(
        dict.fromkeys(
            bytes(rng.choice(b"abcdefgh") for _ in range(10))
            for _ in range(engine_module.BY_KEYS_MAX_PATTERNS + 100)
        )
    )
    engine = engine_module.AhoCorasickEngine(many)
    text = many[7] + b" and nothing else"
    assert (7, len(many[7])) in engine.scan(text)
    assert engine._key_index is None and engine._automaton is not None
    few = many[:1000]
    monkeypatch.setattr(engine_module, "AUTOMATON_AFTER_BYTES", 10**6)  # a budget that allows
    engine = engine_module.AhoCorasickEngine(few)
    small = few[3] + b" ok"
    assert (3, len(few[3])) in engine.scan(small)
    assert engine._automaton is None  # a small text: searched by keys
    large = few[5] + b"x" * (engine_module.BY_KEYS_MAX_BYTES + 1)
    assert (5, len(few[5])) in engine.scan(large)
    assert engine._automaton is not None
