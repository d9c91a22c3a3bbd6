"""Wrappers put over a process-wide function by something that stops (a crash hook, a
failing ``socket.getaddrinfo``): each is put back out only while it is still in place; one
left under another's (a test's monkeypatch, the app's own hook, a fault armed inside the
block) passes straight through to what it wrapped from then on, and is skipped when found
again."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any


class EndedWrappers:
    """The wrappers whose owner stopped, each -> what it wrapped; ``lock`` guards the
    swaps of the function they wrap."""

    def __init__(self) -> None:
        self._wrapped: weakref.WeakKeyDictionary[Callable[..., Any], Callable[..., Any]] = (
            weakref.WeakKeyDictionary()
        )
        self.lock = threading.Lock()

    def end(self, wrapper: Callable[..., Any], wrapped: Callable[..., Any]) -> None:
        self._wrapped[wrapper] = wrapped

    def beneath(self, function: Callable[..., Any]) -> Callable[..., Any]:
        """``function``, or what it passes through to when it is an ended wrapper's."""
        while function in self._wrapped:
            function = self._wrapped[function]
        return function
