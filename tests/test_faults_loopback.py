"""The loopback HTTP/HTTPS fault transport, against the real client libraries.

Every HTTP stage x every client (httpx and httpx2, each sync and async, requests, urllib3,
aiohttp): the call fails the way the stage says (the client's own exception family, the TLS
verify code, the errno, or the HTTP status) and the fault holds evidence that carries no
secret; no server thread outlives the fault. A fault nothing triggered, or one whose stage
did not really happen (TLS verification off, a connection that got into the full accept
queue), is never reached. Through the pytest plugin: an untriggered loopback fault fails its
test as a harness error, and a wrapper that returns ``{"error": str(exc)}`` from requests
leaks the API key of the query at DNS failure and refused connection while a careful one
passes. The exception-text corpus on disk is this machine's, masked.
"""

from __future__ import annotations

import difflib
import errno
import json
import os
import socket
import ssl
import threading
import time
from pathlib import Path
from typing import Any

import aiohttp
import aiohttp.connector
import httpx
import httpx2
import pytest
import requests
import urllib3
from conftest import QUIET_INNER_ARGS, assert_inner_run_safe, inner_outcomes, self_scan
from leakcheck.plugins import loopback_http
from leakcheck.plugins.loopback_http import DNS_FAILURE_HOST, LoopbackFault, LoopbackOptionError

from leakcheck import CanaryFactory
from leakcheck.faults import StageNotReached, UnknownTransportError, fault_factories, make_fault
from leakcheck.harness import LeakCheck
from leakcheck.stages import HTTP, STAGES
from recorders import http as lb
from recorders.http import CLIENTS, CORPUS_CASES, CORPUS_SEED, CorpusCase, Outcome, call_client

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / lb.CORPUS_PATH
REGENERATE = ".venv/bin/python scripts/record_http_exceptions.py"
TIMEOUT = 0.15
#: The client timeout of a case that does not wait for one: the longest the suite allows,
#: so that a loaded machine (CI under -n 2) does not turn a slow connect into a timeout
#: (an httpx2 async client once saw ConnectTimeout at 0.15 s where it had to see the
#: reset). A timeout stage waits TIMEOUT: short, since it is spent in full.
PATIENT = 0.5
HTTP_STAGES = [name for name, stage in STAGES.items() if stage.transport == HTTP]

# --- what each stage looks like from each client ----------------------------------------------

_RESET = {
    "httpx": (httpx.ReadError, httpx.RemoteProtocolError),
    "httpx-async": (httpx.ReadError, httpx.RemoteProtocolError),
    "httpx2": (httpx2.ReadError, httpx2.RemoteProtocolError),
    "httpx2-async": (httpx2.ReadError, httpx2.RemoteProtocolError),
    "requests": requests.exceptions.ConnectionError,
    "urllib3": urllib3.exceptions.ProtocolError,
    "aiohttp": (aiohttp.ClientOSError, aiohttp.ServerDisconnectedError),
}
_TLS = {
    "httpx": httpx.ConnectError,
    "httpx-async": httpx.ConnectError,
    "httpx2": httpx2.ConnectError,
    "httpx2-async": httpx2.ConnectError,
    "requests": requests.exceptions.SSLError,
    "urllib3": urllib3.exceptions.SSLError,
    "aiohttp": aiohttp.ClientConnectorCertificateError,
}
#: stage -> client -> the exception family (urllib3's MaxRetryError: its ``reason``)
FAILURES: dict[str, dict[str, Any]] = {
    "dns_failure": {
        "httpx": httpx.ConnectError,
        "httpx-async": httpx.ConnectError,
        "httpx2": httpx2.ConnectError,
        "httpx2-async": httpx2.ConnectError,
        "requests": requests.exceptions.ConnectionError,
        "urllib3": urllib3.exceptions.NameResolutionError,
        "aiohttp": aiohttp.ClientConnectorDNSError,
    },
    "connection_refused": {
        "httpx": httpx.ConnectError,
        "httpx-async": httpx.ConnectError,
        "httpx2": httpx2.ConnectError,
        "httpx2-async": httpx2.ConnectError,
        "requests": requests.exceptions.ConnectionError,
        "urllib3": urllib3.exceptions.NewConnectionError,
        "aiohttp": aiohttp.ClientConnectorError,
    },
    "tls_hostname_mismatch": _TLS,
    "tls_untrusted_ca": _TLS,
    "timeout_before_send": {
        "httpx": httpx.ConnectTimeout,
        "httpx-async": httpx.ConnectTimeout,
        "httpx2": httpx2.ConnectTimeout,
        "httpx2-async": httpx2.ConnectTimeout,
        "requests": requests.exceptions.ConnectTimeout,
        "urllib3": urllib3.exceptions.ConnectTimeoutError,
        "aiohttp": aiohttp.ConnectionTimeoutError,
    },
    "timeout_after_send": {
        "httpx": httpx.ReadTimeout,
        "httpx-async": httpx.ReadTimeout,
        "httpx2": httpx2.ReadTimeout,
        "httpx2-async": httpx2.ReadTimeout,
        "requests": requests.exceptions.ReadTimeout,
        "urllib3": urllib3.exceptions.ReadTimeoutError,
        "aiohttp": aiohttp.SocketTimeoutError,
    },
    "reset_after_send": _RESET,
    "truncated_body": {
        "httpx": httpx.RemoteProtocolError,
        "httpx-async": httpx.RemoteProtocolError,
        "httpx2": httpx2.RemoteProtocolError,
        "httpx2-async": httpx2.RemoteProtocolError,
        "requests": requests.exceptions.ChunkedEncodingError,
        "urllib3": urllib3.exceptions.ProtocolError,
        "aiohttp": aiohttp.ClientPayloadError,
    },
}
#: raise_for_status() of an HTTP error status
STATUS_ERRORS = {
    "httpx": httpx.HTTPStatusError,
    "httpx-async": httpx.HTTPStatusError,
    "httpx2": httpx2.HTTPStatusError,
    "httpx2-async": httpx2.HTTPStatusError,
    "requests": requests.exceptions.HTTPError,
    "aiohttp": aiohttp.ClientResponseError,
}
#: the TLS verify code each TLS stage must produce (not any TLS failure)
VERIFY_CODES = {
    "tls_hostname_mismatch": {62, 64},  # X509_V_ERR_HOSTNAME_MISMATCH, _IP_ADDRESS_MISMATCH
    "tls_untrusted_ca": {2, 19, 20},  # unable to get (local) issuer, self-signed in chain
}
#: stages whose failure carries this errno in its chain, over plain HTTP (TLS hides it)
ERRNOS = {"connection_refused": errno.ECONNREFUSED, "reset_after_send": errno.ECONNRESET}


def _chain(exc: BaseException | None) -> list[BaseException]:
    """``exc``, its causes and contexts, and the exceptions libraries keep in attributes
    (urllib3 ``reason``, aiohttp ``os_error``/``certificate_error``) or in ``args``."""
    seen: set[int] = set()
    todo: list[Any] = [exc]
    out: list[BaseException] = []
    while todo:
        item = todo.pop()
        if not isinstance(item, BaseException) or id(item) in seen:
            continue
        seen.add(id(item))
        out.append(item)
        todo += [item.__cause__, item.__context__, *item.args]
        todo += [getattr(item, a, None) for a in ("reason", "os_error", "certificate_error")]
    return out


def _failure(check: LeakCheck, ok: bool, what: str, outcome: Outcome) -> None:
    """Fail with a masked description of what the client saw."""
    if ok:
        return
    seen = lb.outcome_text(outcome) if outcome.error is None else lb.exception_text(outcome.error)
    pytest.fail(f"{what}; the client saw: {check.mask(seen)}", pytrace=False)


def _family(check: LeakCheck, case: CorpusCase, client: str, outcome: Outcome) -> None:
    stage = STAGES[case.stage]
    if case.stage in FAILURES:
        expected = FAILURES[case.stage][client]
        if case.stage == "reset_after_send" and case.options.get("disconnect"):
            expected = {
                "httpx": httpx.RemoteProtocolError,
                "httpx-async": httpx.RemoteProtocolError,
                "httpx2": httpx2.RemoteProtocolError,
                "httpx2-async": httpx2.RemoteProtocolError,
                "aiohttp": aiohttp.ServerDisconnectedError,
            }.get(client, expected)
        error = outcome.error
        if isinstance(error, urllib3.exceptions.MaxRetryError):
            error = error.reason
        _failure(check, isinstance(error, expected), f"expected {expected}", outcome)
        if expected is requests.exceptions.ConnectionError:  # not its timeout subclasses
            _failure(check, not isinstance(error, requests.Timeout), "not a timeout", outcome)
        chain = _chain(outcome.error)
        if case.stage in VERIFY_CODES:
            codes = {getattr(e, "verify_code", None) for e in chain}
            _failure(check, bool(codes & VERIFY_CODES[case.stage]), f"verify code {codes}", outcome)
        wanted = ERRNOS.get(case.stage)
        if wanted and not case.options:
            errnos = {getattr(e, "errno", None) for e in chain}
            _failure(check, wanted in errnos, f"errno {errno.errorcode[wanted]}", outcome)
        return
    # an answered stage: a response with the stage's status
    _failure(check, outcome.error is None, "expected a response", outcome)
    _failure(check, outcome.status == stage.http_status, f"status {stage.http_status}", outcome)
    if stage.http_status is not None and stage.http_status >= 400 and client in STATUS_ERRORS:
        raised = outcome.status_error
        _failure(check, isinstance(raised, STATUS_ERRORS[client]), "raise_for_status", outcome)
    if case.stage in ("malformed_json", "html_login_page"):
        raised = outcome.json_error
        decode = isinstance(raised, ValueError | aiohttp.ContentTypeError)
        _failure(check, decode, "the JSON decoding must fail", outcome)
    if case.stage == "redirect_signed_url":
        location = outcome.header("Location") or ""
        _failure(check, location.startswith("https://"), "a Location header", outcome)


def _proof(fault: LoopbackFault, case: CorpusCase) -> None:
    """The counter behind the evidence, per kind of stage."""
    name = case.stage
    if name in ("connection_refused", "timeout_before_send"):
        assert fault.connects >= 1 and fault.requests == 0
    elif name == "dns_failure":
        assert fault.failed_lookups >= 1 and fault.connects == 0
    elif name in lb.TLS_STAGES:
        assert fault.client_hellos >= 1 and fault.requests == 0 and not fault.tls_completed
        assert fault.tls_failures == fault.client_hellos  # every handshake failed
    else:
        assert fault.requests == 1


def _check(request: pytest.FixtureRequest) -> LeakCheck:
    return LeakCheck(seed="loopback-tests", namespace=request.node.nodeid, sinks=[])


MATRIX = [
    pytest.param(client, case, id=f"{client}-{case.key}")
    for case in CORPUS_CASES
    for client in CLIENTS
]


@pytest.mark.parametrize(("client", "case"), MATRIX)
def test_stage_fails_the_way_it_says(client: str, case: CorpusCase) -> None:
    # one namespace for the whole matrix: the same canaries, so one scanner (built once)
    # checks every test's evidence
    check = LeakCheck(seed="loopback-tests", namespace="matrix", sinks=[])
    placed = check.place("query-api-key")  # bearer in Authorization, api_key in the query
    threads = threading.active_count()
    fault = LoopbackFault(
        case.stage, placed=placed, secret=check.secret,
        timeout=TIMEOUT if case.stage.startswith("timeout_") else PATIENT, **dict(case.options),
    )  # fmt: skip
    with fault:
        outcome = call_client(client, fault, placed)
        fired = fault.fired
    _family(check, case, client, outcome)
    assert fired, check.mask(fault.not_reached_reason())
    _proof(fault, case)
    evidence = "\n".join(fault.evidence)
    self_scan(evidence + fault.describe() + fault.url, check.secrets, "evidence")
    assert "?" not in evidence and "Bearer" not in evidence
    assert threading.active_count() == threads, "a loopback thread outlived stop()"


def test_the_matrix_covers_every_http_stage() -> None:
    assert {case.stage for case in CORPUS_CASES} == set(HTTP_STAGES)
    assert set(loopback_http.SUPPORTED) == set(HTTP_STAGES)
    assert len({case.key for case in CORPUS_CASES}) == len(CORPUS_CASES)
    assert set(FAILURES) | loopback_http.ANSWERED == set(HTTP_STAGES)


# --- an untriggered fault --------------------------------------------------------------------


@pytest.mark.parametrize("stage", HTTP_STAGES)
def test_untriggered_fault_is_never_reached(request: pytest.FixtureRequest, stage: str) -> None:
    check = _check(request)
    threads = threading.active_count()
    fault = check.force(stage, via="loopback", placement="query-api-key", timeout=TIMEOUT)
    assert isinstance(fault, LoopbackFault)
    assert not fault.fired
    with pytest.raises(StageNotReached) as info:
        fault.assert_fired()
    message = str(info.value)
    assert f"stage {stage} via loopback" in message and "fault.url" in message
    self_scan(message, check.secrets, "harness error")
    assert check.harness_errors()
    check.stop()
    assert threading.active_count() == threads


def test_untriggered_loopback_fault_fails_its_test(pytester: pytest.Pytester) -> None:
    """Through the plugin: a harness error, never a pass; and the leaky wrapper around
    requests is caught at DNS failure and refused connection while the careful one passes."""
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest(*QUIET_INNER_ARGS, "-rA", "--leakcheck-seed=loopback-inner")
    outcomes = inner_outcomes(result)
    assert outcomes == {
        "test_untriggered": "FAILED",
        "test_leaky[dns_failure]": "FAILED",
        "test_leaky[connection_refused]": "FAILED",
        "test_careful[dns_failure]": "PASSED",
        "test_careful[connection_refused]": "PASSED",
    }, outcomes
    out = result.stdout.str()
    assert "harness error: stage timeout_after_send via loopback (http://127.0.0.1:" in out
    assert "read no request: point the gateway at fault.url" in out
    assert out.count("[LEAK] caller: tool response") >= 2
    secrets, ids = [], []
    for test in ("test_leaky[dns_failure]", "test_leaky[connection_refused]"):
        factory = CanaryFactory("loopback-inner", namespace=f"test_inner.py::{test}")
        secrets.append(factory.secret("api_key"))
        secrets.append(factory.secret("bearer"))
        ids += [test, f"bearer-{test}"]
    assert_inner_run_safe(pytester, result, secrets, ids)


INNER = """
import hashlib
from pathlib import Path

import pytest
import requests


def proof(name, secret):
    Path(f"proof-{name}.txt").write_text(hashlib.sha256(secret.encode()).hexdigest())


def call(url, api_key, bearer):
    return requests.post(
        url + "/v1/deployments",
        params={"api_key": api_key},
        headers={"Authorization": f"Bearer {bearer}"},
        timeout=0.3,
    )


def leaky(url, api_key, bearer):
    try:
        return {"ok": call(url, api_key, bearer).ok}
    except requests.RequestException as exc:
        return {"error": str(exc)}


def careful(url, api_key, bearer):
    try:
        return {"ok": call(url, api_key, bearer).ok}
    except requests.ConnectionError:
        return {"ok": False, "code": "UPSTREAM_UNREACHABLE", "retryable": True}


def test_untriggered(leakcheck):
    leakcheck.force("timeout_after_send", via="loopback", timeout=0.15)


@pytest.mark.parametrize("stage", ["dns_failure", "connection_refused"])
def test_leaky(leakcheck, request, stage):
    placed = leakcheck.place("query-api-key")
    fault = leakcheck.force(stage, via="loopback", placement=placed)
    proof(request.node.name, placed.secrets["api_key"])
    proof("bearer-" + request.node.name, placed.secrets["bearer"])
    leakcheck.expose(leaky(fault.url, placed.secrets["api_key"], placed.secrets["bearer"]))


@pytest.mark.parametrize("stage", ["dns_failure", "connection_refused"])
def test_careful(leakcheck, stage):
    placed = leakcheck.place("query-api-key")
    fault = leakcheck.force(stage, via="loopback", placement=placed)
    result = careful(fault.url, placed.secrets["api_key"], placed.secrets["bearer"])
    assert result["code"] == "UPSTREAM_UNREACHABLE"
    leakcheck.expose(result)
"""


@pytest.mark.parametrize("stage", ["dns_failure", "connection_refused"])
def test_leaky_wrapper_is_found_and_careful_one_is_clean(
    request: pytest.FixtureRequest, stage: str
) -> None:
    def gateway(url: str, key: str, careful: bool) -> dict[str, Any]:
        try:
            requests.get(url + "/v1/deployments", params={"api_key": key}, timeout=TIMEOUT)
            return {"ok": True}
        except requests.RequestException as exc:
            if careful:
                return {"ok": False, "code": "UPSTREAM_UNREACHABLE"}
            return {"error": str(exc)}

    for careful in (False, True):
        check = _check(request)
        placed = check.place("query-api-key")
        fault = check.force(stage, via="loopback", placement=placed)
        check.expose(gateway(fault.url, placed.secrets["api_key"], careful))
        check.stop()
        assert fault.fired
        forbidden = [leak for leak in check.findings() if not leak.allowed]
        assert bool(forbidden) is not careful
        if forbidden:
            assert {leak.finding.kind for leak in forbidden} == {"api_key"}
            self_scan(check.report(), check.secrets, "leak report")


# --- what the server really does ------------------------------------------------------------


def test_reflected_request_is_the_one_the_server_parsed(request: pytest.FixtureRequest) -> None:
    check = _check(request)
    placed = check.place("upstream-reflects-request")
    with LoopbackFault("http_401", placed=placed, secret=check.secret) as fault:
        outcome = call_client("httpx", fault, placed)
    echo = json.loads(outcome.body.split(b"\n", 1)[1])["request"]
    assert echo["method"] == "POST" and echo["url"] == "/v1/deployments"
    headers = {k.lower(): v for k, v in echo["headers"].items()}
    assert headers["authorization"] == "Bearer " + placed.secrets["bearer"]
    assert headers["host"] == f"127.0.0.1:{fault.port}"


def test_repeated_reply_headers_are_kept(request: pytest.FixtureRequest) -> None:
    check = _check(request)
    placed = check.place("upstream-set-cookie")
    with LoopbackFault("http_403", placed=placed, secret=check.secret) as fault:
        outcome = call_client("httpx", fault, placed)
    cookies = [v for k, v in outcome.headers if k.lower() == "set-cookie"]
    assert len(cookies) == 2 and all(placed.secrets["cookie"] in c for c in cookies)


def test_full_accept_queue_is_measured_not_assumed() -> None:
    fault = LoopbackFault("timeout_before_send", secret=_unused, timeout=TIMEOUT)
    with fault:
        queue = loopback_http._accept_queue(fault._listener)  # type: ignore[arg-type]
        if queue is not None:  # Linux: the kernel says the queue is full
            assert queue[0] > queue[1] and len(fault._fillers) == queue[0]
        client = socket.socket()
        client.settimeout(TIMEOUT)
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            client.connect((loopback_http.LOOPBACK, fault.port))
        assert time.monotonic() - started >= TIMEOUT * 0.9
        client.close()
        assert fault.fired and fault.connects == 1
        assert fault._intruders() == set()  # only the fillers hold connections to it


def test_a_connection_that_got_in_is_not_a_connect_timeout() -> None:
    fault = LoopbackFault("timeout_before_send", secret=_unused, timeout=TIMEOUT)
    with fault:
        if loopback_http._accept_queue(fault._listener) is None:  # type: ignore[arg-type]
            pytest.skip("no TCP_INFO for listeners on this platform")
        drained, _ = fault._listener.accept()  # type: ignore[union-attr]
        # the queue has room again: the next connect completes, the stage did not happen
        client = socket.create_connection((loopback_http.LOOPBACK, fault.port), timeout=TIMEOUT)
        assert not fault.fired
        assert "accept queue" in fault.not_reached_reason()
        client.close()
        drained.close()


def _unused(kind: str) -> str:
    raise AssertionError("no canary is needed here")


def _raw_tls(fault: LoopbackFault, context: ssl.SSLContext) -> None:
    with socket.create_connection((loopback_http.LOOPBACK, fault.port), timeout=TIMEOUT) as sock:
        with context.wrap_socket(sock, server_hostname=loopback_http.LOOPBACK):
            pass


def test_tls_stage_with_verification_off_is_not_reached() -> None:
    fault = LoopbackFault("tls_untrusted_ca", secret=_unused)
    with fault:
        lax = ssl.create_default_context()
        lax.check_hostname = False
        lax.verify_mode = ssl.CERT_NONE
        _raw_tls(fault, lax)
        assert fault.client_hellos == 1 and not fault.fired
        assert "verification is off" in fault.not_reached_reason()


def test_hostname_mismatch_needs_the_ca_trusted() -> None:
    fault = LoopbackFault("tls_hostname_mismatch", secret=_unused)
    with fault:
        with pytest.raises(ssl.SSLCertVerificationError) as info:
            _raw_tls(fault, ssl.create_default_context())  # the system CAs only
        assert info.value.verify_code == 20
        assert not fault.fired
        assert "does not trust fault.ca_file" in fault.not_reached_reason()
        with pytest.raises(ssl.SSLCertVerificationError) as info:
            _raw_tls(fault, fault.ssl_context())
        assert info.value.verify_code == 64 and fault.fired
    assert fault.tls_alerts[-1] == "SSLV3_ALERT_BAD_CERTIFICATE"


def test_https_client_that_rejects_the_server_is_told_why() -> None:
    fault = LoopbackFault("http_401", secret=lambda kind: "x" * 24, scheme="https")
    with fault:
        with pytest.raises(ssl.SSLCertVerificationError):
            _raw_tls(fault, ssl.create_default_context())
        assert not fault.fired
        reason = fault.not_reached_reason()
        assert "TLSV1_ALERT_UNKNOWN_CA" in reason and "fault.ssl_context()" in reason
        with socket.create_connection(
            (loopback_http.LOOPBACK, fault.port), timeout=TIMEOUT
        ) as sock:
            sock.sendall(b"GET / HTTP/1.1\r\n\r\n")  # plain HTTP to the HTTPS port
            with pytest.raises(ConnectionResetError):  # closed with the request unread
                assert sock.recv(100) == b""
        assert "plain HTTP" in fault.not_reached_reason()


def test_redirect_target_is_never_resolved(request: pytest.FixtureRequest) -> None:
    check = _check(request)
    original = socket.getaddrinfo
    with LoopbackFault("redirect_signed_url", secret=check.secret, timeout=TIMEOUT) as fault:
        # a client that follows: the canary host must not reach a real resolver
        with pytest.raises(requests.exceptions.ConnectionError):
            requests.get(fault.url + "/v1/x", timeout=TIMEOUT)
        assert fault.redirect_lookups == 1 and fault.fired
    assert socket.getaddrinfo is original


def test_dns_failure_is_deterministic_and_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    class AiodnsResolver:  # stands for aiohttp's AsyncResolver with aiodns installed
        pass

    monkeypatch.setattr(aiohttp.connector, "DefaultResolver", AiodnsResolver)
    original = socket.getaddrinfo
    with LoopbackFault("dns_failure", secret=_unused) as fault:
        assert fault.url == f"http://{DNS_FAILURE_HOST}:{fault.port}"
        assert aiohttp.connector.DefaultResolver is aiohttp.ThreadedResolver
        for name in (DNS_FAILURE_HOST, DNS_FAILURE_HOST.encode()):  # anyio passes bytes
            with pytest.raises(socket.gaierror) as info:
                socket.getaddrinfo(name, 443)
            assert info.value.errno == socket.EAI_NONAME
        assert fault.failed_lookups == 2 and fault.fired
        assert socket.getaddrinfo("127.0.0.1", 80)  # other names resolve as before
    assert socket.getaddrinfo is original
    assert aiohttp.connector.DefaultResolver is AiodnsResolver
    assert fault.failed_lookups == 2  # kept after stop


def test_overlapping_dns_failures_keep_the_threaded_resolver_until_both_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two dns_failure faults ended in the order they began: the first one's stop put back
    aiodns's resolver while the second was armed (its lookups would leave the machine),
    and the second's then put back the threaded one for good."""

    class AiodnsResolver:  # stands for aiohttp's AsyncResolver with aiodns installed
        pass

    monkeypatch.setattr(aiohttp.connector, "DefaultResolver", AiodnsResolver)
    first = LoopbackFault("dns_failure", secret=_unused)
    second = LoopbackFault("dns_failure", secret=_unused)
    first.start()
    second.start()
    first.stop()
    assert aiohttp.connector.DefaultResolver is aiohttp.ThreadedResolver
    second.stop()
    assert aiohttp.connector.DefaultResolver is AiodnsResolver


def test_a_resolver_the_app_sets_during_a_dns_failure_stays(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Put back only while it is still the threaded resolver: the stop dropped the
    resolver the app chose during the test."""

    class AiodnsResolver:  # stands for aiohttp's AsyncResolver with aiodns installed
        pass

    class AppResolver:
        pass

    monkeypatch.setattr(aiohttp.connector, "DefaultResolver", AiodnsResolver)
    with LoopbackFault("dns_failure", secret=_unused):
        aiohttp.connector.DefaultResolver = AppResolver  # the app's choice
    assert aiohttp.connector.DefaultResolver is AppResolver


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_stop_is_idempotent_and_leaves_nothing(request: pytest.FixtureRequest, scheme: str) -> None:
    check = _check(request)
    threads = threading.active_count()
    fault = LoopbackFault("timeout_after_send", secret=check.secret, scheme=scheme)
    fault.start()
    ca_file = fault.ca_file
    assert os.path.exists(ca_file) and fault.ssl_context().verify_mode == ssl.CERT_REQUIRED
    # a hung request: stop() must wake its handler thread, not wait for a timeout
    verify: Any = fault.ssl_context() if scheme == "https" else True
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(fault.url + "/v1/x", timeout=TIMEOUT, verify=verify)
    started = time.monotonic()
    fault.stop()
    assert time.monotonic() - started < 1.0
    fault.stop()
    assert threading.active_count() == threads
    assert not os.path.exists(os.path.dirname(ca_file))
    assert fault._listener is not None and fault._listener.fileno() == -1
    assert fault.requests == 1 and fault.fired


def test_a_fault_never_started_stops_quietly_and_cannot_restart() -> None:
    fault = LoopbackFault("http_401", secret=lambda kind: "y" * 24)
    ca_file = fault.ca_file  # made before start: still removed at stop
    fault.stop()
    assert not fault.fired and not os.path.exists(ca_file)
    with pytest.raises(lb.HarnessError, match="cannot be started again"):
        fault.start()
    with pytest.raises(lb.HarnessError, match="is stopped"):
        fault.ssl_context()


@pytest.mark.parametrize(
    ("stage", "options", "message"),
    [
        ("http_401", {"scheme": "ftp"}, "scheme must be one of 'http', 'https', not 'ftp'"),
        ("tls_untrusted_ca", {"scheme": "http"}, "needs scheme='https'"),
        ("http_401", {"timeout": 0}, "timeout must be a positive number"),
        ("http_401", {"timeout": "fast"}, "timeout must be a positive number"),
        ("http_401", {"timeout": float("nan")}, "timeout must be a positive number"),
        ("http_401", {"timeout": float("inf")}, "timeout must be a positive number"),
        ("http_401", {"truncation": "chunked"}, "truncation= applies to stage truncated_body"),
        ("truncated_body", {"truncation": "gzip"}, "truncation must be one of"),
        ("reset_after_send", {"disconnect": "fin"}, "disconnect must be one of"),
        ("http_5xx", {"disconnect": "reset"}, "disconnect= applies to stage reset_after_send"),
    ],
)
def test_bad_options_are_clear_errors(
    request: pytest.FixtureRequest, stage: str, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(LoopbackOptionError) as info:
        _check(request).force(stage, via="loopback", **options)
    assert message in str(info.value)


def test_other_transports_stages_are_refused(request: pytest.FixtureRequest) -> None:
    with pytest.raises(UnknownTransportError, match="forces HTTP stages only, not ssh_auth"):
        _check(request).force("ssh_auth_rejected", via="loopback")
    with pytest.raises(LoopbackOptionError, match="unknown option.s. retries; known: scheme"):
        _check(request).force("http_401", via="loopback", retries=3)


def test_registered_through_the_entry_point(request: pytest.FixtureRequest) -> None:
    assert fault_factories()["loopback"] is LoopbackFault
    fault = make_fault("http_429", via="loopback", secret=_check(request).secret)
    assert isinstance(fault, LoopbackFault) and fault.transport == "loopback"
    assert fault.describe() == "stage http_429 via loopback (http://127.0.0.1:0)"


def test_normalize_removes_what_varies() -> None:
    fault = LoopbackFault("http_401", secret=lambda kind: "z" * 24)
    fault.port = 43117
    text = (
        "host='127.0.0.1', port=43117 at 0x7f3a9c0b2d10 (read timeout=0.1997141809999448) "
        "in /tmp/leakcheck-loopback-abc/ca.pem (_ssl.c:1006) after 0.25 s; port 143117"
    )
    assert lb.normalize(text, fault, "/tmp/leakcheck-loopback-abc") == (
        "host='127.0.0.1', port=PORT at 0xADDR (read timeout=TIMEOUT) in <tmp> "
        "(_ssl.c:LINE) after DURATION; port 143117"
    )


# --- the exception-text corpus ----------------------------------------------------------------


def test_corpus_is_this_machines_and_carries_no_canary() -> None:
    """The baseline for a dependency upgrade: it must match what this machine's libraries
    produce. After an upgrade, regenerate it and review the diff."""
    check = LeakCheck(seed=CORPUS_SEED, sinks=[])
    fresh = lb.record_exception_texts(check)
    fresh_text = lb.dump_corpus(fresh)
    self_scan(fresh_text, check.secrets, "recorded corpus")
    assert set(fresh["texts"]) == set(CLIENTS)
    assert all(set(t) == {c.key for c in CORPUS_CASES} for t in fresh["texts"].values())
    if not CORPUS.exists():
        pytest.fail(f"{lb.CORPUS_PATH} is missing: generate it with {REGENERATE}", pytrace=False)
    on_disk_text = CORPUS.read_text(encoding="utf-8")
    self_scan(on_disk_text, check.secrets, lb.CORPUS_PATH)
    on_disk = json.loads(on_disk_text)
    assert on_disk_text == lb.dump_corpus(on_disk), "not written by dump_corpus (key order)"
    changed = {
        name: (on_disk["versions"].get(name), version)
        for name, version in fresh["versions"].items()
        if on_disk["versions"].get(name) != version
    }
    if changed:
        pytest.fail(
            f"{lb.CORPUS_PATH} was recorded with other library versions ("
            + ", ".join(f"{name} {old} -> {new}" for name, (old, new) in sorted(changed.items()))
            + f"): regenerate it with {REGENERATE} and review `git diff {lb.CORPUS_PATH}` "
            "(the exception texts a gateway may now hand to an agent)",
            pytrace=False,
        )
    if on_disk_text != fresh_text:
        diff = "\n".join(
            difflib.unified_diff(
                on_disk_text.splitlines(), fresh_text.splitlines(), "on disk", "now", lineterm=""
            )
        )
        pytest.fail(
            f"{lb.CORPUS_PATH} differs from the texts this machine's libraries produce "
            f"(same versions): regenerate it with {REGENERATE} and review the diff:\n"
            + check.mask(diff),
            pytrace=False,
        )


def test_corpus_file_holds_masks_not_values() -> None:
    data = json.loads(CORPUS.read_text(encoding="utf-8"))
    texts = "\n".join(t for cases in data["texts"].values() for t in cases.values())
    assert "«canary:api_key:" in texts  # the URLs in the texts did carry the key
    assert "PORT" in texts and "0xADDR" in texts and "TIMEOUT" in texts


# --- a client that refuses its own request ----------------------------------------------------


@pytest.mark.parametrize("library", ["httpx", "httpx2"])
@pytest.mark.parametrize("stage", ["http_401", "timeout_after_send"])
def test_a_refused_malformed_credential_proves_the_case(library: str, stage: str) -> None:
    """h11 refuses a header value with a newline after connecting: the server sees a
    connection closed before a byte, which for a malformed placement is the case's proof."""
    import httpx2

    lib = httpx if library == "httpx" else httpx2
    with LeakCheck(seed="loopback-malformed", sinks=[]) as check:
        fault = check.force(stage, via="loopback", placement="credential-trailing-newline")
        placed = fault.placed
        assert placed is not None
        with pytest.raises(lib.LocalProtocolError) as info:
            lib.get(fault.url + "/v1/d", headers=list(placed.request_headers), timeout=0.3)
        check.exception_reached_caller(info.value)
        assert {leak.finding.kind for leak in check.findings()} == {"bearer"}
        assert fault.fired
        assert "closed the connection without sending a byte" in fault.evidence[-1]
        self_scan("\n".join(fault.evidence), check.secrets, "evidence")


def test_a_silent_close_without_a_malformed_placement_is_not_a_proof() -> None:
    with LeakCheck(seed="loopback-malformed", sinks=[]) as check:
        fault = check.force("http_401", via="loopback")
        with pytest.raises(httpx.LocalProtocolError):
            httpx.get(fault.url + "/v1/d", headers={"X-Note": "a\n"}, timeout=0.3)
        assert not fault.fired
        reason = fault.not_reached_reason()
        assert "1 connection(s) closed before a byte was sent" in reason
        check.faults.remove(fault)  # its harness error is this test's subject
        fault.stop()


def test_requests_refuses_before_connecting_and_the_reason_says_so() -> None:
    import requests

    with LeakCheck(seed="loopback-malformed", sinks=[]) as check:
        fault = check.force("http_401", via="loopback", placement="credential-trailing-newline")
        placed = fault.placed
        assert placed is not None
        with pytest.raises(requests.exceptions.InvalidHeader):
            requests.get(fault.url + "/v1/d", headers=dict(placed.request_headers), timeout=0.3)
        assert not fault.fired
        assert "force it via='responses'" in fault.not_reached_reason()
        check.faults.remove(fault)
        fault.stop()


def test_a_timeout_stage_that_did_not_fire_beside_the_others_is_recorded_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The timeout stages run side by side; on a loaded machine a client's TLS handshake
    among them took longer than its connect timeout, no request was read, and the corpus
    test failed (seen in CI). Such a stage is recorded once more, alone, with the same
    text as a first attempt that fired."""
    waiting = tuple(c for c in CORPUS_CASES if c.key.startswith("timeout_after_send"))
    assert waiting
    monkeypatch.setattr(lb, "CLIENTS", ("httpx",))
    monkeypatch.setattr(lb, "CORPUS_CASES", waiting)
    first = lb.record_exception_texts(LeakCheck(seed=CORPUS_SEED, sinks=[]))
    calls: list[str] = []
    real_call = lb.call_client

    def missed_once(client: str, fault: Any, placed: Any = None) -> Any:
        calls.append(client)
        if len(calls) == 1:  # (the first attempt makes no request: the fault never fires)
            return lb.Outcome(client, error=RuntimeError("no request made"))
        return real_call(client, fault, placed)

    monkeypatch.setattr(lb, "call_client", missed_once)
    again = lb.record_exception_texts(LeakCheck(seed=CORPUS_SEED, sinks=[]))
    assert len(calls) == len(waiting) + 1
    assert again["texts"] == first["texts"]
