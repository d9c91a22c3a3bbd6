"""An error a test catches with its own ``try``/``except`` was handed to it all the same.

``try: gateway.call(...) except GatewayError as exc: assert exc.code == "AUTH"`` plays the
caller as ``pytest.raises`` does (``caught.py``): the error is what an agent is handed. It
never reached the test's end, where the plugin judges an exception the test let through,
so a token in it passed green. On Python 3.12 and later, ``sys.monitoring`` says when an
exception is handled: while a test whose own code handles exceptions runs, each one its
frame handles that was raised below it (in a call it made: the gateway, a library) is
handed over as one that reached the caller. One the test's own line raised (``int(token)``,
an ``assert`` it catches) is the test's, not a caller's. Earlier Pythons have no such
event short of tracing every call: those tests are said (``to_watch``).

Only the test function's own frame, and only a test of the suite's (a function of
leakcheck's own, a stage matrix's test, judges what it catches itself).
"""

from __future__ import annotations

import contextlib
import dis
import functools
import inspect
import sys
from collections.abc import Iterator
from types import CodeType
from typing import TYPE_CHECKING, Any

from .reports import leakcheck_file

if TYPE_CHECKING:  # pragma: no cover
    from ..harness import LeakCheck

__all__ = ["caught_by_try", "to_watch"]

#: ``sys.monitoring`` tool ids leakcheck may take, the first free one (by convention 0 is
#: a debugger's, 1 coverage's, 2 a profiler's, 5 an optimizer's)
_TOOL_IDS = (4, 3)
#: the opcodes of a typed ``except X:`` clause (3.11+, and 3.10's); a ``with`` has none
_EXCEPT_MATCH = tuple(
    bytes([dis.opmap[name]])
    for name in ("CHECK_EXC_MATCH", "JUMP_IF_NOT_EXC_MATCH")
    if name in dis.opmap
)


def to_watch(test: Any) -> tuple[CodeType | None, bool]:
    """For a pytest item: the code of its test function to watch (``caught_by_try``), or
    None; and whether it catches exceptions itself that this Python cannot watch (said in
    the summary). Made once per test function (a parametrized test's items share it)."""
    function: Any = getattr(test, "obj", None)
    function = getattr(function, "__func__", function)
    try:
        return _plan(function)
    except TypeError:  # (unhashable: made each time)
        return _plan.__wrapped__(function)


@functools.lru_cache(maxsize=4096)
def _plan(function: Any) -> tuple[CodeType | None, bool]:
    if callable(function):
        with contextlib.suppress(Exception):
            function = inspect.unwrap(function)
    code = getattr(function, "__code__", None)
    # (a function of leakcheck's own, a stage matrix's test, judges what it catches)
    if not isinstance(code, CodeType) or leakcheck_file(code.co_filename):
        return None, False
    # (a code that handles nothing has no exception table: 3.11+; 3.10 has none at all)
    if not getattr(code, "co_exceptiontable", True):
        return None, False
    if getattr(sys, "monitoring", None) is None:
        return None, _catches_itself(code)
    return code, False


def _catches_itself(code: CodeType) -> bool:
    """Whether ``code`` has a typed ``except`` clause (read from its bytecode: no source
    parsed)."""
    opcodes = code.co_code[::2]
    return any(opcode in opcodes for opcode in _EXCEPT_MATCH)


@contextlib.contextmanager
def caught_by_try(check: LeakCheck, code: CodeType) -> Iterator[bool]:
    """Hand ``check`` each exception the frame of ``code`` (a test function's, from
    ``to_watch``) handles that was raised below it, until exit. Yields whether that is
    watched: False when ``sys.monitoring`` has no free tool id (or is missing)."""
    monitoring: Any = getattr(sys, "monitoring", None)
    tool = None
    if monitoring is not None:
        tool = next((t for t in _TOOL_IDS if monitoring.get_tool(t) is None), None)
    if tool is None:
        yield False
        return
    handled_event = monitoring.events.EXCEPTION_HANDLED

    def handled(where: CodeType, offset: int, exc: BaseException) -> None:
        # (every handled exception of the process comes here while the test runs: a
        # global event only; the test's frame alone is judged)
        if where is code:
            traceback = exc.__traceback__
            if traceback is not None and traceback.tb_next is not None:
                check.exception_reached_caller(exc)

    monitoring.use_tool_id(tool, "leakcheck")
    try:
        monitoring.register_callback(tool, handled_event, handled)
        monitoring.set_events(tool, handled_event)
        yield True
    finally:
        monitoring.set_events(tool, 0)
        monitoring.register_callback(tool, handled_event, None)
        monitoring.free_tool_id(tool)
