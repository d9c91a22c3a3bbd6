"""The ``leakcheck`` fixture takes its test from the run protocol under way, not from
``request`` (pytest 9 builds a fixture definition for ``request`` at every request, its
signature read with ``inspect``: 0.15 to 0.28 ms a test, issue 13). Whatever way it is asked for,
it must be the test's own check: its node id, its marker's options, its verdict."""

from __future__ import annotations

import threading

import pytest

from leakcheck import pytest_plugin as plugin
from leakcheck.pytest_plugin import leakcheck as leakcheck_fixture

pytest_plugins = ["pytester"]

ARGS = ("-p", "no:randomly", "-p", "no:cacheprovider")

SUITE = """
import logging
import pytest
from leakcheck.pytest_plugin import CHECK

def own(request, check):
    # the check the plugin judges this test by is the one the test was given
    return request.node.stash[CHECK] is check

@pytest.mark.leakcheck(skip_sinks={"warning": "not this one"})
def test_marker_is_this_tests(leakcheck, request):
    assert "warning" in leakcheck.skip_sinks
    print("NAMESPACE", own(request, leakcheck))

def test_asked_for_late(request):
    check = request.getfixturevalue("leakcheck")
    assert "warning" not in check.skip_sinks
    print("NAMESPACE", own(request, check))
    token = check.secret("bearer")
    logging.getLogger("app").error("late %s", token)

@pytest.fixture
def gateway(leakcheck):
    return leakcheck

def test_through_a_fixture(gateway, leakcheck, request):
    assert gateway is leakcheck
    print("NAMESPACE", own(request, leakcheck))
"""


def test_the_fixture_is_the_running_tests_however_it_is_asked_for(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_items=SUITE)
    result = pytester.runpytest(*ARGS, "-s")
    result.assert_outcomes(passed=2, failed=1)
    assert result.stdout.str().count("NAMESPACE True") == 3
    assert "NAMESPACE False" not in result.stdout.str()
    # the late check judged its own test: the token it planted, logged there, failed it
    result.stdout.fnmatch_lines(["*FAILED*test_asked_for_late*"])


INNER = """
from leakcheck.pytest_plugin import CHECK

def test_inner(leakcheck, request):
    print("INNER", request.node.stash[CHECK] is leakcheck)
"""

OUTER = '''
pytest_plugins = ["pytester"]

from leakcheck.pytest_plugin import CHECK

def test_outer(leakcheck, pytester, request):
    pytester.makepyfile(test_nested="""{inner}""")
    inner = pytester.runpytest_inprocess("-p", "no:randomly", "-s")
    inner.assert_outcomes(passed=1)
    assert "INNER True" in inner.stdout.str()
    # after the inner session, the outer test is the one running again
    print("OUTER", request.node.stash[CHECK] is leakcheck)
'''


def test_a_session_run_inside_a_test_uses_its_own_tests(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_outer=OUTER.format(inner=INNER))
    result = pytester.runpytest(*ARGS, "-s", "-p", "pytester")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*OUTER True*"])


def test_asked_for_outside_a_run_it_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    """No run protocol under way (a plugin that sets fixtures up by hand): a clear
    failure, not some other test's check."""
    monkeypatch.setattr(plugin._RUNNING, "items", [])
    with pytest.raises(pytest.fail.Exception, match="asked for outside a test's run"):
        plugin._running_test()


def test_another_threads_test_is_not_this_threads() -> None:
    """This test's protocol runs in the main thread; a thread of a runner that ran tests
    in threads would run its own. From another thread there is no test of its own."""
    assert plugin._running_test().name == "test_another_threads_test_is_not_this_threads"
    seen: list[str] = []

    def ask() -> None:
        try:
            plugin._running_test()
        except pytest.fail.Exception as exc:
            seen.append(str(exc))

    thread = threading.Thread(target=ask)
    thread.start()
    thread.join(timeout=0.5)
    assert len(seen) == 1 and "in this thread" in seen[0]


def test_the_fixture_asks_for_no_request() -> None:
    """The cost this file is about: a ``request`` argument would bring it back."""
    function = getattr(leakcheck_fixture, "_get_wrapped_function", lambda: leakcheck_fixture)()
    assert function.__code__.co_argcount == 0
