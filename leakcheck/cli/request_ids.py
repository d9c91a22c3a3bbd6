"""``leakcheck request-ids REPORT...``: the end-of-session request-id verdict (unique, not
sequential, at least 64 random bits) over the union of several runs' reports, such as the
shards of one CI run, each of which only judged its own ids.

The ids are the ones each matrix case's record holds (``matrix.request_id``), taken report
by report in the order given, each report file once; the verdict is
``contract.request_id_verdict``, printed as the pytest plugin prints it, then where each id
a violation names (``ids[8]``) came from: its report and test. Never an id itself (the
violations name indexes only). Exit 0 when no rule is broken (including when fewer than two
ids were returned: said, never "ok"), 1 on a violation, 2 on a usage error (a report that
cannot be read, is not a leakcheck report, or no report holding a matrix case).
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from ..canaries import Secret
from ..records import TestRecord
from .budget import Budget
from .canaries_from import canaries_from_report, distinct_reports, read_report, report_record
from .console import EXIT_CLEAN, EXIT_FINDINGS, UsageError, display, write_stdout
from .output import Output

__all__ = ["request_ids_command"]

#: An id a violation names by its index.
_INDEX = re.compile(r"ids\[([0-9]+)\]")
#: Masking needs every canary of the reports, whatever their number: no scan is made.
_NO_LIMIT = Budget(secrets=10**9, chars=10**12)


def request_ids_command(args: argparse.Namespace, output: Output) -> int:
    from ..contract.request_ids import request_id_verdict  # jsonschema: only here

    paths = distinct_reports(args.reports)
    records: list[dict[str, object]] = []
    #: for each id in the union, in order: (report, test)
    origins: list[tuple[str, str]] = []
    shards: list[tuple[str, int, str]] = []  # (report, its cases, its verdict alone)
    documents: list[tuple[str, dict[str, Any]]] = []
    for path in paths:
        document = read_report(path)
        parsed: list[TestRecord] = [
            report_record(raw, n, path) for n, raw in enumerate(document["tests"], start=1)
        ]
        mine = [raw for raw in document["tests"] if "matrix" in raw]
        for record in parsed:
            if record.matrix is not None and record.matrix.request_id:
                origins.append((path, record.test))
        alone = request_id_verdict(mine)
        shards.append((path, alone.cases, alone.word))
        records += mine
        documents.append((path, document))
    verdict = request_id_verdict(records)
    if not verdict.cases:
        listed = ", ".join(repr(p) for p in paths)
        raise UsageError(
            f"no matrix case in {listed}: the request-id check reads the ids of a stage "
            "matrix's cases (leakcheck.matrix.stage_matrix)"
        )
    lines = [
        f"leakcheck request-ids: {len(paths)} report(s), {verdict.cases} matrix case(s), "
        f"{verdict.returned} id(s) returned"
    ]
    lines += [f"  {display(p)}: {cases} case(s), alone: {word}" for p, cases, word in shards]
    lines += verdict.lines()
    named: list[int] = []
    for violation in verdict.violations:
        for match in _INDEX.finditer(f"{violation.field} {violation.message}"):
            index = int(match.group(1))
            if index not in named and index < len(origins):
                named.append(index)
    if named:
        lines.append("the ids named above, by report and test:")
    for index in sorted(named):
        report, test = origins[index]
        lines.append(f"  ids[{index}]: {display(report)} {display(test)}")
    if named:
        # Test ids from the reports are printed: masked with every canary the runs planted
        # (the plugin wrote them masked; a report made by hand may hold anything). Else
        # what is printed is our words, counts and the report paths as given, named before
        # any canary was drawn: nothing is built (3,000 canaries take seconds to mask with).
        canaries: list[Secret] = []
        for path, document in documents:
            canaries += canaries_from_report(document, path, _NO_LIMIT)[0]
        output.use(canaries)
        mask = output.masker(lines)
        lines = [mask(line) for line in lines]
    write_stdout("".join(line + "\n" for line in lines))
    return EXIT_FINDINGS if verdict.violations else EXIT_CLEAN
