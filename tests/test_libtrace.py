"""``library_exceptions``: the exception that left a library, as the gateway received it;
tracers restored and chained; ``library_versions``."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpcore
import httpcore2
import httpx
import httpx2
import pytest

from leakcheck import libtrace
from leakcheck.libtrace import NOT_INSTALLED, library_exceptions, library_versions


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def no_tracer() -> Iterator[None]:
    """Run without an outer tracer (coverage, a debugger) and restore whatever was there."""
    saved, saved_threads = sys.gettrace(), threading.gettrace()
    sys.settrace(None)
    threading.settrace(None)  # type: ignore[arg-type]
    try:
        yield
    finally:
        sys.settrace(saved)
        threading.settrace(saved_threads)  # type: ignore[arg-type]


def _refusing_handler(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("All connection attempts failed", request=request)


def test_refused_port_records_httpx_error_not_httpcore(closed_port: int, no_tracer: None) -> None:
    with library_exceptions() as escaped:
        try:
            httpx.get(f"http://127.0.0.1:{closed_port}/deploy", timeout=0.3)
        except httpx.HTTPError as exc:
            received = exc
    assert isinstance(escaped.last, httpx.ConnectError)
    assert escaped.last is received
    # httpcore raised first, inside httpx, which translated it: that one never left
    assert isinstance(received.__context__, httpcore.ConnectError)
    assert escaped.all == [received]
    assert [(e.library, e.into) for e in escaped.escapes] == [("httpx", __name__)]


def _raise_from_helper() -> None:
    raise ValueError("the gateway's own")


def test_nothing_leaves_the_library(no_tracer: None) -> None:
    client = httpx.Client(transport=httpx.MockTransport(lambda r: httpx.Response(200)))
    with library_exceptions() as escaped:
        assert client.get("https://api.upstream.test/").status_code == 200
        with pytest.raises(ValueError):
            _raise_from_helper()  # the gateway's own code, not a library
        # a library generator ending is control flow, not an error
        with pytest.raises(StopIteration):
            next(iter(httpx.Response(200, content=b"").iter_bytes()))
    assert escaped.last is None
    assert escaped.all == []


FAKELIB = """
class Inner(Exception):
    pass


class Outer(Exception):
    pass


def convert():
    try:
        raise Inner("low level")
    except Inner as exc:
        raise Outer("translated") from exc


def exhausted():
    return next(iter(()))


def call_back(fn):
    return fn()
"""


def test_a_fake_library_translation_control_flow_and_callbacks(no_tracer: None) -> None:
    fakelib: dict[str, Any] = {"__name__": "fakelib"}
    exec(compile(FAKELIB, "fakelib.py", "exec"), fakelib)  # frames of module "fakelib"
    with library_exceptions(["fakelib"]) as escaped:
        with pytest.raises(fakelib["Outer"]):
            fakelib["convert"]()
        with pytest.raises(StopIteration):
            fakelib["exhausted"]()  # control flow: not recorded
        with pytest.raises(ValueError):
            fakelib["call_back"](_raise_from_helper)  # ours, but it left through the library
    assert [type(e).__name__ for e in escaped.all] == ["Outer", "ValueError"]
    assert {e.library for e in escaped.escapes} == {"fakelib"}


def test_last_is_the_last_and_only_watched_libraries_count(no_tracer: None) -> None:
    client = httpx.Client(transport=httpx.MockTransport(_refusing_handler))
    with library_exceptions(["requests"]) as only_requests, library_exceptions() as escaped:
        for _ in range(2):
            with pytest.raises(httpx.ConnectError):
                client.get("https://api.upstream.test/")
        with pytest.raises(httpx.UnsupportedProtocol):
            httpx.get("ftp://api.upstream.test/")  # refused before any connection
    assert [type(e) for e in escaped.all] == [
        httpx.ConnectError,
        httpx.ConnectError,
        httpx.UnsupportedProtocol,
    ]
    assert isinstance(escaped.last, httpx.UnsupportedProtocol)
    assert only_requests.all == []


def test_through_stdlib_plumbing_async_and_threads(no_tracer: None) -> None:
    client = httpx.AsyncClient(transport=httpx.MockTransport(_refusing_handler))

    async def gateway() -> str:
        try:  # asyncio.wait_for runs it as a task: asyncio frames sit in between
            await asyncio.wait_for(client.get("https://api.upstream.test/"), 0.5)
        except httpx.ConnectError:
            return "UPSTREAM_UNREACHABLE"
        return "ok"

    sync_client = httpx.Client(transport=httpx.MockTransport(_refusing_handler))
    from_thread: list[BaseException] = []

    def worker() -> None:
        try:
            sync_client.get("https://api.upstream.test/")
        except httpx.ConnectError as exc:
            from_thread.append(exc)

    with library_exceptions() as escaped:
        assert asyncio.run(gateway()) == "UPSTREAM_UNREACHABLE"
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join(0.5)
    assert not thread.is_alive()
    assert len(escaped.all) == 2, escaped.escapes
    assert all(isinstance(e, httpx.ConnectError) for e in escaped.all)
    assert from_thread[0] in escaped.all
    assert {e.thread for e in escaped.escapes} == {"MainThread", thread.name}


def test_tracers_restored_even_when_the_block_raises(no_tracer: None) -> None:
    def outer(frame: Any, event: str, arg: Any) -> None:
        return None

    sys.settrace(outer)
    threading.settrace(outer)
    try:
        with pytest.raises(httpx.ConnectError), library_exceptions() as escaped:
            httpx.Client(transport=httpx.MockTransport(_refusing_handler)).get(
                "https://api.upstream.test/"
            )
        assert sys.gettrace() is outer
        assert threading.gettrace() is outer
    finally:
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]
    assert isinstance(escaped.last, httpx.ConnectError)
    assert sys._getframe().f_trace is None  # the frame that opened the block: as it was
    with library_exceptions():
        pass
    assert sys.gettrace() is None and threading.gettrace() is None


def test_an_outer_tracer_keeps_its_events(no_tracer: None) -> None:
    """coverage-style chaining: the previous tracer still sees every call, line and
    exception of the frames it traces, and the recorder still records."""
    seen: list[tuple[str, str]] = []

    def outer(frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code.co_name != "gateway":
            return None

        def local(frame: Any, event: str, arg: Any) -> Any:
            seen.append((frame.f_code.co_name, event))
            return local

        return local

    client = httpx.Client(transport=httpx.MockTransport(_refusing_handler))

    def gateway() -> str:
        try:
            client.get("https://api.upstream.test/")
        except httpx.ConnectError:
            return "refused"
        return "ok"

    sys.settrace(outer)
    try:
        with library_exceptions() as escaped:
            assert gateway() == "refused"
    finally:
        sys.settrace(None)
    assert {event for _, event in seen} >= {"line", "exception", "return"}
    assert isinstance(escaped.last, httpx.ConnectError)


def _refused_call(client: httpx.Client) -> None:
    """Gateway code: a call whose connection is refused, the error swallowed."""
    try:
        client.get("https://api.upstream.test/")
    except httpx.ConnectError:
        pass


def test_a_tracer_that_reinstalls_itself_does_not_push_the_recorder_out(no_tracer: None) -> None:
    """coverage's CTracer, called from Python on a call event, reinstalls itself (here as
    another function): the recorder chains to what it installed, and leaves that in place."""
    calls: list[str] = []

    def successor(frame: Any, event: str, arg: Any) -> None:
        calls.append("successor")
        sys.settrace(successor)

    def greedy(frame: Any, event: str, arg: Any) -> None:
        calls.append("greedy")
        sys.settrace(successor)

    client = httpx.Client(transport=httpx.MockTransport(_refusing_handler))

    sys.settrace(greedy)
    try:
        with library_exceptions() as escaped:
            _refused_call(client)
            _refused_call(client)
            inside = list(calls)
        after = sys.gettrace()
    finally:
        sys.settrace(None)
    assert len(escaped.all) == 2
    # once greedy put successor in its place, the recorder chained to successor
    assert inside[0] == "greedy" and "successor" in inside
    assert after is successor


def test_nested_recorders_under_an_outer_tracer(no_tracer: None) -> None:
    events = []

    def outer(frame: Any, event: str, arg: Any) -> None:
        events.append(event)

    client = httpx.Client(transport=httpx.MockTransport(_refusing_handler))

    sys.settrace(outer)
    try:
        with library_exceptions() as first:
            with library_exceptions() as second:
                _refused_call(client)
            assert sys.gettrace() == first._trace_fn
            _refused_call(client)
        after = sys.gettrace()
    finally:
        sys.settrace(None)
    assert after is outer
    assert len(first.all) == 2 and len(second.all) == 1
    assert events.count("call") > 10


def test_traced_gateway_code_hears_no_line_events(no_tracer: None) -> None:
    """What keeps tracing cheap: a frame of gateway code gets a local tracer with line
    events off, so only its calls and exceptions reach Python. (Measured, not asserted by
    the clock, which a garbage collection in a full suite's heap made 40 times slower once:
    about 0.2 ms traced against 0.04 ms plain per failing httpx call, printed by
    ``test_overhead_is_printed``.)"""
    client = httpx.Client(transport=httpx.MockTransport(_refusing_handler))
    seen: dict[str, bool] = {}

    def gateway_code() -> None:
        frame = sys._getframe()
        seen["lines"], seen["traced"] = frame.f_trace_lines, frame.f_trace is not None
        try:
            client.get("https://api.upstream.test/")
        except httpx.ConnectError:
            pass

    with library_exceptions() as escaped:
        gateway_code()
    assert seen == {"lines": False, "traced": True}
    assert len(escaped.all) == 1
    gateway_code()  # and once the block is left, nothing is traced
    assert seen == {"lines": True, "traced": False}


def test_overhead_is_printed(no_tracer: None, record_property: Any) -> None:
    client = httpx.Client(transport=httpx.MockTransport(_refusing_handler))

    def calls(n: int) -> None:
        for _ in range(n):
            try:
                client.get("https://api.upstream.test/")
            except httpx.ConnectError:
                pass

    calls(5)  # warm up
    n = 50
    start = time.perf_counter()
    calls(n)
    plain = (time.perf_counter() - start) * 1000 / n
    with library_exceptions() as escaped:
        start = time.perf_counter()
        calls(n)
        traced = (time.perf_counter() - start) * 1000 / n
    assert len(escaped.all) == n
    record_property("libtrace_ms_per_call", f"plain {plain:.3f} traced {traced:.3f}")
    print(f"libtrace: {plain:.3f} ms plain, {traced:.3f} ms traced per failing httpx call")


def test_misuse_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="at least one library"):
        library_exceptions([])
    recorder = library_exceptions()
    with recorder, pytest.raises(RuntimeError, match="already recording"):
        recorder.__enter__()


def test_library_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    versions = library_versions()
    assert list(versions) == list(libtrace.DEFAULT_VERSIONED)
    assert versions["httpx"] == httpx.__version__
    # both forks side by side: each its own version
    assert versions["httpx2"] == httpx2.__version__
    assert versions["httpcore2"] == httpcore2.__version__
    assert versions["httpcore"] == httpcore.__version__
    assert versions["python"].startswith(f"{sys.version_info[0]}.{sys.version_info[1]}")
    extra = library_versions(["httpx"], extra=["no-such-distribution-lc", "httpx"])
    assert extra == {"httpx": httpx.__version__, "no-such-distribution-lc": NOT_INSTALLED}
    monkeypatch.setattr(libtrace, "_distribution_version", lambda name: "9.9")
    assert set(library_versions().values()) == {"9.9"}


# --- httpx2 (and httpcore2) beside httpx ----------------------------------------------------


def test_refused_port_records_httpx2_error_not_httpcore2(closed_port: int, no_tracer: None) -> None:
    with library_exceptions() as escaped:
        try:
            httpx2.get(f"http://127.0.0.1:{closed_port}/deploy", timeout=0.3)
        except httpx2.HTTPError as exc:
            received = exc
    assert isinstance(escaped.last, httpx2.ConnectError)
    assert not isinstance(received, httpx.HTTPError)  # the fork's own classes
    assert escaped.all == [received]
    # httpcore2 raised first, inside httpx2, which translated it: that one never left
    assert isinstance(received.__context__, httpcore2.ConnectError)
    assert [(e.library, e.into) for e in escaped.escapes] == [("httpx2", __name__)]


def _refusing_handler2(request: httpx2.Request) -> httpx2.Response:
    raise httpx2.ConnectError("All connection attempts failed", request=request)


def test_httpx_and_httpx2_side_by_side_are_told_apart(no_tracer: None) -> None:
    one = httpx.Client(transport=httpx.MockTransport(_refusing_handler))
    two = httpx2.AsyncClient(transport=httpx2.MockTransport(_refusing_handler2))

    async def async_gateway() -> None:
        with pytest.raises(httpx2.ConnectError):
            await asyncio.wait_for(two.get("https://api.upstream.test/"), 0.5)

    with (
        library_exceptions(["httpx"]) as only_httpx,
        library_exceptions(["httpx2"]) as only_httpx2,
        library_exceptions() as escaped,
    ):
        with pytest.raises(httpx.ConnectError):
            one.get("https://api.upstream.test/")
        asyncio.run(async_gateway())
        with pytest.raises(httpx2.UnsupportedProtocol):
            httpx2.get("ftp://api.upstream.test/")
    assert [(type(e.exception), e.library) for e in escaped.escapes] == [
        (httpx.ConnectError, "httpx"),
        (httpx2.ConnectError, "httpx2"),
        (httpx2.UnsupportedProtocol, "httpx2"),
    ]
    assert [type(e) for e in only_httpx.all] == [httpx.ConnectError]
    assert [type(e) for e in only_httpx2.all] == [httpx2.ConnectError, httpx2.UnsupportedProtocol]


ALIASED = """
import socket, sys
import httpx2
httpx2.alias_httpx()
import httpx  # httpx2 under the old name
from leakcheck.libtrace import library_exceptions
sock = socket.socket()
sock.bind(("127.0.0.1", 0))
port = sock.getsockname()[1]
with library_exceptions() as escaped:
    try:
        httpx.get(f"http://127.0.0.1:{port}/", timeout=0.3)
    except httpx.ConnectError:
        pass
print(httpx is httpx2, [(type(e.exception).__module__, e.library) for e in escaped.escapes])
"""


def test_httpx_aliased_to_httpx2_is_recorded_as_httpx2() -> None:
    # alias_httpx() must run before anything imports httpx: a fresh interpreter
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run(
        [sys.executable, "-c", ALIASED], capture_output=True, text=True, timeout=20, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "True [('httpx2', 'httpx2')]"
