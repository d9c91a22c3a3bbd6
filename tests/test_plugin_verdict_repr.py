"""Our own verdict (a matrix failure, ``LeakError``) is a test's whole failure text: pytest
is not asked to format a traceback of it (parsed from the source of every frame, 34 ms a
failure in a matrix), and a test's own failure is formatted as before."""

from __future__ import annotations

import pytest
from conftest import QUIET_INNER_ARGS

pytest_plugins = ["pytester"]

CONFTEST = """
import pytest

FORMATTED = []
ORIGINAL = pytest.Function.repr_failure


def counting(self, excinfo, *args, **kwargs):
    FORMATTED.append(self.name)
    return ORIGINAL(self, excinfo, *args, **kwargs)


pytest.Function.repr_failure = counting


def pytest_runtest_teardown(item):
    # the plugin's replacement is gone once the call's report is made
    assert "repr_failure" not in vars(item), item.name


def pytest_sessionfinish(session):
    print("\\nformatted:", ",".join(FORMATTED) or "none")
"""

TESTS = """
from leakcheck.harness import LeakError


def test_verdict(leakcheck):
    leakcheck.secret("bearer")
    raise LeakError("leakcheck: the verdict, masked already")


def test_own_assertion(leakcheck):
    leakcheck.secret("bearer")
    assert 1 + 1 == 3


def test_verdict_without_secrets(leakcheck):
    raise LeakError("nothing registered: formatted as any failure")
"""


def test_a_verdict_is_not_formatted_by_pytest(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_verdicts=TESTS)
    result = pytester.runpytest_inprocess(*QUIET_INNER_ARGS, "-rA")
    result.assert_outcomes(failed=3)
    out = result.stdout.str()
    formatted = next(line for line in out.splitlines() if line.startswith("formatted:"))
    assert formatted == "formatted: test_own_assertion,test_verdict_without_secrets"
    # the verdict's text is the failure; no frame of the test around it
    assert "leakcheck: the verdict, masked already" in out
    assert 'raise LeakError("leakcheck: the verdict' not in out
    assert "assert (1 + 1) == 3" in out  # the test's own failure, as pytest shows it
    assert "def test_verdict_without_secrets" in out
