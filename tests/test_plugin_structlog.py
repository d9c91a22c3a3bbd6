"""The structlog sink, end to end through an inner pytest run.

A tiny gateway logs its upstream failures with structlog. Logged with the Authorization
header, the inner test fails naming ``structlog event ... warning``; when the app's own
processor redacts that key before rendering, it passes: the sink reads the final rendered
output and so honours the app's processors (``structlog.testing.capture_logs`` would not).
The app's structlog configuration is never touched, loggers cached before the test are
seen, and every inner run's output is scanned for every form of every secret.
"""

from __future__ import annotations

import io
import logging
import textwrap

import pytest
import structlog
import structlog.stdlib
from conftest import QUIET_INNER_ARGS, assert_inner_run_safe
from leakcheck.plugins import structlog_sink
from leakcheck.plugins.structlog_sink import StructlogSink
from structlog._base import BoundLoggerBase

from leakcheck import CanaryFactory, Secret
from leakcheck.harness import LeakCheck

pytest_plugins = ["pytester"]

SEED = "leakcheck-plugin-structlog"
INNER_ARGS = (
    *QUIET_INNER_ARGS,
    "--assert=plain",
    f"--leakcheck-seed={SEED}",
)
ORIGINAL_PROCESS_EVENT = BoundLoggerBase._process_event
ORIGINAL_FORMAT = structlog.stdlib.ProcessorFormatter.format

APP = '''
import hashlib
import io
import logging
from pathlib import Path

import pytest
import structlog
import structlog.stdlib
from structlog._base import BoundLoggerBase

ORIGINAL_PROCESS_EVENT = BoundLoggerBase._process_event


def proof(request, secret):
    Path(f"proof-{request.node.name}.txt").write_text(hashlib.sha256(secret.encode()).hexdigest())


def redact(logger, method_name, event_dict):
    """The app's own redactor: a secret-bearing key never reaches the renderer."""
    for key in ("authorization", "token"):
        if key in event_dict:
            event_dict[key] = "[redacted]"
    return event_dict


class Gateway:
    def __init__(self, token, log):
        self._token = token
        self._log = log

    def __repr__(self):
        return "Gateway(token=<hidden>)"

    def call(self):
        self._log.info("calling upstream", operation="create_deployment")
        self._log.warning("upstream rejected", status=401,
                          authorization=f"Bearer {self._token}")
        return {"ok": False, "code": "AUTH_FAILED", "action": "stop_and_report"}


def configure(redacting, *, stdlib=False):
    """What the app does at start-up; returns a logger, used once so it is cached."""
    out = io.StringIO()
    processors = [structlog.processors.add_log_level]
    if redacting:
        processors.append(redact)
    if stdlib:
        std = logging.getLogger("gateway.http")
        std.handlers[:] = [logging.StreamHandler(out)]
        std.propagate = False
        std.setLevel(logging.INFO)
        structlog.configure(
            processors=[*processors, structlog.processors.JSONRenderer()],
            logger_factory=structlog.stdlib.LoggerFactory(),
            wrapper_class=structlog.stdlib.BoundLogger,
            cache_logger_on_first_use=True,
        )
    else:
        structlog.configure(
            processors=[*processors, structlog.processors.JSONRenderer()],
            logger_factory=structlog.WriteLoggerFactory(out),
            wrapper_class=structlog.make_filtering_bound_logger(logging.INFO),
            cache_logger_on_first_use=True,
        )
    log = structlog.get_logger("gateway.http")
    log.info("gateway started")  # assembled and cached before the test begins
    return log


@pytest.fixture
def app(request):
    """The app's logging, configured before leakcheck starts; after leakcheck stopped,
    the configuration must be exactly what the app set."""
    redacting, stdlib = request.param
    saved, was_configured = structlog.get_config(), structlog.is_configured()
    log = configure(redacting, stdlib=stdlib)
    configured = structlog.get_config()
    yield log
    assert structlog.get_config() == configured, "structlog configuration changed"
    assert all(a is b for a, b in zip(structlog.get_config()["processors"],
                                      configured["processors"]))
    assert BoundLoggerBase._process_event is ORIGINAL_PROCESS_EVENT, "patch left behind"
    structlog.reset_defaults()
    if was_configured:
        structlog.configure(**saved)
    logging.getLogger("gateway.http").handlers[:] = []
'''

TESTS = """
@pytest.mark.parametrize("app", [(REDACTING, False)], indirect=True, ids=["write"])
def test_write_logger(request, app, leakcheck):
    token = leakcheck.secret("bearer")
    proof(request, token)
    leakcheck.expose(Gateway(token, app).call())


@pytest.mark.parametrize("app", [(REDACTING, True)], indirect=True, ids=["stdlib"])
def test_stdlib_logger(request, app, leakcheck):
    token = leakcheck.secret("bearer")
    proof(request, token)
    leakcheck.expose(Gateway(token, app).call())
"""

IDS = ("test_write_logger[write]", "test_stdlib_logger[stdlib]")


def _secrets(nodeid: str, *kinds: str) -> list[Secret]:
    factory = CanaryFactory(SEED, namespace=nodeid)
    return [factory.secret(kind) for kind in kinds]


def _run(pytester: pytest.Pytester, name: str, redacting: bool):
    source = textwrap.dedent(APP) + textwrap.dedent(TESTS).replace("REDACTING", str(redacting))
    pytester.makepyfile(**{name: source})
    secrets = [s for test in IDS for s in _secrets(f"{name}.py::{test}", "bearer")]
    result = pytester.runpytest(*INNER_ARGS, "-rA")
    assert len(secrets) == len(IDS)
    assert_inner_run_safe(pytester, result, secrets, IDS)
    return result


@pytest.fixture
def untouched():
    """structlog's configuration and classes exactly as they were, after the inner run."""
    before = structlog.get_config()
    configured = structlog.is_configured()
    yield
    assert structlog.get_config() == before
    assert structlog.is_configured() == configured
    assert BoundLoggerBase._process_event is ORIGINAL_PROCESS_EVENT
    assert structlog.stdlib.ProcessorFormatter.format is ORIGINAL_FORMAT
    assert not structlog_sink._ACTIVE


def test_leaky_event_fails_with_sink_path_and_form(pytester: pytest.Pytester, untouched) -> None:
    result = _run(pytester, "test_slog_leaky", redacting=False)
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    # the write logger has no name: the method names the event
    assert "[LEAK] operator: structlog event warning  form raw" in out
    # a stdlib logger's name is in the path; the log record sink sees the same string: one
    # root cause, shown once, the structlog event on its "also in" line
    assert "also in: structlog event gateway.http warning" in out
    # counted in the failure sections only: with CI set, pytest's short summary repeats the
    # whole message
    failures = out.split("short test summary info")[0]
    assert failures.count("[LEAK] operator: structlog ") == 1


def test_app_redaction_is_honoured(pytester: pytest.Pytester, untouched) -> None:
    # structlog.testing.capture_logs would see the event dict before the app's redactor
    result = _run(pytester, "test_slog_redacting", redacting=True)
    result.assert_outcomes(passed=2)


def test_processor_formatter_output_is_captured_not_the_wrapped_dict() -> None:
    """With the stdlib integration the final rendering happens in a handler's
    ``ProcessorFormatter``: its output is what is recorded, including foreign records."""
    saved = _config()
    std = logging.getLogger("lc.structlog.formatter")
    handler = logging.StreamHandler(stream=_Null())
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                _drop("authorization"),
                structlog.processors.KeyValueRenderer(),
            ]
        )
    )
    std.handlers[:] = [handler]
    std.propagate = False
    std.setLevel(logging.INFO)
    _configure_for_the_formatter()
    try:
        sink = StructlogSink()
        with LeakCheck(seed=SEED, sinks=[sink]) as lc:
            token = lc.secret("bearer")
            log = structlog.get_logger("lc.structlog.formatter")
            log.warning("rejected", authorization=token, route="/v1/items")
            log.debug("below the stdlib level: never formatted", authorization=token)
            std.warning("foreign record")
        items = list(sink.collect())
        assert [c.path for c in items] == [
            "formatter lc.structlog.formatter WARNING",
            "formatter lc.structlog.formatter WARNING",
        ]
        assert "route='/v1/items'" in items[0].text and "foreign record" in items[1].text
        assert not lc.violations()
    finally:
        std.handlers[:] = []
        _restore(saved)


def test_outputs_of_every_shape_and_nesting() -> None:
    saved = _config()
    try:
        outer, inner = StructlogSink(), StructlogSink()
        outer.start()
        bound = _wrap(lambda _l, _m, ed: ((ed["event"],), {"extra": ed})).bind(logger="ctx.name")
        inner.start()
        bound.msg("tuple", user="alice")
        inner.stop()
        _wrap(lambda _l, _m, ed: ed).msg("dict", n=1)
        _wrap(lambda _l, _m, ed: b"bytes").msg("b")
        assert BoundLoggerBase._process_event is not ORIGINAL_PROCESS_EVENT
        outer.stop()
        assert BoundLoggerBase._process_event is ORIGINAL_PROCESS_EVENT
        _wrap(lambda _l, _m, ed: "late").msg("x")
        paths = [(c.path, c.text) for c in outer.collect()]
        assert ("event ctx.name msg args[0]", "tuple") in paths
        assert ("event ctx.name msg extra.user", "alice") in paths
        assert ("event msg event", "dict") in paths
        assert ("event msg", b"bytes") in paths
        assert all(text != "late" for _, text in paths)
        assert len(list(inner.collect())) < len(paths)
    finally:
        _restore(saved)


def test_not_emitted_note_for_a_stdlib_logger_below_level() -> None:
    std = logging.getLogger("lc.structlog.quiet")
    std.setLevel(logging.ERROR)
    sink = StructlogSink()
    bound = structlog.wrap_logger(
        std,
        processors=[structlog.processors.KeyValueRenderer()],
        wrapper_class=structlog.stdlib.BoundLogger,
    )
    with LeakCheck(seed=SEED, sinks=[sink]):
        bound.info("quiet")
    std.setLevel(logging.NOTSET)
    (item,) = sink.collect()
    assert item.path == "event lc.structlog.quiet info"
    assert item.note.startswith("not emitted in production")


def test_sinks_entry() -> None:
    assert structlog_sink.SINKS == [StructlogSink]
    assert StructlogSink.name == "structlog"


class _Null:
    """A logger/stream that discards everything."""

    name = None

    def write(self, text: str) -> None:
        pass

    def flush(self) -> None:
        pass

    def msg(self, *args: object, **kwargs: object) -> None:
        pass


def _configure_for_the_formatter() -> None:
    """structlog configured to hand its events to the stdlib ``ProcessorFormatter``."""
    structlog.configure(
        processors=[structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )


def _config() -> tuple[dict, bool]:
    return structlog.get_config(), structlog.is_configured()


def _restore(saved: tuple[dict, bool]) -> None:
    config, configured = saved
    structlog.reset_defaults()
    if configured:
        structlog.configure(**config)


def _wrap(renderer):
    return structlog.wrap_logger(
        _Null(), processors=[renderer], wrapper_class=structlog.BoundLogger
    )


def _drop(key: str):
    def processor(_logger, _method, event_dict):
        event_dict.pop(key, None)
        return event_dict

    return processor


def _formatter_app(redacting: bool) -> tuple[logging.Logger, logging.Handler]:
    """An app on structlog's stdlib ``ProcessorFormatter``: the redactor runs in the
    formatter, after the record (carrying the raw event dict) was made."""

    def redact(logger: object, method_name: str, event_dict: dict) -> dict:
        if redacting and "token" in event_dict:
            event_dict["token"] = "[redacted]"
        return event_dict

    handler = logging.StreamHandler(io.StringIO())
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[
                redact,
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.JSONRenderer(),
            ]
        )
    )
    stdlib_logger = logging.getLogger("gateway.formatter-app")
    stdlib_logger.handlers = [handler]
    stdlib_logger.setLevel(logging.INFO)
    stdlib_logger.propagate = False
    return stdlib_logger, handler


@pytest.mark.parametrize("redacting", [True, False], ids=["redacting-app", "leaky-app"])
def test_processor_formatter_raw_event_dict_is_not_a_false_leak(redacting: bool) -> None:
    stdlib_logger, handler = _formatter_app(redacting)
    _configure_for_the_formatter()
    try:
        with LeakCheck(seed=SEED, namespace=f"formatter-{redacting}") as check:
            token = check.secret("bearer")
            structlog.get_logger("gateway.formatter-app").info("call", token=token)
        violations = check.violations()
    finally:
        structlog.reset_defaults()
        stdlib_logger.handlers = []
    if redacting:
        assert violations == [], [leak.where for leak in violations]
    else:
        assert violations, "the unredacted rendering must be caught"
        assert {leak.sink for leak in violations} == {"structlog"}, [
            leak.where for leak in violations
        ]


class _NotStructlog(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not isinstance(record.msg, dict)


@pytest.mark.parametrize(
    "second, plain",
    [
        ("%(levelname)s %(message)s", True),
        (None, False),
        ("%(levelname)s %(name)s", False),  # (writes no message)
        ("filtered", False),  # (its own filter drops structlog's records)
    ],
    ids=["plain-second-handler", "redacting-only", "no-message-field", "filtered"],
)
def test_a_plain_handler_beside_the_processor_formatter_writes_the_raw_event(
    second: str | None, plain: bool
) -> None:
    """A ``ProcessorFormatter`` handler redacts; a second handler of the same logger with a
    plain ``logging.Formatter`` writes the record's message, the event dict as structlog
    made it, the token in it. That dict was left to the structlog sink, which sees only
    what a ``ProcessorFormatter`` renders, and the test passed (found by a hunting
    helper). With the redacting handler alone nothing is a leak, nor with a second
    handler that writes no message, or whose own filter drops the record (a filter
    protects its own handler: both failed, found by another)."""
    stdlib_logger, handler = _formatter_app(redacting=True)
    if second is not None:
        extra = logging.StreamHandler(io.StringIO())
        if second == "filtered":
            extra.addFilter(_NotStructlog())
            second = "%(levelname)s %(message)s"
        extra.setFormatter(logging.Formatter(second))
        stdlib_logger.handlers.append(extra)
    _configure_for_the_formatter()
    try:
        with LeakCheck(seed=SEED, namespace=f"second-handler-{second}") as check:
            token = check.secret("bearer")
            structlog.get_logger("gateway.formatter-app").info("call", token=token)
        where = {(leak.sink, leak.path.split(" ")[-1]) for leak in check.violations()}
        written = stdlib_logger.handlers[-1].stream.getvalue()  # type: ignore[attr-defined]
    finally:
        structlog.reset_defaults()
        stdlib_logger.handlers = []
    shown = token in written  # (a boolean: the written text is no assertion operand)
    assert shown is plain
    assert where == ({("log record", "message")} if plain else set()), where
