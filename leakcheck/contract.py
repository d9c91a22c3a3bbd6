"""The agent error contract: what a gateway may hand an agent when a tool call fails.

Three checks, each returning ``Violation`` objects that name a field and a rule, never a
value (the value under test may be the very secret that leaked):

* ``check_envelope``: the agent-facing error envelope against a versioned JSON Schema
  (``agent-error`` v1, shipped in ``leakcheck/schemas``; users may bring their own), the
  semantic rules a schema cannot say, and the code and action expected for the stage.
* ``check_request_ids``: the request ids of a run are opaque handles: unique, not a counter,
  >= 64 random bits, no hostname, user name, secret or time inside.
* ``check_record``: the gateway's protected operator record exists, carries the request id
  and the boundary states a call reached, consistent with the stage.

Semantic rules (``RULES`` lists every rule id):

* ``retryable`` is true exactly when ``action`` is ``retry_after_delay``;
* ``code`` is ``OUTCOME_UNKNOWN`` exactly when ``action`` is ``inspect_outcome``;
* ``retry_after_seconds`` only with ``retry_after_delay``;
* ``http_status`` only when an upstream HTTP response arrived, and equal to the stage's;
* ``invalid_fields`` holds names (key paths present in the agent input), never values, and
  ``INVALID_INPUT`` carries it.

Default expectations, per stage (``repeatable`` is the integration author's label of the
operation, never guessed from its name):

==========================================  ==========================  =================
stage                                       code                        action
==========================================  ==========================  =================
invalid_input                               INVALID_INPUT               repair_input
vault_locked                                VAULT_LOCKED                stop_and_report
approval_declined                           USER_DENIED                 stop_and_report
gateway_exception                           INTERNAL_ERROR              stop_and_report
http_401, ssh_auth_rejected                 AUTH_FAILED                 stop_and_report
http_403                                    PERMISSION_DENIED           stop_and_report
http_429 (+ retry_after_seconds)            RATE_LIMITED                retry_after_delay
dns_failure, connection_refused,            UPSTREAM_UNREACHABLE        retry_after_delay
timeout_before_send, ssh_connection_refused
tls_*, ssh_host_key_mismatch,               REMOTE_UNVERIFIED           stop_and_report
ssh_unknown_host_key
redirect_signed_url                         UPSTREAM_INVALID_RESPONSE   stop_and_report
ssh_command_failed                          REMOTE_REJECTED             stop_and_report
timeout_after_send, reset_after_send,       non-repeatable: OUTCOME_UNKNOWN / inspect_outcome
http_5xx, ssh_hang_after_command            repeatable: UPSTREAM_UNAVAILABLE / retry_after_delay
malformed_json, html_login_page,            non-repeatable: OUTCOME_UNKNOWN / inspect_outcome
truncated_body                              repeatable: UPSTREAM_INVALID_RESPONSE / stop
==========================================  ==========================  =================

Choices the seed leaves open:

* ``http_429`` is retryable even for a non-repeatable operation: a 429 says the upstream
  refused the request without acting on it; the gateway owns the bounded delay.
* A connection that failed before a byte left (DNS, refused, connect timeout, SSH port
  refused) is retryable whatever the operation: nothing reached the upstream.
* ``redirect_signed_url``: a gateway must not follow a redirect to a host it did not expect
  (the ``Location`` is a signed URL, often for another host), nor pass the ``Location`` on.
  The response is unusable: UPSTREAM_INVALID_RESPONSE / stop_and_report, whatever the
  operation (stopping never re-sends, so repeatability does not change the advice).
* ``ssh_unknown_host_key`` is REMOTE_UNVERIFIED like a mismatch: trust-on-first-use is a
  person's decision, not an agent's.
* ``ssh_hang_after_command`` is a timeout after send: the command may have run.

Users override per stage and per operation with ``Expectations``.
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from enum import Enum
from importlib import resources
from typing import TYPE_CHECKING, Any, cast

from .canaries import Secret, SecretClass
from .serialize import read_json_file
from .stages import SSH, Stage, get_stage

if TYPE_CHECKING:  # pragma: no cover
    from jsonschema.protocols import Validator

__all__ = [
    "ACTIONS",
    "Action",
    "BOUNDARIES",
    "CODES",
    "Code",
    "DEFAULT",
    "DEFAULT_MESSAGES",
    "DEFAULT_SCHEMA",
    "Expectations",
    "Expected",
    "NAME_PATTERN",
    "OPERATION_PATTERN",
    "OPTIONAL_FIELDS",
    "REQUEST_ID_PATTERN",
    "REQUIRED_FIELDS",
    "RULES",
    "SCHEMA_VERSIONS",
    "Violation",
    "check_envelope",
    "check_record",
    "check_request_ids",
    "example_envelope",
    "load_schema",
]

# --- vocabulary ----------------------------------------------------------------------------


class Code(str, Enum):
    """The agent-facing error codes of envelope v1 (a user may add their own)."""

    INVALID_INPUT = "INVALID_INPUT"
    VAULT_LOCKED = "VAULT_LOCKED"
    USER_DENIED = "USER_DENIED"
    AUTH_FAILED = "AUTH_FAILED"
    PERMISSION_DENIED = "PERMISSION_DENIED"
    RATE_LIMITED = "RATE_LIMITED"
    UPSTREAM_UNREACHABLE = "UPSTREAM_UNREACHABLE"
    REMOTE_UNVERIFIED = "REMOTE_UNVERIFIED"
    OUTCOME_UNKNOWN = "OUTCOME_UNKNOWN"
    UPSTREAM_UNAVAILABLE = "UPSTREAM_UNAVAILABLE"
    UPSTREAM_INVALID_RESPONSE = "UPSTREAM_INVALID_RESPONSE"
    REMOTE_REJECTED = "REMOTE_REJECTED"
    INTERNAL_ERROR = "INTERNAL_ERROR"

    def __str__(self) -> str:  # its value in every text and message
        return self.value


class Action(str, Enum):
    """What the agent may do next (the seed article's vocabulary)."""

    REPAIR_INPUT = "repair_input"
    STOP_AND_REPORT = "stop_and_report"
    RETRY_AFTER_DELAY = "retry_after_delay"
    INSPECT_OUTCOME = "inspect_outcome"

    def __str__(self) -> str:
        return self.value


CODES: tuple[str, ...] = tuple(code.value for code in Code)
ACTIONS: tuple[str, ...] = tuple(action.value for action in Action)
REQUIRED_FIELDS: tuple[str, ...] = ("ok", "code", "message", "action", "retryable", "request_id")
OPTIONAL_FIELDS: tuple[str, ...] = (
    "http_status",
    "retry_after_seconds",
    "operation",
    "invalid_fields",
)

#: the same patterns as the v1 schema; the semantic rules apply them under a user's schema too
REQUEST_ID_PATTERN = r"^[A-Za-z0-9_-]{16,64}$"
OPERATION_PATTERN = r"^[a-z][a-z0-9_]{0,63}$"
#: a key path: ``repository``, ``options.branch``, ``items[0].name``
NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_-]{0,63}(?:\.[A-Za-z_][A-Za-z0-9_-]{0,63}|\[[0-9]{1,9}\])*$"

_RETRY, _STOP = Action.RETRY_AFTER_DELAY.value, Action.STOP_AND_REPORT.value
_REPAIR, _INSPECT = Action.REPAIR_INPUT.value, Action.INSPECT_OUTCOME.value
_OUTCOME_UNKNOWN = Code.OUTCOME_UNKNOWN.value

#: gateway-owned words for each code (``example_envelope`` uses them)
DEFAULT_MESSAGES: dict[str, str] = {
    "INVALID_INPUT": "The input failed validation; see invalid_fields.",
    "VAULT_LOCKED": "The credential vault is locked; ask a person to unlock the gateway.",
    "USER_DENIED": "The requested action was not approved and did not run.",
    "AUTH_FAILED": "The remote service rejected the stored credential.",
    "PERMISSION_DENIED": "The remote service refused this action for the stored credential.",
    "RATE_LIMITED": "The remote service is limiting requests; retry once after the delay.",
    "UPSTREAM_UNREACHABLE": "The remote service could not be reached; nothing was sent.",
    "REMOTE_UNVERIFIED": "The remote identity could not be verified; the call was blocked.",
    "OUTCOME_UNKNOWN": (
        "The connection ended after the request started. The remote action may have completed."
    ),
    "UPSTREAM_UNAVAILABLE": "The remote service is temporarily unavailable.",
    "UPSTREAM_INVALID_RESPONSE": "The remote service returned a response the gateway cannot use.",
    "REMOTE_REJECTED": "The remote command failed.",
    "INTERNAL_ERROR": "The gateway failed while handling the request.",
}

#: every rule a ``Violation`` can name, besides ``schema.<keyword>`` (a JSON Schema keyword)
RULES: dict[str, str] = {
    "envelope-json": "the envelope is a JSON object (a str or bytes envelope must parse)",
    "retryable-matches-action": "retryable is true exactly when action is retry_after_delay",
    "outcome-unknown-matches-action": "code OUTCOME_UNKNOWN exactly when action inspect_outcome",
    "retry-after-needs-retry-action": "retry_after_seconds only with action retry_after_delay",
    "http-status-needs-response": "http_status only when an upstream HTTP response arrived",
    "http-status-matches-stage": "http_status equals the status the upstream answered",
    "invalid-fields-are-names": "invalid_fields holds field names, never values",
    "invalid-fields-in-input": "each invalid_fields name is a key path of the agent input",
    "invalid-input-needs-fields": "INVALID_INPUT carries invalid_fields",
    "operation-matches-call": "operation is the call's own operation class",
    "expected-code": "code is the one expected for the stage and operation",
    "expected-action": "action is the one expected for the stage and operation",
    "expected-field": "a field the expectation requires is present",
    "request-id-type": "a request id is a non-empty string",
    "request-id-unique": "request ids are unique across the run",
    "request-id-sequential": "request ids are not a counter",
    "request-id-entropy": "each request id carries at least 64 estimated random bits",
    "request-id-timestamp": "request ids hold no time (unix time, date, time-based UUID, ULID)",
    "request-id-secret": "request ids hold no form of a secret",
    "request-id-forbidden-word": "request ids hold no hostname, user name or other listed word",
    "record-exists": "the protected record exists and is a mapping",
    "record-request-id": "the protected record carries the envelope's request id",
    "record-boundary-present": "the protected record holds every boundary state as a boolean",
    "record-boundary-stage": "the boundary states agree with the stage",
    "record-boundary-order": "a boundary reached implies the ones before it were reached",
}


@dataclass(frozen=True)
class Violation:
    """One broken rule. ``field`` is a JSON pointer into the envelope (``/code``), an index
    into the ids (``ids[3]``) or a record key; ``message`` names the rule's terms and the
    schema's constraint, never the offending value."""

    rule: str
    field: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"rule": self.rule, "field": self.field, "message": self.message}

    def __str__(self) -> str:
        return f"{self.field or '(envelope)'}: {self.message} [{self.rule}]"


# --- schema ------------------------------------------------------------------------------

_SCHEMA_FILE = "agent-error-{version}.json"


def _schema_dir() -> Any:
    return resources.files("leakcheck").joinpath("schemas")


def _known_versions() -> tuple[str, ...]:
    found = []
    for entry in _schema_dir().iterdir():
        match = re.fullmatch(r"agent-error-(v[0-9]+)\.json", entry.name)
        if match:
            found.append(match.group(1))
    return tuple(sorted(found, key=lambda v: int(v[1:])))


#: the schema versions shipped with this release, oldest first
SCHEMA_VERSIONS: tuple[str, ...] = _known_versions()


def load_schema(version: str = "v1") -> dict[str, Any]:
    """The shipped ``agent-error`` schema of ``version`` (a fresh copy: edit it freely)."""
    if version not in SCHEMA_VERSIONS:
        known = ", ".join(SCHEMA_VERSIONS)
        raise ValueError(f"unknown agent-error schema version {version!r}; known versions: {known}")
    text = _schema_dir().joinpath(_SCHEMA_FILE.format(version=version)).read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


#: the default envelope schema (``agent-error`` v1)
DEFAULT_SCHEMA: dict[str, Any] = load_schema("v1")
# validation uses a private copy: a caller editing DEFAULT_SCHEMA must not change the contract
_PRISTINE_DEFAULT = copy.deepcopy(DEFAULT_SCHEMA)
_default_validator: Validator | None = None

SchemaArg = str | os.PathLike[str] | Mapping[str, Any] | None


def _jsonschema() -> Any:
    try:
        import jsonschema
    except ImportError:  # pragma: no cover - jsonschema is in the dev extra
        raise ImportError(
            "leakcheck.contract needs the 'jsonschema' package to validate envelopes "
            "(pip install 'jsonschema>=4.20')"
        ) from None
    return jsonschema


def _validator(schema: SchemaArg) -> tuple[Validator, Mapping[str, Any]]:
    global _default_validator
    jsonschema = _jsonschema()
    if schema is None:
        if _default_validator is None:
            _default_validator = jsonschema.Draft202012Validator(_PRISTINE_DEFAULT)
        return _default_validator, _PRISTINE_DEFAULT
    if isinstance(schema, (str, os.PathLike)):
        schema = read_json_file(schema, f"schema file {os.fspath(schema)!r}")
    if not isinstance(schema, Mapping):
        raise ValueError(f"a schema is a JSON object, a path or None, not {type(schema).__name__}")
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ValueError(
            f"not a valid JSON Schema: {_pointer(exc.absolute_path) or '/'} breaks the "
            f"metaschema's {exc.validator!r} rule"
        ) from None
    return cls(schema), schema


# --- pointers and messages ----------------------------------------------------------------

_SAFE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def _safe_key(key: str) -> bool:
    """A key short and plain enough to be a field name rather than a value used as a key.
    (A canary used as a key is long or random: it shows as ``*`` instead.)"""
    return bool(_SAFE_KEY.fullmatch(key)) and len(key) <= 24 and sum(c.isdigit() for c in key) <= 2


def _declared(schema: Any) -> frozenset[str]:
    """Every property name a schema declares: shown in pointers whatever they look like."""
    names: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            properties = node.get("properties")
            if isinstance(properties, Mapping):
                names.update(k for k in properties if isinstance(k, str))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return frozenset(names)


def _pointer(path: Iterable[Any], declared: frozenset[str] = frozenset()) -> str:
    """A JSON pointer; a key that is neither declared nor plainly a name shows as ``*``."""
    parts = []
    for part in path:
        if isinstance(part, int):
            parts.append(str(part))
        elif isinstance(part, str) and (part in declared or _safe_key(part)):
            parts.append(part.replace("~", "~0").replace("/", "~1"))
        else:
            parts.append("*")
    return "".join("/" + p for p in parts)


def _constraint(keyword: str, value: Any) -> str:
    """The rule a schema keyword states, in words, from the schema's side only."""
    if keyword == "type":
        types = [value] if isinstance(value, str) else list(value)
        return "must be of type " + " or ".join(types)
    if keyword == "const":
        return f"must be {json.dumps(value)}"
    if keyword == "enum":
        return "must be one of: " + ", ".join(json.dumps(v) for v in value)
    templates = {
        "maxLength": "must be at most {} characters long",
        "minLength": "must be at least {} characters long",
        "pattern": "must match the pattern {}",
        "minimum": "must be >= {}",
        "maximum": "must be <= {}",
        "exclusiveMinimum": "must be > {}",
        "exclusiveMaximum": "must be < {}",
        "multipleOf": "must be a multiple of {}",
        "minItems": "must hold at least {} items",
        "maxItems": "must hold at most {} items",
        "minProperties": "must hold at least {} properties",
        "maxProperties": "must hold at most {} properties",
        "format": "must be a valid {}",
    }
    if keyword in templates:
        return templates[keyword].format(value)
    if keyword == "uniqueItems":
        return "must not repeat an item"
    return f"breaks the schema's {keyword!r} rule"


def _schema_violations(
    validator: Validator, declared: frozenset[str], instance: Any
) -> tuple[list[Violation], set[str]]:
    """Violations of the schema, and the top-level fields they concern (semantic rules on
    those fields are skipped: one broken field, one report)."""
    found: list[Violation] = []
    bad: set[str] = set()
    errors = sorted(
        validator.iter_errors(instance),
        key=lambda e: ([str(p) for p in e.absolute_path], str(e.validator)),
    )
    for error in errors:
        keyword = str(error.validator)
        path = list(error.absolute_path)
        rule = f"schema.{keyword}"
        if path and isinstance(path[0], str):
            bad.add(path[0])
        where = error.instance
        if keyword == "required" and isinstance(where, Mapping):
            # the stubs allow Unset, which no error of iter_errors has
            for name in cast("list[str]", error.validator_value):
                if name not in where:
                    if not path:
                        bad.add(name)
                    found.append(Violation(rule, _pointer([*path, name], declared), "is required"))
        elif keyword in ("additionalProperties", "unevaluatedProperties") and isinstance(
            where, Mapping
        ):
            schema = cast("Mapping[str, Any]", error.schema)  # the object with the keyword
            properties = schema.get("properties", {})  # the object's own, not all
            patterns = list(schema.get("patternProperties", {}))
            for key in where:
                if key in properties or any(re.search(p, str(key)) for p in patterns):
                    continue
                if keyword == "additionalProperties" and error.validator_value is not False:
                    continue  # a sub-schema for extras: its own errors carry the path
                shown = _pointer([*path, key], declared)
                found.append(
                    Violation(rule, shown, "is not a field of the schema (unknown fields fail)")
                )
        else:
            found.append(
                Violation(
                    rule, _pointer(path, declared), _constraint(keyword, error.validator_value)
                )
            )
    unique = list(dict.fromkeys(found))
    return unique, bad


# --- expectations -------------------------------------------------------------------------


@dataclass(frozen=True)
class Expected:
    """The code and action a stage should produce; ``requires`` names optional envelope
    fields that must be present (``retry_after_seconds`` for a 429)."""

    code: str
    action: str
    requires: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.code, str) or not isinstance(self.action, str):
            raise TypeError("Expected(code, action): both are strings")
        if isinstance(self.requires, str):
            object.__setattr__(self, "requires", (self.requires,))
        unknown = [f for f in self.requires if f not in OPTIONAL_FIELDS]
        if unknown:
            raise ValueError(
                f"Expected.requires: unknown field(s) {', '.join(map(repr, unknown))}; "
                f"optional fields: {', '.join(OPTIONAL_FIELDS)}"
            )
        if (self.code == _OUTCOME_UNKNOWN) != (self.action == _INSPECT):
            raise ValueError(
                f"Expected({self.code}, {self.action}): code OUTCOME_UNKNOWN goes with action "
                "inspect_outcome, and only with it"
            )
        if "retry_after_seconds" in self.requires and self.action != _RETRY:
            raise ValueError(
                f"Expected({self.code}, {self.action}): retry_after_seconds goes only with "
                "action retry_after_delay"
            )

    @property
    def retryable(self) -> bool:
        return self.action == _RETRY


def _e(code: str, action: str, *requires: str) -> tuple[Expected, Expected]:
    same = Expected(code, action, requires)
    return same, same


def _after_send(repeatable: Expected) -> tuple[Expected, Expected]:
    return Expected(_OUTCOME_UNKNOWN, _INSPECT), repeatable


_UNAVAILABLE = Expected("UPSTREAM_UNAVAILABLE", _RETRY)
_INVALID_RESPONSE = Expected("UPSTREAM_INVALID_RESPONSE", _STOP)

#: stage -> (on a non-repeatable operation, on a repeatable one); see the module docstring
_DEFAULTS: dict[str, tuple[Expected, Expected]] = {
    # invalid_fields: required by the semantic rule for INVALID_INPUT, whatever the stage
    "invalid_input": _e("INVALID_INPUT", _REPAIR),
    "vault_locked": _e("VAULT_LOCKED", _STOP),
    "approval_declined": _e("USER_DENIED", _STOP),
    "gateway_exception": _e("INTERNAL_ERROR", _STOP),
    "http_401": _e("AUTH_FAILED", _STOP),
    "http_403": _e("PERMISSION_DENIED", _STOP),
    "http_429": _e("RATE_LIMITED", _RETRY, "retry_after_seconds"),
    "http_5xx": _after_send(_UNAVAILABLE),
    "malformed_json": _after_send(_INVALID_RESPONSE),
    "html_login_page": _after_send(_INVALID_RESPONSE),
    "redirect_signed_url": _e("UPSTREAM_INVALID_RESPONSE", _STOP),
    "dns_failure": _e("UPSTREAM_UNREACHABLE", _RETRY),
    "connection_refused": _e("UPSTREAM_UNREACHABLE", _RETRY),
    "tls_hostname_mismatch": _e("REMOTE_UNVERIFIED", _STOP),
    "tls_untrusted_ca": _e("REMOTE_UNVERIFIED", _STOP),
    "timeout_before_send": _e("UPSTREAM_UNREACHABLE", _RETRY),
    "timeout_after_send": _after_send(_UNAVAILABLE),
    "reset_after_send": _after_send(_UNAVAILABLE),
    "truncated_body": _after_send(_INVALID_RESPONSE),
    "ssh_auth_rejected": _e("AUTH_FAILED", _STOP),
    "ssh_host_key_mismatch": _e("REMOTE_UNVERIFIED", _STOP),
    "ssh_unknown_host_key": _e("REMOTE_UNVERIFIED", _STOP),
    "ssh_command_failed": _e("REMOTE_REJECTED", _STOP),
    "ssh_hang_after_command": _after_send(_UNAVAILABLE),
    "ssh_connection_refused": _e("UPSTREAM_UNREACHABLE", _RETRY),
}

ANY = "*"
OverrideKey = tuple[str, str] | tuple[str, str, bool]


class Expectations:
    """Expected code and action per stage, operation and repeatability: the defaults (see
    the module docstring) with ``overrides`` on top.

    A key is ``(operation, stage)`` or ``(operation, stage, repeatable)``; ``operation``
    may be ``"*"`` (any). A value is an ``Expected`` or a ``(code, action)`` pair. The most
    specific key wins: operation before repeatability before the wildcard::

        Expectations({
            ("create_deployment", "http_429"): Expected("RATE_LIMITED", "retry_after_delay"),
            ("*", "redirect_signed_url", False): ("OUTCOME_UNKNOWN", "inspect_outcome"),
        })

    ``extra_codes`` / ``extra_actions`` widen the vocabulary for a schema of your own.
    """

    def __init__(
        self,
        overrides: Mapping[OverrideKey, Expected | tuple[str, str]] | None = None,
        *,
        extra_codes: Iterable[str] = (),
        extra_actions: Iterable[str] = (),
    ) -> None:
        self.codes: tuple[str, ...] = (*CODES, *(c for c in extra_codes if c not in CODES))
        self.actions: tuple[str, ...] = (*ACTIONS, *(a for a in extra_actions if a not in ACTIONS))
        self._overrides: dict[tuple[str, str, bool | None], Expected] = {}
        for key, value in (overrides or {}).items():
            self._overrides[self._key(key)] = self._expected(key, value)

    def _key(self, key: Any) -> tuple[str, str, bool | None]:
        if not isinstance(key, tuple) or len(key) not in (2, 3):
            raise ValueError(
                "an expectation key is (operation, stage) or (operation, stage, repeatable); "
                f"got {type(key).__name__}"
            )
        operation, stage = key[0], key[1]
        repeatable = key[2] if len(key) == 3 else None
        if not isinstance(operation, str) or not operation:
            raise ValueError("an expectation key's operation is a non-empty string or '*'")
        get_stage(stage)  # UnknownStageError (a ValueError) lists the known stages
        if repeatable is not None and not isinstance(repeatable, bool):
            raise ValueError(
                f"expectation key ({operation!r}, {stage!r}, ...): repeatable is True or False"
            )
        return operation, stage, repeatable

    def _expected(self, key: Any, value: Any) -> Expected:
        if isinstance(value, tuple) and len(value) == 2:
            value = Expected(*value)
        if not isinstance(value, Expected):
            raise ValueError(f"expectation {key!r}: expected an Expected or a (code, action) pair")
        if value.code not in self.codes:
            raise ValueError(
                f"expectation {key!r}: unknown code {value.code!r}; known codes: "
                + ", ".join(self.codes)
            )
        if value.action not in self.actions:
            raise ValueError(
                f"expectation {key!r}: unknown action {value.action!r}; known actions: "
                + ", ".join(self.actions)
            )
        return value

    def override(self, overrides: Mapping[OverrideKey, Expected | tuple[str, str]]) -> Expectations:
        """A copy with more overrides on top."""
        merged = Expectations(extra_codes=self.codes, extra_actions=self.actions)
        merged._overrides = {**self._overrides}
        for key, value in overrides.items():
            merged._overrides[merged._key(key)] = merged._expected(key, value)
        return merged

    def expected(
        self, stage: str | Stage, *, operation: str | None = None, repeatable: bool = False
    ) -> Expected:
        """What a failure at ``stage`` of ``operation`` should return."""
        name = get_stage(stage).name
        candidates = []
        if operation is not None:
            candidates += [(operation, name, repeatable), (operation, name, None)]
        candidates += [(ANY, name, repeatable), (ANY, name, None)]
        for key in candidates:
            if key in self._overrides:
                return self._overrides[key]
        if name not in _DEFAULTS:
            raise ValueError(
                f"no default expectation for stage {name}: add one with "
                f"Expectations({{('*', {name!r}): Expected(code, action)}})"
            )
        return _DEFAULTS[name][1 if repeatable else 0]

    def __repr__(self) -> str:
        return f"Expectations({len(self._overrides)} overrides)"


#: the default expectations (no override)
DEFAULT = Expectations()


def example_envelope(
    stage: str | Stage,
    *,
    operation: str | None = None,
    repeatable: bool = False,
    expectations: Expectations = DEFAULT,
    request_id: str | None = None,
    invalid_fields: Sequence[str] = ("input",),
) -> dict[str, Any]:
    """A valid envelope for a failure at ``stage``: what a gateway should return."""
    import secrets

    stage = get_stage(stage)
    expected = expectations.expected(stage, operation=operation, repeatable=repeatable)
    envelope: dict[str, Any] = {
        "ok": False,
        "code": expected.code,
        "message": DEFAULT_MESSAGES.get(expected.code, "The tool call failed."),
        "action": expected.action,
        "retryable": expected.retryable,
        "request_id": request_id or "act_" + secrets.token_urlsafe(16),
    }
    if operation is not None:
        envelope["operation"] = operation
    if stage.http_status is not None and stage.response_received:
        envelope["http_status"] = stage.http_status
    if "retry_after_seconds" in expected.requires:
        envelope["retry_after_seconds"] = 30
    if expected.code == "INVALID_INPUT" or "invalid_fields" in expected.requires:
        envelope["invalid_fields"] = list(invalid_fields)
    return envelope


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
    validator, schema_doc = _validator(schema)
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
    found, bad = _schema_violations(validator, _declared(schema_doc), instance)
    if not isinstance(instance, Mapping):
        return found or [Violation("envelope-json", "", "the envelope is not a JSON object")]

    def usable(name: str, kind: type) -> bool:
        return name in instance and name not in bad and isinstance(instance[name], kind)

    code, action = instance.get("code"), instance.get("action")
    has_code, has_action = usable("code", str), usable("action", str)
    context = f"stage {stage.name}" + (f", operation {operation}" if operation else "")
    context += ", repeatable" if repeatable else ", not repeatable"

    if has_action and usable("retryable", bool) and instance["retryable"] != (action == _RETRY):
        found.append(
            Violation(
                "retryable-matches-action",
                "/retryable",
                f"must be {str(action == _RETRY).lower()} with action "
                f"{_known(action, expectations.actions)} (true exactly with retry_after_delay)",
            )
        )
    if has_code and has_action and (code == _OUTCOME_UNKNOWN) != (action == _INSPECT):
        found.append(
            Violation(
                "outcome-unknown-matches-action",
                "/action" if code == _OUTCOME_UNKNOWN else "/code",
                "code OUTCOME_UNKNOWN goes with action inspect_outcome, and only with it",
            )
        )
    if "retry_after_seconds" in instance and has_action and action != _RETRY:
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


# --- request ids --------------------------------------------------------------------------

#: the most a counter may step between two ids and still be taken for a counter
_MAX_STEP = 10**6
_DIGITS = frozenset("0123456789")
_HEX_LOWER = frozenset("0123456789abcdef")
_HEX_UPPER = frozenset("0123456789ABCDEF")
_NAMESPACE = re.compile(r"^[A-Za-z]{1,10}[_-]")
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_ULID = re.compile(r"(?<![0-9A-Za-z])[0-7][0-9A-HJKMNP-TV-Z]{25}(?![0-9A-Za-z])", re.IGNORECASE)
_UUID = re.compile(
    r"(?<![0-9a-fA-F])([0-9a-fA-F]{8})-([0-9a-fA-F]{4})-([0-9a-fA-F])([0-9a-fA-F]{3})-"
    r"[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}(?![0-9a-fA-F])"
)
_DIGIT_RUN = re.compile(r"(?<![0-9A-Za-z])([0-9]+)(?:(?![0-9A-Za-z])|([TZ]))")
_ISO_DATE = re.compile(r"(?<![0-9])([0-9]{4})-([0-9]{2})-([0-9]{2})(?![0-9])")
# 100-ns intervals between the Gregorian epoch of UUID v1/v6 and the Unix epoch
_UUID_EPOCH = 0x01B21DD213814000


def _alphabet_size(chars: set[str]) -> int:
    """The alphabet a random id over these characters would be drawn from."""
    if not chars:
        return 1
    if chars <= _DIGITS:
        return 10
    if chars <= _HEX_LOWER or chars <= _HEX_UPPER:
        return 16
    size = 0
    size += 26 if any("a" <= c <= "z" for c in chars) else 0
    size += 26 if any("A" <= c <= "Z" for c in chars) else 0
    size += 10 if chars & _DIGITS else 0
    size += 2 if chars & {"-", "_"} else 0
    size += 30 if any(c.isascii() and not c.isalnum() and c not in "-_" for c in chars) else 0
    size += 100 if any(not c.isascii() for c in chars) else 0
    return max(size, 2)


def _estimate_bits(ids: list[str]) -> list[float]:
    """Estimated random bits per id, from the run as a whole.

    Ids of equal length are compared position by position: a position where every id has
    the same character (a prefix such as ``act_``, a constant host part, the high digits of
    a clock or counter) carries nothing; a position with far fewer distinct characters than
    uniform draws would give (the UUID variant nibble) carries log2(distinct); any other
    position carries log2(alphabet), the alphabet being that of the characters seen at the
    varying positions (hex 16, digits 10, URL-safe base64 64...). An id alone of its length
    is judged by its characters after a leading ``word_`` or ``word-`` namespace. This is an
    upper bound on what an id holds: it exposes constants and counters, not a weak PRNG.
    """
    groups: dict[int, list[int]] = {}
    for i, value in enumerate(ids):
        groups.setdefault(len(value), []).append(i)
    varying: set[str] = set()
    columns: dict[int, list[set[str]]] = {}
    for length, members in groups.items():
        if len(members) == 1:
            body = _NAMESPACE.sub("", ids[members[0]])
            varying |= set(body)
            continue
        columns[length] = [{ids[i][p] for i in members} for p in range(length)]
        for distinct in columns[length]:
            if len(distinct) > 1:
                varying |= distinct
    alphabet = _alphabet_size(varying)
    full = math.log2(alphabet)
    bits = [0.0] * len(ids)
    for length, members in groups.items():
        if len(members) == 1:
            bits[members[0]] = len(_NAMESPACE.sub("", ids[members[0]])) * full
            continue
        n = len(members)
        expected_distinct = alphabet * (1 - (1 - 1 / alphabet) ** n)
        total = 0.0
        for distinct in columns[length]:
            if len(distinct) == 1:
                continue
            total += math.log2(len(distinct)) if len(distinct) < expected_distinct / 2 else full
        for i in members:
            bits[i] = total
    return bits


def _counter_step(a: str, b: str) -> tuple[int, int] | None:
    """(step, base) when ``b`` is ``a`` with one number changed by a small step."""
    if a == b:
        return None
    shortest = min(len(a), len(b))
    prefix = 0
    while prefix < shortest and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < shortest - prefix and a[-1 - suffix] == b[-1 - suffix]:
        suffix += 1
    for base, chars in ((10, _DIGITS), (16, _HEX_LOWER), (16, _HEX_UPPER)):
        start, tail = prefix, suffix
        # widen over the number's common leading and trailing digits (099 -> 100)
        while start > 0 and a[start - 1] in chars:
            start -= 1
        while tail > 0 and a[len(a) - tail] in chars:
            tail -= 1
        middle_a, middle_b = a[start : len(a) - tail], b[start : len(b) - tail]
        if middle_a and middle_b and set(middle_a) <= chars and set(middle_b) <= chars:
            step = int(middle_b, base) - int(middle_a, base)
            if 0 < abs(step) <= _MAX_STEP:
                return step, base
    return None


@dataclass(frozen=True)
class _Clock:
    """The times an id could carry. ``low``..``high`` is the current decade, give or take,
    for numbers, dates and UUIDs; ``recent_low``..``high`` is the last 400 days, for ULIDs,
    whose 26-character shape random base32 ids share (one in four reads as a time)."""

    low: float
    high: float
    recent_low: float
    years: range

    @classmethod
    def now(cls) -> _Clock:
        now = time.time()
        low, high = now - 12 * 365.25 * 86400, now + 2 * 365.25 * 86400
        years = range(
            datetime.fromtimestamp(low, timezone.utc).year,
            datetime.fromtimestamp(high, timezone.utc).year + 1,
        )
        return cls(low, high, now - 400 * 86400, years)


def _valid_date(year: str, month: str, day: str, years: range) -> bool:
    try:
        datetime(int(year), int(month), int(day))
    except ValueError:
        return False
    return int(year) in years


def _timestamp_kind(value: str, clock: _Clock) -> str | None:
    """What time ``value`` holds, if any: a time-based UUID (v1, v6, v7) with its clock in
    range, a ULID, unix seconds/ms/us/ns, a YYYYMMDD or ISO date. Numbers count only
    standing apart (between separators or at an end, a date also before ``T``/``Z``) and
    UUIDs only with their dashes: digit runs inside hex or base64 text are random digits
    (one 32-hex-digit id in twenty has a 10-digit run), and one random hex id in 64 has a
    UUID's version and variant digits. A run of dashless time-based UUIDs still fails the
    entropy estimate (their clock's high digits, clock sequence and node are constant)."""
    for match in _UUID.finditer(value):
        low_bits, mid, version, high_bits = match.groups()
        if version in "16":
            ticks = (
                int(high_bits + mid + low_bits, 16)
                if version == "1"
                else int(low_bits + mid + high_bits, 16)
            )
            if clock.low <= (ticks - _UUID_EPOCH) / 1e7 <= clock.high:
                return f"a time-based UUID (version {version})"
        elif version == "7" and clock.low <= int(low_bits + mid, 16) / 1000 <= clock.high:
            return "a time-ordered UUID (version 7: unix milliseconds)"
    # a UUID's groups are random hex digits, not numbers: one uuid4 in 40 has a first group
    # of eight decimal digits, and some of those read as a date
    value = _UUID.sub("-", value)
    for match in _ULID.finditer(value):
        millis = 0
        for c in match.group(0)[:10].upper():
            millis = millis * 32 + _CROCKFORD.index(c)
        if clock.recent_low <= millis / 1000 <= clock.high:
            return "a ULID (unix milliseconds)"
    for match in _DIGIT_RUN.finditer(value):
        run, after = match.group(1), match.group(2)
        scale = {10: 1, 13: 10**3, 16: 10**6, 19: 10**9}.get(len(run))
        if scale is not None and not after and clock.low <= int(run) / scale <= clock.high:
            unit = {1: "seconds", 10**3: "milliseconds", 10**6: "microseconds"}.get(
                scale, "nanoseconds"
            )
            return f"a unix time in {unit}"
        if len(run) in (8, 12, 14, 17) and _valid_date(run[:4], run[4:6], run[6:8], clock.years):
            return "a date (YYYYMMDD)"
    for match in _ISO_DATE.finditer(value):
        year, month, day = match.groups()  # the pattern's three groups
        if _valid_date(year, month, day, clock.years):
            return "an ISO date"
    return None


def _word_variants(word: str) -> set[str]:
    lowered = word.lower()
    variants = {lowered}
    for sep in ("-", "_", ""):
        variants.add(re.sub(r"[.:/@ ]", sep, lowered))
    label = lowered.split(".")[0]
    if len(label) >= 4:
        variants.add(label)  # a hostname's first label (db-primary of db-primary.corp)
    return {v for v in variants if len(v) >= 4}


def _indices(offenders: list[int]) -> str:
    shown = ", ".join(f"ids[{i}]" for i in offenders[:5])
    more = len(offenders) - 5
    return shown + (f" and {more} more" if more > 0 else "")


def check_request_ids(
    ids: Iterable[Any],
    *,
    secrets: Iterable[str | Secret] = (),
    forbidden_words: Iterable[str] = (),
    min_bits: float = 64.0,
) -> list[Violation]:
    """Every way the request ids of a run fail to be opaque handles: repeats; counters
    (two ids that differ only in one decimal or hex number, stepped by at most a million,
    in the given or the sorted order); fewer than ``min_bits`` estimated random bits (see
    ``_estimate_bits``: constant positions count for nothing, so pass the ids of a whole
    run, not one); a time inside (see ``_timestamp_kind``); a secret or a forbidden word.

    ``secrets`` (values or ``Secret`` objects) are searched in every encoded form;
    ``forbidden_words`` (hostnames, user names) case-insensitively, with ``.`` ``:`` ``/``
    ``@`` also read as ``-``, ``_`` or nothing, and a hostname's first label alone.
    Violations give the index of an id (``ids[3]``), never the id.
    """
    ids = list(ids)
    found: list[Violation] = []
    words = []
    for n, word in enumerate(forbidden_words):
        if not isinstance(word, str) or len(word) < 4:
            raise ValueError(
                f"forbidden_words[{n}]: a word of at least 4 characters (a shorter one would "
                "match random ids by chance)"
            )
        words.append(_word_variants(word))
    secret_objects = []
    for n, secret in enumerate(secrets):
        if isinstance(secret, Secret):
            secret_objects.append(secret)
        elif isinstance(secret, str) and len(secret) >= 8:
            secret_objects.append(Secret(secret, "secret", f"secrets[{n}]", SecretClass.DIRECT))
        else:
            raise ValueError(f"secrets[{n}]: a string of at least 8 characters or a Secret")

    typed = [i for i, v in enumerate(ids) if not isinstance(v, str) or not v]
    if typed:
        found.append(
            Violation(
                "request-id-type", f"ids[{typed[0]}]", f"not a non-empty string: {_indices(typed)}"
            )
        )
    strings = [(i, v) for i, v in enumerate(ids) if isinstance(v, str) and v]

    first_seen: dict[str, int] = {}
    repeats: list[int] = []
    for i, value in strings:
        if value in first_seen:
            repeats.append(i)
        else:
            first_seen.setdefault(value, i)
    if repeats:
        found.append(
            Violation(
                "request-id-unique",
                f"ids[{repeats[0]}]",
                f"repeats an earlier id: {_indices(repeats)}",
            )
        )

    unique = [(i, v) for v, i in first_seen.items()]
    # A counter steps between most neighbours, in the order given or (ids handed out
    # concurrently) in sorted order. One close pair alone is chance: 30 random 32-bit ids
    # have two within a million of each other one time in five (and fail on entropy).
    pairs: list[tuple[int, int, int, int]] = []
    for order in (unique, sorted(unique, key=lambda iv: iv[1])):
        found_here = []
        for (i, a), (j, b) in zip(order, order[1:], strict=False):
            stepped = _counter_step(a, b)
            if stepped is not None:
                found_here.append((i, j, *stepped))
        if len(found_here) > len(pairs):
            pairs = found_here
    if pairs and 2 * len(pairs) >= len(unique) - 1:
        i, j, step, base = pairs[0]
        found.append(
            Violation(
                "request-id-sequential",
                f"ids[{j}]",
                f"ids[{j}] is ids[{i}] with a {'decimal' if base == 10 else 'hex'} number "
                f"stepped by {abs(step)}: a counter, not an opaque id ({len(pairs)} of "
                f"{len(unique) - 1} neighbouring pairs)",
            )
        )

    if len(unique) > 0:
        bits = _estimate_bits([v for _, v in unique])
        weak = [(b, i) for b, (i, _) in zip(bits, unique, strict=True) if b < min_bits]
        if weak:
            lowest, index = min(weak)
            found.append(
                Violation(
                    "request-id-entropy",
                    f"ids[{index}]",
                    f"{len(weak)} of {len(unique)} ids carry fewer than {min_bits:.0f} "
                    f"estimated random bits (the weakest about {lowest:.0f}): "
                    f"{_indices(sorted(i for _, i in weak))}",
                )
            )

    clock = _Clock.now()
    per_kind: dict[str, list[int]] = {}
    for i, value in strings:
        kind = _timestamp_kind(value, clock)
        if kind is not None:
            per_kind.setdefault(kind, []).append(i)
    for kind, offenders in per_kind.items():
        found.append(
            Violation(
                "request-id-timestamp",
                f"ids[{offenders[0]}]",
                f"holds {kind}: {_indices(offenders)}",
            )
        )

    if secret_objects:
        from .detect import Scanner
        from .engine import available_backends

        backend = "ahocorasick" if "ahocorasick" in available_backends() else "auto"
        scanner = Scanner(secret_objects, decode=True, backend=backend)
        per_secret: dict[str, list[int]] = {}
        for i, value in strings:
            for finding in scanner.scan(value):
                offenders = per_secret.setdefault(finding.secret_id, [])
                if i not in offenders:
                    offenders.append(i)
        for secret_id, offenders in per_secret.items():
            found.append(
                Violation(
                    "request-id-secret",
                    f"ids[{offenders[0]}]",
                    f"holds a form of secret {secret_id}: {_indices(offenders)}",
                )
            )

    for n, variants in enumerate(words):
        offenders = [i for i, v in strings if any(w in v.lower() for w in variants)]
        if offenders:
            found.append(
                Violation(
                    "request-id-forbidden-word",
                    f"ids[{offenders[0]}]",
                    f"holds forbidden_words[{n}]: {_indices(offenders)}",
                )
            )
    return found


# --- the protected record -----------------------------------------------------------------

#: the boundaries a call crosses, in order (the seed's "high-value action" trace)
BOUNDARIES: tuple[str, ...] = (
    "validated",
    "credential_selected",
    "authorized",
    "connection_started",
    "bytes_sent",
    "response_received",
    "result_returned",
)

#: boundaries a gateway-side stage stops before (beyond the stage's own bytes/response)
_NOT_REACHED: dict[str, tuple[str, ...]] = {
    "invalid_input": ("credential_selected", "connection_started"),
    "vault_locked": ("credential_selected", "connection_started"),
    "approval_declined": ("authorized", "connection_started"),
}

#: (later, earlier): reaching ``later`` implies having reached ``earlier``
_ORDER: tuple[tuple[str, str], ...] = (
    ("response_received", "bytes_sent"),
    ("bytes_sent", "connection_started"),
    ("connection_started", "validated"),
)


def check_record(
    record: Mapping[str, Any] | None, *, stage: str | Stage, request_id: str
) -> list[Violation]:
    """Every way the gateway's protected record of a failed call falls short: it exists,
    carries ``request_id``, and holds each of ``BOUNDARIES`` as a boolean (at the top level
    or under ``"boundaries"`` or ``"states"``), consistent with ``stage`` (a timeout before send has
    ``bytes_sent`` false; a 5xx has it true) and with their order. Whether the record holds
    a direct secret is the scanner's job (the protected record is a sink)."""
    stage = get_stage(stage)
    if record is None:
        return [Violation("record-exists", "", "no protected record for the request id")]
    if not isinstance(record, Mapping):
        return [Violation("record-exists", "", "the protected record is not a mapping")]
    found: list[Violation] = []
    if "request_id" not in record:
        found.append(Violation("record-request-id", "request_id", "is missing"))
    elif record["request_id"] != request_id:
        found.append(
            Violation("record-request-id", "request_id", "differs from the envelope's request id")
        )
    nested = next((k for k in ("boundaries", "states") if isinstance(record.get(k), Mapping)), "")
    states, where = (record[nested], nested + ".") if nested else (record, "")
    known: dict[str, bool] = {}
    for name in BOUNDARIES:
        if name not in states:
            found.append(Violation("record-boundary-present", where + name, "is missing"))
        elif not isinstance(states[name], bool):
            found.append(
                Violation("record-boundary-present", where + name, "must be true or false")
            )
        else:
            known[name] = states[name]
    must = {"bytes_sent": stage.bytes_sent, "response_received": stage.response_received}
    for name in _NOT_REACHED.get(stage.name, ()):
        must[name] = False
    for name, wanted in must.items():
        if wanted is not None and name in known and known[name] != wanted:
            found.append(
                Violation(
                    "record-boundary-stage",
                    where + name,
                    f"must be {str(wanted).lower()} for stage {stage.name} ({stage.title})",
                )
            )
    for later, earlier in _ORDER:
        if known.get(later) is True and known.get(earlier) is False:
            found.append(
                Violation(
                    "record-boundary-order",
                    where + earlier,
                    f"must be true: {later} is true, and {later} comes after {earlier}",
                )
            )
    return found
