"""A test's verdict, at the end of its call phase: the leaks its sinks saw, the stages that
never fired, a secret its own id shows, snapshot drift; the report record written for it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

import pytest

from ..canaries import Secret
from ..capture import (
    Captured,
    ExposedSink,
    LoggingSink,
    ProtectedRecordSink,
    TextSink,
    WarningsSink,
    resolve_latent,
)
from ..faults import HarnessError
from ..harness import LeakCheck
from ..masking import SessionMasker
from ..policy import SinkClass
from ..records import Assertion, SecretRef, TestRecord
from ..verdict import (
    Leak,
    Verdict,
    clean_verdict,
    earlier_leaks,
    format_leaks,
    judge,
    leaks_header,
    lookup_texts,
    proven_clean,
    root_causes,
)
from . import reports, snapshots
from .pytest_cache import SINK_NAME as CACHE_SINK
from .session import CATCHES_UNJUDGED, CHECK, EARLIER_BATCHES, PluginSession

__all__ = ["CHECK", "failure_text", "judge_report", "own_verdict"]


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
    # why the test failed on its own (its assertion, an exception), before we add ours
    own = _own_failure(call, report) if call.when == "call" else ""
    if call.excinfo is not None and isinstance(call.excinfo.value, HarnessError):
        # the harness could not do what the test asked (a fault that cannot arm here, a
        # package it needs missing): its message says why, no traceback through our code
        report.longrepr = check.mask(_harness_error(item, call))
    if call.when == "call" and check.unreached() and not skipped:
        # a forced stage that never fired proved nothing: never a pass
        reports.fail_report(report, lead=check.harness_errors())
    # (a test with no secret of its own is judged for an earlier test's: a thread that test
    # left logging its token while this one ran passed, unjudged; found by a hunting helper)
    judged = bool(check.secrets) or state.masker.tests_added_before(
        item.stash.get(EARLIER_BATCHES, 0)
    )
    at_teardown: list[Leak] = []
    if call.when == "teardown" and state.enabled and judged:
        at_teardown = fail_on_teardown_output(item, report, check, state)
    if call.when != "call" and report.failed and state.enabled:
        record_phase_failure(item, call, report, check, state, leaks=at_teardown)
    if not judged:
        return
    in_id = (
        fail_on_secret_in_test_id(item, report, check, state.session_secrets)
        if call.when == "call"
        else ""
    )
    if call.when == "call" and state.enabled:
        raised = call.excinfo.value if call.excinfo is not None else None
        # a matrix case's own failure names the case and how to rerun it (the matrix, and
        # its jsonschema, are imported only when a matrix runs)
        told = bool(getattr(raised, "names_case_and_rerun", False))
        verdict_text = ""
        verdict = own_verdict(item, call, state)
        if verdict is not None:
            verdict_text = str(verdict)
            report.longrepr = check.harness_errors() + "\n\n" + verdict_text
            report.longrepr = report.longrepr.strip()
        elif raised is not None and not isinstance(raised, (pytest.skip.Exception, HarnessError)):
            check.exception_reached_caller(raised)
        hand_over_output(item, check)
        item.stash[LOG_RECORDS_JUDGED] = _log_records_so_far(check)
        item.stash[TEXTS_JUDGED] = _texts_so_far(check)
        leaks = findings(
            check,
            details=bool(state.report_path),
            masker=state.masker,
            earlier=item.stash.get(EARLIER_BATCHES, 0),
        )
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
            # (only a report shows them: an allowed finding's masked excerpt is most of
            # what an allowed hit costs, a few of them in every test of some suites)
            findings=[leak.to_dict() for leak in leaks] if state.report_path else [],
            # ids only, never values: `leakcheck scan --canaries-from` rebuilds the
            # canaries from these, the seed and the test id
            secrets=[SecretRef(s.id, s.kind, s.generated) for s in check.secrets],
            inactive_sinks=check.inactive_sinks(),
            # what could not be inspected (a generator, an opaque object, over budget)
            not_inspected=[part.to_dict() for part in getattr(leaks, "not_inspected", [])],
            matrix=check.matrix,
            # (its tool response, a local of the test, was never searched: said in the
            # summary, never a silent pass; a test that opts the tool response out with a
            # reason has said so already)
            nothing_exposed=bool(check.secrets)
            and not check.caller_output_judged()
            and ExposedSink.name not in check.skip_sinks,
            catches_unjudged=bool(item.stash.get(CATCHES_UNJUDGED, False)),
        )
        state.set_up.update(
            sink.name for sink in check.sinks if not getattr(sink, "inactive_reason", "")
        )
        if forbidden:
            text = failure_text(check, leaks, state)
            if check.matrix is not None and not told:
                case = check.matrix
                text = (
                    f"leakcheck matrix: operation {case.operation}, stage {case.stage}, "
                    f"placement {case.placement}\n{text}"
                )
            if not told:
                text += f"\n\nrerun: pytest {item.nodeid!r} --leakcheck-seed={check.seed}"
            reports.fail_report(report, lead=text)
        hint = ""
        if report.failed and check.matrix is None:  # (a matrix's placements plant its canaries)
            unreached_http = any(f.stage.transport == "http" for f in check.unreached())
            placed = {v for f in check.faults if f.placed for v in f.placed.secrets.values()}
            planted = [s for s in check.secrets if s.value not in placed]
            hint = encoding_hint(planted, raised, unreached_http=unreached_http)
        if hint:
            reports.fail_report(report, tail=check.mask(hint))
        record.outcome = report.outcome
        if report.failed:
            record.reason = failure_reason(
                check, forbidden, drift=drift, verdict=verdict_text, own=own, in_id=in_id
            )
        # Kept unmasked: a record leaves the process only at the session's end (an xdist
        # worker's output, the JSON report), masked then with every secret this process
        # has seen (``PluginSession.pytest_sessionfinish``), and what the summary prints
        # of records goes through the masked terminal. Masking each one here too was
        # 0.16 ms a test (issue 13; tests/test_plugin_cost_records.py).
        state.records.append(record.to_json())


def findings(
    check: LeakCheck,
    *,
    details: bool,
    masker: SessionMasker | None = None,
    earlier: int = 0,
) -> Verdict:
    """``check.findings()``, with the findings of a group in which every secret is allowed
    (the host name in an operator's DEBUG line) left unwritten unless ``details`` (a JSON
    report shows them) or a forbidden hit makes the failure message list them beside it:
    then everything is judged again, in full.

    ``masker``, the session's: it takes the check's secrets over here, and where its index
    shows that the texts hold none of them, the verdict is clean with no scanner built for
    the test (nor for masking its reports: ``LeakCheck.absence_proof``). Most tests leak
    nothing, and their scanner was most of the plugin's cost (issue 13).

    ``earlier``: how many of the masker's batches were there when the test began. Their
    secrets (an earlier test's) are looked for too, and each forbidden hit of one is a leak
    of this test: something of that test outlived it and emitted the secret while this one
    ran (found with a refresh thread that logged an earlier test's token: masked in the
    report, and every test passed)."""
    items = resolve_latent(check.captured(), check.policy)
    outlived: list[Leak] = []
    if masker is not None:
        _take_over(masker, check)
        check.absence_proof = lambda known, text: masker.proves_absent(known, (text,))
        groups = lookup_texts(items)
        outlived = _earlier_secrets(masker, check, items, groups, earlier)
        if check.built_masker() is None and proven_clean(
            masker, check.secrets, items, check.policy, forbidden_only=not details, groups=groups
        ):
            verdict = clean_verdict(items)
            verdict += outlived
            return verdict
    leaks = judge(check.scanner, items, check.policy, allowed_details=details)
    if leaks.left_out and any(not leak.allowed for leak in leaks):
        leaks = judge(check.scanner, items, check.policy)
    leaks += outlived
    return leaks


def _take_over(masker: SessionMasker, check: LeakCheck) -> None:
    """Add ``check``'s secrets to the session's ``masker``, a batch per class of secret (a
    host name allowed in an operator's DEBUG line does not keep the index from showing the
    direct secrets absent there), as added by the test."""
    for secret_class in dict.fromkeys(secret.secret_class for secret in check.secrets):
        masker.add(
            [s for s in check.secrets if s.secret_class is secret_class],
            by=check.canaries.namespace,
        )


#: Said under a leak of another test's secret.
OUTLIVED = (
    "a secret of the earlier test {owner}, emitted while this test ran: something of that "
    "test outlived it, a thread, a client or an object kept at module or session scope"
)


def _earlier_secrets(
    masker: SessionMasker,
    check: LeakCheck,
    items: list[Captured],
    groups: dict[SinkClass, list[bytes]],
    earlier: int,
) -> list[Leak]:
    """The forbidden hits in ``items`` of the secrets of the masker's first ``earlier``
    batches that are not this test's (none, nearly always: told from the index)."""
    # (looked up as the absence proof looks them up: the masker keeps what it found)
    return earlier_leaks(
        masker, items, check.policy, before=earlier, leaving_out=check.secrets,
        note=OUTLIVED, groups=groups,
    )  # fmt: skip


def fail_on_teardown_output(
    item: pytest.Item, report: pytest.TestReport, check: LeakCheck, state: PluginSession
) -> list[Leak]:
    """What the test's teardown printed and logged (a fixture closing its client: "closing
    session for <token>"), judged as its call's output was: the test's secrets and an
    earlier test's. pytest's captured sections of the phase are searched (the verdict was
    given at the end of the call). Fails the teardown report (pytest's "error") where
    it holds a forbidden hit; the leaks found."""
    items = [
        Captured(sink.name, sink.sink_class, path, content)
        for when, sink, path, content in _output_sections(item, check)
        if when == "teardown" and content
    ]
    # the records the log sink took after the verdict, as the app's handlers render them
    # (a JSON formatter's ``extra`` fields, a logger that does not propagate to pytest's)
    judged = item.stash.get(LOG_RECORDS_JUDGED, None)
    log_sink = _log_sink(check)
    if log_sink is not None and judged is not None and log_sink.records_so_far() > judged:
        items += resolve_latent(log_sink.collect_since(judged), check.policy)
    # what the teardown warned (a fixture's warning; pytest's for a thread's or a
    # ``__del__``'s exception) and set in pytest's cache, after the verdict
    items += _texts_since(check, item.stash.get(TEXTS_JUDGED, None))
    if not items:
        return []
    masker = state.masker
    _take_over(masker, check)  # (held since the verdict, unless it had none)
    leaks: list[Leak] = []
    if not proven_clean(masker, check.secrets, items, check.policy):
        leaks += judge(check.scanner, items, check.policy)
    leaks += _earlier_secrets(
        masker, check, items, lookup_texts(items), item.stash.get(EARLIER_BATCHES, 0)
    )
    if any(not leak.allowed for leak in leaks):
        text = failure_text(check, leaks, state)
        reports.fail_report(report, lead=f"leakcheck: at teardown\n{text}")
    return leaks


def _log_sink(check: LeakCheck) -> LoggingSink | None:
    return next((sink for sink in check.sinks if isinstance(sink, LoggingSink)), None)


def _log_records_so_far(check: LeakCheck) -> int:
    log_sink = _log_sink(check)
    return log_sink.records_so_far() if log_sink is not None else 0


#: How many records the log sink had taken at a test's verdict (its teardown judges the rest).
LOG_RECORDS_JUDGED = pytest.StashKey[int]()
#: How many warnings and pytest cache texts the check held at the verdict (``_texts_since``).
TEXTS_JUDGED = pytest.StashKey[dict[str, int]]()


def _texts_so_far(check: LeakCheck) -> dict[str, int]:
    counts: dict[str, int] = {}
    for sink in check.sinks:
        if isinstance(sink, WarningsSink):
            counts[sink.name] = sink.recorded()
        elif isinstance(sink, TextSink) and sink.name == CACHE_SINK:
            counts[sink.name] = len(sink.texts)
    return counts


def _texts_since(check: LeakCheck, counts: dict[str, int] | None) -> list[Captured]:
    """The warnings and the pytest cache texts that came after the verdict (``counts``)."""
    if counts is None:
        return []
    items: list[Captured] = []
    for sink in check.sinks:
        if isinstance(sink, WarningsSink):
            items += sink.since(counts.get(sink.name, 0))
        elif isinstance(sink, TextSink) and sink.name == CACHE_SINK:
            items += [
                Captured(sink.name, sink.sink_class, path, text)
                for path, text in sink.texts[counts.get(sink.name, 0) :]
            ]
    return items


def record_phase_failure(
    item: pytest.Item,
    call: pytest.CallInfo[None],
    report: pytest.TestReport,
    check: LeakCheck,
    state: PluginSession,
    *,
    leaks: list[Leak] | None = None,
) -> None:
    """A fixture's setup or teardown failed (pytest's "error"): the JSON report says why,
    on the test's record (written by its call phase), or on a record of its own for a test
    whose setup failed and which so never ran. ``leaks``: what the teardown printed, when
    that is why (``fail_on_teardown_output``): counted, and listed in a report."""
    forbidden = sum(1 for leak in leaks or () if not leak.allowed)
    if forbidden:
        reason = f"{call.when} error: leakcheck: {forbidden} forbidden hit(s) in its output"
    else:
        reason = f"{call.when} error: " + _own_failure(call, report).removeprefix("test failed: ")
    for index in range(len(state.records) - 1, -1, -1):
        written = state.records[index]
        if written.get("test") == item.nodeid:
            earlier = str(written.get("reason", ""))
            updated = {**written, "outcome": "error", "reason": f"{earlier}\n{reason}".strip()}
            if forbidden:
                updated["forbidden"] = int(written.get("forbidden", 0)) + forbidden
                if written.get("findings") is not None and state.report_path:
                    updated["findings"] = [
                        *written["findings"],
                        *(x.to_dict() for x in leaks or ()),
                    ]
            state.records[index] = updated  # (masked when it leaves the process, as above)
            return
    record = TestRecord(
        test=item.nodeid,
        forbidden=0,
        secrets=[SecretRef(s.id, s.kind, s.generated) for s in check.secrets],
        inactive_sinks={},
        outcome="error",
        reason=reason,
    )
    state.records.append(record.to_json())


#: What to plant where a value must be visible ASCII (a header): ``header_key`` in any
#: header, ``bearer`` in an ``Authorization: Bearer`` one.
_PLANT_INSTEAD = 'plant leakcheck.secret("header_key") (for an Authorization header, "bearer").'


def encoding_hint(
    secrets: Iterable[Secret], raised: BaseException | None, *, unreached_http: bool = False
) -> str:
    """Why a canary never left: the exception that reached the test (or one in its chain)
    is a ``UnicodeEncodeError`` over a canary of a kind with characters beyond ASCII (an
    ``api_key`` is made for query strings and bodies), which a client refuses in a header
    before any byte leaves. The test then fails on that exception (it carries the value: a
    real finding) and on a stage never reached; what to plant instead is the way out. Where
    no such exception reached the test (the gateway caught it) but an HTTP stage was never
    reached (``unreached_http``), the same said as a possible cause. By id, kind and codec
    only: never the value. "" when it does not apply."""
    canaries = [s for s in secrets if s.generated and not s.value.isascii()]
    if not canaries:
        return ""
    seen: set[int] = set()
    error = raised
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, UnicodeEncodeError) and isinstance(error.object, str):
            refused = [s for s in canaries if s.value in error.object]
            if refused:
                secret = refused[0]
                return (
                    f"leakcheck hint: the client could not encode {secret.id} "
                    f"(UnicodeEncodeError, {error.encoding!r} codec) and sent nothing: "
                    f"canaries of kind {secret.kind!r} hold characters beyond ASCII, as a "
                    "query string or a body may, and a header value cannot (a real key "
                    "there is visible ASCII). Where the key goes in a header, " + _PLANT_INSTEAD
                )
        error = error.__cause__ or error.__context__
    if not unreached_http:
        return ""
    named = ", ".join(f"{s.id} (kind {s.kind!r})" for s in canaries)
    hold = "holds" if len(canaries) == 1 else "hold"
    return (
        f"leakcheck hint: {named} {hold} characters beyond ASCII, as a query string or a "
        "body may. If the gateway puts one in a header, the client refuses to encode it "
        "(UnicodeEncodeError) and sends nothing, which leaves the stage unreached; a real "
        "key there is visible ASCII: " + _PLANT_INSTEAD
    )


def failure_text(check: LeakCheck, leaks: list[Leak], state: PluginSession) -> str:
    """A leak failure's message, masked: one entry per root cause (``format_leaks``), the
    sinks opted out, and the inactive ones that are worth saying (``-v`` says them all)."""
    text = format_leaks(leaks, header=leaks_header(leaks, check.seed))
    if check.skip_sinks:
        text += "\nsinks opted out: " + "; ".join(
            f"{name} ({reason})" for name, reason in check.skip_sinks.items()
        )
    inactive = state.shown_inactive(check.inactive_sinks())
    if inactive:
        text += "\nsinks inactive: " + "; ".join(
            f"{name} ({reason})" for name, reason in inactive.items()
        )
    return check.mask(text)


#: a matrix failure's lines: ``  [contract] title:`` then ``    - rule at field: message``
_MATRIX_ASSERTION = re.compile(r"  \[(\w+)\] ")
_MATRIX_PROBLEM = "    - "
#: the reason's name of each matrix assertion
_ASSERTION_REASONS = {
    Assertion.CONTRACT: "contract",
    Assertion.LEAKS: "leaks",
    Assertion.HYGIENE: "hygiene",
    Assertion.RECORD: "protected record",
    Assertion.HARNESS: "not reached",
    Assertion.SNAPSHOT: "snapshot drift",
    Assertion.RAISED: "gateway raised",
}


def failure_reason(
    check: LeakCheck,
    forbidden: list[Leak],
    *,
    drift: str | None = None,
    verdict: str = "",
    own: str = "",
    in_id: str = "",
) -> str:
    """Why a failed test failed, one cause a line, ``kind: detail`` (masked later, with
    the record): the leaks, a stage never reached, a matrix case's problems (contract,
    hygiene, the protected record, the gateway raising), snapshot drift, a secret in the
    test id, or the test's own failure (``own``: its assertion, an exception, a harness
    error, as ``_own_failure`` words it)."""
    lines: list[str] = []
    if forbidden:
        ids = sorted({leak.finding.secret_id for leak in forbidden})
        causes = len(root_causes(forbidden))
        sinks = sorted({leak.sink for leak in forbidden})
        lines.append(
            f"leaks: {len(forbidden)} forbidden hit(s) of {', '.join(ids)} in {causes} root "
            f"cause(s) (sinks: {', '.join(sinks)})"
        )
    for line in check.harness_errors().splitlines():
        if line.strip():
            lines.append(f"stage not reached: {line.strip()}")
    current = ""
    for line in verdict.splitlines():
        title = _MATRIX_ASSERTION.match(line)
        if title:
            current = title[1]
        elif line.startswith(_MATRIX_PROBLEM) and current:
            try:
                kind = _ASSERTION_REASONS[Assertion(current)]
            except ValueError:
                kind = current
            lines.append(f"{kind}: {line[len(_MATRIX_PROBLEM) :]}")
    if check.matrix is not None:  # an assertion no line above names: never unsaid
        named = {line.partition(":")[0] for line in lines}
        in_record = any(leak.sink == ProtectedRecordSink.name for leak in forbidden)
        covered = {
            Assertion.LEAKS: bool(forbidden),
            Assertion.RECORD: in_record or "protected record" in named,
            Assertion.HARNESS: bool(check.unreached()) or "not reached" in named,
            Assertion.SNAPSHOT: bool(drift),
        }
        for assertion in sorted(check.matrix.failed, key=lambda a: a.value):
            kind = _ASSERTION_REASONS.get(assertion, assertion.value)
            if not covered.get(assertion, kind in named):
                lines.append(f"{kind}: failed")
    if drift:
        first = next((line for line in drift.splitlines() if line.strip()), drift)
        lines.append(f"snapshot drift: {first.strip()}")
    if in_id:
        lines.append(f"secret in test id: {in_id}")
    if own and not verdict:
        lines.append(own)
    return "\n".join(lines) or "failed (no reason recorded)"


def own_verdict(
    item: pytest.Item, call: pytest.CallInfo[None], state: PluginSession
) -> BaseException | None:
    """The exception a test's call raised when it is one of our own verdicts (a matrix
    failure, already masked), whose text becomes the whole failure: it is not the gateway's
    output, and reads best without the harness's traceback around it. None otherwise."""
    check = item.stash.get(CHECK, None)
    if call.when != "call" or call.excinfo is None or check is None or not check.secrets:
        return None
    raised = call.excinfo.value
    if not state.enabled or isinstance(raised, (pytest.skip.Exception, HarnessError)):
        return None
    return raised if getattr(raised, "leakcheck_verdict", False) else None


def _own_failure(call: pytest.CallInfo[None], report: pytest.TestReport) -> str:
    """The test's own failure as a reason line: ``test failed: `` and what pytest's short
    summary says (``assert (1 + 1) == 3``), ``harness error: `` and the message of a
    ``HarnessError``; or ""."""
    if not report.failed or call.excinfo is None:
        return ""
    if isinstance(call.excinfo.value, HarnessError):
        return f"harness error: {call.excinfo.typename}: {call.excinfo.value}"
    crash = getattr(report.longrepr, "reprcrash", None)
    message = getattr(crash, "message", None)
    if not isinstance(message, str) or not message:
        try:
            message = call.excinfo.exconly()
        except Exception:  # noqa: BLE001 - an exception whose str() raises
            message = call.excinfo.typename
    return f"test failed: {message.splitlines()[0] if message else call.excinfo.typename}"


def _harness_error(item: pytest.Item, call: pytest.CallInfo[None]) -> str:
    """A ``HarnessError`` the test raised, as one message and where the test called us."""
    assert call.excinfo is not None
    lines = [f"leakcheck: {call.excinfo.typename}: {call.excinfo.value}"]
    path = getattr(item, "path", None)
    mine = [entry for entry in call.excinfo.traceback if entry.path == path]
    if mine:
        entry = mine[-1]
        lines.append(f"  (at {item.location[0]}:{entry.lineno + 1}, in {entry.name})")
    return "\n".join(lines)


def hand_over_output(item: pytest.Item, check: LeakCheck) -> None:
    """stdout/stderr as pytest's fd-level capture saw them (subprocesses included)."""
    for _, sink, path, content in _output_sections(item, check):
        sink.add(path, content)


def _output_sections(
    item: pytest.Item, check: LeakCheck
) -> Iterator[tuple[str, TextSink, str, str]]:
    """pytest's captured sections of ``item`` so far: each one's phase, the sink of
    ``check`` that judges it, its path there, its text."""
    for when, key, content in getattr(item, "_report_sections", []):
        if key == "stdout":
            yield when, check.stdout, when, content
        elif key == "stderr":
            yield when, check.stderr, when, content
        elif key == "log":
            yield when, check.stderr, f"pytest log capture ({when})", content


def fail_on_secret_in_test_id(
    item: pytest.Item,
    report: pytest.TestReport,
    check: LeakCheck,
    session_secrets: Iterable[Secret] = (),
) -> str:
    """A secret registered by a test whose id shows it (a parametrize value) came too late:
    ``-v`` printed the id before the test ran. Never silently: the test fails, saying how
    to register it in time. Only a value the test brought can be there: a canary is made
    from the seed and the id itself, after the id was printed, and a session secret is
    masked from the session's first line (the test's scanner, not otherwise asked to
    search anything in a clean test, is not made to search the id: 0.19 ms a test)."""
    if "[" not in item.nodeid:  # only a parametrize id is made of values
        return ""
    session = set(session_secrets)
    brought = {s.id for s in check.secrets if not s.generated and s not in session}
    if not brought:
        return ""
    shown = sorted({f.secret_id for f in check.scanner.scan(item.nodeid) if f.secret_id in brought})
    if not shown:
        return ""
    message = (
        f"leakcheck: secret(s) {', '.join(shown)} show in this test's id, which pytest "
        "printed before the test registered them: register them for the session "
        "(ini leakcheck_secret_env, or leakcheck.plugin.register_session_secret in a "
        "conftest's pytest_configure) or give the test an id without them "
        "(@pytest.mark.parametrize(..., ids=...))"
    )
    reports.fail_report(report, lead=message)
    return f"{', '.join(shown)} show in the test id"
