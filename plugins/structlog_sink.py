"""Sink plugin for structlog: the final rendered output, with the app's processors intact.

``structlog.testing.capture_logs`` replaces the processor chain, so it sees event dicts
before the app's own processors ran: a key the app redacts or drops would be reported as a
leak. This sink changes no configuration at all. While it is active it wraps
``BoundLoggerBase._process_event`` (the step every bound logger uses to run its processor
chain, ``structlog.stdlib.BoundLogger`` and the filtering loggers of
``make_filtering_bound_logger`` included) and records what the chain returned: the
string, bytes, ``(args, kwargs)`` or dict that the final processor produced and that is
then handed to the wrapped logger. Because nothing is configured, loggers cached before the
test (``cache_logger_on_first_use=True``), loggers made with ``structlog.wrap_logger`` and
loggers assembled in other threads are all seen, and ``structlog.get_config()`` is exactly
what the app set.

With the stdlib integration, the renderer is ``ProcessorFormatter.wrap_for_formatter`` and
the final rendering happens later, in a ``logging`` handler's ``ProcessorFormatter``
(which may run more processors, such as a redactor). Such events are not recorded at the
bound logger; ``ProcessorFormatter.format`` is wrapped instead and its output recorded.
If that record reaches no ``ProcessorFormatter`` (a plain ``logging.Formatter``), the
``log record`` sink still sees it.

Paths: ``event <logger name> <method>`` (``structlog event gateway.http warning``), the
logger name when the wrapped logger has one (stdlib loggers) and otherwise the ``logger``
key of the event; ``formatter <record name> <LEVEL>`` for ``ProcessorFormatter`` output.

Each text names its logger and level (``Captured.origin``): a production level declared
for the logger (``leakcheck_log_levels``) makes an event below it latent, as for the
``log record`` sink.

Limitations: structlog filters by level before rendering (``make_filtering_bound_logger``,
``filter_by_level``), so an event below the app's configured level is never rendered and
is not captured; a wrapper class that overrides ``_process_event`` without calling the base
implementation is not seen.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import structlog
import structlog.stdlib
from structlog._base import BoundLoggerBase

from leakcheck.capture import Captured, LogOrigin
from leakcheck.policy import SinkClass
from leakcheck.serialize import leaves, safe_repr, to_jsonable

__all__ = ["StructlogSink", "SINKS"]

if not callable(getattr(BoundLoggerBase, "_process_event", None)):  # pragma: no cover
    raise ImportError(
        f"structlog {getattr(structlog, '__version__', '?')}: BoundLoggerBase._process_event "
        "is missing; the structlog sink cannot observe rendered output"
    )

_LOCK = threading.Lock()
_ACTIVE: list[StructlogSink] = []
_ORIGINAL: dict[str, Any] = {}


class StructlogSink:
    """Every event as structlog rendered it during the test (operator-visible)."""

    name = "structlog"

    def __init__(self) -> None:
        # (path, rendered output, note, logger and level)
        self._events: list[tuple[str, Any, str, LogOrigin | None]] = []
        self._started = False

    def start(self) -> None:
        if self._started:
            return
        with _LOCK:
            if not _ACTIVE:
                _install()
            _ACTIVE.append(self)
        self._started = True

    def stop(self) -> None:
        if not self._started:
            return
        with _LOCK:
            if self in _ACTIVE:
                _ACTIVE.remove(self)
            if not _ACTIVE:
                _uninstall()
        self._started = False

    def _record(self, path: str, output: Any, note: str, origin: LogOrigin | None = None) -> None:
        self._events.append((path, output, note, origin))

    def collect(self) -> Iterator[Captured]:
        for n, (path, output, note, origin) in enumerate(self._events):
            group = f"{self.name}#{n}"
            for field, text in _texts(output):
                yield Captured(
                    self.name,
                    SinkClass.OPERATOR,
                    f"{path}{field}",
                    text,
                    note=note,
                    group=group,
                    origin=origin,
                )


def _origin(name: str, method_name: str) -> LogOrigin | None:
    """The logger and level of an event by its method (``exception`` logs at ERROR); None
    for a method that names no level (``msg``)."""
    level_name = "ERROR" if method_name == "exception" else method_name.upper()
    level = logging.getLevelName(level_name)
    if not isinstance(level, int):
        return None
    return LogOrigin(name or "root", level, level_name)


def _texts(output: Any) -> Iterator[tuple[str, str | bytes]]:
    """The texts of one rendered output: a str/bytes as is; ``(args, kwargs)`` per field."""
    if isinstance(output, (str, bytes, bytearray)):
        yield "", output if isinstance(output, str) else bytes(output)
        return
    args, kwargs = output
    for i, arg in enumerate(args):
        if isinstance(arg, (str, bytes, bytearray)):
            yield f" args[{i}]", arg if isinstance(arg, str) else bytes(arg)
        else:
            for path, text in leaves(to_jsonable(arg)):
                yield f" args[{i}]{path.removeprefix('$')}", text
            yield f" args[{i}] repr", safe_repr(arg)
    for key, value in kwargs.items():
        for path, text in leaves(to_jsonable(value)):
            yield f" {key}{path.removeprefix('$')}", text
        if not isinstance(value, (str, bytes, bytearray)):
            yield f" {key} repr", safe_repr(value)


def _is_for_formatter(args: Any, kwargs: Mapping[str, Any]) -> bool:
    """``ProcessorFormatter.wrap_for_formatter`` output: rendered later, by a handler."""
    extra = kwargs.get("extra") if isinstance(kwargs, Mapping) else None
    return (
        isinstance(extra, Mapping)
        and "_logger" in extra
        and "_name" in extra
        and len(args) == 1
        and isinstance(args[0], dict)
    )


def _logger_name(bound: Any, event_kw: Mapping[str, Any]) -> str:
    name = getattr(getattr(bound, "_logger", None), "name", None)
    if not isinstance(name, str):
        context = getattr(bound, "_context", None) or {}
        name = event_kw.get(
            "logger", context.get("logger") if isinstance(context, Mapping) else None
        )
    return name if isinstance(name, str) and name else ""


def _not_emitted_note(bound: Any, method_name: str) -> str:
    """When the wrapped logger is a stdlib logger whose level drops this method's level."""
    logger = getattr(bound, "_logger", None)
    if not isinstance(logger, logging.Logger):
        return ""
    level = logging.getLevelName("ERROR" if method_name == "exception" else method_name.upper())
    if not isinstance(level, int):
        return ""
    if logger.disabled or logging.root.manager.disable >= level:
        return "not emitted in production: the stdlib logger is disabled"
    if logger.getEffectiveLevel() > level:
        return (
            f"not emitted in production: {method_name} is below the stdlib logger's "
            f"effective level {logging.getLevelName(logger.getEffectiveLevel())}"
        )
    return ""


def _install() -> None:
    original_process = BoundLoggerBase._process_event
    original_format = structlog.stdlib.ProcessorFormatter.format
    _ORIGINAL["process"] = original_process
    _ORIGINAL["format"] = original_format

    def _process_event(self: Any, *a: Any, **kw: Any) -> Any:
        result = original_process(self, *a, **kw)
        try:
            call = dict(zip(("method_name", "event", "event_kw"), a, strict=False), **kw)
            method_name = str(call.get("method_name", ""))
            event_kw = call.get("event_kw") or {}
            args, kwargs = result
            if not _is_for_formatter(args, kwargs):
                name = _logger_name(self, event_kw)
                path = f"event {name} {method_name}" if name else f"event {method_name}"
                output: Any = (
                    args[0]
                    if not kwargs
                    and len(args) == 1
                    and isinstance(args[0], (str, bytes, bytearray))
                    else (tuple(args), dict(kwargs))
                )
                note = _not_emitted_note(self, method_name)
                origin = _origin(name, method_name)
                for sink in list(_ACTIVE):
                    sink._record(path, output, note, origin)
        except Exception:  # noqa: BLE001 - observing must never break the app's logging
            pass
        return result

    def format(self: Any, record: logging.LogRecord) -> str:
        text = original_format(self, record)
        origin = LogOrigin(str(record.name), int(record.levelno), str(record.levelname))
        for sink in list(_ACTIVE):
            sink._record(f"formatter {record.name} {record.levelname}", text, "", origin)
        return text

    _process_event.__wrapped__ = original_process  # type: ignore[attr-defined]  # on a function
    format.__wrapped__ = original_format  # type: ignore[attr-defined]  # set on a function
    bound, formatter = BoundLoggerBase, structlog.stdlib.ProcessorFormatter
    bound._process_event = _process_event  # type: ignore[method-assign]  # till _uninstall()
    formatter.format = format  # type: ignore[method-assign]  # till _uninstall()


def _uninstall() -> None:
    if not _ORIGINAL:
        return
    bound, formatter = BoundLoggerBase, structlog.stdlib.ProcessorFormatter
    bound._process_event = _ORIGINAL.pop("process")  # type: ignore[method-assign]  # restored
    formatter.format = _ORIGINAL.pop("format")  # type: ignore[method-assign]  # restored


SINKS = [StructlogSink]
