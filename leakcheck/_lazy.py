"""Names a package imports from its modules on first use (PEP 562): ``leakcheck`` and
``leakcheck.serialize`` keep their public names while a scan imports only what it uses."""

from __future__ import annotations

import importlib
from collections.abc import Callable

TYPE_CHECKING = False  # not typing's: its import was a twentieth of a scan's start-up
if TYPE_CHECKING:
    import re
    from typing import Any, AnyStr


def lazy_names(
    package: str, modules: dict[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module's ``__getattr__`` and ``__dir__`` for ``modules`` (``{name: module}``, the
    module relative to ``package``): a name read once is kept in ``namespace``."""

    def __getattr__(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            # a submodule read as an attribute (``leakcheck.detect`` after ``import
            # leakcheck``): it was one while the package imported its modules eagerly
            # (an AttributeError either way, as before: ``hasattr`` answers False for a
            # submodule whose optional library is missing, and does not raise)
            if not name.startswith("_"):
                try:
                    return importlib.import_module(f".{name}", package)
                except ModuleNotFoundError as exc:
                    if exc.name != f"{package}.{name}":
                        raise AttributeError(
                            f"module {package!r} has no attribute {name!r} (importing "
                            f"{package}.{name} failed: {type(exc).__name__} {exc.name!r})"
                        ) from exc
                except ImportError as exc:
                    raise AttributeError(
                        f"module {package!r} has no attribute {name!r} (importing "
                        f"{package}.{name} failed: {type(exc).__name__})"
                    ) from exc
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{module}", package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *modules})

    return __getattr__, __dir__


class _LazyPattern:
    """A regular expression compiled on first use (``lazy_compile``); each attribute read
    once is then the compiled pattern's own, an instance attribute."""

    def __init__(self, pattern: str | bytes, flags: int) -> None:
        self._source: tuple[Any, int] = (pattern, flags)  # (either type: re's to judge)

    def __getattr__(self, name: str) -> Any:
        import re

        value = getattr(re.compile(*self._source), name)
        self.__dict__[name] = value
        return value


def lazy_compile(pattern: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:
    """``re.compile(pattern, flags)``, compiled on first use: ``leakcheck scan``'s start-up
    compiled some twenty patterns that a scan of a clean file never uses (4 ms of 60).
    For method calls (``.match``, ``.search``, ``.sub``...), not for ``re`` functions."""
    return _LazyPattern(pattern, flags)  # type: ignore[return-value]  # it acts as one
