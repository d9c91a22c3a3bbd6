"""The code and action expected for each stage and operation, and the defaults."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import quoted
from ..stages import Stage, get_stage
from .vocabulary import (
    ACTIONS,
    CODES,
    DEFAULT_MESSAGES,
    INSPECT,
    OPTIONAL_FIELDS,
    OUTCOME_UNKNOWN,
    REPAIR,
    RETRY,
    STOP,
)

if TYPE_CHECKING:  # pragma: no cover
    pass


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
        if (self.code == OUTCOME_UNKNOWN) != (self.action == INSPECT):
            raise ValueError(
                f"Expected({self.code}, {self.action}): code OUTCOME_UNKNOWN goes with action "
                "inspect_outcome, and only with it"
            )
        if "retry_after_seconds" in self.requires and self.action != RETRY:
            raise ValueError(
                f"Expected({self.code}, {self.action}): retry_after_seconds goes only with "
                "action retry_after_delay"
            )

    @property
    def retryable(self) -> bool:
        return self.action == RETRY


def _e(code: str, action: str, *requires: str) -> tuple[Expected, Expected]:
    same = Expected(code, action, requires)
    return same, same


def _after_send(repeatable: Expected) -> tuple[Expected, Expected]:
    return Expected(OUTCOME_UNKNOWN, INSPECT), repeatable


_UNAVAILABLE = Expected("UPSTREAM_UNAVAILABLE", RETRY)
_INVALID_RESPONSE = Expected("UPSTREAM_INVALID_RESPONSE", STOP)

#: stage -> (on a non-repeatable operation, on a repeatable one); see the module docstring
_DEFAULTS: dict[str, tuple[Expected, Expected]] = {
    # invalid_fields: required by the semantic rule for INVALID_INPUT, whatever the stage
    "invalid_input": _e("INVALID_INPUT", REPAIR),
    "vault_locked": _e("VAULT_LOCKED", STOP),
    "approval_declined": _e("USER_DENIED", STOP),
    "gateway_exception": _e("INTERNAL_ERROR", STOP),
    "http_401": _e("AUTH_FAILED", STOP),
    "http_403": _e("PERMISSION_DENIED", STOP),
    "http_429": _e("RATE_LIMITED", RETRY, "retry_after_seconds"),
    "http_5xx": _after_send(_UNAVAILABLE),
    "malformed_json": _after_send(_INVALID_RESPONSE),
    "html_login_page": _after_send(_INVALID_RESPONSE),
    "redirect_signed_url": _e("UPSTREAM_INVALID_RESPONSE", STOP),
    "dns_failure": _e("UPSTREAM_UNREACHABLE", RETRY),
    "connection_refused": _e("UPSTREAM_UNREACHABLE", RETRY),
    "tls_hostname_mismatch": _e("REMOTE_UNVERIFIED", STOP),
    "tls_untrusted_ca": _e("REMOTE_UNVERIFIED", STOP),
    "timeout_before_send": _e("UPSTREAM_UNREACHABLE", RETRY),
    "timeout_after_send": _after_send(_UNAVAILABLE),
    "reset_after_send": _after_send(_UNAVAILABLE),
    "truncated_body": _after_send(_INVALID_RESPONSE),
    "ssh_auth_rejected": _e("AUTH_FAILED", STOP),
    "ssh_host_key_mismatch": _e("REMOTE_UNVERIFIED", STOP),
    "ssh_unknown_host_key": _e("REMOTE_UNVERIFIED", STOP),
    "ssh_command_failed": _e("REMOTE_REJECTED", STOP),
    "ssh_hang_after_command": _after_send(_UNAVAILABLE),
    "ssh_connection_refused": _e("UPSTREAM_UNREACHABLE", RETRY),
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
        __tracebackhide__ = True  # (the user's mistake: their line, not ours)
        self._overrides: dict[tuple[str, str, bool | None], Expected] = {}
        for key, value in (overrides or {}).items():
            self._overrides[self._key(key)] = self._expected(key, value)

    def _key(self, key: Any) -> tuple[str, str, bool | None]:
        __tracebackhide__ = True  # (the user's mistake: their line, not ours)
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
        __tracebackhide__ = True  # (the user's mistake: their line, not ours)
        if isinstance(value, tuple) and len(value) == 2:
            value = Expected(*value)
        if not isinstance(value, Expected):
            raise ValueError(f"expectation {key!r}: expected an Expected or a (code, action) pair")
        if value.code not in self.codes:
            raise ValueError(
                f"expectation {quoted(key)}: unknown code {quoted(value.code)}; known codes: "
                + ", ".join(self.codes)
            )
        if value.action not in self.actions:
            raise ValueError(
                f"expectation {quoted(key)}: unknown action {quoted(value.action)}; known actions: "
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
