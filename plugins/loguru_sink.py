"""Sink plugin for loguru: every message at every level, and tracebacks as the app's own
handlers render them.

While active, the sink adds its own loguru handler at level 0, so every record is captured
whatever level the app's handlers use, with ``diagnose=True`` and ``backtrace=True``: loguru's
defaults, under which a logged traceback prints the values of the variables on each line
(``headers = {'Authorization': 'Bearer ...'}``). Texts per record: the message (after the
app's patchers), the traceback formatted as loguru's own handlers format it (no colours),
and every ``extra`` value (``bind``, ``contextualize``, ``configure(extra=...)``), which a
``serialize=True`` or ``{extra}`` handler emits. Paths: ``<module> <LEVEL> message``,
``<module> <LEVEL> traceback``, ``<module> <LEVEL> extra.<key>``.

**The app's settings.** A traceback is judged as the app's handlers that emit the record
render it: with each one's ``diagnose`` and ``backtrace`` (the handlers that exist when
its level is below all of theirs; loguru's defaults, both on, when the app has none).
What only ``diagnose=True, backtrace=True`` shows beyond that (variable values, the frames
above the one that caught the exception) is *latent*, as
``<module> <LEVEL> traceback (diagnose=True, backtrace=True)``: reported, failing only
under ``strict_latent``. A handler with ``diagnose=True`` is judged with its locals.

A note says when none of the app's handlers would have emitted the record at its level.

An app that reconfigures loguru during the test (``logger.remove()``, ``logger.configure``)
would remove this handler too: ``Logger.remove`` is wrapped while the sink is active so
that the handler is put back at once. At stop the handler is removed and ``Logger.remove``
restored, leaving the app's handlers exactly as they are.

An ``extra`` value is judged only where a handler of the app that emits the record writes
it (``serialize=True``, ``{extra}`` or ``{extra[key]}`` in its format, or a format
function); else it is latent. The record's names (``{thread.name}``, ``{process.name}``,
``{name}``, ``{function}``, ``{module}``, ``{file}``) are judged where such a handler
writes them (a thread named after a session, ``refresh-<token>``). A record that the
filter of every app handler at its level drops is latent (a filter is the app's code; a
level is configuration, judged as the strict default says).

Limitations: records of modules turned off with ``logger.disable(...)`` are dropped by
loguru before any handler and are not captured. Under an app handler with
``backtrace=True`` a traceback also shows the frames above the one that caught the
exception, the test function's among them: a secret held in a variable named on the
test's calling line (``Gateway(token).call()``) is reported. Create the object on a line
of its own, as production code would.
"""

from __future__ import annotations

import copy
import re
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import loguru._better_exceptions
import loguru._logger
from loguru import logger

from leakcheck.capture import Captured, LogOrigin
from leakcheck.policy import SinkClass
from leakcheck.serialize import safe_repr

__all__ = ["POINT_STREAMS", "LoguruSink", "SINKS", "point_streams"]

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
        # (record, note, emitted tracebacks as (path, text), latent traceback as (path,
        # text, note) or None, formatted traceback, the extra keys the app's handlers
        # write: None for all, and the record's names they write, ``_names_rendered``)
        self._records: list[
            tuple[
                dict[str, Any],
                str,
                list[tuple[str, str]],
                tuple[str, str, str] | None,
                str,
                frozenset[str] | None,
                list[tuple[str, str]],
            ]
        ] = []
        self._handler_id: int | None = None
        self._formatter: Any = None  # our handler's exception formatter
        self._from_decorator = False  # as loguru passed it for the record being written
        self._variants: dict[tuple[bool, bool], Any] = {}

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
        # our handler's traceback formatter, told how loguru called it (``from_decorator``):
        # the app's settings are rendered with copies of it
        formatter = getattr(_handlers().get(self._handler_id), "_exception_formatter", None)
        if formatter is None:  # pragma: no cover - loguru internals changed
            return
        original = formatter.format_exception
        sink = self

        def format_exception(type_: Any, value: Any, tb: Any, *, from_decorator: bool = False):
            sink._from_decorator = from_decorator
            return original(type_, value, tb, from_decorator=from_decorator)

        formatter.format_exception = format_exception  # on our own formatter object only
        self._formatter = formatter
        self._variants = {}

    def _ensure_handler(self) -> None:
        """Put our handler back if the app removed every handler."""
        if self._handler_id is not None and self._handler_id not in _handlers():
            self._add_handler()

    # --- capture ----------------------------------------------------------------------------

    def _write(self, message: Any) -> None:
        record = message.record
        full = str(message)
        try:
            note, settings, extras, names = self._judge(record)
        except Exception:  # noqa: BLE001 - loguru internals changed: judge as rendered
            note, settings, extras, names = "", {_FULL}, None, None
        shown_names = _record_names(record, names)
        emitted: list[tuple[str, str]] = []
        latent: tuple[str, str, str] | None = None
        # a setting that shows less than another one of the app's adds nothing to judge
        shown = {
            (d, b)
            for d, b in settings
            if not any((d2, b2) != (d, b) and d2 >= d and b2 >= b for d2, b2 in settings)
        }
        if record["exception"] and full.strip() and _FULL not in shown:
            try:
                emitted = [
                    (_traceback_path(setting, len(shown)), self._render(record, setting))
                    for setting in sorted(shown, reverse=True)
                ]
            except Exception:  # noqa: BLE001 - cannot render the app's way: judge ours
                emitted = []
            else:
                latent = (_traceback_path(_FULL, 0), full, _latent_note(settings))
        self._records.append((record, note, emitted, latent, full, extras, shown_names))

    def _judge(
        self, record: Any
    ) -> tuple[str, set[tuple[bool, bool]], frozenset[str] | None, frozenset[str] | None]:
        """The note on the record's level, the ``(diagnose, backtrace)`` settings of the
        app's handlers that render it, the ``extra`` keys they render and the record's
        names (``_names_rendered``) they render (None: all)."""
        ours = {sink._handler_id for sink in list(_ACTIVE)} | {self._handler_id}
        others = [h for hid, h in _handlers().items() if hid not in ours]
        level = record["level"]
        if not others:
            # (its names: no format of the app's shows them)
            none = frozenset[str]()
            return "not emitted in production: loguru has no other handler", {_FULL}, None, none
        emitting = [h for h in others if getattr(h, "_levelno", 0) <= level.no]
        note = ""
        if not emitting:
            lowest = min(getattr(h, "_levelno", 0) for h in others)
            handlers = (
                "the app's loguru handler"
                if len(others) == 1
                else f"every loguru handler of the app (lowest {lowest})"
            )
            note = f"not emitted in production: {level.name} ({level.no}) is below {handlers}"
            emitting = others  # judged at every level: as the handlers there would render it
        else:
            passing = [h for h in emitting if _passes_filter(h, record)]
            if not passing:
                note = _FILTERED
            emitting = passing or emitting
        return (
            note,
            {_setting(h) for h in emitting},
            _extras_rendered(emitting),
            _names_rendered(emitting),
        )

    def _render(self, record: Any, setting: tuple[bool, bool]) -> str:
        """The record's traceback as a handler with ``setting`` renders it (no colours)."""
        formatter = self._variants.get(setting)
        if formatter is None:
            formatter = copy.copy(self._formatter)
            vars(formatter).pop("format_exception", None)  # the class's own method
            formatter._diagnose, formatter._backtrace = setting
            self._variants[setting] = formatter
        type_, value, tb = record["exception"]
        lines = formatter.format_exception(type_, value, tb, from_decorator=self._from_decorator)
        return "".join(lines)

    def collect(self) -> Iterator[Captured]:
        for n, (record, note, emitted, latent, full, extras, names) in enumerate(self._records):
            level = record["level"]
            where = f"{record['name'] or '<unknown>'} {level.name}"
            group = f"{self.name}#{n}"
            origin = LogOrigin(str(record["name"] or ""), int(level.no), str(level.name))

            def item(
                field: str,
                text: str,
                note: str = note,
                where: str = where,
                group: str = group,
                origin: LogOrigin = origin,
                latent: bool = note == _FILTERED,
            ) -> Captured:
                return Captured(
                    self.name,
                    SinkClass.LATENT if latent else SinkClass.OPERATOR,
                    f"{where} {field}",
                    text,
                    note=note,
                    group=group,
                    fallback=latent,
                    origin=origin,
                )

            message = record["message"]
            yield item("message", message)
            for field, text in names:
                yield item(field, text)
            if full.strip() and full != message:
                for path, text in emitted or [("traceback", full)]:
                    yield item(path, text)
            for key, value in record["extra"].items():
                text = value if isinstance(value, str) else safe_repr(value) + "\n" + _str(value)
                if extras is None or key in extras:
                    yield item(f"extra.{key}", text)
                else:  # bound to the record, and no handler of the app writes it
                    why = f"latent: extra.{key} is bound to the record; {_EXTRAS_NOT_RENDERED}"
                    yield item(
                        f"extra.{key}", text, "; ".join(x for x in (why, note) if x), latent=True
                    )
            if latent is not None and full.strip() and full != message:
                path, text, why = latent
                yield item(path, text, "; ".join(x for x in (why, note) if x), latent=True)


#: loguru's defaults: what this sink's own handler renders
_FULL = (True, True)


#: The note on a record that the filter of every app handler at its level drops: latent,
#: as a record of the app's own code that no handler writes (a filter is the app's code,
#: where a level is configuration that production may set otherwise: still judged).
_FILTERED = "latent: the filter of every loguru handler of the app drops it"
_EXTRAS_NOT_RENDERED = (
    "no loguru handler of the app that emits it renders it (its format names no {extra}, "
    "none serializes)"
)
_EXTRA_FIELD = re.compile(r"\{extra(?:\[([^\]]+)\])?")


def _formats(handlers: Sequence[Any]) -> list[str] | None:
    """The fields part of each of ``handlers``' formats, or None when one writes every
    field (it serializes, or formats with a function) or cannot be read."""
    formats = []
    for handler in handlers:
        if getattr(handler, "_serialize", True) or getattr(handler, "_is_formatter_dynamic", True):
            return None
        tokens = getattr(getattr(handler, "_formatter", None), "_tokens", None)
        if not isinstance(tokens, list):
            return None
        formats.append("".join(str(token[1]) for token in tokens if isinstance(token, tuple)))
    return formats


def _extras_rendered(handlers: Sequence[Any]) -> frozenset[str] | None:
    """The ``extra`` keys that ``handlers`` write (None: every one: a handler that
    serializes, formats ``{extra}`` whole, or formats with a function)."""
    formats = _formats(handlers)
    if formats is None:
        return None
    keys: set[str] = set()
    for text in formats:
        for match in _EXTRA_FIELD.finditer(text):
            if match.group(1) is None:
                return None
            keys.add(match.group(1))
    return frozenset(keys)


#: The record's names a format may write, as loguru's format names them (``{thread.name}``,
#: ``{name}``, ``{file.path}``): a thread or a module named after a session shows its token
#: where a handler writes it (found by a hunting helper for the standard library's).
_NAME_FIELD = re.compile(r"\{(thread|process|name|function|module|file)\b")
_NAMES = ("thread", "process", "name", "function", "module", "file")


def _names_rendered(handlers: Sequence[Any]) -> frozenset[str] | None:
    """The record's names (``_NAMES``) that ``handlers`` write (None: every one: a
    handler that serializes, or formats with a function)."""
    formats = _formats(handlers)
    if formats is None:
        return None
    return frozenset(m.group(1) for text in formats for m in _NAME_FIELD.finditer(text))


def _record_names(record: Any, names: frozenset[str] | None) -> list[tuple[str, str]]:
    """``(field, text)`` of each of the record's ``names`` (None: all) that is text: a
    thread's and a process's name, the logger's, the function, module and file names and
    the file's path."""
    shown: list[tuple[str, str]] = []
    for name in _NAMES if names is None else sorted(names):
        value = record.get(name)
        if name in ("thread", "process"):
            shown.append((f"{name}.name", str(getattr(value, "name", "") or "")))
        elif name == "file":
            shown += [
                ("file.name", str(getattr(value, "name", "") or "")),
                ("file.path", str(getattr(value, "path", "") or "")),
            ]
        else:
            shown.append((name, str(value or "")))
    return [(field, text) for field, text in shown if text]


def _passes_filter(handler: Any, record: Any) -> bool:
    """Whether ``handler``'s filter lets ``record`` through (a filter that raises: yes)."""
    check = getattr(handler, "_filter", None)
    if check is None:
        return True
    try:
        return bool(check(record))
    except Exception:  # noqa: BLE001 - the app's filter: judged as passing
        return True


def _setting(handler: Any) -> tuple[bool, bool]:
    formatter = getattr(handler, "_exception_formatter", None)
    return (
        bool(getattr(formatter, "_diagnose", True)),
        bool(getattr(formatter, "_backtrace", True)),
    )


def _traceback_path(setting: tuple[bool, bool], settings: int) -> str:
    if settings == 1:
        return "traceback"
    diagnose, backtrace = setting
    return f"traceback (diagnose={diagnose}, backtrace={backtrace})"


def _latent_note(settings: set[tuple[bool, bool]]) -> str:
    off = []
    if not any(diagnose for diagnose, _ in settings):
        off.append("diagnose=False")
    if not any(backtrace for _, backtrace in settings):
        off.append("backtrace=False")
    shows = {
        "diagnose=False": "variable values",
        "backtrace=False": "the frames above the one that caught the exception",
    }
    what = " and ".join(shows[x] for x in off) or "what no handler of the app renders"
    return (
        f"latent: {what}, which loguru prints only with diagnose=True, backtrace=True; the "
        f"app's handlers use {', '.join(off) or 'other settings'}"
    )


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


def point_streams(streams: Mapping[int, Any]) -> Callable[[], None]:
    """Point the app's loguru handlers that write to one of the streams ``streams`` names
    (by ``id``: the terminal's ``sys.stdout`` and ``sys.stderr``, held by loguru's default
    handler since its import) at the stream it maps to (leakcheck's masked echo under
    ``-s``); the callable returned points them back."""
    pointed: list[tuple[Any, Any, Any]] = []
    for handler in _handlers().values():
        sink = getattr(handler, "_sink", None)
        stream = getattr(sink, "_stream", None)
        echo = streams.get(id(stream)) if stream is not None else None
        if echo is not None:
            sink._stream = echo  # type: ignore[union-attr]  # loguru's StreamSink
            pointed.append((sink, stream, echo))

    def point_back() -> None:
        for sink, stream, echo in pointed:
            if sink._stream is echo:
                sink._stream = stream

    return point_back


SINKS = [LoguruSink]
#: what leakcheck's ``-s`` echo calls to point this library's writers at it
POINT_STREAMS = point_streams
