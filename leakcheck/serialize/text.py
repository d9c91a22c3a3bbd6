"""Text read through the base types, whatever a subclass's methods say."""

from __future__ import annotations

from .budget import INLINE_MAX, INT_TEXT_BITS

TYPE_CHECKING = False  # not typing's: its import was a twentieth of a scan's start-up
if TYPE_CHECKING:
    from typing import Any

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


def class_attr(kind: type, name: str) -> Any:
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
    if type(obj) is tuple and all(map(_plain_scalar, obj)):
        return tuple.__repr__(obj)  # (a log record's args: as the writer would write it)
    writer = _WRITER[0]
    if writer is None:  # imported on first use: reprs reads text through this module
        from .reprs import ReprWriter

        writer = _WRITER[0] = ReprWriter
    return writer().text(obj)


_WRITER: list[Any] = [None]
_PLAIN_SCALARS = frozenset({str, float, bool, type(None)})


def _plain_scalar(value: Any) -> bool:
    """Whether ``repr`` writes ``value`` exactly as ``ReprWriter`` does: a plain ``str``,
    ``float``, ``bool``, ``None``, or an ``int`` short enough to be written in full."""
    kind = type(value)
    return kind in _PLAIN_SCALARS or (kind is int and value.bit_length() <= 64)


def exception_message(exc: BaseException) -> str:
    """``str(exc)``, never raising: an exception class's own ``__str__`` when it has one and
    it works, else what ``BaseException.__str__`` makes of the args, read through the base
    types (one arg: its text; several: the repr of the tuple)."""
    if class_attr(type(exc), "__str__") is not BaseException.__str__:
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


def int_text(value: int) -> str:
    """Decimal text of an int (a plain ``int``), or a placeholder when it is too large."""
    if value.bit_length() > INT_TEXT_BITS:
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


def exception_args(exc: BaseException) -> tuple[Any, ...]:
    """``exc.args`` as ``BaseException`` stores them, even if a subclass overrides ``args``."""
    try:
        return BaseException.__dict__["args"].__get__(exc)
    except Exception:  # noqa: BLE001
        return ()
