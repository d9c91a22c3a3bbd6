"""Turn an exposed object into the texts an agent would see, with field paths.

A gateway serializes its tool response as JSON; the agent may also see its ``repr``. Both are
produced, and every string leaf is kept with its JSON path so that a finding names the field
(``$.error.detail``). Never raises: dataclasses, pydantic models, exceptions, bytes, cycles
and objects whose ``repr`` raises all have a fallback.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
import traceback
from collections.abc import Callable, Iterator, Mapping
from typing import Any

__all__ = [
    "map_strings",
    "parse_json",
    "read_json_file",
    "to_jsonable",
    "leaves",
    "safe_repr",
    "exception_texts",
    "exception_args",
    "TEXT_ATTRIBUTES",
]


def map_strings(value: Any, fn: Callable[[str], str]) -> Any:
    """JSON data ``value`` with ``fn`` applied to every string, keys included."""
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, dict):
        return {fn(str(k)): map_strings(v, fn) for k, v in value.items()}
    if isinstance(value, list):
        return [map_strings(v, fn) for v in value]
    return value


def parse_json(
    text: str, label: str, error: type[Exception] = ValueError, *, surrogates: bool = True
) -> Any:
    """``json.loads(text)`` (a leading UTF-8 BOM ignored); ``error("LABEL ...")`` (one line,
    naming where, quoting nothing of the text) when it is not valid JSON, is nested too
    deeply to read, holds a number too long to convert, or (``surrogates=False``) holds a
    lone surrogate escape such as ``"\\ud800"``, which no UTF-8 text can carry."""
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{label} is not valid JSON (line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise error(f"{label} is nested too deeply to read") from None
    except ValueError:  # int() of a number past sys.get_int_max_str_digits()
        where = _where(text, _long_numbers(text))
        raise error(f"{label} holds a number too long to read{where}") from None
    if not surrogates and _holds_surrogate(document):
        where = _where(text, _lone_surrogate_escapes(text))
        raise error(
            f"{label} holds a lone surrogate escape (\\ud800-\\udfff without its pair), "
            f"which is not text{where}"
        ) from None
    return document


_SURROGATE = re.compile("[\ud800-\udfff]")
#: A \\u escape of a surrogate that no escaping backslash precedes, and the pair it may be
#: part of (best effort: to say where, once the document is known to hold a lone one).
_SURROGATE_ESCAPE = re.compile(
    r"(?<!\\)(?:\\\\)*(\\u[dD][89abAB][0-9a-fA-F]{2}(\\u[dD][c-fC-F][0-9a-fA-F]{2})?"
    r"|\\u[dD][c-fC-F][0-9a-fA-F]{2})"
)


def _lone_surrogate_escapes(text: str) -> Iterator[int]:
    for match in _SURROGATE_ESCAPE.finditer(text):
        if match.group(2) is None:
            yield match.start(1)


def _long_numbers(text: str) -> Iterator[int]:
    limit = getattr(sys, "get_int_max_str_digits", lambda: 4300)() or 4300
    for match in re.finditer(rf"[0-9]{{{limit + 1},}}", text):
        yield match.start()


def _holds_surrogate(document: Any) -> bool:
    """Whether any string (key or value) of a parsed document holds a surrogate code point;
    iterative, whatever the depth."""
    stack = [document]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            if _SURROGATE.search(value):
                return True
        elif isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str) and _SURROGATE.search(key):
                    return True
                stack.append(item)
        elif isinstance(value, list):
            stack.extend(value)
    return False


def _where(text: str, offsets: Iterator[int]) -> str:
    """`` (line L, column C)`` of the first of ``offsets`` in ``text``, or nothing."""
    offset = next(offsets, None)
    if offset is None:
        return ""
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return f" (line {line}, column {column})"


def read_json_file(
    path: str | os.PathLike[str],
    label: str,
    error: type[Exception] = ValueError,
    *,
    surrogates: bool = True,
) -> Any:
    """The JSON document in the UTF-8 file at ``path`` (a leading BOM ignored), or one
    clear ``error`` naming ``label`` (never a traceback for a user's file)."""
    try:
        with open(path, "rb") as stream:
            data = stream.read()
    except OSError as exc:
        raise error(f"cannot read {label}: {exc.strerror}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise error(f"{label} is not valid UTF-8 (line {line})") from None
    return parse_json(text, label, error, surrogates=surrogates)


#: Exception attributes that carry text a careless wrapper forwards (httpx ``.request``,
#: ``json.JSONDecodeError.doc``, ``subprocess.CalledProcessError.cmd``/``.stderr``, ...).
TEXT_ATTRIBUTES = (
    "request",
    "response",
    "doc",
    "cmd",
    "stderr",
    "stdout",
    "output",
    "filename",
    "filename2",
    "url",
    "headers",
    "body",
    "reason",
    "text",
    "detail",
)
_MAX_DEPTH = 32


def safe_repr(obj: object) -> str:
    try:
        return repr(obj)
    except Exception as exc:  # noqa: BLE001 - a raising __repr__ must not break the capture
        return f"<{type(obj).__name__} object; repr raised {type(exc).__name__}>"


def to_jsonable(obj: Any, _seen: frozenset[int] = frozenset(), _depth: int = 0) -> Any:
    """A JSON-compatible copy of ``obj``, the way a gateway's encoder would write it.

    Never raises: a part that cannot be read (a raising property, ``__iter__``, ``items``
    or ``__str__``) becomes its safe repr, and only that part."""
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if id(obj) in _seen:
        return f"<cycle {type(obj).__name__}>"
    if _depth > _MAX_DEPTH:
        return f"<nested too deep: {type(obj).__name__}>"
    try:
        return _jsonable(obj, _seen | {id(obj)}, _depth + 1)
    except Exception:  # noqa: BLE001 - the capture must not crash on the app's objects
        return safe_repr(obj)


def _jsonable(obj: Any, seen: frozenset[int], nxt: int) -> Any:
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return bytes(obj).decode("utf-8", "backslashreplace")
    if isinstance(obj, Mapping):
        try:
            items = list(obj.items())
        except Exception:  # noqa: BLE001
            if not isinstance(obj, dict):
                raise
            items = list(dict.items(obj))
        return {_safe_str(k): to_jsonable(v, seen, nxt) for k, v in items}
    if isinstance(obj, (list, tuple, set, frozenset)):
        try:
            members = list(obj)
        except Exception:  # noqa: BLE001
            if not isinstance(obj, list):
                raise
            members = list.copy(obj)
        return [to_jsonable(v, seen, nxt) for v in members]
    if isinstance(obj, BaseException):
        return {
            "type": type(obj).__name__,
            "message": _safe_str(obj),
            "args": to_jsonable(exception_args(obj), seen, nxt),
        }
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {
            f.name: to_jsonable(_field(obj, f.name), seen, nxt) for f in dataclasses.fields(obj)
        }
    for method in ("model_dump", "dict", "to_dict", "_asdict"):  # pydantic v2/v1, attrs-ish
        try:
            dump = getattr(obj, method, None)
        except Exception:  # noqa: BLE001 - a __getattr__ that raises
            continue
        if callable(dump):
            try:
                return to_jsonable(dump(), seen, nxt)
            except Exception:  # noqa: BLE001
                break
    return safe_repr(obj)


def _field(obj: object, name: str) -> object:
    try:
        return getattr(obj, name, None)
    except Exception as exc:  # noqa: BLE001
        return f"<{name}: raised {type(exc).__name__}>"


def exception_args(exc: BaseException) -> tuple[Any, ...]:
    """``exc.args`` as ``BaseException`` stores them, even if a subclass overrides ``args``."""
    try:
        return BaseException.__dict__["args"].__get__(exc)  # type: ignore[no-any-return]
    except Exception:  # noqa: BLE001
        return ()


def _safe_str(obj: object) -> str:
    try:
        return str(obj)
    except Exception:  # noqa: BLE001
        return safe_repr(obj)


def child_path(path: str, key: str) -> str:
    """``path.key``, or ``path["odd key"]``; ``key`` alone at an empty root."""
    if key.isidentifier():
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def leaves(
    value: Any,
    path: str = "$",
    *,
    scalars: bool = True,
    child: Callable[[str, str], str] = child_path,
) -> Iterator[tuple[str, str]]:
    """``(json path, text)`` for every key and string leaf of a jsonable value (numbers
    too, as text, with ``scalars``); ``child`` names a key's path."""
    if isinstance(value, dict):
        for key, item in value.items():
            key = str(key)
            sub = child(path, key)
            yield f"{sub}<key>", key
            yield from leaves(item, sub, scalars=scalars, child=child)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from leaves(item, f"{path}[{i}]", scalars=scalars, child=child)
    elif isinstance(value, str):
        yield path, value
    elif scalars and value is not None and not isinstance(value, bool):
        yield path, str(value)


def exception_texts(exc: BaseException) -> Iterator[tuple[str, str]]:
    """``(field, text)``: the full traceback (cause/context chains, groups, notes), ``args``
    and text-carrying attributes of ``exc`` and of every exception chained to it."""
    try:
        formatted = "".join(traceback.format_exception(exc))
    except Exception:  # noqa: BLE001
        formatted = safe_repr(exc)
    yield "traceback", formatted
    for label, member in _chain(exc):
        yield f"{label}args", safe_repr(exception_args(member))
        for name in TEXT_ATTRIBUTES:
            try:
                value = getattr(member, name, None)
            except Exception:  # noqa: BLE001 - httpx raises on .request when unset
                continue
            if value is not None and not callable(value):
                yield f"{label}{name}", safe_repr(value) + "\n" + _safe_str(value)
        for i, note in enumerate(_attribute_list(member, "__notes__")):
            yield f"{label}__notes__[{i}]", _safe_str(note)


def _chain(exc: BaseException) -> Iterator[tuple[str, BaseException]]:
    stack: list[tuple[str, BaseException]] = [("", exc)]
    seen: set[int] = set()
    while stack:
        label, member = stack.pop()
        if id(member) in seen:
            continue
        seen.add(id(member))
        yield label, member
        # Pushed in reverse so that they come out in order: the cause before the context
        # (``raise ... from exc`` sets both to ``exc``, which Python prints as the cause),
        # then the members of a group.
        members = [
            (f"{label}__cause__.", member.__cause__),
            (f"{label}__context__.", member.__context__),
        ]
        members += [
            (f"{label}exceptions[{i}].", sub)
            for i, sub in enumerate(_attribute_list(member, "exceptions"))
        ]
        stack.extend(
            (name, sub) for name, sub in reversed(members) if isinstance(sub, BaseException)
        )


def _attribute_list(obj: object, name: str) -> list[Any]:
    """``list(obj.name)``, or ``[]`` when it is missing, not a list or cannot be read."""
    try:
        value = getattr(obj, name, None)
        return list(value) if isinstance(value, (list, tuple)) else []
    except Exception:  # noqa: BLE001
        return []
