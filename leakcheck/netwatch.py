"""Proof that a client tried the network: socket audit events, seen per watcher.

A refused connection or a failed name lookup leaves no trace on any server, yet a fault
must prove it fired. CPython raises audit events for ``socket.connect`` and
``socket.getaddrinfo`` whatever the client library (sync sockets, asyncio, threads), so
one process-wide audit hook, installed once (audit hooks cannot be removed), hands each
event to the watchers active at that moment. With no watcher active the hook returns at
once.

Also here: deterministic DNS failure for reserved names (``.invalid``, RFC 6761), so a
DNS-failure stage never depends on the machine's resolver.

Both exist only in the process that installs them. For a Python *child process* (an MCP
server over stdio, a gateway run as a command), ``ChildProof`` writes a directory holding a
generated ``sitecustomize.py``: put it first on the child's ``PYTHONPATH`` (with the other
variables of ``ChildProof.environment()``) and the child, at startup, installs the same
resolver failure and an audit hook of its own, which append proof events (names and ports
only, never a value) to the file named by ``LEAKCHECK_CHILD_PROOF``; ``ChildProof.read()``
counts them in the parent. The hook is stdlib only (the child need not have leakcheck
installed) and then runs the ``sitecustomize`` the child would have run without it. Not
reached: a child that is not Python, or one started with ``-I``, ``-E`` or ``-S`` (no
``PYTHONPATH``, or no ``site``): its fault says that no child process loaded the hook.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ._wrappers import EndedWrappers

__all__ = [
    "CHILD_FAULT_ENV",
    "CHILD_PROOF_ENV",
    "ChildEvents",
    "ChildProof",
    "Watcher",
    "failing_dns",
    "merge_environment",
    "watch",
]

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


#: Each ``failing_dns`` lookup whose block has ended -> the ``getaddrinfo`` it wrapped.
#: Such a lookup is put back out of ``socket.getaddrinfo`` only while it is still there;
#: one left under another's (a test's monkeypatch, a fault armed inside the block) passes
#: every name straight through, and is skipped when found again.
_ENDED_LOOKUPS = EndedWrappers()


@contextmanager
def failing_dns(suffix: str = ".invalid") -> Iterator[Callable[[], int]]:
    """Make ``socket.getaddrinfo`` fail, as a real resolver does (``EAI_NONAME``), for
    names ending in ``suffix``, without asking the machine's resolver. Yields a function
    returning how many lookups failed.

    On exit, puts back what it found only if ``socket.getaddrinfo`` is still its own: a
    replacement made meanwhile (a monkeypatch, another fault's ``failing_dns``) wraps
    this one and will put it back, so putting back what this one found would drop that
    replacement and its guard (the canary host name of a redirect would reach the real
    resolver), and the replacement would later put back this one for good. Instead this
    one, once ended, passes every name through: stacked and ended in any order, no
    failure outlives its block."""
    failed = 0
    ended = False
    with _ENDED_LOOKUPS.lock:
        original = _ENDED_LOOKUPS.beneath(socket.getaddrinfo)

        def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
            nonlocal failed
            if not ended:
                name = (
                    host.decode("ascii", "replace") if isinstance(host, bytes) else str(host or "")
                )
                if name.lower().rstrip(".").endswith(suffix):
                    failed += 1
                    raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
            return original(host, *args, **kwargs)

        socket.getaddrinfo = getaddrinfo
    try:
        yield lambda: failed
    finally:
        with _ENDED_LOOKUPS.lock:
            ended = True
            _ENDED_LOOKUPS.end(getaddrinfo, original)
            if socket.getaddrinfo is getaddrinfo:
                # (what it wrapped may be another's, ended meanwhile: not that one either)
                socket.getaddrinfo = _ENDED_LOOKUPS.beneath(original)


# --- the same, in a Python child process ------------------------------------------------------

#: the file the child's hook appends its proof events to (one JSON object a line)
CHILD_PROOF_ENV = "LEAKCHECK_CHILD_PROOF"
#: what the child's hook does, as JSON: ``{"connect": [host, port] | null, "fail_suffix":
#: [".invalid", ...], "fail_sha256": [hex digest of a host name, ...]}``; host names that
#: are canaries (a redirect target) travel as digests, never as names
CHILD_FAULT_ENV = "LEAKCHECK_CHILD_FAULT"
#: events one child process writes at most (a client retrying in a loop cannot fill a disk)
CHILD_EVENT_CAP = 200

#: the generated sitecustomize.py: stdlib only, any Python 3.8+, every failure silent (it
#: must never break the child's startup), installed once per process
_CHILD_SITECUSTOMIZE = """\
# Generated by leakcheck (leakcheck.netwatch.ChildProof) for a loopback fault: in this
# process, fail the fault's host name lookups as a resolver would and note connects to its
# port, appending proof events (names and ports only) to $LEAKCHECK_CHILD_PROOF. Then run the
# sitecustomize this process would have run without this directory on PYTHONPATH.
import sys


def _leakcheck_child_proof():
    import hashlib
    import json
    import os
    import socket
    import threading

    if getattr(sys, "_leakcheck_child_proof", False):
        return
    proof = os.environ.get("LEAKCHECK_CHILD_PROOF")
    try:
        spec = json.loads(os.environ.get("LEAKCHECK_CHILD_FAULT") or "{}")
    except ValueError:
        return
    if not proof or not isinstance(spec, dict):
        return
    sys._leakcheck_child_proof = True
    cap = CAP
    state = {"pid": None, "written": 0}
    busy = threading.local()

    def write(event):
        if getattr(busy, "on", False):
            return
        busy.on = True
        try:
            pid = os.getpid()
            if state["pid"] != pid:  # a fork writes its own events
                state["pid"], state["written"] = pid, 0
            if state["written"] >= cap:
                return
            state["written"] += 1
            event["pid"] = pid
            line = (json.dumps(event, sort_keys=True) + "\\n").encode("ascii")
            fd = os.open(proof, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
        except Exception:
            pass
        finally:
            busy.on = False

    connect = spec.get("connect")
    if isinstance(connect, list) and len(connect) == 2:
        host, port = connect[0], connect[1]

        def hook(event, args):
            if event != "socket.connect":
                return
            try:
                address = args[1]
                if (
                    isinstance(address, tuple)
                    and len(address) >= 2
                    and address[0] == host
                    and address[1] == port
                ):
                    write({"event": "connect", "host": host, "port": port})
            except Exception:
                pass

        sys.addaudithook(hook)

    suffixes = [str(s).lower() for s in spec.get("fail_suffix") or ()]
    digests = [str(d) for d in spec.get("fail_sha256") or ()]
    if suffixes or digests:
        original = socket.getaddrinfo

        def getaddrinfo(host, *args, **kwargs):
            if isinstance(host, bytes):
                name = host.decode("ascii", "replace")
            else:
                name = str(host or "")
            name = name.lower().rstrip(".")
            rule = None
            for suffix in suffixes:
                if name.endswith(suffix):
                    rule = "suffix " + suffix
            if rule is None and digests:
                digest = hashlib.sha256(name.encode("utf-8", "replace")).hexdigest()
                if digest in digests:
                    rule = "digest %d" % digests.index(digest)
            if rule is None:
                return original(host, *args, **kwargs)
            write({"event": "lookup_failed", "rule": rule})
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

        socket.getaddrinfo = getaddrinfo
        sys.meta_path.insert(0, _ThreadedAiohttpResolver())
    write({"event": "started"})


class _ThreadedAiohttpResolver:
    \"\"\"aiohttp with aiodns resolves through c-ares, not socket.getaddrinfo: once
    aiohttp.connector is imported, its connectors use the threaded resolver.\"\"\"

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "aiohttp.connector":
            return None
        import importlib.machinery

        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module = spec.loader.exec_module

        def run(module):
            exec_module(module)
            try:
                from aiohttp.resolver import ThreadedResolver

                module.DefaultResolver = ThreadedResolver
            except Exception:
                pass

        spec.loader.exec_module = run
        return spec


def _leakcheck_next_sitecustomize():
    import importlib.machinery
    import importlib.util
    import os

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    # the next one takes the name, as if it alone had been found
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


try:
    _leakcheck_child_proof()
except Exception:
    pass
_leakcheck_next_sitecustomize()
"""


@dataclass(frozen=True)
class ChildEvents:
    """What the child processes' hooks wrote: how many processes loaded the hook, connects
    to the watched address, failed lookups per rule (``"suffix .invalid"``, ``"digest 0"``:
    the first hashed name)."""

    processes: int = 0
    connects: int = 0
    failed_lookups: Mapping[str, int] = field(default_factory=dict)

    def lookups(self, rule_prefix: str) -> int:
        return sum(n for rule, n in self.failed_lookups.items() if rule.startswith(rule_prefix))


class ChildProof:
    """A directory that makes a Python child process fail and prove what a loopback fault
    fails and proves in this one: ``environment()`` to merge into the child's environment,
    ``read()`` for what it saw, ``remove()`` when the fault stops.

    ``connect``: the (host, port) whose connects are proof; ``fail_suffixes``: name suffixes
    whose lookups fail (``EAI_NONAME``); ``fail_names``: exact names that fail too, passed
    to the child as SHA-256 digests only (they may be canaries)."""

    def __init__(
        self,
        directory: str,
        *,
        connect: tuple[str, int] | None = None,
        fail_suffixes: Iterable[str] = (),
        fail_names: Iterable[str] = (),
    ) -> None:
        self.directory = directory
        self.site_dir = os.path.join(directory, "site")
        self.proof_file = os.path.join(directory, "proof.jsonl")
        os.makedirs(self.site_dir, mode=0o700, exist_ok=True)
        source = _CHILD_SITECUSTOMIZE.replace("cap = CAP", f"cap = {CHILD_EVENT_CAP}")
        with open(os.path.join(self.site_dir, "sitecustomize.py"), "w", encoding="utf-8") as f:
            f.write(source)
        digests = [
            hashlib.sha256(name.lower().rstrip(".").encode("utf-8")).hexdigest()
            for name in fail_names
        ]
        self._spec = {
            "connect": [connect[0], connect[1]] if connect is not None else None,
            "fail_suffix": [s.lower() for s in fail_suffixes],
            "fail_sha256": digests,
        }
        self._last = ChildEvents()

    def environment(self) -> dict[str, str]:
        """``PYTHONPATH`` (the hook's directory first, then this process's ``PYTHONPATH``),
        ``LEAKCHECK_CHILD_PROOF`` and ``LEAKCHECK_CHILD_FAULT``."""
        inherited = os.environ.get("PYTHONPATH", "")
        return {
            "PYTHONPATH": os.pathsep.join(p for p in (self.site_dir, inherited) if p),
            CHILD_PROOF_ENV: self.proof_file,
            CHILD_FAULT_ENV: json.dumps(self._spec, sort_keys=True),
        }

    def read(self) -> ChildEvents:
        """Count the events written so far (the last counts once the directory is gone)."""
        try:
            with open(self.proof_file, encoding="ascii", errors="replace") as f:
                lines = f.read().splitlines()
        except OSError:
            return self._last
        processes: set[int] = set()
        connects = 0
        lookups: dict[str, int] = {}
        for line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a line being written
            if not isinstance(event, dict):
                continue
            kind = event.get("event")
            if kind == "started" and isinstance(event.get("pid"), int):
                processes.add(event["pid"])
            elif kind == "connect":
                connects += 1
            elif kind == "lookup_failed" and isinstance(event.get("rule"), str):
                lookups[event["rule"]] = lookups.get(event["rule"], 0) + 1
        self._last = ChildEvents(len(processes), connects, lookups)
        return self._last

    def remove(self) -> None:
        """Read the final counts, then delete the directory."""
        self.read()
        shutil.rmtree(self.directory, ignore_errors=True)


def merge_environment(base: Mapping[str, str], *extras: Mapping[str, str]) -> dict[str, str]:
    """``base`` with each of ``extras`` merged in: their values win, except ``PYTHONPATH``,
    whose entries are joined (the extras' first, then the base's, each once), so a child
    keeps the paths it was given and loads the hook directories before them."""
    merged = dict(base)
    paths: list[str] = []
    for mapping in (*extras, base):
        for entry in mapping.get("PYTHONPATH", "").split(os.pathsep):
            if entry and entry not in paths:
                paths.append(entry)
    for mapping in extras:
        merged.update(mapping)
    if paths:
        merged["PYTHONPATH"] = os.pathsep.join(paths)
    return merged
