"""The verdict's proof by keys (issue 13's plugin cost): a long text captured again in a
later test is not searched when the layers kept for it (the text and what its decoding
pass decodes, ``verdict._layers``) hold none of the new scanner's needles. Each check
judges the text with one test's scanner first (so its layers are kept), then with
another's whose secret it holds, in each spelling a layer shows it in: that secret must
still be found. Assertions compare paths, forms and counts, never a secret's value.
"""

from __future__ import annotations

import base64
from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from leakcheck import CanaryFactory, verdict
from leakcheck.capture import Captured
from leakcheck.detect import Scanner
from leakcheck.forms import MASKING_FORMS
from leakcheck.policy import DEFAULT_POLICY, SinkClass

FRAMES = "".join(
    f'  File "/srv/app/tools/handler_{n}.py", line {n + 10}, in call_{n}\n'
    f"    return await upstream.post(url, json=payload)  # frame {n}, most recent call last\n"
    for n in range(30)
)


def _scanner(seed: str, kind: str = "bearer") -> tuple[Scanner, str]:
    secret = CanaryFactory(seed).secret(kind)
    scanner = Scanner([secret], decode=True, forms=MASKING_FORMS, backend="ahocorasick")
    return scanner, secret.value


def _judged(scanner: Scanner, text: str) -> list[tuple[str, str]]:
    items = [
        Captured("tool response", SinkClass.CALLER, "$.a", "ok", group="g"),
        Captured("tool response", SinkClass.CALLER, "$.trace", text, group="g"),
    ]
    return sorted(
        (leak.path, leak.finding.form) for leak in verdict.judge(scanner, items, DEFAULT_POLICY)
    )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


#: a secret's spelling, and the layer of the decoding pass it is found in
SPELLINGS = {
    "raw": lambda v: v,
    "base64": lambda v: _b64(v.encode()),
    "base64 of base64": lambda v: _b64(_b64(v.encode()).encode()),
    "percent of base64": lambda v: quote(_b64(v.encode()), safe=""),
    "masked tail": lambda v: f"token=...{v[-6:]}",
}


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_a_text_kept_clean_for_one_scanner_is_searched_for_another(spelling: str) -> None:
    """The same text, kept clean for a first scanner, holds the second's secret: found
    as a search of it finds it (a layer left out of the kept ones, or a needle taken for
    absent because its head is common text, would lose it)."""
    first, _ = _scanner(f"keys-first-{spelling}")
    second, value = _scanner(f"keys-second-{spelling}")
    text = f"{FRAMES}Error: upstream refused {SPELLINGS[spelling](value)}\n{FRAMES}"
    assert len(text) >= verdict.APART_FROM
    assert _judged(first, text) == []
    expected = sorted((f.source, f.form) for f in second.scan(text, source="$.trace"))
    assert expected, spelling  # (the spelling is one the scanner finds)
    assert _judged(second, text) == expected


def test_a_long_text_seen_before_is_not_searched_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The saving itself: the stacktrace a span records in every test is searched once,
    then its kept layers answer for the scanners of the tests after."""
    text = FRAMES + "Traceback (most recent call last): ToolError: upstream refused\n"
    _judged(_scanner("keys-seen-0")[0], text)
    searched: list[int] = []
    hit_starts = Scanner.hit_starts

    def counted(self: Scanner, data: bytes) -> list[int]:
        searched.append(len(data))
        return hit_starts(self, data)

    monkeypatch.setattr(Scanner, "hit_starts", counted)
    for n in range(1, 4):
        assert _judged(_scanner(f"keys-seen-{n}")[0], text) == []
    assert all(size < verdict.APART_FROM for size in searched), searched


def test_kept_layers_are_bounded() -> None:
    """The kept layers never exceed their bound (texts and bytes)."""
    scanner, _ = _scanner("keys-bound")
    texts, layer_bytes, _ = verdict._KEPT.limits
    for n in range(texts + 10):
        verdict._layers(scanner, f"{n}\n{FRAMES}".encode())
    assert len(verdict._KEPT) <= texts
    assert verdict._KEPT.sizes[0] <= layer_bytes
    assert verdict._KEPT.sizes[0] == sum(size for *_, size in verdict._KEPT._kept.values())


def test_kept_layers_are_bounded_by_their_keys() -> None:
    """Distinct texts with many keys each (random words) are not kept without end: 40 of
    54 KB held 146 MiB before the keys were bounded too (these 16 of 36 KB: 50 MiB)."""
    import random
    import string
    import tracemalloc

    scanner, _ = _scanner("keys-many")
    rng = random.Random(4)
    tracemalloc.start()
    try:
        for _ in range(16):
            words = ("".join(rng.choices(string.ascii_letters, k=8)) for _ in range(4_000))
            verdict._layers(scanner, " ".join(words).encode())
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert verdict._KEPT.sizes[1] <= verdict._KEPT.limits[2]
    assert verdict._KEPT.sizes[1] == sum(len(keys) for _, keys, _ in verdict._KEPT._kept.values())
    assert held < 30 * 2**20, f"{held / 2**20:.0f} MiB held"  # (keys unbounded: 50 MiB)


def test_a_text_over_the_bound_is_searched_not_kept() -> None:
    """A text longer than ``_PROVEN_UP_TO`` is searched: making and keeping its layers
    would cost what the search costs (its decoding is not kept) and crowd out the texts
    that come again."""
    scanner, _ = _scanner("keys-over")
    text = (FRAMES * (verdict._PROVEN_UP_TO // len(FRAMES) + 1)).encode()
    assert len(text) > verdict._PROVEN_UP_TO
    needles = verdict._Needles(scanner)
    assert not verdict._clean_by_keys(scanner, text, needles)
    assert (text, scanner.layering) not in verdict._KEPT
    assert verdict._clean_by_keys(scanner, text[: verdict._PROVEN_UP_TO], needles)


def test_the_keys_kept_for_long_are_left_out_of_the_collectors_walks() -> None:
    """The session masker's keys (every head of every secret of the session: 143,000
    after 1,000 tests of three canaries) and the kept texts' keys live to the end of the
    session. In a set, each of the collector's full collections walked every one of them
    (17 ms a collection at 1,000 tests); a dict holding only ints is never tracked. The
    masker still finds a secret of an early batch, by the same keys."""
    import gc

    from leakcheck.masking import SessionMasker

    factory = CanaryFactory("keys-untracked")
    masker = SessionMasker()
    batches = [[factory.secret("bearer"), factory.secret("api_key")] for _ in range(20)]
    for batch in batches:
        masker.add(batch)
    first = batches[0][1].value
    long_text = f"{FRAMES}\n{{'key': {first!r}}}\n"
    for _ in range(2):  # seen twice (in two tests): its layers and keys are kept
        masker._held_everywhere.clear()  # (as another test's add does)
        hidden = first not in masker.mask(long_text)
        assert hidden
    assert len(masker._kept) == 1
    # (names, not the sets: pytest would show their members, pieces of the secrets)
    tracked = [
        name
        for name, keys in [
            ("masker", masker._keys),
            *(("kept", keys) for _, keys, _ in masker._kept._kept.values()),
        ]
        if gc.is_tracked(keys)
    ]
    scanner, _ = _scanner("keys-untracked-verdict")
    verdict._layers(scanner, f"untracked\n{FRAMES}".encode())
    tracked += ["verdict" for _, keys, _ in verdict._KEPT._kept.values() if gc.is_tracked(keys)]
    assert tracked == []


def test_the_heads_index_stays_untracked_when_batches_share_a_head() -> None:
    """Two secrets sharing a run of fixed text share its heads. Their owners are kept
    apart from the index (``_shared``): with a tuple of owners in it, the index (166,000
    heads after 1,000 tests of three canaries) was tracked again, and each full
    collection walked it. A text holding the shared run is still masked with both."""
    import gc

    from leakcheck.canaries import Secret
    from leakcheck.masking import SessionMasker

    common = "Zr8#Kq2vX!m7Lp4@Tn"  # (test values, not canaries: a run both share)
    first = Secret.from_user(common + "Wc5%Hb9j", id="first")
    second = Secret.from_user(common + "Ye3&Gd6k", id="second")
    masker = SessionMasker()
    masker.add([first])
    masker.add([second])
    assert masker._shared, "no head is shared: the case is not exercised"
    tracked = gc.is_tracked(masker._heads)  # (not the index: pytest would show its heads)
    assert not tracked
    text = f"value {common[3:11]} shown"
    assert masker._candidates(text.encode()) == (0, 1)
    masked = masker.mask(text) != text
    assert masked


@given(st.sets(st.binary(min_size=6, max_size=6), max_size=40))
def test_the_first_four_bytes_of_heads_are_read_as_the_lookups_read_them(
    heads: set[bytes],
) -> None:
    """The session's keys are the first four bytes of each head, taken from their join by
    strided slices: the same ints as slicing each head, in the same order."""
    from array import array

    from leakcheck.engine import KEY_CODE
    from leakcheck.masking import HEAD_BYTES, _first_fours

    assert all(len(head) == HEAD_BYTES for head in heads)
    expected = array(KEY_CODE, b"".join(head[:4] for head in heads)).tolist()
    assert array(KEY_CODE, _first_fours(heads)).tolist() == expected
    # a head of another length (none is made so) is read one by one, never misread
    uneven = [*heads, b"\x01" * (HEAD_BYTES + 1)]
    assert _first_fours(uneven) == b"".join(head[:4] for head in uneven)
