"""``repr`` as leakcheck writes it: built-in containers by their members, each object once."""

from __future__ import annotations

import itertools

from .budget import MAX_DEPTH
from .text import bytes_of, class_attr, int_text, text_of, type_name

TYPE_CHECKING = False  # not typing's: its import was a twentieth of a scan's start-up
if TYPE_CHECKING:
    from typing import Any

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
            self._write(int_text(int.__int__(obj)))  # type: ignore[arg-type]  # an int
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
            container = _CONTAINER_BY_ID.get(id(class_attr(kind, "__repr__")))
            if container is None or depth > MAX_DEPTH:
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
            members = members_of(obj)
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


def members_of(obj: Any) -> list[Any]:
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
