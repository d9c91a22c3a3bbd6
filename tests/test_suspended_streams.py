"""What reaches ``sys.stdout`` and ``sys.stderr`` while pytest's capture is suspended is
masked: pytest gives the terminal's streams back while it writes a report line and its
summary, and a thread that outlived the tests (a token refresher) printed its token there
as it was, in the middle of the summary, and under xdist from a worker to the controller's
terminal (found by a hunting helper). Written here from ``pytest_sessionfinish``, as such
a thread writes after the last test, deterministically. Run in a subprocess: the streams
are the process's own."""

from __future__ import annotations

import sys

import pytest
from conftest import self_scan

from leakcheck.canaries import CanaryFactory

pytest_plugins = ["pytester"]

SEED = "suspended-streams"

CONFTEST = """
import sys

SEEN = []

def pytest_sessionfinish(session):
    for value in SEEN:
        print(f"refresh {value}")
        sys.stderr.write(f"refresh failed {value[:18]}")
        sys.stderr.write(value[18:] + "\\n")
        sys.stdout.write(f"last words {value}")
"""

TESTS = """
import conftest

def test_starts_a_refresher(leakcheck):
    conftest.SEEN.append(leakcheck.secret("bearer"))
"""


def _terminal_of(
    pytester: pytest.Pytester, conftest: str, tests: str, test: str, args: tuple[str, ...]
) -> str:
    """What the inner run (in a subprocess) printed, checked for ``test``'s bearer canary;
    the run passed."""
    pytester.makeconftest(conftest)
    pytester.makepyfile(test_inner=tests)
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "-p", "no:cacheprovider", f"--leakcheck-seed={SEED}", *args
    )
    assert result.ret == pytest.ExitCode.OK
    text = "\n".join(result.outlines + result.errlines)
    token = CanaryFactory(SEED, namespace=f"test_inner.py::{test}").nth("bearer", 1)
    self_scan(text, [token], "the terminal")
    return text


@pytest.mark.parametrize(
    "args",
    [(), ("--capture=sys",), ("--capture=tee-sys",), ("-n", "2")],
    ids=["fd", "sys", "tee-sys", "xdist"],
)
def test_writes_while_capture_is_suspended_are_masked(
    pytester: pytest.Pytester, args: tuple[str, ...]
) -> None:
    text = _terminal_of(pytester, CONFTEST, TESTS, "test_starts_a_refresher", args)
    # each write was made, and shown masked (a stage that never ran is no pass); a
    # worker's stdout does not reach the controller, its stderr does
    said = ["refresh failed \u00abcanary:bearer:"]
    if "-n" not in args:
        said.append("refresh \u00abcanary:bearer:")
    missing = [line for line in said if line not in text]
    assert not missing, f"not shown: {missing}"
    if not args:
        assert "last words \u00abcanary:bearer:" in text  # (a partial line, at the end)


def test_the_streams_are_given_back(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner="def test_ok(leakcheck):\n    leakcheck.secret('bearer')\n")
    before = sys.stdout, sys.stderr
    pytester.inline_run("-p", "no:randomly", "-p", "no:cacheprovider")
    assert (sys.stdout, sys.stderr) == before


KEPT_CONFTEST = """
import sys

KEPT = []

def pytest_sessionstart(session):
    KEPT.append(sys.stdout)  # (a handler made here keeps the stream pytest gave back)
"""

KEPT_TESTS = """
import conftest

def test_writes_through_a_kept_stream(leakcheck):
    token = leakcheck.secret("bearer")
    assert type(conftest.KEPT[0]).__name__ == "_SuspendedEcho"  # (what is under test)
    conftest.KEPT[0].write(f"calling with {token}\\n")
    conftest.KEPT[0].flush()
"""


def test_a_stream_kept_from_a_suspended_moment_is_judged_as_written(
    pytester: pytest.Pytester,
) -> None:
    # while pytest captures, what goes through the kept stream reaches file descriptor 1,
    # which pytest's capture takes: as written, never masked before the verdict reads it
    pytester.makeconftest(KEPT_CONFTEST)
    pytester.makepyfile(test_inner=KEPT_TESTS)
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "-p", "no:cacheprovider", f"--leakcheck-seed={SEED}", "-rA"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    text = "\n".join(result.outlines + result.errlines)
    assert "[LEAK] caller: stdout" in text and "form raw" in text
    token = CanaryFactory(SEED, namespace="test_inner.py::test_writes_through_a_kept_stream")
    self_scan(text, [token.nth("bearer", 1)], "the terminal")


HANDLER_CONFTEST = """
import logging

# the app's logging set up when the conftest is imported: its handler writes to the
# stream pytest's capture put in sys.stderr then
logging.basicConfig(level=logging.INFO, format="%(name)s %(message)s")
CLIENTS = []

def pytest_sessionfinish(session):
    for token in CLIENTS:
        logging.getLogger("app.client").info("revoking token %s", token)
"""

HANDLER_TESTS = """
import conftest

def test_logs_in(leakcheck):
    conftest.CLIENTS.append(leakcheck.secret("bearer"))
"""


@pytest.mark.parametrize("args", [(), ("--capture=sys",), ("-n", "2")], ids=["fd", "sys", "xdist"])
def test_what_the_capture_holds_at_its_end_is_written_back_masked(
    pytester: pytest.Pytester, args: tuple[str, ...]
) -> None:
    """A record logged after the last test, by a handler that writes to pytest's capture,
    is written to the terminal when pytest stops capturing, after every plugin's
    ``pytest_unconfigure``: it came out raw (found by a hunting helper)."""
    text = _terminal_of(pytester, HANDLER_CONFTEST, HANDLER_TESTS, "test_logs_in", args)
    if "-n" not in args:  # (a worker's is its own: the controller shows none of it)
        assert "app.client revoking token \u00abcanary:bearer:" in text, text
