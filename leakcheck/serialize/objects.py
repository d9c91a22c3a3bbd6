"""An object as JSON, the way a gateway's encoder writes it, with each field's path."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Callable, Coroutine, Generator, Iterator, Mapping

from ..findings import cut_whole
from .budget import BUDGET_CHARS, INLINE_MAX, INT_TEXT_BITS, MAX_DEPTH, PATH_KEY_CHARS
from .reprs import members_of
from .text import (
    bytes_of,
    class_attr,
    exception_args,
    exception_message,
    int_text,
    safe_str,
    text_of,
    type_name,
)

TYPE_CHECKING = False  # not typing's: its import was a twentieth of a scan's start-up
if TYPE_CHECKING:
    from typing import Any

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
            if value.bit_length() > INT_TEXT_BITS:
                self._note(parent, segment, obj, "an int too large to write as decimal text")
                return int_text(value)
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
        if depth > MAX_DEPTH:
            self._note(parent, segment, obj, f"nested deeper than {MAX_DEPTH} levels")
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
            members = members_of(obj)
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
                key = key_text_of(key_obj)
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
        elif not why and class_attr(kind, "__repr__") is object.__repr__:
            own_str = class_attr(kind, "__str__")
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


def key_text_of(key: object) -> str:
    """A mapping key as JSON text would hold it, read through its base type."""
    kind = type(key)
    if kind is str:
        return key  # type: ignore[return-value]  # kind is str
    if issubclass(kind, str):
        return str.__str__(key)
    if key is None or kind is bool:
        return str(key)
    if issubclass(kind, int):
        return int_text(int.__int__(key))  # type: ignore[arg-type]  # an int
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
    if getattr(kind, "__dataclass_fields__", None) is None:
        return None
    # only a dataclass gets here, and its module has imported dataclasses already (the
    # scan's start-up does not: leakcheck's own values are ``_values.Value``)
    import dataclasses

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


def child_path(path: str, key: str) -> str:
    """``path.key``, or ``path["odd key"]``; ``key`` alone at an empty root. A very long key
    is shortened."""
    key = text_of(key) if isinstance(key, str) else safe_str(key)
    if len(key) > PATH_KEY_CHARS:
        key = f"{cut_whole(key, PATH_KEY_CHARS)}...({len(key):,} chars)"
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
            key_text = key_text_of(key)
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
            yield path, int_text(int.__int__(value)), node
        elif issubclass(kind, float):
            yield path, float.__repr__(value), node
        else:
            yield path, safe_str(value), node
