"""The agent error contract: the shipped schema, every semantic rule (a violating sample
caught, a valid sample passing), the default expectations for every stage, overrides,
request-id opacity, the protected record, ``leakcheck schema``, and no violation text that
carries any form of a canary."""

from __future__ import annotations

import base64
import json
import random
import secrets
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from conftest import self_scan
from jsonschema import Draft202012Validator

from leakcheck.cli import main
from leakcheck.contract import (
    ACTIONS,
    BOUNDARIES,
    CODES,
    DEFAULT,
    NAME_PATTERN,
    OPERATION_PATTERN,
    OPTIONAL_FIELDS,
    REQUEST_ID_PATTERN,
    REQUIRED_FIELDS,
    RULES,
    SCHEMA_VERSIONS,
    Expectations,
    Expected,
    Violation,
    check_envelope,
    check_record,
    check_request_ids,
    example_envelope,
    load_schema,
)
from leakcheck.stages import GATEWAY, STAGES, get_stage

OP = "create_deployment"
RID = "act_Qm9vZ2xlLWlzLW5vdC1h"  # 22 URL-safe characters after the prefix
DELETE = object()


def patched(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in patch.items():
        if value is DELETE:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def pairs(violations: list[Violation]) -> set[tuple[str, str]]:
    return {(v.rule, v.field) for v in violations}


def base_for(stage: str, repeatable: bool = False) -> dict[str, Any]:
    return example_envelope(
        stage, operation=OP, repeatable=repeatable, request_id=RID, invalid_fields=["repository"]
    )


def schema_without_name_pattern() -> dict[str, Any]:
    schema = load_schema()
    del schema["properties"]["invalid_fields"]["items"]["pattern"]
    return schema


# --- the schema file ----------------------------------------------------------------------


def test_schema_is_valid_2020_12_and_strict() -> None:
    schema = load_schema()
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"].endswith(":agent-error:v1")
    assert schema["additionalProperties"] is False
    assert schema["required"] == list(REQUIRED_FIELDS)
    assert list(schema["properties"]) == [*REQUIRED_FIELDS, *OPTIONAL_FIELDS]
    props = schema["properties"]
    assert props["ok"] == {"description": props["ok"]["description"], "const": False}
    assert props["code"]["enum"] == list(CODES)
    assert props["action"]["enum"] == list(ACTIONS)
    # the module's patterns apply the schema's under a user's own schema: they must agree
    assert props["request_id"]["pattern"] == REQUEST_ID_PATTERN
    assert props["operation"]["pattern"] == OPERATION_PATTERN
    assert props["invalid_fields"]["items"]["pattern"] == NAME_PATTERN
    assert props["message"]["maxLength"] == 200
    assert (props["http_status"]["minimum"], props["http_status"]["maximum"]) == (100, 599)
    bounds = props["retry_after_seconds"]
    assert (bounds["minimum"], bounds["maximum"]) == (1, 3600)


def test_load_schema_versions_and_copies() -> None:
    assert SCHEMA_VERSIONS == ("v1",)
    first = load_schema("v1")
    first["properties"]["code"]["enum"].append("EDITED")
    assert "EDITED" not in load_schema()["properties"]["code"]["enum"]
    # an edited copy changes nothing for the default check
    assert (
        check_envelope(base_for("http_401"), stage="http_401", operation=OP, repeatable=False) == []
    )
    with pytest.raises(
        ValueError, match=r"unknown agent-error schema version 'v9'; known versions: v1"
    ):
        load_schema("v9")


def test_the_seed_examples_fail_only_on_their_short_request_ids() -> None:
    """The article's own examples use 8 hex digits (32 bits) as request ids: our schema
    asks for 16+ characters, and nothing else in them is wrong."""
    auth = {
        "ok": False,
        "code": "AUTH_FAILED",
        "message": "The remote service rejected the stored credential.",
        "action": "stop_and_report",
        "retryable": False,
        "request_id": "act_7f3c2a91",
        "http_status": 401,
    }
    found = check_envelope(auth, stage="http_401", operation=None, repeatable=False)
    assert pairs(found) == {("schema.pattern", "/request_id")}
    unknown = {
        "ok": False,
        "code": "OUTCOME_UNKNOWN",
        "message": "The connection ended after the request started. "
        "The remote action may have completed.",
        "action": "inspect_outcome",
        "retryable": False,
        "request_id": "act_9b18d4e0",
        "operation": "create_deployment",
    }
    found = check_envelope(unknown, stage="timeout_after_send", operation=OP, repeatable=False)
    assert pairs(found) == {("schema.pattern", "/request_id")}


# --- every rule: a violating sample caught, a valid sample passing ------------------------


@dataclass
class Case:
    id: str
    stage: str
    bad: dict[str, Any]
    expected: set[tuple[str, str]]
    good: dict[str, Any] = field(default_factory=dict)
    repeatable: bool = False
    kwargs: dict[str, Any] = field(default_factory=dict)


CASES = [
    # the schema
    Case("extra-field", "http_401", {"request_headers": {"Accept": "x"}},
         {("schema.additionalProperties", "/request_headers")}),
    Case("missing-message", "http_401", {"message": DELETE}, {("schema.required", "/message")}),
    Case("missing-request-id", "http_401", {"request_id": DELETE},
         {("schema.required", "/request_id")}),
    Case("ok-true", "http_401", {"ok": True}, {("schema.const", "/ok")}),
    Case("ok-zero", "http_401", {"ok": 0}, {("schema.const", "/ok")}),
    Case("code-unknown", "http_401", {"code": "ERROR"}, {("schema.enum", "/code")}),
    Case("action-unknown", "http_401", {"action": "retry"}, {("schema.enum", "/action")}),
    Case("retryable-string", "http_401", {"retryable": "no"}, {("schema.type", "/retryable")}),
    Case("message-long", "http_401", {"message": "x" * 201}, {("schema.maxLength", "/message")},
         good={"message": "x" * 200}),
    Case("message-empty", "http_401", {"message": ""}, {("schema.minLength", "/message")}),
    Case("message-multiline", "http_401", {"message": "failed\nTraceback (most recent call)"},
         {("schema.pattern", "/message")}),
    Case("request-id-short", "http_401", {"request_id": "act_7f3c2a91"},
         {("schema.pattern", "/request_id")}, good={"request_id": "a" * 16}),
    Case("request-id-dotted", "http_401", {"request_id": "api.internal.example-1"},
         {("schema.pattern", "/request_id")}),
    Case("http-status-type", "http_401", {"http_status": "401"}, {("schema.type", "/http_status")}),
    Case("http-status-range", "http_401", {"http_status": 700},
         {("schema.maximum", "/http_status")}),
    Case("operation-route", "http_401", {"operation": "POST /deployments"},
         {("schema.pattern", "/operation")}),
    Case("retry-after-zero", "http_429", {"retry_after_seconds": 0},
         {("schema.minimum", "/retry_after_seconds")}, good={"retry_after_seconds": 1}),
    Case("retry-after-day", "http_429", {"retry_after_seconds": 86400},
         {("schema.maximum", "/retry_after_seconds")}, good={"retry_after_seconds": 3600}),
    Case("retry-after-bool", "http_429", {"retry_after_seconds": True},
         {("schema.type", "/retry_after_seconds")}, good={"retry_after_seconds": 2.5}),
    Case("invalid-fields-empty", "invalid_input", {"invalid_fields": []},
         {("schema.minItems", "/invalid_fields")}),
    Case("invalid-fields-repeat", "invalid_input", {"invalid_fields": ["repository"] * 2},
         {("schema.uniqueItems", "/invalid_fields")}),
    Case("invalid-fields-value", "invalid_input", {"invalid_fields": ["acme web/repo"]},
         {("schema.pattern", "/invalid_fields/0")},
         good={"invalid_fields": ["options.branch", "items[0].name"]}),
    # the semantic rules
    Case("retryable-without-retry", "http_401", {"retryable": True},
         {("retryable-matches-action", "/retryable")}),
    Case("retry-without-retryable", "http_429", {"retryable": False},
         {("retryable-matches-action", "/retryable")}),
    Case("outcome-unknown-with-stop", "timeout_after_send", {"action": "stop_and_report"},
         {("outcome-unknown-matches-action", "/action"), ("expected-action", "/action")}),
    Case("inspect-without-outcome-unknown", "http_401", {"action": "inspect_outcome"},
         {("outcome-unknown-matches-action", "/code"), ("expected-action", "/action")}),
    Case("retry-after-with-stop", "http_401", {"retry_after_seconds": 30},
         {("retry-after-needs-retry-action", "/retry_after_seconds")}),
    Case("http-status-without-response", "dns_failure", {"http_status": 502},
         {("http-status-needs-response", "/http_status")}),
    Case("http-status-over-ssh", "ssh_command_failed", {"http_status": 500},
         {("http-status-needs-response", "/http_status")}),
    Case("http-status-before-send", "invalid_input", {"http_status": 400},
         {("http-status-needs-response", "/http_status")}),
    Case("http-status-differs", "http_401", {"http_status": 403},
         {("http-status-matches-stage", "/http_status")}, good={"http_status": DELETE}),
    Case("invalid-fields-value-custom-schema", "invalid_input",
         {"invalid_fields": ["acme web/repo"]}, {("invalid-fields-are-names", "/invalid_fields/0")},
         kwargs={"schema": schema_without_name_pattern()}),
    Case("invalid-fields-not-in-input", "invalid_input",
         {"invalid_fields": ["repository", "acme-web"]},
         {("invalid-fields-in-input", "/invalid_fields/1")},
         good={"invalid_fields": ["repository", "options.branch", "items[1]"]},
         kwargs={"agent_input": {"repository": "acme-web", "options": {"branch": "main"},
                                 "items": ["a", "b"]}}),
    Case("invalid-input-without-fields", "invalid_input", {"invalid_fields": DELETE},
         {("invalid-input-needs-fields", "/invalid_fields")}),
    Case("operation-differs", "http_401", {"operation": "delete_repository"},
         {("operation-matches-call", "/operation")}, good={"operation": DELETE}),
    Case("code-not-expected", "http_401", {"code": "PERMISSION_DENIED"},
         {("expected-code", "/code")}),
    Case("denial-as-auth-failure", "approval_declined", {"code": "AUTH_FAILED"},
         {("expected-code", "/code")}),
    Case("action-not-expected", "http_401", {"action": "repair_input"},
         {("expected-action", "/action")}),
    Case("retry-on-non-repeatable-5xx", "http_5xx",
         {"code": "UPSTREAM_UNAVAILABLE", "action": "retry_after_delay", "retryable": True},
         {("expected-code", "/code"), ("expected-action", "/action")}),
    Case("rate-limit-without-delay", "http_429", {"retry_after_seconds": DELETE},
         {("expected-field", "/retry_after_seconds")}),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rule(case: Case) -> None:
    base = base_for(case.stage, case.repeatable)
    kwargs = {"stage": case.stage, "operation": OP, "repeatable": case.repeatable, **case.kwargs}
    assert check_envelope(base, **kwargs) == [], "the base envelope must pass"
    assert check_envelope(patched(base, case.good), **kwargs) == [], "the valid sample"
    found = check_envelope(patched(base, case.bad), **kwargs)
    assert pairs(found) == case.expected
    for violation in found:
        assert violation.rule in RULES or violation.rule.startswith("schema.")
        assert violation.message


@pytest.mark.parametrize(
    "envelope, expected",
    [
        ("{not json", {("envelope-json", "")}),
        (b"\xff\xfe", {("envelope-json", "")}),
        ("[]", {("schema.type", "")}),
        (["ok"], {("schema.type", "")}),
    ],
    ids=["bad-json", "not-utf8", "json-list", "list"],
)
def test_envelope_that_is_no_object(envelope: Any, expected: set[tuple[str, str]]) -> None:
    found = check_envelope(envelope, stage="http_401", operation=OP, repeatable=False)
    assert pairs(found) == expected


def test_envelope_as_json_text_passes_like_the_mapping() -> None:
    text = json.dumps(base_for("http_401"))
    assert check_envelope(text, stage="http_401", operation=OP, repeatable=False) == []
    assert check_envelope(text.encode(), stage="http_401", operation=OP, repeatable=False) == []


def test_pointers_keep_declared_names_after_an_unknown_field() -> None:
    """An unknown field in a nested object does not hide the schema's declared names: its
    own pointer names its parent, and so do the pointers of the errors after it."""
    schema = load_schema()
    schema["properties"]["deployment_parameters_override"] = {
        "type": "object",
        "properties": {"zone": {"type": "string"}},
        "additionalProperties": False,
    }
    schema["properties"]["limits"] = {
        "type": "object",
        "properties": {"maximum_retry_after_seconds_hint": {"type": "integer"}},
    }
    envelope = patched(
        base_for("http_401"),
        {
            "deployment_parameters_override": {"zone": "a", "region": "b"},
            "limits": {"maximum_retry_after_seconds_hint": "soon"},
        },
    )
    found = check_envelope(
        envelope, stage="http_401", operation=OP, repeatable=False, schema=schema
    )
    assert pairs(found) == {
        ("schema.additionalProperties", "/deployment_parameters_override/region"),
        ("schema.type", "/limits/maximum_retry_after_seconds_hint"),
    }


def test_every_rule_has_a_violating_sample() -> None:
    covered = {rule for case in CASES for rule, _ in case.expected}
    covered |= {"envelope-json"}
    covered |= {rule for _, rules in ID_CASES for rule in rules}
    covered |= {rule for *_, rule, _field in RECORD_CASES}
    # test_ids_holding_a_hostname_user_or_secret
    covered |= {"request-id-secret", "request-id-forbidden-word"}
    assert set(RULES) <= covered, sorted(set(RULES) - covered)


# --- default expectations for every stage -------------------------------------------------

S, R, I = "stop_and_report", "retry_after_delay", "inspect_outcome"  # noqa: E741
UNKNOWN = ("OUTCOME_UNKNOWN", I)
#: the design's table, and the choices for the stages it leaves open
TABLE: dict[str, tuple[tuple[str, str], tuple[str, str]]] = {
    "invalid_input": (("INVALID_INPUT", "repair_input"),) * 2,
    "vault_locked": (("VAULT_LOCKED", S),) * 2,
    "approval_declined": (("USER_DENIED", S),) * 2,
    "gateway_exception": (("INTERNAL_ERROR", S),) * 2,
    "http_401": (("AUTH_FAILED", S),) * 2,
    "http_403": (("PERMISSION_DENIED", S),) * 2,
    "http_429": (("RATE_LIMITED", R),) * 2,
    "http_5xx": (UNKNOWN, ("UPSTREAM_UNAVAILABLE", R)),
    "malformed_json": (UNKNOWN, ("UPSTREAM_INVALID_RESPONSE", S)),
    "html_login_page": (UNKNOWN, ("UPSTREAM_INVALID_RESPONSE", S)),
    "redirect_signed_url": (("UPSTREAM_INVALID_RESPONSE", S),) * 2,
    "dns_failure": (("UPSTREAM_UNREACHABLE", R),) * 2,
    "connection_refused": (("UPSTREAM_UNREACHABLE", R),) * 2,
    "tls_hostname_mismatch": (("REMOTE_UNVERIFIED", S),) * 2,
    "tls_untrusted_ca": (("REMOTE_UNVERIFIED", S),) * 2,
    "timeout_before_send": (("UPSTREAM_UNREACHABLE", R),) * 2,
    "timeout_after_send": (UNKNOWN, ("UPSTREAM_UNAVAILABLE", R)),
    "reset_after_send": (UNKNOWN, ("UPSTREAM_UNAVAILABLE", R)),
    "truncated_body": (UNKNOWN, ("UPSTREAM_INVALID_RESPONSE", S)),
    "ssh_auth_rejected": (("AUTH_FAILED", S),) * 2,
    "ssh_host_key_mismatch": (("REMOTE_UNVERIFIED", S),) * 2,
    "ssh_unknown_host_key": (("REMOTE_UNVERIFIED", S),) * 2,
    "ssh_command_failed": (("REMOTE_REJECTED", S),) * 2,
    "ssh_hang_after_command": (UNKNOWN, ("UPSTREAM_UNAVAILABLE", R)),
    "ssh_connection_refused": (("UPSTREAM_UNREACHABLE", R),) * 2,
}


def test_every_stage_has_a_default() -> None:
    assert set(TABLE) == set(STAGES)


@pytest.mark.parametrize("repeatable", [False, True], ids=["once", "repeatable"])
@pytest.mark.parametrize("stage", list(STAGES))
def test_default_expectation(stage: str, repeatable: bool) -> None:
    expected = DEFAULT.expected(stage, operation=OP, repeatable=repeatable)
    assert (expected.code, expected.action) == TABLE[stage][repeatable]
    assert expected.retryable == (expected.action == R)
    # an envelope built from the expectation passes, JSON round trip included
    envelope = base_for(stage, repeatable)
    assert json.loads(json.dumps(envelope)) == envelope
    assert check_envelope(envelope, stage=stage, operation=OP, repeatable=repeatable) == []
    if get_stage(stage).http_status is not None:
        assert envelope["http_status"] == get_stage(stage).http_status
    # and the other repeatability's answer fails when it differs
    other = base_for(stage, not repeatable)
    found = check_envelope(other, stage=stage, operation=OP, repeatable=repeatable)
    assert bool(found) == (TABLE[stage][0] != TABLE[stage][1])


# --- overrides ----------------------------------------------------------------------------


def test_overrides_by_operation_stage_and_repeatability() -> None:
    custom = Expectations(
        {
            ("create_deployment", "http_5xx"): Expected("UPSTREAM_UNAVAILABLE", R),
            ("*", "redirect_signed_url", False): ("OUTCOME_UNKNOWN", I),
            ("*", "vault_locked"): ("VAULT_LOCKED", "stop_and_report"),
            ("list_repos", "http_429", True): Expected("RATE_LIMITED", R, ("retry_after_seconds",)),
        }
    )
    assert custom.expected("http_5xx", operation=OP).code == "UPSTREAM_UNAVAILABLE"
    assert custom.expected("http_5xx", operation="other").code == "OUTCOME_UNKNOWN"
    assert custom.expected("redirect_signed_url", operation=OP).code == "OUTCOME_UNKNOWN"
    redirect = custom.expected("redirect_signed_url", operation=OP, repeatable=True)
    assert redirect.code == "UPSTREAM_INVALID_RESPONSE"
    assert custom.expected("http_401", operation=None) == DEFAULT.expected("http_401")
    # check_envelope follows the override: the default answer now fails, the override passes
    default_answer = base_for("http_5xx")
    found = check_envelope(
        default_answer, stage="http_5xx", operation=OP, repeatable=False, expectations=custom
    )
    assert pairs(found) == {("expected-code", "/code"), ("expected-action", "/action")}
    answer = example_envelope("http_5xx", operation=OP, expectations=custom, request_id=RID)
    assert (
        check_envelope(
            answer, stage="http_5xx", operation=OP, repeatable=False, expectations=custom
        )
        == []
    )
    more = custom.override({(OP, "http_5xx", False): ("OUTCOME_UNKNOWN", I)})
    assert more.expected("http_5xx", operation=OP).code == "OUTCOME_UNKNOWN"
    assert custom.expected("http_5xx", operation=OP).code == "UPSTREAM_UNAVAILABLE"


@pytest.mark.parametrize(
    "make, fragments",
    [
        (lambda: Expectations({("*", "http_999"): ("AUTH_FAILED", S)}),
         ["unknown stage 'http_999'", "known stages: invalid_input, vault_locked"]),
        (lambda: Expectations({("*", "http_401"): ("AUTH_FAILD", S)}),
         ["unknown code 'AUTH_FAILD'", "known codes: INVALID_INPUT, VAULT_LOCKED"]),
        (lambda: Expectations({("*", "http_401"): ("AUTH_FAILED", "give_up")}),
         ["unknown action 'give_up'", "known actions: repair_input, stop_and_report"]),
        (lambda: Expectations({"http_401": ("AUTH_FAILED", S)}),  # type: ignore[dict-item]
         ["(operation, stage) or (operation, stage, repeatable)"]),
        (lambda: Expectations({("*", "http_401", "yes"): ("AUTH_FAILED", S)}),  # type: ignore[dict-item]
         ["repeatable is True or False"]),
        (lambda: Expectations({("*", "http_401"): "AUTH_FAILED"}),  # type: ignore[dict-item]
         ["an Expected or a (code, action) pair"]),
        (lambda: Expected("OUTCOME_UNKNOWN", S), ["goes with action inspect_outcome"]),
        (lambda: Expected("AUTH_FAILED", I), ["goes with action inspect_outcome"]),
        (lambda: Expected("AUTH_FAILED", S, ("retry_after_seconds",)),
         ["retry_after_seconds goes only with action retry_after_delay"]),
        (lambda: Expected("AUTH_FAILED", S, ("headers",)),
         ["unknown field(s) 'headers'", "optional fields: http_status"]),
    ],
    ids=["stage", "code", "action", "key", "repeatable", "value", "outcome-stop",
         "inspect-auth", "retry-after-stop", "requires"],
)  # fmt: skip
def test_bad_expectations_are_clear_value_errors(make: Callable[[], object], fragments) -> None:
    with pytest.raises(ValueError) as info:
        make()
    for fragment in fragments:
        assert fragment in str(info.value)


def test_extra_codes_with_a_schema_of_your_own(tmp_path: Path) -> None:
    schema = load_schema()
    schema["properties"]["code"]["enum"].append("QUOTA_EXCEEDED")
    custom = Expectations(
        {("*", "http_403"): ("QUOTA_EXCEEDED", S)}, extra_codes=["QUOTA_EXCEEDED"]
    )
    envelope = patched(base_for("http_403"), {"code": "QUOTA_EXCEEDED"})
    path = tmp_path / "agent-error.json"
    path.write_text(json.dumps(schema))
    for given in (schema, path, str(path)):
        found = check_envelope(
            envelope, stage="http_403", operation=OP, repeatable=False,
            expectations=custom, schema=given,
        )  # fmt: skip
        assert found == []
    # the default schema does not know the code: a configuration error, said plainly
    with pytest.raises(ValueError, match="QUOTA_EXCEEDED, which the schema's code enum"):
        check_envelope(
            envelope, stage="http_403", operation=OP, repeatable=False, expectations=custom
        )


@pytest.mark.parametrize(
    "content, fragment",
    [
        (None, "cannot read schema file"),
        ("{oops", "is not valid JSON (line 1, column 2)"),
        ('{"type": 5}', "not a valid JSON Schema: /type breaks"),
    ],
    ids=["missing", "bad-json", "bad-schema"],
)
def test_bad_user_schema(tmp_path: Path, content: str | None, fragment: str) -> None:
    path = tmp_path / "schema.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ValueError) as info:
        check_envelope(base_for("http_401"), stage="http_401", operation=OP, repeatable=False,
                       schema=path)  # fmt: skip
    assert fragment in str(info.value)


# --- no violation text carries a value ----------------------------------------------------


def violation_texts(found: list[Violation]) -> str:
    return "\n".join(f"{v}\n{v!r}\n{json.dumps(v.to_dict())}" for v in found)


def test_violations_never_echo_a_canary(canaries) -> None:
    bearer, api_key, user, host = (
        canaries(k) for k in ("bearer", "api_key", "user_name", "hostname")
    )
    password, prose = canaries("password"), canaries("prose")
    all_canaries = [bearer, api_key, user, host, password, prose]
    base = base_for("http_401")
    samples = [
        patched(base, {"code": bearer.value}),
        patched(base, {"action": api_key.value}),
        patched(base, {"upstream_body": prose.value}),
        patched(base, {"request_headers": {"Authorization": f"Bearer {bearer.value}"}}),
        patched(base, {bearer.value: 1, user.value: True, host.value: "x"}),  # canaries as keys
        patched(base, {"message": f"request failed: token={bearer.value} " + "x" * 200}),
        patched(base, {"message": f"failed\nAuthorization: Bearer {bearer.value}"}),
        patched(base, {"request_id": password.value}),
        patched(base, {"operation": f"https://{host.value}/deployments?key={api_key.value}"}),
        patched(base, {"operation": user.value}),
        patched(base, {"http_status": api_key.value, "retry_after_seconds": bearer.value}),
        patched(base, {"retryable": password.value, "ok": bearer.value}),
        patched(base, {"invalid_fields": [api_key.value, user.value]}),
        patched(base_for("invalid_input"), {"invalid_fields": [user.value, "repository"]}),
    ]
    texts = []
    for sample in samples:
        for kwargs in ({}, {"agent_input": {"repository": user.value}}):
            found = check_envelope(
                sample, stage="http_401", operation=OP, repeatable=False, **kwargs
            )
            assert found, "each sample breaks a rule"
            texts.append(violation_texts(found))
    # the user-name canary is a valid field name: named as a value, caught as absent input
    found = check_envelope(
        patched(base_for("invalid_input"), {"invalid_fields": [user.value]}),
        stage="invalid_input", operation=OP, repeatable=False,
        agent_input={"repository": user.value},
    )  # fmt: skip
    assert pairs(found) == {("invalid-fields-in-input", "/invalid_fields/0")}
    texts.append(violation_texts(found))
    # a canary anywhere in broken JSON text
    for text in (f'{{"code": "{bearer.value}", ', f"Traceback: {prose.value}"):
        found = check_envelope(text, stage="http_401", operation=OP, repeatable=False)
        assert [v.rule for v in found] == ["envelope-json"]
        texts.append(violation_texts(found))
    self_scan("\n".join(texts), all_canaries, "violation texts")
    # the test is meaningful: jsonschema's own messages do carry the values
    validator = Draft202012Validator(load_schema())
    own = " ".join(e.message for e in validator.iter_errors(samples[0]))
    assert bearer.value in own


# --- request ids --------------------------------------------------------------------------


def rules_of(found: list[Violation]) -> set[str]:
    return {v.rule for v in found}


def tokens(n: int, prefix: str = "") -> list[str]:
    return [prefix + secrets.token_urlsafe(16) for _ in range(n)]


def uuid7() -> str:
    millis = int(time.time() * 1000)
    rand = secrets.randbits(74)
    value = (
        (millis << 80) | (0x7 << 76) | ((rand >> 62) << 64) | (0b10 << 62) | (rand & (2**62 - 1))
    )
    return str(uuid.UUID(int=value))


def ulid() -> str:
    alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    value = (int(time.time() * 1000) << 80) | secrets.randbits(80)
    return "".join(alphabet[(value >> (5 * i)) & 31] for i in reversed(range(26)))


def shuffled(values: list[str]) -> list[str]:
    random.Random(7).shuffle(values)
    return values


NOW = datetime.now(timezone.utc)
ID_CASES: list[tuple[Callable[[], list[str]], set[str]]] = [
    (lambda: [f"req-{n:020d}" for n in range(1000, 1100)],
     {"request-id-sequential", "request-id-entropy"}),
    (lambda: shuffled([f"req_{n:016x}" for n in range(250, 350)]),
     {"request-id-sequential", "request-id-entropy"}),
    (lambda: ["act_" + secrets.token_hex(4) for _ in range(30)], {"request-id-entropy"}),
    (lambda: ["act_" + secrets.token_urlsafe(6) for _ in range(30)], {"request-id-entropy"}),
    (lambda: [str(uuid.uuid1()) for _ in range(30)],
     {"request-id-timestamp", "request-id-entropy", "request-id-sequential"}),
    (lambda: [str(uuid.uuid1())], {"request-id-timestamp"}),
    (lambda: [uuid7() for _ in range(5)], {"request-id-timestamp"}),
    (lambda: [ulid() for _ in range(5)], {"request-id-timestamp"}),
    (lambda: [f"act_{int(time.time())}_{t}" for t in tokens(5)], {"request-id-timestamp"}),
    (lambda: [f"act_{t}-{int(time.time() * 1000)}" for t in tokens(5)],
     {"request-id-timestamp"}),
    (lambda: [f"{NOW:%Y%m%d}_{t}" for t in tokens(5)], {"request-id-timestamp"}),
    (lambda: [f"{NOW:%Y%m%dT%H%M%S}Z{t}" for t in tokens(5)], {"request-id-timestamp"}),
    (lambda: [f"{NOW:%Y-%m-%d}_{t}" for t in tokens(5)], {"request-id-timestamp"}),
    (lambda: tokens(10) + tokens(1) * 2, {"request-id-unique"}),
    (lambda: [*tokens(5), "", None], {"request-id-type"}),  # type: ignore[list-item]
]  # fmt: skip


@pytest.mark.parametrize(
    "make, rules",
    ID_CASES,
    ids=["decimal-counter", "hex-counter-shuffled", "hex-32-bits",
         "urlsafe-48-bits", "uuid1-run", "uuid1-alone", "uuid7", "ulid", "unix-seconds",
         "unix-ms", "yyyymmdd", "iso-basic", "iso-date", "duplicate", "not-a-string"],
)  # fmt: skip
def test_request_ids_caught(make: Callable[[], list[str]], rules: set[str]) -> None:
    ids = make()
    found = check_request_ids(ids)
    assert rules_of(found) == rules
    text = violation_texts(found)
    for value in ids:
        if value:
            assert value not in text, "a violation echoes an id"


@pytest.mark.parametrize(
    "make",
    [
        lambda: tokens(100),
        lambda: tokens(100, "act_"),
        lambda: [secrets.token_hex(16) for _ in range(100)],
        lambda: [str(uuid.uuid4()) for _ in range(100)],
        lambda: tokens(1),
        lambda: tokens(2, "req-"),
    ],
    ids=["urlsafe-16", "prefixed", "hex-16", "uuid4", "one", "two"],
)
def test_random_ids_pass(make: Callable[[], list[str]]) -> None:
    for _ in range(5):  # fresh random ids each round: no chance hit in any of them
        assert check_request_ids(make()) == []


def test_ids_holding_a_hostname_user_or_secret(canaries) -> None:
    host, user, bearer, api_key = (
        canaries(k) for k in ("hostname", "user_name", "bearer", "api_key")
    )
    good = tokens(6)
    ids = [
        f"act_{host.value.replace('.', '-')}_{good[0]}",
        f"{good[1]}.{host.value.split('.')[0].upper()}",
        f"{user.value}-{good[2]}",
        "act_" + base64.urlsafe_b64encode(bearer.value.encode()).decode().rstrip("="),
        f"act_{good[3]}{api_key.value}",
        f"act_db-primary-corp-example_{good[4]}",
        good[5],
    ]
    found = check_request_ids(
        ids,
        secrets=[bearer, api_key.value],
        forbidden_words=[host.value, user.value, "db-primary.corp.example"],
    )
    by_rule = {(v.rule, v.field) for v in found}
    assert ("request-id-forbidden-word", "ids[0]") in by_rule  # hostname, dots as dashes
    assert ("request-id-forbidden-word", "ids[2]") in by_rule  # user name
    assert ("request-id-forbidden-word", "ids[5]") in by_rule  # a plain hostname
    assert ("request-id-secret", "ids[3]") in by_rule  # base64 of the bearer token
    assert ("request-id-secret", "ids[4]") in by_rule  # the raw API key, given as a str
    messages = [v.message for v in found]
    assert any("ids[1]" in m and "forbidden_words[0]" in m for m in messages)  # first label
    assert not any("ids[6]" in m for m in messages)
    assert any("holds a form of secret bearer#1" in m for m in messages)
    assert any("holds a form of secret secrets[1]" in m for m in messages)
    self_scan(violation_texts(found), [host, user, bearer, api_key], "id violations")


def test_too_short_words_and_secrets_are_rejected_without_echo() -> None:
    with pytest.raises(ValueError, match=r"forbidden_words\[1\]: a word of at least 4") as info:
        check_request_ids(tokens(2), forbidden_words=["db-primary", "bob"])
    assert "bob" not in str(info.value)
    with pytest.raises(ValueError, match=r"secrets\[0\]: a string of at least 8") as info:
        check_request_ids(tokens(2), secrets=["hunter2"])
    assert "hunter2" not in str(info.value)


def test_request_id_check_is_fast() -> None:
    ids = tokens(1000)
    start = time.perf_counter()
    assert check_request_ids(ids, secrets=[secrets.token_urlsafe(24)]) == []
    assert time.perf_counter() - start < 2.0


# --- the protected record -----------------------------------------------------------------


def consistent_record(stage_name: str) -> dict[str, Any]:
    stage = get_stage(stage_name)
    sent = bool(stage.bytes_sent)
    received = bool(stage.response_received)
    return {
        "request_id": RID,
        "event": "call_failed",
        "validated": True,
        "credential_selected": stage_name not in ("invalid_input", "vault_locked"),
        "authorized": stage_name not in ("invalid_input", "vault_locked", "approval_declined"),
        "connection_started": stage.transport != GATEWAY or sent,
        "bytes_sent": sent,
        "response_received": received,
        "result_returned": True,
    }


@pytest.mark.parametrize("stage", list(STAGES))
def test_record_consistent_with_each_stage(stage: str) -> None:
    record = consistent_record(stage)
    assert check_record(record, stage=stage, request_id=RID) == []
    nested = {"request_id": RID, "boundaries": {k: record[k] for k in BOUNDARIES}}
    assert check_record(nested, stage=stage, request_id=RID) == []
    decided = get_stage(stage).bytes_sent
    flipped = patched(record, {"bytes_sent": not record["bytes_sent"], "connection_started": True})
    flipped["response_received"] = flipped["response_received"] and flipped["bytes_sent"]
    found = check_record(flipped, stage=stage, request_id=RID)
    if decided is None:
        assert found == []
    else:
        assert ("record-boundary-stage", "bytes_sent") in pairs(found)


RECORD_CASES: list[tuple[str, Any, str, str]] = [
    ("timeout_before_send", None, "record-exists", ""),
    ("timeout_before_send", ["not", "a", "mapping"], "record-exists", ""),
    ("timeout_before_send", {"request_id": DELETE}, "record-request-id", "request_id"),
    ("timeout_before_send", {"request_id": "act_someone_elses_id_"}, "record-request-id",
     "request_id"),
    ("timeout_before_send", {"bytes_sent": DELETE}, "record-boundary-present", "bytes_sent"),
    ("timeout_before_send", {"authorized": "yes"}, "record-boundary-present", "authorized"),
    ("timeout_before_send", {"bytes_sent": True}, "record-boundary-stage", "bytes_sent"),
    ("timeout_after_send", {"response_received": True}, "record-boundary-stage",
     "response_received"),
    ("http_5xx", {"response_received": False}, "record-boundary-stage", "response_received"),
    ("vault_locked", {"credential_selected": True}, "record-boundary-stage",
     "credential_selected"),
    ("approval_declined", {"authorized": True}, "record-boundary-stage", "authorized"),
    ("invalid_input", {"connection_started": True}, "record-boundary-stage",
     "connection_started"),
    ("gateway_exception", {"connection_started": False, "bytes_sent": True},
     "record-boundary-order", "connection_started"),
    ("gateway_exception", {"validated": False, "connection_started": True},
     "record-boundary-order", "validated"),
]  # fmt: skip


@pytest.mark.parametrize("stage, change, rule, where", RECORD_CASES)
def test_record_rule(stage: str, change: Any, rule: str, where: str) -> None:
    if isinstance(change, dict):
        record: Any = patched(consistent_record(stage), change)
    else:
        record = change
    found = check_record(record, stage=stage, request_id=RID)
    assert (rule, where) in pairs(found)


def test_record_violations_never_echo(canaries) -> None:
    secret = canaries("bearer")
    record = patched(consistent_record("http_401"), {"request_id": secret.value, "bytes_sent": 1})
    found = check_record(record, stage="http_401", request_id=RID)
    assert rules_of(found) == {"record-request-id", "record-boundary-present"}
    found += check_record(consistent_record("http_401"), stage="http_401", request_id=secret.value)
    self_scan(violation_texts(found), [secret], "record violations")


def test_violation_shape() -> None:
    violation = Violation("schema.enum", "/code", "must be one of: ...")
    assert violation.to_dict() == {
        "rule": "schema.enum",
        "field": "/code",
        "message": "must be one of: ...",
    }
    assert str(violation) == "/code: must be one of: ... [schema.enum]"
    assert str(Violation("envelope-json", "", "not JSON")) == "(envelope): not JSON [envelope-json]"


# --- leakcheck schema ---------------------------------------------------------------------


@dataclass
class Run:
    code: int | str | None
    out: str
    err: str


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., Run]:
    def run(*argv: str) -> Run:
        try:
            code: int | str | None = main(list(argv))
        except SystemExit as exc:  # argparse's own usage errors
            code = exc.code
        out, err = capsys.readouterr()
        assert "Traceback" not in err
        return Run(code, out, err)

    return run


@pytest.mark.parametrize("argv", [(), ("--version", "v1")], ids=["default", "v1"])
def test_schema_command_prints_the_schema(cli, argv: tuple[str, ...]) -> None:
    run = cli("schema", *argv)
    assert run.code == 0 and run.err == ""
    assert json.loads(run.out) == load_schema()
    assert run.out.endswith("}\n")


def test_schema_command_unknown_version(cli) -> None:
    run = cli("schema", "--version", "v9")
    assert run.code == 2 and run.out == ""
    assert run.err == "leakcheck: error: unknown schema version 'v9'; known versions: v1\n"


def test_schema_command_is_listed_and_top_level_version_still_works(cli) -> None:
    assert "schema" in cli().out
    run = cli("--version")
    assert run.code == 0 and run.out.startswith("leakcheck ")


def test_schema_command_subprocess(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "leakcheck.cli", "schema"],
        capture_output=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert json.loads(done.stdout) == load_schema()


def test_a_field_name_shaped_like_a_key_is_not_shown_in_a_pointer() -> None:
    """An envelope field named like a key (``sk_`` and random letters, 24 characters with
    no digit) was shown in a contract failure's pointer and the JSON report's reason."""
    from leakcheck.contract.schema import _safe_key

    assert not _safe_key("sk_hInnKUXOAiBIanPTeYHLy")
    assert _safe_key("request_id") and _safe_key("retryAfterSeconds")
