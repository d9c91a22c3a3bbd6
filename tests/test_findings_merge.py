"""Masking spans: a span inside one that outranks it is left out before widening (issue
13's plugin cost: a secret's masking windows lie inside its own hit, about 20 spans a
finding). The masks, their extents and their labels are those of widening every span:
compared on random buffers and spans, UTF-8 and UTF-16-LE, against the same code with
nothing left out."""

from __future__ import annotations

import random

import pytest

from leakcheck import findings
from leakcheck.findings import Span, _merge, mask_all, masked_excerpt

ALPHABET = b"abcXYZ019+/=_-.%:  \n\"'{}<>\x00\xc3\xa9"


def _case(rng: random.Random) -> tuple[bytes, list[Span]]:
    buf = bytes(rng.choice(ALPHABET) for _ in range(rng.randint(1, 160)))
    spans = []
    for _ in range(rng.randint(1, 12)):
        start = rng.randrange(len(buf))
        end = min(len(buf), start + rng.randint(1, 40))
        if rng.random() < 0.5 and spans:  # inside another one, as a masking window is
            outer = rng.choice(spans)
            start = rng.randint(outer.start, outer.end - 1)
            end = rng.randint(start + 1, outer.end)
        spans.append(
            Span(start, end, rng.choice("ab"), rng.choice(["raw", "w1", "w2"]), rng.randint(0, 1))
        )
    return buf, spans


@pytest.mark.parametrize("parity", [None, 0, 1])
def test_merge_is_that_of_widening_every_span(
    parity: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(f"merge-{parity}")
    cases = [_case(rng) for _ in range(400)]
    calls = []
    dropping = findings._outranked_dropped
    monkeypatch.setattr(
        findings, "_outranked_dropped", lambda spans: calls.append(1) or dropping(spans)
    )
    ours = [_merge(buf, spans, parity) for buf, spans in cases]
    assert len(calls) == len(cases)  # the merge leaves them out (its cost: issue 13)
    monkeypatch.setattr(findings, "_outranked_dropped", dropping)
    # some cases did leave spans out
    left = [len(findings._outranked_dropped(spans)) < len(spans) for _, spans in cases]
    assert sum(left) > 100
    monkeypatch.setattr(findings, "_outranked_dropped", lambda spans: spans)
    every = [_merge(buf, spans, parity) for buf, spans in cases]
    assert ours == every


def test_contained_spans_are_left_out_only_when_outranked() -> None:
    outer = Span(2, 20, "bearer", "raw")
    inner = Span(5, 11, "bearer", "window-6")
    twin = Span(2, 20, "hostname", "raw", rank=1)  # as long, a higher rank: names the mask
    same = Span(2, 20, "api_key", "raw")  # as long, as high: kept (the order names it)
    assert findings._outranked_dropped([outer, inner]) == [outer]
    assert findings._outranked_dropped([inner, outer, twin]) == [outer, twin]
    assert findings._outranked_dropped([outer, same]) == [outer, same]
    buf = b"token: " + b"A" * 30 + b" end"
    assert mask_all(buf, [Span(9, 20, "bearer", "raw"), Span(12, 14, "bearer", "w")]) == (
        "token: \u00abcanary:bearer:raw\u00bb end"
    )


def test_excerpt_masks_the_whole_token_with_its_windows_left_out() -> None:
    buf = b"GET https://" + b"h" * 12 + b".example/v1 401"
    host = Span(12, 32, "hostname", "raw", rank=1)
    windows = [Span(s, s + 6, "hostname", f"window-{s}") for s in range(12, 27, 3)]
    text = masked_excerpt(buf, 12, 32, [*windows, host])
    # a whole host keeps its URL's "//" and the path of words after it; its windows,
    # pieces, would have swallowed both had they been widened
    assert text == "GET https://\u00abcanary:hostname:raw\u00bb/v1 401"
