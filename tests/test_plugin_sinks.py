"""Every built-in sink, through the pytest plugin: a leaky inner test fails naming the sink,
the field path and the form; a clean one passes.

Inner suites run in-process with ``pytester`` (fd capture included), with a fixed seed and a
JSON report, so that each finding can be checked by (sink, path, form) and the terminal
text can be checked to show the same line. Assertion messages carry only those names.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import Any

import pytest
from conftest import failure_section, run_with_report

from leakcheck.verdict import sink_label

pytest_plugins = ["pytester"]


SEED = "plugin-sinks-1"
_SUMMARY = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (\S+::\S+)")


@dataclass
class Inner:
    """One inner run: its outcomes, its findings (from the JSON report) and its text."""

    result: pytest.RunResult
    report: dict[str, Any]

    @property
    def text(self) -> str:
        return "\n".join(self.result.outlines + self.result.errlines)

    def outcome(self, test: str) -> str:
        found = {
            m[2].split("::")[-1]: m[1]
            for line in self.result.outlines
            if (m := _SUMMARY.match(line))
        }
        return found.get(test, "missing")

    def record(self, test: str) -> dict[str, Any]:
        records = [r for r in self.report["tests"] if r["test"].split("::")[-1] == test]
        assert len(records) == 1, f"{test}: {len(records)} records in the JSON report"
        return records[0]

    def leaks(self, test: str) -> list[tuple[str, str, str, bool, str]]:
        """(sink, path, form, allowed, note) of every finding of ``test``."""
        return [
            (f["sink"], f["path"], f["finding"]["form"], f["allowed"], f["note"])
            for f in self.record(test)["findings"]
        ]

    def section(self, test: str) -> str:
        """The failure section of ``test`` in the terminal output."""
        return failure_section(self.result, test)

    def assert_leak(
        self,
        test: str,
        sink: str,
        path: str,
        form: str | None = None,
        sink_class: str | None = None,
    ) -> tuple[str, str, str, bool, str]:
        """``test`` failed, with a forbidden finding at ``sink`` ``path`` (in ``form``),
        shown as such in its failure section: in full (a ``[LEAK]`` line, the place named
        as a person reads it) or, when another occurrence of the same root cause is the
        one shown, on that one's ``also in:`` line."""
        assert self.outcome(test) == "FAILED", f"{test}: {self.outcome(test)}"
        leaks = self.leaks(test)
        hits = [
            leak
            for leak in leaks
            if leak[0] == sink
            and leak[1] == path
            and not leak[3]
            and (form is None or leak[2] == form)
        ]
        assert hits, f"{test}: no forbidden hit at {sink} {path} {form or ''}; got {leaks}"
        label = sink_label(sink, path)
        shown = f"{sink_class or '*'}: {label}  form {hits[0][2]}"
        section = self.section(test)
        lines = [line.strip() for line in section.splitlines()]
        in_full = any(
            line.startswith("[LEAK]") and re.search(re.escape(shown).replace(r"\*", r"\w+"), line)
            for line in lines
        )
        also = any(
            line.startswith("also in: ") and re.search(re.escape(label) + r"(,| \(|$)", line)
            for line in lines
        )
        assert in_full or also, f"{test}: {shown!r} not in its report"
        return hits[0]

    def assert_clean(self, test: str) -> None:
        assert self.outcome(test) == "PASSED", f"{test}: {self.outcome(test)}"
        record = self.record(test)
        assert record["forbidden"] == 0, f"{test}: {self.leaks(test)}"


def run_inner(pytester: pytest.Pytester, source: str, *args: str) -> Inner:
    pytester.makepyfile(test_inner=source)
    return Inner(*run_with_report(pytester, SEED, *args))


# --- tool response: whatever the test exposes ---------------------------------------------

EXPOSED = '''
import base64, dataclasses, urllib.parse
from unittest import mock

@dataclasses.dataclass
class Error:
    code: str
    detail: str

@dataclasses.dataclass
class Envelope:
    ok: bool
    error: Error

class Model:
    """pydantic-like: serialized through model_dump()."""
    def __init__(self, **fields):
        self._fields = fields
    def model_dump(self):
        return dict(self._fields)

class BadRepr:
    def __repr__(self):
        raise RuntimeError("repr exploded")
    __str__ = __repr__

class BadDump:
    def model_dump(self):
        raise ValueError("cannot dump")

def test_dict(leakcheck):
    token = leakcheck.secret("bearer")
    leakcheck.expose({"ok": False, "error": {"code": "AUTH_FAILED",
                                             "detail": f"rejected Bearer {token}"}})

def test_dataclass(leakcheck):
    token = leakcheck.secret("bearer")
    leakcheck.expose(Envelope(ok=False, error=Error("AUTH_FAILED", f"rejected {token}")))

def test_model_dump(leakcheck):
    key = leakcheck.secret("api_key")
    leakcheck.expose(Model(ok=False, upstream={"url": f"https://api.example/v1?api_key={key}"}))

def test_percent_encoded(leakcheck):
    key = leakcheck.secret("api_key")
    query = urllib.parse.urlencode({"api_key": key})
    leakcheck.expose({"error": {"url": f"https://api.example/v1?{query}"}})

def test_basic_auth_base64(leakcheck):
    password = leakcheck.secret("password")
    basic = base64.b64encode(f"svc:{password}".encode()).decode()
    leakcheck.expose({"request": {"headers": {"Authorization": f"Basic {basic}"}}})

def test_exception_object(leakcheck):
    password = leakcheck.secret("password")
    leakcheck.expose(ConnectionError(f"cannot reach https://svc:{password}@db.example"))

def test_bytes(leakcheck):
    cookie = leakcheck.secret("cookie")
    leakcheck.expose(f"Set-Cookie: session={cookie}; HttpOnly".encode())

def test_cycle(leakcheck):
    token = leakcheck.secret("bearer")
    response = {"error": {"detail": f"token {token}"}}
    response["error"]["parent"] = response
    items = [response]
    items.append(items)
    leakcheck.expose(items)

def test_bad_repr(leakcheck):
    token = leakcheck.secret("bearer")
    leakcheck.expose(BadRepr())
    leakcheck.expose({"debug": BadRepr(), "dump": BadDump(), "error": {"detail": token}})

def test_clean(leakcheck):
    token = leakcheck.secret("bearer")
    response = {"ok": False, "code": "AUTH_FAILED", "message": "credentials rejected",
                "action": "stop_and_report", "retryable": False}
    response["self"] = response
    leakcheck.expose(response)
    leakcheck.expose(Envelope(ok=False, error=Error("AUTH_FAILED", "credentials rejected")))
    leakcheck.expose(Model(ok=False, code="AUTH_FAILED"))
    leakcheck.expose(ConnectionError("upstream unreachable"))
    leakcheck.expose(b"\\xff\\xfe not utf-8 \\x00")
    leakcheck.expose(memoryview(b"plain bytes"))
    leakcheck.expose([BadRepr(), BadDump(), {1, 2}, (3, 4), frozenset()])
    leakcheck.expose(mock.MagicMock())
    nested = current = {}
    for _ in range(100):
        current["next"] = current = {}
    leakcheck.expose(nested)
'''


def test_exposed_tool_response(pytester: pytest.Pytester) -> None:
    inner = run_inner(pytester, EXPOSED)
    inner.assert_leak("test_dict", "tool response", "$.error.detail", "raw", "caller")
    inner.assert_leak("test_dataclass", "tool response", "$.error.detail", "raw")
    inner.assert_leak("test_model_dump", "tool response", "$.upstream.url", "raw")
    _, _, form, _, _ = inner.assert_leak("test_percent_encoded", "tool response", "$.error.url")
    assert form.startswith("pct"), form
    _, _, form, _, _ = inner.assert_leak(
        "test_basic_auth_base64", "tool response", "$.request.headers.Authorization"
    )
    assert form.startswith("base64"), form
    inner.assert_leak("test_exception_object", "tool response", "ConnectionError.traceback")
    inner.assert_leak("test_exception_object", "tool response", "$.message", "raw")
    inner.assert_leak("test_bytes", "tool response", "bytes", "raw")
    inner.assert_leak("test_cycle", "tool response", "$[0].error.detail", "raw")
    inner.assert_leak("test_bad_repr", "tool response", "$.error.detail", "raw")
    # One finding per field: the whole-JSON and repr fallbacks add nothing when a field
    # already showed the secret.
    assert len(inner.leaks("test_dict")) == 1, inner.leaks("test_dict")
    inner.assert_clean("test_clean")
    assert inner.outcome("test_clean") == "PASSED"
    assert inner.result.ret == pytest.ExitCode.TESTS_FAILED


# --- exceptions reaching the test ---------------------------------------------------------

EXCEPTIONS = """
import sys
import httpx, pytest, respx

class GatewayError(Exception):
    pass

def test_cause(leakcheck):
    token = leakcheck.secret("bearer")
    def call():
        raise KeyError(f"Authorization: Bearer {token}")
    try:
        call()
    except KeyError as exc:
        raise GatewayError("gateway failed") from exc

def test_context(leakcheck):
    key = leakcheck.secret("api_key")
    try:
        raise ValueError(f"bad key {key}")
    except ValueError:
        raise GatewayError("wrapper failed")

def test_context_suppressed(leakcheck):
    key = leakcheck.secret("api_key")
    with pytest.raises(GatewayError):  # (judged as an exception that reached the test)
        try:
            raise ValueError(f"bad key {key}")
        except ValueError:
            raise GatewayError("upstream refused the credential") from None

def test_group(leakcheck):
    if sys.version_info < (3, 11):
        pytest.skip("ExceptionGroup: 3.11+")
    key = leakcheck.secret("api_key")
    raise ExceptionGroup("calls failed", [ValueError("fine"), OSError(f"key {key} refused")])

def test_note(leakcheck):
    if sys.version_info < (3, 11):
        pytest.skip("add_note: 3.11+")
    key = leakcheck.secret("api_key")
    exc = GatewayError("upstream failed")
    exc.add_note(f"while calling https://api.example/v1?api_key={key}")
    raise exc

def test_httpx_request(leakcheck):
    key = leakcheck.secret("api_key")
    with respx.mock:
        respx.get("https://api.example/v1/items").respond(401, json={"error": "unauthorized"})
        with httpx.Client() as client:
            client.get("https://api.example/v1/items", params={"api_key": key}).raise_for_status()

def test_skip_is_not_an_exception_reaching_the_caller(leakcheck):
    token = leakcheck.secret("bearer")
    pytest.skip(f"no upstream for {token}")

def test_clean_raises(leakcheck):
    leakcheck.secret("bearer")
    with pytest.raises(GatewayError) as info:
        try:
            raise KeyError("no such credential")
        except KeyError as exc:
            raise GatewayError("AUTH_FAILED") from exc
    leakcheck.expose(info.value)

def test_clean_failure(leakcheck):
    leakcheck.secret("bearer")
    raise GatewayError("AUTH_FAILED: the upstream service rejected the credentials")
"""


def test_exceptions_reaching_the_test(pytester: pytest.Pytester) -> None:
    inner = run_inner(pytester, EXCEPTIONS)
    # a chained exception reaches the caller as the traceback prints it; its args (and
    # notes) only sit on the object: latent, a fallback left out where the traceback
    # shows the secret
    inner.assert_leak("test_cause", "exception", "GatewayError.traceback", "raw", "caller")
    inner.assert_leak("test_context", "exception", "GatewayError.traceback", "raw")
    forbidden = {
        test: {path for _, path, _, allowed, _ in inner.leaks(test) if not allowed}
        for test in ("test_cause", "test_context", "test_group")
    }
    assert forbidden["test_cause"] == forbidden["test_context"] == {"GatewayError.traceback"}
    # ``raise ... from None``: the traceback shows no context, the caller gets none of it
    inner.assert_clean("test_context_suppressed")
    assert [
        (path, allowed) for _, path, _, allowed, _ in inner.leaks("test_context_suppressed")
    ] == [("GatewayError.__context__.args", True)]
    if sys.version_info >= (3, 11):
        inner.assert_leak("test_group", "exception", "ExceptionGroup.traceback", "raw")
        # (the group's own args hold its members: its repr shows them)
        assert forbidden["test_group"] == {"ExceptionGroup.traceback", "ExceptionGroup.args"}
        inner.assert_leak("test_note", "exception", "GatewayError.__notes__[0]", "raw")
        inner.assert_leak("test_note", "exception", "GatewayError.traceback", "raw")
    # httpx percent-encodes the key in the URL that its error message and .request carry:
    # the message (traceback, args) is what the caller gets; .request only sits on the
    # exception (latent), a fallback that adds nothing where the message shows the key
    _, _, form, _, _ = inner.assert_leak(
        "test_httpx_request", "exception", "HTTPStatusError.traceback"
    )
    assert form.startswith("pct"), form
    inner.assert_leak("test_httpx_request", "exception", "HTTPStatusError.args")
    paths = {f["path"] for f in inner.record("test_httpx_request")["findings"]}
    assert "HTTPStatusError.request" not in paths, paths
    # pytest.skip() raises, but it is the test skipping, not the gateway failing
    inner.result.stdout.fnmatch_lines(
        ["SKIPPED [[]1[]] test_inner.py:*: no upstream for \u00abcanary:bearer:*"]
    )
    assert inner.record("test_skip_is_not_an_exception_reaching_the_caller")["findings"] == []
    inner.assert_clean("test_clean_raises")
    # A failure of its own, not a leak: no leakcheck verdict in its report
    assert inner.outcome("test_clean_failure") == "FAILED"
    assert inner.record("test_clean_failure")["forbidden"] == 0
    assert "leakcheck:" not in inner.section("test_clean_failure")


# --- logging: every record of every logger at every level ---------------------------------

LOGGING = """
import logging
import pytest

def test_propagate_false_above_level(leakcheck):
    token = leakcheck.secret("bearer")
    log = logging.getLogger("gateway.http")
    log.propagate = False
    log.setLevel(logging.ERROR)
    try:
        log.warning("request sent", extra={"headers": {"Authorization": f"Bearer {token}"}})
    finally:
        log.propagate = True
        log.setLevel(logging.NOTSET)

@pytest.mark.leakcheck(strict_latent=True)  # the args' repr, which no handler renders
def test_logging_disable(leakcheck):
    token = leakcheck.secret("bearer")
    logging.disable(logging.CRITICAL)
    try:
        logging.getLogger("gateway.auth").error("token %s refused", token)
    finally:
        logging.disable(logging.NOTSET)

def test_disabled_logger(leakcheck):
    token = leakcheck.secret("bearer")
    log = logging.getLogger("gateway.quiet")
    log.disabled = True
    try:
        log.critical("token %s", token)
    finally:
        log.disabled = False

def test_exc_info(leakcheck):
    key = leakcheck.secret("api_key")
    try:
        raise ConnectionError(f"GET https://api.example/v1?api_key={key} failed")
    except ConnectionError:
        logging.getLogger("gateway.http").exception("upstream failed")

TOKEN = "ghp_Zq7Rk2Vw9Lm4Xt8Pb3Hn6Jc1Fd5Gs0Ya"

def test_stack_info(leakcheck):
    leakcheck.register(TOKEN, kind="bearer")
    log = logging.getLogger("gateway.trace")
    log.debug("calling", stack_info=True)  # ghp_Zq7Rk2Vw9Lm4Xt8Pb3Hn6Jc1Fd5Gs0Ya

def test_mutated_after_logging(leakcheck):
    token = leakcheck.secret("bearer")
    headers = {"Authorization": f"Bearer {token}"}
    logging.getLogger("gateway.http").warning("sending %s", headers)
    headers["Authorization"] = "[REDACTED]"

def test_clean(leakcheck):
    token = leakcheck.secret("bearer")
    log = logging.getLogger("gateway.careful")
    log.propagate = False
    try:
        log.debug("sending", extra={"headers": {"Authorization": "Bearer [REDACTED]"}})
        log.warning("upstream said %s", "401 Unauthorized", stack_info=True)
        try:
            raise ConnectionError("upstream unreachable")
        except ConnectionError:
            log.exception("request failed")
    finally:
        log.propagate = True
    assert token
"""


def test_logging_records(pytester: pytest.Pytester) -> None:
    inner = run_inner(pytester, LOGGING)
    leak = inner.assert_leak(
        "test_propagate_false_above_level",
        "log record",
        "gateway.http WARNING extra.headers",
        "raw",
        "operator",
    )
    assert leak[4] == (
        "not emitted in production: WARNING is below the logger's effective level ERROR"
    ), leak[4]
    assert f"({leak[4]})" in inner.section("test_propagate_false_above_level")
    leak = inner.assert_leak(
        "test_logging_disable", "log record", "gateway.auth ERROR message", "raw"
    )
    assert leak[4] == "not emitted in production: logging.disable() is in effect", leak[4]
    assert f"({leak[4]})" in inner.section("test_logging_disable")
    inner.assert_leak("test_logging_disable", "log record", "gateway.auth ERROR args")
    leak = inner.assert_leak("test_disabled_logger", "log record", "gateway.quiet CRITICAL message")
    assert leak[4] == "not emitted in production: the logger is disabled", leak[4]
    leak = inner.assert_leak(
        "test_exc_info", "log record", "gateway.http ERROR exc_info.traceback", "raw"
    )
    assert leak[4] == "", leak[4]  # emitted: no note
    inner.assert_leak("test_stack_info", "log record", "gateway.trace DEBUG stack_info", "raw")
    inner.assert_leak(
        "test_mutated_after_logging", "log record", "gateway.http WARNING message", "raw"
    )
    inner.assert_clean("test_clean")
    assert inner.leaks("test_clean") == []


# --- stdout and stderr, at the fd level ---------------------------------------------------

STREAMS = """
import logging, os, subprocess, sys
import pytest

WRITE = "import os, sys; os.write(int(sys.argv[1]), sys.argv[2].encode())"

@pytest.fixture
def chatty_setup(leakcheck):
    token = leakcheck.secret("bearer")
    print("setting up with", token)
    return token

def test_print_stdout(leakcheck):
    print("debug:", leakcheck.secret("bearer"))

def test_print_stderr(leakcheck):
    print("debug:", leakcheck.secret("bearer"), file=sys.stderr)

def test_subprocess_fd1(leakcheck):
    key = leakcheck.secret("api_key")
    subprocess.run([sys.executable, "-c", WRITE, "1", key], check=True)

def test_subprocess_fd2(leakcheck):
    key = leakcheck.secret("api_key")
    subprocess.run([sys.executable, "-c", WRITE, "2", key], check=True)

def test_os_write(leakcheck):
    os.write(1, leakcheck.secret("cookie").encode())

def test_last_resort(leakcheck):
    token = leakcheck.secret("bearer")
    log = logging.getLogger("gateway.orphan")  # no handler anywhere: logging.lastResort
    log.propagate = False
    try:
        log.warning("retrying with %s", token)
    finally:
        log.propagate = True

def test_setup_phase(chatty_setup):
    pass

def test_clean(leakcheck):
    leakcheck.secret("bearer")
    print("calling upstream: Authorization: Bearer [REDACTED]")
    print("retrying", file=sys.stderr)
    subprocess.run([sys.executable, "-c", WRITE, "1", "child says hello"], check=True)
    log = logging.getLogger("gateway.orphan")
    log.propagate = False
    try:
        log.warning("retrying in %d s", 2)
    finally:
        log.propagate = True
"""


def test_stdout_and_stderr(pytester: pytest.Pytester) -> None:
    inner = run_inner(pytester, STREAMS)
    inner.assert_leak("test_print_stdout", "stdout", "call", "raw", "caller")
    inner.assert_leak("test_print_stderr", "stderr", "call", "raw", "operator")
    inner.assert_leak("test_subprocess_fd1", "stdout", "call", "raw")
    inner.assert_leak("test_subprocess_fd2", "stderr", "call", "raw")
    inner.assert_leak("test_os_write", "stdout", "call", "raw")
    inner.assert_leak("test_last_resort", "stderr", "call", "raw")
    inner.assert_leak("test_last_resort", "log record", "gateway.orphan WARNING message")
    inner.assert_leak("test_setup_phase", "stdout", "setup", "raw")
    inner.assert_clean("test_clean")


# --- output a test reads itself (capsys, capfd) ----------------------------------------

READ_BACK = """
import os, subprocess, sys

WRITE = "import os, sys; os.write(int(sys.argv[1]), sys.argv[2].encode())"

def test_capsys_out(leakcheck, capsys):
    print("calling with", leakcheck.secret("bearer"))
    assert "calling" in capsys.readouterr().out

def test_capsys_err(leakcheck, capsys):
    print("calling with", leakcheck.secret("bearer"), file=sys.stderr)
    assert "calling" in capsys.readouterr().err

def test_capsysbinary(leakcheck, capsysbinary):
    sys.stdout.buffer.write(leakcheck.secret("api_key").encode() + b"\\n")
    assert capsysbinary.readouterr().out

def test_capfd_subprocess(leakcheck, capfd):
    subprocess.run([sys.executable, "-c", WRITE, "1", leakcheck.secret("cookie")], check=True)
    assert capfd.readouterr().out

def test_capfdbinary(leakcheck, capfdbinary):
    os.write(2, leakcheck.secret("cookie").encode())
    assert capfdbinary.readouterr().err

def test_read_twice_and_left_unread(leakcheck, capsys):
    token = leakcheck.secret("bearer")
    print("first")
    capsys.readouterr()
    print("second", token)

def test_clean(leakcheck, capfd):
    leakcheck.secret("bearer")
    print("Authorization: Bearer [REDACTED]")
    assert "REDACTED" in capfd.readouterr().out

def test_capsys_without_leakcheck(capsys):
    print("plain")
    assert capsys.readouterr().out == "plain\\n"
"""


def test_output_the_test_reads_itself(pytester: pytest.Pytester) -> None:
    inner = run_inner(pytester, READ_BACK)
    inner.assert_leak("test_capsys_out", "stdout", "read by capsys", "raw", "caller")
    inner.assert_leak("test_capsys_err", "stderr", "read by capsys", "raw", "operator")
    inner.assert_leak("test_capsysbinary", "stdout", "read by capsysbinary", "raw")
    inner.assert_leak("test_capfd_subprocess", "stdout", "read by capfd", "raw")
    inner.assert_leak("test_capfdbinary", "stderr", "read by capfdbinary", "raw")
    # what the test did not read still reaches the report section
    inner.assert_leak("test_read_twice_and_left_unread", "stdout", "call", "raw")
    inner.assert_clean("test_clean")
    assert inner.outcome("test_capsys_without_leakcheck") == "PASSED"


SHOUTS = """
def test_prints(leakcheck):
    leakcheck.secret("bearer")
    print("calling upstream")
"""


@pytest.mark.parametrize(
    ("capture", "note"),
    [
        ("-s", "reach the terminal masked, a line at a time, and are scanned; writes to file"),
        ("--capture=sys", "writes to file descriptors 1 and 2"),
        ("--capture=tee-sys", "echoed to the terminal masked, a line at a time; writes to file"),
    ],
)
def test_capture_modes_that_let_output_through_are_named(
    pytester: pytest.Pytester, capture: str, note: str
) -> None:
    inner = run_inner(pytester, SHOUTS, capture)
    assert any(line.startswith("leakcheck: ") and note in line for line in inner.result.outlines)
    # without a header (-q, the way CI runs) the summary says it
    quiet = run_inner(pytester, SHOUTS, capture, "-q")
    said = [line for line in quiet.result.outlines if note in line]
    assert len(said) == 1 and not said[0].startswith("leakcheck: "), said
    # what a test prints reaches a sink in each mode (under -s, through the masked echo:
    # tests/test_echo_masked.py); what it leaves unseen is the note above
    inactive = inner.record("test_prints")["inactive_sinks"]
    assert "stdout" not in inactive, inactive


def test_default_capture_adds_no_header_note(pytester: pytest.Pytester) -> None:
    inner = run_inner(pytester, SHOUTS)
    notes = [line for line in inner.result.outlines if line.startswith("leakcheck: ")]
    # the seed, and what masking cannot reach (said in every session); no capture note
    assert len(notes) == 2 and "canary seed" in notes[0], notes
    assert "before the test registered it" in notes[1], notes
    inactive = inner.record("test_prints")["inactive_sinks"]
    assert not {"stdout", "stderr"} & set(inactive), inactive


# --- warnings and crash hooks -------------------------------------------------------------

HOOKS = """
import sys, threading, warnings

def test_warning(leakcheck):
    sig = leakcheck.secret("signature")
    warnings.warn(f"deprecated: https://cdn.example/file?sig={sig}", DeprecationWarning)

def test_thread_excepthook(leakcheck):
    token = leakcheck.secret("bearer")
    def worker():
        raise RuntimeError(f"worker died holding {token}")
    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()

def test_unraisablehook(leakcheck):
    token = leakcheck.secret("bearer")
    class Session:
        def __del__(self):
            raise RuntimeError(f"close failed for {token}")
    session = Session()
    del session

def test_sys_excepthook(leakcheck):
    token = leakcheck.secret("bearer")
    try:
        raise RuntimeError(f"fatal {token}")
    except RuntimeError:
        sys.excepthook(*sys.exc_info())

def test_clean(leakcheck):
    leakcheck.secret("bearer")
    warnings.warn("endpoint deprecated", DeprecationWarning)
    def worker():
        raise RuntimeError("worker died")
    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    class Session:
        def __del__(self):
            raise RuntimeError("close failed")
    session = Session()
    del session
"""


def test_warnings_and_crash_hooks(pytester: pytest.Pytester) -> None:
    inner = run_inner(pytester, HOOKS)
    leaks = inner.leaks("test_warning")
    warning_paths = [path for sink, path, *_ in leaks if sink == "warning"]
    assert any(
        p.startswith("DeprecationWarning ") and "test_inner.py:" in p for p in warning_paths
    ), leaks
    inner.assert_leak("test_warning", "warning", warning_paths[0], "raw", "operator")
    inner.assert_leak(
        "test_thread_excepthook", "crash hook", "threading.excepthook", "raw", "operator"
    )
    inner.assert_leak("test_unraisablehook", "crash hook", "sys.unraisablehook", "raw")
    inner.assert_leak("test_sys_excepthook", "crash hook", "sys.excepthook", "raw")
    inner.assert_clean("test_clean")


# --- a careful gateway: no false positive from our own instrumentation --------------------

CAREFUL = '''
import logging, secrets, sys, threading, warnings
import httpx, respx

log = logging.getLogger("gateway.careful")

class Gateway:
    """Holds the credential, calls the API, returns an envelope; redacts properly."""

    def __init__(self, token, host):
        self._token = token
        self._host = host

    def call(self, operation, payload):
        request_id = secrets.token_hex(16)
        headers = {"Authorization": f"Bearer {self._token}"}
        log.debug("calling %s", operation,
                  extra={"headers": {k: "[REDACTED]" for k in headers}, "host": self._host})
        try:
            with httpx.Client() as client:
                response = client.post("https://api.example/deployments", json=payload,
                                       headers=headers)
                response.raise_for_status()
        except httpx.HTTPStatusError as exc:
            status = exc.response.status_code
            log.warning("upstream rejected %s with %d (request %s, host %s)", operation,
                        status, request_id, self._host)
            print(f"request {request_id}: upstream status {status}")
            return {"ok": False, "code": "AUTH_FAILED", "message": "credentials rejected",
                    "action": "stop_and_report", "retryable": False, "http_status": status,
                    "request_id": request_id, "operation": "deploy"}
        return {"ok": True, "request_id": request_id}

def test_careful_gateway(leakcheck):
    token = leakcheck.secret("bearer")
    host = leakcheck.secret("hostname")
    prose = leakcheck.secret("prose")
    with respx.mock:
        respx.post("https://api.example/deployments").respond(
            401, text=f"bad token {token}. {prose}")
        result = Gateway(token, host).call("create_deployment", {"repo": "web"})
    leakcheck.expose(result)
    assert result["code"] == "AUTH_FAILED"
    warnings.warn("retry budget low", ResourceWarning)
    worker = threading.Thread(target=lambda: log.info("background refresh done"))
    worker.start()
    worker.join()
'''


def test_careful_gateway_passes(pytester: pytest.Pytester) -> None:
    inner = run_inner(pytester, CAREFUL, "-W", "always")
    inner.assert_clean("test_careful_gateway")
    assert inner.result.ret == pytest.ExitCode.OK
    # the hostname went to an operator log: reported, allowed
    allowed = [leak for leak in inner.leaks("test_careful_gateway") if leak[3]]
    assert {(sink, path) for sink, path, *_ in allowed} >= {
        ("log record", "gateway.careful WARNING message"),
        ("log record", "gateway.careful DEBUG extra.host"),
    }, allowed
