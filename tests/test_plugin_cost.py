"""What the plugin leaves undone when nothing would show it (measured in
``bench/plugin_overhead.py``): each shortcut keeps what a report or the summary shows."""

from __future__ import annotations

import json

import pytest

pytest_plugins = ["pytester"]

ARGS = ("-p", "no:randomly", "-p", "no:cacheprovider", "-s")

SUITE = """
import logging
from leakcheck.pytest_plugin.session import SESSION

def test_allowed(leakcheck):
    host = leakcheck.secret("hostname")
    logging.getLogger("app").warning("connecting to %s", host)

def test_after(request):
    records = request.config.stash[SESSION].records
    print("FINDINGS KEPT", [len(record["findings"]) for record in records])
"""


def test_allowed_findings_are_written_up_only_for_a_report(pytester: pytest.Pytester) -> None:
    """An allowed finding (a host name canary in an operator log) is made into a report
    entry, its masked excerpt included, only when a JSON report will show it."""
    pytester.makepyfile(test_allowed=SUITE)
    quiet = pytester.runpytest(*ARGS)
    quiet.assert_outcomes(passed=2)
    quiet.stdout.fnmatch_lines(["*FINDINGS KEPT [[]0[]]*", "*1 test(s) checked, 0 with forbidden*"])
    reported = pytester.runpytest(*ARGS, "--leakcheck-report=report.json")
    reported.assert_outcomes(passed=2)
    reported.stdout.fnmatch_lines(["*FINDINGS KEPT [[]2[]]*"])
    document = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    findings = [f for test in document["tests"] for f in test["findings"]]
    assert {(f["sink"], f["allowed"]) for f in findings} == {
        ("log record", True),
        ("stderr", True),
    }


LOADED = """
import sys

def pytest_sessionfinish(session):
    heavy = ("harness", "faults", "capture", "placements", "verdict", "records", "judge",
             "masking", "detect", "decode", "engine")
    loaded = sorted(name for name in heavy if any(
        module == f"leakcheck.{name}" or module == f"leakcheck.pytest_plugin.{name}"
        for module in sys.modules))
    print("HEAVY LOADED", loaded)
"""


@pytest.mark.parametrize(
    ("suite", "loaded"),
    [
        ("def test_plain():\n    assert 1 + 1 == 2\n", "[[][]]"),
        (
            "def test_plain():\n    pass\n\ndef test_checked(leakcheck):\n"
            "    leakcheck.secret('bearer')\n",
            "[[]'capture', 'decode', 'detect', 'engine', 'faults', 'harness', 'judge', "
            "'masking', 'placements', 'records', 'verdict'[]]",
        ),
    ],
    ids=["fixture never asked for", "fixture asked for"],
)
def test_a_session_that_never_asks_for_the_fixture_never_imports_the_harness(
    pytester: pytest.Pytester, suite: str, loaded: str
) -> None:
    """pytest loads the plugin in every run of every suite of a virtualenv that has it:
    the harness, its sinks, faults and transports, the verdict, the session masker and
    the scanner (some 20 ms of the plugin's 29 ms import) wait for the first test that
    asks for the fixture or registers a secret. In a fresh process: this one imported
    them all long ago."""
    pytester.makeconftest(LOADED)
    pytester.makepyfile(test_lazy=suite)
    result = pytester.runpytest_subprocess(*ARGS)
    result.assert_outcomes(passed=suite.count("def test_"))
    result.stdout.fnmatch_lines([f"*HEAVY LOADED {loaded}"])
