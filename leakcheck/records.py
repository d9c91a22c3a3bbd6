"""What crosses a boundary, as types: a matrix case's result and a test's report record.

A stage-matrix case's result is made by the matrix, completed by the plugin (the leak and
snapshot verdicts come at the end of the test), written into the JSON report, merged from
xdist workers, and read back by the grid, ``leakcheck scan --canaries-from`` and ``make
demo``. Each of them goes through these classes; ``to_json`` writes the report's JSON
exactly as it always was (key order included) and ``from_json`` reads it back. Neither
holds a secret's value: ids, kinds, names and masked excerpts only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

__all__ = ["Assertion", "CaseResult", "SecretRef", "TestRecord"]


class Assertion(str, Enum):
    """What a matrix case can fail: the four assertions, a stage (or a placement's
    credential) never reached, drift, and the gateway raising instead of returning."""

    CONTRACT = "contract"
    LEAKS = "leaks"
    HYGIENE = "hygiene"
    RECORD = "record"
    HARNESS = "harness"
    SNAPSHOT = "snapshot"
    RAISED = "raised"

    def __str__(self) -> str:  # its name in every text: "contract", not "Assertion.CONTRACT"
        return self.value


@dataclass
class CaseResult:
    """One stage-matrix case: what it was, the request id it returned, what failed, and
    what was not checked (the contract switched off, no protected record): never "ok".
    ``unchecked`` is written only when it holds something, so a report of a target that
    checks everything has the keys it always had."""

    operation: str
    stage: str
    placement: str
    request_id: str | None = None
    failed: set[Assertion] = field(default_factory=set)
    unchecked: set[Assertion] = field(default_factory=set)
    #: the stages of this case's operation that no case of its matrix runs, no placement
    #: of the target applying to them (a transport stage runs with the credential
    #: placements only): said under the grid, never a silent gap
    caseless: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "operation": self.operation,
            "stage": self.stage,
            "placement": self.placement,
            "request_id": self.request_id,
            "failed": sorted(a.value for a in self.failed),
        }
        if self.unchecked:
            data["unchecked"] = sorted(a.value for a in self.unchecked)
        if self.caseless:
            data["caseless"] = list(self.caseless)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CaseResult:
        return cls(
            operation=data["operation"],
            stage=data["stage"],
            placement=data["placement"],
            request_id=data.get("request_id"),
            failed={Assertion(name) for name in data.get("failed", [])},
            unchecked={Assertion(name) for name in data.get("unchecked", [])},
            caseless=tuple(str(stage) for stage in data.get("caseless", ())),
        )


@dataclass(frozen=True)
class SecretRef:
    """A secret a test planted or registered, by id and kind: never its value (``leakcheck
    scan --canaries-from`` rebuilds the generated ones from these, the seed and the test)."""

    id: str
    kind: str
    generated: bool

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "generated": self.generated}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SecretRef:
        return cls(str(data.get("id", "")), str(data.get("kind", "")), bool(data.get("generated")))


@dataclass
class TestRecord:
    """One test's entry in the JSON report (``--leakcheck-report``). ``reason`` says why a
    failed test failed, one cause a line (``leaks: ...``, ``stage not reached: ...``,
    ``contract: ...``, ``gateway raised: ...``, ``snapshot drift: ...``, ``test failed:
    ...``); written only when it holds something."""

    __test__ = False  # not a test class, whatever its name

    test: str
    forbidden: int
    findings: list[dict[str, Any]] = field(default_factory=list)
    secrets: list[SecretRef] = field(default_factory=list)
    inactive_sinks: dict[str, str] = field(default_factory=dict)
    not_inspected: list[dict[str, Any]] = field(default_factory=list)
    matrix: CaseResult | None = None
    outcome: str = ""
    reason: str = ""
    #: the test made or registered secrets and nothing caller-visible was judged: nothing
    #: exposed, no exception reached it, nothing on stdout (its tool response, a local,
    #: was never searched); written only when true
    nothing_exposed: bool = False
    #: the test catches exceptions itself (``try``/``except``) and this Python could not
    #: watch what it caught (``sys.monitoring``: 3.12+); written only when true
    catches_unjudged: bool = False

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "test": self.test,
            "forbidden": self.forbidden,
            "findings": self.findings,
            "secrets": [secret.to_json() for secret in self.secrets],
            "inactive_sinks": self.inactive_sinks,
            "not_inspected": self.not_inspected,
        }
        if self.matrix is not None:
            data["matrix"] = self.matrix.to_json()
        if self.outcome:
            data["outcome"] = self.outcome
        if self.reason:
            data["reason"] = self.reason
        if self.nothing_exposed:
            data["nothing_exposed"] = True
        if self.catches_unjudged:
            data["catches_unjudged"] = True
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TestRecord:
        matrix = data.get("matrix")
        return cls(
            test=data["test"],
            forbidden=int(data.get("forbidden", 0)),
            findings=list(data.get("findings", [])),
            secrets=[SecretRef.from_json(s) for s in data.get("secrets", [])],
            inactive_sinks=dict(data.get("inactive_sinks", {})),
            not_inspected=list(data.get("not_inspected", [])),
            matrix=CaseResult.from_json(matrix) if isinstance(matrix, dict) else None,
            outcome=str(data.get("outcome", "")),
            reason=str(data.get("reason", "")),
            nothing_exposed=bool(data.get("nothing_exposed", False)),
            catches_unjudged=bool(data.get("catches_unjudged", False)),
        )
