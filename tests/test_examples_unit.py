"""Unit tests of the example gateways in ``examples/``.

The careful gateway, stage by stage: envelope v1 (checked with ``leakcheck.contract``),
the code and action for each failure, truthful boundaries in the protected record, no
secret anywhere (the ``leakcheck`` fixture's verdict over the response, every log record
and the other sinks). The leaky gateway: each located mistake shown by its own symptom,
and the careful gateway clean under the very same scenario.

HTTP runs on plain respx; SSH only against a refused loopback port (the stage matrix
drives both gateways through real SSH servers). Canary values are never compared in a way
that pytest would print: assertions hold booleans, codes, field names or form names.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from types import ModuleType
from typing import Any

import httpx
import pytest
import respx
from asyncssh.logging import SSHLogger

from examples import careful_gateway, leaky_gateway
from examples.gateway_kit import (
    BOUNDARIES,
    MESSAGES,
    UNNAMED_FIELD,
    HttpAuth,
    RecordStore,
    RedactingSSHLogger,
    SSHSettings,
    is_tls_failure,
    redact_ssh_logs,
    retry_after_seconds,
)
from leakcheck.contract import check_envelope, check_request_ids
from leakcheck.doubles import Approver, Boom, Vault
from leakcheck.harness import LeakCheck

UPSTREAM = "https://api.example.test"
DEPLOYMENTS = f"{UPSTREAM}/v1/deployments"
CREATE = "create_deployment"
GET = "get_deployment"
RUN = "run_command"
VALID = {CREATE: {"repo": "web"}, GET: {"deployment_id": "dep_7"}, RUN: {"args": ["--now"]}}
REPEATABLE = {CREATE: False, GET: True, RUN: False}
KINDS = ("bearer", "api_key", "cookie", "user_name", "password", "ssh_password")

#: credentials in a header (twice, odd case), a query parameter and a cookie
AUTH = HttpAuth(
    headers=(
        ("Authorization", "Bearer {bearer}"),
        ("x-Api-KEY", "{api_key}"),
        ("Cookie", "session={cookie}"),
    ),
    query=(("api_key", "{api_key}"),),
)
#: a password in the URL userinfo
USERINFO_AUTH = HttpAuth(query=(("api_key", "{api_key}"),), userinfo=("{user_name}", "{password}"))
#: the leaky tests look at every hit, so none may fail the test by itself
SHOW_ALL = {c: ["caller", "operator"] for c in ("direct", "context", "prose")}


@dataclass
class Rig:
    gateway: Any
    records: RecordStore
    vault: Vault
    approver: Approver
    secret: dict[str, str]
    calls: list[str]


def rig(
    check: LeakCheck,
    module: ModuleType,
    *,
    auth: HttpAuth = AUTH,
    locked: bool = False,
    decline: bool = False,
    checkpoint: Callable[[str], None] | None = None,
    ssh: SSHSettings | None = None,
    upstream: str = UPSTREAM,
) -> Rig:
    secret = {kind: check.secret(kind) for kind in KINDS}
    calls: list[str] = []
    vault = Vault(secret, locked=locked, on_locked=calls.append)
    approver = Approver(decline=decline, on_decline=calls.append)
    records = RecordStore()
    gateway = module.Gateway(
        vault=vault,
        approver=approver,
        records=records,
        upstream_url=upstream,
        auth=auth,
        ssh=ssh,
        timeout=0.3,
        checkpoint=checkpoint,
    )
    return Rig(gateway, records, vault, approver, secret, calls)


def contract(envelope: dict[str, Any], stage: str, operation: str, **kw: Any) -> list[str]:
    """The contract rules ``envelope`` breaks (rule ids only: never a value)."""
    return sorted(
        v.rule
        for v in check_envelope(
            envelope, stage=stage, operation=operation, repeatable=REPEATABLE[operation], **kw
        )
    )


def direct_hits(check: LeakCheck, obj: Any) -> list[str]:
    """Ids and forms of the direct secrets found anywhere in ``obj``'s text."""
    return sorted(
        f"{f.secret_id}:{f.form}"
        for f in check.scanner.scan(repr(obj))
        if f.secret_class == "direct"
    )


def located(check: LeakCheck, *, kind: str, sink: str, path: str = "", form: str = "") -> set[str]:
    """Forms in which a ``kind`` secret was found in ``sink`` at a path containing ``path``."""
    return {
        leak.finding.form
        for leak in check.findings()
        if leak.finding.kind == kind
        and leak.sink == sink
        and path in leak.path
        and leak.finding.form.startswith(form)
    }


def forbidden(check: LeakCheck) -> list[str]:
    """Where the default policy would fail the test (secret ids, sinks, paths, forms)."""
    return sorted(
        f"{leak.finding.secret_id} in {leak.where} as {leak.finding.form}"
        for leak in check.findings()
        if not leak.allowed
    )


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def hostile_body(r: Rig, check: LeakCheck) -> dict[str, str]:
    """An upstream error body that reflects the credential and carries remote prose."""
    return {"error": f"bad token {r.secret['bearer']}", "hint": check.secret("prose")}


# --- careful: success and what goes on the wire ------------------------------------------------


def test_careful_success_sends_the_credential_only_below_the_client(leakcheck: LeakCheck) -> None:
    r = rig(leakcheck, careful_gateway)
    with respx.mock(assert_all_called=True) as mock:
        route = mock.route(method="POST", url__startswith=DEPLOYMENTS).respond(
            201, json={"id": "dep_1"}
        )
        envelope = leakcheck.expose(r.gateway.call(CREATE, {"repo": "web", "replicas": 2}))
    assert envelope["ok"] is True and envelope["result"] == {"id": "dep_1"}
    record = r.records.get(envelope["request_id"])
    assert record is not None and record["error"] is None
    assert record["boundaries"] == dict.fromkeys(BOUNDARIES, True)
    assert record["credential_id"] == "vault:api_key+bearer+cookie"
    assert direct_hits(leakcheck, record) == []
    sent = route.calls.last.request
    s = r.secret
    assert (sent.headers["authorization"] == "Bearer " + s["bearer"]) is True, "bearer not sent"
    odd = [v for k, v in sent.headers.raw if k == b"x-Api-KEY"]
    assert (odd == [s["api_key"].encode()]) is True, "custom header not sent as UTF-8"
    assert (sent.url.params.get("api_key") == s["api_key"]) is True, "query key not sent"
    assert (sent.headers["cookie"] == "session=" + s["cookie"]) is True, "cookie not sent"
    assert sent.read() == b'{"repo":"web","replicas":2}'
    # httpx's own INFO line shows the request it was handed: no credential in it
    assert forbidden(leakcheck) == []


def test_careful_userinfo_travels_as_basic_auth(leakcheck: LeakCheck) -> None:
    r = rig(leakcheck, careful_gateway, auth=USERINFO_AUTH)
    with respx.mock() as mock:
        route = mock.route(method="GET", url__startswith=DEPLOYMENTS).respond(200, json={})
        envelope = leakcheck.expose(r.gateway.call(GET, VALID[GET]))
    assert envelope["ok"] is True
    sent = route.calls.last.request
    pair = f"{r.secret['user_name']}:{r.secret['password']}".encode()
    expected = "Basic " + base64.b64encode(pair).decode()
    assert (sent.headers["authorization"] == expected) is True, "userinfo not sent as Basic"
    assert sent.url.userinfo == b""
    assert (sent.url.params.get("api_key") == r.secret["api_key"]) is True, "query key lost"


# --- careful: upstream answers ---------------------------------------------------------------

ANSWERS = [
    # (status, body kind, operation, stage, code)
    (401, "json", CREATE, "http_401", "AUTH_FAILED"),
    (403, "json", GET, "http_403", "PERMISSION_DENIED"),
    (503, "json", CREATE, "http_5xx", "OUTCOME_UNKNOWN"),
    (503, "json", GET, "http_5xx", "UPSTREAM_UNAVAILABLE"),
    (302, "redirect", CREATE, "redirect_signed_url", "UPSTREAM_INVALID_RESPONSE"),
    (302, "redirect", GET, "redirect_signed_url", "UPSTREAM_INVALID_RESPONSE"),
    (200, "html", CREATE, "html_login_page", "OUTCOME_UNKNOWN"),
    (200, "html", GET, "html_login_page", "UPSTREAM_INVALID_RESPONSE"),
    (200, "broken", GET, "malformed_json", "UPSTREAM_INVALID_RESPONSE"),
    (200, "list", CREATE, "malformed_json", "OUTCOME_UNKNOWN"),
]


@pytest.mark.parametrize("status, body, operation, stage, code", ANSWERS)
def test_careful_upstream_answers(
    leakcheck: LeakCheck, status: int, body: str, operation: str, stage: str, code: str
) -> None:
    r = rig(leakcheck, careful_gateway)
    hostile = hostile_body(r, leakcheck)
    signed = (
        f"https://{leakcheck.secret('hostname')}/dl?X-Amz-Signature={leakcheck.secret('signature')}"
    )
    reply = {
        "json": httpx.Response(status, json=hostile),
        "redirect": httpx.Response(status, headers={"Location": signed}),
        "html": httpx.Response(status, html=f"<html><p>{hostile['hint']}</p></html>"),
        "broken": httpx.Response(status, text='{"id": "dep_7", "status": "creat'),
        "list": httpx.Response(status, json=[hostile]),
    }[body]
    with respx.mock() as mock:
        route = mock.route(url__startswith=DEPLOYMENTS).mock(return_value=reply)
        envelope = leakcheck.expose(r.gateway.call(operation, VALID[operation]))
    assert route.call_count == 1, "a redirect must not be followed"
    assert envelope["code"] == code
    assert envelope["message"] == MESSAGES[code]
    assert envelope["http_status"] == status
    assert contract(envelope, stage, operation) == []
    record = r.records.get(envelope["request_id"])
    assert record is not None and record["error"]["code"] == code
    b = record["boundaries"]
    assert (b["bytes_sent"], b["response_received"], b["result_returned"]) == (True, True, False)
    assert direct_hits(leakcheck, record) == []
    assert forbidden(leakcheck) == []


@pytest.mark.parametrize(
    "header, low, high",
    [("7", 7, 7), ("999999", 3600, 3600), ("0", 1, 1), (None, 30, 30), ("later", 30, 30)],
)
def test_careful_429_retry_after_is_bounded(
    leakcheck: LeakCheck, header: str | None, low: int, high: int
) -> None:
    r = rig(leakcheck, careful_gateway)
    headers = {"Retry-After": header} if header is not None else {}
    with respx.mock() as mock:
        mock.route(url__startswith=DEPLOYMENTS).respond(
            429, headers=headers, json=hostile_body(r, leakcheck)
        )
        envelope = leakcheck.expose(r.gateway.call(CREATE, VALID[CREATE]))
    assert envelope["code"] == "RATE_LIMITED" and envelope["retryable"] is True
    assert low <= envelope["retry_after_seconds"] <= high
    assert contract(envelope, "http_429", CREATE) == []


def test_retry_after_reads_dates_and_bounds_them() -> None:
    now = datetime(2030, 1, 1, tzinfo=timezone.utc)
    stamp = now.timestamp()
    assert (
        retry_after_seconds(format_datetime(now + timedelta(seconds=90), usegmt=True), now=stamp)
        == 90
    )
    assert (
        retry_after_seconds(format_datetime(now - timedelta(days=1), usegmt=True), now=stamp) == 1
    )
    assert (
        retry_after_seconds(format_datetime(now + timedelta(days=9), usegmt=True), now=stamp)
        == 3600
    )
    assert retry_after_seconds("1e9") is None and retry_after_seconds(None) is None
    assert retry_after_seconds(" 12 ") == 12


# --- careful: transport failures ---------------------------------------------------------------


def _tls_error(request: httpx.Request) -> None:
    # what httpcore raises: the verifier's words in the message, the SSL error as cause
    # (respx re-raises side effects with a new cause and context: only the words survive)
    words = "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get local issuer"
    try:
        raise ssl.SSLCertVerificationError(1, words)
    except ssl.SSLError as exc:
        raise httpx.ConnectError(words, request=request) from exc


def test_tls_failure_is_found_in_the_chain_or_the_words() -> None:
    def chained(link: str) -> httpx.ConnectError:
        error = httpx.ConnectError("connect failed")
        setattr(error, link, ssl.SSLCertVerificationError(1, "x"))
        return error

    assert is_tls_failure(chained("__cause__")) and is_tls_failure(chained("__context__"))
    wrapped = httpx.ConnectError("outer")
    wrapped.__cause__ = RuntimeError("wrapper")
    wrapped.__context__ = chained("__cause__")
    assert is_tls_failure(wrapped)
    assert is_tls_failure(httpx.ConnectError("[SSL: CERTIFICATE_VERIFY_FAILED] certificate"))
    assert not is_tls_failure(httpx.ConnectError("[Errno 111] Connection refused"))
    looped = httpx.ConnectError("loop")
    looped.__cause__ = looped
    assert not is_tls_failure(looped)


def _raising(cls: type[httpx.TransportError]) -> Callable[[httpx.Request], None]:
    def side_effect(request: httpx.Request) -> None:
        # a library message with the full URL, the way real ones look
        raise cls(f"{cls.__name__} on {request.method} {request.url}", request=request)

    return side_effect


FAILURES = [
    # (side effect, operation, stage, code, bytes_sent)
    (_raising(httpx.ReadTimeout), CREATE, "timeout_after_send", "OUTCOME_UNKNOWN", True),
    (_raising(httpx.ReadTimeout), GET, "timeout_after_send", "UPSTREAM_UNAVAILABLE", True),
    (_raising(httpx.RemoteProtocolError), CREATE, "reset_after_send", "OUTCOME_UNKNOWN", True),
    (_raising(httpx.ReadError), GET, "reset_after_send", "UPSTREAM_UNAVAILABLE", True),
    (_raising(httpx.ConnectTimeout), CREATE, "timeout_before_send", "UPSTREAM_UNREACHABLE", False),
    (_raising(httpx.ConnectError), GET, "dns_failure", "UPSTREAM_UNREACHABLE", False),
    (_tls_error, CREATE, "tls_untrusted_ca", "REMOTE_UNVERIFIED", False),
]


@pytest.mark.parametrize("effect, operation, stage, code, sent", FAILURES)
def test_careful_transport_failures(
    leakcheck: LeakCheck,
    effect: Callable[[httpx.Request], None],
    operation: str,
    stage: str,
    code: str,
    sent: bool,
) -> None:
    r = rig(leakcheck, careful_gateway, auth=USERINFO_AUTH)
    with respx.mock() as mock:
        mock.route(url__startswith=DEPLOYMENTS).mock(side_effect=effect)
        envelope = leakcheck.expose(r.gateway.call(operation, VALID[operation]))
    assert envelope["code"] == code and envelope["message"] == MESSAGES[code]
    assert "http_status" not in envelope
    assert contract(envelope, stage, operation) == []
    record = r.records.get(envelope["request_id"])
    assert record is not None
    b = record["boundaries"]
    assert b["connection_started"] is True
    assert (b["bytes_sent"], b["response_received"]) == (sent, False)
    assert forbidden(leakcheck) == []


# --- careful: gateway-side stages --------------------------------------------------------------


def test_careful_invalid_input_names_fields_only(leakcheck: LeakCheck) -> None:
    r = rig(leakcheck, careful_gateway)
    hostile = {
        "repo": 42,
        "replicas": "many",
        "options": {"notes": [{"text": f"token {r.secret['bearer']}"}]},
        "source_url": f"https://{leakcheck.secret('hostname')}/a.tgz?sig={leakcheck.secret('signature')}",
    }
    with respx.mock(assert_all_called=False) as mock:
        route = mock.route(url__startswith=UPSTREAM).respond(200, json={})
        envelope = leakcheck.expose(r.gateway.call(CREATE, hostile))
    assert envelope["code"] == "INVALID_INPUT" and envelope["action"] == "repair_input"
    assert envelope["invalid_fields"] == ["replicas", "repo"]
    assert contract(envelope, "invalid_input", CREATE, agent_input=hostile) == []
    assert not route.called and r.vault.requests == [] and r.approver.asked == []
    record = r.records.get(envelope["request_id"])
    assert record is not None and record["boundaries"] == dict.fromkeys(BOUNDARIES, False)
    assert forbidden(leakcheck) == []


def test_careful_invalid_input_unknown_and_missing_fields(leakcheck: LeakCheck) -> None:
    r = rig(leakcheck, careful_gateway)
    as_key = r.secret["bearer"]
    assert r.gateway.call(GET, {})["invalid_fields"] == ["deployment_id"]
    envelope = r.gateway.call(GET, {"deployment_id": "dep_7", "colour": "red", as_key: 1})
    leakcheck.expose(envelope)
    # a key that reads like a value is not named back
    assert envelope["invalid_fields"] == sorted(["colour", UNNAMED_FIELD])
    assert r.gateway.call(CREATE, {"repo": "web", "replicas": True})["invalid_fields"] == [
        "replicas"
    ]
    assert r.gateway.call("drop_database", {})["invalid_fields"] == ["operation"]
    assert forbidden(leakcheck) == []


def test_careful_vault_locked(leakcheck: LeakCheck) -> None:
    r = rig(leakcheck, careful_gateway, locked=True)
    with respx.mock(assert_all_called=False) as mock:
        route = mock.route(url__startswith=UPSTREAM).respond(200, json={})
        envelope = leakcheck.expose(r.gateway.call(CREATE, VALID[CREATE]))
    assert envelope["code"] == "VAULT_LOCKED" and envelope["action"] == "stop_and_report"
    assert contract(envelope, "vault_locked", CREATE) == []
    assert r.calls and r.approver.asked == [] and not route.called
    record = r.records.get(envelope["request_id"])
    assert record is not None and record["credential_id"] is None
    b = record["boundaries"]
    assert (b["validated"], b["credential_selected"], b["connection_started"]) == (
        True,
        False,
        False,
    )


def test_careful_approval_declined(leakcheck: LeakCheck) -> None:
    r = rig(leakcheck, careful_gateway, decline=True)
    with respx.mock(assert_all_called=False) as mock:
        route = mock.route(url__startswith=UPSTREAM).respond(200, json={})
        envelope = leakcheck.expose(r.gateway.call(CREATE, VALID[CREATE]))
    assert envelope["code"] == "USER_DENIED"
    assert envelope["message"] == "The requested action was not approved and did not run."
    assert contract(envelope, "approval_declined", CREATE) == []
    assert r.approver.asked == [CREATE] and not route.called
    record = r.records.get(envelope["request_id"])
    assert record is not None
    b = record["boundaries"]
    assert (b["credential_selected"], b["authorized"], b["connection_started"]) == (
        True,
        False,
        False,
    )


def test_careful_gateway_bug_is_an_internal_error(leakcheck: LeakCheck) -> None:
    raised: list[str] = []
    boom = Boom(leakcheck.secret, on_raise=raised.append)  # its message holds a token and host
    r = rig(leakcheck, careful_gateway, checkpoint=boom)
    with respx.mock(assert_all_called=False) as mock:
        route = mock.route(url__startswith=UPSTREAM).respond(200, json={})
        envelope = leakcheck.expose(r.gateway.call(CREATE, VALID[CREATE]))
    assert raised and not route.called
    assert (
        envelope["code"] == "INTERNAL_ERROR" and envelope["message"] == MESSAGES["INTERNAL_ERROR"]
    )
    assert contract(envelope, "gateway_exception", CREATE) == []
    record = r.records.get(envelope["request_id"])
    assert record is not None and "InternalError" in record["error"]["detail"]
    assert record["boundaries"]["connection_started"] is False
    assert direct_hits(leakcheck, record) == []
    assert forbidden(leakcheck) == []


def test_careful_bug_after_the_response_keeps_the_boundaries_truthful(
    leakcheck: LeakCheck,
) -> None:
    def checkpoint(name: str) -> None:
        if name == "after_response":
            raise KeyError(leakcheck.secret("bearer"))

    r = rig(leakcheck, careful_gateway, checkpoint=checkpoint)
    with respx.mock() as mock:
        mock.route(url__startswith=DEPLOYMENTS).respond(200, json={})
        envelope = leakcheck.expose(r.gateway.call(CREATE, VALID[CREATE]))
    assert envelope["code"] == "INTERNAL_ERROR"
    record = r.records.get(envelope["request_id"])
    assert record is not None
    b = record["boundaries"]
    assert (b["bytes_sent"], b["response_received"], b["result_returned"]) == (True, True, False)
    assert forbidden(leakcheck) == []


def test_careful_logs_the_host_for_the_operator(
    leakcheck: LeakCheck, caplog: pytest.LogCaptureFixture
) -> None:
    r = rig(leakcheck, careful_gateway)
    with caplog.at_level(logging.INFO, logger="examples.careful"), respx.mock() as mock:
        mock.route(url__startswith=DEPLOYMENTS).respond(401, json=hostile_body(r, leakcheck))
        envelope = leakcheck.expose(r.gateway.call(CREATE, VALID[CREATE]))
    lines = [rec.getMessage() for rec in caplog.records if rec.name == "examples.careful"]
    assert any(envelope["request_id"] in line and "HTTP 401" in line for line in lines)
    assert any("api.example.test" in line for line in lines)
    assert forbidden(leakcheck) == []


# --- careful: SSH --------------------------------------------------------------------------------


def _ssh(r_secret: dict[str, str], check: LeakCheck) -> SSHSettings:
    return SSHSettings(
        host="127.0.0.1",
        port=closed_port(),
        username=r_secret["user_name"],
        known_hosts=os.devnull,
        timeout=0.3,
        command_args=("--token", r_secret["bearer"]),
        env={"API_TOKEN": r_secret["api_key"]},
    )


def _ssh_rig(check: LeakCheck, module: ModuleType) -> Rig:
    r = rig(check, module)
    r.gateway.ssh = _ssh(r.secret, check)
    return r


def test_careful_ssh_refused_is_unreachable(leakcheck: LeakCheck) -> None:
    r = _ssh_rig(leakcheck, careful_gateway)
    started = time.perf_counter()
    envelope = leakcheck.expose(r.gateway.call(RUN, {"args": ["--now"], "repo": "web"}))
    assert time.perf_counter() - started < 0.5
    assert envelope["code"] == "UPSTREAM_UNREACHABLE" and envelope["retryable"] is True
    assert contract(envelope, "ssh_connection_refused", RUN) == []
    record = r.records.get(envelope["request_id"])
    assert record is not None and record["credential_id"] == "vault:ssh_password"
    b = record["boundaries"]
    assert (b["connection_started"], b["bytes_sent"], b["response_received"]) == (
        True,
        False,
        False,
    )
    assert forbidden(leakcheck) == []


def test_careful_ssh_from_inside_a_running_event_loop(leakcheck: LeakCheck) -> None:
    r = _ssh_rig(leakcheck, careful_gateway)

    async def agent() -> dict[str, Any]:
        return r.gateway.call(RUN, {})  # a sync tool called by an async agent framework

    envelope = leakcheck.expose(asyncio.run(agent()))
    assert envelope["code"] == "UPSTREAM_UNREACHABLE"


def test_careful_ssh_without_settings_is_internal(leakcheck: LeakCheck) -> None:
    r = rig(leakcheck, careful_gateway)
    envelope = leakcheck.expose(r.gateway.call(RUN, {}))
    assert envelope["code"] == "INTERNAL_ERROR"


def test_asyncssh_records_are_redacted_before_they_exist(caplog: pytest.LogCaptureFixture) -> None:
    class Conn:
        _logger = SSHLogger(context="conn=1")

    conn = Conn()
    redact_ssh_logs(conn)
    assert isinstance(conn._logger, RedactingSSHLogger)
    channel = conn._logger.get_child(context="chan=0")
    with caplog.at_level(logging.DEBUG, logger="asyncssh"):
        channel.info("  Command: %s", "deploy --token hunter2-not-a-canary")
        channel.debug1("  Env: %s=%s", "API_TOKEN", "hunter2-not-a-canary")
        channel.info("Received exit status %d", 2)
    messages = [rec.getMessage() for rec in caplog.records]
    assert not any("hunter2" in m for m in messages)
    assert "[conn=1, chan=0]   Command: [redacted]" in messages
    assert "[conn=1, chan=0] Received exit status 2" in messages
    assert careful_gateway.Gateway.redact_library_logs is True
    assert leaky_gateway.Gateway.redact_library_logs is False


# --- request ids and the record store ------------------------------------------------------------


@pytest.mark.leakcheck(
    skip_sinks={"tool response": "request ids only: each gateway's replies are judged elsewhere"}
)
def test_request_ids(leakcheck: LeakCheck) -> None:
    careful = rig(leakcheck, careful_gateway).gateway
    leaky = rig(leakcheck, leaky_gateway).gateway
    careful_ids = [careful.call(GET, {})["request_id"] for _ in range(6)]
    leaky_ids = [leaky.call(GET, {})["request_id"] for _ in range(6)]
    assert check_request_ids(careful_ids, forbidden_words=["api.example.test"]) == []
    assert all(i.startswith("req_") and len(i) == 26 for i in careful_ids)
    rules = {v.rule for v in check_request_ids(leaky_ids)}
    assert "request-id-sequential" in rules


def test_record_store_hands_out_copies() -> None:
    store = RecordStore()
    store.put({"request_id": "req_1", "boundaries": {"validated": True}})
    copy = store.get("req_1")
    assert copy is not None
    copy["boundaries"]["validated"] = False
    assert store.get("req_1") == {"request_id": "req_1", "boundaries": {"validated": True}}
    assert store.get("req_2") is None
    assert repr(store) == "RecordStore(1 records)" and len(store) == 1


def test_settings_reprs_show_no_values() -> None:
    ssh = SSHSettings("h", 22, "u", "/k", command_args=("--token", "t0k"), env={"A": "v4l"})
    assert repr(ssh) == "SSHSettings(args=2, env=1)"
    assert repr(AUTH) == "HttpAuth(kinds=['bearer', 'api_key', 'cookie'])"


# --- the leaky gateway: each mistake, located; the careful one clean in the same scenario --------


def s_raw_exception(check: LeakCheck, module: ModuleType, auth: HttpAuth = AUTH) -> dict[str, Any]:
    r = rig(check, module, auth=auth)
    with respx.mock() as mock:
        mock.route(url__startswith=DEPLOYMENTS).mock(
            side_effect=httpx.ConnectError("[Errno 111] Connection refused")
        )
        return check.expose(r.gateway.call(GET, VALID[GET]))


def s_raw_exception_userinfo(check: LeakCheck, module: ModuleType) -> dict[str, Any]:
    return s_raw_exception(check, module, USERINFO_AUTH)


def s_echo_input(check: LeakCheck, module: ModuleType) -> dict[str, Any]:
    r = rig(check, module)
    bad = {"repo": 42, "options": {"notes": [{"text": f"token {r.secret['bearer']}"}]}}
    return check.expose(r.gateway.call(CREATE, bad))


def s_upstream_text(check: LeakCheck, module: ModuleType) -> dict[str, Any]:
    r = rig(check, module)
    with respx.mock() as mock:
        mock.route(url__startswith=DEPLOYMENTS).respond(403, json=hostile_body(r, check))
        return check.expose(r.gateway.call(GET, VALID[GET]))


def s_token_tail(check: LeakCheck, module: ModuleType) -> dict[str, Any]:
    r = rig(check, module)
    with respx.mock() as mock:
        mock.route(url__startswith=DEPLOYMENTS).respond(401, json={"error": "invalid_token"})
        return check.expose(r.gateway.call(CREATE, VALID[CREATE]))


def s_flattened_timeout(check: LeakCheck, module: ModuleType) -> dict[str, Any]:
    r = rig(check, module, auth=HttpAuth(headers=(("Authorization", "Bearer {bearer}"),)))
    with respx.mock() as mock:
        mock.route(url__startswith=DEPLOYMENTS).mock(side_effect=httpx.ReadTimeout("timed out"))
        return check.expose(r.gateway.call(CREATE, VALID[CREATE]))


def s_denial(check: LeakCheck, module: ModuleType) -> dict[str, Any]:
    return check.expose(rig(check, module, decline=True).gateway.call(CREATE, VALID[CREATE]))


def s_ssh_command_line(check: LeakCheck, module: ModuleType) -> dict[str, Any]:
    return check.expose(_ssh_rig(check, module).gateway.call(RUN, {"args": ["--now"]}))


def s_debug_headers(check: LeakCheck, module: ModuleType) -> dict[str, Any]:
    r = rig(check, module)
    with respx.mock() as mock:
        mock.route(url__startswith=DEPLOYMENTS).respond(200, json={"id": "dep_7"})
        return check.expose(r.gateway.call(GET, VALID[GET]))


SCENARIOS: dict[str, Callable[[LeakCheck, ModuleType], dict[str, Any]]] = {
    "raw_exception": s_raw_exception,
    "raw_exception_userinfo": s_raw_exception_userinfo,
    "echo_input": s_echo_input,
    "upstream_text": s_upstream_text,
    "token_tail": s_token_tail,
    "flattened_timeout": s_flattened_timeout,
    "denial": s_denial,
    "ssh_command_line": s_ssh_command_line,
    "debug_headers": s_debug_headers,
}

# (scenario, secret kind, sink, path part, form prefix): where the leaky gateway's mistake shows
LOCATED = [
    ("raw_exception", "api_key", "tool response", "$.message", ""),
    ("raw_exception_userinfo", "password", "tool response", "$.message", ""),
    ("raw_exception_userinfo", "user_name", "tool response", "$.message", ""),
    ("echo_input", "bearer", "tool response", "$.message", ""),
    ("upstream_text", "bearer", "tool response", "$.message", ""),
    ("upstream_text", "prose", "tool response", "$.message", ""),
    ("token_tail", "bearer", "tool response", "$.message", "masked-tail"),
    ("ssh_command_line", "bearer", "tool response", "$.message", ""),
    ("ssh_command_line", "api_key", "tool response", "$.message", ""),
    ("ssh_command_line", "user_name", "tool response", "$.message", ""),
    ("debug_headers", "bearer", "log record", "examples.leaky DEBUG", ""),
    ("debug_headers", "cookie", "log record", "examples.leaky DEBUG", ""),
    ("debug_headers", "api_key", "log record", "httpx INFO", ""),
]


@pytest.mark.leakcheck(allow=SHOW_ALL)
@pytest.mark.parametrize("scenario, kind, sink, path, form", LOCATED)
def test_leaky_mistake_is_located(
    leakcheck: LeakCheck, scenario: str, kind: str, sink: str, path: str, form: str
) -> None:
    SCENARIOS[scenario](leakcheck, leaky_gateway)
    found = located(leakcheck, kind=kind, sink=sink, path=path, form=form)
    assert found, f"the leaky gateway's {scenario} mistake did not show a {kind} in {sink} {path}"


@pytest.mark.leakcheck(allow=SHOW_ALL)
@pytest.mark.parametrize(
    "scenario, stage, operation, rules",
    [
        # the mistakes that change the decision, not only the words
        ("flattened_timeout", "timeout_after_send", CREATE, ["expected-action", "expected-code"]),
        ("denial", "approval_declined", CREATE, ["expected-code"]),
        # the others keep the contract: the leak is the only thing wrong
        ("token_tail", "http_401", CREATE, []),
        ("upstream_text", "http_403", GET, []),
        ("raw_exception", "dns_failure", GET, []),
        ("ssh_command_line", "ssh_connection_refused", RUN, []),
    ],
)
def test_leaky_envelopes_keep_the_shape(
    leakcheck: LeakCheck, scenario: str, stage: str, operation: str, rules: list[str]
) -> None:
    envelope = SCENARIOS[scenario](leakcheck, leaky_gateway)
    assert contract(envelope, stage, operation) == rules


@pytest.mark.leakcheck(allow=SHOW_ALL)
def test_leaky_echo_input_keeps_the_shape(leakcheck: LeakCheck) -> None:
    envelope = s_echo_input(leakcheck, leaky_gateway)
    bad = {"repo": 42, "options": {}}
    assert contract(envelope, "invalid_input", CREATE, agent_input=bad) == []
    assert envelope["invalid_fields"] == ["repo"]


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_careful_is_clean_where_the_leaky_one_leaks(leakcheck: LeakCheck, scenario: str) -> None:
    envelope = SCENARIOS[scenario](leakcheck, careful_gateway)
    assert forbidden(leakcheck) == []
    assert envelope["ok"] is True or envelope["message"] == MESSAGES[envelope["code"]]
