"""A test's verdict, at the end of its call phase: the leaks its sinks saw, the stages that
never fired, a secret its own id shows, snapshot drift; the report record written for it.
"""

from __future__ import annotations

import pytest

from .. import masking
from ..capture import ProtectedRecordSink
from ..harness import LeakCheck
from ..records import Assertion, SecretRef, TestRecord
from . import reports, snapshots
from .session import PluginSession

__all__ = ["CHECK", "judge_report"]

#: a test's harness, while it runs
CHECK = pytest.StashKey[LeakCheck]()


def judge_report(
    item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport, state: PluginSession
) -> None:
    check = item.stash.get(CHECK, None)
    if check is None:
        return
    if call.when == "teardown":
        # The test's last report: nothing reads its harness again. pytest keeps every item
        # to the end of the session, so a harness left in the stash (sinks, log records,
        # scanner: ~56 KiB, ~90 objects) is walked by every garbage collection until then.
        del item.stash[CHECK]
    skipped = report.skipped and not hasattr(report, "wasxfail")
    if call.when == "call" and check.unreached() and not skipped:
        # a forced stage that never fired proved nothing: never a pass
        reports.fail_report(report, lead=check.harness_errors())
    if not check.secrets:
        return
    if call.when == "call":
        fail_on_secret_in_test_id(item, report, check)
    if call.when == "call" and state.enabled:
        raised = call.excinfo.value if call.excinfo is not None else None
        # a matrix case's own failure names the case and how to rerun it (the matrix, and
        # its jsonschema, are imported only when a matrix runs)
        told = bool(getattr(raised, "names_case_and_rerun", False))
        # our own verdicts (a matrix failure, already masked) are not the gateway's output,
        # and read best without the harness's traceback around them
        if raised is not None and not isinstance(raised, pytest.skip.Exception):
            if getattr(raised, "leakcheck_verdict", False):
                report.longrepr = check.harness_errors() + "\n\n" + str(raised)
                report.longrepr = report.longrepr.strip()
            else:
                check.exception_reached_caller(raised)
        hand_over_output(item, check)
        leaks = check.findings()
        forbidden = [leak for leak in leaks if not leak.allowed]
        # error-text snapshot of a baseline matrix case: compared now, so that a drift is
        # in the record's outcome and the grid
        session = snapshots.session_of(item.config)
        drift = session.apply(item, report, check) if session is not None else None
        if check.matrix is not None:
            # a direct secret in the protected record breaks assertion 4; elsewhere, 2
            sinks = {leak.sink for leak in forbidden}
            record_sink = ProtectedRecordSink.name
            failed = check.matrix.failed
            failed |= {Assertion.RECORD} if record_sink in sinks else set()
            failed |= {Assertion.LEAKS} if sinks - {record_sink} else set()
            failed |= {Assertion.HARNESS} if check.unreached() else set()
            failed |= {Assertion.SNAPSHOT} if drift else set()
        record = TestRecord(
            test=item.nodeid,
            forbidden=len(forbidden),
            findings=[leak.to_dict() for leak in leaks],
            # ids only, never values: `leakcheck scan --canaries-from` rebuilds the
            # canaries from these, the seed and the test id
            secrets=[SecretRef(s.id, s.kind, s.generated) for s in check.secrets],
            inactive_sinks=check.inactive_sinks(),
            # what could not be inspected (a generator, an opaque object, over budget)
            not_inspected=[part.to_dict() for part in getattr(leaks, "not_inspected", [])],
            matrix=check.matrix,
        )
        if forbidden:
            text = check.report(leaks)
            if check.matrix is not None and not told:
                case = check.matrix
                text = (
                    f"leakcheck matrix: operation {case.operation}, stage {case.stage}, "
                    f"placement {case.placement}\n{text}"
                )
            if not told:
                text += f"\n\nrerun: pytest {item.nodeid!r} --leakcheck-seed={check.seed}"
            reports.fail_report(report, lead=text)
        record.outcome = report.outcome
        # masked here, with every secret this process knows: under xdist the controller
        # that writes the report knows none
        state.records.append(masking.mask_strings(record.to_json(), state.mask))


def hand_over_output(item: pytest.Item, check: LeakCheck) -> None:
    """stdout/stderr as pytest's fd-level capture saw them (subprocesses included)."""
    for when, key, content in getattr(item, "_report_sections", []):
        if key == "stdout":
            check.stdout.add(f"{when}", content)
        elif key == "stderr":
            check.stderr.add(f"{when}", content)
        elif key == "log":
            check.stderr.add(f"pytest log capture ({when})", content)


def fail_on_secret_in_test_id(
    item: pytest.Item, report: pytest.TestReport, check: LeakCheck
) -> None:
    """A secret registered by a test whose id shows it (a parametrize value) came too late:
    ``-v`` printed the id before the test ran. Never silently: the test fails, saying how
    to register it in time."""
    if "[" not in item.nodeid:  # only a parametrize id is made of values
        return
    shown = sorted({f.secret_id for f in check.scanner.scan(item.nodeid)})
    if not shown:
        return
    message = (
        f"leakcheck: secret(s) {', '.join(shown)} show in this test's id, which pytest "
        "printed before the test registered them: register them for the session "
        "(ini leakcheck_secret_env, or leakcheck.plugin.register_session_secret in a "
        "conftest's pytest_configure) or give the test an id without them "
        "(@pytest.mark.parametrize(..., ids=...))"
    )
    reports.fail_report(report, lead=message)
