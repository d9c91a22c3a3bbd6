"""``check_envelope``: the agent-facing envelope, against its schema and its rules."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..stages import SSH, Stage, get_stage
from .expectations import DEFAULT, Expectations
from .schema import SchemaArg, declared, schema_validator, schema_violations
from .vocabulary import INSPECT, NAME_PATTERN, OUTCOME_UNKNOWN, RETRY, Violation

if TYPE_CHECKING:  # pragma: no cover
    pass


# --- the envelope check -------------------------------------------------------------------

_NAME_RE = re.compile(NAME_PATTERN)
_SEGMENT = re.compile(r"(?:^|\.)([A-Za-z_][A-Za-z0-9_-]*)|\[([0-9]+)\]")


def _has_path(data: Any, name: str) -> bool:
    """Is ``name`` (``options.branch``, ``items[0].name``) a key path of ``data``?"""
    if isinstance(data, Mapping) and name in data:
        return True
    node, pos = data, 0
    for match in _SEGMENT.finditer(name):
        if match.start() != pos:
            return False
        pos = match.end()
        key, index = match.group(1), match.group(2)
        if key is not None:
            if not isinstance(node, Mapping) or key not in node:
                return False
            node = node[key]
        else:
            if isinstance(node, (str, bytes)) or not isinstance(node, Sequence):
                return False
            if int(index) >= len(node):
                return False
            node = node[int(index)]
    return pos == len(name) and pos > 0


def _parse(envelope: Any) -> tuple[Any, list[Violation]]:
    if isinstance(envelope, (bytes, bytearray)):
        try:
            envelope = bytes(envelope).decode("utf-8")
        except UnicodeDecodeError:
            return None, [Violation("envelope-json", "", "the envelope is not UTF-8 text")]
    if isinstance(envelope, str):
        try:
            return json.loads(envelope), []
        except json.JSONDecodeError as exc:
            return None, [
                Violation(
                    "envelope-json",
                    "",
                    f"the envelope is not valid JSON (line {exc.lineno}, column {exc.colno})",
                )
            ]
    return envelope, []


def _known(value: Any, vocabulary: Sequence[str]) -> str:
    # vocabulary words are safe to show; anything else might be the leaked value itself
    return value if isinstance(value, str) and value in vocabulary else "another value"


def check_envelope(
    envelope: Mapping[str, Any] | str | bytes,
    *,
    stage: str | Stage,
    operation: str | None,
    repeatable: bool,
    expectations: Expectations = DEFAULT,
    schema: SchemaArg = None,
    agent_input: Any = None,
) -> list[Violation]:
    """Every violation of the contract by ``envelope`` (a mapping, or its JSON text) for a
    failure at ``stage`` of ``operation``: the schema, the semantic rules, and the code,
    action and fields ``expectations`` expect. ``agent_input`` (what the agent sent) lets
    ``invalid_fields`` be checked as key paths of it. An empty list means it passes."""
    stage = get_stage(stage)
    if not isinstance(expectations, Expectations):
        raise TypeError("expectations: an Expectations object")
    validator, schema_doc = schema_validator(schema)
    expected = expectations.expected(stage, operation=operation, repeatable=repeatable)
    enum = schema_doc.get("properties", {}).get("code", {}).get("enum")
    if isinstance(enum, list) and expected.code not in enum:
        raise ValueError(
            f"the expectation for stage {stage.name} is code {expected.code}, which the "
            "schema's code enum does not allow"
        )

    instance, found = _parse(envelope)
    if found:
        return found
    found, bad = schema_violations(validator, declared(schema_doc), instance)
    if not isinstance(instance, Mapping):
        return found or [Violation("envelope-json", "", "the envelope is not a JSON object")]

    def usable(name: str, kind: type) -> bool:
        return name in instance and name not in bad and isinstance(instance[name], kind)

    code, action = instance.get("code"), instance.get("action")
    has_code, has_action = usable("code", str), usable("action", str)
    context = f"stage {stage.name}" + (f", operation {operation}" if operation else "")
    context += ", repeatable" if repeatable else ", not repeatable"

    if has_action and usable("retryable", bool) and instance["retryable"] != (action == RETRY):
        found.append(
            Violation(
                "retryable-matches-action",
                "/retryable",
                f"must be {str(action == RETRY).lower()} with action "
                f"{_known(action, expectations.actions)} (true exactly with retry_after_delay)",
            )
        )
    if has_code and has_action and (code == OUTCOME_UNKNOWN) != (action == INSPECT):
        found.append(
            Violation(
                "outcome-unknown-matches-action",
                "/action" if code == OUTCOME_UNKNOWN else "/code",
                "code OUTCOME_UNKNOWN goes with action inspect_outcome, and only with it",
            )
        )
    if "retry_after_seconds" in instance and has_action and action != RETRY:
        found.append(
            Violation(
                "retry-after-needs-retry-action",
                "/retry_after_seconds",
                "is allowed only with action retry_after_delay",
            )
        )
    if "http_status" in instance and "http_status" not in bad:
        if stage.response_received is False or stage.transport == SSH:
            found.append(
                Violation(
                    "http-status-needs-response",
                    "/http_status",
                    f"is allowed only when an upstream HTTP response arrived ({stage.name}: "
                    "none did)",
                )
            )
        elif stage.http_status is not None and instance["http_status"] != stage.http_status:
            found.append(
                Violation(
                    "http-status-matches-stage",
                    "/http_status",
                    f"must be the upstream's status, {stage.http_status} ({stage.name})",
                )
            )
    if usable("invalid_fields", list):
        for n, name in enumerate(instance["invalid_fields"]):
            where = f"/invalid_fields/{n}"
            if not isinstance(name, str) or not _NAME_RE.fullmatch(name) or len(name) > 200:
                found.append(
                    Violation(
                        "invalid-fields-are-names",
                        where,
                        f"must be a field name or key path (pattern {NAME_PATTERN}), not a value",
                    )
                )
            elif agent_input is not None and not _has_path(agent_input, name):
                found.append(
                    Violation(
                        "invalid-fields-in-input",
                        where,
                        "names no key path of the agent input (a value in place of a name?)",
                    )
                )
    if has_code and code == "INVALID_INPUT" and "invalid_fields" not in instance:
        found.append(
            Violation(
                "invalid-input-needs-fields",
                "/invalid_fields",
                "is required with code INVALID_INPUT (the names of the fields to repair)",
            )
        )
    if operation is not None and usable("operation", str) and instance["operation"] != operation:
        found.append(
            Violation(
                "operation-matches-call",
                "/operation",
                f"must be the call's operation class, {operation}",
            )
        )

    if has_code and code != expected.code:
        found.append(
            Violation(
                "expected-code",
                "/code",
                f"expected {expected.code} ({context}), got {_known(code, expectations.codes)}",
            )
        )
    if has_action and action != expected.action:
        found.append(
            Violation(
                "expected-action",
                "/action",
                f"expected {expected.action} ({context}), got "
                f"{_known(action, expectations.actions)}",
            )
        )
    for name in expected.requires:
        if name not in instance:
            found.append(
                Violation(
                    "expected-field",
                    f"/{name}",
                    f"is required for {context} (code {expected.code})",
                )
            )
    return found
