"""The spawned-process sinks (``process argv``, ``process environment``).

Real children (the test's own interpreter, ``-c`` with a tiny script) started every way a
gateway starts them: ``subprocess.run`` (with and without ``posix_spawn`` underneath),
``os.system``, ``os.spawnv`` (fork, then ``execv`` in the child), bytes arguments. A
password on the command line fails, the same command with the password on stdin passes; a
password in an explicitly passed environment fails, an inherited one and one the harness
provisions (``provisioning()``) pass. Each clean twin proves the sink saw its spawn. Every
report is scanned for every form of the test's secrets, and an inner pytest run checks the
whole path through the fixture.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import textwrap
from collections.abc import Callable
from typing import Any

import pytest
from conftest import QUIET_INNER_ARGS, assert_inner_run_safe, self_scan
from leakcheck.plugins import process_sink
from leakcheck.plugins.process_sink import (
    ProcessArgvSink,
    ProcessEnvironmentSink,
    provisioning,
)

from leakcheck import CanaryFactory, Secret
from leakcheck.harness import LeakCheck

pytest_plugins = ["pytester"]

SEED = "leakcheck-plugin-process"
PYTHON = sys.executable
#: reads the password from stdin, as ``mysql -p`` (no value) or ``sudo -S`` do
READ_STDIN = "import sys; sys.exit(0 if sys.stdin.read() else 3)"


def _run(nodeid: str, body: Callable[[str], Any], kind: str = "password") -> LeakCheck:
    """``body(secret)`` under both process sinks; the check, stopped."""
    check = LeakCheck(
        seed=SEED, namespace=nodeid, sinks=[ProcessArgvSink(), ProcessEnvironmentSink()]
    )
    with check:
        body(check.secret(kind))
    self_scan(check.report(), check.secrets, "the report")
    return check


def _forbidden(check: LeakCheck) -> set[tuple[str, str]]:
    return {(leak.sink, leak.path) for leak in check.violations()}


def _paths(check: LeakCheck, sink: str) -> set[str]:
    return {c.path for c in check.captured() if c.sink == sink}


def _location(check: LeakCheck, sink: str) -> set[str]:
    return {path for s, path in _forbidden(check) if s == sink}


# --- the command line ----------------------------------------------------------------------


def test_password_on_the_command_line_fails(request: pytest.FixtureRequest) -> None:
    def body(password: str) -> None:
        subprocess.run([PYTHON, "-c", "pass", f"-p{password}"], check=True)

    check = _run(request.node.nodeid, body)
    sinks = {sink for sink, _ in _forbidden(check)}
    assert sinks == {"process argv"}
    leak = next(iter(check.violations()))
    assert leak.finding.form == "raw"
    assert leak.path == "#1 python argv[3]"
    assert "readable by every local user" in leak.note


def test_same_command_with_the_password_on_stdin_passes(request: pytest.FixtureRequest) -> None:
    def body(password: str) -> None:
        subprocess.run([PYTHON, "-c", READ_STDIN], input=password, text=True, check=True)

    check = _run(request.node.nodeid, body)
    assert check.violations() == []
    # not vacuous: the sink saw this very spawn
    assert {"#1 python argv[0]", "#1 python argv[2]"} <= _paths(check, "process argv")


def test_shell_command_and_os_system(request: pytest.FixtureRequest) -> None:
    def body(password: str) -> None:
        quoted = shlex.quote(f"--password={password}")
        subprocess.run(f"{shlex.quote(PYTHON)} -c pass {quoted}", shell=True, check=True)
        assert os.system(f"{shlex.quote(PYTHON)} -c pass {quoted}") == 0

    check = _run(request.node.nodeid, body)
    assert _location(check, "process argv") == {"#1 sh argv[2]", "#2 os.system command"}


def test_forked_child_exec_is_seen(request: pytest.FixtureRequest) -> None:
    """``os.spawnv`` forks, then calls ``execv`` in the child: the child's audit event
    reaches the sink through its spill file."""
    if not hasattr(os, "fork"):
        pytest.skip("no os.fork on this platform")

    def body(password: str) -> None:
        assert os.spawnv(os.P_WAIT, PYTHON, [PYTHON, "-c", "pass"]) == 0
        assert os.spawnv(os.P_WAIT, PYTHON, [PYTHON, "-c", "pass", password]) == 0

    check = _run(request.node.nodeid, body)
    paths = _paths(check, "process argv")
    assert "#1 python argv[2]" in paths and "#2 python argv[3]" in paths
    assert _forbidden(check) == {("process argv", "#2 python argv[3]")}


def test_bytes_arguments_and_one_count_for_posix_spawn(request: pytest.FixtureRequest) -> None:
    def body(password: str) -> None:
        # close_fds=False with an absolute path: subprocess uses os.posix_spawn, whose own
        # audit event is the same process
        subprocess.run([os.fsencode(PYTHON), b"-c", b"pass", password.encode()],
                       close_fds=False, check=True)  # fmt: skip

    check = _run(request.node.nodeid, body)
    assert _location(check, "process argv") == {"#1 python argv[3]"}
    assert not any(p.startswith("#2 ") for p in _paths(check, "process argv"))
    if not getattr(subprocess, "_USE_POSIX_SPAWN", False):
        pytest.skip("subprocess does not use posix_spawn here: counted once trivially")


# --- the environment ---------------------------------------------------------------------------


def test_password_in_an_explicit_environment_fails(request: pytest.FixtureRequest) -> None:
    def body(password: str) -> None:
        env = {**os.environ, "MYSQL_PWD": password}
        subprocess.run([PYTHON, "-c", "pass"], env=env, check=True)

    check = _run(request.node.nodeid, body)
    assert _forbidden(check) and {s for s, _ in _forbidden(check)} == {"process environment"}
    assert _location(check, "process environment") == {"#1 python env.MYSQL_PWD"}
    leak = next(iter(check.violations()))
    assert "/proc/PID/environ" in leak.note


def test_inherited_environment_is_not_judged(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gateway's own environment (as its operator configured it) reaches its children
    whether passed on or inherited: only what the gateway adds is judged."""

    def body(password: str) -> None:
        monkeypatch.setenv("GATEWAY_TOKEN", password)
        subprocess.run([PYTHON, "-c", "pass"], check=True)
        subprocess.run([PYTHON, "-c", "pass"], env=dict(os.environ), check=True)
        subprocess.run([PYTHON, "-c", "pass"], env={**os.environ, "MODE": "ci"}, check=True)

    check = _run(request.node.nodeid, body)
    assert check.violations() == []
    # not vacuous: the one entry that differs from the parent's was captured
    assert _paths(check, "process environment") == {"#3 python env.MODE"}


def test_provisioning_spares_the_environment_not_the_command_line(
    request: pytest.FixtureRequest,
) -> None:
    def body(password: str) -> None:
        with provisioning():  # the harness starts the gateway under test
            subprocess.run([PYTHON, "-c", "pass"], env={"API_TOKEN": password}, check=True)
            subprocess.run([PYTHON, "-c", "pass", f"--token={password}"], check=True)
        subprocess.run([PYTHON, "-c", "pass"], env={"API_TOKEN": password}, check=True)

    check = _run(request.node.nodeid, body)
    assert _location(check, "process argv") == {"#2 python argv[3]"}
    assert _location(check, "process environment") == {"#3 python env.API_TOKEN"}


def test_skipping_the_environment_sink_keeps_argv() -> None:
    check = LeakCheck(seed=SEED, namespace="skip", skip_sinks={"process environment": "psql"},
                      sinks=[ProcessArgvSink(), ProcessEnvironmentSink()])  # fmt: skip
    assert [s.name for s in check.sinks if "process" in s.name] == ["process argv"]


# --- globals, windows ---------------------------------------------------------------------------


def test_idle_hook_and_nested_windows() -> None:
    assert process_sink._running == ()
    outer, inner = ProcessArgvSink(), ProcessArgvSink()
    outer.start()
    try:
        subprocess.run([PYTHON, "-c", "pass", "first"], check=True)
        inner.start()
        subprocess.run([PYTHON, "-c", "pass", "second"], check=True)
        inner.stop()
    finally:
        outer.stop()
    assert process_sink._running == ()  # the hook is a no-op again
    subprocess.run([PYTHON, "-c", "pass", "after"], check=True)  # part of no test

    def args(sink: ProcessArgvSink) -> list[str | bytes]:
        return [c.text for c in sink.collect() if c.path.endswith("argv[3]")]

    assert args(outer) == ["first", "second"]
    assert args(inner) == ["second"]
    assert list(ProcessArgvSink().collect()) == []


def test_fork_spill_is_closed_at_stop() -> None:
    if not hasattr(os, "fork"):
        pytest.skip("no os.fork on this platform")
    sink = ProcessArgvSink()
    sink.start()
    recorder = sink._recorder
    assert recorder is not None
    try:
        assert os.spawnv(os.P_WAIT, PYTHON, [PYTHON, "-c", "pass", "child"]) == 0
        spill = recorder.spill
        assert spill is not None
        closed: list[int] = []
        close = spill.close
        spill.close = lambda: (closed.append(spill.fd), close())[1]  # type: ignore[method-assign]
    finally:
        sink.stop()
    assert recorder.spill is None and closed == [spill.fd]  # closed once, at stop
    assert [c.text for c in sink.collect() if c.path == "#1 python argv[3]"] == ["child"]


def test_sinks_entry() -> None:
    assert process_sink.SINKS == [ProcessArgvSink, ProcessEnvironmentSink]
    assert ProcessArgvSink.name == "process argv"
    assert ProcessEnvironmentSink.name == "process environment"


# --- end to end through the fixture ------------------------------------------------------------

INNER = """
import os
import subprocess
import sys

READ_STDIN = "import sys; sys.exit(0 if sys.stdin.read() else 3)"


def test_argv(leakcheck):
    password = leakcheck.secret("password")
    subprocess.run([sys.executable, "-c", "pass", "-p" + password], check=True)


def test_stdin(leakcheck):
    password = leakcheck.secret("password")
    subprocess.run([sys.executable, "-c", READ_STDIN], input=password, text=True, check=True)


def test_env(leakcheck):
    password = leakcheck.secret("password")
    env = {**os.environ, "PGPASSWORD": password}
    subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)


def test_forked(leakcheck):
    password = leakcheck.secret("password")
    assert os.spawnv(os.P_WAIT, sys.executable, [sys.executable, "-c", "pass", password]) == 0
"""


def test_through_the_fixture(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner_process=textwrap.dedent(INNER))
    result = pytester.runpytest(*QUIET_INNER_ARGS, f"--leakcheck-seed={SEED}", "-rA")
    names = ["test_argv", "test_stdin", "test_env", "test_forked"]
    secrets: list[Secret] = [
        CanaryFactory(SEED, namespace=f"test_inner_process.py::{name}").secret("password")
        for name in names
    ]
    assert_inner_run_safe(pytester, result, secrets)
    # (test_forked: the verdict, given at the end of the call while the sink still runs,
    # reads the forked child's spill then; it was read at the sink's stop, after it, and
    # the test passed: found by a hunting helper)
    result.assert_outcomes(failed=3, passed=1)
    out = result.stdout.str()
    assert "PASSED test_inner_process.py::test_stdin" in out
    assert "FAILED test_inner_process.py::test_forked" in out
    assert "[LEAK] operator: process argv #1 python argv[3]  form raw" in out
    assert "[LEAK] operator: process environment #1 python env.PGPASSWORD  form raw" in out
