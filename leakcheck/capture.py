"""Sinks: everything a caller or an operator can see during one test, gathered as texts.

A sink starts before the code under test runs, stops after it (restoring every global it
touched, even when another sink failed), and yields ``Captured`` texts, each with the field
path a finding will name. Built-in sinks live here; integrations (sentry-sdk,
OpenTelemetry, prometheus_client, structlog, loguru) live in ``leakcheck.plugins`` and are
found through the ``leakcheck.plugins`` entry-point group (a module's ``SINKS``).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import logging
import re
import sys
import threading
import traceback
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ._wrappers import EndedWrappers
from .policy import Policy, SinkClass, level_name
from .serialize import (
    BUDGET_CHARS,
    FIELD_BUDGET,
    INLINE_MAX,
    ReprWriter,
    Serialized,
    bytes_of,
    exception_message,
    exception_texts,
    repr_and_str,
    safe_repr,
    safe_str,
    text_of,
    type_name,
)

__all__ = [
    "Captured",
    "LogOrigin",
    "resolve_latent",
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
class LogOrigin:
    """The logger and level of the log record a ``Captured`` text belongs to: below the
    production level declared for that logger (``Policy.log_levels``) the text is latent."""

    logger: str
    levelno: int
    levelname: str


@dataclass(frozen=True, init=False)
class Captured:
    """One captured text. ``group`` ties the texts of one object together, and a
    ``fallback`` text (the whole JSON, the repr) is reported only for secrets that no
    field-level text of the same group already showed. ``uninspected`` says why this part
    of the sink could not be inspected (a generator, an object whose repr shows nothing of
    it, what lay beyond the budget): reports list it as "could not inspect". A text of
    ``sink_class`` ``LATENT`` is held by the sink without being emitted (its ``note`` says
    where it sits); ``origin`` names the log record a text comes from.

    Whatever a sink hands over, the fields hold plain ``str`` (``text``: ``str`` or
    ``bytes``), read through the base types: a ``str`` subclass whose ``encode`` or
    ``__len__`` raises cannot break the verdict."""

    sink: str
    sink_class: SinkClass
    path: str
    text: str | bytes
    note: str = ""
    group: str = ""
    fallback: bool = False
    uninspected: str = ""
    origin: LogOrigin | None = None

    def __init__(
        self,
        sink: str,
        sink_class: SinkClass,
        path: str,
        text: str | bytes,
        note: str = "",
        group: str = "",
        fallback: bool = False,
        uninspected: str = "",
        origin: LogOrigin | None = None,
    ) -> None:
        # The fields written straight into the instance's dict, in their order: a test
        # makes dozens of these, and a frozen dataclass's own __init__ sets each field
        # through object.__setattr__ (2.4 us an instance; issue 13). A field declared above
        # is taken here too (tests/test_serialize.py holds the two lists equal).
        fields = self.__dict__
        fields["sink"] = sink
        fields["sink_class"] = sink_class
        fields["path"] = path
        fields["text"] = text
        fields["note"] = note
        fields["group"] = group
        fields["fallback"] = fallback
        fields["uninspected"] = uninspected
        fields["origin"] = origin
        self.__post_init__()

    def __post_init__(self) -> None:
        if (
            type(self.path) is str
            and (type(self.text) is str or type(self.text) is bytes)
            and type(self.sink) is str
            and type(self.note) is str
            and type(self.group) is str
            and type(self.uninspected) is str
            and (self.origin is None or type(self.origin) is LogOrigin)
        ):
            return  # the common case, checked at once
        if self.origin is not None and type(self.origin) is not LogOrigin:
            object.__setattr__(self, "origin", None)
        for name in ("sink", "path", "note", "group", "uninspected"):
            value = getattr(self, name)
            if type(value) is not str:
                object.__setattr__(self, name, safe_str(value))
        text = self.text
        if type(text) is not str and type(text) is not bytes:
            if issubclass(type(text), (bytes, bytearray, memoryview)):
                try:
                    text = bytes_of(text)  # type: ignore[arg-type]  # bytes-like (issubclass)
                except Exception:  # noqa: BLE001 - a released memoryview
                    text = safe_repr(text)
            else:
                text = safe_str(text)
            object.__setattr__(self, "text", text)

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
        self._objects.append((safe_str(label), obj))

    @property
    def exposed(self) -> int:
        """How many objects were exposed."""
        return len(self._objects)

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
    """The texts of one caller-visible object: each field with its JSON path, the whole
    JSON and the repr (fallbacks), an exception's traceback, args and text attributes.

    Each object of the graph is serialized once: a shared sub-object's fields are named at
    its first path, with a note saying at how many other paths they also are. Within a
    budget (``serialize.BUDGET_CHARS`` of JSON, and of repr, ``FIELD_BUDGET`` fields; a
    string of ``INLINE_MAX`` characters or more is searched as its own field, once, never
    copied into the JSON or the repr). What could not be inspected (a generator, an object
    whose repr names only its type, what lay beyond the budget) is yielded as a
    ``Captured`` with ``uninspected`` set; so is an object leakcheck failed to serialize."""
    prefix = f"{label} " if label != sink else ""
    try:
        yield from _describe(obj, sink, sink_class, prefix, group)
    except Exception as exc:  # noqa: BLE001 - a fault of ours must not hide the object
        yield Captured(
            sink,
            sink_class,
            f"{prefix}$",
            "",
            group=group,
            uninspected=f"{type_name(obj)}: could not serialize it (raised {type_name(exc)})",
        )


def _describe(
    obj: Any, sink: str, sink_class: SinkClass, prefix: str, group: str
) -> Iterator[Captured]:
    kind = type(obj)
    if issubclass(kind, BaseException):
        yield from caller_exception_texts(obj, sink, sink_class, prefix, group)
    serialized = Serialized(obj, long_texts=True, budget=BUDGET_CHARS)
    fields = 0
    for path, text, note in serialized.fields():
        if fields == FIELD_BUDGET:
            break
        fields += 1
        yield Captured(sink, sink_class, f"{prefix}{path}", text, note=note, group=group)
    if issubclass(kind, (bytes, bytearray, memoryview)):
        try:
            data = bytes_of(obj)
        except ValueError:  # a released memoryview: nothing left to read
            data = None
        if data is not None and len(data) < INLINE_MAX:  # a long one was its own field
            yield Captured(sink, sink_class, f"{prefix}bytes", data, group=group)
    beyond = (
        f"fields after the first {FIELD_BUDGET:,} are searched here only"
        if fields == FIELD_BUDGET
        else ""
    )
    yield Captured(
        sink, sink_class, f"{prefix}json", serialized.json(), note=beyond, group=group,
        fallback=True,
    )  # fmt: skip
    writer = ReprWriter(budget=BUDGET_CHARS, inline_max=INLINE_MAX)
    yield Captured(sink, sink_class, f"{prefix}repr", writer.text(obj), group=group, fallback=True)
    for text in writer.large:  # an object's own long repr: searched apart, not copied
        yield Captured(sink, sink_class, f"{prefix}repr", text, group=group, fallback=True)
    uninspected = serialized.not_inspected
    if writer.cut:
        uninspected.append(
            ("repr", "over budget", f"not inspected: the repr beyond {BUDGET_CHARS:,} characters")
        )
    for path, what, why in uninspected:
        yield Captured(
            sink, sink_class, f"{prefix}{path}", "", group=group, uninspected=f"{what}: {why}"
        )


class ExceptionSink(_Passive):
    """Exceptions that reach the test (and so the agent, through a careless wrapper)."""

    name = "exception"

    def __init__(self) -> None:
        self._exceptions: list[BaseException] = []

    def add(self, exc: BaseException) -> None:
        if all(exc is not seen for seen in self._exceptions):
            self._exceptions.append(exc)

    @property
    def caught(self) -> int:
        """How many exceptions reached the test."""
        return len(self._exceptions)

    def collect(self) -> Iterator[Captured]:
        for n, exc in enumerate(self._exceptions):
            yield from caller_exception_texts(
                exc, self.name, SinkClass.CALLER, "", f"{self.name}#{n}"
            )


def caller_exception_texts(
    exc: BaseException, sink: str, sink_class: SinkClass, prefix: str, group: str
) -> Iterator[Captured]:
    """An exception handed to a caller, as the logging rule judges a logged one: what a
    caller prints or serializes is its traceback (each chained exception's type, message,
    frames and notes) and its ``args`` (its ``repr``, ``{exc!r}``, a serializer); its
    attributes (``.request``, ``.response``, ``__context__.url``) only sit on the object:
    latent, fallbacks of the group (reported for a secret no emitted text of it shows),
    failing only under ``strict_latent``. So do the ``args`` and notes of the exceptions
    chained to it: of those, a caller sees what the traceback prints, and nothing at all
    of a context that ``raise ... from None`` suppressed (the careful wrapper's way: its
    ``__context__.args`` failed the test as if the caller had been handed them)."""
    kind = type_name(exc)
    for field, text in exception_texts(exc):
        path = f"{prefix}{kind}.{field}"
        if field == "traceback" or field == "args" or field.startswith("__notes__["):
            yield Captured(sink, sink_class, path, text, group=group)
        else:
            note = (
                f"latent: {field} of the {kind} handed to the caller, which its text does not "
                "show (the traceback shows each exception's type, message and frames)"
            )
            yield Captured(
                sink, SinkClass.LATENT, path, text, note=note, group=group, fallback=True
            )


class TextSink(_Passive):
    """Texts handed over by the harness: stdout/stderr from pytest's fd-level capture,
    warnings from pytest's warnings plugin."""

    def __init__(self, name: str, sink_class: SinkClass) -> None:
        self.name = name
        self.sink_class = sink_class
        self.inactive_reason = ""  # set when pytest does not capture this stream (-s)
        self._texts: list[tuple[str, str]] = []
        self._uninspected: dict[str, str] = {}

    def add(self, path: str, text: str) -> None:
        self._texts.append((path, text))

    def add_uninspected(self, path: str, what: str) -> None:
        """Say that ``what`` went past this sink at ``path`` (listed, never silently clean:
        ``capsys.disabled()``'s writes to file descriptors 1 and 2)."""
        self._uninspected[path] = what

    @property
    def texts(self) -> list[tuple[str, str]]:
        """The texts handed over, with their paths."""
        return self._texts

    def collect(self) -> Iterator[Captured]:
        for path, text in self._texts:
            yield Captured(self.name, self.sink_class, path, text)
        for path, what in self._uninspected.items():
            yield Captured(self.name, self.sink_class, path, "", uninspected=what)


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
    Sinks running at once (a check inside the fixture's, checks in two threads) share one
    patch (``_LoggingPatch``): each of them captures every record, and "would emit" is
    judged by the methods found before any sink patched them.

    **Emitted or latent.** A record is judged as the app's handlers render it, the
    handlers on its way up the logger tree when it is made (pytest's own capture handlers
    and ``NullHandler`` are not the app's):

    * a handler whose formatter is a plain ``logging.Formatter`` renders the message, the
      traceback and ``stack_info`` (and ``args`` when its format names them): these fields
      are emitted. With no handler of the app at all, the record is judged as a plain
      formatter renders it: that is what Python's ``logging.lastResort`` prints (WARNING
      and up, on stderr) and what pytest shows of the record on a failure.
    * a handler with its own formatter (a JSON formatter, a redacting one) or its own
      ``format()`` is run on a copy of the record, then and there: what it renders is
      emitted (``<logger> <LEVEL> formatted by <Formatter>``). When only such handlers
      exist, the raw message and ``stack_info`` are latent.
    * always emitted, whatever the formatter, as a JSON formatter or sentry-sdk's logging
      integration serializes them: every ``extra`` field, its name and its value, and the
      logged exception's type, message and frames (``exc_info.traceback``, chained
      exceptions included).
    * latent: the logged exception's ``args`` and attributes (``.request``, ``.doc``,
      ``__context__.url``...) and the ``repr`` of the record's ``args``, which no handler
      renders. Reported, with where they sit, and failing only under ``strict_latent``.

    A latent text is a fallback of its record: it is reported only for a secret that no
    emitted text of the same record shows. Handler levels and filters are not applied:
    levels are judged by the declared production levels (``Policy.log_levels``), and a
    handler's filter protects that handler only.

    **Cost, and why it stays.** Records below a logger's level are made, captured and
    searched by default (the strict default: DEBUG-level token logging ships). On the
    example MCP suite (issue 13; ``bench/plugin_overhead.py --suite mcp --shares``) that is
    15 records a test below their loggers' levels (fastmcp, mcp, asyncio DEBUG, httpx2
    INFO), 1 KB of text. Measured interleaved, "levels as set" saved 2.7 to 4.9 ms of a
    test's 13 to 16 ms of plugin cost before the verdict triaged long texts apart, and 5.2
    to 5.8 ms of 12 to 15 after (the largest share left; 58 tests a variant, load about 2).
    Making and capturing them is the small part (``_record_texts`` about 0.3 ms a test,
    ``handle`` and ``collect`` some 26 microseconds a record); the rest is what their
    text brings into the verdict: the base URL's hostname in two of them, an allowed hit
    that makes the scanner build that secret's put-off needles and rebuild its engine
    (0.36 ms), search three texts again on their own for their findings and excerpts (0.7
    to 1 ms), and the JSON record carry and mask two allowed findings. A declared
    production level (``log_levels``) makes such records latent, still searched: the cost
    stays, the verdict changes. Nothing is cached per logger: at that cost, a handler
    added or a level changed between two records is seen at the second.
    """

    name = "log record"

    def __init__(self) -> None:
        self._records: list[tuple[logging.LogRecord, str, list[_Text], bool]] = []

    def start(self) -> None:
        _LOG_PATCH.add(self)

    def stop(self) -> None:
        _LOG_PATCH.remove(self)

    def collect(self) -> Iterator[Captured]:
        return self.collect_since(0)

    def records_so_far(self) -> int:
        """How many records were captured so far (``collect_since`` takes it)."""
        return len(self._records)

    def collect_since(self, start: int) -> Iterator[Captured]:
        """``collect`` of the records captured from the ``start``-th on (a test's teardown:
        those after its verdict)."""
        for n, (record, note, texts, plain) in enumerate(self._records[start:], start):
            name, levelname = safe_str(record.name), safe_str(record.levelname)
            where = f"{name} {levelname}"
            group = f"{self.name}#{n}"
            levelno = record.levelno if type(record.levelno) is int else 0
            origin = _log_origin(name, levelno, levelname)
            every = list(texts)
            exc_info = record.exc_info
            if isinstance(exc_info, tuple) and len(exc_info) > 1:
                exc = exc_info[1]
            else:
                exc = None
            if issubclass(type(exc), BaseException):
                kind = type_name(exc)
                for field, text in exception_texts(exc):  # type: ignore[arg-type]  # not None
                    if field == "traceback":
                        every.append(_Text(f"exc_info.{field}", text))
                    else:
                        every.append(_Text(f"exc_info.{field}", text, _exception_note(field, kind)))
            elif record.exc_text:
                every.append(_Text("exc_text", record.exc_text))
            if record.stack_info:
                every.append(_Text("stack_info", record.stack_info, "" if plain else _RAW_NOTE))
            # emitted texts first, then what the app's own formatters rendered, then the
            # latent ones: a fallback is reported only for a secret not shown before it
            every.sort(key=_Text.rank)
            for t in every:
                yield Captured(
                    self.name,
                    SinkClass.LATENT if t.latent else SinkClass.OPERATOR,
                    f"{where} {t.field}",
                    t.text,
                    f"{t.latent}; {note}" if t.latent and note else t.latent or note,
                    group,
                    bool(t.latent) or t.rendered,
                    "",
                    origin,
                )


class _LoggingPatch:
    """The one patch of ``Logger.isEnabledFor`` and ``Logger.handle``, shared by every
    running ``LoggingSink``: each record is captured once and handed to all of them.

    One patch, not one a sink: a sink started inside another's check (the fixture's check
    and a ``LeakCheck`` of the test's own, an MCP audit) found the outer sink's patched
    methods and took them for the originals: its "would emit" asked the outer
    ``isEnabledFor``, which says yes to every level, so the app's handlers got records below
    their logger's level; and its ``handle`` called the handlers itself, so the outer sink
    never saw a record made while the inner one ran. Here "would emit" is always judged by
    the methods found before any sink patched them.

    The originals are put back when the last sink stops, if the patched methods are still
    in place. If the app replaced one meanwhile (its replacement may call ours), ours
    stays under it and, with no sink running, is a plain pass-through to the originals.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # a tuple, replaced whole: read without the lock on every record
        self._sinks: tuple[LoggingSink, ...] = ()
        # the methods found when the patch went in (the stdlib's, unless the app's)
        self._found: tuple[Any, Any] = (logging.Logger.isEnabledFor, logging.Logger.handle)

    def add(self, sink: LoggingSink) -> None:
        with self._lock:
            if sink in self._sinks:
                return
            if not self._sinks:
                self._install()
            self._sinks = (*self._sinks, sink)

    def remove(self, sink: LoggingSink) -> None:
        with self._lock:
            if sink not in self._sinks:
                return
            self._sinks = tuple(s for s in self._sinks if s is not sink)
            if self._sinks:
                return
            enabled, handle = self._found
            if logging.Logger.isEnabledFor is _patched_is_enabled_for:
                logging.Logger.isEnabledFor = enabled  # type: ignore[method-assign]  # the original
            if logging.Logger.handle is _patched_handle:
                logging.Logger.handle = handle  # type: ignore[method-assign]  # the original
        # isEnabledFor's private cache, filled by the original while the patch was in
        for logger in [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]:
            if isinstance(logger, logging.Logger):
                logger._cache.clear()  # type: ignore[attr-defined]  # a private dict

    def _install(self) -> None:
        # an own method left in place under the app's replacement is not an original
        enabled, handle = logging.Logger.isEnabledFor, logging.Logger.handle
        found_enabled, found_handle = self._found
        self._found = (
            found_enabled if enabled is _patched_is_enabled_for else enabled,
            found_handle if handle is _patched_handle else handle,
        )
        logging.Logger.isEnabledFor = _patched_is_enabled_for  # type: ignore[method-assign]  # until the last stop
        logging.Logger.handle = _patched_handle  # type: ignore[method-assign]  # until the last stop

    def sinks(self) -> tuple[LoggingSink, ...]:
        return self._sinks

    def found(self) -> tuple[Any, Any]:
        return self._found


def _patched_is_enabled_for(self: logging.Logger, level: int) -> bool:
    # says yes so that records below level are made at all, while a sink runs
    if _LOG_PATCH.sinks():
        return True
    return bool(_LOG_PATCH.found()[0](self, level))


def _patched_handle(self: logging.Logger, record: logging.LogRecord) -> Any:
    sinks = _LOG_PATCH.sinks()
    original_enabled, original_handle = _LOG_PATCH.found()
    if not sinks:
        return original_handle(self, record)
    # The logger's own filters run first, as in ``Logger.handle``: a record the app drops
    # there reaches no handler at any level, and one it redacts there is seen redacted.
    # (3.12 filters may return a replacement record.)
    kept = self.filter(record)
    if not kept:
        return None
    if isinstance(kept, logging.LogRecord):
        record = kept
    would_emit = not self.disabled and original_enabled(self, record.levelno)
    try:
        note = "" if would_emit else _not_emitted_note(self, record)
    except Exception:  # noqa: BLE001 - a record with hostile level attributes
        note = "not emitted in production"
    texts, plain = _record_texts(record, self)
    for sink in sinks:
        sink._records.append((record, note, texts, plain))
    if would_emit:
        self.callHandlers(record)
    return None


_LOG_PATCH = _LoggingPatch()


#: The origins made so far, by their fields: a test's records come from a few loggers at a
#: few levels, and a frozen dataclass costs a microsecond to make (bounded: cleared when full).
_ORIGINS: dict[tuple[str, int, str], LogOrigin] = {}
_ORIGINS_KEPT = 1024


def _log_origin(logger: str, levelno: int, levelname: str) -> LogOrigin:
    key = (logger, levelno, levelname)
    origin = _ORIGINS.get(key)
    if origin is None:
        if len(_ORIGINS) >= _ORIGINS_KEPT:
            _ORIGINS.clear()
        origin = _ORIGINS[key] = LogOrigin(logger, levelno, levelname)
    return origin


@dataclass(frozen=True)
class _Text:
    """One text of a log record: ``latent`` says where it sits when no handler emits it;
    ``rendered`` marks what one of the app's own formatters produced."""

    field: str
    text: str | bytes
    latent: str = ""
    rendered: bool = False

    def rank(self) -> int:
        return 2 if self.latent else 1 if self.rendered else 0


_ARGS_NOTE = (
    "latent: the repr of the record's args, which no handler renders (the message shows "
    "each argument as its format spells it)"
)
_RAW_NOTE = (
    "latent: as the record holds it; the app's handlers render the record with their own "
    "formatters, judged as they render it"
)


def _exception_note(field: str, kind: str) -> str:
    return (
        f"latent: {field} of the logged {kind}, which no handler renders (the traceback shows "
        "each exception's type, message and frames)"
    )


#: A format that names the record's ``args`` (``%(args)s``, ``{args}``, ``$args``).
_ARGS_FIELD = re.compile(r"%\(args\)|\{args[}!:.\[]|\$\{?args\b")
#: A format that writes the record's message (``%(message)s``, ``{message}``, ``$message``).
_MESSAGE_FIELD = re.compile(r"%\(message\)|\{message[}!:]|\$\{?message\b")


def _lets_through(handler: logging.Handler, record: logging.LogRecord) -> bool:
    """Whether ``handler``'s own filters pass ``record`` (run on a copy; a filter that
    raises: yes). A filter protects its own handler."""
    try:
        return bool(handler.filter(copy.copy(record)))
    except Exception:  # noqa: BLE001 - the app's filter: judged as passing
        return True


#: The fields a format names (``%(name)s``, ``{threadName}``, ``$module``).
_FORMAT_FIELD = re.compile(r"%\((\w+)\)|\{(\w+)|\$\{?(\w+)")
#: The record's standard text fields that a plain formatter shows as they are, besides its
#: message: the logger's name, the thread's, the process's and task's, where it was logged.
#: An app names a logger or a thread after a session (``refresh-<token>``), and its
#: ``%(name)s`` or ``%(threadName)s`` writes it (found by a hunting helper: never judged).
_SHOWN_FIELDS = frozenset(
    {"name", "threadName", "processName", "taskName", "funcName", "module", "filename",
     "pathname"}
)  # fmt: skip


def _app_handlers(logger: logging.Logger) -> list[logging.Handler]:
    """The handlers a record of ``logger`` reaches on its way up (as ``callHandlers``
    walks), pytest's own capture handlers and ``NullHandler`` left out: they are not what
    the app emits."""
    found: list[logging.Handler] = []
    current: logging.Logger | None = logger
    while current is not None:
        for handler in current.handlers:
            if type(handler) is logging.NullHandler:
                continue
            if (type(handler).__module__ or "").partition(".")[0] == "_pytest":
                continue
            if all(handler is not seen for seen in found):
                found.append(handler)
        if not current.propagate:
            break
        current = current.parent
    return found


def _plain(handler: logging.Handler) -> logging.Formatter | None:
    """The handler's formatter when what it renders is the record's standard fields: a
    plain ``logging.Formatter`` through ``Handler.format``. structlog's
    ``ProcessorFormatter`` counts as plain here: the structlog sink judges its output."""
    if type(handler).format is not logging.Handler.format:
        return None
    formatter = handler.formatter or logging._defaultFormatter  # type: ignore[attr-defined]  # what Handler.format uses
    if type(formatter) is logging.Formatter:
        return formatter
    if (type(formatter).__module__ or "").startswith("structlog"):
        return formatter
    return None


def _renderer_name(handler: logging.Handler) -> str:
    if type(handler).format is not logging.Handler.format:
        return f"{type_name(handler)}.format"
    return type_name(handler.formatter)


#: ``rich.traceback.Traceback.from_exception``'s options, by the ``RichHandler``
#: attribute that holds each (those a rich version has)
_RICH_TRACEBACK_OPTIONS = {
    "width": "tracebacks_width",
    "code_width": "tracebacks_code_width",
    "extra_lines": "tracebacks_extra_lines",
    "theme": "tracebacks_theme",
    "word_wrap": "tracebacks_word_wrap",
    "show_locals": "tracebacks_show_locals",
    "locals_max_length": "locals_max_length",
    "locals_max_string": "locals_max_string",
    "suppress": "tracebacks_suppress",
    "max_frames": "tracebacks_max_frames",
}


def _rich_traceback(handler: logging.Handler, record: logging.LogRecord) -> str | None:
    """The traceback a rich ``RichHandler`` writes for ``record``'s exception when it
    shows each frame's locals (``rich_tracebacks`` and ``tracebacks_show_locals``), as its
    console lays it out: what it adds to the record's fields (a local holding a token,
    written to the app's log), while its ``format`` is a plain formatter's. None for any
    other handler or record, or when rich cannot render it here."""
    if not (  # (locals first: off in nearly every handler that has the attribute)
        getattr(handler, "tracebacks_show_locals", False) is True
        and getattr(handler, "rich_tracebacks", False) is True
        and (type(handler).__module__ or "").partition(".")[0] == "rich"
    ):
        return None
    exc_info = record.exc_info
    if not isinstance(exc_info, tuple) or len(exc_info) != 3 or exc_info[1] is None:
        return None
    try:
        import io

        from rich.console import Console
        from rich.traceback import Traceback

        options = {
            option: getattr(handler, attribute)
            for option, attribute in _RICH_TRACEBACK_OPTIONS.items()
            if hasattr(handler, attribute)
        }
        shown = Traceback.from_exception(*exc_info, **options)
        width = getattr(getattr(handler, "console", None), "width", 80)
        buffer = io.StringIO()
        Console(file=buffer, width=width, color_system=None, force_terminal=False).print(shown)
        return buffer.getvalue()
    except Exception:  # noqa: BLE001 - a rich we do not fit: its record is judged as plain
        return None


@dataclass
class _Rendering:
    """How the app's handlers render a record (``_rendered``)."""

    #: some handler (or, with none of the app's, the default) renders the standard fields
    #: as they are
    plain: bool = False
    #: some plain formatter names the record's ``args``
    args: bool = False
    #: some plain formatter is the standard library's own, not structlog's
    #: ``ProcessorFormatter`` (it writes a structlog event's dict as it is)
    stdlib: bool = False
    #: the standard text fields (``_SHOWN_FIELDS``) a plain formatter names
    fields: set[str] = dataclasses.field(default_factory=set)
    #: what each handler with a formatter of its own produced
    texts: list[_Text] = dataclasses.field(default_factory=list)


#: A record no handler of the app's renders, as ``_rendered`` says it (shared: read only)
_NO_HANDLERS = _Rendering(plain=True, stdlib=True)


def _rendered(record: logging.LogRecord, logger: logging.Logger) -> _Rendering:
    """How the app's handlers render ``record``, now (``_Rendering``): each handler with a
    formatter of its own is run on a copy of the record. A formatter that raises cannot be
    judged by its output: the record is then judged as a plain formatter renders it."""
    handlers = _app_handlers(logger)
    if not handlers:
        return _NO_HANDLERS
    found = _Rendering()
    rendered = found.texts
    seen: list[object] = []
    for handler in handlers:
        formatter = _plain(handler)
        if formatter is not None:
            found.plain = True
            style = getattr(formatter, "_style", None)
            fmt = safe_str(getattr(style, "_fmt", ""))
            found.args = found.args or bool(_ARGS_FIELD.search(fmt))
            if type(formatter) is logging.Formatter:
                # (a structlog event's dict is what its message writes: judged where this
                # handler writes the message and its own filters let the record through)
                found.stdlib = found.stdlib or (
                    bool(_MESSAGE_FIELD.search(fmt)) and _lets_through(handler, record)
                )
                found.fields.update(
                    name for match in _FORMAT_FIELD.finditer(fmt) for name in match.groups()
                    if name in _SHOWN_FIELDS
                )  # fmt: skip
            shown = _rich_traceback(handler, record)
            if shown is not None:
                label = f"rendered by {type_name(handler)} (tracebacks_show_locals)"
                rendered.append(_Text(label, shown, rendered=True))
            continue
        key = handler.formatter if type(handler).format is logging.Handler.format else handler
        if any(key is other for other in seen):
            continue
        seen.append(key)
        name = _renderer_name(handler)
        try:
            text = handler.format(copy.copy(record))
        except Exception:  # noqa: BLE001 - the app's formatter; its bug is not a verdict
            found.plain = found.stdlib = True
            continue
        if type(text) is not str and type(text) is not bytes:
            text = text_of(text) if isinstance(text, str) else safe_str(text)
        rendered.append(_Text(f"formatted by {name}", text, rendered=True))
    return found


def _record_texts(record: logging.LogRecord, logger: logging.Logger) -> tuple[list[_Text], bool]:
    """The texts of a record's message, args and ``extra``, and what the app's own
    formatters render of it, now; and whether a plain formatter renders it. Never raises
    (it runs inside the app's logging call): a message whose ``__str__`` raises is captured
    by its repr, a ``str`` subclass by its characters too, whatever it says."""
    texts: list[_Text] = []
    plain = True
    try:
        try:
            rendering = _rendered(record, logger)
        except Exception:  # noqa: BLE001 - hostile handlers: judge the fields as they are
            rendering = _Rendering(plain=True, args=True, stdlib=True, fields=set(_SHOWN_FIELDS))
        plain, args_shown = rendering.plain, rendering.args
        raw = "" if plain else _RAW_NOTE
        # structlog's ProcessorFormatter hands logging the event dict *before* the
        # formatter's own processors (a redactor among them) run: the structlog sink
        # captures what they render, and this raw dict would be a false leak; unless a
        # plain logging.Formatter renders the record too, which writes that dict as it is
        # (a second handler's file held the token: found by a hunting helper)
        prerendered = _is_structlog_event(record) and not rendering.stdlib
        for name in sorted(rendering.fields):
            value = getattr(record, name, None)
            if isinstance(value, str) and value:
                texts.append(_Text(name, value))
        if not prerendered:
            try:
                texts.append(_Text("message", record.getMessage(), raw))
            except Exception:  # noqa: BLE001 - a bad format string is the app's bug, not ours
                # every handler fails to format it, and Handler.handleError prints the
                # record's msg and args on stderr ("Message: ...", "Arguments: ...")
                texts.append(_Text("msg", safe_repr(record.msg)))
                args_shown = True
            if type(record.msg) is not str and isinstance(record.msg, str):
                # its own __str__ may say anything; a JSON formatter writes its characters
                texts.append(_Text("msg", text_of(record.msg), raw))
            if record.args:
                texts.append(
                    _Text("args", safe_repr(record.args), "" if args_shown else _ARGS_NOTE)
                )
        # (a structlog event's too: a formatter of the app's own writes what it renders)
        texts.extend(rendering.texts)
        fields = vars(record)
        if not fields.keys() <= _RECORD_ATTRIBUTES:  # (in C: nearly every record has none)
            for key, value in list(fields.items()):
                if key not in _RECORD_ATTRIBUTES and not (prerendered and key in _STRUCTLOG_EXTRAS):
                    name = safe_str(key)
                    texts.append(_Text(f"extra.{name}", repr_and_str(value)))
                    # its name too: a JSON formatter and sentry's integration write it (an
                    # ``extra`` keyed by the token passed: found by a hunting helper)
                    texts.append(_Text(f"extra.{name}<key>", name))
    except Exception as exc:  # noqa: BLE001 - never break the app's logging call
        texts.append(
            _Text("record", f"<{type_name(record)}: could not be read ({type_name(exc)})>")
        )
    return texts, plain


_STRUCTLOG_EXTRAS = frozenset({"_logger", "_name", "_from_structlog"})


def _is_structlog_event(record: logging.LogRecord) -> bool:
    return (
        isinstance(record.msg, dict)
        and hasattr(record, "_logger")
        and "leakcheck.plugins.structlog_sink" in sys.modules
    )


def _not_emitted_note(logger: logging.Logger, record: logging.LogRecord) -> str:
    if logger.manager.disable >= record.levelno:
        return "not emitted in production: logging.disable() is in effect"
    if logger.disabled:
        return "not emitted in production: the logger is disabled"
    return (
        f"not emitted in production: {record.levelname} is below the logger's effective "
        f"level {logging.getLevelName(logger.getEffectiveLevel())}"
    )


#: Below this level a failing log record says how to declare a production level.
HINT_BELOW = logging.WARNING
_LADDER = (logging.DEBUG, logging.INFO, logging.WARNING)


def resolve_latent(items: Iterable[Captured], policy: Policy) -> list[Captured]:
    """``items`` as ``policy`` sees them: a log record's text below the production level
    declared for its logger (``policy.log_levels``, the closest declared ancestor first)
    becomes latent, noted "emitted only when DEBUG is enabled"; one that is not, in a
    record below WARNING with no level declared for its logger, says how to declare one
    (it is emitted only if production enables that level: the strict default counts it).
    Under ``policy.strict_latent`` a latent text is judged as emitted, as a text of its own
    (not a fallback of its record), and its note says so."""
    out: list[Captured] = []
    #: the messages of the records latent by their level, and why: a line of the test's
    #: stdout or stderr that shows one is that record's output, latent as it is
    latent_messages: dict[str, str] = {}
    for item in items:
        origin = item.origin
        if origin is not None:
            declared = policy.production_level(origin.logger)
            if declared is not None and origin.levelno < declared[1]:
                name, level = declared
                why = (
                    f"emitted only when {origin.levelname} is enabled (production level "
                    f"{level_name(level)} declared for {name})"
                )
                text = item.text
                if item.path.endswith(" message") and type(text) is str and len(text) >= 8:
                    latent_messages.setdefault(text, why)
                if item.sink_class is SinkClass.LATENT:
                    note = _joined(item.note, why)
                else:
                    note = _joined(f"latent: {why}", item.note)
                item = _replaced(item, sink_class=SinkClass.LATENT, note=note)
            elif (
                declared is None
                and item.sink_class is SinkClass.OPERATOR
                and origin.levelno < HINT_BELOW
            ):
                item = _replaced(item, note=_joined(item.note, _declare_hint(origin)))
        if item.sink_class is SinkClass.LATENT and policy.strict_latent:
            # judged as before latent material was told apart: a finding of its own
            item = _replaced(
                item, note=_joined(item.note, "strict_latent: judged as emitted"), fallback=False
            )
        out.append(item)
    if latent_messages and not policy.strict_latent:
        out = [part for item in out for part in _latent_lines_apart(item, latent_messages)]
    return out


def _latent_lines_apart(item: Captured, messages: dict[str, str]) -> list[Captured]:
    """A stdout or stderr text (the test's, or the log lines pytest captured) with the
    lines that show a record latent by its level (a DEBUG line of a logger declared at
    INFO: its handler on stderr, or pytest's log capture at ``--log-level=DEBUG``) taken
    apart as latent, each text keeping its line numbers; else the text as it is. Those
    lines were judged as emitted: the declaration did nothing for them."""
    text = item.text
    if item.sink not in ("stdout", "stderr") or type(text) is not str or item.origin:
        return [item]
    lines = text.split("\n")
    why = [next((w for m, w in messages.items() if m in line), "") for line in lines]
    if not any(why):
        return [item]
    kept = "\n".join("" if w else line for line, w in zip(lines, why, strict=True))
    latent = "\n".join(line if w else "" for line, w in zip(lines, why, strict=True))
    reason = next(w for w in why if w)
    note = _joined(f"latent: the output of a log record {reason}", item.note)
    return [
        _replaced(item, text=kept),
        _replaced(item, sink_class=SinkClass.LATENT, text=latent, note=note),
    ]


def _replaced(item: Captured, **changes: Any) -> Captured:
    """``dataclasses.replace(item, **changes)`` without its walk over the class's fields:
    each DEBUG and INFO record of every test is given its hint here."""
    return Captured(**{**item.__dict__, **changes})


def _joined(*notes: str) -> str:
    return "; ".join(note for note in notes if note)


def _declare_hint(origin: LogOrigin) -> str:
    return _hint_for(origin.logger, origin.levelno)


# (the same few loggers and levels in test after test: each of a test's DEBUG and INFO
# texts was given its hint made afresh)
@functools.lru_cache(maxsize=256)
def _hint_for(logger: str, levelno: int) -> str:
    level = level_name(next((n for n in _LADDER if n > levelno), logging.WARNING))
    return (
        f"latent if production runs {logger} at {level}: declare it with "
        f"leakcheck_log_levels = {logger}={level} (ini) or "
        f"@pytest.mark.leakcheck(log_levels={{{logger!r}: {level!r}}})"
    )


#: Each crash-hook wrapper whose sink has stopped -> the hook it wrapped, which it passes
#: straight to from then on; skipped when found again.
_ENDED_HOOKS = EndedWrappers()


class _Live:
    """Whether a started sink still captures (its wrappers read it at each call)."""

    def __init__(self) -> None:
        self.on = True


class CrashHookSink:
    """``sys.excepthook``, ``threading.excepthook`` and ``sys.unraisablehook``: wrapped so
    that what they would print is captured, then passed to the previous hook.

    At stop a hook is put back only if this sink's wrapper is still installed. A hook the
    app installed meanwhile (``sentry_sdk.init()`` wraps ``sys.excepthook`` as it finds it;
    a crash reporter's ``threading.excepthook``) stays: putting back the hook found at start
    dropped it for the rest of the process (sentry sets its integrations up once). The
    wrapper left under it captures nothing more and passes every call on."""

    name = "crash hook"

    def __init__(self) -> None:
        self._texts: list[tuple[str, str]] = []
        # (module, attribute, this sink's wrapper, the hook it wrapped) while started
        self._installed: list[tuple[Any, str, Callable[..., Any], Callable[..., Any]]] | None
        self._installed = None
        self._live = _Live()

    def start(self) -> None:
        if self._installed is not None:
            return
        texts = self._texts
        live = self._live = _Live()
        with _ENDED_HOOKS.lock:
            found = [
                _ENDED_HOOKS.beneath(hook)
                for hook in (sys.excepthook, threading.excepthook, sys.unraisablehook)
            ]
            found_excepthook, found_thread_hook, found_unraisable_hook = found

            def excepthook(kind: Any, value: Any, tb: Any) -> None:
                if live.on:
                    texts.append(("sys.excepthook", _formatted(kind, value, tb)))
                found_excepthook(kind, value, tb)

            def thread_hook(args: Any) -> None:
                if live.on:
                    text = _formatted(args.exc_type, args.exc_value, args.exc_traceback)
                    texts.append(("threading.excepthook", text))
                found_thread_hook(args)

            def unraisable_hook(args: Any) -> None:
                if live.on:
                    text = _formatted(args.exc_type, args.exc_value, args.exc_traceback)
                    texts.append(("sys.unraisablehook", f"{safe_str(args.err_msg or '')}\n{text}"))
                found_unraisable_hook(args)

            self._installed = [
                (sys, "excepthook", excepthook, found_excepthook),
                (threading, "excepthook", thread_hook, found_thread_hook),
                (sys, "unraisablehook", unraisable_hook, found_unraisable_hook),
            ]
            for owner, attribute, wrapper, _ in self._installed:
                setattr(owner, attribute, wrapper)

    def stop(self) -> None:
        if self._installed is None:
            return
        installed, self._installed = self._installed, None
        self._live.on = False
        with _ENDED_HOOKS.lock:
            for owner, attribute, wrapper, wrapped in installed:
                _ENDED_HOOKS.end(wrapper, wrapped)
                if getattr(owner, attribute) is wrapper:
                    # (what it wrapped may be another sink's, stopped meanwhile: not that either)
                    setattr(owner, attribute, _ENDED_HOOKS.beneath(wrapped))

    def collect(self) -> Iterator[Captured]:
        for path, text in self._texts:
            yield Captured(self.name, SinkClass.OPERATOR, path, text)


def _formatted(kind: Any, value: Any, tb: Any) -> str:
    """What the default hook prints for an exception, never raising; with the exception's
    args and text attributes when the traceback cannot be formatted."""
    try:
        return "".join(traceback.format_exception(kind, value, tb))
    except Exception:  # noqa: BLE001 - a hook must not fail on the app's exception
        if issubclass(type(value), BaseException):
            return "\n".join(str(text) for _, text in exception_texts(value))
        return safe_repr(value)


class WarningsSink:
    """Warnings raised during the test, recorded under the filters in force (an ``error``
    filter still raises) and handed on as they are raised to whoever recorded before us:
    pytest's warnings summary, a ``recwarn`` or a ``catch_warnings`` a fixture entered
    before ours, ``logging.captureWarnings``. A recorder's copy is masked in place when the
    sink stops, with every secret known then; what prints it as it comes (a
    ``showwarning`` of the app's, Python's own printer) gets it masked. Held back until the
    test ended, a fixture's recorder saw no warning while the test ran (``assert
    len(recwarn) == 1`` failed under the plugin alone) and a warning routed to logging
    became a log line after the test instead of during it."""

    name = "warning"

    def __init__(self, mask: Callable[[str], str] = lambda text: text) -> None:
        self._mask = mask
        self._context: Any = None
        self._log: list[warnings.WarningMessage] = []
        #: warnings a test caught itself (``pytest.warns``): judged, not handed on
        self._caught: list[warnings.WarningMessage] = []
        #: recorders the test entered and has not left (``recwarn`` leaves after the
        #: verdict): what they hold at the verdict is judged
        self._open: list[Any] = []
        #: where a warning went before we recorded (``showwarning``, ``_showwarnmsg_impl``)
        self._outer: tuple[Any, Any] | None = None
        #: what was handed on as it was raised: id of ours -> the one handed on
        self._handed: dict[int, warnings.WarningMessage | None] = {}
        #: what the recorder outside ours (pytest's, for the test) held when we started,
        #: when asked (``judge_earlier``): the warnings of the test's set-up before the
        #: check existed
        self._before: list[warnings.WarningMessage] = []
        self._judge_earlier = False
        #: that recorder when we stopped, and how much it held then (``after_stop``)
        self._outer_log: tuple[list[Any], int] | None = None

    def judge_earlier(self) -> None:
        """Judge, too, what the recorder outside ours holds when the sink starts: the
        pytest plugin's check, whose recorder outside is pytest's for the test, whose
        fixtures set up before the check may have warned (with a session secret: that
        passed, found by a hunting helper). Not a ``LeakCheck``'s of a test's own, which
        is judged on what came while it ran."""
        self._judge_earlier = True

    def add_caught(self, w: warnings.WarningMessage) -> None:
        """A warning the test caught before the sink saw it (``pytest.warns``): emitted
        all the same, to stderr or a log, where the test does not catch it."""
        self._caught.append(w)

    def recorder_entered(self, recorder: Any) -> None:
        self._open.append(recorder)

    def recorder_left(self, recorder: Any) -> None:
        self._open = [r for r in self._open if r is not recorder]

    def start(self) -> None:
        if self._context is not None:
            return
        show, impl = warnings.showwarning, getattr(warnings, "_showwarnmsg_impl", None)
        if self._judge_earlier:
            outer = _recording_list()
            self._before = [w for w in outer or () if isinstance(w, warnings.WarningMessage)]
        self._context = warnings.catch_warnings(record=True)
        self._log = self._context.__enter__()
        # handed on as raised where this Python records through ``_showwarnmsg_impl``
        # (a context-aware one records elsewhere: handed on at the end, as before)
        recording = getattr(warnings, "_showwarnmsg_impl", None)
        if impl is not None and recording == self._log.append:
            self._outer = (show, impl)
            warnings._showwarnmsg_impl = self._record  # type: ignore[attr-defined]

    def stop(self) -> None:
        if self._context is None:
            return
        context, self._context = self._context, None
        context.__exit__(None, None, None)
        self._outer = None
        for w in self._log:
            try:
                if id(w) in self._handed:
                    self._mask_handed(w, self._handed[id(w)])
                else:
                    self._hand_on(w)
            except Exception:  # noqa: BLE001 - a warning we cannot pass on is still captured
                continue
        outer = _recording_list()
        self._outer_log = (outer, len(outer)) if outer is not None else None

    def recorded(self) -> int:
        """How many warnings the sink has recorded so far (``since``)."""
        return len(self._log)

    def since(self, recorded: int) -> Iterator[Captured]:
        """The warnings recorded after the first ``recorded`` ones, and those the recorder
        outside ours recorded after the sink stopped: what a test's teardown warned (a
        fixture's teardown warning, and pytest's warnings for a thread's or a ``__del__``'s
        exception, which pytest issues after every fixture was torn down), judged after
        the verdict; that passed (found by a hunting helper)."""
        after: list[Any] = []
        if self._outer_log is not None:
            outer, count = self._outer_log
            after = [w for w in outer[count:] if isinstance(w, warnings.WarningMessage)]
        for w in (*self._log[recorded:], *after):
            yield self._captured(w)

    def _record(self, w: warnings.WarningMessage) -> None:
        self._log.append(w)
        outer = self._outer
        if outer is None:  # (stopped in another thread meanwhile: handed on at stop)
            return
        self._handed[id(w)] = None
        show, impl = outer
        # as ``warnings._showwarnmsg`` routes it: a ``showwarning`` of its own first
        if show is not getattr(warnings, "_showwarning_orig", show):
            show(*self._masked(w), w.filename, w.lineno, w.file, w.line)
            return
        # a recorder (pytest's summary, ``recwarn``) gets it as raised, masked in place when
        # the sink stops, with every secret there is then (masked here, a warning made the
        # test's own masking scanner while it ran); what prints it gets it masked now
        records = isinstance(getattr(impl, "__self__", None), list)
        message, category = (w.message, w.category) if records else self._masked(w)
        handed = warnings.WarningMessage(
            message, category, w.filename, w.lineno, w.file, w.line, w.source
        )
        self._handed[id(w)] = handed
        impl(handed)

    def _mask_handed(self, w: warnings.WarningMessage, handed: Any) -> None:
        """The copy of ``w`` handed on to a recorder, masked in place (one handed to a
        ``showwarning`` is gone: it was masked then)."""
        if handed is None:
            return
        message, category = self._masked(w)
        if message is not handed.message:
            handed.message, handed.category = message, category

    def _masked(self, w: warnings.WarningMessage) -> tuple[Any, Any]:
        """``w``'s message and category as handed on: itself, or a fresh warning of its
        text, masked, when it shows a secret or when its own ``__str__`` would not print
        that text (raises, or says something else)."""
        text = _warning_text(w.message)
        masked = self._mask(text)
        category = w.category if isinstance(w.category, type) else UserWarning
        message: Any = w.message
        if masked != text or not _prints_as(message, text):
            try:
                message = category(masked)
                if not _prints_as(message, masked):
                    message = UserWarning(masked)
            except Exception:  # noqa: BLE001 - a category with a custom signature
                message = UserWarning(masked)
            if not issubclass(type(message), category):
                category = UserWarning
        return message, category

    def _hand_on(self, w: warnings.WarningMessage) -> None:
        """Pass ``w`` on (``_masked``) to whoever recorded before us, after the test."""
        message, category = self._masked(w)
        warnings.showwarning(message, category, w.filename, w.lineno, w.file, w.line)

    def collect(self) -> Iterator[Captured]:
        still_open = [w for recorder in self._open for w in list(getattr(recorder, "_list", ()))]
        for w in (*self._before, *self._log, *self._caught, *still_open):
            yield self._captured(w)

    def _captured(self, w: warnings.WarningMessage) -> Captured:
        category = w.category
        name = category.__name__ if isinstance(category, type) else type_name(category)
        # as Python prints it, category first (``file:line: Category: message``): a
        # category class named after the token passed (found by a hunting helper)
        return Captured(
            self.name,
            SinkClass.OPERATOR,
            f"{safe_str(name)} {safe_str(w.filename)}:{safe_str(w.lineno)}",
            f"{safe_str(name)}: {_warning_text(w.message)}",
        )


def _recording_list() -> list[Any] | None:
    """The list the innermost ``catch_warnings(record=True)`` records into (pytest's, for
    the running test), or None when warnings are not being recorded so."""
    recorder = getattr(getattr(warnings, "_showwarnmsg_impl", None), "__self__", None)
    return recorder if isinstance(recorder, list) else None


def _warning_text(message: object) -> str:
    """A warning's text, read through the base types (never raising)."""
    if issubclass(type(message), BaseException):
        return exception_message(message)  # type: ignore[arg-type]  # an exception (type())
    return safe_str(message)


def _prints_as(message: object, text: str) -> bool:
    """Whether ``str(message)`` gives exactly ``text`` (and does not raise)."""
    try:
        printed = str(message)
    except Exception:  # noqa: BLE001
        return False
    return type(printed) is str and printed == text


SinkFactory = Callable[[], Sink]


def builtin_sinks() -> list[Sink]:
    return [LoggingSink(), CrashHookSink()]


def plugin_sink_factories() -> dict[str, SinkFactory]:
    """``{sink name: factory}`` from installed plugins whose library is importable (the
    bundled sinks: and imported, see ``extensions.WATCHED_LIBRARIES``)."""
    from .extensions import load_plugins

    return _sink_factories(load_plugins())


@functools.lru_cache(maxsize=4)  # one set of modules, until a watched library is imported
def _sink_factories(modules: tuple[Any, ...]) -> dict[str, SinkFactory]:
    factories: dict[str, SinkFactory] = {}
    for module in modules:
        for factory in getattr(module, "SINKS", ()):
            factories[getattr(factory, "name", factory.__name__)] = factory
    return factories
