"""The pytest plugin: a ``leakcheck`` fixture, strict by default, nothing to remember to call.

At the end of the call phase every registered secret is searched, in every form, in every
sink of the test; a forbidden hit turns the test into a failure whose message carries
masked evidence only. Every report of the session is masked with every secret it has seen.

The hooks here are thin: options (``options``), the session (``session``), a test's verdict
(``judge``), what is done to pytest's reports (``reports``), error-text snapshots
(``snapshots``). Below them the core knows nothing of pytest.

pytest loads the plugin in every run of every suite of a virtualenv that has it installed:
the harness (its sinks, faults and transports) and the verdict are imported when a test
first asks for the fixture, the session masker when the first secret arrives.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import plain
from . import capture_fixtures, options, reports, snapshots
from .capture_fixtures import CAPTURE_FIXTURES
from .caught import caught_by_test
from .caught_try import caught_by_try, to_watch
from .options import LeakcheckOptions, options_for
from .pytest_cache import take_pending, watch_cache
from .session import (
    CATCHES_UNJUDGED,
    CHECK,
    EARLIER_BATCHES,
    IN_CALL,
    SESSION,
    PluginSession,
    register_session_secret,
)

if TYPE_CHECKING:  # pragma: no cover
    import pluggy  # what a hookwrapper's yield returns

    from ..harness import LeakCheck

__all__ = ["CHECK", "LeakcheckOptions", "leakcheck", "register_session_secret"]


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
        help="environment variables whose values are secrets for the whole session (one or "
        "more names a line): masked "
        "in everything pytest prints from the first line, searched in every test",
    )
    snapshots.addoption(parser)
    options.addoption(parser)  # the latent options: strict switch, production log levels


@pytest.hookimpl(trylast=True)  # after the terminal reporter exists: its writer is masked
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", options.MARKER_HELP)
    state = PluginSession(config)
    options.configure(config)  # an ini value written wrong stops the session here
    config.stash[SESSION] = state
    config.pluginmanager.register(state, "leakcheck-state")
    state.mask_terminal()
    state.mask_shortened()
    state.mask_echo()
    state.mask_debug_trace()
    state.watch_secrets()
    snapshots.install(config, state.snapshot_secrets)
    # (a set from a thread of the test's: a gateway persisting its login from its client's
    # executor wrote the token and passed, found by a hunting helper)
    config.add_cleanup(watch_cache(config, _running_in_the_process, state.mask))
    if "allure_commons" in sys.modules:  # (allure-pytest registered its writer just before)
        from .allure_results import mask_allure_results

        mask_allure_results(state.mask)


@pytest.hookimpl(tryfirst=True)  # before pytest-html's (trylast) reads the metadata
def pytest_sessionstart(session: pytest.Session) -> None:
    state = session.config.stash.get(SESSION, None)
    if state is not None:
        state.mask_metadata()


@pytest.hookimpl(wrapper=True)
def pytest_cmdline_main(config: pytest.Config) -> Generator[None, object, object]:
    """A usage error raised once the session runs (a conftest's ``pytest_sessionstart``
    that checks a token and quotes it) masked with every secret the session saw: pytest
    prints it after leakcheck's streams are given back, and it went out raw."""
    try:
        return (yield)
    except pytest.UsageError as error:
        state = config.stash.get(SESSION, None)
        if state is None:
            raise
        shown = [str(arg) for arg in error.args]  # (pytest prints each on its own line)
        masked = [state.mask(text) for text in shown]
        if masked == shown:
            raise
        raise pytest.UsageError(*masked) from None


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(SESSION, None)
    if state is not None:
        state.unwatch_secrets()
        state.unmask_shortened()
        state.unmask_echo()


class _Running(threading.local):
    """The tests whose run protocol is under way in this thread, the innermost last (a
    session that pytester runs in process nests its own). The fixture takes its test from
    here: asking for ``request`` makes pytest 9 build a fixture definition of it at every
    request, its function's signature read with ``inspect`` (0.15 to 0.28 ms a test, up to
    a tenth of what the plugin cost a test with three canaries: issue 13). By thread: a
    runner that runs tests in threads of one process runs each protocol in its own, and
    one test must never be handed another's check."""

    def __init__(self) -> None:
        self.items: list[pytest.Item] = []


_RUNNING = _Running()


#: the tests running in any thread of the process, each with the thread that runs it (one,
#: or an outer test and the inner session's under pytester; several threads only under a
#: plugin that runs tests in threads)
_RUNNING_ANYWHERE: list[tuple[int, pytest.Item]] = []


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    running = _RUNNING.items
    running.append(item)
    entry = (threading.get_ident(), item)
    _RUNNING_ANYWHERE.append(entry)
    try:
        return (yield)
    finally:
        running.pop()
        _RUNNING_ANYWHERE.remove(entry)


def _running_item() -> pytest.Item | None:
    """The test running in this thread, if any."""
    running = _RUNNING.items
    return running[-1] if running else None


def _running_in_the_process() -> pytest.Item | None:
    """The test running in this thread; else, from a thread of the test's own (a client's
    worker, an executor), the innermost test running in the process, when one thread runs
    them all."""
    item = _running_item()
    anywhere = list(_RUNNING_ANYWHERE)
    if item is None and anywhere and len({thread for thread, _ in anywhere}) == 1:
        item = anywhere[-1][1]
    return item


def _running_test() -> pytest.Item:
    running = _RUNNING.items
    if not running:
        pytest.fail(
            "leakcheck: the fixture was asked for outside a test's run (no "
            "pytest_runtest_protocol under way in this thread): request it from a test or "
            "a function-scoped fixture",
            pytrace=False,
        )
    return running[-1]


@pytest.fixture
def leakcheck() -> Iterator[LeakCheck]:
    """Plant canaries (``leakcheck.secret(kind)``), mark caller-visible objects
    (``leakcheck.expose(obj)``); every sink of the test is searched at the end."""
    node = _running_test()
    state = node.config.stash[SESSION]
    try:
        options, policy = options_for(node, state.policy)
    except pytest.UsageError as exc:
        usage = f"usage error: {exc}"
    else:
        usage = ""
    if usage:
        pytest.fail(usage, pytrace=False)
    from ..capture import WarningsSink
    from ..harness import LeakCheck

    check = LeakCheck(
        seed=state.seed,
        namespace=node.nodeid,
        policy=policy,
        decode=options.decode,
        skip_sinks=options.skip_sinks,
        sinks=None if state.enabled else [],
        announce=False,  # (the session masker takes its secrets at its verdict, by class)
    )
    for secret in state.session_secrets:
        check.register_secret(secret)
    for sink, reason in options.skip_sinks.items():
        state.opt_outs.append(
            {"test": state.mask(node.nodeid), "sink": plain(sink), "reason": state.mask(reason)}
        )
    if state.uncaptured:
        # never silently clean: what pytest does not capture, no sink sees
        check.stdout.inactive_reason = check.stderr.inactive_reason = state.uncaptured
    node.stash[CHECK] = check
    take_pending(node, check)  # (what it set in pytest's cache before asking for the check)
    node.stash[EARLIER_BATCHES] = state.masker.batch_count()
    state.running[node.nodeid] = check
    try:
        if state.enabled:
            for started in check.sinks:
                if isinstance(started, WarningsSink):
                    started.judge_earlier()  # (a fixture set up before the check warned)
            check.start()
            if state.echo is not None:  # (-s: what the test prints, for its sinks)
                state.echo.start_recording()
        code, unwatched = to_watch(node) if state.enabled else (None, False)
        with caught_by_test(check) if state.enabled else contextlib.nullcontext():
            if code is None:
                if unwatched:
                    node.stash[CATCHES_UNJUDGED] = True  # (said in the summary)
                yield check
            else:
                with caught_by_try(check, code) as watched:
                    if not watched:  # (no free tool id)
                        node.stash[CATCHES_UNJUDGED] = True
                    yield check
    finally:
        if state.echo is not None:  # (-s: recording no longer; handed over after the call)
            state.echo.hand_over(None)
        # the session masker takes the secrets over before the check stops being asked
        state.masker.add(check.secrets, check.built_masker(), by=node.nodeid)
        state.running.pop(node.nodeid, None)
        check.stop()
        state.secrets.extend(check.secrets)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """What the test reads with ``capsys``/``capfd.readouterr()`` never reaches pytest's
    report sections, and what it prints under their ``disabled()`` goes to the terminal:
    both tapped (``capture_fixtures``)."""
    check = item.stash.get(CHECK, None)
    funcargs = getattr(item, "funcargs", {})
    tapped: list[Any] = []
    if check:
        mask = item.config.stash[SESSION].mask
        for name in CAPTURE_FIXTURES:
            if name in funcargs:
                tapped.append(funcargs[name])
                capture_fixtures.tap(funcargs[name], name, check, mask)
    item.stash[IN_CALL] = True
    try:
        yield
    finally:
        del item.stash[IN_CALL]
        echo = item.config.stash[SESSION].echo
        if check and echo is not None:
            echo.hand_over(check)  # (-s: before the verdict)
        for fixture in tapped:
            capture_fixtures.untap(fixture)  # the class's own methods again


def _message_only(excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
    return str(excinfo.value)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pluggy.Result[pytest.TestReport], None]:
    state = item.config.stash[SESSION]
    if call.excinfo is not None:
        reports.shown_at_the_caller(item.config, call)
    if CHECK not in item.stash:  # (the fixture was not asked for: no verdict to give)
        outcome = yield
        reports.mask_report(outcome.get_result(), state.mask)
        return
    if call.when == "call" and item.stash.get(IN_CALL, False):
        # a subtest's report, made while the test still runs: the test's verdict, at its
        # end, judges what the subtest raised (its context manager swallowed it) and
        # printed (``PluginSession._take_subtest``); a verdict here judged half a test,
        # and its findings came twice, in the subtest's failure and the test's
        outcome = yield
        raised = call.excinfo.value if call.excinfo is not None else None
        if raised is not None and state.enabled:
            from ..faults import HarnessError

            if not isinstance(raised, (pytest.skip.Exception, HarnessError)):
                item.stash[CHECK].exception_reached_caller(raised)
        reports.mask_report(outcome.get_result(), state.mask)
        return
    from .judge import judge_report, own_verdict

    # our own verdict's text replaces the failure (judge_report): pytest's traceback of
    # it, parsed from the source of every frame (34 ms a failure in a matrix), is not made
    verdict = own_verdict(item, call, state)
    if verdict is not None:
        item.repr_failure = _message_only  # type: ignore[method-assign]
    try:
        outcome = yield
    finally:
        if verdict is not None:
            del item.repr_failure
    report: pytest.TestReport = outcome.get_result()
    try:
        judge_report(item, call, report, state)
    finally:
        # every report, of any test: a secret the session knows may show in a test that
        # never asked for the fixture (a module fixture's teardown, a later test's output)
        reports.mask_report(report, state.mask)
