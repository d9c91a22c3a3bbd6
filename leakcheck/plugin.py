"""The pytest plugin: a ``leakcheck`` fixture, strict by default, nothing to remember to call.

At the end of the call phase every registered secret is searched, in every form, in every
sink of the test; a forbidden hit turns the test into a failure whose message carries
masked evidence only. Every report of a test that registered secrets (failure text,
``-l`` locals, ``-rA`` sections, ``--junitxml``, ``-vv`` diffs, warnings) is masked.
"""

from __future__ import annotations

import json
import logging
import os
import random
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from . import snapshots
from .canaries import Secret
from .capture import ProtectedRecordSink
from .extensions import skipped_plugins
from .forms import WINDOW_CHARS
from .harness import LeakCheck
from .masking import SessionMasker, mask_strings
from .policy import DEFAULT_POLICY, Policy, PolicyError
from .pytest_reports import (
    fail_report,
    mask_fields,
    mask_junit,
    mask_report,
    mask_test_ids,
    mask_warning,
)
from .records import Assertion, SecretRef, TestRecord

if TYPE_CHECKING:  # pragma: no cover
    import pluggy  # what a hookwrapper's yield returns

__all__ = ["LeakcheckOptions", "leakcheck", "register_session_secret"]

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
    parser.addini(
        "leakcheck_secret_env",
        type="linelist",
        default=[],
        help="environment variables whose values are secrets for the whole session: masked "
        "in everything pytest prints from the first line, searched in every test",
    )
    snapshots.addoption(parser)


@pytest.hookimpl(trylast=True)  # after the terminal reporter exists: its writer is masked
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "leakcheck(allow=None, forbid=None, skip_sinks=None, decode=True): per-test leak "
        "policy; skip_sinks maps a sink name to the reason it is opted out",
    )
    state = _State(config)
    config.stash[_STATE] = state
    config.pluginmanager.register(state, "leakcheck-state")
    state.mask_terminal()
    snapshots.install(config, lambda: state.secrets)


def register_session_secret(
    config: pytest.Config, value: str, kind: str = "secret", *, id: str | None = None
) -> Secret:
    """Register a secret for the whole session (from a conftest's ``pytest_configure``):
    masked in everything pytest prints from then on, test ids included, and searched in
    every test that uses the ``leakcheck`` fixture. A value a test registers itself is
    masked only from the moment it registers it; one that shows in a test id (a
    parametrize value) is printed by ``-v`` before that, so it must be registered here."""
    # a conftest's pytest_configure may run before the plugin's: those wait for it
    waiting = config.stash.setdefault(_EARLY_SESSION_SECRETS, [])
    state = config.stash.get(_STATE, None)
    known = len(state.session_secrets) if state is not None else len(waiting)
    secret_id = id or f"{kind}#session{known + 1}"
    try:
        secret = Secret.from_user(value, kind=kind, id=secret_id)
    except ValueError as exc:
        raise pytest.UsageError(f"leakcheck session secret: {exc}") from None
    if state is None:
        waiting.append(secret)
    else:
        state.add_session_secret(secret)
    return secret


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
        #: leakcheck_secret_env names that are not set (said in the header)
        self.missing_env: list[str] = []
        capture = config.getoption("capture", "fd")
        #: why the stdout/stderr sinks see nothing, when pytest does not capture output
        self.uncaptured = _UNCAPTURED.get(capture, "")
        #: what the capture mode lets through unscanned or unmasked, for the header
        self.capture_note = _CAPTURE_NOTES.get(capture, "")
        #: the secrets of every test that ended (the snapshots' guard reads them)
        self.secrets: list[Secret] = []
        #: every secret of every test that ended and of the session: everything pytest
        #: prints is masked with it and the running tests' own (under xdist, in the
        #: worker that knows the secrets, before a report travels to the controller)
        self.masker = SessionMasker()
        self.session_secrets: list[Secret] = []
        self.running: dict[str, LeakCheck] = {}
        self.records: list[dict[str, Any]] = []
        self.opt_outs: list[dict[str, str]] = []
        self.request_id_problems: list[dict[str, Any]] = []
        for name in config.getini("leakcheck_secret_env"):
            self._add_env_secret(name)
        for secret in config.stash.get(_EARLY_SESSION_SECRETS, []):
            self.add_session_secret(secret)

    def _add_env_secret(self, name: str) -> None:
        value = os.environ.get(name)
        if not value:
            self.missing_env.append(name)
            return
        try:
            secret = Secret.from_user(value, kind="secret", id=f"${name}")
        except ValueError as exc:
            raise pytest.UsageError(f"leakcheck_secret_env {name}: {exc}") from None
        self.add_session_secret(secret)

    def add_session_secret(self, secret: Secret) -> None:
        self.session_secrets.append(secret)
        self.masker.add([secret])

    def mask(self, text: str) -> str:
        """``text`` with every form and piece of every secret seen so far masked: those of
        the tests still running (each with its own masker), then every other one."""
        for check in list(self.running.values()):
            text = check.mask(text)
        return self.masker.mask(text)

    def mask_terminal(self) -> None:
        """Mask every write to pytest's terminal: the last net under every line pytest
        prints (test ids in ``-v`` lines and failure headers, the short summary, warnings,
        exit and interrupt banners, INTERNALERROR), with what the process knows then."""
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        writer = getattr(reporter, "_tw", None)
        if writer is None:
            return
        write = writer.write

        def masked_write(msg: str, **markup: bool) -> None:
            # a progress dot cannot hold a masking window
            if len(msg) >= WINDOW_CHARS:
                msg = self.mask(msg)
            write(msg, **markup)

        writer.write = masked_write

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
                masked = self._masked_format(handler.format)
                handler.format = masked  # type: ignore[method-assign]  # on this instance only

    def _masked_format(self, fmt: Any) -> Any:
        def format(record: logging.LogRecord) -> str:
            return self.mask(fmt(record))

        return format

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """A marker written wrong is a usage error before any test runs, not a traceback
        in one test's setup. (An xdist worker cannot stop the session that way: there the
        fixture fails the test with the same message.) A test id that shows a session
        secret (a parametrize value) is masked before anything prints it."""
        if len(self.masker):
            mask_test_ids(items, self.mask)
        if hasattr(self.config, "workerinput"):
            return
        for item in items:
            if item.get_closest_marker(_MARKER) is not None:  # nothing to check otherwise
                _options(item, self.policy)

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(self, collector: pytest.Collector) -> Any:
        report = yield
        mask_report(report, self.mask)
        return report

    @pytest.hookimpl(tryfirst=True)
    def pytest_internalerror(self, excrepr: Any) -> None:
        """An INTERNALERROR is printed by the terminal, and sent by an xdist worker to the
        controller as its text: masked here, in place, first."""
        mask_fields(excrepr, self.mask)

    @pytest.hookimpl(tryfirst=True)
    def pytest_warning_recorded(self, warning_message: Any, when: str, nodeid: str) -> None:
        """A warning reaches the summary long after the test that raised it, and under xdist
        through the controller, which knows no secret: mask it here, first, in place (a
        ``__del__`` after the test, a thread dying late, a warning during collection)."""
        mask_warning(warning_message, self.mask)

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
            return  # nothing recorded: junitxml's own attributes come from masked reports
        reporter.attrs = {
            self.mask(name): self.mask(value) for name, value in reporter.attrs.items()
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

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        from _pytest.junitxml import xml_key

        xml = self.config.stash.get(xml_key, None)
        if xml is not None:
            # before junitxml writes: every test case, with every secret known by now
            # (record_testsuite_property, and a test's output holding a later one's secret)
            mask_junit(xml, self.mask)
        if hasattr(self.config, "workeroutput"):
            # masked again with every secret this worker saw (a later test may have
            # registered a value an earlier record shows): the controller knows none
            output = mask_strings({"records": self.records, "opt_outs": self.opt_outs}, self.mask)
            self.config.workeroutput["leakcheck"] = json.dumps(output)
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
            text = json.dumps(mask_strings(document, self.mask), indent=2, ensure_ascii=False)
            path.write_text(text + "\n", encoding="utf-8")

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        state = "on" if self.enabled else "OFF (--no-leakcheck)"
        header = [f"leakcheck: {state}, canary seed {self.seed}"]
        if self.enabled and self.capture_note:
            header.append(f"leakcheck: {self.capture_note}")
        if self.session_secrets:
            header.append(f"leakcheck: {len(self.session_secrets)} session secret(s) masked")
        for name in self.missing_env:
            header.append(f"leakcheck: leakcheck_secret_env: ${name} is not set")
        header.append(f"leakcheck: {_MASKING_LIMIT}")
        return header

    @pytest.hookimpl(tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
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
        for record in self.records:
            for part in record.get("not_inspected", []):
                terminalreporter.write_line(
                    f"could not inspect in {record['test']}: {part['sink']} {part['path']}  "
                    f"{part['what']}"
                )
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
_EARLY_SESSION_SECRETS = pytest.StashKey[list[Secret]]()
#: What masking cannot reach, said in every session header.
_MASKING_LIMIT = (
    "output is masked with each secret from the moment it is registered; what was printed "
    "before (a value logged or a parametrize id shown by -v before the test registered it) "
    "cannot be: register such values for the session (leakcheck_secret_env)"
)
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
        options, policy = _options(request.node, state.policy)
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
    for secret in state.session_secrets:
        check.register_secret(secret)
    for sink, reason in options.skip_sinks.items():
        state.opt_outs.append(
            {"test": state.mask(request.node.nodeid), "sink": sink, "reason": state.mask(reason)}
        )
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
        # the session masker takes the secrets over before the check stops being asked
        state.masker.add(check.secrets, check.built_masker())
        state.running.pop(request.node.nodeid, None)
        check.stop()
        state.secrets.extend(check.secrets)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """What the test reads with ``capsys``/``capfd.readouterr()`` never reaches pytest's
    report sections: hand it to the stdout/stderr sinks as it is read."""
    check = item.stash.get(_LEAKCHECK, None)
    funcargs = getattr(item, "funcargs", {})
    tapped: list[tuple[str, Any]] = []
    if check:
        tapped = [(name, funcargs[name]) for name in _CAPTURE_FIXTURES if name in funcargs]
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
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pluggy.Result[pytest.TestReport], None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    state = item.config.stash[_STATE]
    try:
        _judge_report(item, call, report, state)
    finally:
        # every report, of any test: a secret the session knows may show in a test that
        # never asked for the fixture (a module fixture's teardown, a later test's output)
        mask_report(report, state.mask)


def _judge_report(
    item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport, state: _State
) -> None:
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
        fail_report(report, lead=check.harness_errors())
    if not check.secrets:
        return
    if call.when == "call":
        _fail_on_secret_in_test_id(item, report, check)
    if call.when == "call" and state.enabled:
        raised = call.excinfo.value if call.excinfo is not None else None
        # a matrix case's own failure names the case and how to rerun it (the matrix, and
        # its jsonschema, are imported only when a matrix runs)
        told = bool(getattr(raised, "names_case_and_rerun", False))
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
        if check.matrix is not None:
            # a direct secret in the protected record breaks assertion 4; elsewhere, 2
            sinks = {leak.sink for leak in forbidden}
            record_sink = ProtectedRecordSink.name
            failed = check.matrix.failed
            failed |= {Assertion.RECORD} if record_sink in sinks else set()
            failed |= {Assertion.LEAKS} if sinks - {record_sink} else set()
            failed |= {Assertion.HARNESS} if check.unreached() else set()
            failed |= {Assertion.SNAPSHOT} if drift else set()
        record = TestRecord(
            test=item.nodeid,
            forbidden=len(forbidden),
            findings=[leak.to_dict() for leak in leaks],
            # ids only, never values: `leakcheck scan --canaries-from` rebuilds the
            # canaries from these, the seed and the test id
            secrets=[SecretRef(s.id, s.kind, s.generated) for s in check.secrets],
            inactive_sinks=check.inactive_sinks(),
            # what could not be inspected (a generator, an opaque object, over budget)
            not_inspected=[part.to_dict() for part in getattr(leaks, "not_inspected", [])],
            matrix=check.matrix,
        )
        if forbidden:
            text = check.report(leaks)
            if check.matrix is not None and not told:
                case = check.matrix
                text = (
                    f"leakcheck matrix: operation {case.operation}, stage {case.stage}, "
                    f"placement {case.placement}\n{text}"
                )
            if not told:
                text += f"\n\nrerun: pytest {item.nodeid!r} --leakcheck-seed={check.seed}"
            fail_report(report, lead=text)
        record.outcome = report.outcome
        # masked here, with every secret this process knows: under xdist the controller
        # that writes the report knows none
        state.records.append(mask_strings(record.to_json(), state.mask))


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


def _fail_on_secret_in_test_id(
    item: pytest.Item, report: pytest.TestReport, check: LeakCheck
) -> None:
    """A secret registered by a test whose id shows it (a parametrize value) came too late:
    ``-v`` printed the id before the test ran. Never silently: the test fails, saying how
    to register it in time."""
    if "[" not in item.nodeid:  # only a parametrize id is made of values
        return
    shown = sorted({f.secret_id for f in check.scanner.scan(item.nodeid)})
    if not shown:
        return
    message = (
        f"leakcheck: secret(s) {', '.join(shown)} show in this test's id, which pytest "
        "printed before the test registered them: register them for the session "
        "(ini leakcheck_secret_env, or leakcheck.plugin.register_session_secret in a "
        "conftest's pytest_configure) or give the test an id without them "
        "(@pytest.mark.parametrize(..., ids=...))"
    )
    fail_report(report, lead=message)
