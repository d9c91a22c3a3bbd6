"""What a test catches with ``pytest.raises`` or ``pytest.warns`` was emitted all the same.

A gateway test very often reads ``with pytest.raises(GatewayError): gateway.call(...)``:
the error is what an agent would be handed, and pytest catches it before it reaches the
test's end, where the plugin judges an exception the test let through. Such an error held
the token and the test passed. So did a warning a test expects with ``pytest.warns``: in
production it is printed on stderr, but pytest's recorder takes it before the warning sink.

While a check runs, each exception ``pytest.raises`` (or ``pytest.RaisesGroup``) catches is
handed to it as one that reached the caller (both fill their ``ExceptionInfo`` through
``ExceptionInfo.fill_unfilled``, in pytest 8 and 9), and each warning a ``pytest.warns``
block recorded and keeps (one it re-emits reaches the sink as any other) to its warning
sink, and what a recorder the test entered and has not left holds at the verdict
(``recwarn``, which leaves after it).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from _pytest._code.code import ExceptionInfo
from _pytest.recwarn import WarningsChecker, WarningsRecorder

if TYPE_CHECKING:
    from ..harness import LeakCheck

__all__ = ["caught_by_pytest"]


@contextlib.contextmanager
def caught_by_pytest(check: LeakCheck) -> Iterator[tuple[bool, bool]]:
    """Hand ``check`` every exception ``pytest.raises`` and every warning ``pytest.warns``
    catches until exit (each patch restored then, whatever happens). Yields whether each
    could be patched: not where this pytest does it some other way (then a test that
    judged nothing caller-visible is still said in the summary)."""
    fill = vars(ExceptionInfo).get("fill_unfilled")
    enter = vars(WarningsRecorder).get("__enter__")
    leave = vars(WarningsRecorder).get("__exit__")

    def fill_unfilled(self: Any, exc_info: Any) -> None:
        fill(self, exc_info)  # type: ignore[misc]  # (set only where it exists)
        check.exception_reached_caller(exc_info[1])

    def __enter__(self: Any) -> Any:
        entered = enter(self)  # type: ignore[misc]
        # ``recwarn`` leaves after the verdict: what it holds then is judged
        check.warnings.recorder_entered(self)
        return entered

    def __exit__(self: Any, *exc: Any) -> Any:
        check.warnings.recorder_left(self)
        left = leave(self, *exc)  # type: ignore[misc]
        # a checker re-emits what it did not match: the sink sees those itself
        matches = getattr(self, "matches", None)
        keeps = isinstance(self, WarningsChecker) and callable(matches)
        for w in list(getattr(self, "_list", ())):
            if not keeps or _matches(matches, w):
                check.warnings.add_caught(w)
        return left

    if fill is not None:
        ExceptionInfo.fill_unfilled = fill_unfilled  # type: ignore[method-assign]
    if leave is not None:
        WarningsRecorder.__exit__ = __exit__  # type: ignore[method-assign]
        if enter is not None:
            WarningsRecorder.__enter__ = __enter__  # type: ignore[method-assign]
    try:
        yield fill is not None, leave is not None
    finally:
        if fill is not None:
            ExceptionInfo.fill_unfilled = fill  # type: ignore[method-assign]
        if leave is not None:
            WarningsRecorder.__exit__ = leave  # type: ignore[method-assign]
            if enter is not None:
                WarningsRecorder.__enter__ = enter  # type: ignore[method-assign]


def _matches(matches: Any, w: Any) -> bool:
    try:
        return bool(matches(w))
    except Exception:  # noqa: BLE001 - judged when in doubt: a duplicate costs nothing
        return True
