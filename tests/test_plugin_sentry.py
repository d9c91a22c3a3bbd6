"""The sentry-sdk sink, end to end through an inner pytest run (a subprocess: the SDK's
client, scopes and integrations are process-global).

A tiny gateway reports its upstream failures to Sentry. When the final envelope would carry
the token (a local variable holding the request URL, a breadcrumb, a Sentry log, an
attachment) the inner test fails naming ``sentry event <field path>``; a gateway that
scrubs in ``before_send``, sends no locals and relies on the default scrubber for the
``authorization`` header passes. The app's client and transport are the same objects after
every test, failing or not. Every inner run's output is scanned for every form of every
secret the inner tests planted.
"""

from __future__ import annotations

import hashlib
import re
import textwrap

import pytest
import sentry_sdk
import sentry_sdk.client
from conftest import QUIET_INNER_ARGS, self_scan
from leakcheck.plugins import sentry_sink
from leakcheck.plugins.sentry_sink import NO_CLIENT, SentrySink
from sentry_sdk.envelope import Envelope, Item, PayloadRef

from leakcheck import CanaryFactory, Secret

pytest_plugins = ["pytester"]

SEED = "leakcheck-plugin-sentry"
MODULE = "test_sentry_app"
INNER_ARGS = (
    *QUIET_INNER_ARGS,
    f"--leakcheck-seed={SEED}",
    "-v",
    "-rA",
)

APP = r'''
import hashlib
import re
from pathlib import Path

import pytest
import sentry_sdk
import sentry_sdk.client
from sentry_sdk.transport import HttpTransport, Transport

DSN = "http://public@127.0.0.1:9/1"  # never contacted: the sink swaps the transport
ORIGINAL_INIT = sentry_sdk.client._Client.__init__
APP = {}


def proof(request, secret):
    Path(f"proof-{request.node.name}.txt").write_text(hashlib.sha256(secret.encode()).hexdigest())


def sink_of(leakcheck):
    return next(s for s in leakcheck.sinks if s.name == "sentry event")


@pytest.fixture(scope="session")
def sentry_app():
    """The app initialises Sentry the usual way (default integrations, locals on)."""
    sentry_sdk.init(dsn=DSN, enable_logs=True)
    client = sentry_sdk.get_client()
    APP.update(client=client, transport=client.transport)
    yield client


class DeployError(Exception):
    pass


def careless_deploy(token, repo):
    url = f"https://api.example/v1/repos/{repo}/deployments?access_token={token}"
    raise DeployError("upstream rejected the request")


def careful_deploy(token, repo):
    headers = {"Authorization": f"Bearer {token}"}
    del headers  # the request went out; nothing of it stays in the frame
    raise DeployError("upstream rejected the request")


class Recorder(Transport):
    """The app's own test double: it must still receive every envelope."""

    def __init__(self):
        super().__init__({"dsn": DSN})
        self.envelopes = []

    def capture_envelope(self, envelope):
        self.envelopes.append(envelope)


def scrub(event, hint):
    event.pop("extra", None)
    for crumb in (event.get("breadcrumbs") or {}).get("values", []):
        crumb.pop("message", None)
    return event


@pytest.fixture
def late_client():
    """A client made while the test runs (after leakcheck's fixture started)."""
    recorder = Recorder()
    client = sentry_sdk.Client(dsn=DSN, transport=recorder, include_local_variables=False,
                               before_send=scrub, default_integrations=False)
    yield client, recorder
    client.close()


def test_a_no_client_yet(request, leakcheck):
    token = leakcheck.secret("bearer")
    proof(request, token)
    sink = sink_of(leakcheck)
    assert not sentry_sdk.get_client().is_active()
    sentry_sdk.capture_message(f"deploy with {token}")  # no client: nothing would be sent
    assert sink.inactive_reason == NO_CLIENT_TEXT
    assert list(sink.collect()) == []


def test_frame_vars(request, sentry_app, leakcheck):
    token = leakcheck.secret("bearer")
    proof(request, token)
    try:
        careless_deploy(token, "web")
    except DeployError:
        sentry_sdk.capture_exception()
        raise  # the test fails on its own too: the client must still be restored


def test_breadcrumb(request, sentry_app, leakcheck):
    token = leakcheck.secret("bearer")
    proof(request, token)
    with sentry_sdk.isolation_scope():  # one request of the gateway
        sentry_sdk.add_breadcrumb(category="http", message="POST /deployments")
        sentry_sdk.add_breadcrumb(category="auth", message=f"using bearer {token}")
        sentry_sdk.capture_message("deployment failed")
    leakcheck.expose({"ok": False, "code": "AUTH_FAILED"})


def test_sentry_log(request, sentry_app, leakcheck):
    token = leakcheck.secret("bearer")
    proof(request, token)
    url = f"https://api.example/v1/deployments?access_token={token}"
    sentry_sdk.logger.warning("deploy to {url} failed", url=url)  # batched: flushed by the sink


def test_attachment(request, sentry_app, leakcheck):
    token = leakcheck.secret("bearer")
    proof(request, token)
    with sentry_sdk.new_scope() as scope:
        scope.add_attachment(bytes=f"Authorization: Bearer {token}\n".encode(),
                             filename="request.txt")
        sentry_sdk.capture_message("deployment failed")


def test_careful_gateway(request, sentry_app, leakcheck, late_client):
    token = leakcheck.secret("bearer")
    proof(request, token)
    client, recorder = late_client
    with sentry_sdk.new_scope() as scope:
        scope.set_client(client)
        scope.set_extra("upstream_url", f"https://api.example/v1?access_token={token}")
        sentry_sdk.add_breadcrumb(category="http", message=f"token {token}",
                                  data={"authorization": f"Bearer {token}"})
        try:
            careful_deploy(token, "web")
        except DeployError:
            sentry_sdk.capture_exception()
    # seen by the sink, after before_send and the scrubber, and still handed to the double
    texts = {c.path: c.text for c in sink_of(leakcheck).collect()}
    assert texts["exception.values[0].type"] == "DeployError"
    crumbs = r"breadcrumbs\.values\[\d+\]\.data\.authorization"
    assert [t for p, t in texts.items() if re.fullmatch(crumbs, p)] == ["[Filtered]"]
    assert "extra.upstream_url" not in texts
    assert len(recorder.envelopes) == 1
    assert sink_of(leakcheck).inactive_reason == ""
    leakcheck.expose({"ok": False, "code": "AUTH_FAILED"})


def test_z_restored(sentry_app):
    assert sentry_sdk.get_client() is APP["client"]
    assert APP["client"].transport is APP["transport"]
    assert type(APP["transport"]) is HttpTransport
    assert sentry_sdk.client._Client.__init__ is ORIGINAL_INIT
'''.replace("NO_CLIENT_TEXT", repr(NO_CLIENT))

# inner test -> kinds of the secrets it plants, in order
PLANTED = {
    "test_a_no_client_yet": ["bearer"],
    "test_frame_vars": ["bearer"],
    "test_breadcrumb": ["bearer"],
    "test_sentry_log": ["bearer"],
    "test_attachment": ["bearer"],
    "test_careful_gateway": ["bearer"],
}


def _secrets(name: str) -> list[Secret]:
    factory = CanaryFactory(SEED, namespace=f"{MODULE}.py::{name}")
    return [factory.secret(kind) for kind in PLANTED[name]]


def _outcomes(lines: list[str]) -> dict[str, str]:
    found = {}
    for line in lines:
        match = re.match(rf"{MODULE}\.py::(\w+) (PASSED|FAILED|ERROR)", line)
        if match:
            found[match.group(1)] = match.group(2)
    return found


def _failure_sections(lines: list[str]) -> dict[str, str]:
    """``{test name: its failure text}`` from the FAILURES section."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in lines:
        match = re.match(r"_{3,} (\w+) _{3,}$", line)
        if match:
            current = match.group(1)
            sections[current] = []
        elif re.match(r"={3,} ", line):
            current = None
        elif current is not None:
            sections[current].append(line)
    return {name: "\n".join(body) for name, body in sections.items()}


@pytest.fixture
def run(pytester: pytest.Pytester):
    pytester.makepyfile(**{MODULE: textwrap.dedent(APP)})
    result = pytester.runpytest_subprocess(*INNER_ARGS, timeout=60)
    secrets = [s for name in PLANTED for s in _secrets(name)]
    # every secret the inner tests planted, reconstructed: nothing of them in any output
    self_scan("\n".join(result.outlines + result.errlines), secrets, "inner pytest output")
    for name in PLANTED:
        proof = pytester.path / f"proof-{name}.txt"
        expected = hashlib.sha256(_secrets(name)[0].value.encode()).hexdigest()
        assert proof.read_text() == expected, f"canary reconstruction differs for {name}"
    return result


def test_sentry_sink_end_to_end(run: pytest.RunResult) -> None:
    outcomes = _outcomes(run.outlines)
    assert outcomes == {
        "test_a_no_client_yet": "PASSED",
        "test_frame_vars": "FAILED",
        "test_breadcrumb": "FAILED",
        "test_sentry_log": "FAILED",
        "test_attachment": "FAILED",
        "test_careful_gateway": "PASSED",
        "test_z_restored": "PASSED",
    }, run.stdout.str()
    failures = _failure_sections(run.outlines)

    def leaks(name: str) -> list[str]:
        return [line.strip() for line in failures[name].splitlines() if "[LEAK]" in line]

    # a local variable of the raising function, at its frame's vars
    frame_vars = leaks("test_frame_vars")
    assert any(
        re.match(
            r"\[LEAK\] operator: sentry event exception\.values\[0\]\.stacktrace"
            r"\.frames\[\d+\]\.vars\.url  form ",
            line,
        )
        for line in frame_vars
    ), frame_vars
    # the SDK's default scrubber filtered the variables named ``token``: no leak there
    assert not any(".vars.token" in line for line in frame_vars), frame_vars
    assert "DeployError" in failures["test_frame_vars"]  # the test's own failure is kept

    assert any(
        re.match(
            r"\[LEAK\] operator: sentry event breadcrumbs\.values\[\d+\]\.message  form raw", line
        )
        for line in leaks("test_breadcrumb")
    ), leaks("test_breadcrumb")
    log_leaks = leaks("test_sentry_log")
    assert any(
        line.startswith("[LEAK] operator: sentry event logs[0].body  form raw")
        for line in log_leaks
    ), log_leaks
    # the log's url parameter holds the token too: the same root cause, on its "also in" line
    assert (
        "also in: sentry event logs[0].attributes.sentry.message.parameter.url.value"
        in failures["test_sentry_log"]
    ), failures["test_sentry_log"]
    assert any(
        line.startswith('[LEAK] operator: sentry event attachment "request.txt"  form raw')
        for line in leaks("test_attachment")
    ), leaks("test_attachment")
    # every leaky test failed for the sentry sink (the log message is no stdlib record)
    for name in ("test_frame_vars", "test_breadcrumb", "test_sentry_log", "test_attachment"):
        assert all(" sentry event " in line for line in leaks(name)), leaks(name)
        assert f"--leakcheck-seed={SEED}" in failures[name]


def test_sink_without_client_is_inactive_and_restores() -> None:
    if sentry_sdk.get_client().is_active():  # pragma: no cover - someone initialised it
        pytest.skip("a sentry client is active in this process")
    init = sentry_sdk.client._Client.__init__
    sink = SentrySink()
    sink.start()
    try:
        assert sink.inactive_reason == NO_CLIENT
        assert list(sink.collect()) == []
    finally:
        sink.stop()
    assert sentry_sdk.client._Client.__init__ is init
    assert list(sink.collect()) == []


def test_paths_of_an_envelope() -> None:
    sink = SentrySink()
    envelope = Envelope(headers={"trace": {"transaction": "POST /deploy"}})
    envelope.add_event({"extra": {"odd key": "v1", "url": "v2"}, "tags": {"a": ["v3"]}})
    envelope.add_item(
        Item(payload=PayloadRef(json={"version": 2, "items": [{"body": "v4"}]}), type="log")
    )
    envelope.add_item(Item(payload=b"\x00v5", type="attachment", filename="x.bin"))
    sink._record(envelope)
    items = list(sink.collect())
    by_text = {c.text: c for c in items if not c.fallback}
    assert by_text["POST /deploy"].path == "envelope headers.trace.transaction"
    assert by_text["v1"].path == 'extra["odd key"]'
    assert by_text["v2"].path == "extra.url"
    assert by_text["v3"].path == "tags.a[0]"
    assert by_text["v4"].path == "logs[0].body"
    assert by_text[b"\x00v5"].path == 'attachment "x.bin"'
    assert by_text["x.bin"].path == 'attachment "x.bin" item headers.filename'
    fallbacks = [c for c in items if c.fallback]
    assert {c.path for c in fallbacks} == {"event item json", "log item json"}
    assert len({c.group for c in items}) == 4  # envelope headers + one per item
    assert all(c.sink == "sentry event" and c.sink_class.value == "operator" for c in items)


def test_sinks_entry() -> None:
    assert sentry_sink.SINKS == [SentrySink]
    assert SentrySink.name == "sentry event"
