"""The ``respx`` fault transport: force an HTTP stage on httpx and httpx2 clients, offline.

    fault = leakcheck.force("http_401", via="respx", placement="upstream-reflects-request")
    httpx.post(fault.url + "/v1/deployments", headers=...)   # gets the 401 reply

The fault starts its own ``respx.MockRouter`` (registered beside any router of the test,
such as the ``respx_mock`` fixture) and answers every request under ``fault.url``:

* answered stages (``http_401`` ... ``redirect_signed_url``) serve the stage's upstream
  reply with the placement's headers and body (``leakcheck.faults.reply_for``); a
  reflecting upstream echoes the request it actually received. A redirect's ``Location``
  host is intercepted too: a client that follows it gets ``403`` with an S3-style "Request
  has expired" body, so a careless ``raise_for_status()`` carries the signed URL;
* connection stages raise at the httpcore level, where the real failure happens, so
  httpx's own code maps them (``httpx.ConnectError`` from ``httpcore.ConnectError`` from
  the OS error) and attaches ``.request``, exactly as for a real failure. Messages are the
  ones httpx produces on Linux: sync clients say ``[Errno 111] Connection refused``,
  ``timed out``, ``[Errno 104] Connection reset by peer``; async clients (anyio on
  asyncio) say ``All connection attempts failed`` and give empty timeout and reset
  messages, as the real ones do;
* ``truncated_body`` sends the headers and part of the body, then fails while the body is
  read with h11's own "peer closed connection without sending complete message body".

httpx2 (Pydantic's fork, under the OpenAI, Anthropic and MCP SDKs) is intercepted the same
way one layer down, in httpcore2, through respx's ``httpcore2`` mocker (``pytest-httpx2``'s,
so a test's ``httpx2_mock`` routes and the fault share one chain); a failure is raised as an
httpcore2 exception, which httpx2 maps to its own class with its own chain. Both libraries
installed side by side are each intercepted by their own router.

The mock is never more lenient than the client: before answering, the request line and
headers go through h11's own event validation, as httpcore's HTTP/1.1 connection does once
it has connected. A header value with a trailing newline (a credential read from a mounted
secret or an ``.env`` line) fails as it does for real: ``LocalProtocolError("Illegal header
value b'Bearer ...\\n'")``, which carries the credential. Stages that fail while
connecting (DNS, refused, TLS, connect timeout) fail first, as they do for real.

Proof: ``record()`` runs when the mock answers or raises (for ``truncated_body``: when the
client reads up to the cut). Evidence names the method and path, never the query or a
header. A request to another URL is counted and handed to the next respx router; if none
matches it fails with an ``AssertionError`` (respx's ``AllMockedAssertionError``), never
reaching the network. What the mock cannot see: a client's ``verify=False`` (a TLS stage
still raises), httpx's connect ``retries`` (one attempt is answered), real waiting (timeouts
raise at once), and trio's messages.

Log records: httpcore's (httpcore2's) HTTP/1.1 connection traces each request at DEBUG
through its own ``Trace``, and a careless DEBUG configuration emits what they carry: the
response headers (``Set-Cookie``, a signed ``Location``) and h11's refusal, which quotes the
header value. The mock makes those records, on the same logger with the same text
(``send_request_headers``, ``send_request_body``, ``receive_response_headers`` started,
complete or failed, and ``response_closed`` after a failure). It does not make the
connection logger's (``connect_tcp``, ``start_tls``: host, port and the connect error) nor
the body's (``receive_response_body``), and it does not call a request's ``trace``
extension.
"""

from __future__ import annotations

import errno
import http
import ipaddress
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import anyio
import h11
import httpcore
import httpx
import respx
from respx.models import AllMockedAssertionError

from leakcheck.httpfaults import (
    DEFAULT_URL,
    RAISED,
    SIGNED_URL_ANSWER,
    TLS_STAGES,
    MockedHTTPFault,
    cert_verify_error,
    name_not_known,
    os_error,
    safe_path,
)
from leakcheck.stages import Stage

__all__ = ["CLIENTS", "DEFAULT_URL", "FAULTS", "ClientLibrary", "RespxFault", "client_libraries"]

#: stands in for the resolved address in asyncio's "Connect call failed" (RFC 5737)
_DOCUMENTATION_ADDRESS = "192.0.2.1"


# --- the client libraries ---------------------------------------------------------------------


@dataclass(frozen=True)
class ClientLibrary:
    """An httpx-family client the fault intercepts: its name, the httpcore it sends through
    (whose exceptions the client maps to its own), and the respx mocker patching that core."""

    name: str
    core: ModuleType
    mocker: str


def _httpcore2_mocker() -> ModuleType | None:
    """httpcore2, with respx's ``httpcore2`` mocker registered: ``pytest-httpx2``'s if it
    is installed (so a test's ``httpx2_mock`` and the fault share one chain of routers), else
    the same ten lines here (respx refuses a second mocker of one name)."""
    try:
        import httpcore2
    except ImportError:
        return None
    from respx.mocks import HTTPCoreMocker, Mocker

    if "httpcore2" not in Mocker.registry:
        try:
            import pytest_httpx2  # noqa: F401  # registers respx's httpcore2 mocker
        except ImportError:

            class HTTPCore2Mocker(HTTPCoreMocker):
                name = "httpcore2"
                targets = [
                    "httpcore2._sync.connection.HTTPConnection",
                    "httpcore2._sync.connection_pool.ConnectionPool",
                    "httpcore2._sync.http_proxy.HTTPProxy",
                    "httpcore2._async.connection.AsyncHTTPConnection",
                    "httpcore2._async.connection_pool.AsyncConnectionPool",
                    "httpcore2._async.http_proxy.AsyncHTTPProxy",
                ]

    return httpcore2


def client_libraries() -> tuple[ClientLibrary, ...]:
    """httpx, and httpx2 when it is installed."""
    found = [ClientLibrary("httpx", httpcore, "httpcore")]
    httpcore2 = _httpcore2_mocker()
    if httpcore2 is not None:
        found.append(ClientLibrary("httpx2", httpcore2, "httpcore2"))
    return tuple(found)


#: the libraries this process can intercept, found once at import
CLIENTS = client_libraries()
_HTTPX = CLIENTS[0]


# --- respx ------------------------------------------------------------------------------------


def refused_request(request: httpx.Request, core: ModuleType) -> Exception | None:
    """What the real client raises for a request line or header h11 will not send (a value
    with a newline, a name with a space), or None: h11's own validation and wording, mapped
    as httpcore's HTTP/1.1 connection maps it, so the message is the real one."""
    try:
        h11.Request(
            method=request.method.encode("ascii"),
            target=request.url.raw_path,
            headers=list(request.headers.raw),
        )
    except h11.LocalProtocolError as cause:
        error: Exception = core.LocalProtocolError(cause)
        error.__cause__ = cause
        return error
    return None


def peer_closed_error(received: int, expected: int, core: ModuleType = httpcore) -> Exception:
    """What httpcore raises when the body ends early, built by h11 itself so its wording
    follows the installed h11."""
    conn = h11.Connection(our_role=h11.CLIENT)
    conn.send(h11.Request(method="GET", target="/", headers=[("Host", "upstream")]))
    conn.send(h11.EndOfMessage())
    head = f"HTTP/1.1 200 OK\r\nContent-Length: {expected}\r\n\r\n".encode("ascii")
    conn.receive_data(head + b"x" * received)
    conn.receive_data(b"")
    cause: Exception
    try:
        while conn.next_event() not in (h11.NEED_DATA, h11.PAUSED):
            pass
        cause = h11.RemoteProtocolError(
            "peer closed connection without sending complete message body "
            f"(received {received} bytes, expected {expected})"
        )
    except h11.RemoteProtocolError as exc:
        cause = exc
    error: Exception = core.RemoteProtocolError(cause)
    error.__cause__ = cause
    return error


class _CutStream(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A body that ends early: yields what arrived, then fails like the real read."""

    def __init__(
        self, body: bytes, declared: int, on_cut: Callable[[], None], core: ModuleType
    ) -> None:
        self._body = body
        self._declared = declared
        self._on_cut = on_cut
        self._core = core

    def _cut(self) -> Exception:
        self._on_cut()
        return peer_closed_error(len(self._body), self._declared, self._core)

    def __iter__(self) -> Iterator[bytes]:
        yield self._body
        raise self._cut()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self._body
        raise self._cut()


class _FaultRouter(respx.MockRouter):
    """A router with no routes: every request respx hands it, from one client library, goes
    to the fault. It tells sync from async calls apart, whose real failures read
    differently."""

    def __init__(self, fault: RespxFault, client: ClientLibrary) -> None:
        super().__init__(assert_all_called=False, assert_all_mocked=True, using=client.mocker)
        self._fault = fault
        self._client = client

    def handler(self, request: httpx.Request) -> httpx.Response:
        return self._fault._answer(request, asynchronous=False, client=self._client)

    async def async_handler(self, request: httpx.Request) -> httpx.Response:
        return self._fault._answer(request, asynchronous=True, client=self._client)


class RespxFault(MockedHTTPFault):
    """Force an HTTP ``stage`` on httpx and httpx2 clients calling under ``url``.

    ``method`` restricts the fault to one HTTP method. ``fault.url`` is the base URL to
    give the gateway, ``fault.calls`` counts intercepted requests, ``fault.other_calls``
    the requests to other URLs that reached this fault's router.
    """

    transport = "respx"
    read_hint = "read the response (response.read(), .json(), .text)"

    def __init__(self, stage: str | Stage, **kwargs: Any) -> None:
        super().__init__(stage, **kwargs)
        self._routers: list[_FaultRouter] = []

    def start(self) -> None:
        if not self._routers:
            for client in CLIENTS:
                router = _FaultRouter(self, client)
                router.start()
                self._routers.append(router)

    def stop(self) -> None:
        routers, self._routers = self._routers, []
        for router in routers:
            router.stop(quiet=True)

    # --- answering ----------------------------------------------------------------------------

    def _target(self, request: httpx.Request) -> str | None:
        url = request.url
        return self.target(request.method, url.scheme, url.host, url.port, url.path)

    def _answer(
        self, request: httpx.Request, *, asynchronous: bool, client: ClientLibrary = _HTTPX
    ) -> httpx.Response:
        target = self._target(request)
        if target is None:
            __tracebackhide__ = True  # (the gateway's request went elsewhere: its line shown)
            self.other_calls += 1
            # respx tries the next router on this error, and raises it if none matches
            raise AllMockedAssertionError(
                f"leakcheck: the respx fault for stage {self.stage.name} answers only "
                f"{self._base.origin}; this {request.method} request went elsewhere and no "
                "other respx route matched it (exc.request.url shows where)"
            )
        self.calls += 1
        path = safe_path(request.url.raw_path.decode("ascii", "replace"), self._known)
        where = f"respx intercepted {request.method} {path} (request {self.calls})"
        if target == "redirect":
            status, headers, body = SIGNED_URL_ANSWER
            self.record(f"{where} on the redirect target: answered {status}")
            _trace_http11(client.core, request, answer=(status, list(headers)))
            return httpx.Response(status, headers=list(headers), content=body)
        name = self.stage.name
        if name in RAISED and self.stage.bytes_sent is False:
            # connecting fails before a byte of the request is written or validated
            exc = self._failure(request, asynchronous, client.core)
            self.record(f"{where}: raised {type(exc).__name__}")
            raise exc
        refused = refused_request(request, client.core)
        if refused is not None:
            _trace_http11(client.core, request, refused=refused)
            self.record(
                f"{where}: the client refused to send it (h11: {_refusal_reason(refused)}), "
                f"raised {type(refused).__name__}"
            )
            raise refused
        if name in RAISED:
            exc = self._failure(request, asynchronous, client.core)
            _trace_http11(client.core, request, read_failure=exc)
            self.record(f"{where}: raised {type(exc).__name__}")
            raise exc
        reply = self._reply
        assert reply is not None  # every answered stage has one in the corpus
        if name == "truncated_body":
            declared = reply.declared_length or len(reply.body) + 1
            cut = f"{where}: the client read the body up to its cut at {len(reply.body)} of "

            def on_cut() -> None:
                self.record(f"{cut}{declared} bytes")

            answer = (reply.status, [*reply.headers, ("Content-Length", str(declared))])
            _trace_http11(client.core, request, answer=answer)
            return httpx.Response(
                reply.status,
                headers=[*reply.headers, ("Content-Length", str(declared))],
                stream=_CutStream(reply.body, declared, on_cut, client.core),
            )
        seen_url = (
            f"{request.url.scheme}://{request.url.netloc.decode('ascii')}"
            f"{request.url.raw_path.decode('ascii')}"
        )
        seen_headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw]
        body = reply.reflected(request.method, seen_url, seen_headers)
        self.record(f"{where}: answered {reply.status}")
        answer = (reply.status, [*reply.headers, ("Content-Length", str(len(body)))])
        _trace_http11(client.core, request, answer=answer)
        return httpx.Response(reply.status, headers=list(reply.headers), content=body)

    def _failure(
        self, request: httpx.Request, asynchronous: bool, core: ModuleType = httpcore
    ) -> Exception:
        """The httpcore (httpcore2) exception the real transport raises at this stage (the
        client maps it to its own type and attaches ``.request``), with its real cause
        chain."""
        name = self.stage.name
        innermost: BaseException
        exc_type: type[Exception]  # a core error: connect, read or timeout
        if name == "dns_failure":
            leaf: BaseException = name_not_known()
            innermost, exc_type = leaf, core.ConnectError
        elif name == "connection_refused":
            exc_type = core.ConnectError
            if asynchronous:  # anyio tries each resolved address, then gives up
                host = request.url.host
                try:
                    address = str(ipaddress.ip_address(host))
                except ValueError:
                    address = _DOCUMENTATION_ADDRESS
                port = request.url.port or (443 if request.url.scheme == "https" else 80)
                innermost = ConnectionRefusedError(
                    errno.ECONNREFUSED, f"Connect call failed {(address, port)!r}"
                )
                leaf = OSError("All connection attempts failed")
                leaf.__cause__ = innermost
            else:
                leaf = innermost = os_error(ConnectionRefusedError, errno.ECONNREFUSED)
        elif name in TLS_STAGES:
            leaf = innermost = cert_verify_error(name, request.url.host)
            exc_type = core.ConnectError
        elif name in ("timeout_before_send", "timeout_after_send"):
            # a socket timeout says "timed out"; anyio's deadline raises a bare TimeoutError
            leaf = innermost = TimeoutError() if asynchronous else TimeoutError("timed out")
            exc_type = core.ConnectTimeout if name == "timeout_before_send" else core.ReadTimeout
        else:  # reset_after_send
            exc_type = core.ReadError
            innermost = os_error(ConnectionResetError, errno.ECONNRESET)
            if asynchronous:
                leaf = anyio.BrokenResourceError()
                leaf.__cause__ = innermost
            else:
                leaf = innermost
        cause = self.placed.cause_exception() if self.placed is not None else None
        if cause is not None:  # the injected cause rides on the real chain
            innermost.__cause__ = cause
        error = exc_type(leaf)
        error.__cause__ = leaf
        return error


class _CoreRequest:
    """Stands in for the httpcore request in a trace record (``request=<Request [b'GET']>``)."""

    def __init__(self, method: str) -> None:
        self.method = method.encode("ascii", "replace")

    def __repr__(self) -> str:
        return f"<Request [{self.method!r}]>"


def _trace_http11(
    core: ModuleType,
    request: httpx.Request,
    *,
    refused: BaseException | None = None,
    read_failure: BaseException | None = None,
    answer: tuple[int, list[tuple[str, str]]] | None = None,
) -> None:
    """The DEBUG records httpcore's HTTP/1.1 connection makes for ``request`` (its
    ``Trace``, on ``<core>.http11``): refused while its headers were written, failed while
    the answer was awaited, or answered with ``answer`` (status and headers)."""
    logger = logging.getLogger(f"{core.__name__}.http11")
    trace_type = getattr(getattr(core, "_trace", None), "Trace", None)
    if trace_type is None or not logger.isEnabledFor(logging.DEBUG):
        return
    kwargs = {"request": _CoreRequest(request.method)}

    def traced(name: str, outcome: dict[str, Any], started: dict[str, Any] = kwargs) -> None:
        trace = trace_type(name, logger, None, started)
        trace.trace(f"{name}.started", started)
        trace.trace(f"{name}.{'failed' if 'exception' in outcome else 'complete'}", outcome)

    done: dict[str, Any] = {"return_value": None}
    if refused is not None:
        traced("send_request_headers", {"exception": refused})
    else:
        traced("send_request_headers", done)
        traced("send_request_body", done)
        if read_failure is not None:
            traced("receive_response_headers", {"exception": read_failure})
        elif answer is not None:
            status, headers = answer
            phrase = http.HTTPStatus(status).phrase.encode("ascii")
            raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]
            traced("receive_response_headers", {"return_value": (b"HTTP/1.1", status, phrase, raw)})
            return
    traced("response_closed", done, {})


def _refusal_reason(error: Exception) -> str:
    """Which part h11 refused, never the value (its message quotes the value)."""
    text = str(error.__cause__ or error)
    for words in ("Illegal header value", "Illegal header name", "Illegal target", "Illegal"):
        if text.startswith(words):
            return words.lower()
    return "invalid request"


FAULTS = {"respx": RespxFault}
