"""Value classes that behave as ``@dataclass`` classes without importing dataclasses.

``leakcheck scan`` is a command a CI job runs on a few files, so its start-up counts.
``import dataclasses`` imports inspect (and with it ast, dis and tokenize): 9 to 10 ms of a
scan's 80 ms; and each ``@dataclass`` class costs about 1 ms more to define, because its
methods are compiled from generated source. The scan's path held eight of them.

A subclass of ``Value`` gets what those classes had from ``@dataclass``: fields from its
annotations, in order, with defaults (``field(default_factory=...)`` for a list), an
``__init__`` taking them by position or keyword, ``__repr__``, ``__eq__`` and, frozen
(``class Finding(Value, frozen=True)``), ``__hash__`` and assignment refused. To the
outside world they still are dataclasses: ``dataclasses.fields``, ``replace``, ``asdict``
and ``is_dataclass`` work on them (and pytest's assertion diff, which uses them), the
dataclasses module imported only when one of them asks for the fields. Type checkers are
told the same (``dataclass_transform``). ``replace`` here is ``dataclasses.replace``
without that import.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    from typing_extensions import dataclass_transform

    V = TypeVar("V", bound="Value")
else:

    def dataclass_transform(**_: object):  # only type checkers read it
        return lambda cls: cls


__all__ = ["FrozenInstanceError", "Value", "field", "replace"]

_NO_DEFAULT = object()


class FrozenInstanceError(AttributeError):
    """An assignment to a field of a frozen value (``dataclasses.FrozenInstanceError``'s
    role, and like it an ``AttributeError``)."""


class _Field:
    """What ``field()`` puts in a class body until the class is made."""

    __slots__ = ("default", "default_factory", "repr")

    def __init__(
        self, default: object, default_factory: Callable[[], Any] | None, repr: bool
    ) -> None:
        self.default = default
        self.default_factory = default_factory
        self.repr = repr


def field(
    *,
    default: Any = _NO_DEFAULT,
    default_factory: Callable[[], Any] | None = None,
    repr: bool = True,
) -> Any:
    """A field's default (``default_factory`` for a mutable one) and whether ``repr``
    shows it, as ``dataclasses.field`` takes them."""
    if default is not _NO_DEFAULT and default_factory is not None:
        raise ValueError("cannot specify both default and default_factory")
    return _Field(default, default_factory, repr)


class _DataclassFields:
    """``__dataclass_fields__``, made on first read from a dataclass twin of the class
    (same names, types, defaults and repr flags): what makes ``dataclasses.fields``,
    ``replace``, ``asdict`` and ``is_dataclass`` see a ``Value`` as a dataclass."""

    def __init__(self) -> None:
        self._made: dict[type, dict[str, Any]] = {}

    def __get__(self, instance: object, owner: type[Value]) -> dict[str, Any]:
        made = self._made.get(owner)
        if made is None:
            import dataclasses

            spec = []
            for name in owner._field_names:
                annotation, default, factory, shown = owner._field_specs[name]
                if factory is not None:
                    made_field = dataclasses.field(default_factory=factory, repr=shown)
                elif default is not _NO_DEFAULT:
                    made_field = dataclasses.field(default=default, repr=shown)
                else:
                    made_field = dataclasses.field(repr=shown)
                spec.append((name, annotation, made_field))
            twin = dataclasses.make_dataclass(owner.__name__, spec, frozen=owner._frozen)
            made = self._made[owner] = {f.name: f for f in dataclasses.fields(twin)}
        return made


class _FactoryDefault:
    """What a signature shows for a default made by a factory (as dataclasses shows it)."""

    def __repr__(self) -> str:
        return "<factory>"


class _Signature:
    """``__signature__``, made on first read: ``inspect.signature`` of a value class gives
    its fields, as of a dataclass, not ``(*args, **kwargs)`` (Hypothesis' ``builds`` and
    IDEs read it); inspect is imported then."""

    def __get__(self, instance: object, owner: type[Value]) -> Any:
        import inspect

        parameters = []
        for name in owner._field_names:
            annotation, default, factory, _ = owner._field_specs[name]
            if factory is not None:
                default = _FactoryDefault()
            elif default is _NO_DEFAULT:
                default = inspect.Parameter.empty
            parameters.append(
                inspect.Parameter(
                    name,
                    inspect.Parameter.POSITIONAL_OR_KEYWORD,
                    default=default,
                    annotation=annotation,
                )
            )
        return inspect.Signature(parameters, return_annotation=None)


def _is_class_var(annotation: object) -> bool:
    return isinstance(annotation, str) and annotation.startswith(("ClassVar", "typing.ClassVar"))


@dataclass_transform(field_specifiers=(field,))
class Value:
    """The base of a value class (see the module's docstring)."""

    #: set for each subclass from its annotations
    _field_names: tuple[str, ...] = ()
    #: name -> (annotation, default or _NO_DEFAULT, default factory or None, shown in repr)
    _field_specs: dict[str, tuple[object, object, Callable[[], Any] | None, bool]] = {}
    _frozen = False
    __dataclass_fields__ = _DataclassFields()
    __signature__ = _Signature()

    def __init_subclass__(cls, *, frozen: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        specs = dict(cls._field_specs)  # a base value's fields come first, as in dataclasses
        for name, annotation in cls.__dict__.get("__annotations__", {}).items():
            if _is_class_var(annotation):
                continue
            declared = cls.__dict__.get(name, _NO_DEFAULT)
            if isinstance(declared, _Field):
                default, factory, shown = declared.default, declared.default_factory, declared.repr
            else:
                default, factory, shown = declared, None, True
            if (
                default is _NO_DEFAULT
                and factory is None
                and any(d is not _NO_DEFAULT or f is not None for _, d, f, _ in specs.values())
            ):
                raise TypeError(f"non-default argument {name!r} follows default argument")
            specs[name] = (annotation, default, factory, shown)
            if isinstance(declared, _Field):  # the class attribute is the plain default
                if default is _NO_DEFAULT:
                    delattr(cls, name)
                else:
                    setattr(cls, name, default)
        cls._field_specs = specs
        cls._field_names = tuple(specs)
        cls._frozen = frozen
        type.__setattr__(cls, "__match_args__", cls._field_names)
        if "__eq__" not in cls.__dict__ and "__hash__" not in cls.__dict__:
            # as @dataclass: a frozen value hashes by its fields, a mutable one is unhashable
            cls.__hash__ = Value.__hash__ if frozen else None  # type: ignore[assignment]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # The fields go into __dict__ in their order (hash and equality read it): by
        # position, then the defaults of those left, in order; keywords take the long way.
        names = self._field_names
        fields = self.__dict__
        if kwargs or len(args) > len(names):
            fields.update(self._from_keywords(args, kwargs))
            return
        fields.update(zip(names, args, strict=False))  # the rest: defaults
        if self._fill_defaults(fields, names[len(args) :]):
            fields.clear()
            self._from_keywords(args, {})  # raises, naming every field missing

    @classmethod
    def _fill_defaults(cls, values: dict[str, Any], names: tuple[str, ...]) -> list[str]:
        """Each of ``names`` not in ``values`` given its default, in order; those that
        have none."""
        missing = []
        for name in names:
            if name not in values:
                _, default, factory, _ = cls._field_specs[name]
                if factory is not None:
                    values[name] = factory()
                elif default is not _NO_DEFAULT:
                    values[name] = default
                else:
                    missing.append(name)
        return missing

    @classmethod
    def _from_keywords(cls, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """The fields from positions and keywords, in their order; TypeError as a call
        with wrong arguments gives."""
        names, kind = cls._field_names, cls.__name__
        if len(args) > len(names):
            raise TypeError(
                f"{kind}() takes {len(names)} positional arguments but {len(args)} were given"
            )
        values = dict(zip(names, args, strict=False))  # the rest by keyword or default
        for name, value in kwargs.items():
            if name in values:
                raise TypeError(f"{kind}() got multiple values for argument {name!r}")
            if name not in cls._field_specs:
                raise TypeError(f"{kind}() got an unexpected keyword argument {name!r}")
            values[name] = value
        missing = cls._fill_defaults(values, names)
        if missing:
            raise TypeError(f"{kind}() missing required arguments: {', '.join(missing)}")
        return {name: values[name] for name in names}

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{name}={self.__dict__[name]!r}"
            for name in self._field_names
            if self._field_specs[name][3]
        )
        return f"{type(self).__qualname__}({shown})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self.__dict__ == other.__dict__
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self.__dict__.values()))

    def __setattr__(self, name: str, value: object) -> None:
        if self._frozen:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        if self._frozen:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super().__delattr__(name)

    def __replace__(self: V, **changes: Any) -> V:
        """A copy with ``changes`` (Python 3.13's ``copy.replace`` calls this)."""
        fields = self.__dict__
        return type(self)(**{**{name: fields[name] for name in self._field_names}, **changes})


def replace(value: V, **changes: Any) -> V:
    """``dataclasses.replace(value, **changes)`` without importing dataclasses."""
    return value.__replace__(**changes)
