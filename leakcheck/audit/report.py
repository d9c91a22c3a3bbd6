"""An audit's report: the stage x tool grid and the masked findings as text, and JSON,
SARIF 2.1.0 (one result per leak, for code scanning) and JUnit XML. Every text in an
``AuditResult`` is masked already; nothing here adds a value."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from ..canaries import CANARY_GENERATION
from ..findings import without_random_tokens
from ..report import sarif_run
from ..stages import STAGES
from ..version import __version__
from .model import AuditResult, CaseOutcome, Outcome, ToolStatus

__all__ = ["FORMATS", "format_grid", "render", "seconds_text", "timing_line", "verdict_line"]


#: a failed case's letters, and the other outcomes'
_LETTERS = {"leaks": "l", "contract": "c", "hygiene": "h", "raised": "x"}
_OUTCOME_LETTERS = {Outcome.NOT_REACHED: "n", Outcome.ERROR: "E", Outcome.NOT_RUN: "-"}
#: how many distinct failures the text report shows in full
MAX_DETAILS = 5


def seconds_text(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(round(seconds)), 60)
    return f"{minutes} min {rest:02d} s"


def format_grid(result: AuditResult) -> str:
    """Stages down, tools across; each cell ``passed/cases`` and, for the others, what
    happened (l=leaks c=MCP result contract h=hygiene x=JSON-RPC error instead of a result,
    n=not reached, E=error, -=not run): a cell is "ok" only when every case in it passed."""
    tools: list[str] = []
    stages: list[str] = []
    cells: dict[tuple[str, str], list[CaseOutcome]] = {}
    for case in result.cases:
        if case.tool not in tools:
            tools.append(case.tool)
        if case.stage not in stages:
            stages.append(case.stage)
        cells.setdefault((case.stage, case.tool), []).append(case)
    if not cells:
        return "stage x tool grid: no case"
    stages.sort(key=lambda s: list(STAGES).index(s) if s in STAGES else len(STAGES))
    width = max(len(s) for s in stages)
    col = max(14, *(len(t) for t in tools))
    lines = [
        "stage x tool (passed/cases; l=leaks c=MCP result contract h=hygiene x=JSON-RPC "
        "error n=not reached E=error -=not run)",
        " " * width + "  " + "  ".join(t.ljust(col) for t in tools),
    ]
    for stage in stages:
        row = []
        for tool in tools:
            group = cells.get((stage, tool), [])
            if not group:
                row.append("".ljust(col))
                continue
            passed = sum(1 for c in group if c.outcome is Outcome.PASSED)
            letters = set()
            for case in group:
                if case.outcome is Outcome.FAILED:
                    letters |= {_LETTERS.get(name, "?") for name in case.failed}
                if case.outcome in _OUTCOME_LETTERS:
                    letters.add(_OUTCOME_LETTERS[case.outcome])
            cell = f"{passed}/{len(group)}"
            cell += " ok" if passed == len(group) else f" {''.join(sorted(letters))}"
            row.append(cell.ljust(col))
        lines.append(stage.ljust(width) + "  " + "  ".join(row).rstrip())
    return "\n".join(lines)


def verdict_line(result: AuditResult) -> str:
    """The verdict in one line: FAIL, clean, or what left the audit incomplete."""
    total = len(result.cases)
    failed = len(result.failed)
    if failed:
        return f"FAIL: {failed} of {total} case(s) show a leak or a broken rule"
    if result.clean:
        return f"clean: {total} of {total} case(s) passed"
    return f"incomplete: {result.incomplete()} (not clean: nothing was proven there)"


def timing_line(result: AuditResult) -> str:
    """The run's time, its cases and the cost per case (and the budget, if set)."""
    ran = [c for c in result.cases if c.outcome is not Outcome.NOT_RUN]
    per = f", {sum(c.seconds for c in ran) / len(ran):.2f} s per case" if ran else ""
    budget = ""
    if result.budget is not None:
        budget = f"; budget {seconds_text(result.budget)}" + (
            " (spent: cases were left out)" if result.budget_spent else ""
        )
    return f"time: {seconds_text(result.seconds)} for {len(ran)} case(s){per}{budget}"


def render_text(result: AuditResult) -> str:
    lines = [f"leakcheck mcp: {result.server}"]
    audited = [t for t in result.tools if t.status is ToolStatus.AUDITED]
    left_out = [t for t in result.tools if t.status is ToolStatus.LEFT_OUT]
    lines.append(
        f"tools: {len(result.tools)} listed, {len(audited)} audited"
        + (f", {len(left_out)} left out by --tools" if left_out else "")
        # (no case ran: no canary was drawn, and "seed 0" read as one)
        + (f"; canary seed {result.seed}" if result.cases else "; no case ran: no canary")
    )
    for tool in result.tools:
        if tool.status is ToolStatus.LEFT_OUT:
            continue
        # (names from an --arguments file: one that looks like a key «opaque», found by a
        # hunting helper)
        names = ", ".join(without_random_tokens(n) for n in sorted(tool.arguments or {}))
        names = names or "none"
        if tool.status is ToolStatus.AUDITED:
            text = f"  {tool.name}: audited, arguments {tool.source or 'generated'} ({names})"
            if tool.why:
                text += f"; {tool.why}"
        else:
            text = f"  {tool.name}: NOT AUDITED ({tool.status}): {tool.why}"
        lines.append(text)
    if result.cases:
        lines += ["", format_grid(result)]
    failed = result.failed
    if failed:
        groups: dict[str, list[CaseOutcome]] = {}
        for case in failed:
            groups.setdefault(case.reason, []).append(case)
        lines += ["", f"findings: {len(failed)} failing case(s), {len(groups)} distinct"]
        for n, (reason, cases) in enumerate(groups.items()):
            ids = ", ".join(c.id for c in cases[:4]) + (
                f" (+{len(cases) - 4} more)" if len(cases) > 4 else ""
            )
            lines.append(f"- {reason}: {len(cases)} case(s): {ids}")
            if n < MAX_DETAILS and cases[0].details:
                lines.append(f"  {cases[0].id}:")
                lines += ["  " + line for line in cases[0].details.splitlines()]
        if len(groups) > MAX_DETAILS:
            lines.append(f"(details of the other {len(groups) - MAX_DETAILS}: --format json)")
    for outcome, title in (
        (Outcome.NOT_REACHED, "not reached (the server made no request: proven nothing)"),
        (Outcome.ERROR, "errors (the case could not be judged)"),
    ):
        cases = [c for c in result.cases if c.outcome is outcome]
        if not cases:
            continue
        lines += ["", f"{title}: {len(cases)} case(s)"]
        reasons: dict[str, list[CaseOutcome]] = {}
        for case in cases:
            reasons.setdefault(_short(case.reason), []).append(case)
        for reason, group in list(reasons.items())[:6]:
            ids = ", ".join(c.id for c in group[:3]) + (
                f" (+{len(group) - 3} more)" if len(group) > 3 else ""
            )
            lines.append(f"- {reason}: {ids}")
    not_run = result.count(Outcome.NOT_RUN)
    if not_run:
        why = sorted({c.reason for c in result.cases if c.outcome is Outcome.NOT_RUN})
        lines += ["", f"not run: {not_run} case(s): {'; '.join(why)}"]
    for note in result.notes:
        lines += ["", f"note: {note}"]
    lines += ["", verdict_line(result), timing_line(result)]
    return "\n".join(lines) + "\n"


def _short(reason: str) -> str:
    """A reason without the port of its loopback server (so that equal ones group)."""
    import re

    reason = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", reason)
    if len(reason) <= 300:
        return reason
    return reason[:300].rsplit(" ", 1)[0] + " ..."  # (at a word: "proved no:" read as words)


def json_document(result: AuditResult) -> dict[str, Any]:
    ran = [c for c in result.cases if c.outcome is not Outcome.NOT_RUN]
    return {
        "leakcheck_mcp": 1,
        "version": __version__,
        "server": result.server,
        "seed": result.seed,
        "canary_generation": CANARY_GENERATION,
        "exit_code": result.exit_code,
        "verdict": verdict_line(result),
        "seconds": round(result.seconds, 3),
        "seconds_per_case": round(sum(c.seconds for c in ran) / len(ran), 3) if ran else None,
        "budget": result.budget,
        "budget_spent": result.budget_spent,
        "summary": {o.value: result.count(o) for o in Outcome},
        "tools": [tool.to_json() for tool in result.tools],
        "cases": [case.to_json() for case in result.cases],
        "notes": list(result.notes),
    }


def _artifact(result: AuditResult) -> str:
    """What a SARIF result points at: the server's script when its command names one
    (``python examples/server.py``; relative to the working directory when it lies
    below it), else its program. (The program itself was taken when it was a relative
    path: ``../venv/bin/python``.)"""
    parts = result.server.split()
    for part in parts[1:]:
        if os.path.isfile(part):
            relative = os.path.relpath(part) if os.path.isabs(part) else part
            shown = part if relative.startswith("..") and os.path.isabs(part) else relative
            return shown.replace(os.sep, "/")
    return parts[0] if parts else "mcp-server"


def sarif_document(result: AuditResult) -> dict[str, Any]:
    rules = [
        ("direct", "DirectSecretLeak", "A direct secret (credential) reached an MCP output"),
        ("context", "SensitiveContextLeak", "Sensitive context reached a caller-visible output"),
        ("prose", "UpstreamProseLeak", "Untrusted upstream text reached the model"),
    ]
    rule_list = [
        {
            "id": f"leakcheck/{cls}",
            "name": name,
            "shortDescription": {"text": text},
            "defaultConfiguration": {"level": "error"},
        }
        for cls, name, text in rules
    ]
    index = {rule["id"]: i for i, rule in enumerate(rule_list)}
    artifact = _artifact(result)
    results = []
    for case in result.cases:
        for leak in case.forbidden:
            finding = leak.get("finding", {})
            rule_id = f"leakcheck/{finding.get('secret_class', 'direct')}"
            if rule_id not in index:
                rule_id = "leakcheck/direct"
            where = f"{leak.get('sink', '?')} {leak.get('path', '')}".strip()
            fingerprint = hashlib.sha256(
                f"{case.id}|{finding.get('secret_id')}|{finding.get('form')}|{where}".encode()
            ).hexdigest()
            results.append(
                {
                    "ruleId": rule_id,
                    "ruleIndex": index[rule_id],
                    "level": "error",
                    "message": {
                        "text": f"tool {case.tool}, stage {case.stage}, placement "
                        f"{case.placement}: {finding.get('secret_id')} ({finding.get('kind')}) "
                        f"in {where} as {finding.get('form')}: {finding.get('excerpt', '')}"
                    },
                    "locations": [
                        {
                            "physicalLocation": {"artifactLocation": {"uri": artifact}},
                            "logicalLocations": [
                                {
                                    "name": case.tool,
                                    "fullyQualifiedName": case.id,
                                    "kind": "function",
                                }
                            ],
                        }
                    ],
                    "partialFingerprints": {"leakcheck/v1": fingerprint},
                    "properties": {
                        "tool": case.tool,
                        "stage": case.stage,
                        "placement": case.placement,
                        "sink": leak.get("sink"),
                        "secretId": finding.get("secret_id"),
                        "kind": finding.get("kind"),
                        "form": finding.get("form"),
                    },
                }
            )
    notes = [
        *({"level": "error", "message": {"text": f"{c.id}: {c.reason}"}}
          for c in result.cases if c.outcome is Outcome.ERROR),
        *({"level": "warning", "message": {"text": f"{c.id}: not reached"}}
          for c in result.cases if c.outcome is Outcome.NOT_REACHED),
        *({"level": "warning", "message": {"text": f"tool {t.name} not audited: {t.why}"}}
          for t in result.unaudited_tools),
    ]  # fmt: skip
    return sarif_run(rule_list, results, result.exit_code != 2 or bool(result.failed), notes)


def junit_document(result: AuditResult) -> str:
    counts = {
        "tests": len(result.cases),
        "failures": len(result.failed),
        "errors": result.count(Outcome.ERROR) + result.count(Outcome.NOT_REACHED),
        "skipped": result.count(Outcome.NOT_RUN),
    }
    head = " ".join(f'{k}="{v}"' for k, v in counts.items())
    lines = [
        '<?xml version="1.0" encoding="utf-8"?>',
        "<testsuites>",
        f'<testsuite name="leakcheck mcp" {head} time="{result.seconds:.3f}">',
        "<properties>"
        f'<property name="server" value={quoteattr(result.server)}/>'
        f'<property name="seed" value={quoteattr(str(result.seed))}/>'
        "</properties>",
    ]
    for case in result.cases:
        attrs = (
            f"classname={quoteattr('mcp.' + case.tool)} "
            f'name={quoteattr(f"{case.stage}[{case.placement}]")} time="{case.seconds:.3f}"'
        )
        body = ""
        message = quoteattr(case.reason or case.outcome.value)
        if case.outcome is Outcome.FAILED:
            body = f'<failure message={message} type="leakcheck">{escape(case.details)}</failure>'
        elif case.outcome is Outcome.NOT_REACHED:
            body = f'<error message={message} type="not reached"/>'
        elif case.outcome is Outcome.ERROR:
            body = f'<error message={message} type="error"/>'
        elif case.outcome is Outcome.NOT_RUN:
            body = f"<skipped message={message}/>"
        lines.append(f"<testcase {attrs}>{body}</testcase>")
    lines += ["</testsuite>", "</testsuites>"]
    return "\n".join(lines) + "\n"


def render_json(result: AuditResult) -> str:
    return json.dumps(json_document(result), indent=2, ensure_ascii=False) + "\n"


def render_sarif(result: AuditResult) -> str:
    return json.dumps(sarif_document(result), indent=2, ensure_ascii=False) + "\n"


FORMATS: dict[str, Callable[[AuditResult], str]] = {
    "text": render_text,
    "json": render_json,
    "sarif": render_sarif,
    "junit": junit_document,
}


def render(result: AuditResult, fmt: str) -> str:
    return FORMATS[fmt](result)
