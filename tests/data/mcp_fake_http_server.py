"""A tiny streamable-HTTP MCP server (stdlib only) for the tests of ``leakcheck mcp
--url``: JSON answers to POSTed JSON-RPC (no SSE), one tool ``fetch`` that GETs
``{X-Upstream header}/items/{item}`` with the request's ``Authorization`` header passed on
(a multi-tenant server: each session's credential and upstream in its headers). Path
``/careful/mcp``: fixed sentences on failure; ``/leaky/mcp``: the error text carries the
Authorization it sent. ``serve()`` starts it on 127.0.0.1 in a thread."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SCHEMA = {
    "type": "object",
    "properties": {"item": {"type": "string", "pattern": "^it_[0-9]+$"}},
    "required": ["item"],
    "additionalProperties": False,
}


def _fetch(upstream: str, authorization: str, item: str, leaky: bool) -> dict:
    request = urllib.request.Request(
        f"{upstream.rstrip('/')}/items/{item}", headers={"Authorization": authorization}
    )
    try:
        with urllib.request.urlopen(request, timeout=0.3) as answer:
            text, error = answer.read().decode("utf-8", "replace"), False
            json.loads(text)
    except urllib.error.HTTPError as exc:
        text, error = f"The API answered HTTP {exc.code}.", True
        if leaky:
            text += f" (sent Authorization: {authorization})"
    except Exception:  # noqa: BLE001
        text, error = "The API could not be reached or its answer was unusable.", True
    return {"content": [{"type": "text", "text": text}], "isError": error}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        return None

    def _send(self, status: int, body: dict | None = None, session: str = "") -> None:
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        if session:
            self.send_header("Mcp-Session-Id", session)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - no SSE stream offered
        self._send(405)

    def do_DELETE(self) -> None:  # noqa: N802
        self._send(200)

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length", "0"))
        message = json.loads(self.rfile.read(length) or b"{}")
        ident, method = message.get("id"), message.get("method")
        if ident is None:
            self._send(202)
            return
        if method == "initialize":
            params = message.get("params") or {}
            result = {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "fake-http", "version": "1"},
            }
            self._send(200, {"jsonrpc": "2.0", "id": ident, "result": result}, uuid.uuid4().hex)
        elif method == "tools/list":
            tool = {"name": "fetch", "description": "Fetch an item.", "inputSchema": SCHEMA}
            self._send(200, {"jsonrpc": "2.0", "id": ident, "result": {"tools": [tool]}})
        elif method == "tools/call":
            args = (message.get("params") or {}).get("arguments") or {}
            result = _fetch(
                self.headers.get("X-Upstream", ""), self.headers.get("Authorization", ""),
                str(args.get("item", "")), self.path.startswith("/leaky"),
            )  # fmt: skip
            self._send(200, {"jsonrpc": "2.0", "id": ident, "result": result})
        elif method == "ping":
            self._send(200, {"jsonrpc": "2.0", "id": ident, "result": {}})
        else:
            error = {"code": -32601, "message": "no such method"}
            self._send(200, {"jsonrpc": "2.0", "id": ident, "error": error})


def serve() -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
