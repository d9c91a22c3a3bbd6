"""The respx fault transport on httpx2 (Pydantic's httpx fork) beside httpx, and the mock's
strictness: a request the real client refuses to send is refused by the mock too.

Proven here for both libraries, installed side by side: every stage fires with the
library's own exception classes (httpx2's from httpcore2's, never httpx's), the same
messages and chains as the real library failing for real on loopback sockets; a header
value with a trailing newline fails as h11 makes it fail for real, with the real text; the
test's own ``httpx2_mock`` (pytest-httpx2) and the fault share one chain of routers; stop
restores httpcore2.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import h11
import httpcore
import httpcore2
import httpx
import httpx2
import pytest
import respx
from conftest import self_scan
from leakcheck.plugins.respx_faults import CLIENTS
from test_faults_respx import (  # the loopback upstreams that fail for real
    ASYNC_FAILURES,
    REAL,
    SYNC_FAILURES,
    chain,
    real_upstream,
    shape,
)

from leakcheck.faults import reply_for
from leakcheck.harness import LeakCheck
from leakcheck.httpfaults import ANSWERED
from leakcheck.netwatch import watch
from leakcheck.stages import STAGES

HOST = "api.upstream.test"
NO_CA = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)

#: each client library and the httpcore it sends through
LIBRARIES = {"httpx": (httpx, httpcore), "httpx2": (httpx2, httpcore2)}


@pytest.fixture
def lc(request: pytest.FixtureRequest) -> Iterator[LeakCheck]:
    check = LeakCheck(seed="respx-httpx2", namespace=request.node.nodeid, sinks=[])
    with check:
        yield check


def send(lib: ModuleType, mode: str, request_args: dict[str, Any], **client: Any) -> Any:
    """One request with ``lib``'s sync or async client; the built request is kept in
    ``request_args["sent"]``."""
    args = {k: v for k, v in request_args.items() if k != "sent"}
    client.setdefault("verify", NO_CA)
    if mode == "sync":
        with lib.Client(**client) as sync_client:
            request_args["sent"] = sync_client.build_request(**args)
            response = sync_client.send(request_args["sent"])
            response.read()
            return response

    async def go() -> Any:
        async with lib.AsyncClient(**client) as async_client:
            request_args["sent"] = async_client.build_request(**args)
            response = await async_client.send(request_args["sent"])
            await response.aread()
            return response

    return asyncio.run(go())


def in_family(core: ModuleType, lib: ModuleType, types: list[type[BaseException]]) -> list[Any]:
    """The httpx-family types of a chain written for httpx, in ``lib``'s family."""
    out: list[Any] = []
    for t in types:
        if t.__module__.startswith("httpcore"):
            out.append(getattr(core, t.__name__))
        elif t.__module__.startswith("httpx"):
            out.append(getattr(lib, t.__name__))
        else:
            out.append(t)
    return out


def test_both_libraries_are_intercepted() -> None:
    assert [c.name for c in CLIENTS] == ["httpx", "httpx2"]
    assert CLIENTS[1].core is httpcore2 and CLIENTS[1].mocker == "httpcore2"


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("stage", sorted(ANSWERED))
def test_answered_stage_on_httpx2(lc: LeakCheck, stage: str, mode: str) -> None:
    fault = lc.force(stage, via="respx")
    with watch(lookup=HOST) as names, watch(port=443) as connects:
        response = send(httpx2, mode, {"method": "POST", "url": fault.url + "/v1/d", "json": {}})
    assert isinstance(response, httpx2.Response)
    assert response.status_code == STAGES[stage].http_status
    expected = reply_for(stage, lambda kind: "x")
    assert expected is not None
    assert response.headers["content-type"] == expected.header("Content-Type")
    assert fault.fired and fault.calls == 1
    assert fault.evidence == [
        f"respx intercepted POST /v1/d (request 1): answered {response.status_code}"
    ]
    assert names.lookups == 0 and connects.connects == 0


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("stage", sorted(SYNC_FAILURES))
def test_failing_stage_raises_what_httpx2_raises(lc: LeakCheck, stage: str, mode: str) -> None:
    fault = lc.force(stage, via="respx")
    expected_type, message, causes = (SYNC_FAILURES if mode == "sync" else ASYNC_FAILURES)[stage]
    args: dict[str, Any] = {"method": "POST", "url": fault.url + "/v1/d", "json": {}}
    with pytest.raises(httpx2.HTTPError) as info:
        send(httpx2, mode, args)
    exc = info.value
    assert type(exc) is getattr(httpx2, expected_type.__name__)
    assert not isinstance(exc, httpx.HTTPError)  # a gateway catching httpx2's class sees it
    assert [type(e) for e in chain(exc)[1:]] == in_family(httpcore2, httpx2, causes)
    assert exc.request is args["sent"]
    assert fault.fired and fault.calls == 1


@pytest.mark.parametrize(("stage", "mode"), REAL)
def test_same_exception_as_real_httpx2(
    lc: LeakCheck, certs: dict[str, Any], stage: str, mode: str
) -> None:
    """httpx2 failing for real, then under the fault at the same URL: same types, same
    messages, all the way down the chain."""
    timeout = 0.2 if stage == "timeout_after_send" else 0.5
    with real_upstream(stage, certs, "httpx") as (url, verify):
        real_args = {"method": "POST", "url": url + "/v1/d?page=2", "json": {"a": 1}}
        with pytest.raises(httpx2.HTTPError) as real:
            send(httpx2, mode, real_args, verify=verify, timeout=timeout)
    fault = lc.force(stage, via="respx", url=url)
    fake_args = {"method": "POST", "url": url + "/v1/d?page=2", "json": {"a": 1}}
    with pytest.raises(httpx2.HTTPError) as fake:
        send(httpx2, mode, fake_args, verify=verify, timeout=timeout)
    assert shape(fake.value) == shape(real.value)
    assert fake.value.request is fake_args["sent"]
    assert fault.fired


def test_one_fault_answers_both_libraries(lc: LeakCheck) -> None:
    fault = lc.force("http_429", via="respx")
    assert httpx.get(fault.url + "/a", verify=NO_CA).status_code == 429
    assert httpx2.get(fault.url + "/b", verify=NO_CA).status_code == 429
    with pytest.raises(httpx2.ConnectError):  # each library still gets its own classes
        lc.force("connection_refused", via="respx", url="https://b.test")
        httpx2.get("https://b.test/x", verify=NO_CA)
    assert fault.calls == 2


def test_coexists_with_the_httpx2_mock_fixture(lc: LeakCheck, httpx2_mock: respx.Router) -> None:
    httpx2_mock.get("https://other.test/health").respond(204)
    fault = lc.force("http_5xx", via="respx")
    assert httpx2.get("https://other.test/health", verify=NO_CA).status_code == 204
    assert httpx2.post(fault.url + "/v1/d", verify=NO_CA).status_code == 503
    assert fault.calls == 1 and fault.other_calls == 0


def test_requests_elsewhere_fail_clearly_on_httpx2(lc: LeakCheck) -> None:
    fault = lc.force("http_401", via="respx")
    with pytest.raises(AssertionError) as info:
        httpx2.get("https://elsewhere.test/v1/d", verify=NO_CA)
    assert "answers only https://api.upstream.test" in str(info.value)
    assert fault.other_calls == 1 and not fault.fired


def test_stop_restores_httpcore2(lc: LeakCheck) -> None:
    originals = (
        httpcore2.ConnectionPool.handle_request,
        httpcore2.AsyncConnectionPool.handle_async_request,
    )
    fault = lc.force("http_401", via="respx")
    assert httpcore2.ConnectionPool.handle_request is not originals[0]
    fault.stop()
    fault.stop()
    assert (
        httpcore2.ConnectionPool.handle_request,
        httpcore2.AsyncConnectionPool.handle_async_request,
    ) == originals


# --- never more lenient than the real client ---------------------------------------------------


@contextmanager
def accepting_server() -> Iterator[int]:
    """A loopback server that accepts connections and answers 200 to what arrives: the real
    client refuses a malformed header after connecting, before sending."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.settimeout(0.05)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except (TimeoutError, OSError):
                continue
            with conn:
                conn.settimeout(0.2)
                try:
                    if conn.recv(65536):
                        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                except OSError:
                    pass

    thread = threading.Thread(target=serve, name="accepting-upstream", daemon=True)
    thread.start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        stop.set()
        thread.join(2.0)
        listener.close()


@pytest.mark.parametrize("ending", ["\n", "\r\n"])
@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_malformed_header_refused_as_for_real(
    lc: LeakCheck, library: str, mode: str, ending: str
) -> None:
    lib, core = LIBRARIES[library]
    value = "Bearer " + lc.secret("bearer") + ending
    with accepting_server() as port:
        url = f"http://127.0.0.1:{port}"
        real_args = {"method": "GET", "url": url + "/v1/d", "headers": {"Authorization": value}}
        with pytest.raises(lib.LocalProtocolError) as real:
            send(lib, mode, real_args, timeout=0.5)
    fault = lc.force("http_401", via="respx", url=url)
    fake_args = {"method": "GET", "url": url + "/v1/d", "headers": {"Authorization": value}}
    with pytest.raises(lib.LocalProtocolError) as fake:
        send(lib, mode, fake_args)
    assert shape(fake.value) == shape(real.value)
    assert [type(e) for e in chain(fake.value)] == [
        lib.LocalProtocolError,
        core.LocalProtocolError,
        h11.LocalProtocolError,
    ]
    lc.exception_reached_caller(fake.value)  # the real text carries the credential
    assert {leak.finding.kind for leak in lc.findings()} == {"bearer"}
    assert fault.fired and fault.calls == 1
    self_scan("\n".join(fault.evidence), lc.secrets, "evidence")
    assert fault.evidence == [
        "respx intercepted GET /v1/d (request 1): the client refused to send it "
        "(h11: illegal header value), raised LocalProtocolError"
    ]


@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_a_valid_header_is_answered(lc: LeakCheck, library: str) -> None:
    lib, _ = LIBRARIES[library]
    fault = lc.force("http_401", via="respx")
    value = "Bearer " + lc.secret("bearer")
    response = lib.get(fault.url + "/v1/d", headers={"Authorization": value}, verify=NO_CA)
    assert response.status_code == 401


@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_connecting_fails_before_the_header_is_checked(lc: LeakCheck, library: str) -> None:
    """As for real: a name that does not resolve fails the call before h11 sees a header."""
    lib, core = LIBRARIES[library]
    fault = lc.force("dns_failure", via="respx")
    headers = {"Authorization": "Bearer " + lc.secret("bearer") + "\n"}
    with pytest.raises(lib.ConnectError) as info:
        lib.get(fault.url + "/v1/d", headers=headers, verify=NO_CA)
    assert type(chain(info.value)[1]) is core.ConnectError
    assert fault.evidence == ["respx intercepted GET /v1/d (request 1): raised ConnectError"]
