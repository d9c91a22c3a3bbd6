"""The loopback server's HTTP/1.x wire: reading one request (head and body, by
``Content-Length`` or chunked, within limits) and writing a response head with the
corpus's headers as they are (repeated ones kept, values latin-1 or else UTF-8)."""

from __future__ import annotations

import http
import socket
from dataclasses import dataclass, field

__all__ = ["Closed", "Reader", "Request", "read_request", "response_head"]

_MAX_HEAD = 64 * 1024
_MAX_BODY = 16 * 1024 * 1024


@dataclass(frozen=True)
class Request:
    """One request the server read (its target and headers are never shown: ``what``)."""

    method: str
    target: str = field(repr=False)
    headers: list[tuple[str, str]] = field(repr=False)
    body_length: int

    @property
    def what(self) -> str:
        """``POST /v1/deployments``: no query, no header (they may carry secrets)."""
        path = self.target.split("?", 1)[0].split("#", 1)[0]
        if "://" in path:  # absolute-form (a proxy request): keep the path only
            path = "/" + path.split("://", 1)[1].partition("/")[2]
        path = "".join(c if c.isprintable() else "?" for c in path)
        if len(path) > 80:
            path = path[:77] + "..."
        method = "".join(c for c in self.method if c.isalpha())[:16] or "?"
        return f"{method} {path}"


class Closed(Exception):
    """The peer closed (or stop() shut) the connection; ``silent``: before sending a byte."""

    def __init__(self, silent: bool = False) -> None:
        super().__init__()
        self.silent = silent


class Reader:
    """Buffered reads from a (TLS or plain) socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""
        self.received = 0

    def _fill(self) -> None:
        data = self.sock.recv(65536)
        if not data:
            raise Closed(silent=self.received == 0)
        self.received += len(data)
        self.buf += data

    def until(self, sep: bytes, limit: int) -> bytes:
        while sep not in self.buf:
            if len(self.buf) > limit:
                raise Closed
            self._fill()
        data, _, self.buf = self.buf.partition(sep)
        return data

    def exactly(self, n: int) -> bytes:
        while len(self.buf) < n:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n:]
        return data


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def read_request(sock: socket.socket) -> Request:
    """One HTTP/1.x request, body included (``Content-Length`` or chunked)."""
    reader = Reader(sock)
    head = _decode(reader.until(b"\r\n\r\n", _MAX_HEAD))
    lines = head.split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3:
        raise Closed
    headers = []
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers.append((name.strip(), value.strip()))
    lowered = {k.lower(): v for k, v in headers}
    length = 0
    if "chunked" in lowered.get("transfer-encoding", "").lower():
        while True:
            size = int(reader.until(b"\r\n", 1024).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while reader.until(b"\r\n", _MAX_HEAD):  # trailer fields, up to a blank line
                    pass
                break
            reader.exactly(size + 2)
            length += size
            if length > _MAX_BODY:
                raise Closed
    elif lowered.get("content-length", "").strip().isdigit():
        length = int(lowered["content-length"])
        if length > _MAX_BODY:
            raise Closed
        reader.exactly(length)
    return Request(parts[0], parts[1], headers, length)


def _header_bytes(name: str, value: str) -> bytes:
    line = f"{name}: {value}\r\n"
    try:
        return line.encode("latin-1")
    except UnicodeEncodeError:
        return line.encode("utf-8")


def response_head(status: int, headers: tuple[tuple[str, str], ...], extra: list[str]) -> bytes:
    """The status line and headers of a response: ``headers`` as the corpus has them, then
    ``extra`` (``"Name: value"``)."""
    try:
        phrase = http.HTTPStatus(status).phrase
    except ValueError:
        phrase = "Unknown"
    out = [f"HTTP/1.1 {status} {phrase}\r\n".encode("ascii")]
    out += [_header_bytes(k, v) for k, v in headers]
    out += [_header_bytes(*h.split(": ", 1)) for h in extra]
    return b"".join(out) + b"\r\n"
