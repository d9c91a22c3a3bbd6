"""The plugin's session: the seed, every secret the process has seen (everything pytest
prints is masked with them), the JSON report, the xdist merge, the header and the summary.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import random
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .. import canaries
from ..canaries import CANARY_GENERATION, Secret, check_kind_name
from ..errors import plain, quoted
from ..extensions import broken_plugins, not_set_up_reasons, skipped_plugins
from ..forms import WINDOW_CHARS
from ..policy import DEFAULT_POLICY, PolicyError
from . import reports
from .options import MARKER, options_for
from .shortened import cuts_message

if TYPE_CHECKING:  # pragma: no cover
    from ..harness import LeakCheck
    from ..masking import SessionMasker
    from .capture_fixtures import SuspendedStreams, TerminalEcho
    from .shortened import ShortenedMasking

__all__ = [
    "CHECK",
    "EARLIER_BATCHES",
    "EARLY_SESSION_SECRETS",
    "SESSION",
    "PluginSession",
    "register_session_secret",
]

SESSION = pytest.StashKey["PluginSession"]()
#: a test's harness, while it runs (here, not in ``judge``: a session whose tests never
#: ask for the fixture never imports the harness, its sinks and faults)
CHECK = pytest.StashKey["LeakCheck"]()
#: how many batches of secrets the session masker held when a test began: its verdict
#: also looks for those (an earlier test's secret its output shows: it outlived that test)
EARLIER_BATCHES = pytest.StashKey[int]()
#: set while a test's call phase runs: a report made then is a subtest's (pytest's
#: ``subtests`` fixture, ``unittest``'s ``subTest``), not the test's own
IN_CALL = pytest.StashKey[bool]()
#: set for a test that catches exceptions itself where they could not be watched
#: (``caught_try``: Python < 3.12)
CATCHES_UNJUDGED = pytest.StashKey[bool]()
#: Texts masked are kept for the reports that repeat them: the last this many, each of
#: at least that many characters (a shorter one costs less to mask than to keep) and at
#: most that many (a large one is kept by nobody else).
_CACHED_TEXTS = 32
_CACHED_FROM_CHARS = 64
_CACHED_UP_TO_CHARS = 256 * 1024
EARLY_SESSION_SECRETS = pytest.StashKey[list[Secret]]()
_TRACE_UNMASKED = (
    "pytest's debug trace (--debug, PYTEST_DEBUG) is NOT masked: this pluggy's tracer has "
    "no writer leakcheck knows, and the trace shows every hook call's arguments (secrets "
    "included)"
)
#: ``--debug``: trace messages written for one (those traced while masking it included)
_TRACED_WHILE_MASKING = 1000


class PluginSession:
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
        self.report_path = _writable_report_path(
            config.getoption("--leakcheck-report") or config.getini("leakcheck_report")
        )
        #: why the JSON report could not be written at the end, if it could not
        self.report_error = ""
        #: leakcheck_secret_env names that are not set (said in the header)
        self.missing_env: list[str] = []
        # (-p no:capture: no capture manager, and no "capture" option either, whose default
        # read "fd", fully captured: a test's print went raw to the terminal, unjudged)
        capturing = config.pluginmanager.has_plugin("capturemanager")
        self.capture = capture = config.getoption("capture", "fd") if capturing else "no"
        #: why the stdout/stderr sinks see nothing, when pytest does not capture output
        self.uncaptured = _UNCAPTURED.get(capture, "")
        #: what the capture mode lets through unscanned or unmasked, for the header
        self.capture_note = _CAPTURE_NOTES.get(capture, "")
        #: what reaches the terminal under ``-s`` and ``--capture=tee-sys``, masked
        #: (``mask_echo``); under ``-s`` what a test prints is recorded for its sinks
        self.echo: TerminalEcho | None = None
        #: what a thread writes while pytest's capture is suspended, masked
        self.suspended: SuspendedStreams | None = None
        #: the secrets of every test that ended (the snapshots' guard reads them)
        self.secrets: list[Secret] = []
        #: every secret of every test that ended and of the session (``masker``), made
        #: when the first one arrives
        self._masker: SessionMasker | None = None
        self._masker_lock = threading.Lock()
        self.session_secrets: list[Secret] = []
        self.running: dict[str, LeakCheck] = {}
        #: the last texts masked, with what was known then (see ``mask``)
        self._masked: dict[str, tuple[tuple[object, ...], str]] = {}
        self._masked_lock = threading.Lock()  # log handlers mask from the threads that log
        #: each test's record, unmasked while in this process: masked with every secret
        #: seen when it leaves it (the worker's output, the JSON report: sessionfinish)
        self.records: list[dict[str, Any]] = []
        #: the records the xdist workers sent (``snapshot_secrets``)
        self.worker_records: list[dict[str, Any]] = []
        #: pytest's debug trace is on and leakcheck cannot mask it (said in the header)
        self.trace_unmasked = False
        #: stops the masking of secrets made outside the fixture's checks (``watch_secrets``)
        self._unwatch: Callable[[], None] | None = None
        self._shortened: ShortenedMasking | None = None
        self.opt_outs: list[dict[str, str]] = []
        self.request_id_problems: list[dict[str, Any]] = []
        #: -v: say what is only noise in a quiet run (plugins whose library is missing,
        #: sinks whose library the app never set up)
        self.verbose = (config.getoption("verbose", 0) or 0) > 0
        #: the sinks this process saw active in a test (the app set their library up)
        self.set_up: set[str] = set()
        #: pytest's logging plugin is off (-p no:logging): it captures no log lines
        self.no_log_capture = not config.pluginmanager.has_plugin("logging")
        # (names on one line, spaced as ``A B C``, are names each: none holds a space, and
        # read as one they were one name not set, every variable unmasked)
        for line in config.getini("leakcheck_secret_env"):
            for name in line.split():
                self._add_env_secret(name)
        for secret in config.stash.get(EARLY_SESSION_SECRETS, []):
            self.add_session_secret(secret)

    def _add_env_secret(self, name: str) -> None:
        value = os.environ.get(name)
        if not value:
            self.missing_env.append(name)
            return
        try:
            secret = Secret.from_user(value, kind="secret", id=f"${name}")
        except ValueError as exc:
            raise pytest.UsageError(f"leakcheck_secret_env {plain(name)}: {exc}") from None
        self.add_session_secret(secret)

    def add_session_secret(self, secret: Secret) -> None:
        self.session_secrets.append(secret)
        self.masker.add([secret])

    def watch_secrets(self) -> None:
        """Mask from now on every secret made in this process outside the fixture's
        checks: a Hypothesis strategy's draw (``leakcheck.strategies``), a canary or a
        registered secret of a factory or a ``LeakCheck`` of the test's own. Such a
        secret is a test's argument or local, and pytest printed it in full in a failure
        (an assertion's operands, ``-l``, the failing test case). It is only masked: no
        test searches its sinks for it."""
        self.unwatch_secrets()
        self._unwatch = canaries.watch_secrets(self._announced)

    def unwatch_secrets(self) -> None:
        unwatch, self._unwatch = self._unwatch, None
        if unwatch is not None:
            unwatch()

    def _announced(self, secret: Secret) -> None:
        self.masker.add([secret])

    @property
    def masker(self) -> SessionMasker:
        """Every secret of every test that ended and of the session: everything pytest
        prints is masked with it and the running tests' own (under xdist, in the worker
        that knows the secrets, before a report travels to the controller). Made, and the
        masking and scanning modules imported, when first asked for: a session whose tests
        register no secret never needs them."""
        masker = self._masker
        if masker is None:
            with self._masker_lock:  # (log handlers ask from the threads that log)
                if self._masker is None:
                    from ..masking import SessionMasker

                    self._masker = SessionMasker()
                masker = self._masker
        return masker

    def mask(self, text: str) -> str:
        """``text`` with every form and piece of every secret seen so far masked: those of
        the tests still running (each with its own masker), then every other one."""
        running = list(self.running.values())
        if self._masker is None and not running:
            return text  # no secret has reached this process yet: none to mask
        if running and self._masker is not None:
            # a test whose secrets the session masker took over at its verdict masks
            # nothing that the session masker does not (same forms, same decoding): its
            # reports were masked twice, the teardown's again as new (issue 13)
            running = [check for check in running if not self._masker.holds(check.secrets)]
        # A test's captured sections come again in each of its later reports: masked once
        # while no secret arrives (any new one, the test's or the session's, changes the
        # key). A cached text is the one masked; the key holds it, never a secret.
        known = (len(self.masker), *((check.serial, check.secret_count) for check in running))
        cached = self._masked.get(text)
        if cached is not None and cached[0] == known:
            return cached[1]
        original = text
        for check in running:
            text = check.mask(text)
        masked = self.masker.mask(text)
        if _CACHED_FROM_CHARS <= len(original) <= _CACHED_UP_TO_CHARS:
            with self._masked_lock:
                if len(self._masked) >= _CACHED_TEXTS:
                    self._masked.pop(next(iter(self._masked)))
                self._masked[original] = (known, masked)
        return masked

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

    def mask_shortened(self) -> None:
        """Mask what pytest shortens before it cuts it (``shortened``): an assertion's
        operands, ``-l`` locals, a comparison's explanation."""
        from .shortened import ShortenedMasking

        self.unmask_shortened()
        self._shortened = ShortenedMasking(self.mask)
        self._shortened.install()

    def unmask_shortened(self) -> None:
        shortened, self._shortened = self._shortened, None
        if shortened is not None:
            shortened.restore()

    def mask_echo(self) -> None:
        """Where pytest lets a test's ``sys.stdout`` and ``sys.stderr`` reach the terminal
        (``-s``, ``--capture=tee-sys``), they reach it masked (``TerminalEcho``); the
        capture note says so, and under ``-s`` the stdout and stderr sinks are no longer
        inactive."""
        from .capture_fixtures import SuspendedStreams, TerminalEcho

        self.echo = TerminalEcho.install(self.config, self.capture, self.mask)
        if self.echo is not None:
            self.capture_note = self.echo.note
            self.uncaptured = ""
        self.suspended = SuspendedStreams.install(self.config, self.mask)

    def unmask_echo(self) -> None:
        if self.echo is not None:
            self.echo.restore()
        if self.suspended is not None:
            self.suspended.restore()

    def pytest_enter_pdb(self) -> None:
        """A debugger's session under ``-s`` (``breakpoint()``, ``--pdb``) is the
        developer's: shown masked, not judged as the test's output."""
        if self.echo is not None:
            self.echo.pause(True)

    def pytest_leave_pdb(self) -> None:
        if self.echo is not None:
            self.echo.pause(False)

    def mask_debug_trace(self) -> None:
        """``--debug`` writes every hook call's arguments and results to its file as they
        happen (an assertion's operands, a failing call's exception, the test items before
        their ids are masked): each message through the masker too, with what the process
        knows then."""
        root = getattr(self.config.trace, "root", None)
        if root is None or not hasattr(root, "_writer"):  # pluggy's TagTracer changed
            tracing = getattr(self.config.option, "debug", None) or os.environ.get("PYTEST_DEBUG")
            if tracing:  # never silently: the trace may hold secrets
                self.trace_unmasked = True
            return
        write = root._writer  # set by --debug and PYTEST_DEBUG, None otherwise
        if write is None:
            return
        tracing = threading.local()  # the messages traced while one is masked, by thread

        def masked_write(message: str) -> None:
            queue = getattr(tracing, "queue", None)
            if queue is not None:
                # traced while a message is masked (the assertion rewriter's import hook
                # says which module a masker imports): written after it, masked too
                queue.append(message)
                return
            tracing.queue = queue = [message]
            try:
                for _ in range(_TRACED_WHILE_MASKING):
                    if not queue:
                        break
                    write(self.mask(queue.pop(0)))
                else:
                    write(f"[leakcheck: {len(queue)} trace messages left out]\n")
            finally:
                tracing.queue = None

        root.setwriter(masked_write)

    def mask_metadata(self) -> None:
        """pytest-metadata's table (the CI's variables: Jenkins sets ``GIT_URL`` with the
        credential in it), masked in place before pytest-html writes it into its
        "Environment" table and the JUnit properties take it (found by a hunting helper:
        the header line was masked, the HTML report was not)."""
        module = sys.modules.get("pytest_metadata.plugin")
        key = getattr(module, "metadata_key", None)
        if key is None or self._masker is None or not len(self._masker):
            return
        table = self.config.stash.get(key, None)
        if isinstance(table, dict):
            reports.mask_dict_in_place(table, self.mask)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """pytest's live log (``log_cli``) and ``--log-file`` write each record as it is
        made, before any report exists: mask them at their handlers."""
        logging_plugin = self.config.pluginmanager.get_plugin("logging-plugin")
        if logging_plugin is None:  # -p no:logging: no live log, no log file, no ini keys
            return
        live = []
        if logging_plugin._log_cli_enabled():
            live.append("log_cli_handler")
        if self.config.getoption("log_file", None) or self.config.getini("log_file"):
            live.append("log_file_handler")  # otherwise it writes to os.devnull
        for name in live:
            handler = getattr(logging_plugin, name, None)
            if isinstance(handler, logging.Handler):
                masked = self._masked_format(handler.format)
                handler.format = masked  # type: ignore[method-assign]  # on this instance only
        # A log format that cuts the message (``--log-format='%(message).60s'``) cut a form
        # of a secret into a piece no masking needle matches, in the captured log section
        # and the live log: the message is masked before such a format cuts it.
        formatters = [logging_plugin.formatter]
        for name in ("log_cli_handler", "log_file_handler"):
            formatters.append(getattr(getattr(logging_plugin, name, None), "formatter", None))
        for formatter in {id(f): f for f in formatters if f is not None}.values():
            if isinstance(formatter, logging.Formatter) and cuts_message(formatter):
                formatter.format = self._message_masked_first(formatter.format)  # type: ignore[method-assign]  # on this instance only

    def quiet_inactive(self, sink: str, reason: str) -> bool:
        """Whether an inactive sink goes unsaid in a failure: its reason says the app never
        set its library up (sentry-sdk installed, no client during the test: nothing was
        missed), unless ``-v`` or the app set it up in another test of this process."""
        return not self.verbose and sink not in self.set_up and reason in not_set_up_reasons()

    def shown_inactive(self, inactive: dict[str, str]) -> dict[str, str]:
        """``inactive`` (``{sink: why}``) without the quiet ones."""
        return {s: why for s, why in inactive.items() if not self.quiet_inactive(s, why)}

    def _message_masked_first(self, fmt: Any) -> Any:
        def format(record: logging.LogRecord) -> str:
            try:
                message = record.getMessage()
            except Exception:  # noqa: BLE001 - the formatter says how it fails
                return str(fmt(record))
            masked = self.mask(message)
            if masked == message:
                return str(fmt(record))
            shown = copy.copy(record)
            shown.msg, shown.args = masked, None
            return str(fmt(shown))

        return format

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
        if self._masker is not None and len(self._masker):
            reports.mask_test_ids(items, self.mask)
        if hasattr(self.config, "workerinput"):
            return
        for item in items:
            if item.get_closest_marker(MARKER) is not None:  # nothing to check otherwise
                options_for(item, self.policy)

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(self, collector: pytest.Collector) -> Any:
        report = yield
        reports.mask_report(report, self.mask)
        reports.forget_masked(report)  # (no logreport comes for it)
        if self._masker is not None and len(self._masker):
            # its tests' ids, before ``pytest_collectreport`` hands them on (pytest-json-report
            # writes them as they are then, long before the collection ends)
            reports.mask_test_ids(
                [node for node in report.result or () if isinstance(node, pytest.Item)],
                self.mask,
            )
        return report

    @pytest.hookimpl(tryfirst=True)
    def pytest_internalerror(self, excrepr: Any) -> None:
        """An INTERNALERROR is printed by the terminal, and sent by an xdist worker to the
        controller as its text: masked here, in place, first."""
        reports.mask_fields(excrepr, self.mask)

    @pytest.hookimpl(tryfirst=True)
    def pytest_warning_recorded(self, warning_message: Any, when: str, nodeid: str) -> None:
        """A warning reaches the summary long after the test that raised it, and under xdist
        through the controller, which knows no secret: mask it here, first, in place (a
        ``__del__`` after the test, a thread dying late, a warning during collection)."""
        reports.mask_warning(warning_message, self.mask)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """``record_xml_attribute`` writes straight into the JUnit node, which junitxml
        freezes at the teardown report: mask its values just before. A subtest's report
        is handed over and masked (``_take_subtest``). What plugins added to a report
        after ``pytest_runtest_makereport`` masked it (pytest-html's ``extras``) is masked
        here, before pytest-html, the report log or xdist read it. So is what a hook
        wrapper outside ours added to its sections or its failure text (a conftest's
        section, a longrepr appended to, Hypothesis's verbose section): under xdist the
        controller printed it raw (found by a hunting helper); what was masked already
        comes from the masker's cache."""
        reports.mask_added_attributes(report, self.mask)
        if report.when == "call":
            described = _subtest_description(report)
            if described is not None:
                self._take_subtest(report, described)
        # (after a subtest's sections were handed over as written: masked first, they were
        # judged clean)
        if self._masker is not None or self.running:
            reports.mask_report_again(report, self.mask)
        else:  # (no secret has reached this process: nothing to mask with)
            reports.forget_masked(report)
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

    def _take_subtest(self, report: pytest.TestReport, described: str) -> None:
        """A subtest (pytest's ``subtests`` fixture) captures its own output: what it
        printed is in its report's sections, never in the test's, where the verdict reads
        them. Handed to the running test's sinks, and the report masked in
        place: its sections and its message and keyword arguments (``subtests.test(msg,
        **kwargs)``) were added after ``pytest_runtest_makereport``, and under xdist this
        report travels to the controller, which knows no secret."""
        check = self.running.get(report.nodeid)
        context = getattr(report, "context", None)
        if check is not None and self.enabled:
            described = self.mask(described)
            for title, content in report.sections:
                if title == "Captured stdout call":
                    check.stdout.add(f"subtest {described}", content)
                elif title == "Captured stderr call":
                    check.stderr.add(f"subtest {described}", content)
                # (its "Captured log call": the test's log capture and the log sink have
                # those records too)
        reports.mask_report(report, self.mask)
        if context is not None:
            reports.mask_subtest_context(context, self.mask)

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
            self.worker_records.extend(data["records"])
            self.opt_outs.extend(data["opt_outs"])

    def snapshot_secrets(self) -> list[Secret]:
        """What a snapshot or pending file is scanned for before it is written: the
        secrets of every test that ended in this process and the session's; on an xdist
        controller, which runs no test, also the canaries of every worker's tests, drawn
        again from the seed and their records (ids, never values): an entry a worker
        observed showed the tail of a canary of a test another worker ran, and the
        controller wrote it (found by a hunting helper). A secret a test registered
        itself is known to its worker alone (``SnapshotSession`` scans there too)."""
        known = [*self.secrets, *self.session_secrets]
        if not self.worker_records:
            return known
        from ..cli.canaries_from import canaries_from_report
        from ..cli.console import UsageError

        document = {
            "tool": "leakcheck",
            "seed": str(self.seed),
            "canary_generation": CANARY_GENERATION,
            "tests": self.worker_records,
        }
        try:
            rebuilt, _, _ = canaries_from_report(document, "the xdist workers' records")
        except UsageError:  # (past the scan's budget: the canary-shaped backstop alone)
            return known
        return [*known, *rebuilt]

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        from _pytest.junitxml import xml_key

        xml = self.config.stash.get(xml_key, None)
        if xml is not None:
            # before junitxml writes: every test case, with every secret known by now
            # (record_testsuite_property, and a test's output holding a later one's secret)
            reports.mask_junit(xml, self.mask)
        if hasattr(self.config, "workeroutput"):
            from .. import masking

            # masked again with every secret this worker saw (a later test may have
            # registered a value an earlier record shows): the controller knows none
            output = masking.mask_strings(
                {"records": self.records, "opt_outs": self.opt_outs},
                masking.masked_for_json(self.mask),
            )
            self.config.workeroutput["leakcheck"] = json.dumps(output)
            return
        self.request_id_problems = request_id_problems(self.records)
        if self.request_id_problems and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.report_path:
            document = {
                "tool": "leakcheck",
                "seed": self.seed,
                "canary_generation": CANARY_GENERATION,
                "enabled": self.enabled,
                "tests": self.records,
                "opt_outs": self.opt_outs,
            }
            if any("matrix" in r for r in self.records):
                document["request_ids"] = self.request_id_problems
            from .. import masking

            # Mask every string, then dump: masking the dumped text could swallow the
            # backslash of an escaped quote and leave invalid JSON.
            text = json.dumps(
                masking.mask_strings(document, masking.masked_for_json(self.mask)),
                indent=2,
                ensure_ascii=False,
            )
            try:  # (checked when pytest started; the file system may have changed since)
                path = Path(self.report_path)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text + "\n", encoding="utf-8")
            except OSError as exc:
                self.report_error = f"{type(exc).__name__}: {exc.strerror or exc}"
                session.exitstatus = pytest.ExitCode.USAGE_ERROR

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        state = "on" if self.enabled else "OFF (--no-leakcheck)"
        header = [f"leakcheck: {state}, canary seed {self.seed}"]
        if self.session_secrets:
            header.append(f"leakcheck: {len(self.session_secrets)} session secret(s) masked")
        header.append(f"leakcheck: {_MASKING_LIMIT}")
        return header + [f"leakcheck: {note}" for note in self.unseen_notes()]

    def unseen_notes(self) -> list[str]:
        """What the session does not see or mask: said in the header, and again in the
        summary when pytest printed no header (``-q``, ``--no-header``, the way CI runs)."""
        notes = [self.capture_note] if self.enabled and self.capture_note else []
        notes += [f"leakcheck_secret_env: ${plain(name)} is not set" for name in self.missing_env]
        if self.enabled and self.no_log_capture:
            notes.append(_NO_LOG_CAPTURE)
        if self.trace_unmasked:
            notes.append(_TRACE_UNMASKED)
        return notes

    @pytest.hookimpl(tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        leaky = [r for r in self.records if r["forbidden"]]
        # a plugin whose library imports and that still fails is said in every session;
        # one whose library is not installed only under -v (nothing is wrong with it)
        plugins = skipped_plugins() if self.verbose else broken_plugins()
        header_shown = terminalreporter.verbosity >= 0 and not terminalreporter.no_header
        unseen = [] if header_shown else self.unseen_notes()
        if not (self.records or self.opt_outs or plugins or unseen or self.report_error):
            return
        terminalreporter.section("leakcheck")
        terminalreporter.write_line(
            f"{len(self.records)} test(s) checked, {len(leaky)} with forbidden hits; "
            f"canary seed {self.seed}"
        )
        for note in unseen:
            terminalreporter.write_line(note)
        for opt in self.opt_outs:
            terminalreporter.write_line(
                f"opted out: {opt['test']}: sink {_sink_shown(opt['sink'])} ({opt['reason']})"
            )
        python = f"{sys.version_info[0]}.{sys.version_info[1]}"
        for flag, said in (
            (
                "nothing_exposed",
                "nothing caller-visible judged in {count} test(s): each made secrets, exposed "
                "nothing and no exception reached it, so what the gateway returned was never "
                "searched (leakcheck.expose(result))",
            ),
            (
                "catches_unjudged",
                "exceptions a test catches itself (try/except) not judged in {count} test(s): "
                f"Python {python} cannot watch them (3.12 and later can: sys.monitoring); "
                "catch with pytest.raises, or run on 3.12+",
            ),
        ):
            flagged = [r["test"] for r in self.records if r.get(flag)]
            if flagged:
                shown = flagged if self.verbose else flagged[:_UNEXPOSED_SHOWN]
                more = len(flagged) - len(shown)
                terminalreporter.write_line(
                    said.format(count=len(flagged))
                    + ": "
                    + ", ".join(shown)
                    + (f" and {more} more (-v lists them)" if more else "")
                )
        latent = [
            record["test"]
            for record in self.records
            if record.get("outcome") == "passed"
            and any(
                isinstance(f, dict) and f.get("sink_class") == "latent"
                for f in record.get("findings", ())
            )
        ]
        if latent:  # (a passing test's latent findings were shown nowhere but the JSON report)
            shown = latent if self.verbose else latent[:_UNEXPOSED_SHOWN]
            more = len(latent) - len(shown)
            terminalreporter.write_line(
                f"latent findings (a secret on an object, or below a declared level: never "
                f"emitted) in {len(latent)} passing test(s): "
                + ", ".join(shown)
                + (f" and {more} more (-v lists them)" if more else "")
                + "; the JSON report (--leakcheck-report) says where; strict_latent fails them"
            )
        for what, tests in sorted(self._summary_inactive().items()):
            terminalreporter.write_line(f"sink inactive in {len(tests)} test(s): {what}")
        uninspected = [
            (record["test"], part)
            for record in self.records
            for part in record.get("not_inspected", [])
        ]
        if uninspected:
            from ..verdict import sink_label  # (the verdict: only where a test had one)

            for test, part in uninspected:
                terminalreporter.write_line(
                    f"could not inspect in {test}: "
                    f"{sink_label(part['sink'], part['path'])}  {part['what']}"
                )
        matrix = [r for r in self.records if "matrix" in r]
        if matrix:
            from ..matrix import format_grid

            for line in format_grid(matrix).splitlines():
                terminalreporter.write_line(line)
            problems = getattr(self, "request_id_problems", [])
            returned = sum(1 for r in matrix if (r.get("matrix") or {}).get("request_id"))
            # none returned (or one: nothing to compare it with) is nothing checked: never "ok"
            verdict = "FAILED" if problems else "ok"
            if not problems and returned < 2:
                verdict = "no ids returned" if not returned else "1 id returned, too few to check"
            terminalreporter.write_line(f"request ids across {len(matrix)} case(s): {verdict}")
            for problem in problems:
                terminalreporter.write_line(f"  - {problem['rule']}: {problem['message']}")
        for name, why in sorted(plugins.items()):
            terminalreporter.write_line(f"plugin not loaded: {name} ({why})")
        if self.report_error:
            terminalreporter.write_line(
                f"JSON report NOT written to {self.report_path}: {self.report_error}", red=True
            )
        elif self.report_path:
            terminalreporter.write_line(f"JSON report: {self.report_path}")

    def _summary_inactive(self) -> dict[str, set[str]]:
        """``{"sink (why)": tests}`` of the sinks inactive in some test, the quiet ones left
        out (their library set up in no test of the session, no ``-v``): from the records,
        so that under xdist the controller sees every worker's tests."""
        quiet = set() if self.verbose else not_set_up_reasons()
        opted = {(opt["test"], opt["sink"]) for opt in self.opt_outs}
        names = {sink for record in self.records for sink in record.get("inactive_sinks", {})}
        set_up = {
            sink
            for sink in names
            if any(
                sink not in record.get("inactive_sinks", {}) and (record["test"], sink) not in opted
                for record in self.records
            )
        }
        inactive: dict[str, set[str]] = {}
        for record in self.records:
            for sink, reason in record.get("inactive_sinks", {}).items():
                if reason in quiet and sink not in set_up:
                    continue  # set up in no test: sentry-sdk is installed, not used
                inactive.setdefault(f"{sink} ({reason})", set()).add(record["test"])
        return inactive


#: What masking cannot reach, said in every session header.
_MASKING_LIMIT = (
    "output is masked with each secret from the moment it is registered; what was printed "
    "before (a value logged or a parametrize id shown by -v before the test registered it) "
    "cannot be: register such values for the session (leakcheck_secret_env)"
)
#: Said once, in the header, under ``-p no:logging``.
_NO_LOG_CAPTURE = (
    "-p no:logging: pytest captures no log lines (nothing of them to scan, no live log or "
    "log file to mask); the log record sink still reads every record itself"
)
#: What junitxml writes on a test case itself (from the node id); anything else came from
#: ``record_xml_attribute``.
_JUNIT_OWN_ATTRIBUTES = frozenset({"classname", "name", "file", "line", "url"})
_UNCAPTURED = {
    "no": "pytest -s/--capture=no (or -p no:capture): output goes straight to the terminal, "
    "neither scanned nor masked",
}


_CAPTURE_NOTES = {
    "no": "-s/--capture=no (or -p no:capture): stdout and stderr are neither scanned nor "
    "masked, and a test's output reaches the terminal as it is",
    "sys": "--capture=sys: writes to file descriptors 1 and 2 (subprocesses, C code, "
    "os.write) are neither scanned nor masked, and reach the terminal as they are",
    "tee-sys": "--capture=tee-sys: stdout and stderr are scanned, but also echoed to the "
    "terminal unmasked",
}


#: Tests named in the summary line for those that judged nothing caller-visible (-v: all).
_UNEXPOSED_SHOWN = 3


def register_session_secret(
    config: pytest.Config, value: str, kind: str = "secret", *, id: str | None = None
) -> Secret:
    """Register a secret for the whole session (from a conftest's ``pytest_configure``):
    masked in everything pytest prints from then on, test ids included, and searched in
    every test that uses the ``leakcheck`` fixture. A value a test registers itself is
    masked only from the moment it registers it; one that shows in a test id (a
    parametrize value) is printed by ``-v`` before that, so it must be registered here."""
    # a conftest's pytest_configure may run before the plugin's: those wait for it
    waiting = config.stash.setdefault(EARLY_SESSION_SECRETS, [])
    state = config.stash.get(SESSION, None)
    known = len(state.session_secrets) if state is not None else len(waiting)
    try:
        check_kind_name(kind, "register_session_secret(config, value, kind=...)")
        secret_id = id or f"{kind}#session{known + 1}"
        secret = Secret.from_user(value, kind=kind, id=secret_id)
    except ValueError as exc:
        raise pytest.UsageError(f"leakcheck session secret: {exc}") from None
    if state is None:
        waiting.append(secret)
    else:
        state.add_session_secret(secret)
    return secret


def request_id_problems(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The across-matrix request-id rules (unique, not sequential, random enough), over the
    ids every matrix case returned, in collection order (xdist workers merged)."""
    ids = [r["matrix"]["request_id"] for r in records if (r.get("matrix") or {}).get("request_id")]
    if len(ids) < 2:
        return []
    from ..contract import check_request_ids  # jsonschema: only when a matrix ran

    return [v.to_dict() for v in check_request_ids(ids)]


def _sink_shown(sink: str) -> str:
    """An opted-out sink's name as the summary quotes it (one that looked like a key was
    recorded described: not quoted again)."""
    from ..findings import OPAQUE_LABEL

    return sink if sink.startswith(OPAQUE_LABEL) else quoted(sink)


def _subtest_description(report: pytest.TestReport) -> str | None:
    """How a subtest's report names it (``[msg] (key=value)``), None for a test's own
    report: pytest 9's ``SubtestReport`` and the ``pytest-subtests`` plugin's
    ``SubTestReport`` (pytest 8) spell the method each their own way."""
    for name in ("_sub_test_description", "sub_test_description"):
        describe = getattr(report, name, None)
        if callable(describe) and hasattr(report, "context"):
            return str(describe())
    return None


def _writable_report_path(path: str) -> str:
    """``path`` (``--leakcheck-report``, ``leakcheck_report``), or a usage error before any
    test runs when the report could not be written there: a directory, a parent that
    cannot be made or written to (found at the session's end, it was a traceback after
    the whole run). "" for none."""
    if not path:
        return ""
    where = Path(path)
    if where.is_dir():
        raise pytest.UsageError(f"--leakcheck-report {path}: a directory; give a file's path")
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise pytest.UsageError(
            f"--leakcheck-report {path}: cannot make its directory ({exc.strerror or exc})"
        ) from None
    if not os.access(where.parent, os.W_OK) or (where.exists() and not os.access(where, os.W_OK)):
        raise pytest.UsageError(f"--leakcheck-report {path}: not writable")
    return path
