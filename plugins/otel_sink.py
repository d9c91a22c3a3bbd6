"""Sink plugin for the OpenTelemetry SDK: spans, metric data points and log records.

What an operator's tracing, metrics and logging backends receive from the SDK: span names,
attributes, events (``record_exception`` writes ``exception.message`` and
``exception.stacktrace``), links and status descriptions; metric names, descriptions and
data-point attributes (exemplars' filtered attributes too); log records' bodies,
attributes (``exception.*`` for a logged exception) and event names.

How: the OTel API's providers are set once per process. On the first start of a sink the
process-wide pipeline is installed, signal by signal:

* the app has set no provider: ours is set globally (tracing with an ``ALWAYS_ON`` sampler
  while a sink runs, so that every span of a test is seen: what an exporter would send
  once the app configures one; ``ALWAYS_OFF`` outside, as with no provider at all).
  From then on the app cannot set its own (the API logs "Overriding of current ... is not
  allowed"): set it before the first leakcheck test (at import, in a ``conftest.py`` or a
  session fixture) if the app's tests need their own. That default stays (an app whose
  tests set no provider usually exports in production, and a sampler of ours that dropped
  spans would hide what it exports), and has a cost: the spans of the example MCP suite are
  then recorded, and one holds the tool's exception (``record_exception``: a 5.9 KB
  ``exception.stacktrace``). Issue 13 measured it at 4.2 to 4.9 ms of a test's 13 to 16 ms
  of plugin cost, 3.5 to 4.1 ms of it its scan; with the stacktrace searched on its own
  (its decoded runs kept from test to test, ``verdict._suspects``) and its stack formatted
  from a cache (below), 0.5 to 1.2 ms (``bench/plugin_overhead.py --suite mcp --shares``,
  "no stacktrace" and "stacktrace unread", 58 tests each, load about 2: noisy at that
  size); recording the spans themselves measured nothing.
  ``skip_sinks={"opentelemetry": why}`` opts a test out;
* the app has set an SDK provider: an ``InMemorySpanExporter`` behind a
  ``SimpleSpanProcessor`` / an ``InMemoryMetricReader`` / a ``SimpleLogRecordProcessor``
  with an in-memory exporter is added to it, once (the app's own processors, exporters and
  readers keep receiving everything). Adding a metric reader after construction needs
  ``MeterProvider.add_metric_reader`` (opentelemetry-sdk 1.3x+); without it the metrics
  signal is inactive;
* the app has set something else (``NoOp*Provider``, a vendor's provider): the signal is
  inactive, since what that provider sends cannot be read.

With ``OTEL_SDK_DISABLED=true`` the SDK records nothing and every signal is inactive.
An inactive signal is never silently treated as clean: ``inactive_reason`` names each
signal that could not be read and why (``""`` when all three are read), for a report to
list. Exported data is kept only while a sink runs (spans and log records of the tests
that do not use leakcheck are dropped, not held to the next one that does), cleared when
a test starts and read when the sink is collected;
our metric reader uses delta temporality, so each test sees only its own data points.

Paths: ``span "POST /deployments" attributes.http.url``, ``span "..." events[0].exception.
stacktrace``, ``span "..." status.description``, ``span "..." context.trace_state.vendor``,
``metric http.client.errors attributes.url``, ``log[0] body``, ``log[0] attributes.exception.
message``, ``resource attributes.service.name``, ``scope "gateway" attributes.x``. Each span,
metric and log record is one ``group``; a metric's and a log record's ``to_json()`` is a
``fallback``.

A span has no JSON fallback: every text its ``to_json()`` holds is yielded as a field (name,
attributes, events, links, status description, the trace state of its context and of its
links), and its resource and instrumentation scope, shared by every span of a provider or a
tracer, are yielded once per collect. What the JSON adds besides is ids, times, the kind and
the status code, none of them text an app writes. Measured on the example MCP suite (issue
13): the per-span JSON was 10.7 KB of the 19.8 KB a test scanned (the exception stacktrace a
second time, escaped) and about 3 ms per test, ``to_json()`` and its scan.

``Span.record_exception`` formats the exception's traceback (``exception.stacktrace``) the
moment it is called; on Python 3.11+ that is a ``compile()`` per frame for the caret lines,
and a walk of the code's positions up to each frame's instruction. While a sink runs, the
SDK's trace module formats through ``_CachedTraceback``: a private copy of the
``traceback`` module (the one everyone else uses is untouched) whose stack of a traceback
comes from a cache keyed by each frame's code, instruction and line, checked against the
``linecache`` entry of each file (an edited file is read again), and each frame's lines
from a cache keyed by every field they are made of. The text is the one the SDK would have
written (``tests/test_cost_otel.py`` compares them, a stack raised again at the same place,
an edited file and ``sys.tracebacklimit`` included); only the work per stack and per frame
seen before goes: on a 27-frame chain 150 to 65 microseconds (3.10, without the copy: the
frames only). The SDK module's own ``traceback`` is put back when the last sink stops.

Whose cost that is: with the app's own provider the formatting is the app's (its
production pays it too); with ours (the app set none) it is leakcheck's, part of the
strict default of recording every span, and measured as such in ``bench/plugin_overhead.py
--suite mcp --shares`` ("no stacktrace").

Not covered: spans not yet ended when the sink is collected, spans a sampler of the app's
provider dropped, providers the app never set globally (passed around by hand).
"""

from __future__ import annotations

import importlib.util
import json
import linecache
import os
import re
import sys
import threading
import traceback
import types
import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import opentelemetry.sdk  # noqa: F401 - ImportError here skips the plugin
from opentelemetry import metrics as metrics_api
from opentelemetry import trace as trace_api
from opentelemetry.sdk import metrics as sdk_metrics
from opentelemetry.sdk import trace as sdk_trace
from opentelemetry.sdk.metrics.export import AggregationTemporality, InMemoryMetricReader

try:  # (private: where every synchronous instrument's measurement goes)
    from opentelemetry.sdk.metrics._internal import measurement_consumer as _measurements
except ImportError:  # pragma: no cover - another SDK layout: no such note
    _measurements = None  # type: ignore[assignment]
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON, Sampler, SamplingResult

from leakcheck.capture import Captured
from leakcheck.policy import SinkClass

try:  # the logs signal is still experimental (``_logs``): optional
    from opentelemetry import _logs as logs_api
    from opentelemetry.sdk import _logs as sdk_logs
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor

    try:
        from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter as _LogExporter
    except ImportError:  # pragma: no cover - before 1.39
        from opentelemetry.sdk._logs.export import InMemoryLogExporter as _LogExporter
except ImportError:  # pragma: no cover
    logs_api = sdk_logs = None  # type: ignore[assignment]  # modules, or None without them

__all__ = ["POINT_STREAMS", "OpenTelemetrySink", "SINKS", "pipeline_state", "point_streams"]

_SIGNALS = ("traces", "metrics", "logs")
_SIMPLE_KEY = re.compile(r"[A-Za-z_][\w.\-/:]*\Z")


def _delta_everywhere() -> dict[type, AggregationTemporality]:
    kinds = [
        getattr(sdk_metrics, name, None)
        for name in (
            "Counter",
            "UpDownCounter",
            "Histogram",
            "ObservableCounter",
            "ObservableUpDownCounter",
            "ObservableGauge",
            "_Gauge",
        )
    ]
    return {kind: AggregationTemporality.DELTA for kind in kinds if isinstance(kind, type)}


def _is_unset(provider: Any) -> bool:
    """The API hands out a proxy until a provider is set."""
    return type(provider).__name__ in (
        "ProxyTracerProvider",
        "_ProxyMeterProvider",
        "ProxyLoggerProvider",
    )


class _SpansWhileASinkRuns(InMemorySpanExporter):
    """Keeps what is exported while a sink runs, and nothing else: the providers stay set
    for the rest of the process, and spans of the tests that never asked for leakcheck
    piled up here until the next one started (held to the end of a session whose last
    leakcheck test came early)."""

    def __init__(self, pipeline: _Pipeline) -> None:
        super().__init__()
        self._pipeline = pipeline

    def export(self, spans: Any) -> Any:
        return super().export(spans if self._pipeline.running else [])


if sdk_logs is not None:

    class _LogsWhileASinkRuns(_LogExporter):
        """``_SpansWhileASinkRuns`` for log records."""

        def __init__(self, pipeline: _Pipeline) -> None:
            super().__init__()
            self._pipeline = pipeline

        def export(self, batch: Any) -> Any:
            return super().export(batch if self._pipeline.running else [])


class _RecordWhileASinkRuns(Sampler):
    """Our own provider's sampler: every span while a sink runs (``ALWAYS_ON``, see the
    module docstring), none outside (``ALWAYS_OFF``), as with the plugin off, where the
    app has no provider at all: a test that does not use leakcheck pays no recording,
    and ``record_exception``'s stacktrace is not formatted for it. A span started before
    a test's sink starts is not recorded, even if it ends inside the test."""

    def __init__(self, pipeline: _Pipeline) -> None:
        self._pipeline = pipeline

    def should_sample(self, *args: Any, **kwargs: Any) -> SamplingResult:
        sampler = ALWAYS_ON if self._pipeline.running else ALWAYS_OFF
        return sampler.should_sample(*args, **kwargs)

    def get_description(self) -> str:
        return "leakcheck: AlwaysOn while a leakcheck sink runs, else AlwaysOff"


class _Pipeline:
    """The process-wide in-memory exporters, installed once (see the module docstring)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.spans = _SpansWhileASinkRuns(self)
        self.reader = InMemoryMetricReader(preferred_temporality=_delta_everywhere())
        self.logs = _LogsWhileASinkRuns(self) if sdk_logs is not None else None
        # the global provider each signal was handled for, and why a signal is not read
        self.handled: dict[str, Any] = {}
        self.inactive: dict[str, str] = {}
        self.installed: dict[str, str] = {}  # signal -> "ours" | "added to the app's"
        # shared by the sinks running now (nested LeakChecks): each reads from its offset
        self.running = 0
        self.metric_batches: list[Any] = []
        #: the span processors of every SDK provider a tracer of which started a span
        #: while a sink ran: ours is on each (an app's own provider, never set globally:
        #: dependency injection; its spans passed unread)
        self.span_processors: weakref.WeakSet[Any] = weakref.WeakSet()
        #: meter providers that are not the global one, used while a sink ran: their data
        #: points are not read (said as an inactive signal, never silently clean)
        self.foreign_meters = 0

    # --- installation -----------------------------------------------------------------------

    def ensure(self) -> None:
        with self.lock:
            if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
                for signal in _SIGNALS:  # the SDK's providers hand out no-op tracers etc.
                    self.inactive[signal] = "OTEL_SDK_DISABLED=true: the SDK records nothing"
                return
            self._traces()
            self._metrics()
            self._logs()
            self._watch_every_provider()

    def _watch_every_provider(self) -> None:
        """Every SDK TracerProvider's spans read, the global one's or not: ours added to
        a provider's processors the first time one of its tracers starts a span while a
        sink runs; a measurement of a MeterProvider that is not the global one, made then,
        said."""
        if sdk_trace.Tracer.__dict__.get("_leakcheck_watched"):
            return
        pipeline = self
        start_span = sdk_trace.Tracer.start_span
        consumer_class = getattr(_measurements, "SynchronousMeasurementConsumer", None)
        consume = getattr(consumer_class, "consume_measurement", None)

        def watched_start_span(tracer: Any, *args: Any, **kwargs: Any) -> Any:
            if pipeline.running:
                processor = getattr(tracer, "span_processor", None)  # (the provider's)
                if processor is not None and processor not in pipeline.span_processors:
                    try:
                        processor.add_span_processor(SimpleSpanProcessor(pipeline.spans))
                        pipeline.span_processors.add(processor)
                    except Exception:  # noqa: BLE001 - the SDK changed: its spans unread
                        pass
            return start_span(tracer, *args, **kwargs)

        def watched_consume(consumer: Any, measurement: Any) -> Any:
            if pipeline.running:
                handled = pipeline.handled.get("metrics")
                if consumer is not getattr(handled, "_measurement_consumer", consumer):
                    pipeline.foreign_meters += 1
            return consume(consumer, measurement)  # type: ignore[misc]  # (checked below)

        sdk_trace.Tracer.start_span = watched_start_span  # type: ignore[method-assign, assignment]
        if consumer_class is not None and consume is not None:  # (the SDK's private module)
            consumer_class.consume_measurement = watched_consume
        sdk_trace.Tracer._leakcheck_watched = True  # type: ignore[attr-defined]

    def _traces(self) -> None:
        provider = trace_api.get_tracer_provider()
        if self.handled.get("traces") is provider:
            return
        if _is_unset(provider):
            ours = sdk_trace.TracerProvider(sampler=_RecordWhileASinkRuns(self))
            ours.add_span_processor(SimpleSpanProcessor(self.spans))
            self.span_processors.add(ours._active_span_processor)
            trace_api.set_tracer_provider(ours)
            self._settle("traces", trace_api.get_tracer_provider(), ours)
        elif isinstance(provider, sdk_trace.TracerProvider):
            provider.add_span_processor(SimpleSpanProcessor(self.spans))
            self._settle("traces", provider, None)
            self.span_processors.add(provider._active_span_processor)
        else:
            self._inactive("traces", provider, "TracerProvider")

    def _metrics(self) -> None:
        provider = metrics_api.get_meter_provider()
        if self.handled.get("metrics") is provider:
            return
        if _is_unset(provider):
            ours = sdk_metrics.MeterProvider(metric_readers=[self.reader])
            metrics_api.set_meter_provider(ours)
            self._settle("metrics", metrics_api.get_meter_provider(), ours)
        elif isinstance(provider, sdk_metrics.MeterProvider):
            add = getattr(provider, "add_metric_reader", None)
            if callable(add):
                add(self.reader)
                self._settle("metrics", provider, None)
            else:
                self.handled["metrics"] = provider
                self.inactive["metrics"] = (
                    "the app's MeterProvider was built before leakcheck and this "
                    "opentelemetry-sdk cannot add a metric reader after construction "
                    "(no MeterProvider.add_metric_reader): data points are not read"
                )
        else:
            self._inactive("metrics", provider, "MeterProvider")

    def _logs(self) -> None:
        if sdk_logs is None or self.logs is None:
            self.inactive["logs"] = "opentelemetry-sdk has no logs signal"
            return
        provider = logs_api.get_logger_provider()
        if self.handled.get("logs") is provider:
            return
        if _is_unset(provider):
            ours = sdk_logs.LoggerProvider()
            ours.add_log_record_processor(SimpleLogRecordProcessor(self.logs))
            logs_api.set_logger_provider(ours)
            self._settle("logs", logs_api.get_logger_provider(), ours)
        elif isinstance(provider, sdk_logs.LoggerProvider):
            provider.add_log_record_processor(SimpleLogRecordProcessor(self.logs))
            self._settle("logs", provider, None)
        else:
            self._inactive("logs", provider, "LoggerProvider")

    def _settle(self, signal: str, provider: Any, ours: Any) -> None:
        self.handled[signal] = provider
        if ours is not None and provider is not ours:  # lost a race with another setter
            self.inactive[signal] = (
                f"the global {type(provider).__name__} was set while leakcheck installed its "
                "own; rerun"
            )
            return
        self.inactive.pop(signal, None)
        self.installed[signal] = "ours" if ours is not None else "added to the app's"

    def _inactive(self, signal: str, provider: Any, kind: str) -> None:
        self.handled[signal] = provider
        self.inactive[signal] = (
            f"the global {kind} is a {type(provider).__module__}.{type(provider).__name__}, "
            "not the OpenTelemetry SDK's: what it sends cannot be read"
        )

    # --- reading ----------------------------------------------------------------------------

    def read_metrics(self) -> None:
        """Drain our reader into ``metric_batches`` (delta temporality: new points only)."""
        if "metrics" in self.inactive or "metrics" not in self.handled:
            return
        try:
            data = self.reader.get_metrics_data()
        except Exception:  # noqa: BLE001 - an app callback raised; the SDK logs it
            data = None
        if data is not None:
            self.metric_batches.append(data)

    def begin(self) -> tuple[int, int, int]:
        """A sink starts: clear when nobody else reads; return its offsets."""
        with self.lock:
            self.ensure()
            self.read_metrics()
            if self.running == 0:
                _cached_formatting(True)
                self.spans.clear()
                if self.logs is not None:
                    self.logs.clear()
                self.metric_batches.clear()
            self.running += 1
            return self._offsets()

    def _offsets(self) -> tuple[int, int, int]:
        logs = len(self.logs.get_finished_logs()) if self.logs is not None else 0
        return len(self.spans.get_finished_spans()), len(self.metric_batches), logs

    def snapshot(self, offsets: tuple[int, int, int]) -> tuple[list[Any], list[Any], list[Any]]:
        with self.lock:
            self.read_metrics()
            spans = list(self.spans.get_finished_spans())[offsets[0] :]
            batches = list(self.metric_batches)[offsets[1] :]
            logs = list(self.logs.get_finished_logs())[offsets[2] :] if self.logs else []
            return spans, batches, logs

    def end(self) -> None:
        with self.lock:
            self.running = max(0, self.running - 1)
            if self.running == 0:
                _cached_formatting(False)


# --- the SDK's exception formatting, frame by frame from a cache ------------------------------


def _private_traceback() -> Any:
    """A private copy of the ``traceback`` module (its own globals), whose stack extraction
    can be pointed at ``_CachedFrames`` without touching the module everyone else uses;
    ``None`` where it cannot be made (no source loader) or lacks what is replaced (3.10)."""
    try:
        spec = importlib.util.find_spec("traceback")
        if spec is None or spec.loader is None:
            return None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except Exception:  # noqa: BLE001 - a frozen or zipped stdlib: the module itself, then
        return None
    stack = getattr(module, "StackSummary", None)
    if not (
        callable(getattr(module, "_walk_tb_with_full_positions", None))
        and hasattr(stack, "_extract_from_extended_frame_gen")
        and hasattr(stack, "format_frame_summary")
    ):
        return None
    return module


_TB: Any = _private_traceback()
_Summary: Any = _TB.StackSummary if _TB is not None else traceback.StackSummary
#: ``StackSummary.format_frame_summary`` (3.11+; typeshed's 3.10 lacks it)
_format_frame: Any = getattr(_Summary, "format_frame_summary", None)
#: every field a frame's formatted lines are made of -> those lines (bounded)
_FRAME_LINES: dict[tuple[Any, ...], str] = {}
_FRAME_LINES_MAX = 4096
#: a traceback's frames (code, last instruction, line) -> its stack and, for each file of
#: it, the ``linecache`` entry its lines were read from (bounded)
_STACKS: dict[tuple[Any, ...], tuple[Any, tuple[tuple[str, Any], ...]]] = {}
_STACKS_MAX = 512


class _Walk:
    """What the private module's ``_walk_tb_with_full_positions`` returns: the traceback,
    walked (positions looked up frame by frame) only when its stack is not cached."""

    __slots__ = ("tb",)

    def __init__(self, tb: Any) -> None:
        self.tb = tb

    def __iter__(self) -> Iterator[Any]:
        return iter(_WALK(self.tb))


class _CachedFrames(_Summary):  # the private module's class (or the module's, on 3.10)
    """A ``StackSummary`` whose frames' lines come from ``_FRAME_LINES`` when every field
    that makes them is the same (frames with locals are formatted as always), and, in the
    private module, whose extraction from a traceback comes from ``_STACKS`` when the same
    code was at the same instructions and every file's ``linecache`` entry is the one its
    lines were read from (``linecache.checkcache`` first, as the extraction does). Python
    3.10 has no ``format_frame_summary`` (nor caret lines): there nothing is cached."""

    @classmethod
    def _extract_from_extended_frame_gen(cls, frame_gen: Any, **kwargs: Any) -> Any:
        plain = (
            type(frame_gen) is _Walk
            and kwargs.get("limit") is None
            and getattr(sys, "tracebacklimit", None) is None
            and kwargs.get("lookup_lines", True)
            and not kwargs.get("capture_locals", False)
        )
        if not plain:
            return super()._extract_from_extended_frame_gen(frame_gen, **kwargs)
        frames = []
        tb = frame_gen.tb
        while tb is not None:
            frames.append((tb.tb_frame.f_code, tb.tb_lasti, tb.tb_lineno))
            tb = tb.tb_next
        key = tuple(frames)
        cached = _STACKS.get(key)
        if cached is not None:
            stack, entries = cached
            for filename, entry in entries:
                linecache.checkcache(filename)
                if linecache.cache.get(filename) is not entry:
                    break
            else:
                return stack
        stack = super()._extract_from_extended_frame_gen(frame_gen, **kwargs)
        files = dict.fromkeys(frame.filename for frame in stack)
        if len(_STACKS) >= _STACKS_MAX:
            _STACKS.clear()
        _STACKS[key] = (stack, tuple((name, linecache.cache.get(name)) for name in files))
        return stack

    def format_frame_summary(self, frame_summary: Any, **kwargs: Any) -> str:
        if getattr(frame_summary, "locals", None) is not None:
            return _format_frame(self, frame_summary, **kwargs)
        key = (
            frame_summary.filename,
            frame_summary.lineno,
            getattr(frame_summary, "end_lineno", None),
            getattr(frame_summary, "colno", None),
            getattr(frame_summary, "end_colno", None),
            frame_summary.name,
            frame_summary.line,
            getattr(frame_summary, "_original_line", None),  # 3.11, 3.12: the carets' line
            getattr(frame_summary, "_original_lines", None),  # 3.13+
            tuple(sorted(kwargs.items())),
        )
        try:
            return _FRAME_LINES[key]
        except KeyError:
            pass
        except TypeError:  # an unhashable field: not ours to guess
            return _format_frame(self, frame_summary, **kwargs)
        text = _format_frame(self, frame_summary, **kwargs)
        if len(_FRAME_LINES) >= _FRAME_LINES_MAX:
            _FRAME_LINES.clear()
        _FRAME_LINES[key] = text
        return text


if _TB is not None:  # the private module extracts and formats through _CachedFrames
    _WALK = _TB._walk_tb_with_full_positions
    _TB._walk_tb_with_full_positions = _Walk
    _TB.StackSummary = _CachedFrames


def _cached_stacks(te: traceback.TracebackException) -> None:
    """Every ``StackSummary`` of ``te`` and of its causes, contexts and group members
    formatted through ``_CachedFrames`` (without the private module only)."""
    todo, seen = [te], set()
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if type(current.stack) is traceback.StackSummary:
            current.stack.__class__ = _CachedFrames
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                todo.append(linked)
        todo.extend(getattr(current, "exceptions", None) or ())


def _format_exception(*args: Any, **kwargs: Any) -> list[str]:
    """``traceback.format_exception`` as the SDK calls it (one exception), through
    ``_CachedFrames``; any other call goes to ``traceback.format_exception`` itself."""
    if len(args) != 1 or kwargs or not isinstance(args[0], BaseException):
        return traceback.format_exception(*args, **kwargs)
    value = args[0]
    if _TB is not None:
        return list(
            _TB.TracebackException(type(value), value, value.__traceback__, compact=True).format()
        )
    te = traceback.TracebackException(type(value), value, value.__traceback__, compact=True)
    _cached_stacks(te)
    return list(te.format())


class _CachedTraceback(types.ModuleType):
    """The ``traceback`` module as the SDK's trace module sees it while a sink runs: its
    ``format_exception`` formats frames from the cache, everything else is the module's."""

    def __init__(self) -> None:
        super().__init__("traceback")
        self.format_exception = _format_exception

    def __getattr__(self, name: str) -> Any:
        return getattr(traceback, name)


_CACHED_TRACEBACK = _CachedTraceback()


def _cached_formatting(on: bool) -> None:
    """Point the SDK trace module's ``traceback`` at ``_CACHED_TRACEBACK`` (``on``) or back
    at the module (only what we set is undone: another patch of it is left alone)."""
    current = getattr(sdk_trace, "traceback", None)
    if on and current is traceback:
        sdk_trace.traceback = _CACHED_TRACEBACK  # until the last sink stops
    elif not on and current is _CACHED_TRACEBACK:
        sdk_trace.traceback = traceback  # the module itself


_PIPELINE: _Pipeline | None = None
_PIPELINE_LOCK = threading.Lock()


def _pipeline() -> _Pipeline:
    global _PIPELINE
    with _PIPELINE_LOCK:
        if _PIPELINE is None:
            _PIPELINE = _Pipeline()
        return _PIPELINE


def pipeline_state() -> dict[str, dict[str, str]]:
    """``{"installed": {signal: how}, "inactive": {signal: why}}`` for this process
    (empty before the first sink started)."""
    if _PIPELINE is None:
        return {"installed": {}, "inactive": {}}
    with _PIPELINE.lock:
        return {"installed": dict(_PIPELINE.installed), "inactive": dict(_PIPELINE.inactive)}


class OpenTelemetrySink:
    """Spans, metric data points and log records the OpenTelemetry SDK exported during the
    test (operator-visible: tracing, metrics and logging backends).

    ``inactive_reason``: ``""`` when every signal is read, else ``"<signal>: <why>"`` for
    each signal that is not (joined with ``"; "``); those signals yield no texts.
    """

    name = "opentelemetry"
    #: why the signals could not be read, as the sink started
    _inactive_at_start: str = ""

    @property
    def inactive_reason(self) -> str:
        """Which signals could not be read during this test, and why; ``""`` when all
        were (read live: a measurement of the app's own MeterProvider is said as made)."""
        said = self._inactive_at_start
        meters = _pipeline().foreign_meters if self._offsets is not None else self._meters_end
        if meters > self._meters:
            foreign = (
                "metrics: a MeterProvider that is not the global one (the app's own, not set "
                "with metrics.set_meter_provider) was used: its data points are not read"
            )
            said = "; ".join(x for x in (said, foreign) if x)
        return said

    def __init__(self) -> None:
        self._offsets: tuple[int, int, int] | None = None
        self._final: tuple[list[Any], list[Any], list[Any]] | None = None
        # the pipeline's count of measurements of foreign meter providers at start, at stop
        self._meters = self._meters_end = 0

    def start(self) -> None:
        if self._offsets is not None:
            return
        pipeline = _pipeline()
        self._final = None
        self._offsets = pipeline.begin()
        self._meters = pipeline.foreign_meters
        with pipeline.lock:
            self._inactive_at_start = "; ".join(
                f"{signal}: {pipeline.inactive[signal]}"
                for signal in _SIGNALS
                if signal in pipeline.inactive
            )

    def stop(self) -> None:
        if self._offsets is None:
            return
        pipeline = _pipeline()
        try:
            self._final = pipeline.snapshot(self._offsets)
            self._meters_end = pipeline.foreign_meters
        finally:
            self._offsets = None
            pipeline.end()

    def collect(self) -> Iterator[Captured]:
        if self._final is not None:
            spans, batches, logs = self._final
        elif self._offsets is not None:
            spans, batches, logs = _pipeline().snapshot(self._offsets)
        else:
            return
        shared = _Shared(self)
        for n, span in enumerate(spans):
            yield from self._span(span, f"{self.name}#span{n}")
            yield from shared.of(span)
        m = 0
        for batch in batches:
            for metric in _metrics_of(batch):
                yield from self._metric(metric, f"{self.name}#metric{m}")
                m += 1
        for n, record in enumerate(logs):
            yield from self._log(record, n, f"{self.name}#log{n}")

    # --- texts ------------------------------------------------------------------------------

    def _item(self, group: str, path: str, text: str | bytes, fallback: bool = False) -> Captured:
        return Captured(self.name, SinkClass.OPERATOR, path, text, group=group, fallback=fallback)

    def _span(self, span: Any, group: str) -> Iterator[Captured]:
        name = str(span.name)
        prefix = f"span {json.dumps(name, ensure_ascii=False)}"
        yield self._item(group, f"{prefix} name", name)
        for path, text in _attributes(span.attributes, "attributes"):
            yield self._item(group, f"{prefix} {path}", text)
        for i, event in enumerate(span.events or ()):
            yield self._item(group, f"{prefix} events[{i}].name", str(event.name))
            for path, text in _attributes(event.attributes, f"events[{i}]"):
                yield self._item(group, f"{prefix} {path}", text)
        for i, link in enumerate(span.links or ()):
            for path, text in _attributes(link.attributes, f"links[{i}].attributes"):
                yield self._item(group, f"{prefix} {path}", text)
        status = getattr(span, "status", None)
        if status is not None and status.description:
            yield self._item(group, f"{prefix} status.description", str(status.description))
        for path, text in _trace_state(getattr(span, "context", None), "context.trace_state"):
            yield self._item(group, f"{prefix} {path}", text)
        for i, link in enumerate(span.links or ()):
            context = getattr(link, "context", None)
            for path, text in _trace_state(context, f"links[{i}].context.trace_state"):
                yield self._item(group, f"{prefix} {path}", text)
        # no to_json() fallback: it holds these texts again (see the module docstring)

    def _metric(self, metric: Any, group: str) -> Iterator[Captured]:
        prefix = f"metric {metric.name}"
        yield self._item(group, f"{prefix} name", str(metric.name))
        for field in ("description", "unit"):
            value = getattr(metric, field, None)
            if value:
                yield self._item(group, f"{prefix} {field}", str(value))
        for point in getattr(metric.data, "data_points", ()) or ():
            for path, text in _attributes(point.attributes, "attributes"):
                yield self._item(group, f"{prefix} {path}", text)
            for i, exemplar in enumerate(getattr(point, "exemplars", ()) or ()):
                for path, text in _attributes(
                    getattr(exemplar, "filtered_attributes", None),
                    f"exemplars[{i}].filtered_attributes",
                ):
                    yield self._item(group, f"{prefix} {path}", text)
        yield self._item(group, f"{prefix} json", _to_json(metric), fallback=True)

    def _log(self, data: Any, n: int, group: str) -> Iterator[Captured]:
        record = getattr(data, "log_record", data)
        prefix = f"log[{n}]"
        for path, text in _values(getattr(record, "body", None), "body"):
            yield self._item(group, f"{prefix} {path}", text)
        for path, text in _attributes(getattr(record, "attributes", None), "attributes"):
            yield self._item(group, f"{prefix} {path}", text)
        event_name = getattr(record, "event_name", None)
        if event_name:
            yield self._item(group, f"{prefix} event_name", str(event_name))
        yield self._item(group, f"{prefix} json", _to_json(data), fallback=True)


class _Shared:
    """The resources and instrumentation scopes of one collect's spans, each yielded once
    (every span of a provider shares its resource, every span of a tracer its scope)."""

    def __init__(self, sink: OpenTelemetrySink) -> None:
        self._sink = sink
        self._seen: list[Any] = []

    def _first(self, obj: Any) -> bool:
        if obj is None or any(obj is seen for seen in self._seen):
            return False
        self._seen.append(obj)
        return True

    def of(self, span: Any) -> Iterator[Captured]:
        sink = self._sink
        resource = getattr(span, "resource", None)
        if self._first(resource):
            group = f"{sink.name}#resource{len(self._seen)}"
            attributes = getattr(resource, "attributes", None)
            for path, text in _attributes(attributes, "resource attributes"):
                yield sink._item(group, path, text)
            schema = getattr(resource, "schema_url", "")
            if schema:
                yield sink._item(group, "resource schema_url", str(schema))
        scope = getattr(span, "instrumentation_scope", None)
        if self._first(scope):
            group = f"{sink.name}#scope{len(self._seen)}"
            name = str(getattr(scope, "name", ""))
            prefix = f"scope {json.dumps(name, ensure_ascii=False)}"
            yield sink._item(group, f"{prefix} name", name)
            for field in ("version", "schema_url"):
                value = getattr(scope, field, None)
                if value:
                    yield sink._item(group, f"{prefix} {field}", str(value))
            for path, text in _attributes(getattr(scope, "attributes", None), "attributes"):
                yield sink._item(group, f"{prefix} {path}", text)


def _trace_state(context: Any, path: str) -> Iterator[tuple[str, str | bytes]]:
    """``(path, text)`` for each key and value of a span context's W3C trace state."""
    state = getattr(context, "trace_state", None)
    if not state:
        return
    try:
        items = list(state.items())
    except Exception:  # noqa: BLE001 - not the API's TraceState: read what it prints
        yield path, str(state)
        return
    yield from _attributes(dict(items), path)


def _metrics_of(batch: Any) -> Iterator[Any]:
    for resource_metrics in getattr(batch, "resource_metrics", ()) or ():
        for scope_metrics in getattr(resource_metrics, "scope_metrics", ()) or ():
            yield from getattr(scope_metrics, "metrics", ()) or ()


def _to_json(obj: Any) -> str:
    try:
        return str(obj.to_json(indent=None))
    except Exception:  # noqa: BLE001 - a value the SDK's encoder cannot write
        try:
            return repr(obj)
        except Exception:  # noqa: BLE001
            return ""


def _child(path: str, key: str) -> str:
    if _SIMPLE_KEY.match(key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def _attributes(attributes: Any, path: str) -> Iterator[tuple[str, str | bytes]]:
    """``(path, text)`` for every key and text value of an attribute mapping."""
    if not attributes:
        return
    try:
        items = list(dict(attributes).items())
    except Exception:  # noqa: BLE001
        return
    for key, value in items:
        key = str(key)
        sub = _child(path, key)
        yield f"{sub}<key>", key
        yield from _values(value, sub)


def _values(value: Any, path: str, depth: int = 0) -> Iterator[tuple[str, str | bytes]]:
    """Text leaves of an OTel ``AnyValue``: str, bytes, sequences and mappings of them."""
    if depth > 32 or value is None or isinstance(value, (bool, int, float)):
        return
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, (bytes, bytearray, memoryview)):
        yield path, bytes(value)
    elif isinstance(value, Mapping):
        for key, child in value.items():
            key = str(key)
            sub = _child(path, key)
            yield f"{sub}<key>", key
            yield from _values(child, sub, depth + 1)
    elif isinstance(value, (list, tuple)):
        for i, child in enumerate(value):
            yield from _values(child, f"{path}[{i}]", depth + 1)
    else:
        yield path, str(value)


def _console_exporters() -> list[type]:
    """The SDK's console exporters (spans, log records, metrics) that import here."""
    found: list[type] = []
    for module, name in (
        ("opentelemetry.sdk.trace.export", "ConsoleSpanExporter"),
        ("opentelemetry.sdk._logs.export", "ConsoleLogRecordExporter"),
        ("opentelemetry.sdk.metrics.export", "ConsoleMetricExporter"),
    ):
        try:
            found.append(getattr(importlib.import_module(module), name))
        except (ImportError, AttributeError):
            continue
    return found


def point_streams(streams: Mapping[int, Any]) -> Callable[[], None]:
    """Under ``-s``: the SDK's console exporters write to ``sys.stdout`` as it was when
    their module was imported (a default argument: the terminal's own stream, which
    ``streams`` names by ``id``), and a span's attributes reached the terminal raw (found
    by a hunting helper). Each export by an exporter whose ``out`` is one of them writes
    to the stream it maps to (leakcheck's masked echo); the callable returned puts the
    exporters' ``export`` back."""
    patched: list[tuple[type, Any]] = []
    for cls in _console_exporters():
        original = cls.__dict__.get("export")
        if original is None:
            continue

        def export(self: Any, batch: Any, *args: Any, _original: Any = original, **kw: Any) -> Any:
            out = getattr(self, "out", None)
            echo = streams.get(id(out)) if out is not None else None
            if echo is None:
                return _original(self, batch, *args, **kw)
            self.out = echo
            try:
                return _original(self, batch, *args, **kw)
            finally:
                self.out = out

        cls.export = export  # type: ignore[attr-defined]  # (the SDK's own, put back)
        patched.append((cls, original))

    def put_back() -> None:
        for cls, original in patched:
            cls.export = original  # type: ignore[attr-defined]

    return put_back


SINKS = [OpenTelemetrySink]
#: what leakcheck's ``-s`` echo calls to point this library's writers at it
POINT_STREAMS = point_streams
