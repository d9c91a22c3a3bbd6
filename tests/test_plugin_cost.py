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
