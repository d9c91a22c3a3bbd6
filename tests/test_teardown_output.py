"""What a test's teardown prints and logs is judged as its call's output is.

Found trying the fixture as a newcomer: a gateway fixture that logged "closing session for
<token>" when it tore down passed green. The verdict is given at the end of the call; the
teardown's output reached pytest's report sections, masked, and nothing searched it. The
teardown report now fails (pytest's "error") on a forbidden hit of the test's secrets or
an earlier test's there.
"""

from __future__ import annotations

import pytest
from conftest import failure_section, inner_outcomes, run_with_report, self_scan

from leakcheck.canaries import CanaryFactory

pytest_plugins = ["pytester"]

SEED = "teardown-1"

INNER = """
import logging
import pytest

log = logging.getLogger("gw")
KEPT = {}

@pytest.fixture
def careless(leakcheck):
    token = leakcheck.secret("bearer")
    yield token
    log.warning("closing session for %s", token)

@pytest.fixture
def careful(leakcheck):
    token = leakcheck.secret("bearer")
    KEPT["token"] = token
    yield token
    log.warning("closing session")
    print("closed")

@pytest.fixture
def host_in_log(leakcheck):
    host = leakcheck.secret("hostname")
    yield host
    log.warning("disconnected from %s", host)

@pytest.fixture
def prints_the_kept_token(leakcheck):
    leakcheck.secret("bearer")
    yield
    print("flushing", KEPT["token"])

@pytest.fixture
def structured(leakcheck):
    token = leakcheck.secret("bearer")
    audit = logging.getLogger("gw.audit")
    audit.propagate = False  # (its own handler: pytest's log capture never sees it)
    handler = logging.StreamHandler(open("audit.log", "w"))
    handler.setFormatter(logging.Formatter("%(message)s %(headers)s"))
    audit.addHandler(handler)
    yield token
    audit.warning("session closed", extra={"headers": {"Authorization": f"Bearer {token}"}})
    audit.removeHandler(handler)
    handler.close()

def test_structured(structured, leakcheck):
    leakcheck.expose({"ok": True})

def test_call_leaks_teardown_clean(careful, leakcheck):
    log.warning("calling with %s", careful)
    leakcheck.expose({"ok": True})

def test_careless(careless, leakcheck):
    leakcheck.expose({"ok": True})

def test_careful(careful, leakcheck):
    leakcheck.expose({"ok": True})

def test_host_in_log(host_in_log, leakcheck):
    leakcheck.expose({"ok": True})

def test_prints_the_kept_token(prints_the_kept_token, leakcheck):
    leakcheck.expose({"ok": True})
"""


def test_what_a_teardown_prints_is_judged(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=INNER)
    result, data = run_with_report(pytester, SEED)
    assert inner_outcomes(result) == {
        "test_careless": "ERROR",
        "test_careful": "PASSED",
        "test_host_in_log": "PASSED",
        "test_prints_the_kept_token": "ERROR",
        "test_structured": "ERROR",
        # its call's leak is the call's: judged once, not again at teardown
        "test_call_leaks_teardown_clean": "FAILED",
    }
    # (the other calls passed: their errors are the teardowns')
    result.assert_outcomes(passed=5, failed=1, errors=3)
    structured = failure_section(result, "test_structured")
    assert "[LEAK] operator: log record gw.audit WARNING" in structured, structured
    careless = failure_section(result, "test_careless")
    assert "leakcheck: at teardown" in careless, careless
    assert "[LEAK] operator: log record gw WARNING message" in careless, careless
    assert "also in: log lines pytest captured during fixture teardown" in careless, careless
    kept = failure_section(result, "test_prints_the_kept_token")
    assert "[LEAK] caller: stdout" in kept, kept
    assert "a secret of the earlier test test_inner.py::test_careful" in kept, kept
    records = {r["test"].split("::")[-1]: r for r in data["tests"]}
    assert records["test_careless"]["outcome"] == "error"
    assert records["test_careless"]["forbidden"] == 2  # (the record, pytest's log capture)
    assert "teardown error: leakcheck: 2 forbidden hit(s)" in records["test_careless"]["reason"]
    assert records["test_host_in_log"]["outcome"] == "passed"
    secrets = [
        CanaryFactory(SEED, namespace=f"test_inner.py::{test}").secret(kind)
        for test, kind in (
            ("test_careless", "bearer"),
            ("test_careful", "bearer"),
            ("test_host_in_log", "hostname"),
            ("test_structured", "bearer"),
            ("test_call_leaks_teardown_clean", "bearer"),
        )
    ]
    self_scan("\n".join(result.outlines + result.errlines), secrets, "inner output")
    report = pytester.path / "leakcheck-report.json"  # (as written, not as read back)
    self_scan(report.read_text(encoding="utf-8"), secrets, "JSON report")
