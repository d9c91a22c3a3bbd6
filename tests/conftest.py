"""Shared fixtures: reproducible canaries and the self-scan check.

``self_scan(text, secrets)`` asserts that no form of any secret appears in ``text`` (str or
bytes): the raw values by plain substring search, every other form with a decoding scanner.
Its failure message names secret ids, forms and locations, never a value.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable

import pytest

from leakcheck import CanaryFactory, Scanner, Secret

#: Every canary is derived from this seed and the test's node id; set LEAKCHECK_SEED to vary.
SEED = os.environ.get("LEAKCHECK_SEED", "leakcheck-tests-1")


@pytest.fixture
def canaries(request: pytest.FixtureRequest) -> CanaryFactory:
    """A ``CanaryFactory`` seeded per test, so a failure replays identically."""
    return CanaryFactory(seed=SEED, namespace=request.node.nodeid)


@functools.lru_cache(maxsize=32)
def _checker(secrets: tuple[Secret, ...]) -> Scanner:
    return Scanner(secrets, decode=True)


def self_scan(text: str | bytes, secrets: Iterable[Secret], what: str = "output") -> None:
    """Assert that no form of any of ``secrets`` appears in ``text``."""
    secrets = tuple(secrets)
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    raw = [s.id for s in secrets if s.value.encode("utf-8", "surrogatepass") in data]
    assert not raw, f"{what} holds the raw value of {raw}"
    if not secrets:
        return
    findings = _checker(secrets).scan(data)
    assert not findings, f"{what} leaks: " + "; ".join(
        f"{f.secret_id} as {f.form} at {f.line}:{f.column}" for f in findings
    )
