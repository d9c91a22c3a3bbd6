"""Proof that a client tried the network: socket audit events, seen per watcher.

A refused connection or a failed name lookup leaves no trace on any server, yet a fault
must prove it fired. CPython raises audit events for ``socket.connect`` and
``socket.getaddrinfo`` whatever the client library (sync sockets, asyncio, threads), so
one process-wide audit hook, installed once (audit hooks cannot be removed), hands each
event to the watchers active at that moment. With no watcher active the hook returns at
once.

Also here: deterministic DNS failure for reserved names (``.invalid``, RFC 6761), so a
DNS-failure stage never depends on the machine's resolver.
"""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Watcher", "failing_dns", "watch"]

_lock = threading.Lock()
_watchers: list[Watcher] = []
_hook_installed = False


@dataclass
class Watcher:
    """Counts connection attempts to ``port`` on ``host`` (None: any) and lookups of
    ``lookup`` names."""

    host: str | None = None
    port: int | None = None
    lookup: str | None = None
    connects: int = 0
    lookups: int = 0
    _events: list[str] = field(default_factory=list, repr=False)

    def _see(self, event: str, args: tuple[Any, ...]) -> None:
        if event == "socket.connect":
            address = args[1]
            if not isinstance(address, tuple) or len(address) < 2:
                return
            if self.port is not None and address[1] != self.port:
                return
            if self.host is not None and address[0] != self.host:
                return
            self.connects += 1
        elif event == "socket.getaddrinfo":
            name = args[0]
            if isinstance(name, bytes):
                name = name.decode("ascii", "replace")  # IDNA on the wire is ASCII punycode
            if self.lookup is None or str(name).lower().rstrip(".") != self.lookup.lower():
                return
            self.lookups += 1


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if not _watchers or (event != "socket.connect" and event != "socket.getaddrinfo"):
        return
    for watcher in list(_watchers):
        watcher._see(event, args)


@contextmanager
def watch(
    host: str | None = None, port: int | None = None, lookup: str | None = None
) -> Iterator[Watcher]:
    """Count socket connects to (host, port) and lookups of ``lookup`` while active."""
    global _hook_installed
    watcher = Watcher(host=host, port=port, lookup=lookup)
    with _lock:
        if not _hook_installed:
            sys.addaudithook(_hook)
            _hook_installed = True
        _watchers.append(watcher)
    try:
        yield watcher
    finally:
        with _lock:
            _watchers.remove(watcher)


@contextmanager
def failing_dns(suffix: str = ".invalid") -> Iterator[Callable[[], int]]:
    """Make ``socket.getaddrinfo`` fail, as a real resolver does (``EAI_NONAME``), for
    names ending in ``suffix``, without asking the machine's resolver. Yields a function
    returning how many lookups failed. Restores the original on exit."""
    original = socket.getaddrinfo
    failed = 0

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal failed
        name = host.decode("ascii", "replace") if isinstance(host, bytes) else str(host or "")
        if name.lower().rstrip(".").endswith(suffix):
            failed += 1
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return original(host, *args, **kwargs)

    socket.getaddrinfo = getaddrinfo
    try:
        yield lambda: failed
    finally:
        socket.getaddrinfo = original
