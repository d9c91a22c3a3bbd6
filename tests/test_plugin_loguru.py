"""The loguru sink, end to end through an inner pytest run.

A tiny gateway logs with loguru to the app's own handler at WARNING. A DEBUG message with
the token (never emitted by the app's handler, captured anyway, with a note) and a logged
traceback whose ``diagnose`` locals hold the Authorization header both fail the inner test
naming ``loguru <module> <LEVEL> message|traceback``; a gateway whose values are safe
passes. The app's handlers are left exactly as they were, even when the app reconfigures
loguru during the test, and every inner run's output is scanned for every secret.
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
    assert "not emitted in production: DEBUG (10) is below the level of every other" in out
    # diagnose: the value of `headers` on the line that raised
    assert "[LEAK] operator: loguru test_loguru_leaky ERROR traceback  form raw" in out
    assert "'Authorization': 'Bearer «canary:bearer:raw»'" in out
    # the app's handler after reconfiguring has diagnose=False: said so in the note
    assert "the app's loguru handlers use diagnose=False" in out
    leak_lines = [line for line in result.outlines if "[LEAK]" in line]
    assert all(" loguru " in line for line in leak_lines)
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
