"""The summary grid of a matrix run (``format_grid``), built from report records."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..capture import ProtectedRecordSink
from ..records import TestRecord
from ..stages import STAGES

_GRID_LETTERS = {
    "contract": "c",
    "leaks": "l",
    "hygiene": "h",
    "record": "r",
    "snapshot": "s",
    "raised": "x",
    "harness": "!",
}
_RECORD_SINK = ProtectedRecordSink.name


def _failed_of(record: TestRecord) -> set[str]:
    """The assertions a reported case failed, by name. A forbidden hit is the leak
    verdict's unless every one of them is in the protected record: that is the record's
    (assertion 4), so a leak found only there is ``r``, not ``l``."""
    assert record.matrix is not None
    which = {assertion.value for assertion in record.matrix.failed}
    if record.forbidden:
        sinks = {
            f.get("sink")
            for f in record.findings
            if isinstance(f, Mapping) and not f.get("allowed", False)
        }
        which.add("record" if sinks == {_RECORD_SINK} else "leaks")
    if record.outcome == "failed" and not which:
        which.add("harness")
    return which


def _letters(names: Iterable[str]) -> str:
    return "".join(sorted(_GRID_LETTERS.get(n, "?") for n in set(names)))


def format_grid(records: Sequence[Mapping[str, Any]]) -> str:
    """Stages down, operations across; each cell ``passed/cases`` and the assertions that
    failed (c=contract, l=leaks, h=hygiene, r=record, x=gateway raised...), and, after
    ``?``, the assertions not checked (switched off by the target): such a cell never
    reads "ok". Built from report records, so the plugin and ``make demo`` print the
    same thing. A session of several matrices (a careful and a careless target in one
    module) gets a grid for each, headed by its test: one grid over both added their
    cases up in one cell."""
    matrices: dict[str, list[TestRecord]] = {}
    for record in map(TestRecord.from_json, records):
        if record.matrix is not None:
            matrices.setdefault(record.test.split("[", 1)[0], []).append(record)
    if len(matrices) <= 1:
        return _grid([r for group in matrices.values() for r in group])
    return "\n\n".join(f"{name}:\n{_grid(group)}" for name, group in matrices.items())


def _grid(records: list[TestRecord]) -> str:
    cells: dict[tuple[str, str], list[TestRecord]] = {}
    operations: list[str] = []
    stages: list[str] = []
    unchecked_cases: dict[str, int] = {}
    caseless: dict[str, set[str]] = {}
    total = 0
    for record in records:
        if record.matrix is None:
            continue
        total += 1
        op, stage = record.matrix.operation, record.matrix.stage
        if op not in operations:
            operations.append(op)
        if stage not in stages:
            stages.append(stage)
        cells.setdefault((stage, op), []).append(record)
        for assertion in record.matrix.unchecked:
            unchecked_cases[assertion.value] = unchecked_cases.get(assertion.value, 0) + 1
        caseless.setdefault(op, set()).update(record.matrix.caseless)
    if not cells:
        return "stage matrix: no case reported"
    stages.sort(key=_stage_order)
    width = max(len(s) for s in stages)
    col = max(14, *(len(o) for o in operations))
    lines = [
        "stage matrix (passed/cases; failed: c=contract l=leaks h=hygiene r=record "
        "s=snapshot drift x=gateway raised !=stage not reached or placement not read"
        + ("; ?=not checked" if unchecked_cases else "")
        + ")",
        " " * width + "  " + "  ".join(op.ljust(col) for op in operations),
    ]
    for stage in stages:
        row = []
        for op in operations:
            group = cells.get((stage, op), [])
            if not group:
                row.append("-".ljust(col))
                continue
            failed: set[str] = set()
            unchecked: set[str] = set()
            bad = 0
            for record in group:
                assert record.matrix is not None  # grouped by it above
                which = _failed_of(record)
                unchecked |= {a.value for a in record.matrix.unchecked}
                failed |= which
                bad += bool(which)
            cell = f"{len(group) - bad}/{len(group)}"
            if bad:
                cell += f" FAIL {_letters(failed)}"
            elif not unchecked:
                cell += " ok"
            if unchecked:
                cell += f" ?{_letters(unchecked)}"
            row.append(cell.ljust(col))
        lines.append(stage.ljust(width) + "  " + "  ".join(row))
    for name, count in sorted(unchecked_cases.items()):
        lines.append(f"not checked: {name} in {count} of {total} case(s)")
    for op in operations:
        missing = sorted(caseless.get(op, ()), key=_stage_order)
        if missing:
            lines.append(
                f"no case, no placement applies: {op}: {', '.join(missing)} (transport "
                "stages run with the credential placements only: give the target the "
                "credential they plant; an MCP server, {bearer} or {auth_headers})"
            )
    return "\n".join(lines)


def _stage_order(stage: str) -> int:
    return list(STAGES).index(stage) if stage in STAGES else len(STAGES)
