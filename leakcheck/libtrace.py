"""Which library exception did the gateway receive? And which library versions shaped it?

A gateway catches ``httpx.ConnectError`` and turns it into an error envelope; the envelope is
what the agent sees, the exception is what an upgrade of httpx silently rewrites. To snapshot
both, ``library_exceptions()`` records every exception that *leaves* a watched library into
code that is not a library (the gateway), during a ``with`` block:

    with library_exceptions() as escaped:
        envelope = gateway.call(...)
    escaped.last   # httpx.ConnectError, as the gateway's ``except`` clause received it

How: ``sys.settrace`` (this thread) and ``threading.settrace`` (threads started inside the
block). Every frame of non-library code gets a local tracer with line events switched off, so
it only hears ``exception`` events; when one arrives, the traceback's next entry tells where
the exception came from. If that entry, skipping standard-library frames (``contextlib``,
``functools``, ``asyncio`` plumbing between the gateway and the library), is a frame of a
watched top-level package (``frame.f_globals["__name__"]``), the exception just left the
library: it is recorded, once per hop. So ``httpcore.ConnectError``, raised and translated
inside httpx, is never recorded: only the ``httpx.ConnectError`` that reaches the caller.
httpx2 and httpcore2 (Pydantic's fork, under the MCP and model SDKs) are watched the same way
and told apart from httpx by their package names: with both installed, an escape's
``library`` says which one the gateway called (``httpx2.ConnectError`` is not an
``httpx.ConnectError``; ``httpx2.alias_httpx()`` makes ``import httpx`` load httpx2, whose
frames and classes are then httpx2's).

Seen: exceptions raised in library Python code or in C functions it calls (``socket``,
``ssl``), including from coroutines awaited by the gateway (aiohttp, asyncssh) and from
generators and context managers (``__exit__`` is a call too); exceptions that pass through
non-library helpers (tenacity, respx) are recorded where they first reach non-library code.

Not seen (documented limits):
- an exception raised by a library's *compiled* function called directly from gateway code
  (no Python frame of the library in between, so nothing says where it came from);
- exceptions caught inside the library, or converted before they leave it (by design);
- ``StopIteration``, ``StopAsyncIteration``, ``GeneratorExit`` (control flow, not errors);
- code in threads started before the block, and frames already running when it started,
  except the frame that opened the block (it is traced from ``__enter__``).

Tracing cooperates with another tracer (coverage.py, a debugger): the previous global and
local trace functions are called first, with their line events intact, and everything is
restored on exit, even when the block raises. coverage's C tracer reinstalls itself when it
is called from Python on a ``call`` event; the recorder then puts itself back in front of it.
Frames that outlive the block (suspended coroutines, threads started inside it) keep a
pass-through tracer that forwards to the previous one and records nothing more.
"""

from __future__ import annotations

import platform
import ssl
import sys
import threading
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    # what threading.gettrace() returns: its event argument is a Literal of the event names
    from _typeshed import TraceFunction as _ThreadTrace

__all__ = [
    "DEFAULT_LIBRARIES",
    "DEFAULT_VERSIONED",
    "Escape",
    "LibraryExceptions",
    "library_exceptions",
    "library_versions",
]

#: top-level packages whose exceptions the recorder watches
DEFAULT_LIBRARIES: tuple[str, ...] = (
    "httpx",
    "httpcore",
    "httpx2",
    "httpcore2",
    "requests",
    "urllib3",
    "aiohttp",
    "asyncssh",
    "paramiko",
)

#: distributions whose versions shape the error texts a gateway sees; "python" and "openssl"
#: name the interpreter and the ssl module's library (TLS error texts change with them too)
DEFAULT_VERSIONED: tuple[str, ...] = (
    *DEFAULT_LIBRARIES,
    "sentry-sdk",
    "opentelemetry-sdk",
    "prometheus-client",
    "python",
    "openssl",
)

NOT_INSTALLED = "not installed"

#: control flow, not failures: a library generator ending is not an error the gateway saw
_IGNORED = (StopIteration, StopAsyncIteration, GeneratorExit)
_STDLIB = frozenset(sys.stdlib_module_names) | {"__future__"}

TraceFunction = Callable[[types.FrameType, str, Any], Any]


def _distribution_version(name: str) -> str:
    """One distribution's version (a seam for tests that simulate an upgrade)."""
    if name == "python":
        return platform.python_version()
    if name == "openssl":
        return ssl.OPENSSL_VERSION
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return NOT_INSTALLED


def library_versions(
    names: Iterable[str] | None = None, extra: Iterable[str] = ()
) -> dict[str, str]:
    """``{distribution: version}`` for ``names`` (default ``DEFAULT_VERSIONED``) plus
    ``extra`` (the user's own); a missing distribution maps to ``"not installed"``."""
    wanted = list(DEFAULT_VERSIONED if names is None else names) + list(extra)
    return {name: _distribution_version(name) for name in dict.fromkeys(wanted)}


@dataclass(frozen=True)
class Escape:
    """One exception leaving ``library`` into non-library code (module ``into``)."""

    exception: BaseException
    library: str
    into: str
    thread: str


def _top(frame: types.FrameType) -> str:
    name = frame.f_globals.get("__name__")
    return name.partition(".")[0] if isinstance(name, str) else ""


class LibraryExceptions:
    """The recorder ``library_exceptions()`` yields: ``last``, ``all``, ``escapes``."""

    def __init__(self, libraries: Iterable[str] = DEFAULT_LIBRARIES) -> None:
        if isinstance(libraries, str):
            libraries = (libraries,)
        self.libraries = frozenset(lib.partition(".")[0] for lib in libraries)
        if not self.libraries:
            raise ValueError("library_exceptions(): name at least one library to watch")
        self.escapes: list[Escape] = []
        self.active = False
        self._lock = threading.Lock()
        # one function object for every thread, so that "is it still us?" is an identity test
        self._trace_fn: TraceFunction = self._global
        self._tls = threading.local()
        self._prev_thread_hook: _ThreadTrace | None = None
        self._opener: types.FrameType | None = None
        self._opener_state: tuple[Any, bool] = (None, True)
        self._thread = 0

    # --- what was seen -------------------------------------------------------------------

    @property
    def last(self) -> BaseException | None:
        """The last exception that left a watched library (None if none did)."""
        return self.escapes[-1].exception if self.escapes else None

    @property
    def all(self) -> list[BaseException]:
        """Every exception that left a watched library, in order (one per hop)."""
        return [e.exception for e in self.escapes]

    # --- the tracer ----------------------------------------------------------------------

    def _watched(self, frame: types.FrameType) -> bool:
        return _top(frame) in self.libraries

    def _user(self, frame: types.FrameType) -> bool:
        top = _top(frame)
        return top not in self.libraries and top not in _STDLIB

    def _exception(self, frame: types.FrameType, arg: Any) -> None:
        exc_type, exc, tb = arg
        if exc is None or issubclass(exc_type, _IGNORED):
            return
        # tb is this frame's entry; the exception came from the next one. Standard-library
        # frames in between (contextlib, asyncio) are plumbing, not the receiver.
        nxt = tb.tb_next if tb is not None and tb.tb_frame is frame else None
        while nxt is not None and _top(nxt.tb_frame) in _STDLIB:
            nxt = nxt.tb_next
        if nxt is None or not self._watched(nxt.tb_frame):
            return
        escape = Escape(
            exc,
            _top(nxt.tb_frame),
            str(frame.f_globals.get("__name__", "?")),
            threading.current_thread().name,
        )
        with self._lock:
            self.escapes.append(escape)

    def _local(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        if not self.active:
            return None
        if event == "exception":
            self._exception(frame, arg)
        return self._local

    def _global(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        tls = self._tls
        try:
            prev = tls.prev
        except AttributeError:  # first call in a thread started inside the block
            prev = tls.prev = self._prev_thread_hook
        theirs = None
        if prev is not None:
            before = sys.gettrace()
            theirs = prev(frame, event, arg)
            now = sys.gettrace()
            if now is not before:
                # the previous tracer replaced itself (coverage's CTracer reinstalls itself
                # the C way when called from Python): chain to what it installed, and put
                # back what was first (this recorder, or one nested in it)
                tls.prev = now
                if self.active:
                    sys.settrace(before)
        ours = self.active and self._user(frame)
        if theirs is None:
            if not ours:
                return None
            frame.f_trace_lines = False
            return self._local
        if not ours:
            return theirs
        return _Chained(theirs, self)

    # --- lifecycle -------------------------------------------------------------------------

    def __enter__(self) -> LibraryExceptions:
        if self.active:
            raise RuntimeError("library_exceptions(): this recorder is already recording")
        self._thread = threading.get_ident()
        self._tls.prev = sys.gettrace()
        self._prev_thread_hook = threading.gettrace()
        self.active = True
        opener: types.FrameType | None = sys._getframe(1)
        while opener is not None and not self._user(opener):
            opener = opener.f_back
        if opener is not None:
            # the frame running the ``with`` got no ``call`` event: trace it by hand
            self._opener, self._opener_state = opener, (opener.f_trace, opener.f_trace_lines)
            if opener.f_trace is None:
                opener.f_trace_lines = False
                opener.f_trace = self._local
            else:
                opener.f_trace = _Chained(opener.f_trace, self)
        threading.settrace(self._trace_fn)
        sys.settrace(self._trace_fn)
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.active = False
        try:
            if threading.get_ident() == self._thread:
                sys.settrace(getattr(self._tls, "prev", None))
            threading.settrace(self._prev_thread_hook)
        finally:
            if self._opener is not None:
                self._opener.f_trace, self._opener.f_trace_lines = self._opener_state
            self._opener = None
            self._opener_state = (None, True)


class _Chained:
    """A frame's local tracer when another tracer also traces it: theirs first, with line
    events; ours hears exceptions while the recorder is active."""

    __slots__ = ("theirs", "recorder")

    def __init__(self, theirs: Any, recorder: LibraryExceptions) -> None:
        self.theirs = theirs
        self.recorder = recorder

    def __call__(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        if self.theirs is not None:
            self.theirs = self.theirs(frame, event, arg)
        if event == "exception" and self.recorder.active:
            self.recorder._exception(frame, arg)
        if self.theirs is None and not self.recorder.active:
            return None
        return self


def library_exceptions(libraries: Iterable[str] = DEFAULT_LIBRARIES) -> LibraryExceptions:
    """A context manager recording every exception that leaves one of ``libraries`` (top-level
    package names) into non-library code during the block; it yields the recorder."""
    return LibraryExceptions(libraries)
