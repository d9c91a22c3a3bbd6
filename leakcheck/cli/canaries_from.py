"""``--canaries-from REPORT``: the canaries a pytest run planted, rebuilt from its JSON
report (seed, test ids, canary ids; never a value)."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from ..canaries import KINDS, CanaryFactory, Secret
from ..findings import MASK_LABEL
from ..serialize import read_json_file
from .budget import Budget, budget_for
from .console import UsageError, display

__all__ = ["canaries_from_report", "load_canaries"]


#: A canary id in a report: KIND#N, N from 1 (ASCII digits: "²".isdigit() is true)
_CANARY_ID = re.compile(r"([a-z_]{1,32})#([1-9][0-9]{0,8})")


def load_canaries(path: str, budget: Budget | None = None) -> tuple[list[Secret], int, int]:
    """The canaries a pytest run planted, rebuilt from its ``--leakcheck-report`` (the
    report holds their seed, tests and ids, never a value); how many secrets its tests
    registered themselves (those come with ``--secrets-file``); and how many canaries
    cannot be rebuilt, their test's id having held a secret (masked in the report).
    ``budget``: how many more secrets the scan may take."""
    document = read_json_file(path, f"report {path!r}", UsageError, surrogates=False)
    return canaries_from_report(document, path, budget)


def canaries_from_report(
    document: Any, path: str = "<report>", budget: Budget | None = None
) -> tuple[list[Secret], int, int]:
    """``load_canaries`` of a report already read (``path`` names it in messages)."""
    budget = budget_for() if budget is None else budget
    if not (
        isinstance(document, dict)
        and document.get("tool") == "leakcheck"
        and isinstance(document.get("seed"), str)
        and isinstance(document.get("tests"), list)
    ):
        raise UsageError(
            f"{path!r} is not a leakcheck report (pytest --leakcheck-report=PATH writes one)"
        )
    seed, registered, lost = document["seed"], 0, 0
    planned: list[tuple[str, str, int]] = []  # (test, kind, n): checked and counted first
    for n, record in enumerate(document["tests"], start=1):
        listed = record.get("secrets") if isinstance(record, dict) else None
        test = record.get("test") if isinstance(record, dict) else None
        if not isinstance(listed, list) or not isinstance(test, str):
            raise UsageError(
                f"report {path!r} test {n}: no list of its secrets (written by an older "
                "leakcheck? run pytest again)"
            )
        # a test id that held a secret was masked in the report: its canaries were made
        # from the id as it was, which the report no longer has
        masked_id = MASK_LABEL.search(test) is not None
        for entry in listed:
            if not isinstance(entry, dict) or not entry.get("generated"):
                registered += 1
                continue
            if masked_id:
                lost += 1
                continue
            canary_id = entry.get("id")
            match = _CANARY_ID.fullmatch(canary_id) if isinstance(canary_id, str) else None
            if match is None or match.group(1) not in KINDS:
                shown = canary_id[:40] if isinstance(canary_id, str) else type(canary_id).__name__
                raise UsageError(f"report {path!r} test {n}: {shown!r} is not a canary id (KIND#N)")
            planned.append((test, match.group(1), int(match.group(2))))
    budget.check(len(planned), 0, f"report {path!r}")
    canaries: list[Secret] = []
    factories: dict[str, CanaryFactory] = {}
    for test, kind, number in planned:
        factory = factories.get(test)
        if factory is None:
            factory = factories[test] = CanaryFactory(seed, namespace=test)
        canary = factory.nth(kind, number)
        canaries.append(dataclasses.replace(canary, id=f"{canary.id}@{display(test)}"))
    budget.check(len(canaries), sum(len(c.value) for c in canaries), f"report {path!r}")
    return canaries, registered, lost
