"""The verdict's triage (issue 13's plugin cost): a long captured text is searched on its
own, so that the decoding pass keeps its runs for the next test that captures it, and the
findings are those of a search of each text alone.

Leaky and clean twins for each shape of input; assertions compare paths, forms and
counts, never a secret's value.
"""

from __future__ import annotations

import pytest

from leakcheck import CanaryFactory, decode, verdict
from leakcheck.capture import Captured
from leakcheck.detect import Scanner
from leakcheck.forms import MASKING_FORMS
from leakcheck.policy import DEFAULT_POLICY, SinkClass

#: a traceback-like text, well past ``APART_FROM``, the same in every test
FRAMES = "".join(
    f'  File "/srv/app/tools/handler_{n}.py", line {n + 10}, in call_{n}\n'
    f"    return await upstream.post(url, json=payload)  # frame {n}\n"
    for n in range(40)
)


def _scanner(seed: str) -> tuple[Scanner, str, str]:
    factory = CanaryFactory(seed)
    bearer, host = factory.secret("bearer"), factory.secret("hostname")
    scanner = Scanner([bearer, host], decode=True, forms=MASKING_FORMS, backend="ahocorasick")
    return scanner, bearer.value, host.value


def _item(path: str, text: str, sink_class: SinkClass = SinkClass.CALLER) -> Captured:
    return Captured("tool response", sink_class, path, text, group="tool response#0")


def _judged(items: list[Captured], scanner: Scanner) -> list[tuple[str, str, bool]]:
    return sorted(
        (leak.path, leak.finding.form, leak.allowed)
        for leak in verdict.judge(scanner, items, DEFAULT_POLICY)
    )


def test_the_long_text_is_long() -> None:
    assert len(FRAMES) >= verdict.APART_FROM > 100


@pytest.mark.parametrize("where", ["start", "middle", "end"])
def test_leak_in_a_long_text_is_found(where: str) -> None:
    scanner, token, _ = _scanner(f"verdict-long-{where}")
    half = len(FRAMES) // 2
    long = {
        "start": f"Bearer {token}\n{FRAMES}",
        "middle": f"{FRAMES[:half]}auth={token}\n{FRAMES[half:]}",
        "end": f"{FRAMES}UpstreamError: 401 for token {token}",
    }[where]
    items = [_item("$.a", "ok"), _item("$.trace", long), _item("$.b", "fine")]
    assert _judged(items, scanner) == [("$.trace", "raw", False)]


def test_clean_twin_of_a_long_text_has_no_finding() -> None:
    scanner, _, _ = _scanner("verdict-long-clean")
    items = [_item("$.a", "ok"), _item("$.trace", FRAMES), _item("$.b", "fine")]
    assert _judged(items, scanner) == []


def test_long_and_short_texts_each_report_their_own_hit() -> None:
    """A hit in a short text next to a long one, another in the long one."""
    scanner, token, host = _scanner("verdict-both")
    items = [
        _item("$.short", f"https://{host}/v1", SinkClass.OPERATOR),
        _item("$.trace", f"{FRAMES}token {token}"),
        _item("$.clean", f"{FRAMES} done"),
    ]
    assert _judged(items, scanner) == [("$.short", "raw", True), ("$.trace", "raw", False)]


def test_a_long_text_is_decoded_on_its_own_and_kept() -> None:
    """The long text's decoded runs are kept under the text itself (what the next test's
    search of the same text finds in the cache), not under a joined buffer of this
    test's texts."""
    scanner, _, host = _scanner("verdict-kept")
    long = FRAMES + "# frames above\n"
    items = [_item("$.a", f"request {host}"), _item("$.trace", long)]
    verdict.judge(scanner, items, DEFAULT_POLICY)
    kept = {key[0] for key in list(decode._cache)}
    assert long.encode() in kept
    assert not any(long.encode() in text and text != long.encode() for text in kept)


def test_an_encoded_secret_in_a_long_text_is_found() -> None:
    """The decoding pass runs on a long text searched alone (base64 of the token)."""
    import base64

    scanner, token, _ = _scanner("verdict-long-b64")
    blob = base64.b64encode(f"user:{token}".encode()).decode()
    items = [_item("$.trace", f"{FRAMES}Authorization: Basic {blob}\n")]
    found = _judged(items, scanner)
    assert [path for path, _, _ in found] == ["$.trace"]
    assert "base64" in found[0][1]
