"""A pytest helper: pin an audit of an MCP server a suite depends on.

::

    from leakcheck.audit.testing import mcp_audit_test

    test_notes_server_audit = mcp_audit_test(
        ["node", "servers/notes.js"],
        env={"NOTES_API_URL": "{upstream}", "NOTES_API_KEY": "{api_key}"},
        stages=["http_*", "dns_failure"],
    )

The test runs ``audit_mcp_server`` with the options given and fails with the text report
(masked) unless the audit is clean; ``expect_failing`` names the cases
(``tool/stage/placement``, globs) that are known to fail and must keep failing, so a fixed
leak is noticed too.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Sequence
from typing import Any

from .model import AuditError, AuditResult, Outcome
from .report import render_text
from .run import audit_mcp_server

__all__ = ["check_audit", "mcp_audit_test"]


def check_audit(result: AuditResult, expect_failing: Sequence[str] = ()) -> str:
    """Why ``result`` is not what was pinned ("" when it is): a case failing outside
    ``expect_failing``, one of those passing, or an incomplete audit."""
    problems = []
    expected = list(expect_failing)
    for case in result.cases:
        known = any(fnmatch.fnmatchcase(case.id, p) for p in expected)
        if case.outcome is Outcome.FAILED and not known:
            problems.append(f"{case.id} fails: {case.reason}")
        elif case.outcome is Outcome.PASSED and known:
            problems.append(f"{case.id} passes now (expected to fail): update expect_failing")
    if not result.failed or not problems:
        incomplete = result.incomplete()
        if incomplete and result.exit_code == 2:
            problems.append(f"the audit is incomplete: {incomplete}")
    return "\n".join(problems)


def mcp_audit_test(
    command: str | Sequence[str],
    *,
    name: str = "test_mcp_audit",
    expect_failing: Sequence[str] = (),
    **options: Any,
) -> Callable[[], None]:
    """A test function auditing the server (``audit_mcp_server(command, **options)``);
    assign it to a ``test_*`` name in a test module."""

    def test() -> None:
        import pytest

        try:
            result = audit_mcp_server(command, **options)
        except AuditError as exc:
            pytest.fail(f"leakcheck mcp: {exc}", pytrace=False)
        problems = check_audit(result, expect_failing)
        if problems:
            pytest.fail(f"{problems}\n\n{render_text(result)}", pytrace=False)

    test.__name__ = test.__qualname__ = name
    return test
