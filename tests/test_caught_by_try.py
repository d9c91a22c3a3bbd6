"""An error a test catches with its own ``try``/``except`` was handed to it all the same
(``leakcheck/pytest_plugin/caught_try.py``).

Python 3.12 and later judge it (``sys.monitoring``); earlier ones cannot watch it and say
so in the summary, naming the tests. The suite runs on 3.11 (the recorded corpora's
Python): there the summary is what is checked, and on 3.12+ the judgement.
"""

from __future__ import annotations

import sys

import pytest
from conftest import failure_section, inner_outcomes, run_with_report, self_scan

from leakcheck.canaries import CanaryFactory

pytest_plugins = ["pytester"]

SEED = "caught-try-1"
WATCHED = sys.version_info >= (3, 12)

INNER = """
import pytest


class GatewayError(Exception):
    pass


def call(token, careful):
    # a gateway's error: raised below the test's frame
    raise GatewayError("auth failed" if careful else f"auth failed for {token}")


def careful_call(token):
    # a careful gateway: it catches its own error (the token in it) and hands on a clean one
    try:
        call(token, careful=False)
    except GatewayError:
        return {"ok": False, "code": "AUTH_FAILED"}


def test_a_careful_gateway_catches_its_own_error(leakcheck):
    token = leakcheck.secret("bearer")
    try:
        result = careful_call(token)
    except GatewayError:
        result = None
    leakcheck.expose(result)


def test_catches_the_gateways_error(leakcheck):
    token = leakcheck.secret("bearer")
    try:
        call(token, careful=False)
    except GatewayError as exc:
        assert "auth failed" in str(exc)
    leakcheck.expose({"ok": False})


def test_catches_a_careful_error(leakcheck):
    token = leakcheck.secret("bearer")
    try:
        call(token, careful=True)
    except GatewayError:
        pass
    leakcheck.expose({"ok": False})


def test_catches_its_own_error(leakcheck):
    token = leakcheck.secret("bearer")
    try:
        int(token)  # (the test's own line raised it: no caller was handed it)
    except ValueError:
        pass
    leakcheck.expose({"ok": False})


def test_catches_nothing(leakcheck):
    token = leakcheck.secret("bearer")
    with pytest.raises(GatewayError):
        call(token, careful=True)
    leakcheck.expose({"ok": False})
"""

CATCHING = (
    "test_a_careful_gateway_catches_its_own_error",
    "test_catches_the_gateways_error",
    "test_catches_a_careful_error",
)


def test_an_error_the_test_catches_itself_is_judged_or_said(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=INNER)
    result, data = run_with_report(pytester, SEED, "-v")
    shown = "\n".join(result.outlines + result.errlines)
    assert inner_outcomes(result) == {
        "test_a_careful_gateway_catches_its_own_error": "PASSED",
        "test_catches_the_gateways_error": "FAILED" if WATCHED else "PASSED",
        "test_catches_a_careful_error": "PASSED",
        "test_catches_its_own_error": "PASSED",
        "test_catches_nothing": "PASSED",
    }, shown
    said = [line for line in result.outlines if line.startswith("exceptions a test catches")]
    records = {r["test"].split("::")[-1]: r for r in data["tests"]}
    unwatched = {name for name, r in records.items() if r.get("catches_unjudged")}
    if WATCHED:
        failure = failure_section(result, "test_catches_the_gateways_error")
        assert "[LEAK] caller: exception that reached the test GatewayError" in failure, failure
        assert not said and not unwatched, (said, unwatched)
    else:
        # said, with every test that has an except clause (not the one with pytest.raises)
        assert unwatched == {*CATCHING, "test_catches_its_own_error"}, unwatched
        assert len(said) == 1 and "not judged in 4 test(s): Python 3." in said[0], said
        assert all(f"test_inner.py::{name}" in said[0] for name in unwatched), said
    secrets = [
        CanaryFactory(SEED, namespace=f"test_inner.py::{name}").secret("bearer")
        for name in inner_outcomes(result)
    ]
    self_scan(shown, secrets, "inner output")


def test_the_monitoring_tool_is_given_back() -> None:
    """(3.12+) The tool id taken while a test runs is free again after it, and the
    callback is gone: a debugger, coverage or a profiler may want it."""
    if not WATCHED:
        pytest.skip("sys.monitoring came in Python 3.12")
    from leakcheck.harness import LeakCheck
    from leakcheck.pytest_plugin.caught_try import _TOOL_IDS, caught_by_try, to_watch

    def test_body() -> None:
        try:
            raise_below()
        except RuntimeError:
            pass

    def raise_below() -> None:
        raise RuntimeError("below")

    class Item:
        obj = test_body

    before = [sys.monitoring.get_tool(t) for t in _TOOL_IDS]
    code, unwatched = to_watch(Item())
    assert code is test_body.__code__ and not unwatched
    with LeakCheck(seed=SEED, sinks=[]) as check, caught_by_try(check, code) as watched:
        assert watched
        test_body()
        assert check.caller_output_judged()  # (the exception was handed over)
    assert [sys.monitoring.get_tool(t) for t in _TOOL_IDS] == before


def test_leakchecks_own_functions_are_not_watched() -> None:
    """A function of leakcheck's own (a stage matrix's test) judges what it catches
    itself: neither watched nor said, though it has an ``except`` clause."""
    from leakcheck.pytest_plugin import caught
    from leakcheck.pytest_plugin.caught_try import to_watch

    class Item:
        obj = staticmethod(caught._matches)  # (``except Exception:`` in it)

    class Suites:
        @staticmethod
        def obj(token: str) -> int:
            try:
                return int(token)
            except ValueError:
                return 0

    assert to_watch(Item()) == (None, False)
    suites = to_watch(Suites())  # (a suite's: watched on 3.12+, said before)
    assert suites == ((Suites.obj.__code__, False) if WATCHED else (None, True)), suites
