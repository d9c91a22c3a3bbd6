"""Sink plugin for openai-agents tracing: the traces and spans its trace processors export.

The Agents SDK traces every run with its own tracing (not OpenTelemetry) and hands each
trace and span to the processors of its global trace provider; the default one exports
them to the OpenAI traces dashboard, others to Logfire, Langfuse, Braintrust... What they
receive is ``Trace.export()`` and ``Span.export()``: a function span's ``input`` (the
tool's arguments), ``output`` and ``error`` (``{"message", "data": {"tool_name",
"error"}}``), a generation span's ``input`` (the messages sent to the model, tool outputs
among them) and ``output``, custom spans' ``data``, a trace's ``metadata``. Sensitive data
is on by default (``RunConfig.trace_include_sensitive_data``, or
``OPENAI_AGENTS_TRACE_INCLUDE_SENSITIVE_DATA``), and a function tool's exception text is
kept in its span whenever a custom ``failure_error_function`` is set, even one that returns
a fixed message to the model: a credential in an upstream error's message reaches the
tracing backend while the model sees nothing. Operator-visible (``SinkClass.OPERATOR``).

How: while the sink runs, a processor of ours is added to the global provider's processors
(``DefaultTraceProvider``; the app's own processors keep receiving everything) and removed
when it stops, the rest of the list left exactly as it is then. Each span is read when it
ends (``export()`` at that moment, as the exporters read it), each trace when it starts;
a span started during the test and not ended when it stops is read then, noted as such.
When the app has not traced yet (no provider), the sink sets the provider the SDK would
create on first use, its default processor (the OpenAI exporter) made only when a trace
reaches it: if the test traced nothing, the global is put back unset; if it traced, the
provider stays with the real default processor, as the SDK would have left it.

Active when openai-agents is installed; it is never imported for this (its import takes
seconds): a test can only trace once the app imported it, so the sink hooks it when it is
imported by the time a test starts (at collection, in a ``conftest.py``). ``inactive_reason``
says when the sink could not read what is exported: tracing disabled
(``OPENAI_AGENTS_DISABLE_TRACING``, ``set_tracing_disabled``) and no trace made, a trace
provider that is not the SDK's, the processors replaced during the test
(``set_trace_processors``), the SDK first imported during the test.

Paths: ``span function "deploy" error.data.error``, ``span function "deploy" output``,
``span generation "gpt-4o" input[2].content``, ``trace "Agent workflow" metadata.user``;
each span and trace is one ``group``, its whole JSON a ``fallback``.

Not covered: ``RunConfig(tracing_disabled=True)`` (no span is made, so none is exported),
what a response span holds without exporting it (``span_data.input``, ``.response``: the
SDK's exporter sends only the response id; an OpenTelemetry bridge that reads them is
judged by the OpenTelemetry sink), the exporter's own truncation of fields past 100 kB
(the whole field is searched).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

from leakcheck.capture import Captured
from leakcheck.policy import SinkClass
from leakcheck.serialize import BUDGET_CHARS, FIELD_BUDGET, Serialized, safe_str, type_name

if importlib.util.find_spec("agents") is None:  # the plugin is skipped without it, quietly
    # (a ModuleNotFoundError naming a package that cannot be found: a library not
    # installed, said only under -v, not a broken plugin said in every session)
    raise ModuleNotFoundError(
        "openai-agents is not installed (no module named 'agents')", name="agents"
    )
try:
    importlib.metadata.distribution("openai-agents")
except importlib.metadata.PackageNotFoundError:
    raise ImportError("the installed 'agents' module is not openai-agents") from None

__all__ = ["AgentsTracingSink", "SINKS"]


class _Read:
    """One trace or span as exported: its label, its fields and its whole JSON."""

    __slots__ = ("label", "fields", "json", "uninspected", "note")

    def __init__(self, label: str, exported: Any, note: str = "") -> None:
        self.label = label
        self.note = note
        self.fields: list[tuple[str, str | bytes, str]] = []
        self.json = ""
        self.uninspected: list[tuple[str, str]] = []
        if exported is None:
            return
        serialized = Serialized(exported, long_texts=True, budget=BUDGET_CHARS)
        for path, text, field_note in serialized.fields():
            if len(self.fields) == FIELD_BUDGET:
                break
            self.fields.append((_path(path), text, field_note))
        self.json = serialized.json()
        self.uninspected = [(_path(p), f"{w}: {why}") for p, w, why in serialized.not_inspected]


def _path(path: str) -> str:
    """``$.span_data.input[1]`` -> ``input[1]``; ``$.error.data.error`` -> ``error.data.error``."""
    if path.startswith("$.span_data."):
        return path[len("$.span_data.") :]
    if path.startswith("$."):
        return path[2:]
    return path.lstrip("$") or "$"


def _span_label(exported: Any) -> str:
    data = exported.get("span_data") if isinstance(exported, dict) else None
    if not isinstance(data, dict):
        return "span"
    kind = safe_str(data.get("type") or "?")
    name = data.get("name") if kind != "generation" else data.get("model")
    if kind == "custom" and isinstance(data.get("data"), dict):
        name = data["data"].get("sdk_span_type") or name
    if name is None:
        return f"span {kind}"
    return f"span {kind} {json.dumps(safe_str(name), ensure_ascii=False)}"


def _trace_label(exported: Any) -> str:
    name = exported.get("workflow_name") if isinstance(exported, dict) else None
    return f"trace {json.dumps(safe_str(name or ''), ensure_ascii=False)}"


class _Processor:
    """Our trace processor (the SDK's ``TracingProcessor`` interface, duck-typed so that
    this module need not import the SDK)."""

    def __init__(self) -> None:
        self.read: list[_Read] = []
        self.open: dict[int, Any] = {}  # spans started and not ended yet, by id()
        self.lock = threading.Lock()
        self.seen = False

    def on_trace_start(self, trace: Any) -> None:
        self.seen = True
        self._export(trace, _trace_label, "trace")

    def on_trace_end(self, trace: Any) -> None:
        self.seen = True

    def on_span_start(self, span: Any) -> None:
        self.seen = True
        with self.lock:
            self.open[id(span)] = span

    def on_span_end(self, span: Any) -> None:
        self.seen = True
        with self.lock:
            self.open.pop(id(span), None)
        self._export(span, _span_label, "span")

    def unfinished(self) -> None:
        """Read the spans still open (at stop): what they hold now."""
        with self.lock:
            spans, self.open = list(self.open.values()), {}
        for span in spans:
            self._export(span, _span_label, "span", "not ended when the test ended")

    def _export(self, item: Any, label: Any, kind: str, note: str = "") -> None:
        """Read ``item.export()`` now, as an exporter would; never raise into the SDK."""
        try:
            exported = item.export()
        except Exception as exc:  # noqa: BLE001 - e.g. a tool output whose __str__ raises
            read = _Read(kind, None, note)
            read.uninspected.append(("export()", f"{kind}.export() raised {type_name(exc)}"))
        else:
            if exported is None:
                return
            read = _Read(label(exported), exported, note)
        with self.lock:
            self.read.append(read)

    def shutdown(self) -> None:
        return None

    def force_flush(self) -> None:
        return None


class _LazyDefault:
    """The SDK's default processor (``processors.default_processor()``, the OpenAI
    exporter), made on first use, as the SDK makes it when the app first traces: standing
    in for it in a provider the sink created, so that a test that traces nothing costs
    nothing (making it builds the exporter's HTTP client) and changes nothing."""

    def __init__(self, processors: Any) -> None:
        self._make = processors.default_processor
        self.target: Any = None

    def _target(self) -> Any:
        if self.target is None:
            self.target = self._make()
        return self.target

    def on_trace_start(self, trace: Any) -> None:
        self._target().on_trace_start(trace)

    def on_trace_end(self, trace: Any) -> None:
        self._target().on_trace_end(trace)

    def on_span_start(self, span: Any) -> None:
        self._target().on_span_start(span)

    def on_span_end(self, span: Any) -> None:
        self._target().on_span_end(span)

    def shutdown(self) -> None:
        if self.target is not None:
            self.target.shutdown()

    def force_flush(self) -> None:
        if self.target is not None:
            self.target.force_flush()


class _Created:
    """The provider a sink set because the app had not traced yet, and how to undo it."""

    def __init__(self, setup: Any, provider_module: Any, processors: Any) -> None:
        self.setup = setup
        self.lock = setup._GLOBAL_TRACE_PROVIDER_LOCK  # AttributeError: another SDK layout
        self.stand_in = _LazyDefault(processors)
        self.provider = provider_module.DefaultTraceProvider()
        self.provider.set_processors([self.stand_in])

    def install(self) -> bool:
        with self.lock:
            if self.setup.GLOBAL_TRACE_PROVIDER is not None:
                return False  # set meanwhile: that one is joined
            self.setup.GLOBAL_TRACE_PROVIDER = self.provider
            return True

    def settle(self) -> None:
        """At stop: unused, the SDK's global is put back (``None``); used, the provider
        stays, holding the real default processor, as the SDK would have made it."""
        multi = self.provider._multi_processor
        with self.lock, multi._lock:
            untouched = multi._processors == (self.stand_in,) and self.stand_in.target is None
            if untouched and self.setup.GLOBAL_TRACE_PROVIDER is self.provider:
                self.setup.GLOBAL_TRACE_PROVIDER = None
                return
            real = self.stand_in._target()
            multi._processors = tuple(real if p is self.stand_in else p for p in multi._processors)
        if self.setup.GLOBAL_TRACE_PROVIDER is self.provider:
            self.setup.set_trace_provider(self.provider)  # registers the SDK's atexit shutdown


def _disabled(provider: Any) -> str:
    """Why the provider makes no span, read without changing it ("" when it traces)."""
    manual = getattr(provider, "_manual_disabled", None)
    if manual is not None:
        return "set_tracing_disabled(True)" if manual else ""
    env = getattr(provider, "_env_disabled", None)
    if env is None:  # read at the first trace: the variable as it is now
        value = os.environ.get("OPENAI_AGENTS_DISABLE_TRACING", "false").lower()
        env = value in ("true", "1")
    return "OPENAI_AGENTS_DISABLE_TRACING is set" if env else ""


class AgentsTracingSink:
    """Traces and spans openai-agents exported during the test (see the module docstring).

    ``inactive_reason``: ``""`` when everything exported was read, else why not."""

    name = "agents trace"
    inactive_reason: str = ""

    def __init__(self) -> None:
        self._started = False
        self._processor: _Processor | None = None
        self._provider: Any = None  # the provider our processor joined
        self._created: _Created | None = None
        self._imported = True
        self._disabled = ""
        self._read: list[_Read] = []
        self._reasons: list[str] = []

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        self._reasons, self._read = [], []
        self.inactive_reason = ""
        setup = sys.modules.get("agents.tracing.setup")
        provider_module = sys.modules.get("agents.tracing.provider")
        self._imported = setup is not None and provider_module is not None
        if setup is None or provider_module is None:
            return  # no trace can be made before the app imports the SDK (see stop)
        processors = sys.modules.get("agents.tracing.processors")
        created = None
        if getattr(setup, "GLOBAL_TRACE_PROVIDER", None) is None and processors is not None:
            try:
                created = _Created(setup, provider_module, processors)
            except AttributeError:  # another SDK layout: the SDK creates it, and it stays
                created = None
            if created is not None and not created.install():
                created = None
        provider = setup.get_trace_provider()
        multi = getattr(provider, "_multi_processor", None)
        if (
            not isinstance(multi, provider_module.SynchronousMultiTracingProcessor)
            or not hasattr(multi, "_processors")
            or not hasattr(multi, "_lock")
        ):
            self._reasons.append(
                f"the trace provider is a {type_name(provider)}, not the SDK's "
                "DefaultTraceProvider: its processors cannot be joined and left"
            )
            if created is not None:
                created.settle()
            self._finish_reasons()
            return
        processor = _Processor()
        with multi._lock:  # read and replaced under the SDK's own lock
            multi._processors = (*multi._processors, processor)
        self._processor, self._provider, self._created = processor, provider, created
        self._disabled = _disabled(provider)

    def stop(self) -> None:
        if not self._started:
            return
        self._started = False
        provider, processor = self._provider, self._processor
        self._provider = self._processor = None
        if processor is None:
            if not self._imported and "agents.tracing.setup" in sys.modules:
                self._reasons.append(
                    "openai-agents was first imported during the test, after the sink "
                    "started: its spans were not read (import it at module level or in "
                    "a conftest.py)"
                )
            self._finish_reasons()
            return
        multi = provider._multi_processor
        with multi._lock:
            current = multi._processors
            multi._processors = tuple(p for p in current if p is not processor)
        processor.unfinished()
        self._read = list(processor.read)
        if all(p is not processor for p in current):
            self._reasons.append(
                "the trace processors were replaced during the test (set_trace_processors): "
                "spans after that were not read"
            )
        setup = sys.modules.get("agents.tracing.setup")
        if setup is not None and getattr(setup, "GLOBAL_TRACE_PROVIDER", None) is not provider:
            self._reasons.append(
                "another trace provider was set during the test (set_trace_provider): "
                "its spans were not read"
            )
        if self._disabled and not processor.seen:
            self._reasons.append(
                f"tracing is disabled ({self._disabled}): no span was made, so none was "
                "read; with tracing on, production exports what this test did not see"
            )
        created, self._created = self._created, None
        if created is not None:
            created.settle()
        self._finish_reasons()

    def _finish_reasons(self) -> None:
        self.inactive_reason = "; ".join(self._reasons)

    def collect(self) -> Iterator[Captured]:
        processor = self._processor
        reads = list(processor.read) if processor is not None else self._read
        for n, read in enumerate(reads):
            group = f"{self.name}#{n}"
            for path, text, note in read.fields:
                yield Captured(self.name, SinkClass.OPERATOR, f"{read.label} {path}", text,
                               note="; ".join(x for x in (note, read.note) if x),
                               group=group)  # fmt: skip
            yield Captured(self.name, SinkClass.OPERATOR, f"{read.label} json", read.json,
                           note=read.note, group=group, fallback=True)  # fmt: skip
            for path, why in read.uninspected:
                yield Captured(self.name, SinkClass.OPERATOR, f"{read.label} {path}", "",
                               group=group, uninspected=why)  # fmt: skip


SINKS = [AgentsTracingSink]
