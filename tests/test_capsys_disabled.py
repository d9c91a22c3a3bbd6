"""``capsys.disabled()`` (and ``capfd``'s, ``capteesys``'s): pytest's capture is off
inside it.

Found trying the fixture as a newcomer: a gateway that printed its token inside
``with capsys.disabled():`` passed green, and the token was on the terminal, raw. Inside it
``sys.stdout`` and ``sys.stderr`` are now tees: each line reaches the terminal masked and
the test's sinks as written; writes past them are said as not inspected.
"""

from __future__ import annotations

import _pytest.capture
import pytest
from conftest import failure_section, inner_outcomes, self_scan

from leakcheck.canaries import CanaryFactory

pytest_plugins = ["pytester"]

SEED = "disabled-1"

INNER = """
import sys


def test_prints_its_token(leakcheck, capsys):
    token = leakcheck.secret("bearer")
    with capsys.disabled():
        print(f"using token {token}")
    leakcheck.expose({"ok": False})


def test_writes_its_token_in_pieces_to_stderr(leakcheck, capfd):
    token = leakcheck.secret("bearer")
    with capfd.disabled():
        sys.stderr.write("auth failed for " + token[:20])
        sys.stderr.write(token[20:] + " (retrying)\\n")
    leakcheck.expose({"ok": False})


def test_keeps_a_stream_made_inside_the_block(leakcheck, capsys):
    token = leakcheck.secret("bearer")
    with capsys.disabled():
        kept = sys.stdout  # (a log handler made here keeps it)
    kept.write(f"later: {token}\\n")  # to pytest's capture, as without the plugin: judged
    leakcheck.expose({"ok": False})


def test_shows_progress(leakcheck, capsys):
    leakcheck.secret("bearer")
    outer = sys.stdout
    with capsys.disabled():
        shown = sys.__stdout__
        # the terminal's own answers, as without the plugin
        assert sys.stdout.encoding == shown.encoding and sys.stdout.errors == shown.errors
        assert sys.stdout.fileno() == shown.fileno()
        assert sys.stdout.isatty() == shown.isatty()
        print("progress: 50% of the upstream calls")
    assert sys.stdout is outer
    print("captured again")
    assert capsys.readouterr().out == "captured again\\n"
    leakcheck.expose({"ok": False})

"""

#: pytest 8.4 on: capteesys (its disabled() printed a token raw and passed green)
TEES = """

def test_tees_and_then_disables(leakcheck, capteesys):
    token = leakcheck.secret("bearer")
    with capteesys.disabled():
        print(f"tee off, calling with {token}")
    leakcheck.expose({"ok": False})


def test_tees_and_reads_back(leakcheck, capteesys):
    token = leakcheck.secret("bearer")
    print(f"tee on, calling with {token}")
    assert "calling with" in capteesys.readouterr().out
    leakcheck.expose({"ok": False})
"""


def test_what_is_printed_under_a_disabled_capture_is_masked_and_judged(
    pytester: pytest.Pytester,
) -> None:
    has_tee = hasattr(_pytest.capture, "capteesys")
    pytester.makepyfile(test_inner=INNER + (TEES if has_tee else ""))
    # (a subprocess: the terminal the inner pytest writes to under disabled() is its own)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-rA", f"--leakcheck-seed={SEED}")
    assert inner_outcomes(result) == {
        "test_prints_its_token": "FAILED",
        "test_writes_its_token_in_pieces_to_stderr": "FAILED",
        "test_keeps_a_stream_made_inside_the_block": "FAILED",
        "test_shows_progress": "PASSED",
        **(
            {"test_tees_and_then_disables": "FAILED", "test_tees_and_reads_back": "FAILED"}
            if has_tee
            else {}
        ),
    }, result.stdout.str()
    if has_tee:
        teed = failure_section(result, "test_tees_and_then_disables")
        assert "stdout printed under capteesys.disabled()  form raw" in teed, teed
        read = failure_section(result, "test_tees_and_reads_back")
        assert "stdout the test read back itself (capteesys)  form raw" in read, read
    printed = failure_section(result, "test_prints_its_token")
    assert "[LEAK] caller: stdout printed under capsys.disabled()  form raw" in printed, printed
    pieces = failure_section(result, "test_writes_its_token_in_pieces_to_stderr")
    assert "stderr printed under capfd.disabled()  form raw" in pieces, pieces
    shown = "\n".join(result.outlines + result.errlines)
    # on the terminal as the test wrote it, masked: whole, though written in two pieces
    assert "using token «canary:bearer:raw»" in shown, shown
    assert "auth failed for «canary:bearer:raw» (retrying)" in shown, shown
    assert "progress: 50% of the upstream calls" in shown, shown
    kept = failure_section(result, "test_keeps_a_stream_made_inside_the_block")
    assert "[LEAK] caller: stdout, while the test ran  form raw" in kept, kept
    assert (
        "could not inspect in test_inner.py::test_shows_progress: stdout capsys.disabled()" in shown
    ), shown
    secrets = [
        CanaryFactory(SEED, namespace=f"test_inner.py::{test}").secret("bearer")
        for test in inner_outcomes(result)
    ]
    self_scan(shown, secrets, "inner output")
