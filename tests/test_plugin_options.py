"""The plugin's options: ``--no-leakcheck``, ``--leakcheck-report`` (and the ini
``leakcheck_report``), ``--leakcheck-seed``, the xdist merge, ``skip_sinks`` opt-outs, random
test order, and the globals a run must leave as it found them."""

from __future__ import annotations

import json
import logging
import sys
import threading
import warnings
from typing import Any

import pytest
from conftest import inner_outcomes

from leakcheck.verdict import form_family, sink_label

pytest_plugins = ["pytester"]


SEED = "options-5"
BASE = ("-p", "no:hypothesispytest", f"--leakcheck-seed={SEED}")

#: An inner suite touching every built-in sink, leaky and clean, with order traps: a test
#: that changes a logger and restores it, one that needs no fixture at all.
SUITE = """
import logging, sys, threading, warnings
import pytest

def test_exposed(leakcheck):
    token = leakcheck.secret("bearer")
    leakcheck.expose({"error": {"detail": f"bad token {token}"}})

def test_exception(leakcheck):
    key = leakcheck.secret("api_key")
    raise ConnectionError(f"GET /v1?api_key={key} failed")

def test_log_quiet_logger(leakcheck):
    token = leakcheck.secret("bearer")
    log = logging.getLogger("gateway.quiet")
    log.setLevel(logging.CRITICAL)
    try:
        log.debug("token %s", token)
    finally:
        log.setLevel(logging.NOTSET)

def test_context_in_log_allowed(leakcheck):
    logging.getLogger("gateway").warning("host %s", leakcheck.secret("hostname"))

def test_stdout(leakcheck):
    print(leakcheck.secret("cookie"))

def test_warning(leakcheck):
    warnings.warn(f"sig={leakcheck.secret('signature')}")

def test_thread(leakcheck):
    token = leakcheck.secret("bearer")
    def worker():
        raise RuntimeError(token)
    # named: the default "Thread-N" counts up across runs in one process, which would
    # shift the offsets the seed-replay test compares
    thread = threading.Thread(target=worker, name="gateway-worker")
    thread.start()
    thread.join()

@pytest.mark.leakcheck(skip_sinks={"log record": "the vendored SDK logs its own headers (GW-12)"})
def test_opted_out(leakcheck):
    token = leakcheck.secret("bearer")
    assert logging.Logger.isEnabledFor.__module__ == "logging"  # the sink is not installed
    logging.getLogger("vendor.sdk").debug("Authorization: Bearer %s", token)

def test_clean(leakcheck):
    leakcheck.secret("bearer")
    leakcheck.expose({"ok": False, "code": "AUTH_FAILED"})
    logging.getLogger("gateway").warning("auth failed")

def test_without_fixture():
    # no leakcheck here: nothing of a previous test's sinks may still be installed
    assert logging.Logger.isEnabledFor.__module__ == "logging"
    assert "leakcheck" not in getattr(sys.excepthook, "__module__", "")
    assert "leakcheck" not in getattr(threading.excepthook, "__module__", "")
    assert "leakcheck" not in getattr(sys.unraisablehook, "__module__", "")
"""

#: test -> (outcome, forbidden hits > 0)
EXPECTED = {
    "test_exposed": ("FAILED", True),
    "test_exception": ("FAILED", True),
    "test_log_quiet_logger": ("FAILED", True),
    "test_context_in_log_allowed": ("PASSED", False),
    "test_stdout": ("FAILED", True),
    "test_warning": ("FAILED", True),
    "test_thread": ("FAILED", True),
    "test_opted_out": ("PASSED", False),
    "test_clean": ("PASSED", False),
    "test_without_fixture": ("PASSED", None),
}


def verdicts(data: dict[str, Any]) -> dict[str, tuple[int, frozenset[tuple[str, ...]]]]:
    """test -> (forbidden count, findings by secret id, sink, path, form, allowed)."""
    return {
        r["test"].split("::")[-1]: (
            r["forbidden"],
            frozenset(
                (
                    f["finding"]["secret_id"],
                    f["sink"],
                    f["path"],
                    f["finding"]["form"],
                    str(f["allowed"]),
                )
                for f in r["findings"]
            ),
        )
        for r in data["tests"]
    }


def run_suite(
    pytester: pytest.Pytester,
    *args: str,
    subprocess: bool = False,
    randomly: bool = False,
    seed: bool = True,
) -> tuple[pytest.RunResult, dict[str, Any]]:
    pytester.makepyfile(test_suite=SUITE)
    report = pytester.path / "report.json"
    if report.exists():
        report.unlink()
    run = pytester.runpytest_subprocess if subprocess else pytester.runpytest
    order = () if randomly else ("-p", "no:randomly")
    base = BASE if seed else BASE[:-1]
    result = run(*order, *base, "-rA", f"--leakcheck-report={report}", *args)
    return result, json.loads(report.read_text(encoding="utf-8"))


@pytest.fixture
def serial(pytester: pytest.Pytester) -> tuple[pytest.RunResult, dict[str, Any]]:
    return run_suite(pytester)


def test_serial_run_verdicts(serial: tuple[pytest.RunResult, dict[str, Any]]) -> None:
    result, data = serial
    got = inner_outcomes(result)
    assert got == {test: outcome for test, (outcome, _) in EXPECTED.items()}, got
    records = verdicts(data)
    for test, (_, leaky) in EXPECTED.items():
        if leaky is None:
            assert test not in records, test  # no fixture, no record
        else:
            assert (records[test][0] > 0) == leaky, test
    result.stdout.fnmatch_lines(
        [
            f"leakcheck: on, canary seed {SEED}",
            "*= leakcheck =*",
            f"9 test(s) checked, 6 with forbidden hits; canary seed {SEED}",
            "JSON report: *report.json",
        ]
    )


def test_report_holds_every_finding(serial: tuple[pytest.RunResult, dict[str, Any]]) -> None:
    result, data = serial
    assert data["tool"] == "leakcheck" and data["seed"] == SEED and data["enabled"] is True
    assert len(data["tests"]) == 9
    for record in data["tests"]:
        assert record["forbidden"] == sum(not f["allowed"] for f in record["findings"])
        for finding in record["findings"]:
            assert set(finding) == {"finding", "sink", "sink_class", "path", "allowed", "note"}
            assert set(finding["finding"]) >= {
                "secret_id",
                "kind",
                "secret_class",
                "form",
                "line",
                "column",
                "excerpt",
            }
            assert finding["sink_class"] in ("caller", "operator")
    # every finding of a failing test is in its failure text: the most severe of its root
    # cause (its secret and form family) in full, the others named on that one's "also in"
    shown = [
        line
        for line in result.outlines
        if line.startswith(("  [LEAK] ", "  [allowed] ", "  [latent] "))
    ]
    also = [line.strip() for line in result.outlines if line.strip().startswith("also in: ")]
    for record in data["tests"]:
        name = record["test"].split("::")[-1]
        if record["forbidden"]:
            causes: dict[tuple[str, str], list[dict[str, Any]]] = {}
            for f in record["findings"]:
                key = (f["finding"]["secret_id"], form_family(f["finding"]["form"]))
                causes.setdefault(key, []).append(f)
            for group in causes.values():
                lines = [
                    f"  [{'allowed' if f['allowed'] else 'LEAK'}] {f['sink_class']}: "
                    f"{sink_label(f['sink'], f['path'])}  form {f['finding']['form']}"
                    for f in group
                ]
                full = [line for line in lines if any(s.startswith(line) for s in shown)]
                assert full, (name, lines)
                for f, line in zip(group, lines, strict=True):
                    label = sink_label(f["sink"], f["path"])
                    assert line in full or any(label in a for a in also), (name, line)
    # the allowed hit of a passing test is in the report
    allowed = [r for r in data["tests"] if r["test"].endswith("test_context_in_log_allowed")]
    assert allowed[0]["findings"] and all(f["allowed"] for f in allowed[0]["findings"])


def test_ini_report_path(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nleakcheck_report = out/ini-report.json\n")
    pytester.makepyfile(
        test_one="""
        def test_leaky(leakcheck):
            leakcheck.expose(leakcheck.secret("bearer"))
    """
    )
    result = pytester.runpytest("-p", "no:randomly", *BASE)
    result.assert_outcomes(failed=1)
    data = json.loads((pytester.path / "out" / "ini-report.json").read_text(encoding="utf-8"))
    assert [r["forbidden"] for r in data["tests"]] == [1]
    # the command line wins over the ini
    result = pytester.runpytest("-p", "no:randomly", *BASE, "--leakcheck-report=cli.json")
    assert (pytester.path / "cli.json").exists()


@pytest.mark.parametrize(
    ("where", "message"),
    [
        (".", "--leakcheck-report .: a directory; give a file's path"),
        ("a-file/report.json", "--leakcheck-report a-file/report.json: cannot make its directory"),
    ],
)
def test_a_report_path_it_cannot_write_is_a_usage_error_before_any_test(
    pytester: pytest.Pytester, where: str, message: str
) -> None:
    """Found at the session's end, it was a traceback after the whole run."""
    pytester.makefile("", **{"a-file": "not a directory"})
    pytester.makepyfile(test_one="def test_one(leakcheck):\n    pass\n")
    result = pytester.runpytest("-p", "no:randomly", *BASE, f"--leakcheck-report={where}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.ret
    assert any(line.startswith("ERROR: ") and message in line for line in result.errlines), (
        result.errlines
    )
    shown = "\n".join(result.outlines + result.errlines)
    assert "Traceback" not in shown and "test_one" not in shown, shown  # (no test ran)


def test_a_report_that_cannot_be_written_at_the_end_is_said_and_fails_the_run(
    pytester: pytest.Pytester,
) -> None:
    """Writable when pytest started; a directory where the file goes by the end (a test
    made it): said in the summary, the run's status a usage error, no traceback."""
    pytester.makepyfile(
        test_one="""
        import os

        def test_one(leakcheck):
            os.makedirs("late/report.json")
    """
    )
    result = pytester.runpytest("-p", "no:randomly", *BASE, "--leakcheck-report=late/report.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.ret
    result.stdout.fnmatch_lines(["JSON report NOT written to late/report.json: IsADirectoryError*"])
    assert "Traceback" not in "\n".join(result.outlines + result.errlines)


def test_no_leakcheck(pytester: pytest.Pytester) -> None:
    result, data = run_suite(pytester, "--no-leakcheck")
    result.stdout.fnmatch_lines([f"leakcheck: OFF (--no-leakcheck), canary seed {SEED}"])
    got = inner_outcomes(result)
    # only the test that raises on its own still fails; the thread's warning is no failure
    assert got == {test: "FAILED" if test == "test_exception" else "PASSED" for test in EXPECTED}, (
        got
    )
    assert data["enabled"] is False and data["tests"] == []
    assert "[LEAK]" not in result.stdout.str()
    result.stdout.fnmatch_lines(["0 test(s) checked, 0 with forbidden hits; *"])
    # off means no checking, not echoing: the failure text is still masked
    result.stdout.fnmatch_lines(["E       ConnectionError: GET /v1?*canary:api_key:* failed"])


def test_seed_replays_the_same_canaries(pytester: pytest.Pytester) -> None:
    _, first = run_suite(pytester)
    _, second = run_suite(pytester)
    assert verdicts(first) == verdicts(second)
    excerpts = [[f["finding"]["offset"] for f in r["findings"]] for r in first["tests"]]
    assert excerpts == [[f["finding"]["offset"] for f in r["findings"]] for r in second["tests"]]
    # without a seed, a fresh one is drawn and printed
    pytester.makepyfile(test_one="def test_one(leakcheck):\n    leakcheck.secret()\n")
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:hypothesispytest", "test_one.py")
    header = [line for line in result.outlines if line.startswith("leakcheck: on")]
    assert len(header) == 1 and SEED not in header[0]


def test_rerun_line_names_the_seed(serial: tuple[pytest.RunResult, dict[str, Any]]) -> None:
    result, _ = serial
    result.stdout.fnmatch_lines(
        [f"rerun: pytest 'test_suite.py::test_exposed' --leakcheck-seed={SEED}"]
    )


def test_skip_sinks_opt_out(serial: tuple[pytest.RunResult, dict[str, Any]]) -> None:
    result, data = serial
    reason = "the vendored SDK logs its own headers (GW-12)"
    result.stdout.fnmatch_lines(
        [f"opted out: test_suite.py::test_opted_out: sink 'log record' ({reason})"]
    )
    assert data["opt_outs"] == [
        {"test": "test_suite.py::test_opted_out", "sink": "log record", "reason": reason}
    ]
    record = [r for r in data["tests"] if r["test"].endswith("::test_opted_out")][0]
    assert not any(f["sink"] == "log record" for f in record["findings"])


def test_opt_out_is_named_in_a_failure(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_one="""
        import pytest

        @pytest.mark.leakcheck(skip_sinks={"crash hook": "threads are joined by the SDK"})
        def test_leaky(leakcheck):
            leakcheck.expose(leakcheck.secret("bearer"))
    """
    )
    result = pytester.runpytest("-p", "no:randomly", *BASE)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["sinks opted out: crash hook (threads are joined by the SDK)"])


def test_a_misspelt_sink_is_a_usage_error_even_with_a_plugin_skipped(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``skip_sinks={"log recrd": ...}`` was taken as an opt-out whenever a sink plugin was
    skipped (its library missing: most venvs), and the log sink stayed on. A name close to
    a known sink's is a typo whatever is installed."""
    from leakcheck.pytest_plugin import options

    monkeypatch.setattr(options, "skipped_plugins", lambda: {"sentry": "sentry-sdk missing"})
    pytester.makepyfile(
        test_one="""
        import pytest

        @pytest.mark.leakcheck(skip_sinks={"log recrd": "the SDK logs its headers"})
        def test_x(leakcheck):
            pass
    """
    )
    result = pytester.runpytest_inprocess("-p", "no:randomly", *BASE)
    assert result.ret != 0
    text = "\n".join(result.outlines + result.errlines)
    assert "unknown sink 'log recrd' (did you mean 'log record'?)" in text


def test_xdist_merges_worker_findings(pytester: pytest.Pytester) -> None:
    """Under ``-n 2`` the workers' findings and opt-outs reach one report, the same as a
    serial run's; with no ``--leakcheck-seed`` the workers use the controller's seed."""
    result, data = run_suite(pytester, "-n", "2", subprocess=True, seed=False)
    result.stdout.fnmatch_lines(["*2 workers*"])
    seed = data["seed"]
    assert seed != SEED
    result.stdout.fnmatch_lines([f"leakcheck: on, canary seed {seed}"])
    rerun = {line.rsplit("=", 1)[-1] for line in result.outlines if line.startswith("rerun: ")}
    assert rerun == {seed}, "a worker drew canaries from another seed"
    serial_result, serial_data = run_suite(pytester, f"--leakcheck-seed={seed}", seed=False)
    assert inner_outcomes(result) == inner_outcomes(serial_result)
    assert len(data["tests"]) == len(serial_data["tests"]) == 9
    assert sum(len(r["findings"]) for r in data["tests"]) == sum(
        len(r["findings"]) for r in serial_data["tests"]
    )
    assert verdicts(data) == verdicts(serial_data)
    assert data["opt_outs"] == serial_data["opt_outs"]
    # the controller's summary counts what the workers found
    result.stdout.fnmatch_lines(
        [
            f"9 test(s) checked, 6 with forbidden hits; canary seed {seed}",
            "opted out: test_suite.py::test_opted_out: sink 'log record' *",
        ]
    )


def test_random_order_same_verdicts(
    pytester: pytest.Pytester, serial: tuple[pytest.RunResult, dict[str, Any]]
) -> None:
    """``-p randomly`` with a few seeds: other orders, the same verdicts."""
    serial_result, serial_data = serial
    orders = set()
    for seed in (1, 2, 3):
        shuffle = ("-p", "randomly", "-p", "no:cacheprovider", f"--randomly-seed={seed}", "-v")
        result, data = run_suite(pytester, *shuffle, randomly=True)
        assert inner_outcomes(result) == inner_outcomes(serial_result), seed
        assert verdicts(data) == verdicts(serial_data), seed
        ran = [line.split(" ")[0] for line in result.outlines if line.startswith("test_suite.py::")]
        orders.add(tuple(ran))
    assert len(orders) > 1, "the order never changed"


def _globals() -> dict[str, Any]:
    return {
        "Logger.isEnabledFor": logging.Logger.isEnabledFor,
        "Logger.handle": logging.Logger.handle,
        "sys.excepthook": sys.excepthook,
        "threading.excepthook": threading.excepthook,
        "sys.unraisablehook": sys.unraisablehook,
        "warnings.filters": warnings.filters,
        "warnings.showwarning": warnings.showwarning,
        "logging.disable": logging.root.manager.disable,
        "root handlers": list(logging.root.handlers),
        "root level": logging.root.level,
    }


def test_two_runs_in_one_process_restore_every_global(pytester: pytest.Pytester) -> None:
    before = _globals()
    filters = list(warnings.filters)
    _, first = run_suite(pytester)
    after_one = _globals()
    _, second = run_suite(pytester)
    after_two = _globals()
    for name, value in before.items():
        for when, state in (("after one run", after_one), ("after two runs", after_two)):
            if isinstance(value, int) or name == "root handlers":
                assert state[name] == value, (name, when)
            else:
                assert state[name] is value, (name, when)
    assert warnings.filters == filters  # the same list object, with the same filters
    assert verdicts(first) == verdicts(second)


def test_restores_globals_when_a_sink_fails_to_start(pytester: pytest.Pytester) -> None:
    """A plugin sink whose start() raises must not leave the others installed."""
    pytester.makeconftest("""
        import pytest
        from leakcheck import capture, harness

        class Broken:
            name = "broken"
            def start(self):
                raise RuntimeError("cannot start")
            def stop(self):
                pass
            def collect(self):
                return []

        @pytest.fixture(autouse=True)
        def _broken(monkeypatch):
            monkeypatch.setattr(harness, "builtin_sinks",
                                lambda: [capture.LoggingSink(), Broken(), capture.CrashHookSink()])
    """)
    pytester.makepyfile(
        test_one="""
        import logging

        def test_one(leakcheck):
            pass

        def test_after():
            assert logging.Logger.isEnabledFor.__module__ == "logging"
    """
    )
    before = _globals()
    result = pytester.runpytest("-p", "no:randomly", *BASE, "-rA")
    assert _globals()["Logger.isEnabledFor"] is before["Logger.isEnabledFor"]
    result.stdout.fnmatch_lines(["PASSED test_one.py::test_after", "ERROR test_one.py::test_one*"])


def test_harness_start_failure_stops_the_started_sinks() -> None:
    from leakcheck.capture import CrashHookSink, LoggingSink
    from leakcheck.harness import LeakCheck

    class Broken:
        name = "broken"

        def start(self) -> None:
            raise RuntimeError("cannot start")

        def stop(self) -> None:
            pass

        def collect(self) -> list[Any]:
            return []

    before = _globals()
    check = LeakCheck(seed=1, sinks=[LoggingSink(), CrashHookSink(), Broken()])
    with pytest.raises(RuntimeError, match="cannot start"):
        check.start()
    after = _globals()
    for name in (
        "Logger.isEnabledFor",
        "Logger.handle",
        "sys.excepthook",
        "threading.excepthook",
        "sys.unraisablehook",
    ):
        assert after[name] is before[name], name


def test_inactive_sinks_are_reported_not_taken_as_clean(pytester: pytest.Pytester) -> None:
    """No sentry client during the test: the sentry sink saw nothing, and the JSON report
    says so instead of passing silently; the terminal says it under -v (without -v, an
    app that never set sentry up is told nothing: see tests/test_quiet.py)."""
    pytester.makepyfile(
        """
        def test_quiet(leakcheck):
            leakcheck.secret("bearer")
        """
    )
    result = pytester.runpytest(
        "-p", "no:randomly", "-v", f"--leakcheck-seed={SEED}", "--leakcheck-report=report.json"
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*sink inactive in 1 test(s): sentry event (no active*"])
    report = json.loads((pytester.path / "report.json").read_text())
    assert "sentry event" in report["tests"][0]["inactive_sinks"]


# --- latent material: strict_latent and declared production levels --------------------------

LATENT_SUITE = """
import logging
import pytest


class ConnectError(Exception):
    def __init__(self, message, request):
        super().__init__(message)
        self.request = request


def latent(leakcheck):
    token = leakcheck.secret("bearer")
    try:
        raise ConnectError("connection refused", {"url": f"https://api.example/?t={token}"})
    except ConnectError:
        logging.getLogger("gateway.http").exception("upstream call failed")


def debug_trace(leakcheck):
    token = leakcheck.secret("bearer")
    logging.getLogger("httpcore.http11").debug("send headers Bearer %s", token)


def test_latent(leakcheck):
    latent(leakcheck)


@pytest.mark.leakcheck(strict_latent=False)
def test_latent_marker_off(leakcheck):
    latent(leakcheck)


@pytest.mark.leakcheck(strict_latent=True)
def test_latent_marker_on(leakcheck):
    latent(leakcheck)


def test_debug_trace(leakcheck):
    debug_trace(leakcheck)


@pytest.mark.leakcheck(log_levels={"httpcore": "INFO"})
def test_debug_trace_marker_info(leakcheck):
    debug_trace(leakcheck)


@pytest.mark.leakcheck(log_levels="httpcore=DEBUG")
def test_debug_trace_marker_debug(leakcheck):
    debug_trace(leakcheck)
"""

#: the default verdicts: latent material passes, a DEBUG record fails (every level counts)
LATENT_DEFAULT = {
    "test_latent": "PASSED",
    "test_latent_marker_off": "PASSED",
    "test_latent_marker_on": "FAILED",
    "test_debug_trace": "FAILED",
    "test_debug_trace_marker_info": "PASSED",
    "test_debug_trace_marker_debug": "FAILED",
}


def run_latent(
    pytester: pytest.Pytester, *args: str
) -> tuple[pytest.RunResult, dict[str, str], dict[str, Any]]:
    """The latent suite's outcomes and JSON report records, by test name."""
    pytester.makepyfile(test_latent_suite=LATENT_SUITE)
    report = pytester.path / "latent.json"
    result = pytester.runpytest("-p", "no:randomly", *BASE, "-rA", f"--leakcheck-report={report}",
                                *args)  # fmt: skip
    assert "INTERNALERROR" not in "\n".join(result.outlines + result.errlines)
    data = json.loads(report.read_text(encoding="utf-8"))
    return result, inner_outcomes(result), {r["test"].split("::")[-1]: r for r in data["tests"]}


def test_latent_defaults(pytester: pytest.Pytester) -> None:
    """Both defaults, and the marker turning each the other way for its own test."""
    result, got, records = run_latent(pytester)
    assert got == LATENT_DEFAULT, got
    # what passes is still reported: latent, allowed, with where it sits
    for name in ("test_latent", "test_debug_trace_marker_info"):
        findings = records[name]["findings"]
        assert findings and all(f["sink_class"] == "latent" for f in findings), name
        assert all(f["allowed"] for f in findings), name
    out = result.stdout.str()
    # the DEBUG record's failure says how to declare the level: the logger and the option
    assert (
        "latent if production runs httpcore.http11 at INFO: declare it with "
        "leakcheck_log_levels = httpcore.http11=INFO (ini) or "
        "@pytest.mark.leakcheck(log_levels={'httpcore.http11': 'INFO'})" in out
    )
    assert "[LEAK] latent: log record gateway.http ERROR exc_info.request" in out


@pytest.mark.parametrize("config", ["pytest.ini", "pyproject.toml", "-o", "command line"])
def test_strict_latent_from_the_session(pytester: pytest.Pytester, config: str) -> None:
    args: tuple[str, ...] = ()
    if config == "pytest.ini":
        pytester.makeini("[pytest]\nleakcheck_strict_latent = true\n")
    elif config == "pyproject.toml":
        pytester.makepyprojecttoml("[tool.pytest.ini_options]\nleakcheck_strict_latent = true\n")
    elif config == "-o":
        args = ("-o", "leakcheck_strict_latent=true")
    else:
        args = ("--leakcheck-strict-latent",)
    _, got, _ = run_latent(pytester, *args)
    # strict for every test (latent below a declared level too); the marker still turns it
    # off for its own
    assert got == {
        **LATENT_DEFAULT,
        "test_latent": "FAILED",
        "test_debug_trace_marker_info": "FAILED",
    }, got


@pytest.mark.parametrize("config", ["pytest.ini", "pyproject.toml", "-o"])
def test_log_levels_from_the_session(pytester: pytest.Pytester, config: str) -> None:
    args: tuple[str, ...] = ()
    if config == "pytest.ini":
        pytester.makeini("[pytest]\nleakcheck_log_levels = httpcore=INFO root=WARNING\n")
    elif config == "pyproject.toml":
        pytester.makepyprojecttoml(
            '[tool.pytest.ini_options]\nleakcheck_log_levels = ["httpcore=INFO", "root=WARNING"]\n'
        )
    else:
        args = ("-o", "leakcheck_log_levels=httpcore=INFO root=WARNING")
    _, got, records = run_latent(pytester, *args)
    # latent under the declared level; a marker's level for the same logger wins
    assert got == {**LATENT_DEFAULT, "test_debug_trace": "PASSED"}, got
    notes = {f["note"] for f in records["test_debug_trace"]["findings"]}
    assert notes and all(
        note.startswith(
            "latent: emitted only when DEBUG is enabled (production level INFO declared for "
            "httpcore)"
        )
        for note in notes
    ), notes


@pytest.mark.parametrize(
    ("ini", "message"),
    [
        ("leakcheck_log_levels = httpcore", "leakcheck_log_levels: 'httpcore' has no level"),
        ("leakcheck_log_levels = httpcore=LOUD", "unknown level 'LOUD' for 'httpcore'"),
        ("leakcheck_strict_latent = maybe", "leakcheck_strict_latent: not a truth value"),
    ],
)
def test_bad_latent_ini_is_a_usage_error(pytester: pytest.Pytester, ini: str, message: str) -> None:
    pytester.makeini(f"[pytest]\n{ini}\n")
    pytester.makepyfile(test_one="def test_one(leakcheck):\n    pass\n")
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:hypothesispytest")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.ret
    assert any(line.startswith("ERROR: ") and message in line for line in result.errlines), (
        result.errlines
    )
    assert "Traceback" not in "\n".join(result.outlines + result.errlines)
