"""JSON data: a walk over its strings, and a user's JSON file read with one-line errors."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Iterator

from .._lazy import lazy_compile
from .objects import key_text_of
from .text import text_of

TYPE_CHECKING = False  # not typing's: its import was a twentieth of a scan's start-up
if TYPE_CHECKING:
    from typing import Any


def map_strings(value: Any, fn: Callable[[str], str]) -> Any:
    """JSON data ``value`` with ``fn`` applied to every string, keys included."""
    if isinstance(value, str):
        return fn(text_of(value))
    if isinstance(value, dict):
        return {fn(key_text_of(k)): map_strings(v, fn) for k, v in dict.items(value)}
    if isinstance(value, list):
        return [map_strings(v, fn) for v in list.copy(value)]
    return value


def parse_json(
    text: str,
    label: str,
    error: type[Exception] = ValueError,
    *,
    surrogates: bool = True,
    unique_keys: bool = False,
) -> Any:
    """``json.loads(text)`` (a leading UTF-8 BOM ignored); ``error("LABEL ...")`` (one line,
    naming where, quoting nothing of the text) when it is not valid JSON, is nested too
    deeply to read, holds a number too long to convert, (``surrogates=False``) holds a
    lone surrogate escape such as ``"\\ud800"``, which no UTF-8 text can carry, or
    (``unique_keys``) an object that gives a key twice, of which JSON keeps the last."""
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        document = json.loads(text, object_pairs_hook=_unique if unique_keys else None)
    except _DuplicateKey:
        raise error(
            f"{label} has an object that gives the same key twice (only the last would count)"
        ) from None
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


class _DuplicateKey(ValueError):
    pass


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    document = dict(pairs)
    if len(document) != len(pairs):
        raise _DuplicateKey
    return document


_SURROGATE = lazy_compile("[\ud800-\udfff]")
#: A \\u escape of a surrogate that no escaping backslash precedes, and the pair it may be
#: part of (best effort: to say where, once the document is known to hold a lone one).
_SURROGATE_ESCAPE = lazy_compile(
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
