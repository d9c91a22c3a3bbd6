"""Judge captured texts: every hit located by sink and field, allowed or forbidden by policy."""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from .capture import Captured
from .detect import JOIN_SEPARATOR, Scanner
from .findings import Finding
from .policy import Policy, SinkClass

__all__ = ["Leak", "judge", "format_leaks"]


@dataclass(frozen=True)
class Leak:
    """A secret seen in a sink. ``allowed`` leaks (sensitive context in an operator log, by
    default) are listed in the report but do not fail the test."""

    finding: Finding
    sink: str
    sink_class: SinkClass
    path: str
    allowed: bool
    note: str = ""

    @property
    def where(self) -> str:
        return f"{self.sink} {self.path}"

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        data["sink_class"] = self.sink_class.value
        return data


def _suspects(scanner: Scanner, items: list[Captured]) -> set[int]:
    """Indexes of the items that hold a hit, from one search over all of them joined: a
    test captures dozens of small texts, and most hold nothing."""
    texts = [
        t if isinstance(t, bytes) else t.encode("utf-8", "surrogatepass")
        for t in (item.text for item in items)
    ]
    starts, position = [], 0
    for text in texts:
        starts.append(position)
        position += len(text) + len(JOIN_SEPARATOR)
    return {
        bisect.bisect_right(starts, start) - 1
        for start in scanner.hit_starts(JOIN_SEPARATOR.join(texts))
    }


def judge(scanner: Scanner, captured: Iterable[Captured], policy: Policy) -> list[Leak]:
    leaks: list[Leak] = []
    pending_fallback: list[tuple[Captured, Finding]] = []
    shown: set[tuple[str, str]] = set()  # (group, secret id) seen at field level
    items = list(captured)
    suspects = _suspects(scanner, items)
    for index, item in enumerate(items):
        if index not in suspects:
            continue
        for finding in scanner.scan(item.text, source=item.sink):
            if item.fallback:
                pending_fallback.append((item, finding))
                continue
            if item.group:
                shown.add((item.group, finding.secret_id))
            leaks.append(_leak(item, finding, policy))
    for item, finding in pending_fallback:
        if (item.group, finding.secret_id) not in shown:
            shown.add((item.group, finding.secret_id))
            leaks.append(_leak(item, finding, policy))
    return leaks


def _leak(item: Captured, finding: Finding, policy: Policy) -> Leak:
    return Leak(
        finding=finding,
        sink=item.sink,
        sink_class=item.sink_class,
        path=item.path,
        allowed=policy.allows(finding.secret_class, item.sink_class),
        note=item.note,
    )


def format_leaks(leaks: list[Leak], *, header: str = "") -> str:
    """A failure message a person can act on, grouped per secret; masked evidence only."""
    lines = [header] if header else []
    by_secret: dict[str, list[Leak]] = {}
    for leak in leaks:
        by_secret.setdefault(leak.finding.secret_id, []).append(leak)
    for secret_id, group in by_secret.items():
        first = group[0].finding
        lines.append(f"{secret_id} ({first.kind}, {first.secret_class} secret):")
        for leak in group:
            verdict = "allowed" if leak.allowed else "LEAK"
            lines.append(
                f"  [{verdict}] {leak.sink_class.value}: {leak.where}  form {leak.finding.form}"
                f"  line {leak.finding.line}"
            )
            lines.append(f"      {leak.finding.excerpt}")
            if leak.note:
                lines.append(f"      ({leak.note})")
    return "\n".join(lines)
