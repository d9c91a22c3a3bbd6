"""The respx fault transport: every HTTP stage on httpx clients (sync and async), offline.

What is proven here: each answered stage serves its status, headers and body (placement
pieces included, found by the scanner); each failing stage raises the exception httpx
itself raises (same type, same message, same cause chain, ``.request`` the request sent),
checked against the real library failing for real on loopback sockets; evidence holds no
secret; an unused fault fails an inner pytest run as a harness error; no name lookup and
no connection happen; the router coexists with the test's own and is gone after ``stop``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import socket
import ssl
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import h11
import httpcore
import httpx
import pytest
import respx
from conftest import (
    QUIET_INNER_ARGS,
    assert_inner_run_safe,
    fault_canaries,
    inner_outcomes,
    self_scan,
)
from leakcheck.plugins.respx_faults import RespxFault

from leakcheck.faults import UnknownTransportError, reply_for
from leakcheck.harness import LeakCheck
from leakcheck.httpfaults import ANSWERED, RAISED
from leakcheck.netwatch import failing_dns, watch
from leakcheck.stages import STAGES

pytest_plugins = ["pytester"]

HOST = "api.upstream.test"
HTTP_STAGES = sorted(name for name, stage in STAGES.items() if stage.transport == "http")
SSL_C = r" \(_ssl\.c:\d+\)"

#: stage -> (exception type, message pattern, types down the cause chain), sync client
SYNC_FAILURES: dict[str, tuple[type[Exception], str, list[type[BaseException]]]] = {
    "dns_failure": (
        httpx.ConnectError,
        re.escape("[Errno -2] Name or service not known"),
        [httpcore.ConnectError, socket.gaierror],
    ),
    "connection_refused": (
        httpx.ConnectError,
        re.escape("[Errno 111] Connection refused"),
        [httpcore.ConnectError, ConnectionRefusedError],
    ),
    "tls_hostname_mismatch": (
        httpx.ConnectError,
        re.escape(
            "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: Hostname mismatch, "
            f"certificate is not valid for '{HOST}'."
        )
        + SSL_C,
        [httpcore.ConnectError, ssl.SSLCertVerificationError],
    ),
    "tls_untrusted_ca": (
        httpx.ConnectError,
        re.escape(
            "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get local "
            "issuer certificate"
        )
        + SSL_C,
        [httpcore.ConnectError, ssl.SSLCertVerificationError],
    ),
    "timeout_before_send": (
        httpx.ConnectTimeout,
        "timed out",
        [httpcore.ConnectTimeout, TimeoutError],
    ),
    "timeout_after_send": (httpx.ReadTimeout, "timed out", [httpcore.ReadTimeout, TimeoutError]),
    "reset_after_send": (
        httpx.ReadError,
        re.escape("[Errno 104] Connection reset by peer"),
        [httpcore.ReadError, ConnectionResetError],
    ),
    "truncated_body": (
        httpx.RemoteProtocolError,
        r"peer closed connection without sending complete message body "
        r"\(received \d+ bytes, expected 4096\)",
        [httpcore.RemoteProtocolError, h11.RemoteProtocolError],
    ),
}
#: where an async (anyio on asyncio) client fails otherwise
ASYNC_FAILURES = {
    **SYNC_FAILURES,
    "connection_refused": (
        httpx.ConnectError,
        "All connection attempts failed",
        [httpcore.ConnectError, OSError, ConnectionRefusedError],
    ),
    "timeout_before_send": (httpx.ConnectTimeout, "", [httpcore.ConnectTimeout, TimeoutError]),
    "timeout_after_send": (httpx.ReadTimeout, "", [httpcore.ReadTimeout, TimeoutError]),
    "reset_after_send": (
        httpx.ReadError,
        "",
        [httpcore.ReadError, anyio.BrokenResourceError, ConnectionResetError],
    ),
}


#: no TLS happens against a mock: a context without CA certificates spares every client
#: loading them (60 ms each)
NO_CA = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def get(url: Any, **kwargs: Any) -> httpx.Response:
    return httpx.get(url, verify=NO_CA, **kwargs)


def post(url: Any, **kwargs: Any) -> httpx.Response:
    return httpx.post(url, verify=NO_CA, **kwargs)


def put(url: Any, **kwargs: Any) -> httpx.Response:
    return httpx.put(url, verify=NO_CA, **kwargs)


def chain(exc: BaseException | None) -> list[BaseException]:
    """The exception and everything it was raised from or during, as tracebacks show it."""
    out: list[BaseException] = []
    while exc is not None and all(exc is not seen for seen in out):
        out.append(exc)
        exc = exc.__cause__ or exc.__context__
    return out


def shape(exc: BaseException) -> list[tuple[type[BaseException], str]]:
    return [(type(e), str(e)) for e in chain(exc)]


@pytest.fixture
def lc(request: pytest.FixtureRequest) -> Iterator[LeakCheck]:
    check = LeakCheck(seed="respx-faults", namespace=request.node.nodeid, sinks=[])
    with check:
        yield check


def send(mode: str, request_args: dict[str, Any], **client: Any) -> httpx.Response:
    """Send one request with a sync or an async client; ``request_args`` go to
    ``build_request`` and the built request is kept in ``request_args["sent"]``."""
    args = {k: v for k, v in request_args.items() if k != "sent"}
    client.setdefault("verify", NO_CA)
    if mode == "sync":
        with httpx.Client(**client) as sync_client:
            request_args["sent"] = sync_client.build_request(**args)
            return sync_client.send(request_args["sent"])

    async def go() -> httpx.Response:
        async with httpx.AsyncClient(**client) as async_client:
            request_args["sent"] = async_client.build_request(**args)
            return await async_client.send(request_args["sent"])

    return asyncio.run(go())


# --- answered stages ------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("stage", sorted(ANSWERED))
def test_answered_stage_serves_its_reply(lc: LeakCheck, stage: str, mode: str) -> None:
    fault = lc.force(stage, via="respx")
    with watch(lookup=HOST) as names, watch(port=443) as connects:
        response = send(
            mode, {"method": "POST", "url": fault.url + "/v1/deployments?page=2", "json": {}}
        )
    assert response.status_code == STAGES[stage].http_status
    expected = reply_for(stage, lambda kind: "x")
    assert expected is not None
    assert response.headers["content-type"] == expected.header("Content-Type")
    if stage == "http_429":
        assert response.headers["retry-after"] == "7"
    if stage == "http_401":
        assert response.headers["www-authenticate"].startswith("Bearer")
    if stage == "malformed_json":
        with pytest.raises(json.JSONDecodeError):
            response.json()
    if stage == "html_login_page":
        assert "<form" in response.text and 'type="password"' in response.text
    if stage == "redirect_signed_url":
        assert "X-Amz-Signature=" in response.headers["location"]
    assert fault.fired and fault.calls == 1
    self_scan("\n".join(fault.evidence), lc.secrets, "evidence")  # before showing it
    assert fault.evidence == [
        f"respx intercepted POST /v1/deployments (request 1): answered {response.status_code}"
    ]
    assert names.lookups == 0 and connects.connects == 0


def test_redirect_is_followed_to_the_intercepted_signed_url(lc: LeakCheck) -> None:
    fault = lc.force("redirect_signed_url", via="respx")
    with watch(port=443) as connects:
        response = post(fault.url + "/v1/deployments", follow_redirects=True)
    assert [r.status_code for r in response.history] == [302]
    assert response.status_code == 403 and "Request has expired" in response.text
    # the client went where the Location header pointed (compared without showing it)
    same_target = str(response.url) == response.history[0].headers["location"]
    assert same_target, "the followed request did not go to the Location URL"
    assert response.request.method == "GET" and connects.connects == 0
    assert fault.calls == 2
    self_scan("\n".join(fault.evidence), lc.secrets, "evidence")  # before showing it
    assert fault.evidence[1] == (
        "respx intercepted GET /artifacts/build.tgz (request 2) on the redirect target: "
        "answered 403"
    )


#: placement -> (stage, canary kinds the scanner must find in the response the client got)
UPSTREAM_PIECES = {
    "upstream-set-cookie": ("http_401", {"cookie"}),
    "upstream-signed-location": ("redirect_signed_url", {"hostname", "signature"}),
    "upstream-internal-host": ("http_5xx", {"hostname"}),
    "upstream-prose": ("http_403", {"prose"}),
    "upstream-reflects-request": ("http_401", {"bearer"}),
}


@pytest.mark.parametrize("placement", sorted(UPSTREAM_PIECES))
def test_placement_pieces_reach_the_client(lc: LeakCheck, placement: str) -> None:
    stage, kinds = UPSTREAM_PIECES[placement]
    fault = lc.force(stage, via="respx", placement=placement)
    assert fault.placed is not None
    headers = [*fault.placed.request_headers, ("X-Trace", "trace-5150")]
    response = post(fault.url + "/v1/deployments?page=2", headers=headers, json={})
    assert response.status_code == STAGES[stage].http_status
    lc.expose({"headers": response.headers.multi_items(), "body": response.text})
    found = {leak.finding.kind for leak in lc.findings()}
    assert kinds <= found, f"expected {sorted(kinds)} in the reply, found {sorted(found)}"
    if placement == "upstream-set-cookie":
        assert len(response.headers.get_list("set-cookie")) == 2
    if placement == "upstream-signed-location":  # the redirect's own and the placement's
        assert len(response.headers.get_list("location")) == 2
    if placement == "upstream-reflects-request":
        # what the upstream echoes is the request it actually received
        echo = json.loads(response.text.split("\n", 1)[1])["request"]
        assert echo["method"] == "POST"
        assert echo["url"] == fault.url + "/v1/deployments?page=2"
        assert echo["headers"]["X-Trace"] == "trace-5150"
        assert echo["headers"]["Host"] == HOST
        sent = dict(fault.placed.request_headers)["Authorization"]
        same = echo["headers"]["Authorization"] == sent
        assert same, "the reflected Authorization header is not the one sent"


def test_without_upstream_placement_the_reply_holds_no_secret(lc: LeakCheck) -> None:
    fault = lc.force("http_401", via="respx", placement="authorization-header")
    assert fault.placed is not None
    response = post(fault.url + "/v1/deployments", headers=fault.placed.request_headers)
    lc.expose({"headers": response.headers.multi_items(), "body": response.text})
    assert response.status_code == 401 and lc.findings() == []


# --- failing stages -------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("stage", sorted(SYNC_FAILURES))
def test_failing_stage_raises_what_httpx_raises(lc: LeakCheck, stage: str, mode: str) -> None:
    fault = lc.force(stage, via="respx")
    expected_type, message, causes = (SYNC_FAILURES if mode == "sync" else ASYNC_FAILURES)[stage]
    args: dict[str, Any] = {"method": "POST", "url": fault.url + "/v1/deployments", "json": {}}
    with watch(lookup=HOST) as names, watch(port=443) as connects:
        with pytest.raises(httpx.HTTPError) as info:
            send(mode, args)
    exc = info.value
    assert type(exc) is expected_type
    assert re.fullmatch(message, str(exc)), str(exc)
    assert [type(e) for e in chain(exc)[1:]] == causes
    assert exc.request is args["sent"]  # httpx attached the request the client sent
    assert fault.fired and fault.calls == 1
    assert names.lookups == 0 and connects.connects == 0
    if stage == "truncated_body":
        assert fault.evidence[0].startswith(
            "respx intercepted POST /v1/deployments (request 1): the client read the body up "
            "to its cut at "
        )
    else:
        assert fault.evidence == [
            f"respx intercepted POST /v1/deployments (request 1): raised {expected_type.__name__}"
        ]
    if stage.startswith("tls_"):
        leaf = chain(exc)[-1]
        assert isinstance(leaf, ssl.SSLCertVerificationError)
        assert (leaf.reason, leaf.library) == ("CERTIFICATE_VERIFY_FAILED", "SSL")
        assert leaf.verify_code == (62 if stage == "tls_hostname_mismatch" else 20)


def test_truncated_body_fails_only_when_read(lc: LeakCheck) -> None:
    fault = lc.force("truncated_body", via="respx")
    with (
        httpx.Client(verify=NO_CA) as client,
        client.stream("GET", fault.url + "/v1/logs") as response,
    ):
        assert response.status_code == 200 and response.headers["content-length"] == "4096"
        assert fault.calls == 1 and not fault.fired  # nothing went wrong yet
        assert "never read up to the cut" in fault.not_reached_reason()
        with pytest.raises(httpx.RemoteProtocolError):
            response.read()
    assert fault.fired


def test_exception_placement_rides_on_the_real_chain(lc: LeakCheck) -> None:
    fault = lc.force("dns_failure", via="respx", placement="exception-chain")
    with pytest.raises(httpx.ConnectError) as info:
        get(fault.url + "/v1/deployments")
    links = chain(info.value)
    assert [type(e) for e in links] == [
        httpx.ConnectError,
        httpcore.ConnectError,
        socket.gaierror,
        ConnectionError,
    ]
    lc.exception_reached_caller(info.value)
    assert {leak.finding.kind for leak in lc.findings()} >= {"api_key", "bearer"}


# --- against the real library on loopback sockets --------------------------------------------


@contextmanager
def loopback(mode: str, tls: ssl.SSLContext | None = None) -> Iterator[int]:
    """A one-connection server on 127.0.0.1 that fails for real: ``reset`` (RST after the
    whole request), ``truncated`` (the corpus body under Content-Length 4096) or ``hang``
    (reads, never answers). Yields its port; stops its thread on exit."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.05)
    stop = threading.Event()
    reply = reply_for("truncated_body", lambda kind: "x")
    assert reply is not None

    def serve() -> None:
        conn = None
        while conn is None and not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
        if conn is None:
            return
        conn.settimeout(0.5)
        try:
            if tls is not None:
                conn = tls.wrap_socket(conn, server_side=True)
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            head, _, body = data.partition(b"\r\n\r\n")
            length = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
            while length and len(body) < int(length.group(1)):
                body += conn.recv(65536)
            if mode == "reset":
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            elif mode == "truncated":
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b"Content-Length: 4096\r\n\r\n" + reply.body
                )
            elif mode == "hang":
                stop.wait(1.0)
        except (OSError, ssl.SSLError):
            pass
        finally:
            conn.close()

    thread = threading.Thread(target=serve, name="loopback-upstream", daemon=True)
    thread.start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        stop.set()
        thread.join(2.0)
        listener.close()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def real_upstream(stage: str, certs: dict[str, Any], client: str) -> Iterator[tuple[str, Any]]:
    """``(base url, verify)`` where ``stage`` really happens, on loopback."""
    verify: Any = certs["client"] if client == "httpx" else str(certs["ca_file"])
    if stage == "dns_failure":
        with failing_dns():
            yield "https://api.upstream.invalid", True
    elif stage == "connection_refused":
        yield f"http://127.0.0.1:{closed_port()}", True
    elif stage in ("tls_hostname_mismatch", "tls_untrusted_ca"):
        server = certs["mismatch" if stage == "tls_hostname_mismatch" else "untrusted"]
        with loopback("tls", server) as port:
            yield f"https://localhost:{port}", verify if stage == "tls_hostname_mismatch" else True
    else:
        mode = {"reset_after_send": "reset", "truncated_body": "truncated"}.get(stage, "hang")
        with loopback(mode) as port:
            yield f"http://127.0.0.1:{port}", True


#: failures a loopback socket reproduces for real (a connect timeout needs a full accept
#: queue: see the loopback transport) and the client flavours whose text is deterministic
REAL = [
    ("dns_failure", "sync"),
    ("connection_refused", "sync"),
    ("connection_refused", "async"),
    ("tls_hostname_mismatch", "sync"),
    ("tls_hostname_mismatch", "async"),
    ("tls_untrusted_ca", "sync"),
    ("timeout_after_send", "sync"),
    ("reset_after_send", "sync"),
    ("reset_after_send", "async"),
    ("truncated_body", "sync"),
    ("truncated_body", "async"),
]


@pytest.mark.parametrize(("stage", "mode"), REAL)
def test_same_exception_as_the_real_failure(
    lc: LeakCheck, certs: dict[str, Any], stage: str, mode: str
) -> None:
    """The real client failing for real, then the fault at the same URL: same exception
    types, same messages, all the way down the chain."""
    timeout = 0.2 if stage == "timeout_after_send" else 0.5  # a busy CI box needs slack
    with real_upstream(stage, certs, "httpx") as (url, verify):
        real_args = {"method": "POST", "url": url + "/v1/deployments?page=2", "json": {"a": 1}}
        with pytest.raises(httpx.HTTPError) as real:
            send(mode, real_args, verify=verify, timeout=timeout)
    fault = lc.force(stage, via="respx", url=url)
    fake_args = {"method": "POST", "url": url + "/v1/deployments?page=2", "json": {"a": 1}}
    with pytest.raises(httpx.HTTPError) as fake:
        send(mode, fake_args, verify=verify, timeout=timeout)
    assert shape(fake.value) == shape(real.value)
    assert real.value.request is real_args["sent"] and fake.value.request is fake_args["sent"]
    assert fault.fired


# --- evidence, harness errors, options ---------------------------------------------------------


def test_evidence_shows_no_query_and_withholds_a_secret_path(lc: LeakCheck) -> None:
    fault = lc.force("http_403", via="respx", placement="query-api-key")
    assert fault.placed is not None
    key = fault.placed.secrets["api_key"]
    get(fault.url + "/v1/deployments", params=dict(fault.placed.query))
    # a gateway that puts the key in the path, encoded, or raw (cut at its first ? or #)
    get(fault.url + "/v1/keys/" + quote(key, safe=""))
    get(fault.url + "/v1/keys/" + key)
    self_scan("\n".join(fault.evidence), lc.secrets, "evidence")  # before showing it
    assert fault.evidence == [
        "respx intercepted GET /v1/deployments (request 1): answered 403",
        "respx intercepted GET <a path holding a secret> (request 2): answered 403",
        "respx intercepted GET <a path holding a secret> (request 3): answered 403",
    ]


def test_unreached_fault_is_a_harness_error(lc: LeakCheck) -> None:
    fault = lc.force("http_429", via="respx")
    assert not fault.fired
    assert fault.not_reached_reason() == f"no request reached https://{HOST} (respx)"
    assert lc.unreached() == [fault]
    assert "harness error: stage http_429 via respx was never reached" in lc.harness_errors()


def test_requests_elsewhere_fail_clearly_and_are_counted(lc: LeakCheck) -> None:
    fault = lc.force("http_401", via="respx", placement="query-api-key")
    assert fault.placed is not None
    key = fault.placed.secrets["api_key"]
    with pytest.raises(AssertionError) as info:  # respx's AllMockedAssertionError
        get("https://elsewhere.test/v1/deployments", params={"api_key": key})
    self_scan(str(info.value) + fault.not_reached_reason(), lc.secrets, "messages")
    assert "answers only https://api.upstream.test" in str(info.value)
    assert fault.other_calls == 1 and not fault.fired
    assert fault.not_reached_reason() == (
        "no request reached https://api.upstream.test (respx); the mock saw 1 request(s) to "
        "other URLs: give the gateway fault.url as its upstream"
    )


def test_method_option_answers_one_method(lc: LeakCheck) -> None:
    fault = lc.force("http_5xx", via="respx", method="put")
    with pytest.raises(AssertionError):
        post(fault.url + "/v1/deployments")
    assert not fault.fired
    assert "with method PUT" in fault.not_reached_reason()
    assert put(fault.url + "/v1/deployments").status_code == 503


def test_base_url_prefix_and_port(lc: LeakCheck) -> None:
    fault = lc.force("http_403", via="respx", url="http://API.upstream.test:8080/api/v2/")
    assert fault.url == "http://API.upstream.test:8080/api/v2"
    assert get(fault.url + "/deployments").status_code == 403
    assert get("http://api.upstream.test:8080/api/v2").status_code == 403
    elsewhere_urls = (
        "http://api.upstream.test:8080/api/v20",
        "http://api.upstream.test:8081/api/v2/x",
        "https://api.upstream.test:8080/api/v2/x",
    )
    for elsewhere in elsewhere_urls:
        with pytest.raises(AssertionError):
            get(elsewhere)
    assert fault.calls == 2 and fault.other_calls == 3


def test_a_secret_in_the_url_is_never_shown(lc: LeakCheck) -> None:
    password = lc.secret("password")
    url = httpx.URL("https://api.upstream.test/", username="deploy", password=password)
    fault = lc.force("connection_refused", via="respx", url=str(url))
    reason = fault.not_reached_reason()
    with pytest.raises(ValueError) as info:
        lc.force("http_401", via="respx", url=str(url).replace("https", "gopher"))
    self_scan(reason + str(info.value) + fault.describe(), lc.secrets, "messages")
    assert reason == "no request reached https://api.upstream.test (respx)"
    with pytest.raises(httpx.ConnectError):
        get(fault.url + "/v1/x")  # the userinfo does not stop the match


@pytest.mark.parametrize(
    ("stage", "options", "error", "words"),
    [
        ("http_401", {"timeout": 3}, ValueError, "unknown option(s) timeout"),
        ("http_401", {"url": "ftp://api.upstream.test"}, ValueError, "http:// or https://"),
        ("http_401", {"url": "https://api.upstream.test/?a=1"}, ValueError, "no query"),
        ("http_401", {"url": "https://h:99999"}, ValueError, "valid port"),
        ("http_401", {"url": 42}, ValueError, "got a int"),
        ("http_401", {"method": "GET /"}, ValueError, "HTTP method name"),
        ("tls_untrusted_ca", {"url": "http://api.upstream.test"}, ValueError, "needs an https"),
        ("vault_locked", {}, UnknownTransportError, "gateway-side stage"),
        ("ssh_auth_rejected", {}, UnknownTransportError, "forces HTTP stages only"),
    ],
)
def test_bad_use_is_a_clear_error(
    lc: LeakCheck, stage: str, options: dict[str, Any], error: type[Exception], words: str
) -> None:
    with pytest.raises(error) as info:
        lc.force(stage, via="respx", **options)
    assert type(info.value) is not TypeError and words in str(info.value)
    assert lc.faults == []


# --- globals and other routers ---------------------------------------------------------------


def test_stop_restores_httpcore_and_is_idempotent(lc: LeakCheck) -> None:
    originals = (
        httpcore.ConnectionPool.handle_request,
        httpcore.AsyncConnectionPool.handle_async_request,
    )
    fault = lc.force("http_401", via="respx", url="https://api.upstream.invalid")
    assert httpcore.ConnectionPool.handle_request is not originals[0]
    assert get(fault.url + "/v1/x").status_code == 401
    fault.stop()
    fault.stop()
    assert (
        httpcore.ConnectionPool.handle_request,
        httpcore.AsyncConnectionPool.handle_async_request,
    ) == originals
    # no longer intercepted: the real client asks the (failing) resolver
    with failing_dns() as failed, pytest.raises(httpx.ConnectError):
        get(fault.url + "/v1/x", timeout=0.5)
    assert failed() == 1 and fault.calls == 1


def test_coexists_with_the_respx_mock_fixture(lc: LeakCheck, respx_mock: respx.MockRouter) -> None:
    respx_mock.get("https://other.test/health").respond(204)
    fault = lc.force("http_5xx", via="respx")
    assert get("https://other.test/health").status_code == 204
    assert post(fault.url + "/v1/deployments").status_code == 503
    assert fault.calls == 1 and fault.other_calls == 0


def test_coexists_with_the_tests_own_router(lc: LeakCheck) -> None:
    original = httpcore.ConnectionPool.handle_request
    with respx.mock(assert_all_called=True) as user:
        user.get("https://other.test/health").respond(204)
        fault = lc.force("http_401", via="respx")
        assert get("https://other.test/health").status_code == 204
        assert post(fault.url + "/v1/deployments").status_code == 401
    assert post(fault.url + "/v1/deployments").status_code == 401  # outlives it
    fault.stop()
    assert httpcore.ConnectionPool.handle_request is original
    # started the other way round: the fault hands unknown URLs on to the later router
    fault = lc.force("http_403", via="respx")
    with respx.mock(assert_all_called=True) as user:
        user.get("https://other.test/health").respond(204)
        assert get("https://other.test/health").status_code == 204
        assert get(fault.url + "/v1/x").status_code == 403
    fault.stop()
    assert httpcore.ConnectionPool.handle_request is original


# --- leaky and careful gateways ------------------------------------------------------------------


def careless(call: Any) -> dict[str, Any]:
    try:
        response = call()
        response.raise_for_status()
    except httpx.HTTPError as exc:
        return {"ok": False, "error": str(exc)}
    return {"ok": True}


def careless_with_url(call: Any) -> dict[str, Any]:
    try:
        call()
    except httpx.RequestError as exc:
        return {"ok": False, "error": f"{exc} ({exc.request.url})"}
    return {"ok": True}


def careful(call: Any) -> dict[str, Any]:
    try:
        response = call()
        response.raise_for_status()
    except httpx.HTTPError:
        return {"ok": False, "code": "UPSTREAM_UNAVAILABLE", "retryable": True}
    return {"ok": True}


def _kinds(check: LeakCheck) -> set[str]:
    return {leak.finding.kind for leak in check.findings() if not leak.allowed}


@pytest.mark.parametrize(
    ("stage", "placement", "follow", "wrapper", "leaked"),
    [
        # httpx keeps the URL out of a connection error's text...
        ("dns_failure", "query-api-key", False, careless, set()),
        # ...but not out of exc.request.url
        ("dns_failure", "query-api-key", False, careless_with_url, {"api_key"}),
        ("timeout_after_send", "url-userinfo", False, careless_with_url, {"password"}),
        # raise_for_status() names the signed URL the redirect led to
        ("redirect_signed_url", "authorization-header", True, careless, {"signature"}),
        ("redirect_signed_url", "authorization-header", True, careful, set()),
        ("dns_failure", "query-api-key", False, careful, set()),
    ],
)
def test_leaky_and_careful_wrappers(
    stage: str, placement: str, follow: bool, wrapper: Any, leaked: set[str]
) -> None:
    with LeakCheck(seed="respx-wrappers", sinks=[]) as check:
        fault = check.force(stage, via="respx", placement=placement)
        placed = fault.placed
        assert placed is not None
        url = httpx.URL(fault.url + "/v1/deployments", params=dict(placed.query))
        if placed.userinfo:
            url = url.copy_with(username=placed.userinfo[0], password=placed.userinfo[1])

        def call() -> httpx.Response:
            with httpx.Client(follow_redirects=follow, verify=NO_CA) as client:
                return client.post(url, headers=placed.request_headers, json={})

        check.expose(wrapper(call))
        assert fault.fired
        found = _kinds(check)
    assert leaked <= found and (found == set()) == (leaked == set()), sorted(found)


# --- through pytest ----------------------------------------------------------------------------

SEED = "respx-inner"
INNER = """
import hashlib, pathlib
import httpx, pytest

def test_unused(leakcheck):
    leakcheck.force("timeout_after_send", via="respx", placement="query-api-key")
    digest = hashlib.sha256(leakcheck.secrets[0].value.encode()).hexdigest()
    pathlib.Path("proof-test_unused.txt").write_text(digest)
    leakcheck.expose({"ok": True})

def test_elsewhere(leakcheck):
    leakcheck.force("http_401", via="respx")
    with pytest.raises(AssertionError):
        httpx.get("https://elsewhere.test/v1/deployments")
    leakcheck.expose({"ok": False})

@pytest.mark.leakcheck(log_levels={"httpcore": "INFO"})
def test_used(leakcheck):
    fault = leakcheck.force("http_401", via="respx", placement="upstream-set-cookie")
    response = httpx.post(fault.url + "/v1/deployments")
    leakcheck.expose({"ok": False, "status": response.status_code})

def test_used_with_httpcore_at_debug(leakcheck):
    # httpcore traces the upstream's Set-Cookie at DEBUG, as over a real connection
    fault = leakcheck.force("http_401", via="respx", placement="upstream-set-cookie")
    response = httpx.post(fault.url + "/v1/deployments")
    leakcheck.expose({"ok": False, "status": response.status_code})
"""


def test_unused_fault_fails_the_inner_test(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (the careful example gateway, used in process by other tests, drops httpcore's
    # header traces at its logger for the rest of the process)
    monkeypatch.setattr(logging.getLogger("httpcore.http11"), "filters", [])
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest(*QUIET_INNER_ARGS, "-rA", f"--leakcheck-seed={SEED}")
    assert inner_outcomes(result) == {
        "test_unused": "FAILED",
        "test_elsewhere": "FAILED",
        "test_used": "PASSED",
        "test_used_with_httpcore_at_debug": "FAILED",
    }
    out = result.stdout.str()
    assert "[LEAK] operator: log record httpcore.http11 DEBUG message" in out
    assert (
        "harness error: stage timeout_after_send via respx was never reached: no request "
        "reached https://api.upstream.test (respx)." in out
    )
    assert "the mock saw 1 request(s) to other URLs" in out
    secrets = fault_canaries(SEED, "test_unused", "timeout_after_send", "respx", "query-api-key")
    for test in ("test_used", "test_used_with_httpcore_at_debug"):
        secrets += fault_canaries(SEED, test, "http_401", "respx", "upstream-set-cookie")
    assert_inner_run_safe(pytester, result, secrets, ["test_unused"])
    assert Path(pytester.path / "proof-test_unused.txt").exists()


def test_factory_is_registered() -> None:
    from leakcheck.faults import fault_factories

    assert fault_factories()["respx"] is RespxFault
    assert {"dns_failure", "truncated_body", "http_401"} <= set(HTTP_STAGES)
    assert RAISED | ANSWERED | {"truncated_body"} == set(HTTP_STAGES)
