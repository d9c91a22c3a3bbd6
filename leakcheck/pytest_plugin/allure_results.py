"""allure-pytest's results directory, masked as it is written.

allure-pytest does not read pytest's reports for what it writes: a test's status message
comes from the live exception (``call.excinfo``: ``pytest.fail(f"... {token}")``, a
fixture's error), a step's parameters are the ``repr`` of the arguments of a function
decorated with ``@allure.step``, a parametrized test's parameters the ``repr`` of its
values, and ``allure.attach(body)`` writes what it is given. Each went raw into
``allure-results`` (found by a hunting helper), a directory CI keeps as an artifact.

Every ``AllureFileLogger`` that allure-pytest registered (one per session, when
``--alluredir`` is given) is wrapped on the instance: each result, container and globals
object has its strings masked in place before it is written, an attachment given as
data is masked as text, and one given as a path (``allure.attach.file``) is masked as text
in its copy, up to _FILE_BYTES (a file of the test's own holding a token went into the
results as it was, and the test passed: found by a hunting helper).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: The logger's methods that write what a test made, and how each argument is masked.
_RESULT_HOOKS = ("report_result", "report_container", "report_globals")
_DATA_HOOK = "report_attached_data"
_FILE_HOOK = "report_attached_file"
#: an attached file's copy is masked up to this size (a larger one is left as copied)
_FILE_BYTES = 16 * 1024 * 1024


def mask_allure_results(mask: Callable[[str], str]) -> None:
    """Wrap each file logger registered with allure's plugin manager (none when
    allure-pytest is not imported, or writes no results)."""
    commons = sys.modules.get("allure_commons")
    logger_module = sys.modules.get("allure_commons.logger")
    if commons is None or logger_module is None:
        return
    manager = getattr(commons, "plugin_manager", None)
    logger_class = getattr(logger_module, "AllureFileLogger", None)
    if manager is None or logger_class is None:
        return
    for plugin in list(manager.get_plugins()):
        if not isinstance(plugin, logger_class) or getattr(plugin, "_leakcheck_masked", False):
            continue
        name = manager.get_name(plugin)
        # pluggy reads a plugin's hook functions when it is registered: the wrappers are set
        # on the instance, then it is registered again under its name (allure-pytest's
        # cleanup unregisters it by that name)
        manager.unregister(plugin)
        for hook in _RESULT_HOOKS:
            _wrap(plugin, hook, functools.partial(_mask_in_place, mask=mask))
        _wrap_data(plugin, mask)
        _wrap_file(plugin, mask)
        plugin._leakcheck_masked = True
        manager.register(plugin, name)


def _wrap(plugin: Any, hook: str, masking: Callable[[Any], None]) -> None:
    original = getattr(plugin, hook, None)
    if original is None:
        return

    @functools.wraps(original)  # (its ``allure_impl`` marker with it)
    def masked(item: Any) -> Any:
        masking(item)
        return original(item)

    setattr(plugin, hook, masked)


def _wrap_data(plugin: Any, mask: Callable[[str], str]) -> None:
    original = getattr(plugin, _DATA_HOOK, None)
    if original is None:
        return

    @functools.wraps(original)
    def masked(body: Any, file_name: Any) -> Any:
        return original(_masked_body(body, mask), file_name)

    setattr(plugin, _DATA_HOOK, masked)


def _mask_in_place(item: Any, mask: Callable[[str], str]) -> None:
    _mask_object(item, mask, set())


def _wrap_file(plugin: Any, mask: Callable[[str], str]) -> None:
    original = getattr(plugin, _FILE_HOOK, None)
    directory = getattr(plugin, "_report_dir", None)
    if original is None or directory is None:
        return

    @functools.wraps(original)
    def masked(source: Any, file_name: Any) -> Any:
        result = original(source, file_name)
        _mask_file(Path(directory) / str(file_name), mask)
        return result

    setattr(plugin, _FILE_HOOK, masked)


def _mask_file(path: Path, mask: Callable[[str], str]) -> None:
    """The copy at ``path`` masked as text, in place (as it was when it holds nothing)."""
    try:
        if path.stat().st_size > _FILE_BYTES:
            return
        data = path.read_bytes()
    except OSError:
        return
    masked = _masked_body(data, mask)
    if masked is not data:
        path.write_bytes(masked)


def _masked_body(body: Any, mask: Callable[[str], str]) -> Any:
    """``body`` (str or bytes) masked as text; bytes that are not UTF-8 as Latin-1."""
    if isinstance(body, str):
        return mask(body)
    if isinstance(body, (bytes, bytearray)):
        try:
            text = bytes(body).decode("utf-8")
        except UnicodeDecodeError:
            text = bytes(body).decode("latin-1")
            masked = mask(text)
            return body if masked == text else masked.encode("latin-1", "backslashreplace")
        masked = mask(text)
        return body if masked == text else masked.encode("utf-8", "surrogatepass")
    return body


def _mask_object(value: Any, mask: Callable[[str], str], seen: set[int]) -> Any:
    """``value`` with each of its strings masked: attrs objects (allure's model) and
    lists in place, the string itself returned."""
    if isinstance(value, str):
        return mask(value)
    if id(value) in seen:
        return value
    if isinstance(value, list):
        seen.add(id(value))
        value[:] = [_mask_object(item, mask, seen) for item in value]
    elif isinstance(value, dict):
        seen.add(id(value))
        pairs = list(value.items())
        value.clear()
        for key, item in pairs:
            value[_mask_object(key, mask, seen)] = _mask_object(item, mask, seen)
    elif hasattr(type(value), "__attrs_attrs__"):
        seen.add(id(value))
        for field in type(value).__attrs_attrs__:
            current = getattr(value, field.name, None)
            masked = _mask_object(current, mask, seen)
            if masked is not current:
                setattr(value, field.name, masked)
    return value
