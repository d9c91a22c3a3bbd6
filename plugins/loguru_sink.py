"""Sink plugin for loguru: every message at every level, and tracebacks with their locals.

While active, the sink adds its own loguru handler at level 0, so every record is captured
whatever level the app's handlers use, with ``diagnose=True`` and ``backtrace=True``: loguru's
defaults, under which a logged traceback prints the values of the variables on each line
(``headers = {'Authorization': 'Bearer ...'}``). Texts per record: the message (after the
app's patchers), the traceback formatted as loguru's own handlers format it (no colours),
and every ``extra`` value (``bind``, ``contextualize``, ``configure(extra=...)``), which a
``serialize=True`` or ``{extra}`` handler emits. Paths: ``<module> <LEVEL> message``,
``<module> <LEVEL> traceback``, ``<module> <LEVEL> extra.<key>``.

A note says when none of the app's handlers would have emitted the record at its level,
and when the app's handlers that would emit it format tracebacks with ``diagnose=False``
(locals are then shown only because this sink renders with ``diagnose=True``).

An app that reconfigures loguru during the test (``logger.remove()``, ``logger.configure``)
would remove this handler too: ``Logger.remove`` is wrapped while the sink is active so
that the handler is put back at once. At stop the handler is removed and ``Logger.remove``
restored, leaving the app's handlers exactly as they are.

Limitations: records of modules turned off with ``logger.disable(...)`` are dropped by
loguru before any handler and are not captured; a filter on the app's handlers is not
evaluated for the note (only levels are). With ``backtrace=True`` a traceback also shows the
frames above the one that caught the exception, the test function's among them: a secret
held in a variable named on the test's calling line (``Gateway(token).call()``) is
reported. Create the object on a line of its own, as production code would.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from typing import Any

import loguru._better_exceptions
import loguru._logger
from loguru import logger

from leakcheck.capture import Captured
from leakcheck.policy import SinkClass
from leakcheck.serialize import safe_repr

__all__ = ["LoguruSink", "SINKS"]

_LOCK = threading.Lock()
_ACTIVE: list[LoguruSink] = []
_ORIGINAL: dict[str, Any] = {}


def _exception_only(record: Any) -> str:
    # dynamic formats get no automatic "{exception}" suffix: this one is just the traceback
    return "{exception}"


_LIB_DIRS: dict[tuple[str, ...], list[str]] = {}
_GET_LIB_DIRS = loguru._better_exceptions.ExceptionFormatter.__dict__["_get_lib_dirs"]


def _lib_dirs() -> list[str]:
    key = tuple(sys.path)
    if key not in _LIB_DIRS:
        _LIB_DIRS[key] = _GET_LIB_DIRS.__func__()
    return list(_LIB_DIRS[key])


class LoguruSink:
    """Every loguru record of the test (operator-visible)."""

    name = "loguru"

    def __init__(self) -> None:
        # (record, formatted traceback, note, traceback note)
        self._records: list[tuple[dict[str, Any], str, str, str]] = []
        self._handler_id: int | None = None

    # --- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        if self._handler_id is not None:
            return
        with _LOCK:
            self._add_handler()
            if not _ACTIVE:
                _install()
            _ACTIVE.append(self)

    def stop(self) -> None:
        if self._handler_id is None:
            return
        with _LOCK:
            if self in _ACTIVE:
                _ACTIVE.remove(self)
            if not _ACTIVE:
                _uninstall()
            handler_id, self._handler_id = self._handler_id, None
            if handler_id in _handlers():
                _ORIGINAL.get("remove", loguru._logger.Logger.remove)(logger, handler_id)

    def _add_handler(self) -> None:
        # loguru's traceback formatter asks sysconfig for the library directories each
        # time a handler is added (~7 ms); the answer only depends on sys.path.
        formatter = loguru._better_exceptions.ExceptionFormatter
        cached = staticmethod(_lib_dirs)
        formatter._get_lib_dirs = cached  # type: ignore[method-assign]  # for this add only
        try:
            self._add_handler_now()
        finally:
            formatter._get_lib_dirs = _GET_LIB_DIRS  # type: ignore[method-assign]  # loguru's own

    def _add_handler_now(self) -> None:
        self._handler_id = logger.add(
            self._write,
            level=0,
            format=_exception_only,
            diagnose=True,
            backtrace=True,
            colorize=False,
            enqueue=False,
            catch=True,
        )

    def _ensure_handler(self) -> None:
        """Put our handler back if the app removed every handler."""
        if self._handler_id is not None and self._handler_id not in _handlers():
            self._add_handler()

    # --- capture ----------------------------------------------------------------------------

    def _write(self, message: Any) -> None:
        record = message.record
        try:
            note, traceback_note = self._notes(record)
        except Exception:  # noqa: BLE001 - loguru internals changed: capture without notes
            note = traceback_note = ""
        self._records.append((record, str(message), note, traceback_note))

    def _notes(self, record: Any) -> tuple[str, str]:
        ours = {sink._handler_id for sink in list(_ACTIVE)} | {self._handler_id}
        others = [h for hid, h in _handlers().items() if hid not in ours]
        level = record["level"]
        if not others:
            return "not emitted in production: loguru has no other handler", ""
        emitting = [h for h in others if getattr(h, "_levelno", 0) <= level.no]
        if not emitting:
            lowest = min(getattr(h, "_levelno", 0) for h in others)
            return (
                f"not emitted in production: {level.name} ({level.no}) is below the level of "
                f"every other loguru handler (lowest {lowest})",
                "",
            )
        diagnosing = [
            h
            for h in emitting
            if getattr(getattr(h, "_exception_formatter", None), "_diagnose", True)
        ]
        if not diagnosing:
            return "", (
                "the app's loguru handlers use diagnose=False: variable values appear here "
                "only because leakcheck renders with diagnose=True"
            )
        return "", ""

    def collect(self) -> Iterator[Captured]:
        for n, (record, traceback_text, note, traceback_note) in enumerate(self._records):
            where = f"{record['name'] or '<unknown>'} {record['level'].name}"
            group = f"{self.name}#{n}"

            def item(
                field: str, text: str, note: str = note, where: str = where, group: str = group
            ) -> Captured:
                return Captured(
                    self.name, SinkClass.OPERATOR, f"{where} {field}", text, note=note, group=group
                )

            message = record["message"]
            yield item("message", message)
            if traceback_text.strip() and traceback_text != message:
                yield item(
                    "traceback", traceback_text, "; ".join(x for x in (note, traceback_note) if x)
                )
            for key, value in record["extra"].items():
                text = value if isinstance(value, str) else safe_repr(value) + "\n" + _str(value)
                yield item(f"extra.{key}", text)


def _str(value: object) -> str:
    try:
        return str(value)
    except Exception:  # noqa: BLE001
        return ""


def _handlers() -> dict[int, Any]:
    return dict(logger._core.handlers)  # type: ignore[attr-defined]  # loguru's private state


def _install() -> None:
    original = loguru._logger.Logger.remove
    _ORIGINAL["remove"] = original

    def remove(self: Any, handler_id: int | None = None) -> None:
        result = original(self, handler_id)
        if self._core is logger._core:  # type: ignore[attr-defined]  # loguru's private state
            for sink in list(_ACTIVE):
                sink._ensure_handler()
        return result

    remove.__wrapped__ = original  # type: ignore[attr-defined]  # set on a function
    remove.__doc__ = original.__doc__
    loguru._logger.Logger.remove = remove  # type: ignore[method-assign]  # until _uninstall()


def _uninstall() -> None:
    if "remove" in _ORIGINAL:
        original = _ORIGINAL.pop("remove")
        loguru._logger.Logger.remove = original  # type: ignore[method-assign]  # loguru's own


SINKS = [LoguruSink]
