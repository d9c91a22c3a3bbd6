"""Report records are masked once, when they leave the process (issue 13's plugin cost):
an xdist worker's output and the JSON report are masked at the session's end with every
secret the process has seen, and what the summary prints of records goes through the
masked terminal. Masking each record as it was written, too, was 0.16 ms a test.

Assertions never show a secret's value: a membership test is reduced to a bool first.
"""

from __future__ import annotations

import json

import pytest

from leakcheck import CanaryFactory
from leakcheck.masking import SessionMasker, mask_strings

pytest_plugins = ["pytester"]

ARGS = ("-p", "no:randomly", "-p", "no:cacheprovider")

CONFTEST = """
import leakcheck.masking as masking

CALLS = []
_SAVED = masking.mask_strings


def counted(value, mask):
    CALLS.append(1)
    return _SAVED(value, mask)


masking.mask_strings = counted


def pytest_unconfigure(config):
    masking.mask_strings = _SAVED
"""

SUITE = """
import conftest

def test_fails_showing_its_token(leakcheck):
    token = leakcheck.secret("bearer")
    with open("token.txt", "w") as f:
        f.write(token)
    assert token == "nope"

def test_clean(leakcheck):
    leakcheck.secret("api_key")

def test_after():
    print("RECORDS MASKED DURING THE SESSION", len(conftest.CALLS))
"""


def _run(pytester: pytest.Pytester, *extra: str) -> tuple[pytest.RunResult, str, str]:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_records=SUITE)
    result = pytester.runpytest_subprocess(*ARGS, "-s", "--leakcheck-report=report.json", *extra)
    report = (pytester.path / "report.json").read_text(encoding="utf-8")
    token = (pytester.path / "token.txt").read_text(encoding="utf-8")
    return result, report, token


def test_records_are_not_masked_as_they_are_written(pytester: pytest.Pytester) -> None:
    result, _, _ = _run(pytester)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*RECORDS MASKED DURING THE SESSION 0*"])


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_a_record_showing_a_secret_is_masked_in_the_report(
    pytester: pytest.Pytester, workers: tuple[str, ...]
) -> None:
    """The failing test's reason quotes its assertion, which shows the token: the report
    (written by the controller under xdist, which knows no secret) shows it masked."""
    result, report, token = _run(pytester, *workers)
    result.assert_outcomes(passed=2, failed=1)
    shown = token in report
    assert not shown, "the JSON report shows the token"
    (failed,) = [t for t in json.loads(report)["tests"] if t["outcome"] == "failed"]
    (own,) = [line for line in failed["reason"].splitlines() if line.startswith("test failed:")]
    assert own.startswith("test failed: AssertionError: assert '\u00abcanary:bearer"), own


def test_one_leaky_record_leaves_the_others_as_they_are() -> None:
    """At the session's end one record that shows a secret is masked string by string;
    the others are looked at whole and kept as they are (the same objects)."""
    masker = SessionMasker()
    token = CanaryFactory("records-mask").secret("api_key")
    masker.add([token])
    records = [{"test": f"t.py::test_{n}", "secrets": [{"id": "api_key#1"}]} for n in range(50)]
    records[7] = {"test": "t.py::test_7", "reason": f"test failed: assert {token.value!r}"}
    document = {"tool": "leakcheck", "tests": records, "opt_outs": []}
    masked = mask_strings(document, masker.mask)
    assert masked["tests"][7]["reason"].startswith("test failed: assert '\u00abcanary:")
    kept = [n for n in range(50) if masked["tests"][n] is records[n]]
    assert kept == [n for n in range(50) if n != 7]
    assert masked["opt_outs"] is document["opt_outs"]
