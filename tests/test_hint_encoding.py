"""A canary of a query-string kind planted in a header: the client refuses to encode it
before any byte leaves, the stage is never reached, and the failure says what to plant.

Found trying the fixture as a newcomer on an httpx2 gateway: ``secret("api_key")`` sent as
``X-Api-Key`` failed with a ``UnicodeEncodeError`` (an ``api_key`` canary holds "é" and "€",
as a query string may) and a stage never reached, both true, with nothing saying that a
header wants ``header_key``.
"""

from __future__ import annotations

import pytest
from conftest import failure_section, inner_outcomes, self_scan

from leakcheck.canaries import CanaryFactory, Secret
from leakcheck.pytest_plugin.judge import encoding_hint

pytest_plugins = ["pytester"]

SEED = "hint-encoding"


def _refused(value: str) -> UnicodeEncodeError:
    try:
        value.encode("ascii")
    except UnicodeEncodeError as error:
        return error
    raise AssertionError("the value encoded")


@pytest.fixture
def api_key() -> Secret:
    return CanaryFactory(SEED, namespace="unit").secret("api_key")


def test_a_refused_non_ascii_canary_gets_the_hint_by_id_and_kind(api_key: Secret) -> None:
    hint = encoding_hint([api_key], _refused(api_key.value))
    assert api_key.id in hint
    assert "'api_key'" in hint
    assert "'ascii' codec" in hint
    assert 'leakcheck.secret("header_key")' in hint
    self_scan(hint, [api_key], "the hint")


def test_the_hint_reads_the_chain_under_the_exception_that_reached_the_test(
    api_key: Secret,
) -> None:
    try:
        try:
            ("Bearer " + api_key.value).encode("ascii")
        except UnicodeEncodeError as error:
            raise RuntimeError("request failed") from error
    except RuntimeError as wrapped:
        assert api_key.id in encoding_hint([api_key], wrapped)


def test_no_hint_where_it_does_not_apply(api_key: Secret) -> None:
    bearer = CanaryFactory(SEED, namespace="unit").secret("bearer")
    assert bearer.value.isascii()
    # another text refused: not the canary's doing
    assert encoding_hint([api_key], _refused("caf\u00e9")) == ""
    # an ASCII canary: what it is in is what failed, not the canary
    assert encoding_hint([bearer], _refused(bearer.value + "\u00e9")) == ""
    # a user's own secret: a real value, refused for real
    user = Secret.from_user(api_key.value, kind="api_key")
    assert encoding_hint([user], _refused(user.value)) == ""
    # another error, or none
    assert encoding_hint([api_key], ValueError(api_key.id)) == ""
    assert encoding_hint([api_key], None) == ""


def test_a_caught_refusal_and_an_http_stage_unreached_name_it_as_a_possible_cause(
    api_key: Secret,
) -> None:
    bearer = CanaryFactory(SEED, namespace="unit").secret("bearer")
    hint = encoding_hint([api_key, bearer], None, unreached_http=True)
    assert f"{api_key.id} (kind 'api_key')" in hint
    assert bearer.id not in hint  # visible ASCII: not a cause
    assert "If the gateway puts one in a header" in hint
    assert 'leakcheck.secret("header_key")' in hint
    self_scan(hint, [api_key, bearer], "the hint")
    # every stage reached, or only ASCII canaries: nothing to say
    assert encoding_hint([api_key], None, unreached_http=False) == ""
    assert encoding_hint([bearer], None, unreached_http=True) == ""


INNER = """
import httpx2


def call(url, key):
    with httpx2.Client(timeout=0.5) as client:
        try:
            response = client.get(url + "/v1/notes", headers={"X-Api-Key": key})
        except httpx2.HTTPError as error:
            return {"ok": False, "code": type(error).__name__}
    return {"ok": False, "status": response.status_code}


def careful_call(url, key):
    try:
        return call(url, key)
    except Exception as error:  # a gateway that turns every failure into a result
        return {"ok": False, "code": type(error).__name__}


def test_header(leakcheck, kind):
    fault = leakcheck.force("http_401", via="respx")
    leakcheck.expose(call(fault.url, leakcheck.secret(kind)))


def test_header_caught(leakcheck, kind):
    fault = leakcheck.force("http_401", via="respx")
    leakcheck.expose(careful_call(fault.url, leakcheck.secret(kind)))
"""


@pytest.mark.parametrize(("kind", "hinted"), [("api_key", True), ("header_key", False)])
def test_a_header_planted_with_a_query_string_kind_says_what_to_plant(
    pytester: pytest.Pytester, kind: str, hinted: bool
) -> None:
    pytest.importorskip("httpx2")
    pytest.importorskip("respx")
    pytester.makeconftest(f"import pytest\n\n@pytest.fixture\ndef kind():\n    return {kind!r}\n")
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest("-p", "no:randomly", "-rA", f"--leakcheck-seed={SEED}")
    out = "\n".join(result.outlines + result.errlines)
    outcome = "FAILED" if hinted else "PASSED"
    assert inner_outcomes(result) == {"test_header": outcome, "test_header_caught": outcome}
    # (under CI=true pytest's short summary repeats whole messages: no counting lines)
    assert ('leakcheck.secret("header_key")' in out) is hinted
    assert ("the client could not encode api_key#1" in out) is hinted  # the exception's
    assert ("If the gateway puts one in a header" in out) is hinted  # the caught one's
    if hinted:
        assert out.count("stage http_401 via respx was never reached") >= 2
    planted = [
        CanaryFactory(SEED, namespace=f"test_inner.py::{test}").secret(kind)
        for test in ("test_header", "test_header_caught")
    ]
    self_scan(out, planted, "the inner run's output")


PLACED = """
def test_placed_only(leakcheck):
    leakcheck.force("http_401", via="respx", placement="url-userinfo")
    leakcheck.expose({"ok": False})


def test_placed_and_planted(leakcheck):
    leakcheck.force("http_401", via="respx", placement="url-userinfo")
    leakcheck.secret("api_key")
    leakcheck.expose({"ok": False})
"""


def test_canaries_a_placement_planted_are_not_the_tests_to_change(
    pytester: pytest.Pytester,
) -> None:
    """A placement plants its own canaries (a password beyond ASCII in ``url-userinfo``):
    the test did not choose their kind, so an unreached stage names only what the test
    planted itself."""
    pytest.importorskip("respx")
    pytester.makepyfile(test_inner=PLACED)
    result = pytester.runpytest("-p", "no:randomly", "-rA", f"--leakcheck-seed={SEED}")
    out = "\n".join(result.outlines + result.errlines)
    assert inner_outcomes(result) == {
        "test_placed_only": "FAILED",
        "test_placed_and_planted": "FAILED",
    }
    assert out.count("stage http_401 via respx was never reached") >= 2
    placed_only = failure_section(result, "test_placed_only")
    assert "stage http_401 via respx was never reached" in placed_only
    assert "leakcheck hint" not in placed_only
    hints = [line for line in result.outlines if "leakcheck hint" in line]
    assert hints
    for hint in hints:
        assert hint.startswith("leakcheck hint: api_key#1 (kind 'api_key') holds characters")
        assert "password" not in hint
