"""Names a package imports from its modules on first use (PEP 562): ``leakcheck`` and
``leakcheck.serialize`` keep their public names while a scan imports only what it uses."""

from __future__ import annotations

import importlib
from collections.abc import Callable

TYPE_CHECKING = False  # not typing's: its import was a twentieth of a scan's start-up
if TYPE_CHECKING:
    from typing import Any


def lazy_names(
    package: str, modules: dict[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module's ``__getattr__`` and ``__dir__`` for ``modules`` (``{name: module}``, the
    module relative to ``package``): a name read once is kept in ``namespace``."""

    def __getattr__(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{module}", package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *modules})

    return __getattr__, __dir__
