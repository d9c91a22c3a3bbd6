"""Turn an exposed object into the texts an agent would see, with field paths.

A gateway serializes its tool response as JSON; the agent may also see its ``repr``. Both are
produced, and every string leaf is kept with its JSON path so that a finding names the field
(``$.error.detail``). Never raises: dataclasses, pydantic models, exceptions, bytes, cycles
and objects whose ``repr`` raises all have a fallback.
"""

from __future__ import annotations

import dataclasses
import json
import traceback
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["to_jsonable", "leaves", "safe_repr", "exception_texts", "TEXT_ATTRIBUTES"]

#: Exception attributes that carry text a careless wrapper forwards (httpx ``.request``,
#: ``json.JSONDecodeError.doc``, ``subprocess.CalledProcessError.cmd``/``.stderr``, ...).
TEXT_ATTRIBUTES = (
    "request", "response", "doc", "cmd", "stderr", "stdout", "output", "filename",
    "filename2", "url", "headers", "body", "reason", "text", "detail",
)
_MAX_DEPTH = 32


def safe_repr(obj: object) -> str:
    try:
        return repr(obj)
    except Exception as exc:  # noqa: BLE001 - a raising __repr__ must not break the capture
        return f"<{type(obj).__name__} object; repr raised {type(exc).__name__}>"


def to_jsonable(obj: Any, _seen: frozenset[int] = frozenset(), _depth: int = 0) -> Any:
    """A JSON-compatible copy of ``obj``, the way a gateway's encoder would write it."""
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if _depth > _MAX_DEPTH or id(obj) in _seen:
        return f"<cycle {type(obj).__name__}>"
    seen = _seen | {id(obj)}
    nxt = _depth + 1
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return bytes(obj).decode("utf-8", "backslashreplace")
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v, seen, nxt) for k, v in list(obj.items())}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [to_jsonable(v, seen, nxt) for v in list(obj)]
    if isinstance(obj, BaseException):
        return {
            "type": type(obj).__name__,
            "message": _safe_str(obj),
            "args": to_jsonable(obj.args, seen, nxt),
        }
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name, None), seen, nxt)
                for f in dataclasses.fields(obj)}
    for method in ("model_dump", "dict", "to_dict", "_asdict"):  # pydantic v2/v1, attrs-ish
        dump = getattr(obj, method, None)
        if callable(dump):
            try:
                return to_jsonable(dump(), seen, nxt)
            except Exception:  # noqa: BLE001
                break
    return safe_repr(obj)


def _safe_str(obj: object) -> str:
    try:
        return str(obj)
    except Exception:  # noqa: BLE001
        return safe_repr(obj)


def leaves(value: Any, path: str = "$") -> Iterator[tuple[str, str]]:
    """``(json path, text)`` for every key and string leaf of a jsonable value."""
    if isinstance(value, dict):
        for key, item in value.items():
            child = f"{path}.{key}" if key.isidentifier() else f"{path}[{json.dumps(key)}]"
            yield f"{child}<key>", key
            yield from leaves(item, child)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from leaves(item, f"{path}[{i}]")
    elif isinstance(value, str):
        yield path, value
    elif value is not None and not isinstance(value, bool):
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
        yield f"{label}args", safe_repr(member.args)
        for name in TEXT_ATTRIBUTES:
            try:
                value = getattr(member, name, None)
            except Exception:  # noqa: BLE001 - httpx raises on .request when unset
                continue
            if value is not None and not callable(value):
                yield f"{label}{name}", safe_repr(value) + "\n" + _safe_str(value)
        for i, note in enumerate(getattr(member, "__notes__", None) or ()):
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
        if member.__cause__ is not None:
            stack.append((f"{label}__cause__.", member.__cause__))
        if member.__context__ is not None:
            stack.append((f"{label}__context__.", member.__context__))
        for i, sub in enumerate(getattr(member, "exceptions", None) or ()):
            if isinstance(sub, BaseException):
                stack.append((f"{label}exceptions[{i}].", sub))
