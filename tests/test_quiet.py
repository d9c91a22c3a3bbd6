"""Quiet when clean, short when not: one root cause is one entry of a failure ("also in:"
for the rest; the JSON report keeps every occurrence), places named as a person reads them,
no per-session noise about plugins whose library is missing or a sentry-sdk the app never
set up, a reason for every failed test in the JSON report, ``-p no:logging`` and a
missing ``trustme`` said plainly.

Inner suites run in process (``pytester``) with a fixed seed; their output is searched for
every canary they planted, rebuilt from the seed and the test ids."""

from __future__ import annotations

import json
import sys
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest
from conftest import QUIET_INNER_ARGS, inner_outcomes, self_scan

from leakcheck import CanaryFactory, extensions
from leakcheck.findings import Finding
from leakcheck.harness import LeakCheck
from leakcheck.policy import SinkClass
from leakcheck.pytest_plugin import judge
from leakcheck.records import Assertion, CaseResult, TestRecord
from leakcheck.verdict import (
    ALSO_IN_SHOWN,
    Leak,
    form_family,
    format_leaks,
    root_causes,
    sink_label,
)

pytest_plugins = ["pytester"]

SEED = "quiet-1"


def _leak(
    sink: str,
    path: str,
    *,
    secret: str = "bearer#1",
    form: str = "raw",
    sink_class: SinkClass = SinkClass.OPERATOR,
    allowed: bool = False,
    note: str = "",
) -> Leak:
    kind = secret.partition("#")[0]
    finding = Finding(
        secret, kind, "direct", form, sink, 1, 1, 0, 10, f"x «canary:{kind}:{form}» y"
    )
    return Leak(finding, sink, sink_class, path, allowed, note)


def _run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    path = pytester.path / "report.json"
    result = pytester.runpytest(
        *QUIET_INNER_ARGS, "-rA", f"--leakcheck-seed={SEED}", f"--leakcheck-report={path}",
        *args,
    )  # fmt: skip
    text = "\n".join(result.outlines + result.errlines)
    assert "INTERNALERROR" not in text and "Traceback (most recent call last)" not in text
    report = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    return result, report


def _scan(result: pytest.RunResult, *tests: str, kinds: tuple[str, ...] = ("bearer",)) -> None:
    """No form of any canary the inner ``tests`` planted (in order, ``kinds``) in its output."""
    secrets = []
    for test in tests:
        factory = CanaryFactory(SEED, namespace=f"test_inner.py::{test}")
        secrets += [factory.secret(kind) for kind in kinds]
    self_scan("\n".join(result.outlines + result.errlines), secrets, "inner pytest output")


def _section(result: pytest.RunResult, test: str) -> list[str]:
    """The lines of ``test``'s failure section."""
    lines, inside = [], False
    for line in result.outlines:
        if line.startswith("_") and line.rstrip("_ ").endswith(f" {test}"):
            inside = True
            continue
        if inside and (line.startswith("____") or line.startswith("=====")):
            break
        if inside:
            lines.append(line)
    assert lines, f"no failure section for {test}"
    return lines


# --- one root cause, one entry ----------------------------------------------------------------


def test_form_families() -> None:
    whole = ["raw", "pct-plus", "base64@2", "json-nested-ascii", "repr", "base64>json-ascii"]
    assert {form_family(f) for f in whole} == {"whole"}
    assert form_family("masked-tail-4") == "masked-tail"
    assert form_family("masked-head-6") == "masked-head"
    assert form_family("prefix-14") == form_family("base64>prefix-12") == "prefix"
    assert form_family("suffix-16") == "suffix"
    assert form_family("line-2") == "line"
    assert form_family("base64-wrapped@1") == "base64-wrapped"


def test_one_root_cause_is_one_entry_the_most_caller_visible_in_full() -> None:
    leaks = [
        _leak("log record", "examples.leaky DEBUG message", note="below WARNING"),
        _leak("log record", "httpx INFO message", form="pct-plus"),
        _leak("stderr", "call"),
        _leak("tool response", "$.message", sink_class=SinkClass.CALLER),  # seen last
        _leak("log record", "gw ERROR exc_info.request", sink_class=SinkClass.LATENT,
              allowed=True),
        _leak("tool response", "$.detail", form="masked-tail-4", sink_class=SinkClass.CALLER),
        _leak("log record", "gw DEBUG args", secret="api_key#1", form="pct"),
    ]  # fmt: skip
    groups = root_causes(leaks)
    # bearer: the whole value, and its masked tail; api_key: the whole value
    assert [(g[0].finding.secret_id, form_family(g[0].finding.form)) for g in groups] == [
        ("bearer#1", "whole"),
        ("bearer#1", "masked-tail"),
        ("api_key#1", "whole"),
    ]
    assert sorted(map(id, (leak for g in groups for leak in g))) == sorted(map(id, leaks))
    head = groups[0]
    assert (head[0].sink, head[0].path) == ("tool response", "$.message")  # caller first
    assert head[-1].allowed  # allowed after every forbidden one
    # an echo (stderr) after the sink that made the text
    assert [leak.sink for leak in head[1:4]] == ["log record", "log record", "stderr"]

    text = format_leaks(leaks, header="leakcheck: test")
    lines = text.splitlines()
    assert lines[0] == "leakcheck: test"
    assert lines.count("bearer#1 (bearer, direct secret):") == 1
    full = [line for line in lines if line.startswith(("  [LEAK]", "  [allowed]", "  [latent]"))]
    assert full == [
        "  [LEAK] caller: tool response $.message  form raw  line 1",
        "  [LEAK] caller: tool response $.detail  form masked-tail-4  line 1",
        "  [LEAK] operator: log record gw DEBUG args  form pct  line 1",
    ]
    also = [line.strip() for line in lines if "also in:" in line]
    assert also == [
        "also in: log record examples.leaky DEBUG message (operator), "
        "log record httpx INFO message (operator, form pct-plus), "
        "stderr, while the test ran (operator), "
        "log record gw ERROR exc_info.request (latent, allowed)"
    ]
    # the note of an occurrence that is not shown in full stays in the JSON report only
    assert "below WARNING" not in text


def test_what_production_emits_is_shown_before_what_it_would_not() -> None:
    leaks = [
        _leak("log record", "gw DEBUG message", note="not emitted in production: DEBUG is below"),
        _leak("log record", "gw ERROR exc_info.traceback"),
    ]
    (group,) = root_causes(leaks)
    assert [leak.path for leak in group] == ["gw ERROR exc_info.traceback", "gw DEBUG message"]


def test_also_in_is_bounded() -> None:
    leaks = [_leak("tool response", "$.message", sink_class=SinkClass.CALLER)]
    leaks += [_leak("log record", f"gw{n} WARNING message") for n in range(ALSO_IN_SHOWN + 3)]
    leaks.append(_leak("log record", "gw0 WARNING message"))  # a second hit at one place
    also = [line for line in format_leaks(leaks).splitlines() if "also in:" in line]
    assert len(also) == 1
    named = also[0].split("also in: ", 1)[1].split(", ")
    assert len(named) == ALSO_IN_SHOWN + 1 and named[-1] == "+3 more"
    assert len(set(named)) == len(named)  # each place once


def test_a_group_of_allowed_hits_only_stays_allowed() -> None:
    leaks = [
        _leak("log record", "gw INFO message", allowed=True),
        _leak("stderr", "call", allowed=True),
    ]
    lines = format_leaks(leaks).splitlines()
    assert lines[1] == "  [allowed] operator: log record gw INFO message  form raw  line 1"
    assert lines[-1].strip() == "also in: stderr, while the test ran"


@pytest.mark.parametrize(
    ("sink", "path", "label"),
    [
        ("stdout", "call", "stdout, while the test ran"),
        ("stdout", "setup", "stdout, during fixture setup"),
        ("stderr", "teardown", "stderr, during fixture teardown"),
        ("stderr", "pytest log capture (call)", "log lines pytest captured while the test ran"),
        ("stdout", "read by capsys", "stdout the test read back itself (capsys)"),
        ("crash hook", "sys.excepthook", "uncaught exception (sys.excepthook)"),
        (
            "crash hook",
            "threading.excepthook",
            "uncaught exception in a thread (threading.excepthook)",
        ),
        ("crash hook", "sys.unraisablehook", "unraisable exception (sys.unraisablehook)"),
        ("exception", "ValueError.args", "exception that reached the test ValueError.args"),
        # already readable: as they were
        ("tool response", "$.message", "tool response $.message"),
        ("log record", "httpx INFO message", "log record httpx INFO message"),
        ("stdout", "something else", "stdout something else"),
    ],
)
def test_sink_labels(sink: str, path: str, label: str) -> None:
    assert sink_label(sink, path) == label


LEAKY = """
import logging, sys

class UpstreamError(Exception):
    pass

def test_everywhere(leakcheck):
    token = leakcheck.secret("bearer")
    log = logging.getLogger("gateway.http")
    log.warning("calling with headers %s", {"Authorization": f"Bearer {token}"})
    print("retrying with", token, file=sys.stderr)
    print("debug: token", token)
    leakcheck.expose({"ok": False, "message": f"upstream rejected Bearer {token}"})

def test_clean(leakcheck):
    leakcheck.secret("bearer")
    logging.getLogger("gateway.http").warning("calling upstream")
"""


def test_a_secret_in_many_sinks_fails_once_with_also_in(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=LEAKY)
    result, report = _run(pytester)
    assert inner_outcomes(result) == {"test_everywhere": "FAILED", "test_clean": "PASSED"}
    _scan(result, "test_everywhere", "test_clean")
    section = _section(result, "test_everywhere")
    full = [line for line in section if line.startswith("  [LEAK]")]
    assert full == ["  [LEAK] caller: tool response $.message  form raw  line 1"], section
    also = [line.strip() for line in section if line.strip().startswith("also in: ")]
    assert len(also) == 1
    for place in (
        "log record gateway.http WARNING message (operator)",
        "stderr, while the test ran (operator)",
        "stdout, while the test ran",  # caller, as the head: no tag
    ):
        assert place in also[0], also
    record = next(r for r in report["tests"] if r["test"].endswith("test_everywhere"))
    # the JSON report keeps every occurrence, the verdict counts every forbidden one
    assert record["forbidden"] == sum(not f["allowed"] for f in record["findings"]) >= 5
    assert {f["sink"] for f in record["findings"]} >= {
        "tool response", "log record", "stdout", "stderr"
    }  # fmt: skip
    assert {(f["sink"], f["path"]) for f in record["findings"]} >= {
        ("stdout", "call"),  # JSON keys and values as they always were
        ("stderr", "pytest log capture (call)"),
    }
    header = next(line for line in section if line.startswith("leakcheck: "))
    assert header.startswith(f"leakcheck: {record['forbidden']} forbidden hits of 1 secret(s), ")
    assert "1 root cause (canary seed quiet-1)" in header


# --- no noise in every session ----------------------------------------------------------------

QUIET = """
def test_passes(leakcheck):
    leakcheck.secret("bearer")

def test_leaks(leakcheck):
    print(leakcheck.secret("bearer"))
"""


def test_a_sentry_sdk_the_app_never_set_up_is_not_said(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=QUIET)
    result, report = _run(pytester)
    assert inner_outcomes(result) == {"test_passes": "PASSED", "test_leaks": "FAILED"}
    out = result.stdout.str()
    assert "sentry event" not in out  # neither in the failure nor in the summary
    # the JSON report still says it, for each test
    assert all("sentry event" in r["inactive_sinks"] for r in report["tests"]), report["tests"]

    verbose, _ = _run(pytester, "-v")
    failure = "\n".join(_section(verbose, "test_leaks"))
    assert "sinks inactive: sentry event (no active sentry_sdk client" in failure
    assert "sink inactive in 2 test(s): sentry event (no active" in verbose.stdout.str()
    _scan(result, "test_passes", "test_leaks")
    _scan(verbose, "test_passes", "test_leaks")


SET_UP = """
import sentry_sdk
from sentry_sdk.transport import Transport

class Recorder(Transport):
    def __init__(self):
        super().__init__({"dsn": "http://public@127.0.0.1:9/1"})
        self.envelopes = []

    def capture_envelope(self, envelope):
        self.envelopes.append(envelope)

def test_a_app_sets_sentry_up(leakcheck):
    leakcheck.secret("bearer")
    client = sentry_sdk.Client(transport=Recorder(), default_integrations=False)
    assert next(s for s in leakcheck.sinks if s.name == "sentry event").inactive_reason == ""
    client.close()

def test_b_without_a_client(leakcheck):
    print(leakcheck.secret("bearer"))
"""


def test_sentry_is_said_once_the_app_set_it_up(pytester: pytest.Pytester) -> None:
    """The app set sentry up in one test: another test with no client is a blind spot
    worth saying, in its failure and in the summary."""
    pytester.makepyfile(test_inner=SET_UP)
    result, _ = _run(pytester)
    assert inner_outcomes(result) == {
        "test_a_app_sets_sentry_up": "PASSED",
        "test_b_without_a_client": "FAILED",
    }
    failure = "\n".join(_section(result, "test_b_without_a_client"))
    assert "sinks inactive: sentry event (no active sentry_sdk client" in failure
    assert "sink inactive in 1 test(s): sentry event (no active" in result.stdout.str()
    _scan(result, "test_a_app_sets_sentry_up", "test_b_without_a_client")


def _modules(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Plugin modules on sys.path: one whose library is not installed, one whose library
    imports but not the part it needs, one that raises."""
    (tmp_path / "lc_quiet_missing.py").write_text("import lc_quiet_no_such_library\n")
    (tmp_path / "lc_quiet_old.py").write_text("import json.lc_quiet_no_such_part\n")
    (tmp_path / "lc_quiet_raises.py").write_text("raise RuntimeError('bad plugin')\n")
    (tmp_path / "lc_quiet_fine.py").write_text("SINKS = []\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("lc_quiet_missing", "lc_quiet_old", "lc_quiet_raises", "lc_quiet_fine"):
        monkeypatch.delitem(sys.modules, name, raising=False)


def test_plugins_are_told_apart(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _modules(tmp_path, monkeypatch)
    group = "leakcheck.test-quiet"
    fake = [
        EntryPoint(name, f"lc_quiet_{name}", group) for name in ("missing", "old", "raises")
    ] + [EntryPoint("fine", "lc_quiet_fine", group)]
    real = extensions._entries

    def entries(group: str) -> Any:
        return tuple(fake) if group == "leakcheck.test-quiet" else real(group)

    monkeypatch.setattr(extensions, "_skipped", {})
    monkeypatch.setattr(extensions, "_broken", set())
    monkeypatch.setattr(extensions, "_missing", {})
    monkeypatch.setattr(extensions, "_loaded", {})
    monkeypatch.setattr(extensions, "_entries", entries)
    modules = extensions.load_plugins(group)
    assert [m.__name__ for m in modules] == ["lc_quiet_fine"]
    assert set(extensions.skipped_plugins()) == {"missing", "old", "raises"}
    broken = extensions.broken_plugins()
    assert set(broken) == {"old", "raises"}
    assert broken["raises"] == "RuntimeError: bad plugin"
    assert broken["old"].startswith("ModuleNotFoundError: ")
    # what to install is said only for a bundled plugin's library (a third party's
    # distribution may be named otherwise than the module it did not find)
    names = ("missing", "old", "raises", "fine")
    assert [extensions.install_hint(name) for name in names] == ["", "", "", ""]


def test_a_package_missing_from_a_namespace_package_is_a_library_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mcp SDK installs ``opentelemetry-api`` and not the SDK: the otel sink's
    ``import opentelemetry.sdk`` fails in every session of an MCP suite. ``opentelemetry``
    is a namespace package (each of its distributions fills a part), so the SDK is a
    library not installed, said with ``-v`` only, not a plugin that does not fit."""
    (tmp_path / "lc_quiet_namespace" / "api").mkdir(parents=True)
    (tmp_path / "lc_quiet_namespace" / "api" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    sdk = ModuleNotFoundError(
        "No module named 'lc_quiet_namespace.sdk'", name="lc_quiet_namespace.sdk"
    )
    assert extensions._library_missing(sdk)
    import lc_quiet_namespace  # noqa: F401  (imported, its spec has a loader: still none)

    assert extensions._library_missing(sdk)
    inside = ModuleNotFoundError(
        "No module named 'lc_quiet_namespace.api.nope'", name="lc_quiet_namespace.api.nope"
    )
    assert not extensions._library_missing(inside)  # the api package is there: no fit


def test_library_missing() -> None:
    missing = ModuleNotFoundError("No module named 'lc_quiet_nope'", name="lc_quiet_nope")
    assert extensions._library_missing(missing)
    part = ModuleNotFoundError("No module named 'json.nope'", name="json.nope")
    assert not extensions._library_missing(part)  # json imports: the plugin does not fit
    ours = ModuleNotFoundError("No module named 'leakcheck.nope'", name="leakcheck.nope")
    assert not extensions._library_missing(ours)
    assert not extensions._library_missing(ImportError("cannot import name 'X'"))
    assert not extensions._library_missing(ModuleNotFoundError("no name"))


def test_plugin_not_loaded_only_when_it_matters(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from leakcheck.pytest_plugin import session

    skipped = {
        "missing": "ModuleNotFoundError: No module named 'lc_quiet_no_such_library'",
        "raises": "RuntimeError: bad plugin",
    }
    monkeypatch.setattr(session, "skipped_plugins", lambda: dict(skipped))
    monkeypatch.setattr(session, "broken_plugins", lambda: {"raises": skipped["raises"]})
    pytester.makepyfile(test_inner=QUIET.replace("print(", "len("))
    result, _ = _run(pytester)
    lines = [line for line in result.outlines if line.startswith("plugin not loaded: ")]
    assert lines == ["plugin not loaded: raises (RuntimeError: bad plugin)"]
    verbose, _ = _run(pytester, "-v")
    lines = [line for line in verbose.outlines if line.startswith("plugin not loaded: ")]
    assert lines == [
        "plugin not loaded: missing (ModuleNotFoundError: No module named "
        "'lc_quiet_no_such_library')",
        "plugin not loaded: raises (RuntimeError: bad plugin)",
    ]


#: Two tests that leak nothing and judge their tool response (one that judged nothing
#: caller-visible is said in the summary: tests/test_nothing_exposed.py).
CLEAN = """
def test_passes(leakcheck):
    leakcheck.secret("bearer")
    leakcheck.expose({"ok": True})

def test_also_passes(leakcheck):
    leakcheck.expose({"ok": len(leakcheck.secret("bearer")) > 0})
"""


def test_a_clean_session_with_every_library_says_nothing_more(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=CLEAN)
    result, _ = _run(pytester)
    summary = result.stdout.str().split("= leakcheck =")[1]
    lines = [line for line in summary.splitlines()[1:] if line.strip()]
    assert lines[0] == f"2 test(s) checked, 0 with forbidden hits; canary seed {SEED}"
    assert lines[1].startswith("JSON report: ")


# --- a reason for every failure -------------------------------------------------------------

REASONS = """
import pytest

def test_passes(leakcheck):
    leakcheck.secret("bearer")

def test_own_assertion(leakcheck):
    leakcheck.secret("bearer")
    assert 1 + 1 == 3

def test_never_reached(leakcheck):
    leakcheck.secret("bearer")
    leakcheck.force("approval_declined")
    leakcheck.expose({"ok": True})

def test_leaks(leakcheck):
    leakcheck.expose({"message": leakcheck.secret("bearer")})

@pytest.mark.xfail(reason="known", strict=True)
def test_xfail(leakcheck):
    leakcheck.secret("bearer")
    assert False
"""


def test_every_failed_record_says_why(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=REASONS)
    result, report = _run(pytester)
    records = {r["test"].split("::")[-1]: r for r in report["tests"]}
    for name, record in records.items():
        assert ("reason" in record) == (record["outcome"] == "failed"), name
    assert "reason" not in records["test_passes"] and "reason" not in records["test_xfail"]
    assert records["test_own_assertion"]["reason"] == "test failed: assert (1 + 1) == 3"
    never = records["test_never_reached"]["reason"].splitlines()
    assert len(never) == 1 and never[0].startswith("stage not reached: "), never
    assert "approval_declined" in never[0]
    assert records["test_leaks"]["reason"] == (
        "leaks: 1 forbidden hit(s) of bearer#1 in 1 root cause(s) (sinks: tool response)"
    )
    _scan(result, "test_passes", "test_own_assertion", "test_never_reached", "test_leaks")


TOY = """
from leakcheck.matrix import Operation, Target, stage_matrix


class Toy(Target):
    operations = [Operation("create_deployment", "http", repeatable=False, input={"repo": "w"})]
    stages = ["vault_locked", "approval_declined", "gateway_exception"]
    placements = ["authorization-header"]

    def call(self, case):
        rid = "req_Zx81kQ2vLp0sNw7Tb4cJ"
        def fail(code, action):
            return {"ok": False, "code": code, "action": action, "message": "failed",
                    "retryable": False, "request_id": rid, "operation": "create_deployment"}
        try:
            case.vault.get("bearer")
        except Exception:
            return fail("VAULT_LOCKED", "stop_and_report")
        if not case.approver.approve(case.operation.name, ""):
            return fail("AUTH_FAILED", "stop_and_report")  # the denial misreported
        try:
            case.boom()
        except Exception as exc:
            raise RuntimeError("the gateway gave up") from exc
        return {"ok": True, "request_id": rid}


test_gateway = stage_matrix(Toy())
"""


def test_matrix_failures_without_a_leak_say_why(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=TOY)
    result, report = _run(pytester, "--no-leakcheck-snapshots")
    reasons = {r["matrix"]["stage"]: r.get("reason", "") for r in report["tests"]}
    assert reasons["vault_locked"] == ""
    contract = reasons["approval_declined"].splitlines()
    assert contract and all(line.startswith("contract: ") for line in contract), contract
    assert any("USER_DENIED" in line and "AUTH_FAILED" in line for line in contract)
    # the exception reached the agent: with the forced failure's canaries in its chain
    raised = reasons["gateway_exception"].splitlines()
    assert len(raised) == 2 and raised[0].startswith("leaks: "), raised
    assert "(sinks: exception)" in raised[0]
    assert raised[1] == (
        "gateway raised: gateway-raised: the gateway raised RuntimeError instead of "
        "returning an error envelope (raised at test_inner.py:23 in call: the gateway gave up)"
    ), raised


def test_reason_parts() -> None:
    """What no inner run above shows: snapshot drift, a secret in the test id, a matrix
    assertion that no line of its text names."""
    check = LeakCheck(seed="quiet", namespace="test_reason_parts", sinks=[])
    check.matrix = CaseResult("op", "http_401", "authorization-header")
    check.matrix.failed = {Assertion.SNAPSHOT, Assertion.HYGIENE}
    text = judge.failure_reason(
        check,
        [],
        drift="leakcheck snapshot drift: op/http_401\n--- snapshot\n+++ this run\n",
        in_id="bearer#1 show in the test id",
    )
    assert text.splitlines() == [
        "hygiene: failed",
        "snapshot drift: leakcheck snapshot drift: op/http_401",
        "secret in test id: bearer#1 show in the test id",
    ]
    verdict = (
        "leakcheck matrix: operation op, stage http_401, placement authorization-header\n"
        "  [hygiene] no raw headers:\n"
        "    - upstream-text at $.message: carries text of the upstream body\n"
        "  [harness] every credential of the placement read:\n"
        "    - placement-not-read: placement authorization-header: never asked\n"
        "rerun: pytest 'x' --leakcheck-seed=1"
    )
    check.matrix.failed = {Assertion.HYGIENE, Assertion.HARNESS}
    reason = judge.failure_reason(check, [], verdict=verdict, own="test failed: MatrixFailure")
    assert reason.splitlines() == [
        "hygiene: upstream-text at $.message: carries text of the upstream body",
        "not reached: placement-not-read: placement authorization-header: never asked",
    ]
    check.matrix = None
    assert judge.failure_reason(check, []) == "failed (no reason recorded)"


def test_the_reason_round_trips_and_is_written_only_when_set() -> None:
    plain = TestRecord(test="t.py::a", forbidden=0, outcome="passed")
    assert "reason" not in plain.to_json()
    assert list(plain.to_json()) == [
        "test", "forbidden", "findings", "secrets", "inactive_sinks", "not_inspected", "outcome"
    ]  # fmt: skip
    failed = TestRecord(test="t.py::b", forbidden=0, outcome="failed", reason="contract: x")
    data = failed.to_json()
    assert list(data)[-2:] == ["outcome", "reason"] and data["reason"] == "contract: x"
    assert TestRecord.from_json(data) == failed
    assert TestRecord.from_json(plain.to_json()).reason == ""


# --- -p no:logging ---------------------------------------------------------------------------

NO_LOGGING = """
import logging

def test_logs_a_token(leakcheck):
    logging.getLogger("gateway.http").warning("calling with %s", leakcheck.secret("bearer"))

def test_clean(leakcheck):
    leakcheck.secret("bearer")
    logging.getLogger("gateway.http").warning("calling upstream")
"""


def test_without_pytests_logging_plugin(pytester: pytest.Pytester) -> None:
    """-p no:logging used to be an INTERNALERROR at session start: now it runs, says once
    what it changes, and a token in a log record still fails (the log record sink reads
    records itself)."""
    pytester.makepyfile(test_inner=NO_LOGGING)
    result, report = _run(pytester, "-p", "no:logging")
    assert inner_outcomes(result) == {"test_logs_a_token": "FAILED", "test_clean": "PASSED"}
    said = [line for line in result.outlines if "no:logging" in line]
    assert len(said) == 1 and said[0].startswith("leakcheck: -p no:logging: "), said
    failure = "\n".join(_section(result, "test_logs_a_token"))
    assert "[LEAK] operator: log record gateway.http WARNING message  form raw" in failure
    assert len(report["tests"]) == 2
    _scan(result, "test_logs_a_token", "test_clean")


def test_the_logging_plugin_on_says_nothing_of_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=NO_LOGGING)
    result, _ = _run(pytester, "-o", "log_cli=true")
    assert not any("no:logging" in line for line in result.outlines)
    _scan(result, "test_logs_a_token", "test_clean")


# --- trustme ---------------------------------------------------------------------------------


def test_tls_stage_without_trustme_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    from leakcheck.plugins.loopback_http import LoopbackFault

    from leakcheck.faults import HarnessError

    monkeypatch.setitem(sys.modules, "trustme", None)  # import trustme: ImportError
    fault = LoopbackFault("tls_untrusted_ca", secret=lambda *a, **k: "unused")
    with pytest.raises(HarnessError) as raised:
        fault.start()
    fault.stop()
    message = str(raised.value)
    assert "trustme" in message and "pip install trustme" in message
    assert not isinstance(raised.value, ModuleNotFoundError)


TRUSTME = """
import sys

def test_tls(leakcheck):
    saved = sys.modules.get("trustme")
    sys.modules["trustme"] = None  # import trustme: ImportError, as if not installed
    try:
        leakcheck.force("tls_untrusted_ca", via="loopback", placement="authorization-header")
    finally:
        if saved is None:
            del sys.modules["trustme"]
        else:
            sys.modules["trustme"] = saved
"""


def test_tls_stage_without_trustme_fails_in_one_line(pytester: pytest.Pytester) -> None:
    """Through the plugin: the message and where the test asked, no traceback through
    the harness; the JSON report's reason says it is the harness's error."""
    pytester.makepyfile(test_inner=TRUSTME)
    result, report = _run(pytester)
    assert inner_outcomes(result) == {"test_tls": "FAILED"}
    section = _section(result, "test_tls")
    assert section[0].startswith("leakcheck: HarnessError: the loopback transport needs the ")
    assert "pip install trustme" in section[0]
    assert section[1].strip() == "(at test_inner.py:7, in test_tls)"
    out = result.stdout.str()
    assert "ModuleNotFoundError" not in out and "loopback_tls.py" not in out
    (record,) = report["tests"]
    assert record["reason"].startswith("harness error: HarnessError: the loopback ")
    assert "trustme" not in sys.modules or sys.modules["trustme"] is not None


def test_a_second_occurrence_in_the_same_field_is_named_as_such() -> None:
    """Not "also in: <the very place shown above>": the same text holds it again."""
    from leakcheck.harness import LeakCheck
    from leakcheck.verdict import format_leaks

    with LeakCheck(seed="quiet-same-field", sinks=[]) as check:
        token = check.secret("bearer")
        check.expose({"message": f"first {token} then {token}"})
        text = format_leaks(check.findings())
    self_scan(text, check.secrets, "failure text")
    assert "also in: the same text (another occurrence)" in text
    assert "also in: tool response $.message" not in text


# --- sink libraries nothing imported ------------------------------------------------------

_WATCH = """
import json, os, sys
from leakcheck.extensions import WATCHED_LIBRARIES

def pytest_sessionfinish(session):
    with open(os.environ["LC_WATCH_OUT"], "w") as out:
        json.dump(sorted(lib for lib in WATCHED_LIBRARIES.values() if lib in sys.modules), out)
"""


def _run_subprocess(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, *args: str
) -> tuple[pytest.RunResult, dict[str, Any], list[str]]:
    pytester.makeconftest(_WATCH)
    watch = pytester.path / "watched.json"
    monkeypatch.setenv("LC_WATCH_OUT", str(watch))
    path = pytester.path / "report.json"
    result = pytester.runpytest_subprocess(
        *QUIET_INNER_ARGS, f"--leakcheck-seed={SEED}", f"--leakcheck-report={path}", *args
    )
    report = json.loads(path.read_text(encoding="utf-8"))
    return result, report, json.loads(watch.read_text(encoding="utf-8"))


def test_a_suite_that_imports_no_sink_library_does_not_pay_for_importing_them(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        test_inner="""
        import logging

        def test_call(leakcheck):
            token = leakcheck.secret("bearer")
            logging.getLogger("gateway").warning("calling upstream")
            leakcheck.expose({"ok": False, "code": "AUTH_FAILED"})
            assert token
        """
    )
    result, report, imported = _run_subprocess(pytester, monkeypatch)
    result.assert_outcomes(passed=1)
    assert imported == [], imported  # sentry-sdk, OpenTelemetry, loguru ... all installed here
    (record,) = report["tests"]
    assert record["inactive_sinks"] == {}, record["inactive_sinks"]


def test_a_sink_library_first_imported_during_a_test_is_named_as_not_watched(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        test_inner="""
        def test_call(leakcheck):
            token = leakcheck.secret("bearer")
            from loguru import logger  # the app imports its logger lazily, mid-test

            logger.remove()
            logger.add(lambda message: None)
            logger.info("calling upstream with {}", token)
            leakcheck.expose({"detail": f"bad token {token}"})
        """
    )
    result, report, imported = _run_subprocess(pytester, monkeypatch, "-rA")
    result.assert_outcomes(failed=1)  # (the tool response; the loguru record went unseen)
    assert "loguru" in imported
    (record,) = report["tests"]
    reason = record["inactive_sinks"].get("loguru sink", "")
    assert "loguru was first imported during the test" in reason, record["inactive_sinks"]
    assert "conftest.py" in reason
    assert {finding["sink"] for finding in record["findings"]} == {"tool response"}
    # a real blind spot is said in every failure (a quiet one, sentry-sdk that the app
    # never set up, is not: above)
    failure = "\n".join(_section(result, "test_call"))
    assert "sinks inactive: loguru sink (loguru was first imported during the test" in failure
    assert "sentry event" not in failure
    _scan(result, "test_call")


def test_a_sink_library_imported_before_the_test_is_watched(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the leaky twin: the same record, loguru imported at collection, fails the test
    pytester.makepyfile(
        test_inner="""
        from loguru import logger

        def test_call(leakcheck):
            token = leakcheck.secret("bearer")
            logger.remove()
            logger.add(lambda message: None)
            logger.info("calling upstream with {}", token)
        """
    )
    result, report, _ = _run_subprocess(pytester, monkeypatch)
    result.assert_outcomes(failed=1)
    (record,) = report["tests"]
    assert {finding["sink"] for finding in record["findings"]} == {"loguru"}, record["findings"]
    assert "loguru sink" not in record["inactive_sinks"]
    _scan(result, "test_call")


def test_a_sink_library_imported_by_an_earlier_test_is_watched_in_the_next(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the first test ran with loguru not imported; the second must see loguru's sink
    pytester.makepyfile(
        test_inner="""
        def test_first(leakcheck):
            leakcheck.secret("bearer")
            from loguru import logger  # noqa: F401

        def test_second(leakcheck):
            from loguru import logger

            token = leakcheck.secret("bearer")
            logger.remove()
            logger.add(lambda message: None)
            logger.info("calling upstream with {}", token)
        """
    )
    result, report, _ = _run_subprocess(pytester, monkeypatch)
    result.assert_outcomes(passed=1, failed=1)
    first, second = sorted(report["tests"], key=lambda record: record["test"])
    assert "loguru sink" in first["inactive_sinks"]
    assert {finding["sink"] for finding in second["findings"]} == {"loguru"}, second["findings"]
    _scan(result, "test_first", "test_second")


def test_report_outside_pytest_has_the_plugins_header() -> None:
    """``LeakCheck.report()`` (no pytest) groups root causes as a failure does."""
    check = LeakCheck(seed=SEED, namespace="report-header", sinks=[])
    token = check.secret("bearer")
    check.expose({"error": f"token {token}"}, "tool response")
    check.expose({"detail": f"token {token}"}, "second response")
    text = check.report()
    first = text.splitlines()[0]
    assert first.startswith("leakcheck: "), first
    assert first.endswith(f", 1 root cause (canary seed {SEED})"), first
    assert "also in: " in text
    self_scan(text, check.secrets, "LeakCheck.report()")


def test_a_fixture_failing_in_setup_or_teardown_has_a_reason_in_the_report(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_inner="""
        import pytest

        @pytest.fixture
        def database(leakcheck):
            token = leakcheck.secret("bearer")
            raise RuntimeError(f"database down for {token}")

        @pytest.fixture
        def session(leakcheck):
            token = leakcheck.secret("bearer")
            yield token
            raise RuntimeError(f"could not close session {token}")

        def test_setup_fails(database):
            pass

        def test_teardown_fails(session):
            assert session
        """
    )
    result, report = _run(pytester)
    result.assert_outcomes(passed=1, errors=2)
    records = {r["test"].split("::")[-1]: r for r in report["tests"]}
    setup, teardown = records["test_setup_fails"], records["test_teardown_fails"]
    assert setup["outcome"] == "error"
    assert setup["reason"].startswith("setup error: RuntimeError: database down for «canary:")
    assert teardown["outcome"] == "error"  # its call passed: the record is updated
    assert teardown["reason"].startswith("teardown error: RuntimeError: could not close")
    assert "«canary:bearer" in teardown["reason"]
    _scan(result, "test_setup_fails", "test_teardown_fails")
    secrets = [
        CanaryFactory(SEED, namespace=f"test_inner.py::{test}").secret("bearer")
        for test in ("test_setup_fails", "test_teardown_fails")
    ]
    self_scan(json.dumps(report), secrets, "JSON report")


def test_openai_agents_not_installed_is_quiet() -> None:
    """Without openai-agents the tracing plugin is skipped as a library not installed (said
    under -v), not listed in every session as a broken plugin."""
    import subprocess

    code = (
        "import importlib.util, json\n"
        "real = importlib.util.find_spec\n"
        "importlib.util.find_spec = lambda name, *a: None if name == 'agents' else real(name, *a)\n"
        "from leakcheck import extensions\n"
        "extensions.load_plugins()\n"
        "print(json.dumps([sorted(extensions.skipped_plugins()), "
        "sorted(extensions.broken_plugins())]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    skipped, broken = json.loads(done.stdout.strip().splitlines()[-1])
    assert "agents_tracing" in skipped, skipped
    assert "agents_tracing" not in broken, broken
