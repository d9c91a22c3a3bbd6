"""The OpenTelemetry sink without a JSON fallback per span (issue 13, cost).

``ReadableSpan.to_json()`` held every text the sink already yields as fields, a second time
(the exception stacktrace escaped), and cost ``to_json()`` and half of what an MCP test
scanned. What the JSON had besides the fields is yielded as fields now: the trace state of
the span's context and of its links, and the span's resource and instrumentation scope, once
per collect. Each leaky span below is caught at its field; the clean twin passes.

The spans come from a private ``TracerProvider`` (the global one is set once per process),
handed to the sink as what it exported during a check.
"""

from __future__ import annotations

import builtins
import traceback
from typing import Any

import pytest
from leakcheck.plugins.otel_sink import OpenTelemetrySink
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import (
    Link,
    NonRecordingSpan,
    SpanContext,
    Status,
    StatusCode,
    TraceFlags,
    TraceState,
    set_span_in_context,
)

from leakcheck import LeakCheck


class _Exported(OpenTelemetrySink):
    """The sink, reading the spans handed to it instead of the process-wide pipeline."""

    def __init__(self, spans: list[Any]) -> None:
        super().__init__()
        self._final = (spans, [], [])

    def start(self) -> None:
        return None

    def stop(self) -> None:
        return None


class UpstreamError(Exception):
    pass


def _spans(token: str, where: str) -> list[Any]:
    """Two spans of one tracer (the tool call and its upstream request), with ``token``
    at ``where`` ("" for the clean twin)."""
    exporter = InMemorySpanExporter()
    resource = {"service.name": "gateway"}
    if where == "resource":
        resource["deployment.key"] = token
    provider = TracerProvider(resource=Resource.create(resource))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    scope = {"team": token} if where == "scope" else {"team": "tools"}
    tracer = provider.get_tracer("gateway", "1.0", attributes=scope)
    state = TraceState([("vendor", token if where == "trace_state" else "plain")])
    remote = SpanContext(
        trace_id=0x5A, span_id=0x6B, is_remote=True, trace_flags=TraceFlags(1), trace_state=state
    )
    linked = SpanContext(
        trace_id=0x7C,
        span_id=0x8D,
        is_remote=True,
        trace_state=TraceState([("vendor", token if where == "link_state" else "plain")]),
    )
    parent = set_span_in_context(NonRecordingSpan(remote))
    with tracer.start_as_current_span("tools/call deploy", context=parent, links=[Link(linked)]):
        with tracer.start_as_current_span("POST /deployments") as span:
            span.set_attribute("http.route", "/v1/deployments")
            try:
                raise UpstreamError(f"401 from {token if where == 'exception' else 'upstream'}")
            except UpstreamError as exc:
                span.record_exception(exc)
            span.set_status(Status(StatusCode.ERROR, "401: upstream rejected credentials"))
    provider.shutdown()
    return list(exporter.get_finished_spans())


def _check(where: str) -> tuple[LeakCheck, list[Any]]:
    check = LeakCheck(seed=f"cost-otel-{where}", sinks=[])
    token = check.secret("bearer")
    spans = _spans(token, where)
    sink = _Exported(spans)
    check.sinks.append(sink)
    return check, list(sink.collect())


EXPECTED = {
    "exception": {
        'span "POST /deployments" events[0].exception.message',
        'span "POST /deployments" events[0].exception.stacktrace',
    },
    "trace_state": {
        'span "tools/call deploy" context.trace_state.vendor',
        'span "POST /deployments" context.trace_state.vendor',
    },
    "link_state": {'span "tools/call deploy" links[0].context.trace_state.vendor'},
    "resource": {"resource attributes.deployment.key"},
    "scope": {'scope "gateway" attributes.team'},
}


@pytest.mark.parametrize("where", sorted(EXPECTED))
def test_leak_in_a_span_field_is_caught(where: str) -> None:
    check, _ = _check(where)
    paths = {leak.path for leak in check.violations()}
    assert paths == EXPECTED[where]


def test_clean_twin_passes_and_shared_parts_are_read_once() -> None:
    check, items = _check("")
    assert check.violations() == []
    paths = [item.path for item in items]
    # not vacuous: the fields the leaky twins fail on were read
    assert 'span "POST /deployments" events[0].exception.stacktrace' in paths
    assert 'span "POST /deployments" context.trace_state.vendor' in paths
    assert 'span "tools/call deploy" links[0].context.trace_state.vendor' in paths
    # two spans, one resource and one scope: each yielded once; no JSON per span
    assert paths.count("resource attributes.service.name") == 1
    assert paths.count('scope "gateway" name') == 1
    assert not [path for path in paths if path.endswith(" json")]
    assert {item.group for item in items if item.path.startswith("resource ")} == {
        "opentelemetry#resource1"
    }


# --- the SDK's exception formatting, from a cache of frames -----------------------------------


def _deep(n: int, table: dict[str, Any]) -> None:
    if n:
        _deep(n - 1, table)  # the same frame 12 times: "[Previous line repeated ...]"
    table["a"]["b"][0] = 1 // 0  # carets under the subscripts (3.11+)


def _exceptions() -> list[BaseException]:
    found: list[BaseException] = []
    try:
        _deep(12, {"a": {"b": [0]}})
    except ZeroDivisionError as exc:
        found.append(exc)
    try:
        try:
            _deep(2, {"a": {"b": [0]}})
        except ZeroDivisionError as inner:
            raise UpstreamError("wrapped") from inner
    except UpstreamError as exc:
        if hasattr(exc, "add_note"):  # 3.11+
            exc.add_note("a note")
        found.append(exc)
    try:
        try:
            {}["missing"]
        except KeyError:
            raise UpstreamError("while handling")  # noqa: B904 - __context__, on purpose
    except UpstreamError as exc:
        found.append(exc)
    try:
        compile("def broken(:\n", "<gateway>", "exec")
    except SyntaxError as exc:
        found.append(exc)
    group = getattr(builtins, "ExceptionGroup", None)  # 3.11+
    if group is not None:
        try:
            raise group("two", [found[0], found[2]])
        except Exception as exc:  # noqa: BLE001
            found.append(exc)
    return found


def test_cached_formatting_is_the_sdks_text() -> None:
    from leakcheck.plugins import otel_sink

    exceptions = _exceptions()
    assert len(exceptions) == (5 if hasattr(builtins, "ExceptionGroup") else 4)
    for exc in exceptions:
        expected = "".join(traceback.format_exception(exc))
        assert "".join(otel_sink._format_exception(exc)) == expected  # frames cached now
        assert "".join(otel_sink._format_exception(exc)) == expected  # from the cache
    # any other call is the module's own
    exc = _exceptions()[0]
    assert otel_sink._format_exception(type(exc), exc, exc.__traceback__, limit=1) == (
        traceback.format_exception(type(exc), exc, exc.__traceback__, limit=1)
    )


def test_cached_formatting_while_a_sink_runs_only() -> None:
    from leakcheck.plugins import otel_sink
    from opentelemetry.sdk import trace as sdk_trace

    assert sdk_trace.traceback is traceback  # type: ignore[attr-defined]
    outer, inner = OpenTelemetrySink(), OpenTelemetrySink()
    outer.start()
    try:
        inner.start()
        assert sdk_trace.traceback is otel_sink._CACHED_TRACEBACK  # type: ignore[attr-defined]
        inner.stop()
        assert sdk_trace.traceback is otel_sink._CACHED_TRACEBACK  # type: ignore[attr-defined]
    finally:
        outer.stop()
    assert sdk_trace.traceback is traceback  # type: ignore[attr-defined]


@pytest.mark.parametrize("run", [1, 2])  # the second run's frames come from the cache
def test_exception_in_a_recorded_span_is_caught_with_cached_frames(run: int) -> None:
    from opentelemetry import trace

    check = LeakCheck(seed=f"cost-otel-cached-{run}", sinks=[OpenTelemetrySink()])
    token = check.secret("bearer")
    with check:
        if "traces" in check.sinks[-1].inactive_reason:  # pragma: no cover - foreign provider
            pytest.skip(check.sinks[-1].inactive_reason)
        with trace.get_tracer("cost-test").start_as_current_span("POST /deployments") as span:
            try:
                _deep(3, {"a": {"b": [0]}})
            except ZeroDivisionError as cause:
                try:
                    raise UpstreamError(f"401 for {token}") from cause
                except UpstreamError as exc:
                    span.record_exception(exc)
                    expected = "".join(traceback.format_exception(exc))
    texts = {c.path: c.text for c in check.sinks[-1].collect()}
    assert texts['span "POST /deployments" events[0].exception.stacktrace'] == expected
    assert {leak.path for leak in check.violations()} == {
        'span "POST /deployments" events[0].exception.message',
        'span "POST /deployments" events[0].exception.stacktrace',
    }


def _raised_at_one_place(message: str, depth: int = 4) -> BaseException:
    try:
        try:
            _deep(depth, {"a": {"b": [0]}})
        except ZeroDivisionError as cause:
            raise UpstreamError(message) from cause
    except UpstreamError as exc:
        return exc
    raise AssertionError("unreachable")


def test_a_stack_raised_again_at_the_same_place_comes_from_the_cache() -> None:
    """Two exceptions raised through the same frames: the second one's stacks (its own and
    its cause's) are the first one's, its text the SDK's, its messages its own."""
    from leakcheck.plugins import otel_sink

    if otel_sink._TB is None:  # pragma: no cover - 3.10, or no source loader
        pytest.skip("no private traceback module here: frames are cached, stacks are not")
    first, second = _raised_at_one_place("first"), _raised_at_one_place("second")
    texts = ["".join(otel_sink._format_exception(exc)) for exc in (first, second)]
    assert texts == ["".join(traceback.format_exception(exc)) for exc in (first, second)]
    assert "UpstreamError: second" in texts[1] and "first" not in texts[1]
    one = otel_sink._TB.TracebackException(type(first), first, first.__traceback__)
    two = otel_sink._TB.TracebackException(type(second), second, second.__traceback__)
    assert one.stack is two.stack and one.__cause__.stack is two.__cause__.stack
    # from the same line, deeper: the same first frame, another stack
    deeper = _raised_at_one_place("deeper", depth=7)
    assert "".join(otel_sink._format_exception(deeper)) == "".join(
        traceback.format_exception(deeper)
    )
    # the module everyone else uses is untouched
    assert traceback.StackSummary is not otel_sink._CachedFrames
    assert not isinstance(
        traceback.TracebackException(type(first), first, None).stack, otel_sink._CachedFrames
    )


def test_a_cached_stack_shows_a_source_file_changed_since(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lines of a cached stack are read again when a file's ``linecache`` entry
    changes (the file was edited): the text is still ``traceback``'s."""
    import importlib
    import sys

    from leakcheck.plugins import otel_sink

    source = tmp_path / "lc_cost_edited.py"
    source.write_text("def fail():\n    raise ValueError('boom')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("lc_cost_edited")
    try:

        def raised() -> BaseException:
            try:
                module.fail()
            except ValueError as exc:
                return exc
            raise AssertionError("unreachable")

        before = raised()
        assert "".join(otel_sink._format_exception(before)) == "".join(
            traceback.format_exception(before)
        )
        source.write_text("def fail():\n    raise ValueError('boom')  # edited since\n")
        after = raised()  # the same code, the file on disk changed
        expected = "".join(traceback.format_exception(after))
        assert "edited since" in expected
        assert "".join(otel_sink._format_exception(after)) == expected
    finally:
        sys.modules.pop("lc_cost_edited", None)


def test_a_traceback_limit_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from leakcheck.plugins import otel_sink

    exc = _raised_at_one_place("limited")
    otel_sink._format_exception(exc)  # cached without a limit
    monkeypatch.setattr(sys, "tracebacklimit", 2, raising=False)
    expected = "".join(traceback.format_exception(exc))
    assert "".join(otel_sink._format_exception(exc)) == expected
    monkeypatch.delattr(sys, "tracebacklimit")
    assert "".join(otel_sink._format_exception(exc)) == "".join(traceback.format_exception(exc))


@pytest.mark.parametrize("leaky", [True, False])
def test_recorded_exception_from_a_cached_stack_leaky_and_clean(leaky: bool) -> None:
    """The same frames recorded twice in one test: the second stack from the cache; a
    token in the cause's message fails the test, the clean twin passes."""
    from opentelemetry import trace

    check = LeakCheck(seed=f"cost-otel-stack-{leaky}", sinks=[OpenTelemetrySink()])
    token = check.secret("bearer")
    with check:
        if "traces" in check.sinks[-1].inactive_reason:  # pragma: no cover - foreign provider
            pytest.skip(check.sinks[-1].inactive_reason)
        tracer = trace.get_tracer("cost-test")
        for n in range(2):
            with tracer.start_as_current_span(f"call {n}") as span:
                try:
                    try:
                        raise LookupError(f"upstream said {token if leaky and n else 'no'}")
                    except LookupError as cause:
                        raise UpstreamError("401") from cause
                except UpstreamError as exc:
                    span.record_exception(exc)
    assert {leak.path for leak in check.violations()} == (
        {'span "call 1" events[0].exception.stacktrace'} if leaky else set()
    )
