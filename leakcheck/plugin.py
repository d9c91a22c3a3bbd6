"""The pytest plugin: a ``leakcheck`` fixture, strict by default, nothing to remember to call.

At the end of the call phase every registered secret is searched, in every form, in every
sink of the test; a forbidden hit turns the test into a failure whose message carries
masked evidence only. Every report of a test that registered secrets (failure text,
``-l`` locals, ``-rA`` sections, ``--junitxml``, ``-vv`` diffs, warnings) is masked.
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from . import snapshots
from .canaries import Secret
from .capture import ProtectedRecordSink
from .detect import Scanner
from .extensions import skipped_plugins
from .forms import MASKING_FORMS
from .harness import LeakCheck
from .policy import DEFAULT_POLICY, Policy, PolicyError
from .serialize import map_strings

__all__ = ["LeakcheckOptions", "leakcheck"]

_LEAKCHECK = pytest.StashKey[LeakCheck]()
_MARKER = "leakcheck"
_MARKER_KEYS = {"allow", "forbid", "skip_sinks", "decode"}


@dataclass(frozen=True)
class LeakcheckOptions:
    """The ``@pytest.mark.leakcheck(...)`` options, validated."""

    allow: dict[str, list[str]] | list[str] = field(default_factory=dict)
    forbid: dict[str, list[str]] | list[str] = field(default_factory=dict)
    skip_sinks: dict[str, str] = field(default_factory=dict)
    decode: bool = True

    @classmethod
    def from_marker(cls, marker: pytest.Mark | None) -> LeakcheckOptions:
        return cls.from_markers([] if marker is None else [marker])

    @classmethod
    def from_markers(cls, markers: list[pytest.Mark]) -> LeakcheckOptions:
        """The options of a test's markers, closest first (``item.iter_markers``): a key
        set on the test overrides the same key set on its class or module, and keys set
        only farther out still apply. A key's value is taken whole, never merged."""
        kwargs: dict[str, Any] = {}
        for marker in reversed(markers):
            if marker.args:
                raise pytest.UsageError("@pytest.mark.leakcheck takes keyword arguments only")
            kwargs.update(marker.kwargs)
        unknown = set(kwargs) - _MARKER_KEYS
        if unknown:
            raise pytest.UsageError(
                f"@pytest.mark.leakcheck: unknown option(s) {', '.join(sorted(unknown))}; "
                f"known: {', '.join(sorted(_MARKER_KEYS))}"
            )
        skip = kwargs.get("skip_sinks", {})
        if not isinstance(skip, dict) or not all(
            isinstance(reason, str) and reason.strip() for reason in skip.values()
        ):
            raise pytest.UsageError(
                "@pytest.mark.leakcheck(skip_sinks=...) takes {sink name: reason}; "
                "every opt-out states its reason"
            )
        if not all(isinstance(name, str) for name in skip):
            raise pytest.UsageError(
                "@pytest.mark.leakcheck(skip_sinks=...) takes {sink name: reason}"
            )
        unknown_sinks = sorted(set(skip) - _known_sink_names())
        # a sink of a plugin whose library is missing here has no known name: let it be
        if unknown_sinks and not skipped_plugins():
            raise pytest.UsageError(
                f"@pytest.mark.leakcheck(skip_sinks=...): unknown sink(s) "
                f"{', '.join(repr(n) for n in unknown_sinks)}; known: "
                f"{', '.join(sorted(_known_sink_names()))}"
            )
        decode = kwargs.get("decode", True)
        if not isinstance(decode, bool):
            raise pytest.UsageError(
                f"@pytest.mark.leakcheck(decode=...) takes True or False, "
                f"not {type(decode).__name__}"
            )
        rules: dict[str, Any] = {}
        for key in ("allow", "forbid"):
            value = kwargs.get(key) or {}
            if isinstance(value, str):
                value = [value]
            if not isinstance(value, (dict, list, tuple)):
                raise pytest.UsageError(
                    f"@pytest.mark.leakcheck({key}=...) takes {{secret class: [sink class, "
                    f"...]}} or ['secret class: sink class', ...], not {type(value).__name__}"
                )
            rules[key] = value
        return cls(
            allow=rules["allow"],
            forbid=rules["forbid"],
            skip_sinks=dict(skip),
            decode=decode,
        )

    def policy(self, base: Policy, where: str) -> Policy:
        try:
            return base.with_rules(allow=self.allow, forbid=self.forbid)
        except PolicyError as exc:
            raise pytest.UsageError(f"@pytest.mark.leakcheck on {where}: {exc}") from None


_DEFAULT_OPTIONS = LeakcheckOptions()


def _known_sink_names() -> set[str]:
    # every sink a check starts with (its own, the built-in and the plugins' ones) and the
    # stage matrix's protected record
    return {sink.name for sink in LeakCheck().sinks} | {ProtectedRecordSink.name}


def _options(item: pytest.Item, base: Policy) -> tuple[LeakcheckOptions, Policy]:
    """The validated marker options of ``item`` and the policy they make."""
    markers = list(item.iter_markers(_MARKER))
    if not markers:  # the common case: the session's policy as it is
        return _DEFAULT_OPTIONS, base
    try:
        options = LeakcheckOptions.from_markers(markers)
    except pytest.UsageError as exc:
        raise pytest.UsageError(f"{exc} (on {item.nodeid})") from None
    return options, options.policy(base, item.nodeid)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("leakcheck", "secret leak checking")
    group.addoption(
        "--no-leakcheck",
        action="store_true",
        default=False,
        help="disable leak checking (canaries are still generated)",
    )
    group.addoption(
        "--leakcheck-report",
        metavar="PATH",
        default=None,
        help="write a JSON report of every finding of the session",
    )
    group.addoption(
        "--leakcheck-seed",
        metavar="SEED",
        default=None,
        help="canary seed (printed on failure) to replay a run",
    )
    parser.addini(
        "leakcheck_allow",
        type="linelist",
        default=[],
        help="extra allowed pairs, e.g. 'context: caller'",
    )
    parser.addini(
        "leakcheck_forbid",
        type="linelist",
        default=[],
        help="pairs to forbid, e.g. 'context: operator'",
    )
    parser.addini("leakcheck_report", default="", help="JSON report path")
    snapshots.addoption(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "leakcheck(allow=None, forbid=None, skip_sinks=None, decode=True): per-test leak "
        "policy; skip_sinks maps a sink name to the reason it is opted out",
    )
    state = _State(config)
    config.stash[_STATE] = state
    config.pluginmanager.register(state, "leakcheck-state")
    snapshots.install(config, lambda: state.secrets)


class _State:
    """Session-wide: the seed, every secret ever registered (for masking anything we did
    not capture per test), the report, the xdist merge."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.enabled = not config.getoption("--no-leakcheck")
        seed = config.getoption("--leakcheck-seed")
        if seed is None and hasattr(config, "workerinput"):
            seed = config.workerinput.get("leakcheck_seed")
        self.seed = seed if seed is not None else str(random.SystemRandom().getrandbits(48))
        try:
            self.policy = DEFAULT_POLICY.with_rules(
                allow=config.getini("leakcheck_allow"), forbid=config.getini("leakcheck_forbid")
            )
        except PolicyError as exc:
            raise pytest.UsageError(f"leakcheck ini: {exc}") from None
        self.report_path = config.getoption("--leakcheck-report") or config.getini(
            "leakcheck_report"
        )
        capture = config.getoption("capture", "fd")
        #: why the stdout/stderr sinks see nothing, when pytest does not capture output
        self.uncaptured = _UNCAPTURED.get(capture, "")
        #: what the capture mode lets through unscanned or unmasked, for the header
        self.capture_note = _CAPTURE_NOTES.get(capture, "")
        self.secrets: list[Secret] = []
        self.running: dict[str, LeakCheck] = {}
        self.records: list[dict[str, Any]] = []
        self.opt_outs: list[dict[str, str]] = []
        self.request_id_problems: list[dict[str, Any]] = []
        self._scanner: Scanner | None = None

    def mask(self, text: str) -> str:
        if not self.secrets:
            return text
        if self._scanner is None or len(self._scanner.secrets) != len(self.secrets):
            self._scanner = Scanner(self.secrets, decode=True, forms=MASKING_FORMS)
        return self._scanner.mask(text)

    def mask_live(self, text: str) -> str:
        """``mask`` plus the secrets of the tests still running (registered, not yet
        handed to the session)."""
        for check in list(self.running.values()):
            text = check.mask(text)
        return self.mask(text)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """pytest's live log (``log_cli``) and ``--log-file`` write each record as it is
        made, before any report exists: mask them at their handlers."""
        logging_plugin = self.config.pluginmanager.get_plugin("logging-plugin")
        live = []
        if logging_plugin is not None and logging_plugin._log_cli_enabled():
            live.append("log_cli_handler")
        if self.config.getoption("log_file", None) or self.config.getini("log_file"):
            live.append("log_file_handler")  # otherwise it writes to os.devnull
        for name in live:
            handler = getattr(logging_plugin, name, None)
            if isinstance(handler, logging.Handler):
                handler.format = self._masked_format(handler.format)  # type: ignore[method-assign]

    def _masked_format(self, fmt: Any) -> Any:
        def format(record: logging.LogRecord) -> str:
            return self.mask_live(fmt(record))

        return format

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """A marker written wrong is a usage error before any test runs, not a traceback
        in one test's setup. (An xdist worker cannot stop the session that way: there the
        fixture fails the test with the same message.)"""
        if hasattr(self.config, "workerinput"):
            return
        for item in items:
            if item.get_closest_marker(_MARKER) is not None:  # nothing to check otherwise
                _options(item, self.policy)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """``record_xml_attribute`` writes straight into the JUnit node, which junitxml
        freezes at the teardown report: mask its values just before."""
        if report.when != "teardown":
            return
        from _pytest.junitxml import xml_key

        xml = self.config.stash.get(xml_key, None)
        if xml is None:
            return
        reporter = xml.node_reporter(report)  # the open one for this test
        if not reporter.attrs.keys() - _JUNIT_OWN_ATTRIBUTES:
            # nothing recorded: skip the session-wide masker, which is rebuilt whenever a
            # test has added secrets (per test, it made --junitxml runs quadratic)
            return
        reporter.attrs = {
            self.mask_live(name): self.mask_live(value) for name, value in reporter.attrs.items()
        }

    # xdist: the controller hands its seed to the workers and merges what they found.
    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput["leakcheck_seed"] = self.seed

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", {}).get("leakcheck")
        if output:
            data = json.loads(output)
            self.records.extend(data["records"])
            self.opt_outs.extend(data["opt_outs"])

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(self.config, "workeroutput"):
            self.config.workeroutput["leakcheck"] = json.dumps(
                {"records": self.records, "opt_outs": self.opt_outs}
            )
            return
        self.request_id_problems = _request_id_problems(self.records)
        if self.request_id_problems and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.report_path:
            document = {
                "tool": "leakcheck",
                "seed": self.seed,
                "enabled": self.enabled,
                "tests": self.records,
                "opt_outs": self.opt_outs,
            }
            if any("matrix" in r for r in self.records):
                document["request_ids"] = self.request_id_problems
            path = Path(self.report_path)
            path.parent.mkdir(parents=True, exist_ok=True)
            # Mask every string, then dump: masking the dumped text could swallow the
            # backslash of an escaped quote and leave invalid JSON.
            text = json.dumps(map_strings(document, self.mask), indent=2, ensure_ascii=False)
            path.write_text(text + "\n", encoding="utf-8")

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        state = "on" if self.enabled else "OFF (--no-leakcheck)"
        header = [f"leakcheck: {state}, canary seed {self.seed}"]
        if self.enabled and self.capture_note:
            header.append(f"leakcheck: {self.capture_note}")
        return header

    @pytest.hookimpl(tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        # Warnings are printed from the terminal reporter's own records: mask them there.
        for report in terminalreporter.stats.get("warnings", []):
            message = getattr(report, "message", None)
            if isinstance(message, str):
                report.message = self.mask(message)
        leaky = [r for r in self.records if r["forbidden"]]
        if not self.records and not self.opt_outs:
            return
        terminalreporter.section("leakcheck")
        terminalreporter.write_line(
            f"{len(self.records)} test(s) checked, {len(leaky)} with forbidden hits; "
            f"canary seed {self.seed}"
        )
        for opt in self.opt_outs:
            terminalreporter.write_line(
                f"opted out: {opt['test']}: sink {opt['sink']!r} ({opt['reason']})"
            )
        inactive: dict[str, set[str]] = {}
        for record in self.records:
            for sink, reason in record.get("inactive_sinks", {}).items():
                inactive.setdefault(f"{sink} ({reason})", set()).add(record["test"])
        for what, tests in sorted(inactive.items()):
            terminalreporter.write_line(f"sink inactive in {len(tests)} test(s): {what}")
        matrix = [r for r in self.records if "matrix" in r]
        if matrix:
            from .matrix import format_grid

            for line in format_grid(matrix).splitlines():
                terminalreporter.write_line(line)
            problems = getattr(self, "request_id_problems", [])
            verdict = "FAILED" if problems else "ok"
            terminalreporter.write_line(f"request ids across {len(matrix)} case(s): {verdict}")
            for problem in problems:
                terminalreporter.write_line(f"  - {problem['rule']}: {problem['message']}")
        for name, why in sorted(skipped_plugins().items()):
            terminalreporter.write_line(f"plugin not loaded: {name} ({why})")
        if self.report_path:
            terminalreporter.write_line(f"JSON report: {self.report_path}")


_STATE = pytest.StashKey[_State]()
#: What junitxml writes on a test case itself (from the node id); anything else came from
#: ``record_xml_attribute``.
_JUNIT_OWN_ATTRIBUTES = frozenset({"classname", "name", "file", "line", "url"})
_UNCAPTURED = {
    "no": "pytest -s/--capture=no: output goes straight to the terminal, neither scanned nor "
    "masked",
}
_CAPTURE_NOTES = {
    "no": "-s/--capture=no: stdout and stderr are neither scanned nor masked, and a test's "
    "output reaches the terminal as it is",
    "sys": "--capture=sys: writes to file descriptors 1 and 2 (subprocesses, C code) are "
    "not scanned",
    "tee-sys": "--capture=tee-sys: stdout and stderr are scanned, but also echoed to the "
    "terminal unmasked",
}
#: pytest's fixtures that take a test's output away from the report sections
_CAPTURE_FIXTURES = ("capsys", "capsysbinary", "capfd", "capfdbinary")


@pytest.fixture
def leakcheck(request: pytest.FixtureRequest) -> Iterator[LeakCheck]:
    """Plant canaries (``leakcheck.secret(kind)``), mark caller-visible objects
    (``leakcheck.expose(obj)``); every sink of the test is searched at the end."""
    state = request.config.stash[_STATE]
    try:
        options, policy = _options(request.node, state.policy)  # type: ignore[arg-type]
    except pytest.UsageError as exc:
        usage = f"usage error: {exc}"
    else:
        usage = ""
    if usage:
        pytest.fail(usage, pytrace=False)
    check = LeakCheck(
        seed=state.seed,
        namespace=request.node.nodeid,
        policy=policy,
        decode=options.decode,
        skip_sinks=options.skip_sinks,
        sinks=None if state.enabled else [],
    )
    for sink, reason in options.skip_sinks.items():
        state.opt_outs.append({"test": request.node.nodeid, "sink": sink, "reason": reason})
    if state.uncaptured:
        # never silently clean: what pytest does not capture, no sink sees
        check.stdout.inactive_reason = check.stderr.inactive_reason = state.uncaptured
    request.node.stash[_LEAKCHECK] = check
    state.running[request.node.nodeid] = check
    try:
        if state.enabled:
            check.start()
        yield check
    finally:
        state.running.pop(request.node.nodeid, None)
        check.stop()
        state.secrets.extend(check.secrets)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """What the test reads with ``capsys``/``capfd.readouterr()`` never reaches pytest's
    report sections: hand it to the stdout/stderr sinks as it is read."""
    check = item.stash.get(_LEAKCHECK, None)
    funcargs = getattr(item, "funcargs", {})
    tapped = [(name, funcargs[name]) for name in _CAPTURE_FIXTURES if check and name in funcargs]
    for name, fixture in tapped:
        fixture.readouterr = _tapped_readouterr(fixture.readouterr, name, check)
    try:
        yield
    finally:
        for _, fixture in tapped:
            del fixture.readouterr  # the class's own method again


def _tapped_readouterr(readouterr: Any, name: str, check: LeakCheck) -> Any:
    def tapped() -> Any:
        result = readouterr()
        for sink, text in ((check.stdout, result.out), (check.stderr, result.err)):
            if isinstance(text, bytes):
                text = text.decode("utf-8", "replace")
            if text:
                sink.add(f"read by {name}", text)
        return result

    return tapped


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    check = item.stash.get(_LEAKCHECK, None)
    if check is None:
        return
    if call.when == "teardown":
        # The test's last report: nothing reads its harness again. pytest keeps every item
        # to the end of the session, so a harness left in the stash (sinks, log records,
        # scanner: ~56 KiB, ~90 objects) is walked by every garbage collection until then.
        del item.stash[_LEAKCHECK]
    skipped = report.skipped and not hasattr(report, "wasxfail")
    if call.when == "call" and check.unreached() and not skipped:
        # a forced stage that never fired proved nothing: never a pass
        harness = check.harness_errors()
        original = report.longreprtext if report.failed else ""
        report.outcome = "failed"
        report.longrepr = "\n\n".join(p for p in (harness, original) if p)
        if hasattr(report, "wasxfail"):
            del report.wasxfail
    if not check.secrets:
        return
    state = item.config.stash[_STATE]
    if call.when == "call" and state.enabled:
        raised = call.excinfo.value if call.excinfo is not None else None
        # our own verdicts (a matrix failure, already masked) are not the gateway's output,
        # and read best without the harness's traceback around them
        if raised is not None and not isinstance(raised, pytest.skip.Exception):
            if getattr(raised, "leakcheck_verdict", False):
                report.longrepr = check.harness_errors() + "\n\n" + str(raised)
                report.longrepr = report.longrepr.strip()
            else:
                check.exception_reached_caller(raised)
        _hand_over_output(item, check)
        leaks = check.findings()
        forbidden = [leak for leak in leaks if not leak.allowed]
        # error-text snapshot of a baseline matrix case: compared now, so that a drift is
        # in the record's outcome and the grid
        session = snapshots.session_of(item.config)
        drift = session.apply(item, report, check) if session is not None else None
        # Masked here, with every piece of this test's secrets: under xdist the controller
        # that writes the report never sees the secrets.
        if check.matrix is not None:
            # a direct secret in the protected record breaks assertion 4; elsewhere, 2
            sinks = {leak.sink for leak in forbidden}
            failed = set(check.matrix["failed"])
            record_sink = ProtectedRecordSink.name
            failed |= {"record"} if record_sink in sinks else set()
            failed |= {"leaks"} if sinks - {record_sink} else set()
            failed |= {"harness"} if check.unreached() else set()
            failed |= {"snapshot"} if drift else set()
            check.matrix["failed"] = sorted(failed)
        record: dict[str, Any] = {
            "test": item.nodeid,
            "forbidden": len(forbidden),
            "findings": [map_strings(leak.to_dict(), check.mask) for leak in leaks],
            # ids only, never values: `leakcheck scan --canaries-from` rebuilds the
            # canaries from these, the seed and the test id
            "secrets": [
                {"id": check.mask(s.id), "kind": check.mask(s.kind), "generated": s.generated}
                for s in check.secrets
            ],
            "inactive_sinks": check.inactive_sinks(),
            **({"matrix": map_strings(check.matrix, check.mask)} if check.matrix else {}),
        }
        state.records.append(record)
        if forbidden:
            original = report.longreprtext if report.failed else ""
            text = check.report(leaks)
            if check.matrix is not None and "leakcheck matrix:" not in original:
                case = check.matrix
                text = (
                    f"leakcheck matrix: operation {case['operation']}, stage {case['stage']}, "
                    f"placement {case['placement']}\n{text}"
                )
            rerun = f"rerun: pytest {item.nodeid!r} --leakcheck-seed={check.seed}"
            if "\nrerun: pytest " in original:
                rerun = ""  # the matrix's own failure already says how
            report.outcome = "failed"
            report.longrepr = "\n\n".join(p for p in (text, rerun, original) if p)
            # A leak is a failure even in an xfail test: pytest counts a report that
            # carries ``wasxfail`` as xfailed/xpassed, never as failed.
            if hasattr(report, "wasxfail"):
                del report.wasxfail
        record["outcome"] = report.outcome
    _mask_report(report, check)


def _request_id_problems(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The across-matrix request-id rules (unique, not sequential, random enough), over the
    ids every matrix case returned, in collection order (xdist workers merged)."""
    ids = [r["matrix"]["request_id"] for r in records if (r.get("matrix") or {}).get("request_id")]
    if len(ids) < 2:
        return []
    from .contract import check_request_ids  # jsonschema: only when a matrix ran

    return [v.to_dict() for v in check_request_ids(ids)]


def _hand_over_output(item: pytest.Item, check: LeakCheck) -> None:
    """stdout/stderr as pytest's fd-level capture saw them (subprocesses included)."""
    for when, key, content in getattr(item, "_report_sections", []):
        if key == "stdout":
            check.stdout.add(f"{when}", content)
        elif key == "stderr":
            check.stderr.add(f"{when}", content)
        elif key == "log":
            check.stderr.add(f"pytest log capture ({when})", content)


def _mask_report(report: pytest.TestReport, check: LeakCheck) -> None:
    """No route to pytest's output may carry a secret: failure text, locals, sections,
    skip and xfail reasons, ``record_property`` values (JUnit properties)."""
    if (
        report.longrepr is None
        and not report.sections
        and not report.user_properties
        and not hasattr(report, "wasxfail")
    ):
        return
    if isinstance(report.longrepr, tuple):
        # A skip: (path, lineno, reason); pytest's terminal and JUnit writers need the tuple.
        report.longrepr = tuple(
            check.mask(part) if isinstance(part, str) else part for part in report.longrepr
        )
    elif report.longrepr is not None:
        text = report.longreprtext
        masked = check.mask(text)
        if masked != text:
            report.longrepr = masked
    wasxfail = getattr(report, "wasxfail", None)
    if isinstance(wasxfail, str):
        report.wasxfail = check.mask(wasxfail)
    report.sections = [(title, check.mask(content)) for title, content in report.sections]
    report.user_properties = [
        (_mask_value(name, check), _mask_value(value, check))
        for name, value in report.user_properties
    ]


def _mask_value(value: object, check: LeakCheck) -> object:
    """``value`` itself when it shows no secret, else its masked text."""
    try:
        text = value if isinstance(value, str) else str(value)
    except Exception:  # noqa: BLE001 - a raising __str__ cannot print a secret either
        return value
    masked = check.mask(text)
    return value if masked == text else masked
