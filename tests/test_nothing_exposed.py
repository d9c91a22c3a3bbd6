"""A test that made secrets and judged nothing caller-visible is said, never a silent pass.

Found trying the fixture as a newcomer: a test planted a canary, called the gateway and
asserted on its reply, but never passed the reply to ``leakcheck.expose``: the reply held
the token, nothing searched it, and the run was green with nothing to say so. Such a test
(nothing exposed, no exception reached it, nothing on stdout) is now named in the summary
and marked ``nothing_exposed`` in the JSON report; the test still passes (a test may judge
logs alone).
"""

from __future__ import annotations

import json

import pytest
from conftest import inner_outcomes

pytest_plugins = ["pytester"]

INNER = """
def gateway(token):
    return {"ok": False, "error": f"401 for {token}"}

def test_forgot_expose(leakcheck):
    result = gateway(leakcheck.secret("bearer"))
    assert result["ok"] is False

def test_exposed(leakcheck):
    leakcheck.expose({"ok": False})
    leakcheck.secret("bearer")

def test_printed(leakcheck):
    leakcheck.secret("bearer")
    print("tool said: no")

def test_raised(leakcheck):
    leakcheck.secret("bearer")
    raise RuntimeError("upstream said no")

def test_no_secret(leakcheck):
    pass
"""

LINE = "nothing caller-visible judged in"


@pytest.fixture
def inner(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_inner=INNER)
    return pytester


def test_a_test_that_judged_nothing_caller_visible_is_named(inner: pytest.Pytester) -> None:
    report = inner.path / "report.json"
    result = inner.runpytest("-p", "no:randomly", "-rA", f"--leakcheck-report={report}")
    outcomes = inner_outcomes(result)
    assert outcomes["test_forgot_expose"] == outcomes["test_exposed"] == "PASSED"
    assert outcomes["test_raised"] == "FAILED"
    (line,) = [line for line in result.outlines if LINE in line]
    assert line.startswith(f"{LINE} 1 test(s):")
    assert line.endswith("test_inner.py::test_forgot_expose")
    assert "leakcheck.expose(result)" in line
    records = {r["test"].split("::")[-1]: r for r in json.loads(report.read_text())["tests"]}
    assert records["test_forgot_expose"]["nothing_exposed"] is True
    for judged in ("test_exposed", "test_printed", "test_raised"):
        assert "nothing_exposed" not in records[judged], judged
    # (no secret of its own: judged for the earlier tests' only, never "nothing exposed")
    assert records["test_no_secret"]["secrets"] == []
    assert "nothing_exposed" not in records["test_no_secret"]


def test_many_are_counted_and_listed_under_verbose(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_many="""
import pytest

@pytest.mark.parametrize("n", range(5))
def test_forgot(n, leakcheck):
    leakcheck.secret("bearer")
"""
    )
    quiet = pytester.runpytest("-p", "no:randomly")
    (line,) = [line for line in quiet.outlines if LINE in line]
    assert line.startswith(f"{LINE} 5 test(s):")
    assert line.count("test_many.py::test_forgot[") == 3
    assert line.endswith("and 2 more (-v lists them)")
    verbose = pytester.runpytest("-p", "no:randomly", "-v")
    (line,) = [line for line in verbose.outlines if LINE in line]
    assert line.count("test_many.py::test_forgot[") == 5
    assert "more" not in line.rsplit(":", 1)[-1]


def test_a_test_that_opts_the_tool_response_out_is_not_named(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_logs_only="""
import pytest

@pytest.mark.leakcheck(skip_sinks={"tool response": "judges the gateway's logs only"})
def test_logs_only(leakcheck):
    leakcheck.secret("bearer")
"""
    )
    result = pytester.runpytest("-p", "no:randomly")
    assert not [line for line in result.outlines if LINE in line]
    assert any("opted out: test_logs_only.py::test_logs_only" in x for x in result.outlines)
