"""An exception's texts: its traceback, its args and the attributes that carry text."""

from __future__ import annotations

import traceback
from collections.abc import Iterator
from typing import Any

from .budget import TEXT_ATTRIBUTES
from .reprs import members_of
from .text import exception_args, repr_and_str, safe_repr, safe_str


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
            return members_of(value)
        return []
    except Exception:  # noqa: BLE001
        return []
