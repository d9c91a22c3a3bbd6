"""Third-party extensions through two entry-point groups.

``leakcheck.codecs`` (read by every ``Scanner``, so the CLI pays only for these): a module
with ``FORMS`` (form functions ``secret -> iterable of (name, bytes)``) and/or ``DECODERS``
(``{name: buf -> iterable of (start, end, decoded bytes)}`` for the decoding pass).

``leakcheck.plugins`` (read by the pytest plugin): a module with ``SINKS`` (zero-argument
sink classes, see ``leakcheck.capture.Sink``).

A module whose import fails (its library is not installed) is skipped and listed by
``skipped_plugins()``: an integration is active only when its library is importable.
"""

from __future__ import annotations

import importlib
from functools import cache
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any

__all__ = [
    "CODECS_GROUP",
    "GROUP",
    "load_plugins",
    "plugin_forms",
    "plugin_decoders",
    "skipped_plugins",
]

GROUP = "leakcheck.plugins"
CODECS_GROUP = "leakcheck.codecs"
_skipped: dict[str, str] = {}


@cache
def load_plugins(group: str = GROUP) -> tuple[ModuleType, ...]:
    modules = []
    for entry in sorted(entry_points(group=group), key=lambda e: e.name):
        try:
            modules.append(importlib.import_module(entry.value.split(":")[0]))
        except ImportError as exc:
            _skipped[entry.name] = f"{type(exc).__name__}: {exc}"
    return tuple(modules)


def plugin_forms() -> list[Any]:
    return [form for m in load_plugins(CODECS_GROUP) for form in getattr(m, "FORMS", ())]


def plugin_decoders() -> dict[str, Any]:
    decoders: dict[str, Any] = {}
    for module in load_plugins(CODECS_GROUP):
        decoders.update(getattr(module, "DECODERS", {}))
    return decoders


def skipped_plugins() -> dict[str, str]:
    """Plugins whose module failed to import: codecs and sinks (loaded here), and the
    fault transports a run asked for (``fault_factories`` loads them; importing them all
    for a summary line would pull in asyncssh, aiohttp, ... at the end of every session)."""
    load_plugins(CODECS_GROUP)
    load_plugins(GROUP)
    return dict(_skipped)
