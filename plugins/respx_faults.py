"""The ``respx`` fault transport: force an HTTP stage on httpx clients, with no network.

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

Proof: ``record()`` runs when the mock answers or raises (for ``truncated_body``: when the
client reads up to the cut). Evidence names the method and path, never the query or a
header. A request to another URL is counted and handed to the next respx router; if none
matches it fails with an ``AssertionError`` (respx's ``AllMockedAssertionError``), never
reaching the network. What the mock cannot see: a client's ``verify=False`` (a TLS stage
still raises), httpx's connect ``retries`` (one attempt is answered), real waiting (timeouts
raise at once), and trio's messages.
"""

from __future__ import annotations

import errno
import ipaddress
from collections.abc import AsyncIterator, Callable, Iterator
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

__all__ = ["DEFAULT_URL", "FAULTS", "RespxFault"]

#: stands in for the resolved address in asyncio's "Connect call failed" (RFC 5737)
_DOCUMENTATION_ADDRESS = "192.0.2.1"


# --- respx ------------------------------------------------------------------------------------


def peer_closed_error(received: int, expected: int) -> httpcore.RemoteProtocolError:
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
    error = httpcore.RemoteProtocolError(cause)
    error.__cause__ = cause
    return error


class _CutStream(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A body that ends early: yields what arrived, then fails like the real read."""

    def __init__(self, body: bytes, declared: int, on_cut: Callable[[], None]) -> None:
        self._body = body
        self._declared = declared
        self._on_cut = on_cut

    def _cut(self) -> httpcore.RemoteProtocolError:
        self._on_cut()
        return peer_closed_error(len(self._body), self._declared)

    def __iter__(self) -> Iterator[bytes]:
        yield self._body
        raise self._cut()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self._body
        raise self._cut()


class _FaultRouter(respx.MockRouter):
    """A router with no routes: every request respx hands it goes to the fault. It tells
    sync from async calls apart, whose real failures read differently."""

    def __init__(self, fault: RespxFault) -> None:
        super().__init__(assert_all_called=False, assert_all_mocked=True)
        self._fault = fault

    def handler(self, request: httpx.Request) -> httpx.Response:
        return self._fault._answer(request, asynchronous=False)

    async def async_handler(self, request: httpx.Request) -> httpx.Response:
        return self._fault._answer(request, asynchronous=True)


class RespxFault(MockedHTTPFault):
    """Force an HTTP ``stage`` on httpx clients calling under ``url``.

    ``method`` restricts the fault to one HTTP method. ``fault.url`` is the base URL to
    give the gateway, ``fault.calls`` counts intercepted requests, ``fault.other_calls``
    the requests to other URLs that reached this fault's router.
    """

    transport = "respx"
    read_hint = "read the response (response.read(), .json(), .text)"

    def __init__(self, stage: str | Stage, **kwargs: Any) -> None:
        super().__init__(stage, **kwargs)
        self._router: _FaultRouter | None = None

    def start(self) -> None:
        if self._router is None:
            router = _FaultRouter(self)
            router.start()
            self._router = router

    def stop(self) -> None:
        router, self._router = self._router, None
        if router is not None:
            router.stop(quiet=True)

    # --- answering ----------------------------------------------------------------------------

    def _target(self, request: httpx.Request) -> str | None:
        url = request.url
        return self.target(request.method, url.scheme, url.host, url.port, url.path)

    def _answer(self, request: httpx.Request, *, asynchronous: bool) -> httpx.Response:
        target = self._target(request)
        if target is None:
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
            return httpx.Response(status, headers=list(headers), content=body)
        name = self.stage.name
        if name in RAISED:
            exc = self._failure(request, asynchronous)
            self.record(f"{where}: raised {type(exc).__name__}")
            raise exc
        reply = self._reply
        assert reply is not None  # every answered stage has one in the corpus
        if name == "truncated_body":
            declared = reply.declared_length or len(reply.body) + 1
            cut = f"{where}: the client read the body up to its cut at {len(reply.body)} of "

            def on_cut() -> None:
                self.record(f"{cut}{declared} bytes")

            return httpx.Response(
                reply.status,
                headers=[*reply.headers, ("Content-Length", str(declared))],
                stream=_CutStream(reply.body, declared, on_cut),
            )
        seen_url = (
            f"{request.url.scheme}://{request.url.netloc.decode('ascii')}"
            f"{request.url.raw_path.decode('ascii')}"
        )
        seen_headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw]
        body = reply.reflected(request.method, seen_url, seen_headers)
        self.record(f"{where}: answered {reply.status}")
        return httpx.Response(reply.status, headers=list(reply.headers), content=body)

    def _failure(self, request: httpx.Request, asynchronous: bool) -> Exception:
        """The httpcore exception the real transport raises at this stage (httpx maps it
        to its own type and attaches ``.request``), with its real cause chain."""
        name = self.stage.name
        innermost: BaseException
        exc_type: type[Exception]  # an httpcore error: connect, read or timeout
        if name == "dns_failure":
            leaf: BaseException = name_not_known()
            innermost, exc_type = leaf, httpcore.ConnectError
        elif name == "connection_refused":
            exc_type = httpcore.ConnectError
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
            exc_type = httpcore.ConnectError
        elif name in ("timeout_before_send", "timeout_after_send"):
            # a socket timeout says "timed out"; anyio's deadline raises a bare TimeoutError
            leaf = innermost = TimeoutError() if asynchronous else TimeoutError("timed out")
            exc_type = (
                httpcore.ConnectTimeout if name == "timeout_before_send" else httpcore.ReadTimeout
            )
        else:  # reset_after_send
            exc_type = httpcore.ReadError
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


FAULTS = {"respx": RespxFault}
