"""Turn an exposed object into the texts an agent would see, with field paths.

A gateway serializes its tool response as JSON; the agent may also see its ``repr``. Both are
produced, and every string leaf is kept with its JSON path so that a finding names the field
(``$.error.detail``). Never raises: dataclasses, pydantic models, exceptions, bytes, cycles
and objects whose ``repr`` raises all have a fallback, and the text of a ``str`` (``bytes``,
``int``...) subclass is read through the base type, whatever its methods say. Each object is
serialized once (a shared sub-object is written at its first path), within a budget.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import re
import sys
import traceback
from collections.abc import AsyncIterator, Callable, Coroutine, Generator, Iterator, Mapping
from typing import Any

__all__ = [
    "map_strings",
    "parse_json",
    "read_json_file",
    "to_jsonable",
    "ReprWriter",
    "Serialized",
    "leaves",
    "safe_repr",
    "safe_str",
    "text_of",
    "bytes_of",
    "type_name",
    "exception_message",
    "exception_texts",
    "exception_args",
    "repr_and_str",
    "TEXT_ATTRIBUTES",
    "INLINE_MAX",
    "BUDGET_CHARS",
    "FIELD_BUDGET",
]


def map_strings(value: Any, fn: Callable[[str], str]) -> Any:
    """JSON data ``value`` with ``fn`` applied to every string, keys included."""
    if isinstance(value, str):
        return fn(text_of(value))
    if isinstance(value, dict):
        return {fn(_key_text(k)): map_strings(v, fn) for k, v in dict.items(value)}
    if isinstance(value, list):
        return [map_strings(v, fn) for v in list.copy(value)]
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

#: A string (or bytes) this long or longer is searched where it is, once, as its own text:
#: never copied into the whole-JSON or repr texts, where a placeholder stands for it.
INLINE_MAX = 64 * 1024
#: What one exposed object may produce: its whole-JSON text and its repr are each written
#: up to this many characters (8 MiB; strings of INLINE_MAX and more are not counted: they
#: are searched where they are). Whatever lies beyond is reported "not inspected: over
#: budget", never dropped silently.
BUDGET_CHARS = 8 * 1024 * 1024
#: Fields (string leaves and keys) of one exposed object reported one by one, with their
#: path; those beyond are still searched, in the whole-JSON text.
FIELD_BUDGET = 100_000
#: Ints with more bits than this cannot be written as decimal text (``sys.int_info``'s
#: ``default_max_str_digits``): such an int is reported as not inspected.
_INT_TEXT_BITS = 10_000
#: Keys longer than this are shortened in the paths that name them (the key itself is
#: still a field of its own).
_PATH_KEY_CHARS = 200


# --- text, read through the base types ------------------------------------------------------
#
# An application's object may be a ``str`` subclass whose ``encode``, ``__str__``,
# ``__len__``, ``__hash__``, ``__eq__``, ``__iter__`` or ``__repr__`` raises or lies. Its
# characters are read through ``str`` itself (``str.__str__(value)``: a plain copy), never
# through its own methods; ``bytes``, ``int`` and ``float`` subclasses, the same way. Types
# are told apart by ``type(obj)``, which no object can fake (``isinstance`` asks
# ``obj.__class__``, which a mock or a proxy can set to ``str``). mypy narrows ``obj`` by
# neither ``kind = type(obj)`` nor ``issubclass(kind, ...)``: the ``type: ignore`` comments
# that follow such a test say which type it established.


def text_of(value: str) -> str:
    """The characters of ``value`` (a ``str`` or a subclass) as a plain ``str``, whatever
    the subclass overrides."""
    return value if type(value) is str else str.__str__(value)


def bytes_of(value: bytes | bytearray | memoryview) -> bytes:
    """The bytes of ``value`` as plain ``bytes``, whatever a subclass overrides."""
    kind = type(value)
    if kind is bytes:
        return value  # type: ignore[return-value]  # kind is bytes
    if issubclass(kind, bytes):
        return bytes.__getitem__(value, slice(None))  # type: ignore[index]  # a bytes subclass
    if issubclass(kind, bytearray):
        return bytes(bytearray.__getitem__(value, slice(None)))  # type: ignore[index]  # bytearray
    return memoryview(value).tobytes()


def type_name(obj: object) -> str:
    """The name of ``obj``'s type, read past any metaclass property."""
    try:
        return text_of(type.__dict__["__name__"].__get__(type(obj)))
    except Exception:  # noqa: BLE001
        return "object"


def _class_attr(kind: type, name: str) -> Any:
    """``kind.name`` (``None`` if reading it raises: a hostile metaclass)."""
    try:
        return getattr(kind, name, None)
    except Exception:  # noqa: BLE001
        return None


def safe_str(obj: object) -> str:
    """``str(obj)`` as a plain ``str``, never raising: a ``str`` subclass by its characters,
    an exception by :func:`exception_message`, anything whose ``__str__`` raises by its
    safe repr."""
    kind = type(obj)
    if kind is str:
        return obj  # type: ignore[return-value]  # kind is str
    if issubclass(kind, str):
        return str.__str__(obj)
    if issubclass(kind, BaseException):
        return exception_message(obj)  # type: ignore[arg-type]  # an exception
    try:
        return text_of(str(obj))
    except Exception:  # noqa: BLE001 - a raising __str__ must not break the capture
        return safe_repr(obj)


def safe_repr(obj: object) -> str:
    """``repr(obj)`` as a plain ``str``, never raising. Built-in containers are written by
    leakcheck (a ``str`` subclass in a list is written by its characters, a shared
    sub-object once, then as ``<same dict as earlier>``); any other object by its own
    ``repr``, or ``<Foo object; repr raised E>``."""
    return ReprWriter().text(obj)


def exception_message(exc: BaseException) -> str:
    """``str(exc)``, never raising: an exception class's own ``__str__`` when it has one and
    it works, else what ``BaseException.__str__`` makes of the args, read through the base
    types (one arg: its text; several: the repr of the tuple)."""
    if _class_attr(type(exc), "__str__") is not BaseException.__str__:
        try:
            return text_of(str(exc))
        except Exception:  # noqa: BLE001 - e.g. OSError's __str__ on a hostile filename
            pass
    args = exception_args(exc)
    if not args:
        return ""
    if len(args) == 1:
        return safe_str(args[0])
    return safe_repr(args)


def _int_text(value: int) -> str:
    """Decimal text of an int (a plain ``int``), or a placeholder when it is too large."""
    if value.bit_length() > _INT_TEXT_BITS:
        return f"<int of {value.bit_length():,} bits>"
    return int.__repr__(value)


def repr_and_str(value: object) -> str | bytes:
    """The texts of an attribute or a log record's ``extra`` value: its repr, then its
    str. A long string (or bytes) is its own text, once, not copied twice more."""
    kind = type(value)
    if issubclass(kind, str) and str.__len__(value) >= INLINE_MAX:  # type: ignore[arg-type]  # str
        return text_of(value)  # type: ignore[arg-type]  # a str
    if issubclass(kind, (bytes, bytearray, memoryview)):
        try:
            data = bytes_of(value)  # type: ignore[arg-type]  # bytes-like
        except Exception:  # noqa: BLE001 - a released memoryview
            return safe_repr(value)
        if len(data) >= INLINE_MAX:
            return data
    return safe_repr(value) + "\n" + safe_str(value)


# --- repr -------------------------------------------------------------------------------------

_CONTAINER_REPRS = (
    (dict.__repr__, "dict"),
    (list.__repr__, "list"),
    (tuple.__repr__, "tuple"),
    (set.__repr__, "set"),
    (frozenset.__repr__, "frozenset"),
)
_CONTAINER_BY_ID = {id(fn): name for fn, name in _CONTAINER_REPRS}  # alive: ids stay theirs
_OPEN_CLOSE = {
    "dict": ("{", "}"),
    "list": ("[", "]"),
    "tuple": ("(", ")"),
    "set": ("{", "}"),
    "frozenset": ("{", "}"),
}


class ReprWriter:
    """The repr of an object, written the way ``repr`` writes built-in containers, but with
    every member read through its base type, each shared sub-object written once (its
    later places say ``<same dict as earlier>``; a cycle, ``{...}`` as Python does) and,
    given a ``budget``, cut at that many characters (``cut`` says so). Given
    ``inline_max``, a string that long or longer is left out (a placeholder stands for
    it: it is searched as its own field), and so is an object's own repr (kept in
    ``large``, searched on its own)."""

    def __init__(self, budget: int | None = None, inline_max: int | None = None) -> None:
        self.budget = budget
        self.inline_max = inline_max
        self.parts: list[str] = []
        self.size = 0
        self.cut = False
        self.large: list[str] = []
        self._active: set[int] = set()
        self._done: dict[int, object] = {}  # id -> the object (kept alive: ids stay unique)

    def text(self, obj: object) -> str:
        self._write_obj(obj, 0)
        return "".join(self.parts)

    def _write(self, piece: str) -> None:
        if self.cut:
            return
        if self.budget is not None and self.size + len(piece) > self.budget:
            self.parts.append(piece[: max(self.budget - self.size, 0)])
            self.parts.append(" <repr cut here: over budget>")
            self.size = self.budget
            self.cut = True
            return
        self.parts.append(piece)
        self.size += len(piece)

    def _plain(self, obj: Any) -> bool:
        if self.budget is not None and self.size > self.budget // 2:
            return False  # near the budget: written piece by piece, to be cut exactly
        return _plain_members(obj, self.inline_max)

    def _is_long(self, size: int) -> bool:
        return self.inline_max is not None and size >= self.inline_max

    def _write_obj(self, obj: object, depth: int) -> None:
        if self.cut:
            return
        kind = type(obj)
        if obj is None or kind is bool:
            self._write(repr(obj))
        elif issubclass(kind, str):
            size = str.__len__(obj)  # type: ignore[arg-type]  # a str
            if self._is_long(size):
                self._write(f"<text of {size:,} characters, searched as its own field>")
            else:
                self._write(str.__repr__(obj))
        elif issubclass(kind, int):
            self._write(_int_text(int.__int__(obj)))  # type: ignore[arg-type]  # an int
        elif issubclass(kind, float):
            self._write(float.__repr__(obj))
        elif issubclass(kind, (bytes, bytearray)):
            data = bytes_of(obj)  # type: ignore[arg-type]  # bytes or bytearray
            if self._is_long(len(data)):
                self._write(f"<{len(data):,} bytes, searched as their own field>")
            elif issubclass(kind, bytearray):
                self._write(f"bytearray({bytes.__repr__(data)})")
            else:
                self._write(bytes.__repr__(data))
        else:
            # looked up by identity (id): the attribute may be anything, __hash__ included
            container = _CONTAINER_BY_ID.get(id(_class_attr(kind, "__repr__")))
            if container is None or depth > _MAX_DEPTH:
                self._write_own_repr(obj)
            else:
                self._write_container(obj, container, depth)

    def _write_own_repr(self, obj: object) -> None:
        try:
            text = text_of(repr(obj))
        except Exception as exc:  # noqa: BLE001 - a raising __repr__ must not break the capture
            text = f"<{type_name(obj)} object; repr raised {type_name(exc)}>"
        if self._is_long(len(text)):
            self.large.append(text)
            self._write(f"<repr of {type_name(obj)}: {len(text):,} characters, searched apart>")
        else:
            self._write(text)

    def _write_container(self, obj: Any, container: str, depth: int) -> None:
        key = id(obj)
        opening, closing = _OPEN_CLOSE[container]
        if key in self._active:  # a cycle: as Python writes it
            self._write(f"{opening}...{closing}")
            return
        if key in self._done:
            self._write(f"<same {type_name(obj)} as earlier>")
            return
        self._done[key] = obj
        if self._plain(obj):  # Python's own repr: it can call no code of the app's
            try:
                self._write(repr(obj))
                return
            except ValueError:  # an int too long to write: written member by member
                pass
        self._active.add(key)
        try:
            if container == "dict":
                pairs = list(dict.items(obj))  # a snapshot: a member's repr may mutate it
                self._write("{")
                for i, (k, v) in enumerate(pairs):
                    if self.cut:
                        return
                    self._write(", " if i else "")
                    self._write_obj(k, depth + 1)
                    self._write(": ")
                    self._write_obj(v, depth + 1)
                self._write("}")
                return
            members = _members(obj)
            name = type_name(obj)
            if container in ("set", "frozenset"):
                plain = type(obj) is set
                if not members:
                    self._write(f"{name}()")
                    return
                self._write("{" if plain else f"{name}({{")
                closing = "}" if plain else "})"
            else:
                self._write(opening)
            for i, member in enumerate(members):
                if self.cut:
                    return
                self._write(", " if i else "")
                self._write_obj(member, depth + 1)
            if container == "tuple" and len(members) == 1:
                self._write(",")
            self._write(closing)
        finally:
            self._active.discard(key)


_PLAIN = frozenset({str, int, float, bool, type(None)})


def _plain_members(obj: Any, inline_max: int | None, levels: int = 2) -> bool:
    """Whether ``obj`` is a built-in container of exactly its type holding only plain
    ``str``, ``int``, ``float``, ``bool`` and ``None`` (no string of ``inline_max`` or
    more), or such containers (``levels`` deep: a log record's args, say): ``repr`` then
    writes it without calling anything of the app's, and shallow, so fast."""
    kind = type(obj)
    if kind is dict:
        members: Any = itertools.chain(dict.keys(obj), dict.values(obj))
    elif kind in (list, tuple, set, frozenset):
        members = obj
    else:
        return False
    for member in members:
        member_kind = type(member)
        if member_kind not in _PLAIN:
            if levels <= 1 or not _plain_members(member, inline_max, levels - 1):
                return False
        elif inline_max is not None and member_kind is str and len(member) >= inline_max:
            return False
    return True


def _members(obj: Any) -> list[Any]:
    """The members of a list, tuple, set or frozenset (or subclass), read through the base
    type (never the subclass's ``__iter__``)."""
    kind = type(obj)
    if issubclass(kind, list):
        return list.copy(obj)
    if issubclass(kind, tuple):
        return list(tuple.__getitem__(obj, slice(None)))
    if issubclass(kind, set):
        return list(set.__iter__(obj))
    return list(frozenset.__iter__(obj))


# --- JSON ------------------------------------------------------------------------------------


class _SameAs(str):
    """Written where a sub-object shown earlier appears again: its text names the first
    path. ``leaves`` skips it (the sub-object's fields are named at that first path)."""

    __slots__ = ()


class _Long(str):
    """Stands for a long string (or bytes) in the JSON value: the JSON text holds the
    placeholder, ``leaves`` yields the ``text`` itself."""

    text: str | bytes
    node: _Node | None


def _long(placeholder: str, text: str | bytes, node: _Node | None) -> _Long:
    marker = _Long(placeholder)
    marker.text = text
    marker.node = node
    return marker


class _Node:
    """One object of the graph being serialized (a container, a model, bytes...)."""

    __slots__ = ("obj", "parent", "segment", "active", "parents", "alias", "count", "path")

    def __init__(self, obj: object, parent: _Node | None, segment: str | int | None) -> None:
        self.obj = obj  # kept alive: ids in the memo stay unique while we walk
        self.parent = parent
        self.segment = segment
        self.active = True
        #: every place that refers to it (the first included): its parent node, or None
        self.parents: list[_Node | None] = [parent]
        #: the first place that refers to it again, as (parent, segment)
        self.alias: tuple[_Node | None, str | int | None] | None = None
        self.count = 1  # the number of paths it can be reached by
        self.path: str | None = None


class Serialized:
    """An object serialized the way a gateway's JSON encoder would write it, each object
    once.

    ``value`` is the JSON-shaped copy: a sub-object seen again (a shared one, not a cycle)
    is written once, at its first path, and referred to from its other places by a
    ``<same dict as $.a>`` string; a cycle is ``<cycle dict>``. Nothing here calls a
    subclass's methods to read a ``str``, ``bytes``, ``int``, ``float``, ``list``,
    ``tuple``, ``set`` or ``dict``. ``not_inspected`` lists what could not be read
    (an iterator, an object whose repr shows nothing of it, what lies beyond the budget).

    With ``long_texts``, a string of ``INLINE_MAX`` or more stands in ``value`` as a
    placeholder, and ``fields`` yields the text itself; with ``budget``, no more than about
    that many characters of JSON are written.
    """

    def __init__(self, obj: object, *, long_texts: bool = False, budget: int | None = None) -> None:
        self._long_texts = long_texts
        self._budget = budget
        self._size = 0
        self._memo: dict[int, _Node] = {}
        self._order: list[_Node] = []  # post-order: reversed, parents come first
        self._outputs: dict[int, _Node] = {}  # id(dict or list written) -> its node
        self._notes: dict[tuple[str, str], list[Any]] = {}  # (type, why) -> [path, count]
        self._skipped = 0
        self._skipped_from = ""
        self.value = self._value(obj, None, None, 0)
        for node in reversed(self._order):
            node.count = sum(1 if p is None else p.count for p in node.parents)

    # --- results ---------------------------------------------------------------------------

    def fields(self) -> Iterator[tuple[str, str | bytes, str]]:
        """``(path, text, note)`` of every key and string leaf (numbers too), each object's
        once; ``note`` says at how many other paths a shared sub-object's field also is."""
        for path, text, node in _leaves(self.value, "$", None, self._outputs, True, child_path):
            yield path, text, self._also_at(node, path)

    def json(self) -> str:
        """The whole JSON text (long strings as placeholders when ``long_texts``)."""
        return json.dumps(self.value, ensure_ascii=False)

    @property
    def not_inspected(self) -> list[tuple[str, str, str]]:
        """``(path, type name, why)`` of each kind of part that could not be inspected."""
        notes = []
        for (kind, why), (path, count) in self._notes.items():
            more = f" (and {count - 1:,} more like it)" if count > 1 else ""
            notes.append((path, kind, why + more))
        if self._skipped:
            notes.append(
                (
                    self._skipped_from,
                    "over budget",
                    f"not inspected: {self._skipped:,} part(s) from here on, beyond the "
                    f"budget of {self._budget:,} characters of JSON per exposed object",
                )
            )
        return notes

    # --- paths and notes -------------------------------------------------------------------

    def _path(self, parent: _Node | None, segment: str | int | None) -> str:
        base = "$" if parent is None else self._node_path(parent)
        if segment is None:
            return base
        if isinstance(segment, int):
            return f"{base}[{segment}]"
        return child_path(base, segment)

    def _node_path(self, node: _Node) -> str:
        if node.path is None:
            node.path = self._path(node.parent, node.segment)
        return node.path

    def _also_at(self, node: _Node | None, path: str) -> str:
        if node is None or node.count <= 1:
            return ""
        example = ""
        holder: _Node | None = node
        while holder is not None and holder.alias is None:
            holder = holder.parent
        if holder is not None and holder.alias is not None:
            example = self._path(*holder.alias) + path[len(self._node_path(holder)) :]
        others = node.count - 1
        return f"also at {others:,} other path(s)" + (f", e.g. {example}" if example else "")

    def _note(self, parent: _Node | None, segment: str | int | None, obj: object, why: str) -> None:
        entry = self._notes.get((type_name(obj), why))
        if entry is None:
            self._notes[(type_name(obj), why)] = [self._path(parent, segment), 1]
        else:
            entry[1] += 1

    # --- budget ---------------------------------------------------------------------------

    def _charge(self, size: int) -> None:
        self._size += size

    def _over(self) -> bool:
        return self._budget is not None and self._size > self._budget

    def _skip(self, parent: _Node | None, segment: str | int | None, count: int = 1) -> str:
        if not self._skipped:
            self._skipped_from = self._path(parent, segment)
        self._skipped += count
        return "<not inspected: over budget>"

    # --- the walk ---------------------------------------------------------------------------

    def _value(self, obj: Any, parent: _Node | None, segment: str | int | None, depth: int) -> Any:
        kind = type(obj)
        if obj is None or kind is bool:
            self._charge(5)
            return obj
        if issubclass(kind, str):
            size = str.__len__(obj)
            if not (self._long_texts and size >= INLINE_MAX):
                # a long one is the app's own object, referred to, not copied: not counted
                self._charge(size + 2 if size < INLINE_MAX else 64)
                return text_of(obj)
        elif issubclass(kind, int):
            value = int.__int__(obj)
            if value.bit_length() > _INT_TEXT_BITS:
                self._note(parent, segment, obj, "an int too large to write as decimal text")
                return _int_text(value)
            self._charge(8)
            return value
        elif issubclass(kind, float):
            self._charge(8)
            return float.__float__(obj)
        elif issubclass(kind, (bytes, bytearray, memoryview)):
            try:
                data = bytes_of(obj)
            except Exception:  # noqa: BLE001 - a released memoryview: its repr, below
                data = None
            if data is not None and not (self._long_texts and len(data) >= INLINE_MAX):
                self._charge(len(data) + 2)
                return data.decode("utf-8", "backslashreplace")
        node = self._memo.get(id(obj))
        if node is not None:
            return self._again(node, parent, segment)
        if depth > _MAX_DEPTH:
            self._note(parent, segment, obj, f"nested deeper than {_MAX_DEPTH} levels")
            return f"<nested too deep: {type_name(obj)}>"
        if self._over():
            return self._skip(parent, segment)
        node = _Node(obj, parent, segment)
        self._memo[id(obj)] = node
        try:
            out = self._convert(obj, node, depth + 1)
        except Exception as exc:  # noqa: BLE001 - the capture must not crash on the app's objects
            out = self._opaque(obj, node, raised=exc)
        finally:
            node.active = False
            self._order.append(node)
        if type(out) in (dict, list):
            self._outputs.setdefault(id(out), node)
        return out

    def _again(self, node: _Node, parent: _Node | None, segment: str | int | None) -> str:
        name = type_name(node.obj)
        if node.active:
            self._charge(len(name) + 10)
            return f"<cycle {name}>"
        node.parents.append(parent)
        if node.alias is None:
            node.alias = (parent, segment)
        marker = _SameAs(f"<same {name} as {self._node_path(node)}>")
        self._charge(len(marker) + 2)
        return marker

    def _convert(self, obj: Any, node: _Node, depth: int) -> Any:
        kind = type(obj)
        if issubclass(kind, str):  # a long one (long_texts)
            self._charge(64)
            size = str.__len__(obj)
            return _long(f"<text of {size:,} characters>", text_of(obj), node)
        if issubclass(kind, (bytes, bytearray, memoryview)):  # long ones (long_texts)
            data = bytes_of(obj)
            self._charge(64)
            return _long(f"<{len(data):,} bytes>", data, node)
        if _is_mock(kind):  # a test double: its attributes are made on demand, forever
            return self._opaque(obj, node)
        if issubclass(kind, dict) or issubclass(kind, Mapping):
            return self._mapping(obj, node, depth)
        if issubclass(kind, (list, tuple, set, frozenset)):
            members = _members(obj)
            out = []
            for i, member in enumerate(members):
                if self._over():  # said in the value too: a consumer sees where it stops
                    out.append(self._skip(node, i, len(members) - i))
                    break
                self._charge(2)
                out.append(self._value(member, node, i, depth))
            self._charge(2)
            return out
        if issubclass(kind, BaseException):
            self._charge(32)
            return {
                "type": type_name(obj),
                "message": self._value(exception_message(obj), node, "message", depth),
                "args": self._value(exception_args(obj), node, "args", depth),
            }
        fields = _dataclass_fields(kind)
        if fields is not None:
            record: dict[str, Any] = {}
            for name in fields:
                self._charge(len(name) + 4)
                record[name] = self._value(_field(obj, name), node, name, depth)
            return record
        for method in ("model_dump", "dict", "to_dict", "_asdict"):  # pydantic v2/v1, attrs-ish
            try:
                dump = getattr(obj, method, None)
            except Exception:  # noqa: BLE001 - a __getattr__ that raises
                continue
            if callable(dump):
                try:
                    dumped = dump()
                except Exception:  # noqa: BLE001
                    break
                return self._value(dumped, node, None, depth)
        return self._opaque(obj, node)

    def _mapping(self, obj: Any, node: _Node, depth: int) -> dict[str, Any]:
        if issubclass(type(obj), dict):
            pairs: Any = list(dict.items(obj))  # its own items, not an override's
        else:
            pairs = obj.items()
        out: dict[str, Any] = {}
        try:
            for i, pair in enumerate(pairs):
                if self._over():
                    remaining = len(pairs) - i if isinstance(pairs, list) else 1
                    marker = "<not inspected>"
                    while marker in out:
                        marker += "'"
                    out[marker] = self._skip(node, None, remaining)
                    break
                key_obj, value = pair
                key = _key_text(key_obj)
                if key in out:  # 1 and "1": both written, as an encoder would
                    n = 2
                    while f"{key} <#{n}>" in out:
                        n += 1
                    key = f"{key} <#{n}>"
                self._charge(len(key) + 4)
                out[key] = self._value(value, node, key, depth)
        except Exception as exc:  # noqa: BLE001 - an items() that raises part of the way
            self._note(node.parent, node.segment, obj, f"its items raised {type_name(exc)}")
        self._charge(2)
        return out

    def _opaque(self, obj: Any, node: _Node, raised: BaseException | None = None) -> Any:
        """An object with no JSON form: its repr (its str, when only that is its own), and
        a note when that shows nothing of it."""
        kind = type(obj)
        why = ""
        try:
            text = text_of(repr(obj))
        except Exception as exc:  # noqa: BLE001
            text = f"<{type_name(obj)} object; repr raised {type_name(exc)}>"
            why = f"no JSON form, and its repr raised {type_name(exc)}"
        if _is_iterator(kind):
            why = "an iterator: its items are not read (reading would consume them)"
        elif not why and _class_attr(kind, "__repr__") is object.__repr__:
            own_str = _class_attr(kind, "__str__")
            if own_str is not object.__str__ and own_str is not None:
                try:
                    text = text_of(str(obj))
                except Exception:  # noqa: BLE001
                    why = "no JSON form, and its repr names only its type"
            else:
                why = "no JSON form, and its repr names only its type"
        if why:
            if raised is not None:
                why += f" (serializing it raised {type_name(raised)})"
            self._note(node.parent, node.segment, obj, why)
        if self._long_texts and len(text) >= INLINE_MAX:
            self._charge(64)
            return _long(f"<repr of {len(text):,} characters>", text, node)
        self._charge(len(text) + 2)
        return text


def _key_text(key: object) -> str:
    """A mapping key as JSON text would hold it, read through its base type."""
    kind = type(key)
    if kind is str:
        return key  # type: ignore[return-value]  # kind is str
    if issubclass(kind, str):
        return str.__str__(key)
    if key is None or kind is bool:
        return str(key)
    if issubclass(kind, int):
        return _int_text(int.__int__(key))  # type: ignore[arg-type]  # an int
    if issubclass(kind, float):
        return float.__repr__(key)
    return safe_str(key)


def _is_mock(kind: type) -> bool:
    mock = sys.modules.get("unittest.mock")
    return mock is not None and issubclass(kind, mock.NonCallableMock)


def _is_iterator(kind: type) -> bool:
    try:
        return issubclass(kind, (Iterator, AsyncIterator, Coroutine, Generator))
    except Exception:  # noqa: BLE001
        return False


def _dataclass_fields(kind: type) -> list[str] | None:
    """The field names of a dataclass type, or None."""
    if not dataclasses.is_dataclass(kind):
        return None
    return [f.name for f in dataclasses.fields(kind)]


def to_jsonable(obj: Any) -> Any:
    """A JSON-compatible copy of ``obj``, the way a gateway's encoder would write it, each
    object once (see :class:`Serialized`).

    Never raises: a part that cannot be read (a raising property, ``items`` or ``__str__``)
    becomes its safe repr, and only that part. Within ``BUDGET_CHARS`` (an ``items()`` that
    never ends ends there)."""
    return Serialized(obj, budget=BUDGET_CHARS).value


def _field(obj: object, name: str) -> object:
    try:
        return getattr(obj, name, None)
    except Exception as exc:  # noqa: BLE001
        return f"<{name}: raised {type_name(exc)}>"


def exception_args(exc: BaseException) -> tuple[Any, ...]:
    """``exc.args`` as ``BaseException`` stores them, even if a subclass overrides ``args``."""
    try:
        return BaseException.__dict__["args"].__get__(exc)
    except Exception:  # noqa: BLE001
        return ()


def child_path(path: str, key: str) -> str:
    """``path.key``, or ``path["odd key"]``; ``key`` alone at an empty root. A very long key
    is shortened."""
    key = text_of(key) if isinstance(key, str) else safe_str(key)
    if len(key) > _PATH_KEY_CHARS:
        key = f"{key[:_PATH_KEY_CHARS]}...({len(key):,} chars)"
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
    too, as text, with ``scalars``); ``child`` names a key's path. A sub-object written
    earlier (``<same dict as ...>``) is not walked again."""
    for leaf_path, text, _node in _leaves(value, path, None, {}, scalars, child):
        yield leaf_path, text  # type: ignore[misc]  # bytes only under Serialized(long_texts=True)


def _leaves(
    value: Any,
    path: str,
    node: _Node | None,
    outputs: dict[int, _Node],
    scalars: bool,
    child: Callable[[str, str], str],
) -> Iterator[tuple[str, str | bytes, _Node | None]]:
    kind = type(value)
    if issubclass(kind, dict):
        node = outputs.get(id(value), node)
        for key, item in list(dict.items(value)):
            key_text = _key_text(key)
            sub = child(path, key_text)
            yield f"{sub}<key>", key_text, node
            yield from _leaves(item, sub, node, outputs, scalars, child)
    elif issubclass(kind, list):
        node = outputs.get(id(value), node)
        for i, item in enumerate(list.copy(value)):
            yield from _leaves(item, f"{path}[{i}]", node, outputs, scalars, child)
    elif kind is _SameAs:
        return
    elif kind is _Long:
        yield path, value.text, value.node or node
    elif issubclass(kind, str):
        yield path, text_of(value), node
    elif scalars and value is not None and kind is not bool:
        if issubclass(kind, int):
            yield path, _int_text(int.__int__(value)), node
        elif issubclass(kind, float):
            yield path, float.__repr__(value), node
        else:
            yield path, safe_str(value), node


def exception_texts(exc: BaseException) -> Iterator[tuple[str, str | bytes]]:
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
                yield f"{label}{name}", repr_and_str(value)
        for i, note in enumerate(_attribute_list(member, "__notes__")):
            yield f"{label}__notes__[{i}]", safe_str(note)


_CAUSE = BaseException.__dict__["__cause__"]
_CONTEXT = BaseException.__dict__["__context__"]


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
        # then the members of a group. Read through BaseException's own slots.
        members = [
            (f"{label}__cause__.", _CAUSE.__get__(member)),
            (f"{label}__context__.", _CONTEXT.__get__(member)),
        ]
        members += [
            (f"{label}exceptions[{i}].", sub)
            for i, sub in enumerate(_attribute_list(member, "exceptions"))
        ]
        stack.extend(
            (name, sub) for name, sub in reversed(members) if issubclass(type(sub), BaseException)
        )


def _attribute_list(obj: object, name: str) -> list[Any]:
    """``list(obj.name)``, or ``[]`` when it is missing, not a list or cannot be read."""
    try:
        value = getattr(obj, name, None)
        if issubclass(type(value), (list, tuple)):
            return _members(value)
        return []
    except Exception:  # noqa: BLE001
        return []
