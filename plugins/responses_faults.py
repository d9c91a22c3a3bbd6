"""The ``responses`` fault transport: force an HTTP stage on requests clients, no network.

    fault = leakcheck.force("dns_failure", via="responses", placement="query-api-key")
    requests.post(fault.url + "/v1/deployments", params=..., headers=...)  # raises

The fault starts its own ``responses.RequestsMock`` and answers every request under
``fault.url``:

* answered stages (``http_401`` ... ``redirect_signed_url``) serve the stage's upstream
  reply with the placement's headers (repeated ones stay repeated: two ``Set-Cookie`` make
  two cookies) and body; a reflecting upstream echoes the request it actually received,
  with the ``Host`` header the wire carries. requests follows a redirect by default: the
  ``Location`` host is intercepted too and answers ``403`` with an S3-style "Request has
  expired" body, so ``raise_for_status()`` carries the signed URL;
* connection stages raise what ``HTTPAdapter.send`` raises, built from urllib3's and
  requests' own classes along their own code path: the OS error, urllib3's wrapper
  (``NameResolutionError``, ``NewConnectionError``, ``ConnectTimeoutError``,
  ``ReadTimeoutError``, ``SSLError``, ``ProtocolError('Connection aborted.', ...)``), the
  adapter's real ``Retry`` deciding between re-raising and ``MaxRetryError`` (so a mounted
  ``HTTPAdapter(max_retries=3)`` gets what it would get, minus the back-off sleeps), then
  requests' mapping with ``request=`` set. So ``str(exc)`` carries host, port and the path
  *with its query* where the real one does (``Max retries exceeded with url:
  /v1/deployments?api_key=...``), and the timeouts name the client's own values;
* ``truncated_body`` serves a ``Content-Length`` larger than the body: urllib3 itself
  raises ``IncompleteRead`` while reading and requests wraps it in
  ``ChunkedEncodingError``, which, like the real one, carries no ``.request``.

Proof: ``record()`` runs when the mock answers or raises (for ``truncated_body``: when the
client reads past the cut). Evidence names the method and path, never the query or a
header. A TLS stage asked with ``verify=False`` does not fire: a real client would have
accepted the certificate, and the harness error says so.

The mock is never more lenient than the client: the request line and headers go through
``http.client``'s own ``putrequest``/``putheader`` (which urllib3 calls, with their checks
and wording) before the fault answers, so a header value the real client cannot encode
(``'latin-1' codec can't encode character``) or will not send fails the same way. Over
``http://`` urllib3 writes the headers before it connects, so that failure comes first; over
``https://`` it connects first, so a connection stage fails first, as for real. (requests
itself refuses a value with a newline while preparing the request, before any transport,
mocked or real: the fault watches ``PreparedRequest.prepare_headers`` and records that
refusal as its proof, for a request to its URL.)

Requests to other URLs: if another ``responses`` mock was active when the fault started,
they pass to it (start yours first); otherwise they fail with a
``requests.exceptions.ConnectionError`` naming no URL, and the real network is never used.
"""

from __future__ import annotations

import contextvars
import errno
import http.client
import io
import logging
import re
from collections.abc import Callable
from typing import Any, cast
from urllib.parse import urlsplit

import requests
import responses
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import (
    ConnectTimeoutError,
    MaxRetryError,
    NameResolutionError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
    ResponseError,
)
from urllib3.exceptions import SSLError as Urllib3SSLError
from urllib3.util.retry import Retry
from urllib3.util.timeout import Timeout
from urllib3.util.url import _encode_target

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

__all__ = ["DEFAULT_URL", "FAULTS", "ResponsesFault"]

#: the adapter sending the request being answered (for its retries)
_ADAPTER: contextvars.ContextVar[HTTPAdapter | None] = contextvars.ContextVar(
    "leakcheck_responses_adapter", default=None
)
_EVERY_URL = re.compile("")
#: urllib3's pool logger: its records are made as urllib3 makes them (``_PoolLog``)
_POOL_LOG = logging.getLogger("urllib3.connectionpool")


# --- responses --------------------------------------------------------------------------------


def _is_requests_send(send: object) -> bool:
    """Whether ``send`` is requests' own ``HTTPAdapter.send`` (no mock installed)."""
    return (
        getattr(send, "__module__", None) == "requests.adapters"
        and getattr(send, "__qualname__", None) == "HTTPAdapter.send"
    )


def _timeout(value: Any) -> Timeout:
    """The urllib3 ``Timeout`` that ``HTTPAdapter.send`` makes of ``timeout=``."""
    if isinstance(value, Timeout):
        return value
    if isinstance(value, tuple) and len(value) == 2:
        return Timeout(connect=value[0], read=value[1])
    return Timeout(connect=value, read=value)


def _seen_netloc(url: str) -> str:
    """``host[:port]`` as the upstream sees it: userinfo never goes on the wire."""
    return urlsplit(url).netloc.rpartition("@")[2]


def _pool_for(request: requests.PreparedRequest) -> tuple[HTTPConnectionPool, str]:
    """The urllib3 pool ``HTTPAdapter.send`` would use for ``request`` (no proxy), and the
    request target its ``urlopen`` uses: the path and query, percent-encoded as urllib3
    encodes them (in its messages, its retries and on the wire)."""
    parts = urlsplit(request.url or "")
    https = parts.scheme == "https"
    port = parts.port or (443 if https else 80)
    pool = (HTTPSConnectionPool if https else HTTPConnectionPool)(parts.hostname or "", port)
    return pool, _encode_target(request.path_url)


class _PoolLog:
    """The records urllib3's pool makes for one request, made by the mock as urllib3 makes
    them (same logger, format and arguments): a handler of the app renders them as it
    renders the real ones, so what they carry is judged (the retry WARNING names the
    request target, query and API key included)."""

    def __init__(self, pool: HTTPConnectionPool, target: str) -> None:
        self.pool, self.target = pool, target
        self.connections = 0

    def new_connection(self) -> None:
        self.connections += 1
        https = isinstance(self.pool, HTTPSConnectionPool)
        _POOL_LOG.debug(
            f"Starting new {'HTTPS' if https else 'HTTP'} connection (%d): %s:%s",
            self.connections, self.pool.host, self.pool.port,
        )  # fmt: skip

    def answered(self, method: str, status: int, length: int | None) -> None:
        _POOL_LOG.debug(
            '%s://%s:%s "%s %s %s" %s %s', self.pool.scheme, self.pool.host, self.pool.port,
            method, self.target, "HTTP/1.1", status, length,
        )  # fmt: skip

    def retrying(self, retries: Retry, error: BaseException) -> None:
        _POOL_LOG.warning(
            "Retrying (%r) after connection broken by '%r': %s", retries, error, self.target,
            extra={"__urllib3-retry-warning": {"host": self.pool.host}},
        )  # fmt: skip


class _PoolRetries:
    """The adapter's ``Retry`` as urllib3's ``urlopen`` increments it after a response it
    retries (a 503 in ``status_forcelist``): with the pool and the request target.
    responses increments it with the full URL, userinfo included, which the real
    ``MaxRetryError`` never names."""

    def __init__(self, retries: Retry, pool: HTTPConnectionPool, target: str) -> None:
        self._retries, self._pool, self._target = retries, pool, target

    def __getattr__(self, name: str) -> Any:
        return getattr(self._retries, name)

    def increment(self, method: str | None = None, url: str | None = None, **kwargs: Any) -> Any:
        del url  # (responses': the full URL)
        kwargs["_pool"] = self._pool
        retries = self._retries.increment(method, self._target, **kwargs)
        _POOL_LOG.debug("Retry: %s", self._target)
        return _PoolRetries(retries, self._pool, self._target)


class _CutBody(io.RawIOBase):
    """A body that ends before its ``Content-Length``; notes when the client reads past
    the cut (urllib3 then raises ``IncompleteRead`` itself)."""

    def __init__(self, body: bytes, on_cut: Callable[[], None]) -> None:
        self._body = body
        self._pos = 0
        self._on_cut: Callable[[], None] | None = on_cut

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        size = min(len(buffer), len(self._body) - self._pos)
        buffer[:size] = self._body[self._pos : self._pos + size]
        self._pos += size
        if size == 0 and self._on_cut is not None:
            on_cut, self._on_cut = self._on_cut, None
            on_cut()
        return size


class _Route(responses.CallbackResponse):
    """One route for the fault's upstream (and redirect target), or for every URL when no
    other mock is there to take the rest."""

    def __init__(self, fault: ResponsesFault, *, every_url: bool) -> None:
        super().__init__("GET", fault._base.origin, callback=fault._answer, content_type=None)
        self._fault = fault
        self._every_url = every_url

    def matches(self, request: requests.PreparedRequest) -> tuple[bool, str]:
        if self._every_url or self._fault._target(request) is not None:
            return True, ""
        return False, "not the fault's upstream"


class _Mock(responses.RequestsMock):
    """``RequestsMock`` that lets the fault see the adapter (its ``max_retries``)."""

    def _on_request(
        self, adapter: HTTPAdapter, request: requests.PreparedRequest, **kwargs: Any
    ) -> requests.Response:
        retries = kwargs.get("retries")
        if not isinstance(retries, _PoolRetries):
            pool, target = _pool_for(request)
            kwargs["retries"] = _PoolRetries(retries or adapter.max_retries, pool, target)
        token = _ADAPTER.set(adapter)
        try:
            return super()._on_request(adapter, request, **kwargs)
        finally:
            _ADAPTER.reset(token)

    def pass_everything(self) -> None:
        """Answer nothing from now on: if this mock's ``send`` is ever put back (someone
        restored past it), it is transparent."""
        self.reset()
        self.passthru_prefixes = (_EVERY_URL,)


#: faults that watch requests' own header check (it runs before any transport, mocked or
#: not), and what PreparedRequest.prepare_headers was before the first of them started
_header_watchers: list[ResponsesFault] = []
_original_prepare_headers: Callable[..., None] | None = None


def _watched_prepare_headers(self: requests.PreparedRequest, headers: Any) -> None:
    assert _original_prepare_headers is not None
    try:
        _original_prepare_headers(self, headers)
    except requests.exceptions.InvalidHeader:
        for fault in list(_header_watchers):
            fault._refused_while_preparing(self)
        raise


def _watch_headers(fault: ResponsesFault) -> None:
    global _original_prepare_headers
    if not _header_watchers:
        _original_prepare_headers = requests.PreparedRequest.prepare_headers
        requests.PreparedRequest.prepare_headers = _watched_prepare_headers  # type: ignore[method-assign]  # restored by the last fault's stop
    _header_watchers.append(fault)


def _unwatch_headers(fault: ResponsesFault) -> None:
    global _original_prepare_headers
    if fault in _header_watchers:
        _header_watchers.remove(fault)
        if not _header_watchers and _original_prepare_headers is not None:
            requests.PreparedRequest.prepare_headers = _original_prepare_headers  # type: ignore[method-assign]  # what it was before
            _original_prepare_headers = None


class ResponsesFault(MockedHTTPFault):
    """Force an HTTP ``stage`` on requests clients calling under ``url``.

    ``method`` restricts the fault to one HTTP method. ``fault.url`` is the base URL to
    give the gateway, ``fault.calls`` counts intercepted requests (each retry the adapter
    makes is one more), ``fault.other_calls`` the requests to other URLs it refused.
    """

    transport = "responses"
    read_hint = "read the response (response.content, .json(), .text)"
    others_verb = "refused"

    def __init__(self, stage: str | Stage, **kwargs: Any) -> None:
        super().__init__(stage, **kwargs)
        self.unverified_calls = 0
        self._mock: _Mock | None = None
        self._installed: object = None

    def start(self) -> None:
        if self._mock is not None:
            return
        previous = HTTPAdapter.send
        chained = not _is_requests_send(previous)
        mock = _Mock(
            assert_all_requests_are_fired=False,
            # responses' own annotations: a prefix may be a pattern too (what it stores),
            # and its _HTTPAdapterSend differs from requests' typed HTTPAdapter.send
            passthru_prefixes=cast("tuple[str, ...]", (_EVERY_URL,) if chained else ()),
            real_adapter_send=cast("responses._HTTPAdapterSend", previous),
        )
        mock.add(_Route(self, every_url=not chained))
        mock.start()
        self._mock, self._installed = mock, HTTPAdapter.send
        _watch_headers(self)

    def _refused_while_preparing(self, request: requests.PreparedRequest) -> None:
        """requests refused a header of a request to this fault's URL (a value with a
        newline) while preparing it: no transport ever sees such a request, mocked or real,
        so this is where the stage's request ends, and the proof that the case ran."""
        if request.url is None or self._target(request) is None:
            return
        self.calls += 1
        path = safe_path(request.path_url, self._known)
        self.record(
            f"responses saw requests refuse {request.method} {path} (request {self.calls}) "
            "while preparing it: invalid header value, raised InvalidHeader"
        )

    def stop(self) -> None:
        _unwatch_headers(self)
        mock, self._mock = self._mock, None
        if mock is None:
            return
        current = HTTPAdapter.send
        mock.pass_everything()
        mock.stop(allow_assert=False)
        if current is not self._installed:
            # Another mock was stopped out of order and already put back what it found
            # (or stacked on ours): keep its choice rather than reinstating a stale one.
            HTTPAdapter.send = current  # type: ignore[method-assign]  # what the other mock left

    def not_reached_reason(self) -> str:
        if self.unverified_calls:
            return (
                f"{self.unverified_calls} request(s) reached {self._base.origin} (responses) "
                "with verify=False: certificate verification was off, so a real client would "
                "have accepted the certificate and sent its credentials"
            )
        return super().not_reached_reason()

    # --- answering ----------------------------------------------------------------------------

    def _target(self, request: requests.PreparedRequest) -> str | None:
        parts = urlsplit(request.url or "")
        return self.target(
            request.method or "", parts.scheme, parts.hostname or "", parts.port, parts.path
        )

    def _answer(
        self, request: requests.PreparedRequest
    ) -> tuple[int, list[tuple[str, str]], bytes | io.BufferedReader]:
        target = self._target(request)
        if target is None:
            self.other_calls += 1
            raise requests.exceptions.ConnectionError(
                f"leakcheck: the responses fault for stage {self.stage.name} answers only "
                f"{self._base.origin} and no other responses mock was active when it "
                f"started; this {request.method} request went elsewhere and was not sent "
                "(exc.request.url shows where)",
                request=request,
            )
        kwargs = getattr(request, "req_kwargs", {})
        pool, request_target = _pool_for(request)
        adapter = _ADAPTER.get()
        if adapter is not None:
            # a CA bundle or client certificate file that does not exist: OSError naming its
            # path, before any connection
            adapter.cert_verify(
                pool, request.url or "", kwargs.get("verify", True), kwargs.get("cert")
            )
        self.calls += 1
        path = safe_path(request.path_url, self._known)
        where = f"responses intercepted {request.method} {path} (request {self.calls})"
        log = _PoolLog(pool, request_target)
        method = request.method or "GET"
        if target == "redirect":
            status, answer_headers, body = SIGNED_URL_ANSWER
            self.record(f"{where} on the redirect target: answered {status}")
            log.new_connection()
            log.answered(method, status, len(body))
            return status, [*answer_headers, ("Content-Length", str(len(body)))], body
        name = self.stage.name
        if name in TLS_STAGES and kwargs.get("verify", True) is False:
            self.unverified_calls += 1
            raise requests.exceptions.ConnectionError(
                f"leakcheck: stage {name} cannot happen: this request was sent with "
                "verify=False, so certificate verification is off",
                request=request,
            )
        connects_first = urlsplit(request.url or "").scheme == "https"
        if not (connects_first and name in RAISED and self.stage.bytes_sent is False):
            log.new_connection()
            refused = _refused_by_http_client(request, request_target)
            if refused is not None:
                self.record(
                    f"{where}: the client refused to send it (http.client), raised "
                    f"{type(refused).__name__}"
                )
                raise refused
        if name in RAISED:
            attempts = self.calls
            try:
                self._raise_failure(request, kwargs.get("timeout"), log)
            except requests.RequestException as exc:
                attempts = self.calls - attempts + 1
                retried = (
                    f" after {attempts} attempts (the adapter's retries)" if attempts > 1 else ""
                )
                self.record(f"{where}: raised {type(exc).__name__}{retried}")
                raise
        reply = self._reply
        assert reply is not None  # every answered stage has one in the corpus
        headers = list(reply.headers)
        if name == "truncated_body":
            declared = reply.declared_length or len(reply.body) + 1
            cut = f"{where}: the client read past the cut at {len(reply.body)} of {declared} bytes"
            raw = _CutBody(reply.body, lambda: self.record(cut))
            log.answered(method, reply.status, declared)
            return (
                reply.status,
                [*headers, ("Content-Length", str(declared))],
                io.BufferedReader(raw),
            )
        netloc = _seen_netloc(request.url or "")
        seen_url = f"{urlsplit(request.url or '').scheme}://{netloc}{request.path_url}"
        # what goes over the wire: requests passes a bytes value on as it is
        seen_headers = [
            (k, v.decode("latin-1") if isinstance(v, bytes) else v)
            for k, v in request.headers.items()
        ]
        if not any(k.lower() == "host" for k, _ in seen_headers):
            seen_headers.insert(0, ("Host", netloc))  # http.client adds it when sending
        body = reply.reflected(method, seen_url, seen_headers)
        self.record(f"{where}: answered {reply.status}")
        log.answered(method, reply.status, len(body))
        return reply.status, [*headers, ("Content-Length", str(len(body)))], body

    def _raise_failure(
        self, request: requests.PreparedRequest, timeout: Any, log: _PoolLog
    ) -> None:
        """Raise what ``HTTPAdapter.send`` raises at this stage: the urllib3 error of one
        attempt, through the adapter's ``Retry`` (each retry is another attempt, after
        urllib3's "Retrying" WARNING), then requests' own mapping."""
        pool, url = log.pool, log.target
        https = isinstance(pool, HTTPSConnectionPool)
        host, port = pool.host, int(pool.port or 0)
        limits = _timeout(timeout)
        adapter = _ADAPTER.get()
        retries = getattr(adapter, "max_retries", None)
        if not isinstance(retries, Retry):
            retries = Retry(0, read=False)  # HTTPAdapter's default
        if log.connections == 0:  # (over https, before the connection that fails)
            log.new_connection()
        while True:
            error = self._urllib3_error(pool, https, host, port, url, limits)
            try:
                retries = retries.increment(request.method, url, error=error, _pool=pool)
            except Exception as final:  # noqa: BLE001 - MaxRetryError or the error itself
                outcome = final
                break
            # what urlopen caught: a reset is the OS error, wrapped in ProtocolError after
            caught = error.__context__ if self.stage.name == "reset_after_send" else None
            log.retrying(retries, caught or error)
            self.calls += 1  # urllib3 would open another connection
            log.new_connection()
        raise _as_requests_error(outcome, request)

    def _urllib3_error(
        self,
        pool: HTTPConnectionPool,
        https: bool,
        host: str,
        port: int,
        url: str,
        limits: Timeout,
    ) -> Exception:
        """One failed attempt, as urllib3's connection and pool raise it."""
        name = self.stage.name
        connect_timeout = Timeout.resolve_default_timeout(limits.connect_timeout)
        conn = (HTTPSConnection if https else HTTPConnection)(host, port, timeout=connect_timeout)
        error: Exception
        if name == "dns_failure":
            not_known = name_not_known()
            leaf: OSError = not_known
            error = NameResolutionError(host, conn, not_known)
            error.__cause__ = leaf
        elif name == "connection_refused":
            leaf = os_error(ConnectionRefusedError, errno.ECONNREFUSED)
            error = NewConnectionError(conn, f"Failed to establish a new connection: {leaf}")
            error.__cause__ = leaf
        elif name in TLS_STAGES:
            leaf = cert_verify_error(name, host)
            error = Urllib3SSLError(leaf)
            error.__context__ = leaf  # re-raised inside ``except``, not ``from``
        elif name == "timeout_before_send":
            leaf = TimeoutError("timed out")
            error = ConnectTimeoutError(
                conn, f"Connection to {host} timed out. (connect timeout={conn.timeout})"
            )
            error.__cause__ = leaf
        elif name == "timeout_after_send":
            leaf = TimeoutError("timed out")
            error = ReadTimeoutError(
                pool, url, f"Read timed out. (read timeout={limits.read_timeout})"
            )
            error.__cause__ = leaf
        else:  # reset_after_send
            leaf = os_error(ConnectionResetError, errno.ECONNRESET)
            error = ProtocolError("Connection aborted.", leaf)
            error.__context__ = leaf
        cause = self.placed.cause_exception() if self.placed is not None else None
        if cause is not None:  # the injected cause rides on the real chain
            leaf.__cause__ = cause
        return error


def _refused_by_http_client(request: requests.PreparedRequest, target: str) -> Exception | None:
    """What ``http.client`` raises for this request line or a header (urllib3 sends through
    it): its own checks and messages, run on a connection that never opens a socket.
    ``target``: the request target as urllib3 encoded it (a space in a URL set by hand
    is sent as ``%20``)."""
    parts = urlsplit(request.url or "")
    connection = http.client.HTTPConnection(parts.hostname or "localhost")
    try:
        connection.putrequest(
            request.method or "GET",
            target,
            skip_host=True,
            skip_accept_encoding=True,
        )
        for name, value in request.headers.items():
            connection.putheader(name, value)
    except (ValueError, UnicodeError, http.client.HTTPException) as exc:
        return exc
    finally:
        connection.close()
    return None


def _as_requests_error(error: Exception, request: requests.PreparedRequest) -> Exception:
    """``HTTPAdapter.send``'s mapping of a urllib3 error, clause for clause. requests
    raises inside ``except``, which leaves the urllib3 error as ``__context__``."""
    exceptions = requests.exceptions
    mapped: Exception
    if isinstance(error, ProtocolError | OSError):
        mapped = exceptions.ConnectionError(error, request=request)
    elif isinstance(error, MaxRetryError):
        reason = error.reason
        if isinstance(reason, ConnectTimeoutError) and not isinstance(reason, NewConnectionError):
            mapped = exceptions.ConnectTimeout(error, request=request)
        elif isinstance(reason, ResponseError):
            mapped = exceptions.RetryError(error, request=request)
        elif isinstance(reason, Urllib3SSLError):
            mapped = exceptions.SSLError(error, request=request)
        else:
            mapped = exceptions.ConnectionError(error, request=request)
    elif isinstance(error, Urllib3SSLError):
        mapped = exceptions.SSLError(error, request=request)
    elif isinstance(error, ReadTimeoutError):
        mapped = exceptions.ReadTimeout(error, request=request)
    else:
        return error  # requests re-raises it as it is
    mapped.__context__ = error
    return mapped


FAULTS = {"responses": ResponsesFault}
