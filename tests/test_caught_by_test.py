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
from leakcheck.pytest_plugin.caught import caught_by_test

pytest_plugins = ["pytester"]

#: the two gateways of the inner tests: the token in the error, or not
GATEWAY = """
class GatewayError(Exception):
    pass

def careless(token):
    raise GatewayError(f"upstream 401 with key {token}")

def careful(token):
    raise GatewayError("upstream refused the credential (AUTH_FAILED)")
"""

INNER = (
    GATEWAY
    + """
import pytest

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
)


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
    enter = vars(WarningsRecorder)["__enter__"]
    check = LeakCheck(seed=1)
    with caught_by_test(check) as patched:
        assert patched == (True, True)
        with pytest.raises(ValueError):
            raise ValueError("inside")
        with pytest.warns(UserWarning):
            warnings.warn("inside", UserWarning, stacklevel=1)
    assert vars(ExceptionInfo)["fill_unfilled"] is fill
    assert vars(WarningsRecorder)["__exit__"] is leave
    assert vars(WarningsRecorder)["__enter__"] is enter
    with pytest.raises(KeyError):
        raise KeyError("after")
    with pytest.warns(UserWarning):
        warnings.warn("after", UserWarning, stacklevel=1)
    assert [type(e) for e in check._exceptions._exceptions] == [ValueError]
    assert [str(w.message) for w in check.warnings._caught] == ["inside"]


def test_the_patches_are_restored_when_the_test_raises() -> None:
    fill, leave = vars(ExceptionInfo)["fill_unfilled"], vars(WarningsRecorder)["__exit__"]
    enter = vars(WarningsRecorder)["__enter__"]
    with pytest.raises(RuntimeError), caught_by_test(LeakCheck(seed=1)):
        raise RuntimeError("the test failed")
    assert vars(ExceptionInfo)["fill_unfilled"] is fill
    assert vars(WarningsRecorder)["__exit__"] is leave
    assert vars(WarningsRecorder)["__enter__"] is enter


def test_a_pytest_without_the_method_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(ExceptionInfo, "fill_unfilled")
    with caught_by_test(LeakCheck(seed=1)) as patched:
        assert patched == (False, True)
        assert "fill_unfilled" not in vars(ExceptionInfo)
    assert "fill_unfilled" not in vars(ExceptionInfo)


# --- recorders: ``recwarn`` and a fixture's own, before or after the fixture ---------------

RECORDERS = """
import logging, warnings
import pytest

def test_recwarn_after(leakcheck, recwarn):
    token = leakcheck.secret("bearer")
    warnings.warn(f"retrying with {token}")
    leakcheck.expose({"ok": True})
    assert len(recwarn) == 1

def test_recwarn_before(recwarn, leakcheck):
    token = leakcheck.secret("bearer")
    warnings.warn(f"retrying with {token}")
    leakcheck.expose({"ok": True})
    assert len(recwarn) == 1, "the recorder saw nothing while the test ran"

def test_recwarn_before_clean(recwarn, leakcheck):
    leakcheck.secret("bearer")
    warnings.warn("retrying")
    leakcheck.expose({"ok": True})
    assert [str(w.message) for w in recwarn] == ["retrying"]

def test_recwarn_after_clean(leakcheck, recwarn):
    leakcheck.secret("bearer")
    warnings.warn("retrying")
    leakcheck.expose({"ok": True})
    assert [str(w.message) for w in recwarn] == ["retrying"]

@pytest.fixture
def recorded():
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("always")
        yield log

def test_own_recorder_before(recorded, leakcheck):
    leakcheck.secret("bearer")
    warnings.warn("retrying", RuntimeWarning)
    leakcheck.expose({"ok": True})
    assert [w.category for w in recorded] == [RuntimeWarning]

@pytest.fixture
def warnings_logged():
    logging.captureWarnings(True)
    yield
    logging.captureWarnings(False)

def test_captured_warnings_log_as_raised(warnings_logged, leakcheck, caplog):
    leakcheck.secret("bearer")
    warnings.warn("retrying", RuntimeWarning)
    leakcheck.expose({"ok": True})
    assert [r.name for r in caplog.records] == ["py.warnings"]
"""


def test_a_recorder_sees_warnings_as_raised_and_recwarn_is_judged(
    pytester: pytest.Pytester,
) -> None:
    """Found trying the fixture as a newcomer: a warning held by ``recwarn`` (asked for
    after the fixture) passed with the token in it, and ``recwarn`` asked for before the
    fixture saw no warning at all while the test ran (``assert len(recwarn) == 1`` failed
    under the plugin alone); a warning ``logging.captureWarnings`` routes to a log became
    a log line after the test."""
    pytester.makepyfile(test_inner=RECORDERS)
    result = pytester.runpytest("-p", "no:randomly", "-rA", "-W", "always")
    assert inner_outcomes(result) == {
        "test_recwarn_after": "FAILED",
        "test_recwarn_before": "FAILED",
        "test_recwarn_before_clean": "PASSED",
        "test_recwarn_after_clean": "PASSED",
        "test_own_recorder_before": "PASSED",
        "test_captured_warnings_log_as_raised": "PASSED",
    }
    for test in ("test_recwarn_after", "test_recwarn_before"):
        failure = failure_section(result, test)
        assert "[LEAK] operator: warning UserWarning" in failure, failure
        assert "leakcheck: 1 forbidden hit of 1 secret(s)" in failure, failure
        # the test's own assertion held: only leakcheck failed it
        assert "the recorder saw nothing" not in failure, failure


def _warn(text: str) -> None:
    import warnings

    warnings.warn(text, UserWarning, stacklevel=1)


def test_a_warning_goes_on_as_raised_and_is_masked_in_place_at_the_end() -> None:
    """Handed on to a recorder as it is raised, and masked in the recorder's copy when the
    sink stops, with every secret known then (one registered after the warning too)."""
    import warnings

    from leakcheck.capture import WarningsSink

    known = ["tok-AAAA"]

    def mask(text: str) -> str:
        for secret in known:
            text = text.replace(secret, "«masked»")
        return text

    sink = WarningsSink(mask)
    with warnings.catch_warnings(record=True) as outer:
        warnings.simplefilter("always")
        sink.start()
        _warn("first tok-AAAA")
        _warn("second tok-BBBB")
        assert len(outer) == 2  # (seen while the test runs)
        known.append("tok-BBBB")
        sink.stop()
    assert [str(w.message) for w in outer] == ["first «masked»", "second «masked»"]
    # the sink judges the warnings as raised
    assert [text for *_, text in ((c.sink, c.path, c.text) for c in sink.collect())] == [
        "UserWarning: first tok-AAAA",
        "UserWarning: second tok-BBBB",
    ]


def test_where_warnings_record_elsewhere_they_go_on_at_the_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A Python whose ``catch_warnings`` records other than through ``_showwarnmsg_impl``
    (context-aware warnings): each warning is still handed on once, when the sink stops."""
    import warnings

    from leakcheck.capture import WarningsSink

    class Elsewhere(warnings.catch_warnings):
        def __enter__(self):  # type: ignore[no-untyped-def]
            log = super().__enter__()
            warnings._showwarnmsg_impl = lambda msg: log.append(msg)  # type: ignore[attr-defined]
            return log

    sink = WarningsSink(lambda text: text.replace("tok-AAAA", "«masked»"))
    with warnings.catch_warnings(record=True) as outer:
        warnings.simplefilter("always")
        monkeypatch.setattr(warnings, "catch_warnings", Elsewhere)
        sink.start()
        _warn("first tok-AAAA")
        assert outer == []
        sink.stop()
        monkeypatch.undo()
    assert [str(w.message) for w in outer] == ["first «masked»"]


# --- unittest's own: assertRaises, assertRaisesRegex, assertWarns -----------------------------

UNITTEST = (
    GATEWAY
    + """
import unittest, warnings
import pytest

class GatewayTests(unittest.TestCase):
    @pytest.fixture(autouse=True)
    def _leakcheck(self, leakcheck):
        self.lc = leakcheck

    def test_careless(self):
        with self.assertRaises(GatewayError):
            careless(self.lc.secret("bearer"))

    def test_careless_regex_call_form(self):
        self.assertRaisesRegex(GatewayError, "401", careless, self.lc.secret("bearer"))

    def test_careful(self):
        with self.assertRaisesRegex(GatewayError, "AUTH_FAILED"):
            careful(self.lc.secret("bearer"))

    def test_careless_warns_unmatched(self):
        token = self.lc.secret("bearer")
        with self.assertWarns(UserWarning):
            warnings.warn("something else", UserWarning)
            warnings.warn(f"token {token} expires", DeprecationWarning)
        self.lc.expose({"ok": True})

    def test_careful_warns(self):
        self.lc.secret("bearer")
        with self.assertWarns(DeprecationWarning):
            warnings.warn("the credential expires in 2 days", DeprecationWarning)
        self.lc.expose({"ok": True})
"""
)


def test_what_a_test_case_catches_is_judged(pytester: pytest.Pytester) -> None:
    """Found trying the fixture in a ``unittest.TestCase`` (an autouse fixture handing it
    to the case): ``with self.assertRaises(GatewayError)`` caught the error holding the
    token and the test passed, as ``pytest.raises`` did before; ``assertWarns`` swallowed
    a warning holding it (even one it did not match)."""
    pytester.makepyfile(test_inner=UNITTEST)
    result = pytester.runpytest("-p", "no:randomly", "-rA")
    assert inner_outcomes(result) == {
        "test_careless": "FAILED",
        "test_careless_regex_call_form": "FAILED",
        "test_careful": "PASSED",
        "test_careless_warns_unmatched": "FAILED",
        "test_careful_warns": "PASSED",
    }
    failure = failure_section(result, "GatewayTests.test_careless")
    assert "[LEAK] caller: exception that reached the test GatewayError" in failure, failure
    warned = failure_section(result, "GatewayTests.test_careless_warns_unmatched")
    assert "[LEAK] operator: warning DeprecationWarning" in warned, warned
    assert "nothing caller-visible judged" not in result.stdout.str()


def test_unittest_patches_are_restored() -> None:
    import unittest.case

    raises_exit = vars(unittest.case._AssertRaisesContext)["__exit__"]
    warns_exit = vars(unittest.case._AssertWarnsContext)["__exit__"]
    check = LeakCheck(seed=1)
    with caught_by_test(check):
        with unittest.TestCase().assertRaises(ValueError):
            raise ValueError("inside")
    with unittest.TestCase().assertRaises(KeyError):
        raise KeyError("after")
    assert vars(unittest.case._AssertRaisesContext)["__exit__"] is raises_exit
    assert vars(unittest.case._AssertWarnsContext)["__exit__"] is warns_exit
    assert [type(e) for e in check._exceptions._exceptions] == [ValueError]


PRINTED = """
import warnings

def test_warns(leakcheck):
    token = leakcheck.secret("bearer")
    warnings.warn(f"token {token} expires in 2 days", UserWarning)
    leakcheck.expose({"ok": True})
"""


def test_a_warning_nothing_records_is_printed_masked(pytester: pytest.Pytester) -> None:
    """Without pytest's warnings plugin nothing records a warning: the sink hands it on to
    Python's own printer, on stderr, as it is raised; under ``-s`` that is the terminal,
    so it goes on masked (a recorder's copy is masked when the sink stops)."""
    from conftest import self_scan

    from leakcheck import CanaryFactory

    pytester.makepyfile(test_inner=PRINTED)
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "-p", "no:warnings", "-s", "--leakcheck-seed=printed-1"
    )
    result.assert_outcomes(failed=1)
    output = "\n".join(result.outlines + result.errlines)
    assert "token «canary:bearer:raw» expires in 2 days" in output, output
    token = CanaryFactory("printed-1", namespace="test_inner.py::test_warns").secret("bearer")
    self_scan(output, [token], "inner output")


def test_a_warning_category_named_after_the_token_is_a_leak() -> None:
    """Python prints ``file:line: Category: message``: a category made at run time and
    named after the token (a class per upstream key) passed, its message clean."""
    import warnings

    from leakcheck.capture import WarningsSink
    from leakcheck.harness import LeakCheck

    with warnings.catch_warnings(record=True):  # (what the sink hands on, kept here)
        warnings.simplefilter("always")
        with LeakCheck(seed="category", sinks=[WarningsSink()]) as check:
            token = check.secret("bearer")
            warnings.warn("upstream slow", type(token, (UserWarning,), {}), stacklevel=1)
        assert {leak.finding.form for leak in check.violations()} == {"raw"}
        with LeakCheck(seed="category", sinks=[WarningsSink()]) as check:
            check.secret("bearer")
            category = type("UpstreamSlow", (UserWarning,), {})
            warnings.warn("upstream slow", category, stacklevel=1)
        assert check.violations() == []


CATEGORY_TESTS = """
import warnings

def test_warns_with_a_category_named_after_its_token(leakcheck):
    token = leakcheck.secret("bearer")
    warnings.warn("upstream slow", type(token, (UserWarning,), {}))
"""


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_a_category_named_after_a_token_reaches_no_output(
    pytester: pytest.Pytester, workers: tuple[str, ...]
) -> None:
    """pytest's warnings summary prints a warning's category, and xdist sends its name to
    the controller, which could not import it: an INTERNALERROR quoting the token. The
    warning reaches pytest as a ``UserWarning`` with its text masked; the test fails."""
    from conftest import self_scan

    from leakcheck.canaries import CanaryFactory

    pytester.makepyfile(test_inner=CATEGORY_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--leakcheck-seed=cat-1", *workers)
    text = "\\n".join(result.outlines + result.errlines)
    assert "INTERNALERROR" not in text, text
    result.assert_outcomes(failed=1)
    namespace = "test_inner.py::test_warns_with_a_category_named_after_its_token"
    self_scan(text, [CanaryFactory("cat-1", namespace=namespace).secret("bearer")], "output")
