"""A careful MCP server over the deployments API (``examples.mcp_api``), built the common
way, ``FastMCP.from_openapi(...)``, with the few lines that keep credentials and upstream
text away from the model:

* every failed tool call is mapped to one fixed sentence per kind of failure
  (``MESSAGES``: rejected credential, refused, rate limited, unreachable, unverified
  identity, outcome unknown, unusable answer): an ``isError`` result whose text is built
  from the failure's class and the HTTP status number alone, never from an exception
  message, an upstream body, a header or a URL. ``mask_error_details=True`` besides, for
  anything that gets past it;
* a 2xx answer that is not JSON (a broken body, an HTML login page) is a failure, not a
  success whose text is the page: ``from_openapi`` returns such a body as the tool's result;
* redirects are not followed (``Location`` is never read into a message);
* the credential is added below the HTTP client (``CredentialTransport``): the request
  that httpx2 logs at INFO and attaches to its exceptions carries none;
* the records that would write tool arguments or response headers to the operator's log
  (fastmcp's DEBUG ``Handler called: call_tool ... with {arguments}``, the OpenAPI
  director's, httpcore2's header traces) are dropped at their loggers while it runs.

Run it in-process (``build_server(...)``, ``from_env()``) or as a stdio server:
``python -m examples.mcp_careful_server`` with ``API_URL``, ``API_TOKEN``... set
(``examples.mcp_api.ApiSettings``).
"""

from __future__ import annotations

import base64
import logging
import ssl
import sys
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from typing import Any
from urllib.parse import unquote

import httpx2
from fastmcp import FastMCP
from fastmcp.exceptions import FastMCPError, ToolError, ValidationError
from fastmcp.server.middleware import Middleware, MiddlewareContext

from .mcp_api import ApiSettings, closes, spec, tls_context

__all__ = [
    "MESSAGES", "ApiFailure", "CredentialTransport", "build_server", "check_answer", "from_env",
    "main",
]  # fmt: skip

log = logging.getLogger("examples.mcp_careful")

#: what the model is told, by kind of failure (the only texts a failed call carries)
MESSAGES = {
    "auth": "The API rejected the server's credential (HTTP 401). Ask a person to fix it.",
    "denied": "The API refused this action for the server's credential (HTTP 403).",
    "rate_limited": "The API is limiting requests (HTTP 429). Retry once after a delay.",
    "redirect": "The API answered with a redirect, which this server does not follow.",
    "rejected": "The API rejected the request (HTTP {status}).",
    "unavailable": (
        "The API is unavailable (HTTP {status}). The action may have run: check its "
        "state before retrying."
    ),
    "unreachable": "The API could not be reached; nothing was sent. Retry after a delay.",
    "unverified": "The API's identity could not be verified; the call was blocked.",
    "outcome_unknown": (
        "The connection ended after the request was sent. The action may have run: check "
        "its state before retrying."
    ),
    "invalid_answer": (
        "The API's answer could not be read. The action may have run: check its state "
        "before retrying."
    ),
    "bad_request": "The server could not send a valid request (check its configuration).",
    "internal": "The tool failed inside the server. The operator's log has the details.",
}


class ApiFailure(ToolError):
    """A failed API call, said as one ``MESSAGES`` sentence: the model's whole view of
    it. Raised where the failure happens (below the client, or on the answer), so fastmcp
    hands it on as the tool's error text and logs one line without a traceback."""

    def __init__(self, kind: str, *, status: int | None = None) -> None:
        super().__init__(MESSAGES[kind].format(status=status), log_level=logging.WARNING)
        self.kind = kind
        self.status = status


def _classes(exc: BaseException) -> str:
    """``ConnectError <- ConnectError <- ConnectionRefusedError``: the operator's evidence
    (classes only: a message may quote a header or a URL)."""
    names: list[str] = []
    node: BaseException | None = exc
    while node is not None and len(names) < 8:
        names.append(type(node).__name__)
        node = node.__cause__ or node.__context__
    return " <- ".join(names)


def _transport_failure(exc: httpx2.TransportError) -> str:
    """The ``MESSAGES`` kind of a request that got no answer."""
    chain: list[BaseException] = []
    node: BaseException | None = exc
    while node is not None and len(chain) < 8:
        chain.append(node)
        node = node.__cause__ or node.__context__
    if any(isinstance(m, ssl.SSLError) for m in chain):
        return "unverified"
    if isinstance(exc, httpx2.ConnectError | httpx2.ConnectTimeout | httpx2.PoolTimeout):
        return "unreachable"  # no byte of the request left
    if isinstance(exc, httpx2.LocalProtocolError | httpx2.UnsupportedProtocol):
        return "bad_request"  # refused by the client itself, before sending
    return "outcome_unknown"  # sent: a read timeout, a reset, a cut body


# --- the HTTP client -------------------------------------------------------------------------


class CredentialTransport(httpx2.AsyncBaseTransport):
    """Adds the credential at the last moment, below the client: the ``httpx2.Request``
    the client logs, attaches to its exceptions (``exc.request``) and to the response
    never holds it. A request that gets no answer ends here, as an ``ApiFailure``."""

    def __init__(
        self,
        inner: httpx2.AsyncBaseTransport,
        *,
        headers: tuple[tuple[bytes, bytes], ...],
        query: tuple[tuple[str, str], ...],
    ) -> None:
        self._inner = inner
        self._headers = headers
        self._query = query

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url
        if self._query:
            url = url.copy_merge_params(list(self._query))
        names = {name.lower() for name, _ in self._headers}
        headers = [(k, v) for k, v in request.headers.raw if k.lower() not in names]
        headers += self._headers
        real = httpx2.Request(
            request.method, url, headers=headers, stream=request.stream,
            extensions=request.extensions,
        )  # fmt: skip
        try:
            return await self._inner.handle_async_request(real)
        except httpx2.TransportError as exc:
            kind, classes = _transport_failure(exc), _classes(exc)
        # raised outside the except block: no exception of the HTTP stack rides along
        log.warning("%s %s failed: %s", request.method, request.url.path, classes)
        raise ApiFailure(kind)

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __repr__(self) -> str:
        return "CredentialTransport()"


def _clean(value: str) -> str:
    """A credential read from a mounted secret or an ``.env`` line often ends in a
    newline: sent as it is, the HTTP client refuses the header, and its error quotes it."""
    return value.strip()


def _credential(settings: ApiSettings) -> tuple[str, tuple[tuple[bytes, bytes], ...]]:
    """The base URL without userinfo, and every credential header (UTF-8: any value can
    travel). URL userinfo becomes ``Authorization: Basic``, as an HTTP client sends it."""
    url = httpx2.URL(settings.url)
    raw = [(k.encode("ascii"), _clean(v).encode("utf-8")) for k, v in settings.headers.items()]
    if settings.token and not any(k.lower() == b"authorization" for k, _ in raw):
        raw.insert(0, (b"Authorization", b"Bearer " + _clean(settings.token).encode("utf-8")))
    if url.userinfo:
        user, _, password = url.userinfo.decode("ascii").partition(":")
        basic = f"{_clean(unquote(user))}:{_clean(unquote(password))}".encode()
        raw = [(k, v) for k, v in raw if k.lower() != b"authorization"]
        raw.append((b"Authorization", b"Basic " + base64.b64encode(basic)))
        url = url.copy_with(username=None, password=None)
    return str(url), tuple(raw)


def _status_failure(status: int) -> str:
    if status == 401:
        return "auth"
    if status == 403:
        return "denied"
    if status == 429:
        return "rate_limited"
    if 300 <= status < 400:
        return "redirect"
    if status >= 500:
        return "unavailable"
    return "rejected"


def _is_json(response: httpx2.Response) -> bool:
    media = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media != "application/json" and not media.endswith("+json"):
        return False
    try:
        response.json()
    except ValueError:
        return False
    return True


async def check_answer(response: httpx2.Response) -> None:
    """Every answer but a 2xx JSON document is a failure, raised before ``from_openapi``
    reads it (it would put the body and a ``Location`` into its error text, and hand a
    non-JSON 2xx body to the model as the tool's result)."""
    status = response.status_code
    where = f"{response.request.method} {response.request.url.path}"
    if not 200 <= status < 300:
        log.warning("%s answered %d", where, status)
        raise ApiFailure(_status_failure(status), status=status)
    if status == 204:
        return
    try:
        await response.aread()
    except httpx2.RequestError as exc:
        kind, classes = "outcome_unknown", _classes(exc)
    else:
        if _is_json(response):
            return
        kind, classes = "invalid_answer", "not a JSON document"
    log.warning("%s answered %d: %s", where, status, classes)
    raise ApiFailure(kind, status=status)


def http_client(
    settings: ApiSettings, transport: httpx2.AsyncBaseTransport | None = None
) -> httpx2.AsyncClient:
    base, headers = _credential(settings)
    inner = transport or httpx2.AsyncHTTPTransport(verify=tls_context(settings.verify), retries=0)
    query = tuple((k, _clean(v)) for k, v in settings.query.items())
    return httpx2.AsyncClient(
        base_url=base,
        transport=CredentialTransport(inner, headers=headers, query=query),
        timeout=settings.timeout,
        follow_redirects=False,
        event_hooks={"response": [check_answer]},
    )


class SafeErrors(Middleware):
    """The backstop: a failure that is not an ``ApiFailure`` (a bug of the server) is an
    ``isError`` result with the ``internal`` sentence, never its message."""

    async def on_call_tool(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        try:
            return await call_next(context)
        except (ApiFailure, ValidationError):
            raise  # a fixed sentence; names of wrong arguments, never their values
        except Exception as exc:  # noqa: BLE001 - every other failure gets a fixed sentence
            classes = _classes(exc)
        tool = str(getattr(context.message, "name", "?"))
        log.error("tool %s failed inside the server: %s", tool, classes)
        raise ApiFailure("internal")


#: fastmcp's DEBUG records of a call's arguments ("Handler called: call_tool %s with %s",
#: the OpenAPI director's "Building request ... with args:" and "Unflattened - ...
#: body: ..."), httpcore2's header traces ("send_request_headers.started request=...",
#: "receive_response_headers.complete return_value=(..., [(b'Set-Cookie', ...)])")
_ARGUMENT_MARKERS = ("Handler called: call_tool", "with args:", "Unflattened -", "_headers.")


def _no_arguments_or_headers(record: logging.LogRecord) -> bool:
    message = str(record.msg)
    return not any(marker in message for marker in _ARGUMENT_MARKERS)


_QUIET = ["fastmcp.server.mixins.mcp_operations", "fastmcp.utilities.openapi.director"]
_QUIET += [f"httpcore2.{m}" for m in ("http11", "http2", "connection", "connection_pool")]
_quiet_servers = 0


@contextmanager
def quiet_loggers() -> Iterator[None]:
    """While a careful server runs, drop the records that would write arguments or
    headers, at their loggers (filters are not inherited by child loggers: one per logger
    that writes them); removed when the last one stops."""
    global _quiet_servers
    _quiet_servers += 1
    for name in _QUIET:
        logger = logging.getLogger(name)
        if _no_arguments_or_headers not in logger.filters:
            logger.addFilter(_no_arguments_or_headers)
    try:
        yield
    finally:
        _quiet_servers -= 1
        if not _quiet_servers:
            for name in _QUIET:
                logging.getLogger(name).removeFilter(_no_arguments_or_headers)


def _lifespan(client: httpx2.AsyncClient) -> Any:
    closing = closes(client)

    @asynccontextmanager
    async def lifespan(server: Any) -> AsyncIterator[dict[str, Any]]:
        with quiet_loggers():
            async with closing(server) as state:
                yield state

    return lifespan


def build_server(
    url: str | None = None,
    *,
    settings: ApiSettings | None = None,
    transport: httpx2.AsyncBaseTransport | None = None,
    **options: Any,
) -> FastMCP:
    """The careful server. Either ``settings`` or ``url`` and ``ApiSettings``' other
    fields as keywords (``token``, ``headers``, ``query``, ``verify``, ``timeout``);
    ``transport`` replaces the network (``httpx2.MockTransport(DeploymentsAPI())``)."""
    if settings is None:
        if url is None:
            raise TypeError("build_server needs url= or settings=")
        settings = ApiSettings(url=url, **options)
    client = http_client(settings, transport)
    server = FastMCP.from_openapi(
        spec(),
        client=client,
        name="deployments (careful)",
        mask_error_details=True,
        lifespan=_lifespan(client),
    )
    server.add_middleware(SafeErrors())
    return server


def from_env(environ: Mapping[str, str] | None = None) -> FastMCP:
    return build_server(settings=ApiSettings.from_env(environ))


def main() -> None:
    try:
        server = from_env()
    except (ValueError, FastMCPError) as exc:
        print(f"mcp_careful_server: {exc}", file=sys.stderr)  # names a variable, no value
        raise SystemExit(2) from None
    server.run(transport="stdio", show_banner=False)


if __name__ == "__main__":
    main()
