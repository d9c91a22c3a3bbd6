"""What a test catches (``pytest.raises``, ``pytest.warns``, ``TestCase.assertRaises``,
``assertWarns``) was emitted all the same.

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
(``recwarn``, which leaves after it). The same for a ``unittest.TestCase``'s
``assertRaises``/``assertRaisesRegex`` (an exception it caught) and ``assertWarns`` (every
warning of its block: it keeps even those it did not match), where ``unittest`` is
imported.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from _pytest._code.code import ExceptionInfo
from _pytest.recwarn import WarningsChecker, WarningsRecorder

if TYPE_CHECKING:
    from ..harness import LeakCheck

__all__ = ["caught_by_test"]


@contextlib.contextmanager
def caught_by_test(check: LeakCheck) -> Iterator[tuple[bool, bool]]:
    """Hand ``check`` every exception ``pytest.raises`` or ``TestCase.assertRaises`` and
    every warning ``pytest.warns`` or ``TestCase.assertWarns`` catches until exit (each
    patch restored then, whatever happens). Yields whether pytest's two could be patched:
    not where this pytest does it some other way (then a test that judged nothing
    caller-visible is still said in the summary)."""
    fill = vars(ExceptionInfo).get("fill_unfilled")
    enter = vars(WarningsRecorder).get("__enter__")
    leave = vars(WarningsRecorder).get("__exit__")
    # unittest's, where a test case's module imported it (a ``TestCase`` test did)
    case = sys.modules.get("unittest.case")
    raises_context = getattr(case, "_AssertRaisesContext", None)
    warns_context = getattr(case, "_AssertWarnsContext", None)
    raises_exit = vars(raises_context).get("__exit__") if raises_context else None
    warns_exit = vars(warns_context).get("__exit__") if warns_context else None

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

    def assert_raises_exit(self: Any, exc_type: Any, exc_value: Any, tb: Any) -> Any:
        caught = raises_exit(self, exc_type, exc_value, tb)  # type: ignore[misc]
        if caught:  # (its traceback dropped by unittest: the rest is judged)
            check.exception_reached_caller(exc_value)
        return caught

    def assert_warns_exit(self: Any, *exc: Any) -> Any:
        # every warning of the block was emitted: assertWarns keeps them all, matched or not
        try:
            return warns_exit(self, *exc)  # type: ignore[misc]
        finally:
            for w in list(getattr(self, "warnings", None) or ()):
                check.warnings.add_caught(w)

    patches = [
        (ExceptionInfo, "fill_unfilled", fill, fill_unfilled),
        (WarningsRecorder, "__exit__", leave, __exit__),
        (WarningsRecorder, "__enter__", enter if leave is not None else None, __enter__),
        (raises_context, "__exit__", raises_exit, assert_raises_exit),
        (warns_context, "__exit__", warns_exit, assert_warns_exit),
    ]
    patched = [(owner, name, original) for owner, name, original, _ in patches if original]
    for owner, name, original, replacement in patches:
        if original is not None:
            setattr(owner, name, replacement)
    try:
        yield fill is not None, leave is not None
    finally:
        for owner, name, original in patched:
            setattr(owner, name, original)


def _matches(matches: Any, w: Any) -> bool:
    try:
        return bool(matches(w))
    except Exception:  # noqa: BLE001 - judged when in doubt: a duplicate costs nothing
        return True
