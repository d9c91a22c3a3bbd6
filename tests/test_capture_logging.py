"""The logging sink honours a logger's own filters (an app that drops or redacts a
library's records there leaks nothing), runs each filter once, and still hands the app's
handlers exactly the records production would emit."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from leakcheck.capture import LoggingSink
from leakcheck.harness import LeakCheck


@pytest.fixture
def logger() -> Iterator[logging.Logger]:
    log = logging.getLogger("leakcheck.tests.filtered")
    log.setLevel(logging.WARNING)
    log.propagate = False
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    handler = Keep()
    log.addHandler(handler)
    log.seen = seen  # type: ignore[attr-defined]
    try:
        yield log
    finally:
        log.removeHandler(handler)
        log.filters.clear()
        log.setLevel(logging.NOTSET)
        log.propagate = True


def _check() -> LeakCheck:
    return LeakCheck(seed="capture-logging", sinks=[LoggingSink()])


def test_a_record_the_logger_drops_is_not_a_leak(logger: logging.Logger) -> None:
    logger.addFilter(lambda record: "Authorization" not in record.getMessage())
    with _check() as check:
        token = check.secret("bearer")
        logger.debug("headers {'Authorization': 'Bearer %s'}", token)
        logger.warning("upstream answered 401")
    assert check.violations() == []
    assert [r.getMessage() for r in logger.seen] == ["upstream answered 401"]  # type: ignore[attr-defined]


def test_a_record_the_logger_redacts_is_seen_redacted(logger: logging.Logger) -> None:
    class Redact(logging.Filter):
        calls = 0

        def filter(self, record: logging.LogRecord) -> bool:
            Redact.calls += 1
            record.msg, record.args = "request failed (headers redacted)", ()
            return True

    logger.addFilter(Redact())
    with _check() as check:
        token = check.secret("bearer")
        logger.warning("request failed: Bearer %s", token)
    assert check.violations() == []
    assert Redact.calls == 1  # once, not once for us and once for the app
    assert len(logger.seen) == 1  # type: ignore[attr-defined]


def test_without_a_filter_every_level_is_still_caught(logger: logging.Logger) -> None:
    with _check() as check:
        token = check.secret("bearer")
        logger.debug("Bearer %s", token)
    leaks = check.violations()
    # the message; the args' repr shows the same secret in the same record: not again
    assert [(leak.sink, leak.path) for leak in leaks] == [
        ("log record", "leakcheck.tests.filtered DEBUG message")
    ]
    assert "not emitted in production" in leaks[0].note
    assert logger.seen == []  # type: ignore[attr-defined]  # below level: the app saw nothing
    strict = LeakCheck(seed="capture-logging", sinks=[LoggingSink()],
                       policy=check.policy.with_latent(strict=True))  # fmt: skip
    with strict:
        logger.debug("Bearer %s", strict.secret("bearer"))
    paths = [leak.path.rpartition(" ")[2] for leak in strict.violations()]
    assert paths == ["message", "args"]  # as before latent was told apart


def test_a_handler_filter_is_not_a_redaction(logger: logging.Logger) -> None:
    # a handler's filter protects that handler only; another handler (or a level change)
    # would still emit the record, so the record counts
    handler = logger.handlers[0]
    handler.addFilter(lambda record: False)
    try:
        with _check() as check:
            logger.warning("Bearer %s", check.secret("bearer"))
        assert check.violations()
    finally:
        handler.filters.clear()


def test_an_extra_field_named_after_the_token_is_a_leak(logger: logging.Logger) -> None:
    """A JSON formatter and sentry's logging integration write an ``extra`` field's name
    as well as its value: a record whose extra was keyed by the token passed."""
    with _check() as check:
        token = check.secret("bearer")
        logger.warning("cached", extra={token: "session"})
    paths = [leak.path for leak in check.violations()]
    assert paths and all(path.endswith("<key>") for path in paths), paths
    with _check() as check:
        check.secret("bearer")
        logger.warning("cached", extra={"session_key": "session"})
    assert check.violations() == []


@pytest.mark.parametrize(
    "fmt, judged",
    [
        ("%(levelname)s:%(name)s:%(message)s", {"name"}),
        ("{threadName} {levelname} {message}", {"threadName"}),
        ("$processName $message", set()),  # (a thread's name, not the process's)
        ("%(levelname)s %(message)s", set()),
    ],
)
def test_a_name_a_plain_formatter_shows_is_judged(fmt: str, judged: set[str]) -> None:
    """An app names a logger or a thread after a session (``gw.session.<token>``,
    ``refresh-<token>``), and a plain formatter's ``%(name)s`` or ``{threadName}`` writes
    it. Only the message, args, extra, traceback and stack were judged: the file held the
    token and the test passed (found by a hunting helper). A format that does not show
    the name leaves it unwritten, and unjudged."""
    import io
    import threading

    style = "{" if fmt.startswith("{") else "$" if fmt.startswith("$") else "%"
    handler = logging.StreamHandler(io.StringIO())
    handler.setFormatter(logging.Formatter(fmt, style=style))  # type: ignore[arg-type]
    with _check() as check:
        token = check.secret("bearer")
        session = logging.getLogger(f"leakcheck.tests.session.{token}")
        session.propagate = False
        session.addHandler(handler)
        worker = threading.Thread(
            target=session.warning, args=("session expired",), name=f"refresh-{token}"
        )
        worker.start()
        worker.join()
    session.removeHandler(handler)
    written = token in handler.stream.getvalue()  # (a boolean, no operand)
    assert written is bool(judged)
    fields = {leak.path.split(" ")[-1] for leak in check.violations()}
    assert fields == judged, fields
    del logging.Logger.manager.loggerDict[session.name]  # (a logger made for one test)


def test_a_check_inside_a_check_leaves_the_outer_one_every_record(logger: logging.Logger) -> None:
    """A check of the test's own inside the fixture's (an MCP audit): the inner sink took
    the outer's patched methods for the originals and handled records itself, so the outer
    sink missed every record made while the inner one ran."""
    with _check() as outer:
        token = outer.secret("bearer")
        with _check():
            logger.debug("Bearer %s", token)
    outer_saw_it = [leak.path for leak in outer.violations()] == [
        "leakcheck.tests.filtered DEBUG message"
    ]
    assert outer_saw_it


def test_nested_checks_hand_the_app_only_what_its_levels_emit(logger: logging.Logger) -> None:
    """The inner sink judged "would emit" with the outer sink's ``isEnabledFor`` (yes to
    every level): the app's WARNING logger's handler got DEBUG records."""
    with _check(), _check():
        logger.debug("below the logger's level")
        logger.warning("at the logger's level")
    assert [r.levelname for r in logger.seen] == ["WARNING"]  # type: ignore[attr-defined]


def test_sinks_stopped_out_of_order_capture_until_their_own_stop(logger: logging.Logger) -> None:
    """The first sink's stop put back the methods it found, so the second, still running,
    captured nothing more."""
    first, second = LoggingSink(), LoggingSink()
    first.start()
    second.start()
    first.stop()
    logger.debug("after the first sink stopped")
    second.stop()
    assert [text for _, _, text in _texts(second)] == ["after the first sink stopped"]
    assert logging.Logger.handle.__module__ == "logging"  # put back by the last stop
    assert not logger.isEnabledFor(logging.DEBUG)


def _texts(sink: LoggingSink) -> list[tuple[str, str, str | bytes]]:
    return [(c.sink, c.path, c.text) for c in sink.collect() if c.path.endswith(" message")]


def test_a_handle_the_app_put_over_the_sinks_stays(logger: logging.Logger) -> None:
    """The app replaced ``Logger.handle`` during the check: the last stop leaves the app's
    in place, and the sink's, under it, passes records on as the original does."""
    original = logging.Logger.handle
    with _check():
        under = logging.Logger.handle

        def apps_handle(self: logging.Logger, record: logging.LogRecord) -> None:
            under(self, record)

        logging.Logger.handle = apps_handle  # type: ignore[method-assign]
    try:
        assert logging.Logger.handle is apps_handle
        logger.debug("below the logger's level")
        logger.warning("at the logger's level")
        assert [r.levelname for r in logger.seen] == ["WARNING"]  # type: ignore[attr-defined]
    finally:
        logging.Logger.handle = original  # type: ignore[method-assign]
