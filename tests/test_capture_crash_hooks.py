"""The crash-hook sink puts a hook back at stop only while its own wrapper is installed: a
hook the app installs during a test (``sentry_sdk.init()`` wraps ``sys.excepthook`` as it
finds it, a crash reporter sets ``threading.excepthook``) stays for the rest of the
process, and sinks stopped out of order leave no wrapper capturing."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from leakcheck.capture import CrashHookSink

HOOKS = [(sys, "excepthook"), (threading, "excepthook"), (sys, "unraisablehook")]
HOOK_IDS = ["sys.excepthook", "threading.excepthook", "sys.unraisablehook"]


def _crash(owner: ModuleType, attribute: str, message: str) -> None:
    """Calls the hook installed now as Python would for an uncaught ``ValueError``."""
    hook = getattr(owner, attribute)
    error = ValueError(message)
    if owner is sys and attribute == "excepthook":
        hook(ValueError, error, None)
    else:
        hook(SimpleNamespace(exc_type=ValueError, exc_value=error, exc_traceback=None,
                             err_msg="Exception ignored in", object=None, thread=None))  # fmt: skip


def _recording_hook(
    monkeypatch: pytest.MonkeyPatch, owner: ModuleType, attribute: str
) -> tuple[Callable[..., None], list[str]]:
    """Stands for the hook found at start (nothing printed); restored after the test."""
    reached: list[str] = []

    def found(*args: Any) -> None:
        reached.append("found")

    monkeypatch.setattr(owner, attribute, found)
    return found, reached


def _captured(sink: CrashHookSink) -> list[str]:
    return [captured.path for captured in sink.collect()]


@pytest.mark.parametrize("owner, attribute", HOOKS, ids=HOOK_IDS)
def test_a_hook_the_app_installs_during_a_check_stays(
    monkeypatch: pytest.MonkeyPatch, owner: ModuleType, attribute: str
) -> None:
    _, reached = _recording_hook(monkeypatch, owner, attribute)
    sink = CrashHookSink()
    sink.start()
    under = getattr(owner, attribute)

    def apps_hook(*args: Any) -> None:  # as sentry's: report, then call the hook it found
        reached.append("app")
        under(*args)

    setattr(owner, attribute, apps_hook)
    sink.stop()
    assert getattr(owner, attribute) is apps_hook
    _crash(owner, attribute, "after the check")
    assert reached == ["app", "found"]  # the sink's wrapper under it passes the call on
    assert _captured(sink) == []  # and captures nothing once stopped


@pytest.mark.parametrize("owner, attribute", HOOKS, ids=HOOK_IDS)
def test_sinks_stopped_out_of_order_capture_until_their_own_stop(
    monkeypatch: pytest.MonkeyPatch, owner: ModuleType, attribute: str
) -> None:
    found, reached = _recording_hook(monkeypatch, owner, attribute)
    first, second = CrashHookSink(), CrashHookSink()
    first.start()
    second.start()
    first.stop()
    _crash(owner, attribute, "while the second sink runs")
    second.stop()
    assert _captured(first) == []
    assert _captured(second) == [f"{owner.__name__}.{attribute}"]
    assert reached == ["found"]  # once, through both wrappers
    assert getattr(owner, attribute) is found  # no wrapper of either left behind
