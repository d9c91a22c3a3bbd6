"""``--canaries-from REPORT``: the canaries a pytest run planted, rebuilt from its JSON
report (seed, test ids, canary ids; never a value), each test's entry read as the plugin
wrote it, a ``records.TestRecord``. A sharded run gives one report per shard (the option
once per report): the canaries of all of them, each file read once (``read_reports``).
The reading of a report (``read_report``) is shared with ``leakcheck request-ids``.

An MCP audit's JSON report (``leakcheck mcp --format json``) is read too: each case names
the namespace its canaries were drawn in and their ids (``_mcp_canaries``), so that the
files the audit does not read (a running server's own logs, with ``--url``) are searched
for that run's canaries."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from .._values import replace
from ..canaries import CANARY_GENERATION, CANARY_ID, KINDS, CanaryFactory, Secret
from ..errors import quoted
from ..findings import MASK_LABEL
from ..records import TestRecord
from ..serialize import read_json_file
from .budget import Budget, budget_for
from .console import UsageError, display, named
from .inputs import distinct_files as distinct_reports
from .inputs import looks_like_report

__all__ = [
    "canaries_from_report",
    "distinct_reports",
    "load_all_canaries",
    "load_canaries",
    "looks_like_report",
    "read_report",
    "report_record",
]


#: How the plugin's report begins (``json.dumps(indent=2)``, "tool" first): enough to
#: tell a report named as a PATH without reading the whole file.
#: What reads as a report here, for messages.
_READ_HERE = "pytest --leakcheck-report=PATH and leakcheck mcp --format json write one"


def read_report(path: str) -> dict[str, Any]:
    """The ``--leakcheck-report`` document at ``path``; a file that cannot be read, is not
    JSON or not a leakcheck report is a usage error naming it, never quoting it."""
    document = read_json_file(path, f"report {named(path)}", UsageError, surrogates=False)
    if isinstance(document, dict) and "leakcheck_mcp" in document:
        raise UsageError(
            f"{path!r} is an MCP audit's report: a request id is checked across the reports "
            "pytest --leakcheck-report=PATH writes"
        )
    _check_header(document, path, "pytest --leakcheck-report=PATH writes one")
    return document


def _check_header(document: Any, path: str, written_by: str = _READ_HERE) -> None:
    if not (
        isinstance(document, dict)
        and document.get("tool") == "leakcheck"
        and isinstance(document.get("seed"), str)
        and isinstance(document.get("tests"), list)
    ):
        raise UsageError(f"{path!r} is not a leakcheck report ({written_by})")


def load_canaries(path: str, budget: Budget | None = None) -> tuple[list[Secret], int, int]:
    """The canaries a pytest run planted, rebuilt from its ``--leakcheck-report`` (the
    report holds their seed, tests and ids, never a value); how many secrets its tests
    registered themselves (those come with ``--secrets-file``); and how many canaries
    cannot be rebuilt, their test's id having held a secret (masked in the report).
    ``budget``: how many more secrets the scan may take."""
    document = read_json_file(path, f"report {named(path)}", UsageError, surrogates=False)
    return canaries_from_report(document, path, budget)


def load_all_canaries(
    paths: Sequence[str], budget: Budget | None = None
) -> tuple[list[Secret], int, int]:
    """``load_canaries`` over the reports of a sharded run (each file once), together
    within one ``budget``. A canary is named ``KIND#N@TEST``; the same name from two
    reports is the same test run in two shards: with the same seed it is the same value,
    searched for once; with another seed it is another value, named
    ``KIND#N@TEST@REPORT`` so that a finding says which shard's canary it was."""
    budget = budget_for() if budget is None else budget
    canaries: list[Secret] = []
    registered = lost = 0
    values: dict[str, str] = {}
    for path in distinct_reports(paths):
        found, own, unbuilt = load_canaries(path, budget.take(canaries))
        registered, lost = registered + own, lost + unbuilt
        for canary in found:
            seen = values.get(canary.id)
            if seen is None:
                values[canary.id] = canary.value
                canaries.append(canary)
            elif seen != canary.value:
                canaries.append(replace(canary, id=f"{canary.id}@{display(path)}"))
    return canaries, registered, lost


def canaries_from_report(
    document: Any, path: str = "<report>", budget: Budget | None = None
) -> tuple[list[Secret], int, int]:
    """``load_canaries`` of a report already read (``path`` names it in messages)."""
    budget = budget_for() if budget is None else budget
    if isinstance(document, dict) and "leakcheck_mcp" in document:
        return _mcp_canaries(document, path, budget)
    _check_header(document, path)
    registered = lost = 0
    planned: list[tuple[str, str, str, int]] = []  # (test twice, kind, n): checked first
    for n, raw in enumerate(document["tests"], start=1):
        record = _record(raw, n, path)
        # a test id that held a secret was masked in the report: its canaries were made
        # from the id as it was, which the report no longer has
        masked_id = MASK_LABEL.search(record.test) is not None
        for secret in record.secrets:
            if not secret.generated:
                registered += 1
                continue
            if masked_id:
                lost += 1
                continue
            match = CANARY_ID.fullmatch(secret.id)
            if match is None:
                # (judged whole, then cut: cut first, a key's piece of 9 characters no
                # longer looked like a key and went out raw, found by a hunting helper)
                shown = quoted(secret.id)
                if not shown.startswith("«") and len(shown) > 44:
                    shown = shown[:40] + "...'"
                raise UsageError(f"report {path!r} test {n}: {shown} is not a canary id (KIND#N)")
            if match.group(1) not in KINDS:
                raise UsageError(
                    f"report {path!r} test {n}: canary kind {quoted(match.group(1)[:40])} is none "
                    "this leakcheck makes (a report of a newer one? scan with that version)"
                )
            planned.append((record.test, record.test, match.group(1), int(match.group(2))))
    return _rebuilt(document, path, budget, planned), registered, lost


def _rebuilt(
    document: dict[str, Any],
    path: str,
    budget: Budget,
    planned: Sequence[tuple[str, str, str, int]],
) -> list[Secret]:
    """The canaries ``planned`` as ``(namespace, shown, kind, n)``: each drawn with the
    report's seed in its namespace, named ``KIND#N@shown``."""
    budget.check(len(planned), 0, f"report {path!r}")
    _check_generation(document, path, planned)
    canaries: list[Secret] = []
    factories: dict[str, CanaryFactory] = {}
    for namespace, shown, kind, number in planned:
        factory = factories.get(namespace)
        if factory is None:
            factory = factories[namespace] = CanaryFactory(document["seed"], namespace=namespace)
        canary = factory.nth(kind, number)
        canaries.append(replace(canary, id=f"{canary.id}@{display(shown)}"))
    budget.check(len(canaries), sum(len(c.value) for c in canaries), f"report {path!r}")
    return canaries


#: The namespace of an MCP audit case's canaries (``audit.run.case_namespace``).
_MCP_NAMESPACE = re.compile(r"leakcheck-mcp::\S{1,400}")


def _mcp_canaries(
    document: dict[str, Any], path: str, budget: Budget
) -> tuple[list[Secret], int, int]:
    """The canaries of an MCP audit's JSON report: each case's ids, drawn with the run's
    seed in the case's namespace. A case whose namespace was masked (a tool named with a
    secret) has lost its canaries; the audit registers no secret of its own as a canary
    (a server's literal credentials come with ``--secrets-file``): none registered."""
    seed, cases = document.get("seed"), document.get("cases")
    if (
        document.get("leakcheck_mcp") != 1
        or type(seed) not in (int, str)
        or not isinstance(cases, list)
    ):
        raise UsageError(f"{path!r} is not a leakcheck report ({_READ_HERE})")
    if cases and "canary_generation" not in document:
        raise UsageError(
            f"report {path!r}: an MCP audit report whose cases do not name their canaries "
            "(written by an earlier leakcheck mcp): run the audit again"
        )
    planned: list[tuple[str, str, str, int]] = []  # (namespace, case, kind, n)
    lost = 0
    for n, case in enumerate(cases, start=1):
        ids = case.get("canaries") if isinstance(case, dict) else None
        namespace = case.get("canary_namespace") if isinstance(case, dict) else None
        if not isinstance(ids, list) or not isinstance(namespace, str):
            raise UsageError(f"report {path!r} case {n}: not a case as leakcheck mcp writes one")
        if not ids:
            continue
        if MASK_LABEL.search(namespace) is not None or not _MCP_NAMESPACE.fullmatch(namespace):
            lost += len(ids)
            continue
        shown = "/".join(str(case.get(k, "?")) for k in ("tool", "stage", "placement"))
        for canary_id in ids:
            match = CANARY_ID.fullmatch(canary_id) if isinstance(canary_id, str) else None
            if match is None or match.group(1) not in KINDS:
                raise UsageError(f"report {path!r} case {n}: a canary id is not KIND#N")
            planned.append((namespace, shown, match.group(1), int(match.group(2))))
    return _rebuilt(document, path, budget, planned), 0, lost


def _check_generation(document: dict[str, Any], path: str, planned: Sequence[object]) -> None:
    """A report's canaries are rebuilt only by the generation that made them: another
    would rebuild other values from the same seed and find nothing (a report without the
    field was written before generation 2)."""
    generation = document.get("canary_generation", 1)
    if not planned or generation == CANARY_GENERATION:
        return
    made = generation if type(generation) is int else "unknown"
    raise UsageError(
        f"report {path!r}: its canaries are of generation {made}, and this leakcheck makes "
        f"generation {CANARY_GENERATION} from the same seed: scan it with the leakcheck "
        "that wrote it, or run the tests again to write a report of this one"
    )


def report_record(raw: Any, n: int, path: str) -> TestRecord:
    """The ``n``-th test entry of a report as the plugin writes it (any entry it ever
    wrote); one that is none is a usage error naming the report and the entry."""
    if not (isinstance(raw, dict) and isinstance(raw.get("test"), str)):
        raise UsageError(f"report {path!r} test {n}: not a test entry as leakcheck writes one")
    if "matrix" in raw and not isinstance(raw["matrix"], dict):
        raise UsageError(
            f"report {path!r} test {n}: its matrix case is not one as leakcheck writes it"
        )
    try:
        return TestRecord.from_json(raw)
    except (AttributeError, KeyError, TypeError, ValueError):
        raise UsageError(
            f"report {path!r} test {n}: not a test entry as leakcheck writes one (run pytest again)"
        ) from None


def _record(raw: Any, n: int, path: str) -> TestRecord:
    """The ``n``-th test entry of a report, read as the plugin writes it; an entry that is
    none (hand-written, or from before test entries listed their secrets) is a usage error,
    never a traceback."""
    if not isinstance(raw, dict):
        raise UsageError(f"report {path!r} test {n}: not a test entry (an object)")
    if not isinstance(raw.get("test"), str):
        raise UsageError(f"report {path!r} test {n}: its 'test' (the test's id) is no string")
    if not isinstance(raw.get("secrets"), list):
        raise UsageError(
            f"report {path!r} test {n}: no list of its secrets (written by an older "
            "leakcheck? run pytest again)"
        )
    return report_record(raw, n, path)
