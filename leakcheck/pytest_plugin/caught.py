"""Exceptions a test catches with ``pytest.raises`` are exceptions that reached the caller.

A gateway test very often reads ``with pytest.raises(GatewayError): gateway.call(...)``:
the error is what an agent would be handed, and pytest catches it before it reaches the
test's end, where the plugin judges an exception the test let through. Such an error held
the token and the test passed. While a check runs, each exception ``pytest.raises`` (or
``pytest.RaisesGroup``) catches is handed to it as one that reached the caller: both fill
their ``ExceptionInfo`` through ``ExceptionInfo.fill_unfilled`` (pytest 8 and 9).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..harness import LeakCheck

__all__ = ["caught_by_raises"]


@contextlib.contextmanager
def caught_by_raises(check: LeakCheck) -> Iterator[bool]:
    """Hand ``check`` every exception ``pytest.raises`` catches until exit (restored then,
    whatever happens). Yields whether it could: False when this pytest fills its
    ``ExceptionInfo`` some other way (then nothing is patched, and a test that judged
    nothing caller-visible is still said in the summary)."""
    from _pytest._code.code import ExceptionInfo

    original = vars(ExceptionInfo).get("fill_unfilled")
    if original is None:
        yield False
        return

    def fill_unfilled(self: Any, exc_info: Any) -> None:
        original(self, exc_info)
        check.exception_reached_caller(exc_info[1])

    ExceptionInfo.fill_unfilled = fill_unfilled  # type: ignore[method-assign]
    try:
        yield True
    finally:
        ExceptionInfo.fill_unfilled = original  # type: ignore[method-assign]
