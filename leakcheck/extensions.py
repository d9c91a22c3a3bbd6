"""Third-party extensions through two entry-point groups.

``leakcheck.codecs`` (read by every ``Scanner``, so the CLI pays only for these): a module
with ``FORMS`` (form functions ``secret -> iterable of (name, bytes)``) and/or ``DECODERS``
(``{name: buf -> iterable of (start, end, decoded bytes)}`` for the decoding pass).

``leakcheck.plugins`` (read by the pytest plugin): a module with ``SINKS`` (zero-argument
sink classes, see ``leakcheck.capture.Sink``).

A module whose import fails is skipped and listed by ``skipped_plugins()``: an
integration is active only when its library is importable. The bundled sinks of
``WATCHED_LIBRARIES`` are loaded only once their library has been imported (by the app, a
conftest, anything): ``waiting_plugins()`` lists the others. ``broken_plugins()`` are those
of them that failed for another reason (the library imports, the plugin still does not: a
version it does not fit, a bug): the pytest plugin says those in every session, the
others only under ``-v`` (a library that is not installed is not a problem to report).

A plugin module may name in ``NOT_SET_UP`` (or ``NO_CLIENT``, one reason) the inactive
reasons of its sinks that mean the app never set the library up during the test (sentry-sdk
installed, no client active): nothing the app sends was missed, so the pytest plugin says
them only under ``-v`` or once the app set the library up in another test.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from functools import cache
from types import ModuleType

TYPE_CHECKING = False  # not typing's: its import was a twentieth of a scan's start-up
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "CODECS_GROUP",
    "GROUP",
    "broken_plugins",
    "detection_forms",
    "load_plugins",
    "masking_forms",
    "not_set_up_reasons",
    "plugin_forms",
    "plugin_decoders",
    "install_hint",
    "skipped_plugins",
    "waiting_plugins",
    "WATCHED_LIBRARIES",
]

GROUP = "leakcheck.plugins"
CODECS_GROUP = "leakcheck.codecs"
_skipped: dict[str, str] = {}
#: the skipped plugins whose library is importable: their failure is worth saying
_broken: set[str] = set()
#: the bundled plugins skipped because their library is not installed: the module not
#: found (a third party's plugin may name its distribution otherwise: no guess for it)
_missing: dict[str, str] = {}


#: The library each bundled sink plugin watches. Its plugin is loaded only once something
#: has imported that library: an application that never imported sentry-sdk has no sentry
#: client to send to, and a suite that uses none of these libraries no longer pays for
#: importing them (about 0.2 s a session with all of them installed). A library first
#: imported while a test runs is named for that test as an inactive sink (``LeakCheck``).
WATCHED_LIBRARIES = {
    "sentry": "sentry_sdk",
    "opentelemetry": "opentelemetry",
    "prometheus": "prometheus_client",
    "structlog": "structlog",
    "loguru": "loguru",
}
_OWN_PLUGINS = "leakcheck.plugins."
#: (group, entry name) -> the plugin's module, or None when its import failed
_loaded: dict[tuple[str, str], ModuleType | None] = {}


class _Entry(tuple[str, str]):
    """An entry point's name and value (``module:attr``), as a pair (a ``NamedTuple`` would
    import typing, a twentieth of a scan's start-up, and cost 0.5 ms more to define)."""

    __slots__ = ()

    def __new__(cls, name: str, value: str) -> _Entry:
        return super().__new__(cls, (name, value))

    @property
    def name(self) -> str:
        return self[0]

    @property
    def value(self) -> str:
        return self[1]


@cache
def _entries(group: str) -> tuple[_Entry, ...]:
    on_path = _entries_on_path()
    found = None if on_path is None else on_path.get(group, [])
    if found is None:
        from importlib.metadata import entry_points

        found = [_Entry(e.name, e.value) for e in entry_points(group=group)]
    return tuple(sorted(found, key=lambda e: e.name))


@cache
def _entries_on_path() -> dict[str, list[_Entry]] | None:
    """``{group: importlib.metadata.entry_points(group=group)}`` read straight from the
    ``*.dist-info`` and ``*.egg-info`` directories of ``sys.path``, or None where that
    reading could differ (a zip or an egg on the path, a finder of distributions other than
    the standard one), and importlib.metadata reads them.

    The same rules: each distribution's normalized name once, the first on ``sys.path``
    winning; ``[group]`` sections of ``entry_points.txt``, ``name = value`` lines, ``#``
    comments. Importing importlib.metadata (email, zipfile, socket...) and its discovery
    cost ``leakcheck scan`` 30 to 50 ms of a start-up whose target is 60.
    """
    from importlib.machinery import PathFinder

    if any(
        hasattr(finder, "find_distributions") and finder is not PathFinder
        for finder in sys.meta_path
    ):
        return None
    seen: set[str] = set()
    found: dict[str, list[_Entry]] = {}
    for root in sys.path:
        try:
            children = os.listdir(root or ".")
        except NotADirectoryError:
            return None  # a zip on the path
        except OSError:
            continue
        infos: dict[str, list[str]] = {}
        for child in children:
            low = child.lower()
            if low.endswith(".egg") or (low == "egg-info" and root.lower().endswith(".egg")):
                return None
            if low.endswith((".dist-info", ".egg-info")):
                name = _normalize(low.rpartition(".")[0].partition("-")[0])
                infos.setdefault(name, []).append(child)
        for name, dists in infos.items():
            for child in dists:
                if name in seen:
                    break
                seen.add(name)
                _read_entries(os.path.join(root, child, "entry_points.txt"), found)
    return found


def _normalize(name: str) -> str:
    """importlib.metadata's ``Prepared.normalize``: PEP 503, dashes as underscores."""
    import re

    return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")


def _read_entries(path: str, into: dict[str, list[_Entry]]) -> None:
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except (OSError, UnicodeDecodeError):
        return
    section: list[_Entry] | None = None
    for line in map(str.strip, text.splitlines()):
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = into.setdefault(line.strip("[]"), [])
        elif section is not None:
            name, _, value = line.partition("=")
            section.append(_Entry(name.strip(), value.strip()))


def _watched_library(group: str, entry: _Entry) -> str | None:
    if group != GROUP or not entry.value.startswith(_OWN_PLUGINS):
        return None
    return WATCHED_LIBRARIES.get(entry.name)


@cache
def _plan(
    group: str, entries: tuple[_Entry, ...]
) -> tuple[tuple[_Entry, tuple[str, str], str | None], ...]:
    """Each of ``entries`` (``group``'s) with its key in ``_loaded`` and the library it
    waits for (``_watched_library``): made once, not for every test's sinks."""
    return tuple((entry, (group, entry.name), _watched_library(group, entry)) for entry in entries)


def load_plugins(group: str = GROUP, named: str | None = None) -> tuple[ModuleType, ...]:
    """The plugin modules of ``group`` that import (each imported once), without the
    bundled sinks whose library nothing has imported yet (``waiting_plugins``); only
    those whose entry point is ``named``, if given."""
    modules: list[ModuleType] = []
    for entry, key, library in _plan(group, _entries(group)):
        if named is not None and key[1] != named:
            continue
        if key not in _loaded:
            if library is not None and library not in sys.modules:
                continue
            try:
                _loaded[key] = importlib.import_module(entry.value.split(":")[0])
            except Exception as exc:  # noqa: BLE001 - one plugin must not take the session
                _loaded[key] = None
                _skipped[entry.name] = f"{type(exc).__name__}: {exc}"
                if not _library_missing(exc):
                    _broken.add(entry.name)
                elif (
                    isinstance(exc, ModuleNotFoundError)
                    and exc.name
                    and entry.value.startswith(_OWN_PLUGINS)
                ):
                    _missing[entry.name] = exc.name
        module = _loaded[key]
        if module is not None:
            modules.append(module)
    return tuple(modules)


def waiting_plugins() -> dict[str, str]:
    """``{plugin: library}``: bundled sink plugins not loaded yet, their library being
    imported by nothing so far (installed or not)."""
    return {
        key[1]: library
        for entry, key, library in _plan(GROUP, _entries(GROUP))
        if library is not None and key not in _loaded and library not in sys.modules
    }


def _library_missing(exc: BaseException) -> bool:
    """Whether ``exc`` says that a library the plugin needs is not installed: a
    ``ModuleNotFoundError`` for a package that cannot be found at all (not a module of an
    installed package, not the plugin itself). A namespace package is no library: several
    distributions fill it, and a package missing from it is one of them not installed
    (``opentelemetry.sdk``: the mcp SDK installs ``opentelemetry-api``, not the SDK)."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return False
    parts = exc.name.split(".")
    if parts[0] == "leakcheck":
        return False  # one of our own modules is missing: a broken install
    for end in range(1, len(parts) + 1):
        try:
            spec = importlib.util.find_spec(".".join(parts[:end]))
        except (ImportError, ValueError):  # blocked (None in sys.modules), or no __spec__
            return True
        if spec is None:
            return True
        namespace = spec.origin in (None, "namespace") and spec.submodule_search_locations
        if not namespace:  # a module or regular package: the library is there
            return False
    return False


def plugin_forms() -> list[Any]:
    return [form for m in load_plugins(CODECS_GROUP) for form in getattr(m, "FORMS", ())]


@cache
def detection_forms() -> tuple[Any, ...]:
    """The forms a scanner searches for by default: every detection form, the codec
    plugins' ``FORMS`` too."""
    from .forms import FORMS

    return (*FORMS, *plugin_forms())


@cache
def masking_forms() -> tuple[Any, ...]:
    """The forms a masker searches for: ``forms.MASKING_FORMS`` (every detection form and
    the short masking windows) and the codec plugins' ``FORMS``; ``MASKING_FORMS`` itself
    when no plugin brings a form (the usual case)."""
    from .forms import MASKING_FORMS

    extra = tuple(form for form in plugin_forms() if form not in MASKING_FORMS)
    return (*MASKING_FORMS, *extra) if extra else MASKING_FORMS


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


def install_hint(plugin: str) -> str:
    """``pip install X``, for a bundled plugin skipped because its library is not
    installed (X the package it did not find: a fault transport's library, respx,
    responses or asyncssh, is named as it imports); "" for any other."""
    module = _missing.get(plugin)
    if module is None:
        return ""
    return f"pip install {module.split('.')[0].replace('_', '-')}"


def broken_plugins() -> dict[str, str]:
    """The ``skipped_plugins()`` whose failure is not a library that is missing: the
    library imports (or the failure is no ``ModuleNotFoundError`` at all) and the plugin
    still fails."""
    return {name: why for name, why in skipped_plugins().items() if name in _broken}


def not_set_up_reasons() -> frozenset[str]:
    """Inactive reasons of the sink plugins' sinks that mean the app never set their
    library up during the test (a module's ``NOT_SET_UP`` and ``NO_CLIENT``)."""
    reasons: set[str] = set()
    for module in load_plugins(GROUP):
        declared = getattr(module, "NOT_SET_UP", ())
        declared = (declared,) if isinstance(declared, str) else tuple(declared)
        reasons.update(r for r in (*declared, getattr(module, "NO_CLIENT", None)) if r)
    return frozenset(r for r in reasons if isinstance(r, str))
