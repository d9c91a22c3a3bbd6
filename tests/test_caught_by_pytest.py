"""An exception a test catches with ``pytest.raises`` is judged as one that reached it, a
warning it catches with ``pytest.warns`` as one emitted.

Found trying the fixture as a newcomer: ``with pytest.raises(GatewayError):
gateway.call(token)``, the way most gateway tests check a failure, caught an error that
held the token; the plugin judged only exceptions a test let through, and the test passed.
A warning expected with ``pytest.warns`` never reached the warning sink either.
"""

from __future__ import annotations

import pytest
from _pytest._code.code import ExceptionInfo
from _pytest.recwarn import WarningsRecorder
from conftest import failure_section, inner_outcomes

from leakcheck import LeakCheck
from leakcheck.pytest_plugin.caught import caught_by_pytest

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

def warns(token):
    import warnings
    warnings.warn(f"token {token} expires in 2 days", DeprecationWarning)
    return {"ok": True}

def test_careless_warning(leakcheck):
    with pytest.warns(DeprecationWarning, match="expires"):
        leakcheck.expose(warns(leakcheck.secret("bearer")))

def test_careless_warning_not_matched(leakcheck):
    with pytest.warns(UserWarning):
        import warnings
        warnings.warn("something else", UserWarning)
        leakcheck.expose(warns(leakcheck.secret("bearer")))

def test_careful_warning(leakcheck):
    import warnings
    token = leakcheck.secret("bearer")
    with pytest.warns(DeprecationWarning, match="expires"):
        warnings.warn("the credential expires in 2 days", DeprecationWarning)
    leakcheck.expose({"ok": True})
"""


def test_an_error_caught_by_raises_is_judged(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest("-p", "no:randomly", "-rA")
    assert inner_outcomes(result) == {
        "test_careless": "FAILED",
        "test_careless_call_form": "FAILED",
        "test_careful": "PASSED",
        "test_careless_warning": "FAILED",
        "test_careless_warning_not_matched": "FAILED",
        "test_careful_warning": "PASSED",
    }
    failure = failure_section(result, "test_careless")
    assert "[LEAK] caller: exception that reached the test GatewayError" in failure
    assert "«canary:bearer:raw»" in failure
    # the careful test judged its error: nothing to say about it in the summary
    assert "nothing caller-visible judged" not in result.stdout.str()
    warned = failure_section(result, "test_careless_warning")
    assert "[LEAK] operator: warning DeprecationWarning" in warned
    # one it re-emits (not matched) reaches the sink once, as any warning does
    unmatched = failure_section(result, "test_careless_warning_not_matched")
    assert unmatched.count("[LEAK] operator: warning DeprecationWarning") == 1, unmatched
    assert "leakcheck: 1 forbidden hit of 1 secret(s)" in unmatched, unmatched
    assert "another occurrence" not in unmatched, unmatched


def test_the_patches_are_restored_and_hand_over_only_while_they_run() -> None:
    import warnings

    fill, leave = vars(ExceptionInfo)["fill_unfilled"], vars(WarningsRecorder)["__exit__"]
    check = LeakCheck(seed=1)
    with caught_by_pytest(check) as patched:
        assert patched == (True, True)
        with pytest.raises(ValueError):
            raise ValueError("inside")
        with pytest.warns(UserWarning):
            warnings.warn("inside", UserWarning, stacklevel=1)
    assert vars(ExceptionInfo)["fill_unfilled"] is fill
    assert vars(WarningsRecorder)["__exit__"] is leave
    with pytest.raises(KeyError):
        raise KeyError("after")
    with pytest.warns(UserWarning):
        warnings.warn("after", UserWarning, stacklevel=1)
    assert [type(e) for e in check._exceptions._exceptions] == [ValueError]
    assert [str(w.message) for w in check.warnings._caught] == ["inside"]


def test_the_patches_are_restored_when_the_test_raises() -> None:
    fill, leave = vars(ExceptionInfo)["fill_unfilled"], vars(WarningsRecorder)["__exit__"]
    with pytest.raises(RuntimeError), caught_by_pytest(LeakCheck(seed=1)):
        raise RuntimeError("the test failed")
    assert vars(ExceptionInfo)["fill_unfilled"] is fill
    assert vars(WarningsRecorder)["__exit__"] is leave


def test_a_pytest_without_the_method_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(ExceptionInfo, "fill_unfilled")
    with caught_by_pytest(LeakCheck(seed=1)) as patched:
        assert patched == (False, True)
        assert "fill_unfilled" not in vars(ExceptionInfo)
    assert "fill_unfilled" not in vars(ExceptionInfo)
