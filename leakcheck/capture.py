"""Sinks: everything a caller or an operator can see during one test, gathered as texts.

A sink starts before the code under test runs, stops after it (restoring every global it
touched, even when another sink failed), and yields ``Captured`` texts, each with the field
path a finding will name. Built-in sinks live here; integrations (sentry-sdk,
OpenTelemetry, prometheus_client, structlog, loguru) live in ``leakcheck.plugins`` and are
found through the ``leakcheck.plugins`` entry-point group (a module's ``SINKS``).
"""

from __future__ import annotations

import functools
import json
import logging
import sys
import threading
import traceback
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from .policy import SinkClass
from .serialize import exception_texts, leaves, safe_repr, to_jsonable

__all__ = [
    "Captured",
    "Sink",
    "ExposedSink",
    "ExceptionSink",
    "ProtectedRecordSink",
    "LoggingSink",
    "CrashHookSink",
    "WarningsSink",
    "TextSink",
    "builtin_sinks",
    "plugin_sink_factories",
]


@dataclass(frozen=True)
class Captured:
    """One captured text. ``group`` ties the texts of one object together, and a
    ``fallback`` text (the whole JSON, the repr) is reported only for secrets that no
    field-level text of the same group already showed."""

    sink: str
    sink_class: SinkClass
    path: str
    text: str | bytes
    note: str = ""
    group: str = ""
    fallback: bool = False

    def __repr__(self) -> str:  # the text is what leaked: never shown (-l, tracebacks)
        return f"Captured(sink={self.sink!r}, path={self.path!r}, chars={len(self.text)})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


@runtime_checkable
class Sink(Protocol):
    """A place output goes. Optionally a sink sets ``inactive_reason`` (a str) when it
    could see nothing (no sentry client, a provider it cannot hook): reports list it."""

    name: str

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def collect(self) -> Iterable[Captured]: ...


class _Passive:
    """A sink that patches nothing: data is handed to it."""

    def start(self) -> None:
        return None

    def stop(self) -> None:
        return None


class ExposedSink(_Passive):
    """Objects the test marks as caller-visible: serialized as JSON (per field and whole) and
    as repr; exceptions also as their traceback, args and text attributes."""

    name = "tool response"

    def __init__(self) -> None:
        self._objects: list[tuple[str, Any]] = []

    def add(self, obj: Any, label: str) -> None:
        self._objects.append((label, obj))

    def collect(self) -> Iterator[Captured]:
        for n, (label, obj) in enumerate(self._objects):
            group = f"{self.name}#{n}"
            yield from describe(obj, self.name, SinkClass.CALLER, label, group)


class ProtectedRecordSink(ExposedSink):
    """The gateway's own operator record of a call, read back by request id: an operator
    sink (sensitive context allowed, direct secrets not: it holds a credential's record id,
    never the credential)."""

    name = "protected record"

    def collect(self) -> Iterator[Captured]:
        for n, (label, obj) in enumerate(self._objects):
            yield from describe(obj, self.name, SinkClass.OPERATOR, label, f"{self.name}#{n}")


def describe(
    obj: Any, sink: str, sink_class: SinkClass, label: str, group: str
) -> Iterator[Captured]:
    """The texts of one caller-visible object."""
    prefix = f"{label} " if label != sink else ""
    if isinstance(obj, BaseException):
        for field, text in exception_texts(obj):
            yield Captured(
                sink, sink_class, f"{prefix}{type(obj).__name__}.{field}", text, group=group
            )
    jsonable = to_jsonable(obj)
    for path, text in leaves(jsonable):
        yield Captured(sink, sink_class, f"{prefix}{path}", text, group=group)
    if isinstance(obj, (bytes, bytearray, memoryview)):
        yield Captured(sink, sink_class, f"{prefix}bytes", bytes(obj), group=group)
    whole = json.dumps(jsonable, ensure_ascii=False)
    yield Captured(sink, sink_class, f"{prefix}json", whole, group=group, fallback=True)
    yield Captured(sink, sink_class, f"{prefix}repr", safe_repr(obj), group=group, fallback=True)


class ExceptionSink(_Passive):
    """Exceptions that reach the test (and so the agent, through a careless wrapper)."""

    name = "exception"

    def __init__(self) -> None:
        self._exceptions: list[BaseException] = []

    def add(self, exc: BaseException) -> None:
        if all(exc is not seen for seen in self._exceptions):
            self._exceptions.append(exc)

    def collect(self) -> Iterator[Captured]:
        for n, exc in enumerate(self._exceptions):
            group = f"{self.name}#{n}"
            for field, text in exception_texts(exc):
                yield Captured(
                    self.name, SinkClass.CALLER, f"{type(exc).__name__}.{field}", text, group=group
                )


class TextSink(_Passive):
    """Texts handed over by the harness: stdout/stderr from pytest's fd-level capture,
    warnings from pytest's warnings plugin."""

    def __init__(self, name: str, sink_class: SinkClass) -> None:
        self.name = name
        self.sink_class = sink_class
        self.inactive_reason = ""  # set when pytest does not capture this stream (-s)
        self._texts: list[tuple[str, str]] = []

    def add(self, path: str, text: str) -> None:
        self._texts.append((path, text))

    def collect(self) -> Iterator[Captured]:
        for path, text in self._texts:
            yield Captured(self.name, self.sink_class, path, text)


# Attributes every LogRecord has; anything else on a record came from ``extra``.
_RECORD_ATTRIBUTES = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {
    "message",
    "asctime",
    "taskName",
}


class LoggingSink:
    """Every record of every logger at every level: whatever the logger's level,
    ``propagate=False``, ``disabled`` or ``logging.disable``.

    ``Logger.isEnabledFor`` is patched to say yes so that records below level are made at
    all, and ``Logger.handle`` to capture each record that passes the logger's own filters
    (an app that drops or redacts a library's records there is honoured) and then pass on
    only those that the production configuration would have emitted, so the app's handlers
    see what they would have seen. Each capture notes whether it would have been emitted,
    judged when the record is made; its message, args and ``extra`` are rendered then too, as a
    handler would have rendered them (the app may mutate or redact its objects later).
    """

    name = "log record"

    def __init__(self) -> None:
        self._records: list[tuple[logging.LogRecord, str, list[tuple[str, str]]]] = []
        self._saved: tuple[Any, Any] | None = None

    def start(self) -> None:
        if self._saved is not None:
            return
        original_enabled = logging.Logger.isEnabledFor
        original_handle = logging.Logger.handle
        records = self._records
        self._saved = (original_enabled, original_handle)

        def is_enabled_for(logger: logging.Logger, level: int) -> bool:
            return True

        def handle(logger: logging.Logger, record: logging.LogRecord) -> Any:
            # The logger's own filters run first, as in ``Logger.handle``: a record the app
            # drops there reaches no handler at any level, and one it redacts there is seen
            # redacted. (3.12 filters may return a replacement record.)
            kept = logger.filter(record)
            if not kept:
                return None
            if isinstance(kept, logging.LogRecord):
                record = kept
            would_emit = not logger.disabled and original_enabled(logger, record.levelno)
            note = "" if would_emit else _not_emitted_note(logger, record)
            records.append((record, note, _record_texts(record)))
            if would_emit:
                logger.callHandlers(record)
            return None

        logging.Logger.isEnabledFor = is_enabled_for  # type: ignore[method-assign]
        logging.Logger.handle = handle  # type: ignore[method-assign]

    def stop(self) -> None:
        if self._saved is None:
            return
        logging.Logger.isEnabledFor, logging.Logger.handle = self._saved  # type: ignore[method-assign]
        self._saved = None
        for logger in [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]:
            if isinstance(logger, logging.Logger):
                logger._cache.clear()  # type: ignore[attr-defined]

    def collect(self) -> Iterator[Captured]:
        for n, (record, note, texts) in enumerate(self._records):
            where = f"{record.name} {record.levelname}"
            group = f"{self.name}#{n}"

            def item(
                field: str, text: str, *, group: str = group, where: str = where, note: str = note
            ) -> Captured:
                return Captured(
                    self.name, SinkClass.OPERATOR, f"{where} {field}", text, note=note, group=group
                )

            for field, text in texts:
                yield item(field, text)
            if record.exc_info and record.exc_info[1] is not None:
                for field, text in exception_texts(record.exc_info[1]):
                    yield item(f"exc_info.{field}", text)
            elif record.exc_text:
                yield item("exc_text", record.exc_text)
            if record.stack_info:
                yield item("stack_info", record.stack_info)


def _record_texts(record: logging.LogRecord) -> list[tuple[str, str]]:
    """``(field, text)`` of a record's message, args and ``extra``, rendered now."""
    texts = []
    # structlog's ProcessorFormatter hands logging the event dict *before* the formatter's
    # own processors (a redactor among them) run: the structlog sink captures what they
    # render, and this raw dict would be a false leak.
    prerendered = _is_structlog_event(record)
    if not prerendered:
        try:
            texts.append(("message", record.getMessage()))
        except Exception:  # noqa: BLE001 - a bad format string is the app's bug, not ours
            texts.append(("msg", safe_repr(record.msg)))
        if record.args:
            texts.append(("args", safe_repr(record.args)))
    for key, value in vars(record).items():
        if key not in _RECORD_ATTRIBUTES and not (prerendered and key in _STRUCTLOG_EXTRAS):
            texts.append((f"extra.{key}", safe_repr(value) + "\n" + _str(value)))
    return texts


_STRUCTLOG_EXTRAS = frozenset({"_logger", "_name", "_from_structlog"})


def _is_structlog_event(record: logging.LogRecord) -> bool:
    return (
        isinstance(record.msg, dict)
        and hasattr(record, "_logger")
        and "leakcheck.plugins.structlog_sink" in sys.modules
    )


def _str(value: object) -> str:
    try:
        return str(value)
    except Exception:  # noqa: BLE001
        return ""


def _not_emitted_note(logger: logging.Logger, record: logging.LogRecord) -> str:
    if logger.manager.disable >= record.levelno:
        return "not emitted in production: logging.disable() is in effect"
    if logger.disabled:
        return "not emitted in production: the logger is disabled"
    return (
        f"not emitted in production: {record.levelname} is below the logger's effective "
        f"level {logging.getLevelName(logger.getEffectiveLevel())}"
    )


class CrashHookSink:
    """``sys.excepthook``, ``threading.excepthook`` and ``sys.unraisablehook``: wrapped so
    that what they would print is captured, then passed to the previous hook."""

    name = "crash hook"

    def __init__(self) -> None:
        self._texts: list[tuple[str, str]] = []
        self._saved: tuple[Any, Any, Any] | None = None

    def start(self) -> None:
        if self._saved is not None:
            return
        saved = (sys.excepthook, threading.excepthook, sys.unraisablehook)
        self._saved = saved
        texts = self._texts

        def excepthook(kind: Any, value: Any, tb: Any) -> None:
            texts.append(("sys.excepthook", "".join(traceback.format_exception(kind, value, tb))))
            saved[0](kind, value, tb)

        def thread_hook(args: Any) -> None:
            texts.append(
                (
                    "threading.excepthook",
                    "".join(
                        traceback.format_exception(
                            args.exc_type, args.exc_value, args.exc_traceback
                        )
                    ),
                )
            )
            saved[1](args)

        def unraisable_hook(args: Any) -> None:
            text = "".join(
                traceback.format_exception(args.exc_type, args.exc_value, args.exc_traceback)
            )
            texts.append(("sys.unraisablehook", f"{args.err_msg or ''}\n{text}"))
            saved[2](args)

        sys.excepthook, threading.excepthook, sys.unraisablehook = (
            excepthook,
            thread_hook,
            unraisable_hook,
        )

    def stop(self) -> None:
        if self._saved is None:
            return
        sys.excepthook, threading.excepthook, sys.unraisablehook = self._saved
        self._saved = None

    def collect(self) -> Iterator[Captured]:
        for path, text in self._texts:
            yield Captured(self.name, SinkClass.OPERATOR, path, text)


class WarningsSink:
    """Warnings raised during the test, recorded under the filters in force (an ``error``
    filter still raises) and handed on, masked, to whoever recorded before us (pytest's
    warnings summary) when the sink stops."""

    name = "warning"

    def __init__(self, mask: Callable[[str], str] = lambda text: text) -> None:
        self._mask = mask
        self._context: Any = None
        self._log: list[warnings.WarningMessage] = []

    def start(self) -> None:
        if self._context is not None:
            return
        self._context = warnings.catch_warnings(record=True)
        self._log = self._context.__enter__()

    def stop(self) -> None:
        if self._context is None:
            return
        context, self._context = self._context, None
        context.__exit__(None, None, None)
        for w in self._log:
            text = str(w.message)
            masked = self._mask(text)
            message: Warning | str = w.message
            if masked != text:
                try:
                    message = w.category(masked)
                except Exception:  # noqa: BLE001 - a category with a custom signature
                    message = UserWarning(masked)
            warnings.showwarning(message, w.category, w.filename, w.lineno, w.file, w.line)

    def collect(self) -> Iterator[Captured]:
        for w in self._log:
            yield Captured(
                self.name,
                SinkClass.OPERATOR,
                f"{w.category.__name__} {w.filename}:{w.lineno}",
                str(w.message),
            )


SinkFactory = Callable[[], Sink]


def builtin_sinks() -> list[Sink]:
    return [LoggingSink(), CrashHookSink()]


@functools.lru_cache(maxsize=1)
def plugin_sink_factories() -> dict[str, SinkFactory]:
    """``{sink name: factory}`` from installed plugins whose library is importable."""
    from .extensions import load_plugins

    factories: dict[str, SinkFactory] = {}
    for module in load_plugins():
        for factory in getattr(module, "SINKS", ()):
            factories[getattr(factory, "name", factory.__name__)] = factory
    return factories
