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
