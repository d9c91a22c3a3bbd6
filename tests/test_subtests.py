"""Subtests: pytest's ``subtests`` fixture and ``unittest``'s ``subTest``.

Found trying the fixture as a newcomer on pytest 9, whose ``subtests`` fixture captures a
subtest's output apart from the test's: a gateway that printed its token inside a subtest
passed green (the verdict reads the test's captured sections, and the subtest's never
reach them), and under ``pytest-xdist`` the controller printed the token raw in the
subtest's "Captured stdout call" (the section is added to the subtest's report after
``pytest_runtest_makereport``, where reports are masked). And each subtest's report was
given a verdict of its own while the test still ran: its findings came twice, the JSON
report held two records of the test, and the summary counted the subtest as a test whose
tool response was never searched.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest
from conftest import failure_section, run_with_report, self_scan

from leakcheck.canaries import CanaryFactory
from leakcheck.pytest_plugin.session import _subtest_description

pytest_plugins = ["pytester"]

#: pytest's own ``subtests`` fixture came in pytest 9 (before: the ``pytest-subtests`` plugin)
needs_subtests = pytest.mark.skipif(
    importlib.util.find_spec("_pytest.subtests") is None,
    reason="pytest's subtests fixture came in pytest 9",
)

SEED = "subtests-1"

INNER = """
import logging
import unittest

import pytest


def test_prints_in_a_subtest(leakcheck, subtests):
    token = leakcheck.secret("bearer")
    with subtests.test(msg="chatty"):
        print(f"using token {token}")
    leakcheck.expose({"ok": False})


def test_raises_in_a_subtest(leakcheck, subtests):
    token = leakcheck.secret("bearer")
    with subtests.test(msg="calls"):
        raise RuntimeError(f"auth failed for {token}")
    leakcheck.expose({"ok": False})


def test_careful_subtests(leakcheck, subtests):
    leakcheck.secret("bearer")
    for n in range(2):
        with subtests.test(msg="careful", n=n):
            print("calling the upstream")
            logging.getLogger("gw").warning("auth failed")
    leakcheck.expose({"ok": False})


def test_a_failing_subtest_prints_its_token(leakcheck, subtests):
    token = leakcheck.secret("bearer")
    with subtests.test(msg="chatty"):
        print(f"using token {token}")
        assert False, "the upstream refused"
    leakcheck.expose({"ok": False})


class TestUnittest(unittest.TestCase):
    @pytest.fixture(autouse=True)
    def _leakcheck(self, leakcheck):
        self.leakcheck = leakcheck

    def test_raises_in_a_subtest(self):
        token = self.leakcheck.secret("bearer")
        with self.subTest(op="call"):
            raise RuntimeError(f"auth failed for {token}")
        self.leakcheck.expose({"ok": False})

    def test_careful_subtest(self):
        self.leakcheck.secret("bearer")
        with self.subTest(op="call"):
            self.assertTrue(True)
        self.leakcheck.expose({"ok": False})
"""

TESTS = {
    "test_prints_in_a_subtest": "FAILED",
    "test_raises_in_a_subtest": "FAILED",
    "test_careful_subtests": "PASSED",
    "test_a_failing_subtest_prints_its_token": "FAILED",
    "TestUnittest::test_raises_in_a_subtest": "FAILED",
    "TestUnittest::test_careful_subtest": "PASSED",
}


def _canaries() -> list:
    return [
        CanaryFactory(SEED, namespace=f"test_inner.py::{test}").secret("bearer") for test in TESTS
    ]


def _outcomes(result: pytest.RunResult) -> dict[str, str]:
    """The tests' own outcomes (a subtest's line is SUBFAILED/SUBPASSED, not these)."""
    found = {}
    for line in result.outlines:
        word, _, rest = line.partition(" ")
        if word in ("PASSED", "FAILED", "ERROR") and "::" in rest:
            found[rest.split(" ")[0].split("::", 1)[1]] = word
    return found


@needs_subtests
@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_what_a_subtest_prints_or_raises_is_the_tests_and_is_judged_once(
    pytester: pytest.Pytester, workers: tuple[str, ...]
) -> None:
    pytester.makepyfile(test_inner=INNER)
    result, data = run_with_report(pytester, SEED, *workers)
    assert _outcomes(result) == TESTS, result.stdout.str()
    if not workers:  # (xdist prints no failure section by test name alone)
        printed = failure_section(result, "test_prints_in_a_subtest")
        assert "[LEAK] caller: stdout of subtest [chatty]  form raw" in printed, printed
        raised = failure_section(result, "test_raises_in_a_subtest")
        assert "[LEAK] caller: exception that reached the test RuntimeError" in raised, raised
    # one record a test, whatever its subtests; none for a subtest of its own
    records = [record["test"].split("::", 1)[1] for record in data["tests"]]
    assert sorted(records) == sorted(TESTS), records
    by_test = {record["test"].split("::", 1)[1]: record for record in data["tests"]}
    assert by_test["test_prints_in_a_subtest"]["forbidden"] == 1
    assert "nothing caller-visible judged" not in result.stdout.str()
    assert "6 test(s) checked, 4 with forbidden hits" in result.stdout.str()
    secrets = _canaries()
    # the failing subtest's captured stdout is shown, masked (by the worker, under xdist)
    assert "using token «canary:bearer:raw»" in result.stdout.str()
    self_scan("\n".join(result.outlines + result.errlines), secrets, "inner output")
    report = pytester.path / "leakcheck-report.json"
    self_scan(report.read_text(encoding="utf-8"), secrets, "JSON report")


KWARGS = """
def test_names_its_subtest_with_the_token(leakcheck, subtests):
    token = leakcheck.secret("bearer")
    with subtests.test(msg=f"with {token}", token=token):
        assert False, "the upstream refused"
    leakcheck.expose({"ok": False})
"""


@needs_subtests
@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_a_subtests_message_and_arguments_are_masked_where_they_are_shown(
    pytester: pytest.Pytester, workers: tuple[str, ...]
) -> None:
    """The subtest's report head shows its ``msg`` and keyword arguments: under xdist the
    controller, which knows no secret, prints them (the summary line, JUnit)."""
    pytester.makepyfile(test_inner=KWARGS)
    junit = pytester.path / "junit.xml"
    result, _ = run_with_report(pytester, SEED, *workers, f"--junitxml={junit}")
    subfailed = [line for line in result.outlines if line.startswith("SUBFAILED")]
    assert subfailed and "«canary:bearer:raw»" in subfailed[0], result.stdout.str()
    token = CanaryFactory(
        SEED, namespace="test_inner.py::test_names_its_subtest_with_the_token"
    ).secret("bearer")
    self_scan("\n".join(result.outlines + result.errlines), [token], "inner output")
    self_scan(junit.read_text(encoding="utf-8"), [token], "JUnit XML")


class _Report:
    when, context = "call", None


def test_a_subtest_report_is_told_by_either_spelling() -> None:
    """pytest 9's ``SubtestReport._sub_test_description`` and the ``pytest-subtests``
    plugin's ``SubTestReport.sub_test_description`` (pytest 8; tried in a venv of its
    own: a subtest's print passed green until both were read); a test's own report,
    which has neither, is none."""
    nine: Any = type("SubtestReport", (_Report,), {"_sub_test_description": lambda _: "[a]"})
    eight: Any = type("SubTestReport", (_Report,), {"sub_test_description": lambda _: "[b]"})
    assert _subtest_description(nine()) == "[a]"
    assert _subtest_description(eight()) == "[b]"
    assert _subtest_description(_Report()) is None  # type: ignore[arg-type]
