"""``--canaries-from REPORT``: the canaries a pytest run planted, rebuilt from its JSON
report (seed, test ids, canary ids; never a value), each test's entry read as the plugin
wrote it, a ``records.TestRecord``."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from ..canaries import KINDS, CanaryFactory, Secret
from ..findings import MASK_LABEL
from ..records import TestRecord
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
            match = _CANARY_ID.fullmatch(secret.id)
            if match is None or match.group(1) not in KINDS:
                shown = secret.id[:40]
                raise UsageError(f"report {path!r} test {n}: {shown!r} is not a canary id (KIND#N)")
            planned.append((record.test, match.group(1), int(match.group(2))))
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


def _record(raw: Any, n: int, path: str) -> TestRecord:
    """The ``n``-th test entry of a report, read as the plugin writes it; an entry that is
    none (hand-written, or from before test entries listed their secrets) is a usage error,
    never a traceback."""
    if not (
        isinstance(raw, dict)
        and isinstance(raw.get("test"), str)
        and isinstance(raw.get("secrets"), list)
    ):
        raise UsageError(
            f"report {path!r} test {n}: no list of its secrets (written by an older "
            "leakcheck? run pytest again)"
        )
    try:
        return TestRecord.from_json(raw)
    except (AttributeError, KeyError, TypeError, ValueError):
        raise UsageError(
            f"report {path!r} test {n}: not a test entry as leakcheck writes one (run pytest again)"
        ) from None
