"""Attributes a plugin or a conftest adds to a test's report after leakcheck masked it
(pytest-html's ``extras``: a text, a URL, a screenshot the test attached) are written as
they are by pytest-html, ``--report-log`` and xdist. They are masked before any of those
reads them. Tried with pytest-html 4.2 and pytest-reportlog 1.0 in a fresh venv: the HTML
report and the report log held the token raw (and base64) before. Here an inner
conftest's outermost ``pytest_runtest_makereport`` wrapper sets them as pytest-html does,
and its last ``pytest_runtest_logreport`` writes what a report log writes."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import inner_outcomes, self_scan

from leakcheck.canaries import CanaryFactory

pytest_plugins = ["pytester"]

SEED = "added-attributes"

CONFTEST = """
import json
import pytest

@pytest.hookimpl(wrapper=True, tryfirst=True)  # outermost: after leakcheck masked it
def pytest_runtest_makereport(item, call):
    report = yield
    shown = getattr(item, "attached", None)
    if shown is not None and report.when == "call":
        report.extras = [
            {"name": "tok", "format_type": "text", "content": f"token {shown}"},
            {"format_type": "url", "content": f"https://api.example/?key={shown}"},
        ]
        report.response_headers = ("Authorization", f"Bearer {shown}")
        report.attempts = 3
        # a section, and the failure text appended to (under xdist the controller, which
        # knows no secret, printed both raw)
        report.sections.append(("gateway last request", f"Authorization: Bearer {shown}"))
        if report.failed:
            report.longrepr = f"{report.longrepr}\\nlast request: Bearer {shown}"
    return report

@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report):
    data = item_config.hook.pytest_report_to_serializable(
        config=item_config, report=report
    )
    with open("report-log.jsonl", "a", encoding="utf-8") as out:
        out.write(json.dumps(data, default=repr) + "\\n")

def pytest_configure(config):
    global item_config
    item_config = config
"""

TESTS = """
def test_attaches_its_token(leakcheck, request):
    token = leakcheck.secret("bearer")
    request.node.attached = token
    leakcheck.expose({"ok": False, "code": "AUTH_FAILED"})


def test_fails_on_its_own(leakcheck, request):
    request.node.attached = leakcheck.secret("bearer")
    assert 1 == 2
"""


@pytest.mark.parametrize("workers", [None, "2"])
def test_attributes_added_after_makereport_are_masked(
    pytester: pytest.Pytester, workers: str | None
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_inner=TESTS)
    args = ["-p", "no:randomly", "-rA", f"--leakcheck-seed={SEED}"]
    if workers:
        args += ["-n", workers]
    result = pytester.runpytest(*args)
    assert inner_outcomes(result) == {
        "test_attaches_its_token": "PASSED",
        "test_fails_on_its_own": "FAILED",
    }
    written = Path(pytester.path, "report-log.jsonl").read_text(encoding="utf-8")
    token = CanaryFactory(SEED, namespace="test_inner.py::test_attaches_its_token").secret("bearer")
    failing = CanaryFactory(SEED, namespace="test_inner.py::test_fails_on_its_own").secret("bearer")
    self_scan(written, [token, failing], "report log")
    shown = "\n".join(result.outlines + result.errlines)
    assert "gateway last request" in shown and "last request: Bearer «canary:" in shown, shown
    self_scan(shown, [failing], "inner output")
    # masked where they lay, the data kept as written: a label, a tuple, a count
    call = next(
        line
        for line in written.splitlines()
        if '"when": "call"' in line and "test_attaches_its_token" in line
    )
    assert '"content": "token \\u00abcanary:bearer:raw\\u00bb"' in call, call
    assert '"response_headers": ["Authorization", "Bearer \\u00abcanary:bearer:raw' in call
    assert '"attempts": 3' in call, call
    self_scan("\n".join(result.outlines + result.errlines), [token], "inner output")


def test_added_data_is_masked_in_place_and_kept_when_clean() -> None:
    """Strings in lists, tuples and dicts (keys too) are masked, the container kind kept;
    an attribute with nothing to mask is the same object; one that is not such data is
    left as it is unless its ``str`` or ``repr`` shows a secret (``--report-log`` writes
    the ``str`` of what JSON cannot hold); pytest's own are not touched here."""
    from types import SimpleNamespace

    from leakcheck.pytest_plugin.reports import mask_added_attributes

    def mask(text: str) -> str:
        return text.replace("SECRET", "«masked»")

    clean_extras = [{"name": "log", "content": "nothing here"}]
    opaque = object()
    refused = ConnectionError("refused for SECRET")

    class Shown:
        def __str__(self) -> str:
            return "a client"

        def __repr__(self) -> str:
            return "Shown(token='SECRET')"

    report = SimpleNamespace(
        nodeid="test_x.py::test_SECRET",  # (pytest's own: masked by mask_report)
        extras=clean_extras,
        headers=("Authorization", "Bearer SECRET"),
        by_key={"SECRET": ["a", ("b", "SECRET")]},
        opaque=opaque,
        count=3,
        exception=refused,
        shown=Shown(),
        clients=[Shown(), 2],
    )
    mask_added_attributes(report, mask)  # type: ignore[arg-type]
    assert report.extras is clean_extras and report.opaque is opaque and report.count == 3
    # an object whose str or repr shows a secret: its masked text (a report log writes it)
    assert report.exception == "refused for «masked»" and report.shown == "Shown(token='«masked»')"
    # (inside a container too: the report log writes the str of the list, each repr in it)
    assert report.clients == ["Shown(token='«masked»')", 2]
    assert report.headers == ("Authorization", "Bearer «masked»")
    assert report.by_key == {"«masked»": ["a", ("b", "«masked»")]}
    assert report.nodeid == "test_x.py::test_SECRET"


def test_pytests_own_report_attributes_are_not_asked_about() -> None:
    """A report with nothing added costs no masking: pytest's own attributes (pytest 9's
    ``_id`` node id object among them) are masked where pytest writes them, and asking
    about each of them, every report of every test, was 0.8 M instructions a test."""
    from leakcheck.pytest_plugin.reports import mask_added_attributes

    asked: list[str] = []

    def mask(text: str) -> str:
        asked.append(text)
        return text

    report = pytest.TestReport(
        "test_x.py::test_y[1]", ("test_x.py", 1, "test_y[1]"), {}, "passed", None, "call",
        user_properties=[("k", "v")],
    )  # fmt: skip
    report.wasxfail = "reason"
    mask_added_attributes(report, mask)
    assert asked == [], asked
