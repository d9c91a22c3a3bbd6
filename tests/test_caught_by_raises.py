"""An exception a test catches with ``pytest.raises`` is judged as one that reached it.

Found trying the fixture as a newcomer: ``with pytest.raises(GatewayError):
gateway.call(token)``, the way most gateway tests check a failure, caught an error that
held the token; the plugin judged only exceptions a test let through, and the test passed.
"""

from __future__ import annotations

import pytest
from _pytest._code.code import ExceptionInfo
from conftest import failure_section, inner_outcomes

from leakcheck import LeakCheck
from leakcheck.pytest_plugin.caught import caught_by_raises

pytest_plugins = ["pytester"]

INNER = """
import pytest

class GatewayError(Exception):
    pass

def careless(token):
    raise GatewayError(f"upstream 401 with key {token}")

def careful(token):
    raise GatewayError("upstream refused the credential (AUTH_FAILED)")

def test_careless(leakcheck):
    with pytest.raises(GatewayError):
        careless(leakcheck.secret("bearer"))

def test_careless_call_form(leakcheck):
    pytest.raises(GatewayError, careless, leakcheck.secret("bearer"))

def test_careful(leakcheck):
    with pytest.raises(GatewayError, match="AUTH_FAILED"):
        careful(leakcheck.secret("bearer"))
"""


def test_an_error_caught_by_raises_is_judged(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest("-p", "no:randomly", "-rA")
    assert inner_outcomes(result) == {
        "test_careless": "FAILED",
        "test_careless_call_form": "FAILED",
        "test_careful": "PASSED",
    }
    failure = failure_section(result, "test_careless")
    assert "[LEAK] caller: exception that reached the test GatewayError" in failure
    assert "«canary:bearer:raw»" in failure
    # the careful test judged its error: nothing to say about it in the summary
    assert "nothing caller-visible judged" not in result.stdout.str()


def test_the_patch_is_restored_and_hands_over_only_while_it_runs() -> None:
    original = vars(ExceptionInfo)["fill_unfilled"]
    check = LeakCheck(seed=1)
    with caught_by_raises(check) as patched:
        assert patched
        with pytest.raises(ValueError):
            raise ValueError("inside")
    assert vars(ExceptionInfo)["fill_unfilled"] is original
    with pytest.raises(KeyError):
        raise KeyError("after")
    assert [type(e) for e in check._exceptions._exceptions] == [ValueError]


def test_the_patch_is_restored_when_the_test_raises() -> None:
    original = vars(ExceptionInfo)["fill_unfilled"]
    with pytest.raises(RuntimeError), caught_by_raises(LeakCheck(seed=1)):
        raise RuntimeError("the test failed")
    assert vars(ExceptionInfo)["fill_unfilled"] is original


def test_a_pytest_without_the_method_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(ExceptionInfo, "fill_unfilled")
    with caught_by_raises(LeakCheck(seed=1)) as patched:
        assert not patched
        assert "fill_unfilled" not in vars(ExceptionInfo)
