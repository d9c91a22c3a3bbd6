"""The loguru sink, end to end through an inner pytest run.

A tiny gateway logs with loguru to the app's own handler at WARNING. A DEBUG message with
the token (never emitted by the app's handler, captured anyway, with a note) and a logged
traceback whose ``diagnose`` locals hold the Authorization header both fail the inner test
naming ``loguru <module> <LEVEL> message|traceback``; a gateway whose values are safe
passes. The app's handlers are left exactly as they were, even when the app reconfigures
loguru during the test, and every inner run's output is scanned for every secret.

Tracebacks are judged with the app's own handler settings: under ``diagnose=False`` the
locals are latent (reported, not failed; failed under ``strict_latent``), under
``diagnose=True`` they fail, and an exception message holding the token fails either way.
"""

from __future__ import annotations

import textwrap

import loguru._logger
import pytest
from conftest import QUIET_INNER_ARGS, assert_inner_run_safe
from leakcheck.plugins import loguru_sink
from leakcheck.plugins.loguru_sink import LoguruSink
from loguru import logger

from leakcheck import CanaryFactory, Secret
from leakcheck.harness import LeakCheck
from leakcheck.policy import DEFAULT_POLICY

pytest_plugins = ["pytester"]

SEED = "leakcheck-plugin-loguru"
INNER_ARGS = (
    *QUIET_INNER_ARGS,
    "--assert=plain",
    f"--leakcheck-seed={SEED}",
)
ORIGINAL_REMOVE = loguru._logger.Logger.remove

APP = '''
import hashlib
from pathlib import Path

import pytest
from loguru import logger

APP_OUTPUT = []


def proof(request, secret):
    Path(f"proof-{request.node.name}.txt").write_text(hashlib.sha256(secret.encode()).hexdigest())


@pytest.fixture(autouse=True)
def app_handler():
    """The app's own handler: WARNING and up, to a list."""
    handler_id = logger.add(APP_OUTPUT.append, level="WARNING", format="{message}")
    yield
    if handler_id in logger._core.handlers:
        logger.remove(handler_id)


def send(url, headers):
    raise ConnectionError("upstream refused the connection")


class Credential:
    """Holds the token; its repr (what diagnose prints) does not."""

    def __init__(self, token):
        self.token = token

    def __repr__(self):
        return "Credential(<hidden>)"


class Gateway:
    def __init__(self, token):
        self._credential = Credential(token)

    def __repr__(self):
        return "Gateway(<hidden>)"

    def careless_call(self):
        url = "https://api.example/v1/items"
        logger.debug("calling {} with token {}", url, self._credential.token)
        headers = {"Authorization": f"Bearer {self._credential.token}"}
        try:
            send(url, headers)
        except ConnectionError:
            logger.exception("upstream call failed")
        return {"ok": False, "code": "UPSTREAM_UNREACHABLE"}

    def careful_call(self):
        url = "https://api.example/v1/items"
        logger.debug("calling {}", url)
        credential = self._credential
        try:
            send(url, credential)
        except ConnectionError:
            logger.exception("upstream call failed")
        logger.bind(operation="create_deployment").warning("gave up")
        return {"ok": False, "code": "UPSTREAM_UNREACHABLE"}
'''

LEAKY = """
def test_careless(request, leakcheck):
    token = leakcheck.secret("bearer")
    proof(request, token)
    gateway = Gateway(token)
    del token  # only the gateway's own frames hold it
    leakcheck.expose(gateway.careless_call())


def test_reconfigured_during_the_test(request, leakcheck):
    gateway = Gateway(leakcheck.secret("bearer"))
    proof(request, gateway._credential.token)
    logger.remove()  # the app reconfigures loguru: every handler goes, ours comes back
    handler_id = logger.add(APP_OUTPUT.append, level="ERROR", format="{message}",
                            diagnose=False)
    try:
        leakcheck.expose(gateway.careless_call())
    finally:
        logger.remove(handler_id)
"""

CLEAN = """
def test_careful(request, leakcheck):
    gateway = Gateway(leakcheck.secret("bearer"))
    proof(request, gateway._credential.token)
    leakcheck.expose(gateway.careful_call())
"""


def _secrets(nodeid: str, *kinds: str) -> list[Secret]:
    factory = CanaryFactory(SEED, namespace=nodeid)
    return [factory.secret(kind) for kind in kinds]


@pytest.fixture
def loguru_state():
    """The outer session's loguru handlers are set aside (inner runs must not write to
    them), and the handler set is checked to be identical after each inner run."""
    core = logger._core
    with core.lock:
        saved = core.handlers, core.min_level
        core.handlers, core.min_level = {}, float("inf")
    try:
        yield
        assert dict(core.handlers) == {}, "a loguru handler was left behind"
        assert core.min_level == float("inf")
        assert loguru._logger.Logger.remove is ORIGINAL_REMOVE
        assert not loguru_sink._ACTIVE
    finally:
        with core.lock:
            for handler in core.handlers.values():
                handler.stop()
            core.handlers, core.min_level = saved


def _run(pytester: pytest.Pytester, name: str, tests: str, ids: list[str]):
    pytester.makepyfile(**{name: textwrap.dedent(APP) + textwrap.dedent(tests)})
    secrets = [s for test in ids for s in _secrets(f"{name}.py::{test}", "bearer")]
    result = pytester.runpytest(*INNER_ARGS, "-rA")
    assert len(secrets) == len(ids)
    assert_inner_run_safe(pytester, result, secrets, ids)
    return result


def test_leaky_message_and_traceback_fail(pytester: pytest.Pytester, loguru_state) -> None:
    ids = ["test_careless", "test_reconfigured_during_the_test"]
    result = _run(pytester, "test_loguru_leaky", LEAKY, ids)
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    # below the app handler's level: captured all the same, with a note
    assert "[LEAK] operator: loguru test_loguru_leaky DEBUG message  form raw" in out
    assert "not emitted in production: DEBUG (10) is below the app's loguru handler" in out
    # diagnose: the value of `headers` on the line that raised
    assert "[LEAK] operator: loguru test_loguru_leaky ERROR traceback  form raw" in out
    assert "'Authorization': 'Bearer «canary:bearer:raw»'" in out
    # the app's handler after reconfiguring has diagnose=False: its locals are latent, named
    # on the "also in" line of the failure the DEBUG message makes (the same root cause;
    # the note saying where they sit is in the JSON report)
    assert (
        "also in: loguru test_loguru_leaky ERROR traceback "
        "(diagnose=True, backtrace=True) (latent, allowed)" in out
    )
    leak_lines = [line for line in result.outlines if "[LEAK]" in line]
    assert all(" loguru " in line for line in leak_lines)
    assert not any("(diagnose=True, backtrace=True)" in line for line in leak_lines)
    # the message of the exception record is clean: only its traceback is reported
    assert "ERROR message" not in out


def test_careful_gateway_passes(pytester: pytest.Pytester, loguru_state) -> None:
    result = _run(pytester, "test_loguru_clean", CLEAN, ["test_careful"])
    result.assert_outcomes(passed=1)


def test_texts_notes_and_extra(loguru_state) -> None:
    saved_core = logger._core.handlers
    sink = LoguruSink()
    with LeakCheck(seed=SEED, sinks=[sink]) as lc:
        token = lc.secret("bearer")
        logger.bind(api_token=token).opt(raw=True).info("raw line\n")
        logger.bind(attempt=3).info("plain")
    assert logger._core.handlers == saved_core
    items = list(sink.collect())
    paths = [c.path for c in items]
    me = __name__
    assert paths == [
        f"{me} INFO message",
        f"{me} INFO extra.api_token",
        f"{me} INFO message",
        f"{me} INFO extra.attempt",
    ]
    assert items[3].text == "3\n3"
    leaks = lc.violations()
    assert [leak.path for leak in leaks] == [f"{me} INFO extra.api_token"]
    assert all(leak.sink == "loguru" for leak in leaks)


def test_nested_sinks_and_stop_twice(loguru_state) -> None:
    before = dict(logger._core.handlers)
    outer, inner = LoguruSink(), LoguruSink()
    outer.start()
    inner.start()
    logger.info("both")
    inner.stop()
    inner.stop()
    assert loguru._logger.Logger.remove is not ORIGINAL_REMOVE  # outer still active
    logger.info("outer only")
    outer.stop()
    assert loguru._logger.Logger.remove is ORIGINAL_REMOVE
    assert dict(logger._core.handlers) == before
    logger.info("nobody")
    assert [c.text for c in outer.collect()] == ["both", "outer only"]
    assert [c.text for c in inner.collect()] == ["both"]


def test_sinks_entry() -> None:
    assert loguru_sink.SINKS == [LoguruSink]
    assert LoguruSink.name == "loguru"


# --- the app's own handler settings ------------------------------------------------------


def _send(headers: dict[str, str]) -> None:
    raise ConnectionError("upstream refused the connection")


def _call(token: str, message: str = "upstream refused the connection") -> None:
    headers = {"Authorization": f"Bearer {token}"}  # a local: diagnose prints its value
    try:
        if message != "upstream refused the connection":
            raise ConnectionError(message)
        _send(headers)
    except ConnectionError:
        logger.exception("upstream call failed")


def _judged(
    diagnose: bool, *, strict: bool = False, in_message: bool = False, also_diagnosing: bool = False
) -> LeakCheck:
    """A call whose locals hold the token, logged to an app handler with ``diagnose``
    (and, ``also_diagnosing``, to a second one with ``diagnose=True``)."""
    written: list[str] = []
    handler_ids = [logger.add(written.append, level="WARNING", format="{message}",
                              diagnose=diagnose)]  # fmt: skip
    if also_diagnosing:
        handler_ids.append(logger.add(written.append, level="ERROR", diagnose=True))
    policy = DEFAULT_POLICY.with_latent(strict=strict)
    namespace = f"diagnose-{diagnose}-{strict}-{in_message}-{also_diagnosing}"
    try:
        with LeakCheck(seed=SEED, namespace=namespace, sinks=[LoguruSink()], policy=policy) as lc:
            token = lc.secret("bearer")
            _call(token, f"refused {token}" if in_message else "upstream refused the connection")
            del token
    finally:
        for handler_id in handler_ids:
            logger.remove(handler_id)
    # what the app's handlers wrote holds the token exactly when an emitted text leaks
    app_wrote_it = bool(lc.scanner.scan("".join(written)))
    del written
    emitted_leak = any(leak.sink_class.value == "operator" for leak in lc.violations())
    assert app_wrote_it is emitted_leak
    return lc


def test_diagnose_false_locals_are_latent(loguru_state) -> None:
    """The clean twin: failed before (the sink rendered diagnose=True), passes now."""
    lc = _judged(diagnose=False)
    assert lc.violations() == []
    found = lc.findings()
    assert {leak.path for leak in found} == {
        f"{__name__} ERROR traceback (diagnose=True, backtrace=True)"
    }
    latent = found[0]
    assert latent.sink_class.value == "latent" and latent.allowed
    assert "variable values" in latent.note and "diagnose=False" in latent.note
    assert "[latent] loguru" in lc.report()


def test_diagnose_true_locals_still_fail(loguru_state) -> None:
    lc = _judged(diagnose=True)
    paths = {(leak.path, leak.sink_class.value) for leak in lc.violations()}
    assert paths == {(f"{__name__} ERROR traceback", "operator")}


def test_diagnose_false_still_fails_on_what_it_prints(loguru_state) -> None:
    """The exception's message is in every rendering: emitted under diagnose=False too."""
    lc = _judged(diagnose=False, in_message=True)
    assert {leak.path for leak in lc.violations()} == {f"{__name__} ERROR traceback"}
    assert all(leak.sink_class.value == "operator" for leak in lc.violations())


def test_diagnose_false_locals_fail_under_strict_latent(loguru_state) -> None:
    lc = _judged(diagnose=False, strict=True)
    leaks = lc.violations()
    assert {leak.path for leak in leaks} == {
        f"{__name__} ERROR traceback (diagnose=True, backtrace=True)"
    }
    assert all("strict_latent: judged as emitted" in leak.note for leak in leaks)


def test_one_diagnosing_handler_is_enough(loguru_state) -> None:
    """Two app handlers: one with diagnose=True renders the locals, so they are emitted."""
    lc = _judged(diagnose=False, also_diagnosing=True)
    assert {leak.path for leak in lc.violations()} == {f"{__name__} ERROR traceback"}


def test_declared_level_makes_a_loguru_record_latent(loguru_state) -> None:
    handler_id = logger.add(lambda message: None, level="DEBUG")
    policy = DEFAULT_POLICY.with_latent(log_levels={__name__: "INFO"})
    try:
        with LeakCheck(seed=SEED, sinks=[LoguruSink()], policy=policy) as lc:
            logger.debug("token {}", lc.secret("bearer"))
        with LeakCheck(seed=SEED, sinks=[LoguruSink()]) as strict_default:
            logger.debug("token {}", strict_default.secret("bearer"))
    finally:
        logger.remove(handler_id)
    assert lc.violations() == []
    (latent,) = lc.findings()
    assert "emitted only when DEBUG is enabled" in latent.note
    (leak,) = strict_default.violations()
    assert f"leakcheck_log_levels = {__name__}=INFO" in leak.note


def test_extra_is_judged_as_the_apps_handlers_write_it(loguru_state) -> None:
    """``bind(token=...)`` under a handler whose format names no ``{extra}`` is written
    nowhere: latent (it failed the test). A handler that serializes, formats ``{extra}``
    or names the key writes it: judged."""
    me = __name__
    for handler, emitted in (
        ({"format": "{level} {message}"}, False),
        ({"format": "{level} {message}", "serialize": True}, True),
        ({"format": "{message} {extra}"}, True),
        ({"format": "{message} {extra[token]}"}, True),
        ({"format": "{message} {extra[user]}"}, False),
        ({"format": lambda record: "{message}\n"}, True),  # a function: judged
    ):
        handler_id = logger.add(lambda message: None, level="DEBUG", **handler)
        try:
            with LeakCheck(seed=SEED, sinks=[LoguruSink()]) as lc:
                logger.bind(token=lc.secret("bearer"), user="u1").info("calling upstream")
        finally:
            logger.remove(handler_id)
        (finding,) = [f for f in lc.findings() if f.path == f"{me} INFO extra.token"]
        assert finding.allowed is not emitted, handler
        if not emitted:
            assert "latent: extra.token is bound to the record; no loguru handler" in finding.note


def test_a_record_every_handler_filters_out_is_latent(loguru_state) -> None:
    handler_id = logger.add(
        lambda message: None, level="DEBUG", filter=lambda record: "token" not in record["message"]
    )
    try:
        with LeakCheck(seed=SEED, sinks=[LoguruSink()]) as lc:
            logger.info("token {}", lc.secret("bearer"))
            logger.info("auth {}", lc.secret("api_key"))
    finally:
        logger.remove(handler_id)
    (leak,) = lc.violations()  # the one the filter lets through
    assert leak.finding.secret_id.startswith("api_key")
    filtered = [f for f in lc.findings() if f.finding.secret_id.startswith("bearer")]
    assert filtered and all(f.allowed for f in filtered)
    assert "latent: the filter of every loguru handler of the app drops it" in filtered[0].note


@pytest.mark.parametrize(
    "handler, judged",
    [
        ({"format": "{thread.name} {level} {message}"}, {"thread.name"}),
        ({"format": "{time} {level} {message}"}, set()),
        ({"format": "{message}", "serialize": True}, {"thread.name"}),  # (JSON: every field)
    ],
    ids=["thread-name", "not-shown", "serialized"],
)
def test_a_thread_name_a_handler_writes_is_judged(
    loguru_state, handler: dict[str, object], judged: set[str]
) -> None:
    """A worker thread named after its session (``refresh-<token>``): a handler whose
    format shows ``{thread.name}`` (or that serializes the record) writes the token, and
    only the message, the traceback and ``extra`` were judged (the standard library's
    ``%(threadName)s`` passed the same way: found by a hunting helper). A format that
    does not show it leaves it unwritten, and unjudged."""
    import threading

    written: list[str] = []
    handler_id = logger.add(written.append, level="DEBUG", **handler)
    try:
        with LeakCheck(seed=SEED, sinks=[LoguruSink()]) as lc:
            token = lc.secret("bearer")
            worker = threading.Thread(
                target=logger.warning, args=("session expired",), name=f"refresh-{token}"
            )
            worker.start()
            worker.join()
    finally:
        logger.remove(handler_id)
    shown = any(token in text for text in written)  # (a boolean: no operand holds it)
    assert shown is bool(judged)
    fields = {leak.path.split(" ", 2)[-1] for leak in lc.violations()}
    assert fields == judged, fields
