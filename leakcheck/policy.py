"""Which class of secret may appear in which class of sink.

Defaults, from the design brief: direct secrets may appear in no sink at all; sensitive
context and upstream prose may appear in operator sinks (logs, telemetry, crash reports),
never in caller-visible ones (the tool response, exceptions reaching the agent, stdout).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum

from .canaries import SecretClass

__all__ = ["SinkClass", "Policy", "PolicyError", "DEFAULT_POLICY"]


class SinkClass(str, Enum):
    CALLER = "caller"  # what the agent sees
    OPERATOR = "operator"  # what the operator sees


class PolicyError(ValueError):
    """A policy written wrong in an ini file or a marker."""


@dataclass(frozen=True)
class Policy:
    """The set of (secret class, sink class) pairs that are allowed."""

    allowed: frozenset[tuple[SecretClass, SinkClass]] = field(
        default_factory=lambda: frozenset(
            {
                (SecretClass.CONTEXT, SinkClass.OPERATOR),
                (SecretClass.PROSE, SinkClass.OPERATOR),
            }
        )
    )

    def allows(self, secret_class: SecretClass | str, sink_class: SinkClass | str) -> bool:
        return (SecretClass(secret_class), SinkClass(sink_class)) in self.allowed

    def with_rules(
        self,
        allow: Mapping[str, Iterable[str]] | Iterable[str] = (),
        forbid: Mapping[str, Iterable[str]] | Iterable[str] = (),
    ) -> Policy:
        """A copy with pairs added (``allow``) and removed (``forbid``); each given as
        ``{"context": ["caller"]}`` or as strings ``"context: caller, operator"``."""
        allowed = set(self.allowed) | set(_pairs(allow, "allow"))
        allowed -= set(_pairs(forbid, "forbid"))
        return Policy(frozenset(allowed))


DEFAULT_POLICY = Policy()


def _pairs(
    rules: Mapping[str, Iterable[str]] | Iterable[str], what: str
) -> Iterable[tuple[SecretClass, SinkClass]]:
    shape = (
        f"{what}: expected {{'SECRET_CLASS': ['SINK_CLASS', ...]}} or "
        f"'SECRET_CLASS: SINK_CLASS[, SINK_CLASS]' rules"
    )
    if isinstance(rules, str):
        rules = [rules]
    if isinstance(rules, Mapping):
        items = []
        for k, v in rules.items():
            sinks = [v] if isinstance(v, str) else v
            if (
                not isinstance(k, str)
                or not isinstance(sinks, (list, tuple, set, frozenset))
                or not all(isinstance(sink, str) for sink in sinks)
            ):
                raise PolicyError(shape)
            items.append((k, list(sinks)))
    elif not isinstance(rules, Iterable):
        raise PolicyError(shape)
    else:
        items = []
        for rule in rules:
            if not isinstance(rule, str):
                raise PolicyError(shape)
            if ":" not in rule:
                raise PolicyError(
                    f"{what} rule {rule!r}: expected 'SECRET_CLASS: SINK_CLASS[, SINK_CLASS]'"
                )
            secret_class, sinks = rule.split(":", 1)
            items.append((secret_class, [s for s in sinks.replace(",", " ").split() if s]))
    secret_names = ", ".join(c.value for c in SecretClass)
    sink_names = ", ".join(c.value for c in SinkClass)
    for secret_class, sinks in items:
        try:
            cls = SecretClass(secret_class.strip())
        except ValueError:
            raise PolicyError(
                f"{what}: unknown secret class {secret_class.strip()!r}; use {secret_names}"
            ) from None
        if not sinks:
            raise PolicyError(f"{what}: no sink class for {cls.value!r}; use {sink_names}")
        for sink in sinks:
            try:
                yield cls, SinkClass(sink.strip())
            except ValueError:
                raise PolicyError(
                    f"{what}: unknown sink class {sink.strip()!r}; use {sink_names}"
                ) from None
