"""Third-party extensions through the ``leakcheck.plugins`` entry-point group.

An entry point names a module; leakcheck reads these optional attributes from it:

* ``FORMS``: a sequence of form functions ``secret -> iterable of (name, bytes)``;
* ``DECODERS``: a mapping ``name -> decoder`` for the decoding pass
  (``buf -> iterable of (start, end, decoded bytes)``).

A module whose import fails (its library is not installed) is skipped and listed by
``skipped_plugins()``: an integration is active only when its library is importable.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from importlib.metadata import entry_points
from types import ModuleType

__all__ = ["GROUP", "load_plugins", "plugin_forms", "plugin_decoders", "skipped_plugins"]

GROUP = "leakcheck.plugins"
_skipped: dict[str, str] = {}


@lru_cache(maxsize=1)
def load_plugins() -> tuple[ModuleType, ...]:
    modules = []
    for entry in sorted(entry_points(group=GROUP), key=lambda e: e.name):
        try:
            modules.append(importlib.import_module(entry.value.split(":")[0]))
        except ImportError as exc:
            _skipped[entry.name] = f"{type(exc).__name__}: {exc}"
    return tuple(modules)


def plugin_forms() -> list:
    return [form for module in load_plugins() for form in getattr(module, "FORMS", ())]


def plugin_decoders() -> dict:
    decoders: dict = {}
    for module in load_plugins():
        decoders.update(getattr(module, "DECODERS", {}))
    return decoders


def skipped_plugins() -> dict[str, str]:
    load_plugins()
    return dict(_skipped)
