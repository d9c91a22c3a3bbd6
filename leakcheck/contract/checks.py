"""Pluggable contract checks: how the stage matrix judges what a gateway returned.

A gateway built with leakcheck in mind returns envelope v1 (``EnvelopeV1``, the default);
one built without it has its own error shape: an MCP ``CallToolResult`` with ``isError``,
an exception, a dict of its own. ``ErrorAdapter`` maps that shape to a ``(code, action)``
pair and holds it to the code and action expected for the stage; ``NOT_CHECKED`` switches
the contract off (the case still checks leaks and hygiene). A check returns its violations
(an empty list: it passes), or ``None``: not checked, which every grid and report shows as
"not checked", never as "ok".

Any object with a ``name`` and a ``check`` method of this signature is a ``ContractCheck``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from ..stages import Stage
from .envelope import check_envelope
from .expectations import DEFAULT, Expectations
from .schema import SchemaArg, schema_validator
from .vocabulary import Violation

__all__ = [
    "ADAPTER_RULES",
    "NOT_CHECKED",
    "ContractCheck",
    "EnvelopeV1",
    "ErrorAdapter",
    "NotChecked",
]

#: the rules only ``ErrorAdapter`` reports (besides expected-code and expected-action)
ADAPTER_RULES: dict[str, str] = {
    "adapter-failed": "the adapter reads the result without raising",
    "adapter-not-an-error": "the result of a failure stage is an error, not a success",
    "adapter-result": "the adapter returns a (code, action) pair of strings or None",
}


@runtime_checkable
class ContractCheck(Protocol):
    """Judges one result of one matrix case against the code and action expected for its
    stage. ``name`` says which contract in failures and reports."""

    name: str

    def check(
        self,
        result: Any,
        *,
        stage: Stage,
        operation: str,
        repeatable: bool,
        expectations: Expectations,
        agent_input: Mapping[str, Any],
    ) -> list[Violation] | None:
        """The violations of ``result`` ([] when it passes), or None: not checked."""
        ...


class EnvelopeV1:
    """leakcheck's agent-error envelope (``check_envelope``): the schema (``agent-error``
    v1, or ``schema``: a path or a dict of your own), the semantic rules, the expected code
    and action for the stage."""

    name = "envelope-v1"

    def __init__(self, schema: SchemaArg = None) -> None:
        self.schema = schema
        if schema is not None:
            schema_validator(schema)  # a broken schema is a clear error now, not per case

    def check(
        self,
        result: Any,
        *,
        stage: Stage,
        operation: str,
        repeatable: bool,
        expectations: Expectations = DEFAULT,
        agent_input: Mapping[str, Any] | None = None,
    ) -> list[Violation]:
        return check_envelope(
            result,
            stage=stage,
            operation=operation,
            repeatable=repeatable,
            expectations=expectations,
            schema=self.schema,
            agent_input=agent_input,
        )

    def codes_allowed(self) -> list[str] | None:
        """The codes the schema's ``code`` enum allows (None: any)."""
        _, document = schema_validator(self.schema)
        enum = document.get("properties", {}).get("code", {}).get("enum")
        return [c for c in enum if isinstance(c, str)] if isinstance(enum, list) else None

    def __repr__(self) -> str:
        return "EnvelopeV1()" if self.schema is None else "EnvelopeV1(schema=...)"


ToError = Callable[[Any], "tuple[str, str] | None"]


def _known(value: Any, vocabulary: tuple[str, ...]) -> str:
    # vocabulary words are safe to show; anything else may be the leaked value itself
    return value if isinstance(value, str) and value in vocabulary else "another value"


class ErrorAdapter:
    """The gateway's own error shape, mapped to the contract's words: ``to_error(result)``
    returns ``(code, action)`` for an error, ``None`` for a result that is not an error.
    Every matrix stage is a failure, so ``None`` is a violation (the agent was told the
    call worked); a pair is compared with the code and action expected for the stage.

    ``ErrorAdapter(lambda r: (r.code, r.action) if r.is_error else None, name="my-result")``
    """

    def __init__(self, to_error: ToError, name: str = "adapter") -> None:
        if not callable(to_error):
            raise TypeError(
                f"ErrorAdapter(to_error): a function from the gateway's result to (code, "
                f"action) or None, not {type(to_error).__name__}"
            )
        if not isinstance(name, str) or not name.strip():
            raise ValueError("ErrorAdapter(name=...): a non-empty name for reports")
        self.to_error = to_error
        self.name = name

    def check(
        self,
        result: Any,
        *,
        stage: Stage,
        operation: str,
        repeatable: bool,
        expectations: Expectations = DEFAULT,
        agent_input: Mapping[str, Any] | None = None,
    ) -> list[Violation]:
        expected = expectations.expected(stage, operation=operation, repeatable=repeatable)
        context = f"stage {stage.name}, operation {operation}"
        context += ", repeatable" if repeatable else ", not repeatable"
        try:
            pair = self.to_error(result)
        except Exception as exc:  # noqa: BLE001 - the adapter is the user's code
            # the type only: an exception's text may carry what the result held
            return [
                Violation(
                    "adapter-failed",
                    "",
                    f"the {self.name} adapter raised {type(exc).__name__} on this result "
                    f"(the result is not in the shape the adapter expects)",
                )
            ]
        if pair is None:
            return [
                Violation(
                    "adapter-not-an-error",
                    "",
                    f"the {self.name} adapter reads the result as a success ({context}): "
                    f"expected the error {expected.code} / {expected.action}",
                )
            ]
        if (
            not isinstance(pair, tuple)
            or len(pair) != 2
            or not all(isinstance(p, str) for p in pair)
        ):
            return [
                Violation(
                    "adapter-result",
                    "",
                    f"the {self.name} adapter returned {type(pair).__name__}, not a (code, "
                    "action) pair of strings or None",
                )
            ]
        code, action = pair
        found = []
        if code != expected.code:
            found.append(
                Violation(
                    "expected-code",
                    "code",
                    f"expected {expected.code} ({context}), got {_known(code, expectations.codes)}",
                )
            )
        if action != expected.action:
            found.append(
                Violation(
                    "expected-action",
                    "action",
                    f"expected {expected.action} ({context}), got "
                    f"{_known(action, expectations.actions)}",
                )
            )
        return found

    def __repr__(self) -> str:
        return f"ErrorAdapter(name={self.name!r})"


class NotChecked:
    """The contract is off: a case checks leaks and hygiene only, and shows the contract
    as "not checked"."""

    name = "not checked"

    def check(self, result: Any, **_: Any) -> None:
        return None

    def __repr__(self) -> str:
        return "NOT_CHECKED"


#: the contract switched off (leaks and hygiene only)
NOT_CHECKED = NotChecked()
