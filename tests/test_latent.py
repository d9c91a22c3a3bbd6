"""Emitted or latent: a log record is judged as the app's handlers render it.

For each precision rule, the leaky sample that still fails and the clean twin that used to
fail and now passes (latent: reported with where it sits, failing only under
``strict_latent``):

* an exception whose ``.request`` carries the token, under a plain formatter (clean twin)
  and under a JSON formatter that serializes it (leaky); the same for ``__context__.url``
  and a ``JSONDecodeError``'s ``.doc``;
* the ``repr`` of a ``%s`` argument whose ``str`` hides the token;
* a redacting formatter of the app's own (its raw message is latent);
* a DEBUG record of ``httpcore.http11`` with ``httpcore=INFO`` declared (latent) and
  without (fails, saying how to declare it);
* with no handler of the app at all, the default formatter (what ``logging.lastResort``
  and pytest's log capture print).

Every check restores the loggers it touched; assertions compare paths, classes and notes,
never a secret's value.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
from conftest import run_with_report, self_scan

from leakcheck import CanaryFactory
from leakcheck.capture import LoggingSink
from leakcheck.harness import LeakCheck
from leakcheck.policy import DEFAULT_POLICY, Policy, SinkClass

pytest_plugins = ["pytester"]

SEED = "latent-1"
NAME = "leakcheck.tests.latent"


class Request:
    """An upstream request: its repr shows the URL (a token in the query), its str not."""

    def __init__(self, url: str) -> None:
        self.url = url

    def __repr__(self) -> str:
        return f"<Request GET {self.url}>"

    def __str__(self) -> str:
        return "<Request GET>"


class ConnectError(Exception):
    """As httpx's: the message names no URL; ``.request`` holds it."""

    def __init__(self, message: str, request: Request) -> None:
        super().__init__(message)
        self.request = request


class JsonFormatter(logging.Formatter):
    """A JSON formatter that serializes the logged exception's request, as some do."""

    def format(self, record: logging.LogRecord) -> str:
        exc = record.exc_info[1] if record.exc_info else None
        request = getattr(exc, "request", None)
        return json.dumps(
            {
                "level": record.levelname,
                "message": record.getMessage(),
                "request": repr(request) if request is not None else None,
            }
        )


class RedactingFormatter(logging.Formatter):
    """Formats as usual, then masks every bearer token."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        head, sep, _ = text.partition("Bearer ")
        return head + sep + "[REDACTED]" if sep else text


class BadFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        raise RuntimeError("formatter bug")


@pytest.fixture
def app_logger() -> Iterator[tuple[logging.Logger, list[logging.Handler]]]:
    """A logger of the app's, not propagating; handlers added to the list are attached."""
    log = logging.getLogger(NAME)
    added: list[logging.Handler] = []
    log.propagate = False
    try:
        yield log, added
    finally:
        for handler in list(log.handlers):
            log.removeHandler(handler)
        log.propagate = True
        log.setLevel(logging.NOTSET)


def _handler(formatter: logging.Formatter) -> logging.Handler:
    handler = logging.StreamHandler(io.StringIO())
    handler.setFormatter(formatter)
    return handler


def _check(policy: Policy = DEFAULT_POLICY, namespace: str = "") -> LeakCheck:
    return LeakCheck(seed=SEED, namespace=namespace, sinks=[LoggingSink()], policy=policy)


def _log_request_failure(log: logging.Logger, check: LeakCheck) -> None:
    token = check.secret("bearer")
    try:
        raise ConnectError("connection refused", Request(f"https://api.example/v1?token={token}"))
    except ConnectError:
        log.exception("upstream call failed")


def _app_output(handlers: list[logging.Handler], check: LeakCheck) -> bool:
    """Whether what the app's handlers wrote shows a secret of ``check``."""
    written = "".join(h.stream.getvalue() for h in handlers)  # type: ignore[attr-defined]
    return bool(check.scanner.scan(written))


def _paths(leaks: list) -> set[tuple[str, str]]:
    return {(leak.path.removeprefix(f"{NAME} "), leak.sink_class.value) for leak in leaks}


# --- the logged exception's attributes --------------------------------------------------------


def test_request_under_a_plain_formatter_is_latent(app_logger) -> None:
    """The clean twin: failed before (``exc_info.request``), passes now; still reported."""
    log, _ = app_logger
    handler = _handler(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    log.addHandler(handler)
    with _check(namespace="plain") as check:
        _log_request_failure(log, check)
    assert check.violations() == []
    assert not _app_output([handler], check)  # the app really printed none of it
    assert _paths(check.findings()) == {("ERROR exc_info.request", "latent")}
    (leak,) = check.findings()
    assert leak.allowed
    assert "latent: request of the logged ConnectError, which no handler renders" in leak.note
    assert "[latent] log record" in check.report()


def test_request_under_a_json_formatter_that_serializes_it_fails(app_logger) -> None:
    """The leaky sample: the app's own formatter writes the request: emitted."""
    log, _ = app_logger
    handler = _handler(JsonFormatter())
    log.addHandler(handler)
    with _check(namespace="json") as check:
        _log_request_failure(log, check)
    assert _app_output([handler], check)
    # one finding: the latent attribute shows the same secret in the same record
    assert _paths(check.violations()) == {("ERROR formatted by JsonFormatter", "operator")}
    assert _paths(check.findings()) == _paths(check.violations())


def test_request_fails_under_strict_latent(app_logger) -> None:
    log, _ = app_logger
    log.addHandler(_handler(logging.Formatter()))
    with _check(DEFAULT_POLICY.with_latent(strict=True), namespace="plain") as check:
        _log_request_failure(log, check)
    (leak,) = check.violations()
    assert _paths([leak]) == {("ERROR exc_info.request", "latent")}
    assert "strict_latent: judged as emitted" in leak.note


def test_context_url_and_doc_are_latent(app_logger) -> None:
    log, _ = app_logger
    log.addHandler(_handler(logging.Formatter()))

    class Redirect(Exception):
        def __init__(self, url: str) -> None:
            super().__init__("redirect refused")
            self.url = url

    with _check(namespace="context") as check:
        token = check.secret("bearer")
        try:
            try:
                raise Redirect(f"https://login.example/cb?code={token}")
            except Redirect:
                raise RuntimeError("login failed") from None
        except RuntimeError:
            log.exception("sign-in failed")
        try:
            json.loads(f"<html>token={token}</html>")
        except json.JSONDecodeError:
            log.exception("upstream answered no JSON")
    assert check.violations() == []
    assert _paths(check.findings()) == {
        ("ERROR exc_info.__context__.url", "latent"),
        ("ERROR exc_info.doc", "latent"),
    }


def test_the_exception_message_is_emitted(app_logger) -> None:
    """Type, message and frames are what any formatter and sentry's integration send."""
    log, _ = app_logger
    log.addHandler(_handler(JsonFormatter()))  # renders no traceback at all
    with _check(namespace="message") as check:
        token = check.secret("bearer")
        try:
            raise ConnectError(f"refused for token {token}", Request("https://api.example/"))
        except ConnectError:
            log.exception("upstream call failed")
    assert _paths(check.violations()) == {("ERROR exc_info.traceback", "operator")}


# --- arguments, formatters -------------------------------------------------------------------


class Client:
    """Its str hides the token, its repr shows it."""

    def __init__(self, token: str) -> None:
        self.token = token

    def __str__(self) -> str:
        return "Client(api.example)"

    def __repr__(self) -> str:
        return f"Client(token={self.token!r})"


def test_repr_of_a_percent_s_argument_is_latent(app_logger) -> None:
    log, _ = app_logger
    log.addHandler(_handler(logging.Formatter()))
    with _check(namespace="args") as check:
        log.warning("calling %s", Client(check.secret("bearer")))
    assert check.violations() == []
    (leak,) = check.findings()
    assert _paths([leak]) == {("WARNING args", "latent")}
    assert "the repr of the record's args, which no handler renders" in leak.note


def test_percent_r_renders_the_repr(app_logger) -> None:
    """The leaky twin: ``%r`` puts the repr in the message."""
    log, _ = app_logger
    log.addHandler(_handler(logging.Formatter()))
    with _check(namespace="args") as check:
        log.warning("calling %r", Client(check.secret("bearer")))
    assert _paths(check.violations()) == {("WARNING message", "operator")}


def test_a_format_that_names_args_emits_them(app_logger) -> None:
    log, _ = app_logger
    log.addHandler(_handler(logging.Formatter("%(message)s %(args)s")))
    with _check(namespace="args") as check:
        log.warning("calling %s", Client(check.secret("bearer")))
    assert _paths(check.violations()) == {("WARNING args", "operator")}


def test_a_redacting_formatter_is_honoured(app_logger) -> None:
    log, handlers = app_logger
    handler = _handler(RedactingFormatter("%(levelname)s %(message)s"))
    log.addHandler(handler)
    with _check(namespace="redact") as check:
        log.warning("sending Authorization: Bearer %s", check.secret("bearer"))
    assert not _app_output([handler], check)
    assert check.violations() == []
    assert _paths(check.findings()) == {("WARNING message", "latent")}
    # the same record, a plain handler next to it: the message is emitted there
    log.addHandler(_handler(logging.Formatter()))
    with _check(namespace="redact") as check:
        log.warning("sending Authorization: Bearer %s", check.secret("bearer"))
    assert _paths(check.violations()) == {("WARNING message", "operator")}


def test_a_formatter_that_raises_is_judged_as_plain(app_logger) -> None:
    log, _ = app_logger
    bad = _handler(BadFormatter())
    bad.handleError = lambda record: None  # type: ignore[method-assign]  # quiet in the test
    log.addHandler(bad)
    with _check(namespace="bad") as check:
        log.warning("token %s", check.secret("bearer"))
    assert _paths(check.violations()) == {("WARNING message", "operator")}


def test_extra_fields_are_emitted(app_logger) -> None:
    """A JSON formatter and sentry's logging integration serialize every extra field."""
    log, _ = app_logger
    log.addHandler(_handler(logging.Formatter()))
    with _check(namespace="extra") as check:
        log.warning("sent", extra={"headers": {"Authorization": check.secret("bearer")}})
    assert _paths(check.violations()) == {("WARNING extra.headers", "operator")}


def test_the_app_handlers_are_found_up_the_tree() -> None:
    """A handler on a parent logger renders the child's records; NullHandler renders
    nothing; ``propagate=False`` stops the walk."""
    parent, child = logging.getLogger(NAME), logging.getLogger(f"{NAME}.http")
    handler = _handler(JsonFormatter())
    parent.addHandler(handler)
    child.addHandler(logging.NullHandler())
    try:
        with _check(namespace="tree") as check:
            _log_request_failure(child, check)
        assert {leak.path for leak in check.violations()} == {
            f"{NAME}.http ERROR formatted by JsonFormatter"
        }
        child.propagate = False  # the JSON handler is out of reach: the default renders it
        with _check(namespace="tree") as check:
            _log_request_failure(child, check)
        assert check.violations() == []
    finally:
        parent.removeHandler(handler)
        child.handlers.clear()
        child.propagate = True


def test_no_handler_of_the_app_is_the_default_formatter() -> None:
    """With none of the app's handlers (pytest's own capture only, or logging.lastResort),
    a record is judged as a plain formatter prints it: the message fails, the exception's
    attributes are latent."""
    log = logging.getLogger(f"{NAME}.orphan")
    log.propagate = False
    try:
        with _check(namespace="orphan") as check:
            _log_request_failure(log, check)
            log.warning("retrying with %s", check.secret("bearer"))
    finally:
        log.propagate = True
    assert {
        (leak.path.removeprefix(f"{NAME}.orphan "), leak.sink_class.value)
        for leak in check.findings()
    } == {("ERROR exc_info.request", "latent"), ("WARNING message", "operator")}


# --- declared production levels --------------------------------------------------------------


@pytest.fixture(autouse=True)
def _no_app_filters_on_httpcore() -> Iterator[None]:
    """Another test's app (the careful example gateway) may have filtered httpcore's header
    traces out, as its own logging setup: these tests need the record to be logged."""
    logger = logging.getLogger("httpcore.http11")
    saved = list(logger.filters)
    logger.filters.clear()
    try:
        yield
    finally:
        logger.filters[:] = saved


def _httpcore_trace(check: LeakCheck) -> None:
    log = logging.getLogger("httpcore.http11")
    token = check.secret("bearer")
    log.debug("send_request_headers.complete headers=[(b'Authorization', b'Bearer %s')]", token)


def test_debug_record_below_a_declared_level_is_latent() -> None:
    """The clean twin: ``httpcore=INFO`` declared (httpcore builds this trace only when
    DEBUG is on); the logger tree is respected (``httpcore`` covers ``httpcore.http11``)."""
    with _check(DEFAULT_POLICY.with_latent(log_levels="httpcore=INFO"), "h") as check:
        _httpcore_trace(check)
    assert check.violations() == []
    leaks = check.findings()
    assert {(leak.path, leak.sink_class.value) for leak in leaks} == {
        ("httpcore.http11 DEBUG message", "latent")
    }
    assert leaks[0].note.startswith(
        "latent: emitted only when DEBUG is enabled (production level INFO declared for httpcore)"
    )


def test_debug_record_without_a_declared_level_fails_saying_how_to_declare() -> None:
    """The leaky sample, and the strict default: every level counts."""
    with _check(namespace="h") as check:
        _httpcore_trace(check)
    (leak,) = check.violations()
    assert leak.path == "httpcore.http11 DEBUG message"
    hint = (
        "latent if production runs httpcore.http11 at INFO: declare it with "
        "leakcheck_log_levels = httpcore.http11=INFO (ini) or "
        "@pytest.mark.leakcheck(log_levels={'httpcore.http11': 'INFO'})"
    )
    assert hint in leak.note
    assert hint in check.report()


def test_a_record_at_the_declared_level_is_emitted() -> None:
    policy = DEFAULT_POLICY.with_latent(log_levels="httpcore=DEBUG root=WARNING")
    with _check(policy, "h") as check:
        _httpcore_trace(check)
        logging.getLogger("gateway.latent-test").info("token %s", check.secret("bearer"))
    assert {(leak.path, leak.sink_class.value) for leak in check.findings()} == {
        ("httpcore.http11 DEBUG message", "operator"),
        ("gateway.latent-test INFO message", "latent"),  # root=WARNING covers it
    }
    assert [leak.path for leak in check.violations()] == ["httpcore.http11 DEBUG message"]
    assert "declare" not in check.violations()[0].note  # a level is declared: no hint


def test_declared_level_under_strict_latent_still_fails() -> None:
    policy = DEFAULT_POLICY.with_latent(log_levels="httpcore=INFO", strict=True)
    with _check(policy, "h") as check:
        _httpcore_trace(check)
    leaks = check.violations()
    # judged as before latent was told apart: the args' repr is a finding of its own again
    assert {(leak.path, leak.sink_class) for leak in leaks} == {
        ("httpcore.http11 DEBUG message", SinkClass.LATENT),
        ("httpcore.http11 DEBUG args", SinkClass.LATENT),
    }
    assert all("emitted only when DEBUG is enabled" in leak.note for leak in leaks)
    assert all("strict_latent: judged as emitted" in leak.note for leak in leaks)


def test_a_warning_gets_no_declaration_hint() -> None:
    with _check(namespace="w") as check:
        logging.getLogger("gateway.latent-test").warning("token %s", check.secret("bearer"))
    (leak,) = check.violations()
    assert "declare" not in leak.note


# --- through the plugin ----------------------------------------------------------------------

INNER = """
import json
import logging

import pytest

log = logging.getLogger("gateway.http")  # no handler: pytest's capture only


class ConnectError(Exception):
    def __init__(self, message, request):
        super().__init__(message)
        self.request = request


def fail(token):
    try:
        raise ConnectError("connection refused", {"url": f"https://api.example/?t={token}"})
    except ConnectError:
        log.exception("upstream call failed")


def test_latent_only(leakcheck):
    fail(leakcheck.secret("bearer"))


@pytest.mark.leakcheck(strict_latent=True)
def test_latent_strict(leakcheck):
    fail(leakcheck.secret("bearer"))


def test_emitted(leakcheck):
    log.error("upstream refused %s", leakcheck.secret("bearer"))
"""


def test_plugin_reports_latent_and_fails_on_emitted(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=INNER)
    result, report = run_with_report(pytester, SEED)
    records = {r["test"].split("::")[-1]: r for r in report["tests"]}
    outcomes = {name: r["outcome"] for name, r in records.items()}
    assert outcomes == {
        "test_latent_only": "passed",
        "test_latent_strict": "failed",
        "test_emitted": "failed",
    }, outcomes
    found = records["test_latent_only"]["findings"]
    assert {(f["sink"], f["path"], f["sink_class"], f["allowed"]) for f in found} == {
        ("log record", "gateway.http ERROR exc_info.request", "latent", True),
    }
    assert found[0]["note"].startswith("latent: request of the logged ConnectError")
    found = records["test_latent_strict"]["findings"]
    assert {(f["path"], f["sink_class"], f["allowed"]) for f in found} == {
        ("gateway.http ERROR exc_info.request", "latent", False),
    }
    # the failure lists the latent finding as a leak, masked
    assert "[LEAK] latent: log record gateway.http ERROR exc_info.request" in result.stdout.str()
    secrets = [
        CanaryFactory(SEED, namespace=f"test_inner.py::{name}").secret("bearer") for name in records
    ]
    self_scan("\n".join(result.outlines + result.errlines), secrets, "inner pytest output")
    self_scan(json.dumps(report), secrets, "inner JSON report")
    # a passing test's latent findings were shown nowhere but the JSON report
    result.stdout.fnmatch_lines(
        ["latent findings (a secret on an object, or below a declared level: never emitted) "
         "in 1 passing test(s): test_inner.py::test_latent_only; the JSON report*"]
    )  # fmt: skip


# --- the same rule for an exception handed to the caller ----------------------------------------


def _handed_over(check: LeakCheck, *, in_message: bool, exposed: bool) -> None:
    """A gateway hands the caller an upstream failure: raised through (the exception sink)
    or returned as the tool's result (exposed)."""
    token = check.secret("bearer")
    message = f"connection refused for token {token}" if in_message else "connection refused"
    exc = ConnectError(message, Request(f"https://api.example/v1?token={token}"))
    if exposed:
        check.expose(exc, "tool response")
    else:
        check.exception_reached_caller(exc)


@pytest.mark.parametrize("exposed", [False, True], ids=["raised", "exposed"])
def test_a_caller_exceptions_request_is_latent(exposed: bool) -> None:
    """The clean twin: the caller prints or serializes the exception's text, which names
    no URL; the ``.request`` on it is latent (it failed the test before)."""
    check = LeakCheck(seed=SEED, namespace=f"caller-{exposed}", sinks=[])
    _handed_over(check, in_message=False, exposed=exposed)
    assert check.violations() == []
    (leak,) = check.findings()
    assert leak.sink_class is SinkClass.LATENT and leak.allowed
    assert leak.path.endswith("ConnectError.request"), leak.path
    assert "latent: request of the ConnectError handed to the caller" in leak.note
    assert "[latent] " in check.report()


@pytest.mark.parametrize("exposed", [False, True], ids=["raised", "exposed"])
def test_a_caller_exceptions_message_still_fails(exposed: bool) -> None:
    """The leaky sample: the token in the exception's own text is what the caller gets."""
    check = LeakCheck(seed=SEED, namespace=f"caller-msg-{exposed}", sinks=[])
    _handed_over(check, in_message=True, exposed=exposed)
    failing = {(leak.path.rpartition(".")[2], leak.sink_class) for leak in check.violations()}
    assert ("traceback", SinkClass.CALLER) in failing, failing
    # one record, one finding: the latent .request adds nothing where the text shows it
    assert all(leak.sink_class is not SinkClass.LATENT for leak in check.findings())


def test_a_caller_exceptions_request_fails_under_strict_latent() -> None:
    check = LeakCheck(
        seed=SEED, namespace="caller-strict", sinks=[],
        policy=DEFAULT_POLICY.with_latent(strict=True),
    )  # fmt: skip
    _handed_over(check, in_message=False, exposed=False)
    (leak,) = check.violations()
    assert leak.path.endswith("ConnectError.request")
    assert "strict_latent: judged as emitted" in leak.note


@pytest.mark.parametrize("strict", [False, True], ids=["default", "strict_latent"])
@pytest.mark.parametrize("declared", [None, "INFO"], ids=["no level", "INFO declared"])
def test_resolving_a_record_keeps_every_field_it_does_not_change(
    strict: bool, declared: str | None
) -> None:
    """``resolve_latent`` makes its copies without ``dataclasses.replace``: every field of a
    record's text is kept but the class, the note and (strict) the fallback flag."""
    import dataclasses

    from leakcheck.capture import Captured, LogOrigin, resolve_latent

    item = Captured(
        "log record", SinkClass.OPERATOR, "app.http DEBUG message", "text", note="first",
        group="log record#3", fallback=True, uninspected="",
        origin=LogOrigin("app.http", 10, "DEBUG"),
    )  # fmt: skip
    policy = DEFAULT_POLICY.with_latent(strict=strict, log_levels=declared and f"app={declared}")
    (resolved,) = resolve_latent([item], policy)
    changed = {"sink_class", "note", "fallback"}
    for f in dataclasses.fields(Captured):
        if f.name not in changed:
            assert getattr(resolved, f.name) == getattr(item, f.name), f.name
    assert resolved.note != item.note  # (a hint or a latent note: it did make a copy)
    # (a latent text judged as emitted is a finding of its own, not its record's fallback)
    assert resolved.fallback is not (strict and declared is not None)


# --- a latent record's own output on stderr or in pytest's log capture ------------------------

LEVELS = """
import logging, sys
import pytest

LEVELS = {"gw.lvl": "INFO", "libx": "INFO"}


def on_stderr(level, token):
    # the app's logger, its handler on stderr, logs the token at ``level``
    log = logging.getLogger("gw.lvl")
    handler = logging.StreamHandler(sys.stderr)
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)
    try:
        log.log(level, "headers Authorization: Bearer %s", token)
    finally:
        log.removeHandler(handler)


@pytest.mark.leakcheck(log_levels=LEVELS)
def test_debug_on_stderr(leakcheck):
    on_stderr(logging.DEBUG, leakcheck.secret("bearer"))


@pytest.mark.leakcheck(log_levels=LEVELS)
def test_library_debug(leakcheck):
    logging.getLogger("libx.http11").debug("send Bearer %s", leakcheck.secret("bearer"))


@pytest.mark.leakcheck(log_levels=LEVELS)
def test_info_on_stderr(leakcheck):
    on_stderr(logging.INFO, leakcheck.secret("bearer"))


@pytest.mark.leakcheck(log_levels=LEVELS)
def test_printed(leakcheck):
    print("printed Bearer", leakcheck.secret("bearer"), file=sys.stderr)


@pytest.mark.leakcheck(log_levels=LEVELS, strict_latent=True)
def test_debug_on_stderr_strict(leakcheck):
    on_stderr(logging.DEBUG, leakcheck.secret("bearer"))
"""


def test_a_latent_records_own_output_is_latent_too(pytester: pytest.Pytester) -> None:
    """A DEBUG record of a logger declared at INFO is latent, and so is its line on stderr
    (the app's handler) and in pytest's log capture (``--log-level=DEBUG``): those lines
    were judged as emitted, and the declaration did nothing. An INFO line, a print of the
    same kind of text and ``strict_latent`` still fail."""
    pytester.makepyfile(test_inner=LEVELS)
    result, report = run_with_report(pytester, SEED, "--log-level=DEBUG")
    outcomes = {r["test"].split("::")[-1]: r["outcome"] for r in report["tests"]}
    assert outcomes == {
        "test_debug_on_stderr": "passed",
        "test_library_debug": "passed",
        "test_info_on_stderr": "failed",
        "test_printed": "failed",
        "test_debug_on_stderr_strict": "failed",
    }, outcomes
    debug = next(r for r in report["tests"] if r["test"].endswith("::test_debug_on_stderr"))
    stderr = [f for f in debug["findings"] if f["sink"] == "stderr"]
    assert stderr and all(f["sink_class"] == "latent" and f["allowed"] for f in stderr)
    assert (
        "latent: the output of a log record emitted only when DEBUG is enabled"
        in (stderr[0]["note"])
    )
    secrets = [
        CanaryFactory(SEED, namespace=f"test_inner.py::{name}").secret("bearer")
        for name in outcomes
    ]
    self_scan("\n".join(result.outlines + result.errlines), secrets, "inner pytest output")
