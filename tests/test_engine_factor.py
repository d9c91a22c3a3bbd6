"""Hyperscan compiles fewer patterns (engine._factor): a pattern that ends or begins with a
run others share is found through that run and compared in place. The hits must be exactly
those of every pattern compiled as it is."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from conftest import brute_force

import leakcheck.engine as engine_module
from leakcheck import CanaryFactory
from leakcheck.detect import Scanner
from leakcheck.engine import _factor, build_engine

pytestmark = pytest.mark.skipif(
    "hyperscan" not in engine_module.available_backends(), reason="hyperscan not importable"
)


def _families_of_patterns(rng: random.Random) -> tuple[list[bytes], list[int]]:
    """Patterns sharing heads and tails, within a family and across families, some that
    are another's head or tail, NUL and high bytes among them."""
    alphabet = b"aB3\x00\xff-_%"
    patterns: dict[bytes, int] = {}
    for family in range(6):
        core = bytes(rng.choice(alphabet) for _ in range(rng.randrange(6, 12)))
        for _ in range(12):
            head = bytes(rng.choice(alphabet) for _ in range(rng.randrange(0, 4)))
            tail = bytes(rng.choice(alphabet) for _ in range(rng.randrange(0, 4)))
            shape = rng.randrange(3)
            pattern = head + core if shape == 0 else core + tail if shape == 1 else core
            patterns.setdefault(pattern, family)
        # fixed text several families end with
        patterns.setdefault(core[:3] + b"Shared9x", family)
    return list(patterns), list(patterns.values())


@pytest.mark.parametrize("seed", range(25))
def test_hits_are_every_patterns_own(seed: int) -> None:
    rng = random.Random(seed)
    patterns, families = _families_of_patterns(rng)
    factored = _factor(patterns, families)
    assert factored.compiled < len(patterns), "nothing shared: the test tests nothing"
    pieces = [*patterns, b"zz", b"\x00", b"Shared9x"]
    data = b"".join(rng.choice(pieces) for _ in range(400))
    engine = build_engine(patterns, "hyperscan", families=families)
    for text in (data, data[7:], memoryview(data)[3:-5]):
        hits = engine.scan(text)
        assert Counter(hits) == brute_force(patterns, bytes(text))
        ends = [end for _, end in hits]
        assert ends == sorted(ends), "hits out of the order of their ends"


def test_regex_hits_keep_their_indexes() -> None:
    patterns = [b"abcdefXY", b"zzabcdefXY", b"abcdefXYzz", b"qq"]
    engine = build_engine(patterns, "hyperscan", regexes=[rb"%[0-9]{2}"], families=[0, 0, 0, 1])
    data = b"zzabcdefXYzz %12 qq"
    hits = engine.scan(data)
    assert Counter(hits) == brute_force(patterns, data) + Counter({(4, 16): 1})


def test_a_head_or_tail_another_pattern_is_needs_no_family() -> None:
    # a pattern that others begin or end with is their anchor: no extra hits, any family
    patterns = [b"Q7xK2mP9", b"Q7xK2mP9-tail", b"head-Q7xK2mP9", b"Zr4Tq8Wn"]
    factored = _factor(patterns, None)
    assert factored.plain == [3] and factored.nested == {}
    [(run, index, kids)] = factored.anchors
    assert run == patterns[0] and index == 0
    assert sorted(kid for kid, _, _ in kids) == [1, 2]


def test_a_pattern_found_through_an_anchor_can_be_one() -> None:
    # "Ab12Cd34" is the anchor of the mask that ends with it, and is found through the head
    # it shares with "Ab12Cd99zz"
    patterns = [b"****Ab12Cd34", b"Ab12Cd34", b"Ab12Cd99zz", b"Zz9Yy8Xx"]
    families = [0, 0, 0, 1]
    factored = _factor(patterns, families)
    assert factored.compiled == 2 and list(factored.nested) == [1]
    engine = build_engine(patterns, "hyperscan", families=families)
    data = b"Ab12Cd99zz ****Ab12Cd34 Ab12Cd3 Ab12Cd34**Ab12Cd34"
    hits = engine.scan(data)
    assert Counter(hits) == brute_force(patterns, data)
    assert [end for _, end in hits] == sorted(end for _, end in hits)


def test_fixed_text_is_no_anchor() -> None:
    # several families' tails alike (a mask's "ending in"), or one family's tail all in
    # lowercase letters (a hostname's domain): searched for as they are, no shared anchor
    tails = [b"ending in Ab12Cd34", b"ending in 9QzX4mKw"]
    across = [b"one.corp.internal", b"two.corp.internal", b"three.corp.internal"]
    factored = _factor([*tails, *across], [0, 1, 0, 0, 0])
    assert len(factored.plain) == 5 and factored.anchors == []
    # the same secret's spellings sharing a random tail do share one
    own = [b"****Ab12Cd34", b"...Ab12Cd34", b"ending in Ab12Cd34", b"x9Ff0Kq2LmZ7"]
    factored = _factor(own, [0, 0, 0, 1])
    assert factored.plain == [3]
    [(run, index, kids)] = factored.anchors
    assert run == b"Ab12Cd34" and index == -1 and len(kids) == 3


def _secrets() -> list:
    from leakcheck import KINDS

    factory = CanaryFactory(seed="engine-factor", namespace="test")
    kinds = list(KINDS)
    return [factory.secret(kinds[n % len(kinds)]) for n in range(20)]


def test_a_scan_compiles_far_fewer_patterns_than_it_searches_for() -> None:
    # what makes the scanner's build cheaper: 20 secrets' needles and keys (about 2,500)
    scanner = Scanner(_secrets(), decode=True, input_bytes=64 << 20)
    patterns = [*scanner._patterns, *scanner._keys]
    families = [*scanner._owner, *scanner._key_owner]
    assert _factor(patterns, families).compiled < 0.55 * len(patterns)


def test_needles_alone_are_compiled_as_they_are() -> None:
    # searched through shared runs, 20 secrets' needles alone were searched at about 0.6 of
    # their speed: only the keyed engine (needles, keys and shapes) is factored
    secrets = _secrets()
    alone = Scanner(secrets, decode=False, backend="hyperscan", input_bytes=64 << 20).engine
    assert isinstance(alone, engine_module.HyperscanEngine) and alone._anchors == []
    keyed = Scanner(secrets, decode=True, backend="hyperscan", input_bytes=64 << 20).engine
    assert isinstance(keyed, engine_module.HyperscanEngine) and len(keyed._anchors) > 100


def test_findings_are_those_of_every_pattern_compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    import base64
    import json
    from urllib.parse import quote

    secrets = _secrets()
    rng = random.Random(3)
    lines = [b"INFO request ok id=%d" % n for n in range(3000)]
    for secret in secrets:
        value = secret.value.encode()
        for form in (
            value,
            base64.b64encode(b"u:" + value),
            quote(secret.value, safe="").encode(),
            json.dumps({"k": secret.value}).encode(),
            value.hex().encode(),
            b"****" + value[-8:],
            b"ending in " + value[-6:],
            value[: len(value) * 2 // 3],
            secret.value.encode("utf-16-le"),
        ):
            lines.insert(rng.randrange(len(lines)), b"x " + form)
    data = b"\n".join(lines)
    data += b"\n" + b"pad " * (300 * 1024 // 4)  # past the keyed threshold

    def findings() -> list[tuple[str, str, int, int, str]]:
        scanner = Scanner(secrets, decode=True, backend="hyperscan", input_bytes=len(data))
        return [(f.secret_id, f.form, f.offset, f.line, f.excerpt) for f in scanner.scan(data)]

    factored = findings()

    def unfactored(patterns: list[bytes], families: object = None) -> object:
        return engine_module._Factored(list(range(len(patterns))), [], {})

    monkeypatch.setattr(engine_module, "_factor", unfactored)
    assert findings() == factored
    assert len(factored) > 100


def test_common_head_is_the_longest_shared_start() -> None:
    from leakcheck.engine import _common_head

    rng = random.Random(5)
    for _ in range(5000):
        a = bytes(rng.choice(b"ab\x00\xff") for _ in range(rng.randrange(0, 14)))
        b = bytes(rng.choice(b"ab\x00\xff") for _ in range(rng.randrange(0, 14)))
        n = 0
        while n < min(len(a), len(b)) and a[n] == b[n]:
            n += 1
        assert _common_head(a, b) == n, (a, b)
