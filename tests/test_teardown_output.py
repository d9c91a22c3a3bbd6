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
import gc
import logging
import threading
import warnings
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

@pytest.fixture
def warns(leakcheck):
    token = leakcheck.secret("bearer")
    yield token
    warnings.warn(f"session for {token} was not closed cleanly")

@pytest.fixture
def warns_clean(leakcheck):
    leakcheck.secret("bearer")
    yield
    warnings.warn("session was not closed cleanly")

@pytest.fixture
def thread_fails(leakcheck):
    token = leakcheck.secret("bearer")
    yield token
    def revoke():
        raise RuntimeError(f"revoke failed for {token}")
    worker = threading.Thread(target=revoke)
    worker.start()
    worker.join()

class Session:
    def __init__(self, token):
        self.token = token
    def __del__(self):
        raise RuntimeError(f"could not close the session of {self.token}")

@pytest.fixture
def del_fails(leakcheck):
    token = leakcheck.secret("bearer")
    yield token
    session = Session(token)
    del session
    gc.collect()

@pytest.fixture
def caches(leakcheck, request):
    token = leakcheck.secret("bearer")
    yield token
    request.config.cache.set("gateway/session", {"token": token})

def test_warns(warns, leakcheck):
    leakcheck.expose({"ok": True})

def test_warns_clean(warns_clean, leakcheck):
    leakcheck.expose({"ok": True})

def test_thread_fails(thread_fails, leakcheck):
    leakcheck.expose({"ok": True})

def test_del_fails(del_fails, leakcheck):
    leakcheck.expose({"ok": True})

def test_caches(caches, leakcheck):
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
        # what the teardown warned, pytest's warnings for a thread's and a __del__'s
        # exception (issued after every fixture was torn down), what it set in pytest's
        # cache: judged after the verdict (each passed: found by a hunting helper)
        "test_warns": "ERROR",
        "test_warns_clean": "PASSED",
        "test_thread_fails": "ERROR",
        "test_del_fails": "ERROR",
        "test_caches": "ERROR",
    }
    # (the other calls passed: their errors are the teardowns')
    result.assert_outcomes(passed=10, failed=1, errors=7)
    for name, sink in [
        ("test_warns", "warning UserWarning"),
        ("test_thread_fails", "warning PytestUnhandledThreadExceptionWarning"),
        ("test_del_fails", "warning PytestUnraisableExceptionWarning"),
        ("test_caches", "pytest cache gateway/session"),
    ]:
        section = failure_section(result, name)
        assert "leakcheck: at teardown" in section and f"[LEAK] operator: {sink}" in section, (
            section
        )
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
            ("test_warns", "bearer"),
            ("test_thread_fails", "bearer"),
            ("test_del_fails", "bearer"),
            ("test_caches", "bearer"),
        )
    ]
    self_scan("\n".join(result.outlines + result.errlines), secrets, "inner output")
    report = pytester.path / "leakcheck-report.json"  # (as written, not as read back)
    self_scan(report.read_text(encoding="utf-8"), secrets, "JSON report")
