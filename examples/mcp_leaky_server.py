"""A leaky MCP server over the deployments API (``examples.mcp_api``): the same
``FastMCP.from_openapi(...)`` server as ``mcp_careful_server``, as most are written, with
fastmcp's defaults and one debugging aid. Its mistakes, each marked ``# MISTAKE``:

1. upstream error bodies reach the model: fastmcp's default (``mask_error_details``
   off) puts ``HTTP error 401: Unauthorized - {the upstream's body}`` into the tool
   error, whatever the upstream wrote there (a reflected request, remote instructions);
2. a redirect's ``Location`` (a signed URL on an internal host) is in the error text:
   ``HTTP error 302: Found - Location: https://...?X-Amz-Signature=...``;
3. when a request gets no answer (a DNS failure, a refused connection, a TLS error, a
   timeout, a reset, a cut body), the error text carries the request it made,
   ``Authorization`` header and query included ("to make connection problems easy to
   debug"), and so does the error log notification it sends the client;
4. a 2xx answer that is not JSON (a broken body, an HTML login page) is returned as the
   tool's successful result, the page as its text: fastmcp's default;
5. the operator's side is left as the libraries set it up: the credential is a default
   header and query parameter of the HTTP client (so httpx2's INFO line ``HTTP Request:
   POST https://...?api_key=...`` and ``exc.request`` carry it), fastmcp logs each call's
   arguments at DEBUG, httpcore2 traces response headers (``Set-Cookie``, a signed
   ``Location``) at DEBUG, fastmcp's OpenTelemetry span records the exception whose text
   holds the upstream's body, and a credential read with a trailing newline is sent as
   it is (h11 refuses the header, quoting it: ``Illegal header value b'Bearer ...\\n'``).

Run it in-process (``build_server(...)``, ``from_env()``) or as a stdio server:
``python -m examples.mcp_leaky_server`` with ``API_URL``, ``API_TOKEN``... set.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import httpx2
from fastmcp import FastMCP
from fastmcp.exceptions import FastMCPError, ToolError
from fastmcp.server.middleware import Middleware, MiddlewareContext

from .mcp_api import ApiSettings, closes, spec, tls_context

__all__ = ["build_server", "from_env", "main"]


def http_client(
    settings: ApiSettings, transport: httpx2.AsyncBaseTransport | None = None
) -> httpx2.AsyncClient:
    headers = [(k.encode("ascii"), v.encode("utf-8")) for k, v in settings.headers.items()]
    if settings.token and not any(k.lower() == b"authorization" for k, _ in headers):
        headers.insert(0, (b"Authorization", b"Bearer " + settings.token.encode("utf-8")))
    return httpx2.AsyncClient(
        base_url=settings.url,
        headers=headers,
        params=dict(settings.query),
        verify=tls_context(settings.verify),
        timeout=settings.timeout,
        transport=transport,
    )


def _unanswered_request(exc: BaseException) -> httpx2.Request | None:
    """The request of a transport failure (no answer) behind ``exc``, if any."""
    node: BaseException | None = exc
    while node is not None:
        if isinstance(node, httpx2.TransportError):
            try:
                return node.request
            except RuntimeError:  # httpx2 raises when an error has no request attached
                return None
        node = node.__cause__ or node.__context__
    return None


class DebuggableErrors(Middleware):
    """Adds the request to the error of a call that got no answer, so that a connection
    problem "explains itself"."""

    async def on_call_tool(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        try:
            return await call_next(context)
        except ToolError as exc:
            request = _unanswered_request(exc)
            if request is None:
                raise
            # MISTAKE 3: the request, credential headers and query included
            headers = dict(request.headers)
            detail = f"{exc} [request: {request.method} {request.url} headers={headers}]"
            if context.fastmcp_context is not None:
                await context.fastmcp_context.log(detail, level="error")
            raise ToolError(detail) from exc


def build_server(
    url: str | None = None,
    *,
    settings: ApiSettings | None = None,
    transport: httpx2.AsyncBaseTransport | None = None,
    **options: Any,
) -> FastMCP:
    """The leaky server; arguments as ``mcp_careful_server.build_server``."""
    if settings is None:
        if url is None:
            raise TypeError("build_server needs url= or settings=")
        settings = ApiSettings(url=url, **options)
    # MISTAKES 1, 2 and 4: fastmcp's defaults (error details unmasked; Location and
    # upstream body in HTTP errors; a non-JSON 2xx body is the result)
    client = http_client(settings, transport)
    server = FastMCP.from_openapi(
        spec(), client=client, name="deployments (leaky)", lifespan=closes(client)
    )
    server.add_middleware(DebuggableErrors())
    return server


def from_env(environ: Mapping[str, str] | None = None) -> FastMCP:
    return build_server(settings=ApiSettings.from_env(environ))


def main() -> None:
    try:
        server = from_env()
    except (ValueError, FastMCPError) as exc:
        print(f"mcp_leaky_server: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    server.run(transport="stdio", show_banner=False)


if __name__ == "__main__":
    main()
