"""A canary of a query-string kind planted in a header: the client refuses to encode it
before any byte leaves, the stage is never reached, and the failure says what to plant.

Found trying the fixture as a newcomer on an httpx2 gateway: ``secret("api_key")`` sent as
``X-Api-Key`` failed with a ``UnicodeEncodeError`` (an ``api_key`` canary holds "é" and "€",
as a query string may) and a stage never reached, both true, with nothing saying that a
header wants ``header_key``.
"""

from __future__ import annotations

import pytest
from conftest import inner_outcomes, self_scan

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


INNER = """
import httpx2


def call(url, key):
    with httpx2.Client(timeout=0.5) as client:
        try:
            response = client.get(url + "/v1/notes", headers={"X-Api-Key": key})
        except httpx2.HTTPError as error:
            return {"ok": False, "code": type(error).__name__}
    return {"ok": False, "status": response.status_code}


def test_header(leakcheck, kind):
    fault = leakcheck.force("http_401", via="respx")
    leakcheck.expose(call(fault.url, leakcheck.secret(kind)))
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
    assert inner_outcomes(result) == {"test_header": "FAILED" if hinted else "PASSED"}
    assert ("leakcheck hint" in out) is hinted
    assert ('leakcheck.secret("header_key")' in out) is hinted
    if hinted:
        assert "UnicodeEncodeError" in out
        assert "stage http_401 via respx was never reached" in out
    planted = CanaryFactory(SEED, namespace="test_inner.py::test_header").secret(kind)
    self_scan(out, [planted], "the inner run's output")
