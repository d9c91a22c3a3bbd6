"""The contract's words: codes, actions, fields, patterns and what a broken rule says."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    pass


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

RETRY, STOP = Action.RETRY_AFTER_DELAY.value, Action.STOP_AND_REPORT.value
REPAIR, INSPECT = Action.REPAIR_INPUT.value, Action.INSPECT_OUTCOME.value
OUTCOME_UNKNOWN = Code.OUTCOME_UNKNOWN.value

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
