"""A rich ``RichHandler`` whose tracebacks show each frame's locals writes them to the
app's log: a local holding a token is emitted, while the handler's ``format`` is a plain
formatter's, and the record's fields hold no token. Found trying the plugin as a newcomer
(rich 15, a handler writing to a file, as fastmcp's default handler is a RichHandler): the
test passed with the token in the app's log. The record is now judged as the handler
renders its exception too; the twin without locals passes. The rendering writes nothing
to the app's own console."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import inner_outcomes, self_scan

from leakcheck.canaries import CanaryFactory

pytest_plugins = ["pytester"]

SEED = "rich-locals"

TESTS = """
import logging
import pytest
from rich.console import Console
from rich.logging import RichHandler

log = logging.getLogger("gw.rich")


def call(token):
    headers = {"Authorization": f"Bearer {token}"}
    try:
        raise ConnectionError("upstream refused the connection")
    except ConnectionError:
        log.exception("call failed")
    return {"ok": False, "code": "UPSTREAM_DOWN"}


@pytest.mark.parametrize("show_locals", [True, False])
def test_logs_with_rich(leakcheck, show_locals):
    written = open(f"app-{show_locals}.log", "w", encoding="utf-8")
    handler = RichHandler(
        console=Console(file=written, width=120),
        rich_tracebacks=True,
        tracebacks_show_locals=show_locals,
    )
    log.addHandler(handler)
    log.propagate = False
    try:
        leakcheck.expose(call(leakcheck.secret("bearer")))
    finally:
        log.removeHandler(handler)
        written.close()
"""


def test_a_rich_handler_showing_locals_is_judged_as_it_renders(pytester: pytest.Pytester) -> None:
    pytest.importorskip("rich.logging")  # (a dev dependency: never skipped in CI)
    pytester.makepyfile(test_inner=TESTS)
    result = pytester.runpytest("-p", "no:randomly", "-rA", f"--leakcheck-seed={SEED}")
    assert inner_outcomes(result) == {
        "test_logs_with_rich[True]": "FAILED",
        "test_logs_with_rich[False]": "PASSED",
    }
    shown = "\n".join(result.outlines + result.errlines)
    assert "log record gw.rich ERROR rendered by RichHandler (tracebacks_show_locals)" in shown
    token = CanaryFactory(SEED, namespace="test_inner.py::test_logs_with_rich[True]").secret(
        "bearer"
    )
    self_scan(shown, [token], "inner output")
    # what the app's handler wrote: the token among the locals, one traceback only
    app_log = Path(pytester.path, "app-True.log").read_text(encoding="utf-8")
    assert token.value in app_log and app_log.count("Traceback (most recent call last)") == 1
