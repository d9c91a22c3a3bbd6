"""Where pytest lets a test's output reach the terminal, it reaches it masked.

``-s``/``--capture=no`` and ``--capture=tee-sys``'s echo of what it captures wrote a
gateway's printed token to the terminal as it was (found trying the plugin as a newcomer:
``leakcheck scan --canaries-from`` on the terminal output found it); under ``-s`` nothing
scanned it, and the test passed. Now both echoes are masked a line at a time (a token
written in two pieces is masked whole; a prompt without its newline when flushed), and
under ``-s`` what a test writes to ``sys.stdout``/``sys.stderr`` while it runs is judged
(``printed with pytest -s``). Writes past them, to file descriptors 1 and 2, are said in
the capture note. Run in a subprocess: the streams are the process's own."""

from __future__ import annotations

import sys

import pytest
from conftest import inner_outcomes, self_scan

from leakcheck.canaries import CanaryFactory

pytest_plugins = ["pytester"]

SEED = "echo-masked"

TESTS = """
import sys

def test_prints_its_token(leakcheck):
    token = leakcheck.secret("bearer")
    print(f"calling upstream with {token}")
    leakcheck.expose({"ok": False})

def test_writes_its_token_in_pieces(leakcheck):
    token = leakcheck.secret("bearer")
    sys.stderr.write("auth failed for " + token[:20])
    sys.stderr.write(token[20:] + " (retrying)\\n")
    leakcheck.expose({"ok": False})

def test_prompts_with_its_token(leakcheck):
    token = leakcheck.secret("bearer")
    print(f"token {token}? ", end="", flush=True)
    leakcheck.expose({"ok": False})

def test_prints_nothing_secret(leakcheck):
    leakcheck.secret("bearer")
    print("calling upstream")
    leakcheck.expose({"ok": False})

def test_without_the_fixture():
    print("plain line, shown as it is")
"""

LEAKY = ["test_prints_its_token", "test_writes_its_token_in_pieces", "test_prompts_with_its_token"]


# (-p no:capture: pytest has no capture at all, and its output went raw, unjudged, with the
# capture mode read as "fd": found by a hunting helper)
@pytest.mark.parametrize("capture", ["-s", "--capture=tee-sys", "-p no:capture"])
def test_output_that_reaches_the_terminal_is_masked(
    pytester: pytest.Pytester, capture: str
) -> None:
    pytester.makepyfile(test_inner=TESTS)
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "-rA", f"--leakcheck-seed={SEED}", *capture.split()
    )
    assert inner_outcomes(result) == {
        **dict.fromkeys(LEAKY, "FAILED"),
        "test_prints_nothing_secret": "PASSED",
        "test_without_the_fixture": "PASSED",
    }
    shown = "\n".join(result.outlines + result.errlines)
    tokens = [
        CanaryFactory(SEED, namespace=f"test_inner.py::{test}").secret("bearer") for test in LEAKY
    ]
    self_scan(shown, tokens, f"terminal under {capture}")
    assert "calling upstream with «canary:bearer:raw»" in shown, shown
    assert "plain line, shown as it is" in shown
    if capture != "--capture=tee-sys":  # (nothing else saw it: the echo is the sink)
        assert "stdout printed with pytest -s  form raw" in shown, shown
        assert "stderr printed with pytest -s  form raw" in shown, shown


def test_the_echo_masks_a_line_at_a_time_and_shows_a_prompt_when_flushed() -> None:
    """A token written a character at a time is masked whole (masked write by write, each
    character went out as it was); a prompt without its newline is shown, masked, when
    flushed; what is written while recording is kept as written."""
    import io

    from leakcheck.pytest_plugin.capture_fixtures import MaskedEcho

    def mask(text: str) -> str:
        return text.replace("SECRET", "«masked»")

    terminal = io.StringIO()
    echo = MaskedEcho(terminal, mask)
    echo.start_recording()
    for char in "using SECRET\n":
        echo.write(char)
    echo.write("retry with SEC")
    echo.write("RET? ")
    assert terminal.getvalue() == "using «masked»\n"
    echo.flush()
    assert terminal.getvalue() == "using «masked»\nretry with «masked»? "
    assert echo.stop_recording() == "using SECRET\nretry with SECRET? "
    echo.write("after\n")
    assert echo.stop_recording() == ""  # (no longer recording)
    assert terminal.getvalue().endswith("? after\n")


def test_a_flush_inside_a_run_of_key_characters_holds_the_run_back() -> None:
    """``write("progress " + hex[:30]); flush(); write(hex[30:] + " done\\n")``: the flushed
    half was masked alone and shown, a piece of the token's hex that no needle matches.
    The run of credential characters at a flushed line's end waits for what follows it
    (or for the test's end)."""
    import io

    from leakcheck.pytest_plugin.capture_fixtures import MaskedEcho

    def mask(text: str) -> str:
        return text.replace("0123456789abcdef", "«masked»")

    terminal = io.StringIO()
    echo = MaskedEcho(terminal, mask)
    echo.write("progress 0123456")
    echo.flush()
    assert terminal.getvalue() == "progress "  # (the run waits)
    echo.write("789abcdef done")
    echo.flush()
    assert terminal.getvalue() == "progress «masked» "  # ("done" may go on too)
    echo.write("\n")
    assert terminal.getvalue() == "progress «masked» done\n"
    echo.write("Password: ")  # (a prompt is shown whole)
    echo.flush()
    assert terminal.getvalue().endswith("Password: ")
    echo.write("tail0123")
    echo.flush_all()  # (the test ended: everything is shown)
    assert terminal.getvalue().endswith("Password: tail0123")


DEBUGS = """
def test_debugs(leakcheck):
    token = leakcheck.secret("bearer")
    breakpoint()
    print("after the debugger")
    leakcheck.expose({"ok": True})
"""


def test_a_debugger_session_under_s_is_shown_masked_and_not_judged(
    pytester: pytest.Pytester,
) -> None:
    """``p token`` at a ``breakpoint()`` under ``-s`` is the developer's output, not the
    test's (pytest suspends its capture for the debugger in every other mode): shown
    masked, never a failure."""
    pytester.makepyfile(test_inner=DEBUGS)
    result = pytester.run(
        sys.executable, "-m", "pytest", "-p", "no:randomly", "-rA",
        f"--leakcheck-seed={SEED}", "-s", stdin=b"p token\nc\n",
    )  # fmt: skip
    assert inner_outcomes(result) == {"test_debugs": "PASSED"}
    shown = "\n".join(result.outlines + result.errlines)
    assert "(Pdb) '«canary:bearer:raw»'" in shown and "after the debugger" in shown, shown
    token = CanaryFactory(SEED, namespace="test_inner.py::test_debugs").secret("bearer")
    self_scan(shown, [token], "terminal under -s")


BASIC_CONFIG = """
import logging, sys
import pytest

logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(message)s", force=True)
HANDLER = logging.getLogger().handlers[0]
SHOWN = sys.stdout

@pytest.hookimpl(trylast=True)  # after leakcheck gave the streams back
def pytest_unconfigure(config):
    with open("restored.txt", "w") as out:
        out.write(str(HANDLER.stream is SHOWN and sys.stdout is SHOWN))
"""

LOGS = """
import logging

def test_logs_its_token(leakcheck):
    token = leakcheck.secret("bearer")
    logging.getLogger("gw").info("calling upstream with %s", token)
    leakcheck.expose({"ok": False})
"""


def test_a_conftests_log_handler_on_the_terminal_is_masked_under_s(
    pytester: pytest.Pytester,
) -> None:
    """A conftest's ``logging.basicConfig(stream=sys.stdout)`` made its handler before the
    plugin put the echo in place: the handler held the terminal's stream itself, and under
    ``-s`` printed the token raw (the test failed on the log record). It is pointed at the
    echo for the session, and given its stream back at the end."""
    pytester.makeconftest(BASIC_CONFIG)
    pytester.makepyfile(test_inner=LOGS)
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "-rA", f"--leakcheck-seed={SEED}", "-s"
    )
    assert inner_outcomes(result) == {"test_logs_its_token": "FAILED"}  # (the log record)
    assert "calling upstream with «canary:bearer:raw»" in result.stdout.str()
    token = CanaryFactory(SEED, namespace="test_inner.py::test_logs_its_token").secret("bearer")
    self_scan("\n".join(result.outlines + result.errlines), [token], "terminal under -s")
    assert (pytester.path / "restored.txt").read_text() == "True"


LOGURU_CONFTEST = """
import sys
import pytest
from loguru import logger  # its default handler holds the terminal's stderr from here on

logger.remove()
HANDLER = logger.add(sys.stderr, format="{message}")
SHOWN = sys.stderr

@pytest.hookimpl(trylast=True)  # after leakcheck gave the streams back
def pytest_unconfigure(config):
    stream = logger._core.handlers[HANDLER]._sink._stream
    with open("restored.txt", "w") as out:
        out.write(str(stream is SHOWN))
"""

LOGURU_LOGS = """
from loguru import logger

def test_logs_its_token(leakcheck):
    token = leakcheck.secret("bearer")
    logger.info("calling upstream with {}", token)
    leakcheck.expose({"ok": False})
"""


def test_a_loguru_handler_made_by_a_conftest_is_masked_under_s(pytester: pytest.Pytester) -> None:
    """loguru's handler on ``sys.stderr``, added when a conftest imported the app: it held
    the terminal's stream itself. The loguru sink points it at the echo for the session
    (``POINT_STREAMS``) and back at the end."""
    pytest.importorskip("loguru")  # (a dev dependency: never skipped in CI)
    pytester.makeconftest(LOGURU_CONFTEST)
    pytester.makepyfile(test_inner=LOGURU_LOGS)
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "-rA", f"--leakcheck-seed={SEED}", "-s"
    )
    assert inner_outcomes(result) == {"test_logs_its_token": "FAILED"}  # (the loguru sink)
    shown = "\n".join(result.outlines + result.errlines)
    assert "calling upstream with «canary:bearer:raw»" in shown, shown
    token = CanaryFactory(SEED, namespace="test_inner.py::test_logs_its_token").secret("bearer")
    self_scan(shown, [token], "terminal under -s")
    assert (pytester.path / "restored.txt").read_text() == "True"


OTEL_CONFTEST = """
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

# the app's development tracing, set up at import: the exporter's ``out`` is sys.stdout as
# it was when the SDK was imported (a default argument), the terminal's own stream
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
trace.set_tracer_provider(provider)
"""

OTEL_TESTS = """
from opentelemetry import trace

def test_traces_its_token(leakcheck):
    token = leakcheck.secret("bearer")
    with trace.get_tracer("gw").start_as_current_span("call") as span:
        span.set_attribute("http.request.header.authorization", token)
"""


def test_a_console_span_exporter_under_s_prints_masked(pytester: pytest.Pytester) -> None:
    """OpenTelemetry's console exporters keep the terminal's stream from their import: a
    span's attributes reached the terminal raw under ``-s`` (found by a hunting helper).
    Their exports go through the masked echo now (``otel_sink.POINT_STREAMS``), and what
    the test printed so is judged."""
    pytester.makeconftest(OTEL_CONFTEST)
    pytester.makepyfile(test_inner=OTEL_TESTS)
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "-p", "no:cacheprovider", "-s", "-rA", f"--leakcheck-seed={SEED}"
    )
    text = "\n".join(result.outlines + result.errlines)
    token = CanaryFactory(SEED, namespace="test_inner.py::test_traces_its_token").secret("bearer")
    self_scan(text, [token], "the terminal")
    assert '"http.request.header.authorization": "\u00abcanary:bearer:' in text, text
