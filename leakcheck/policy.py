"""Which class of secret may appear in which class of sink.

Defaults, from the design brief: direct secrets may appear in no sink at all; sensitive
context and upstream prose may appear in operator sinks (logs, telemetry, crash reports),
never in caller-visible ones (the tool response, exceptions reaching the agent, stdout).

*Latent* material (``SinkClass.LATENT``) is what an operator sink holds without emitting
it: an attribute of a logged exception that no handler renders, the ``repr`` of a log
record's arguments, a loguru traceback's variable values under ``diagnose=False``, a record
below the production level declared for its logger (``log_levels``). It is reported and
never fails a test, unless ``strict_latent`` is set: then it is judged as the operator sink
it sits in.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import Enum

from .canaries import SecretClass
from .errors import LeakcheckUsageError, looks_like_a_key, quoted

__all__ = [
    "SinkClass",
    "Policy",
    "PolicyError",
    "DEFAULT_POLICY",
    "RULE_SINK_CLASSES",
    "level_name",
    "parse_log_levels",
]


class SinkClass(str, Enum):
    CALLER = "caller"  # what the agent sees
    OPERATOR = "operator"  # what the operator sees
    #: held by an operator sink without being emitted (see the module's docstring): not a
    #: place a rule names, a state; judged as OPERATOR under ``strict_latent``
    LATENT = "latent"


#: The sink classes an ``allow``/``forbid`` rule may name.
RULE_SINK_CLASSES = (SinkClass.CALLER, SinkClass.OPERATOR)

#: Level names a declared production level may use: logging's, and loguru's TRACE and
#: SUCCESS (a declared level applies to loguru records too, by module name).
_LEVELS = {
    "NOTSET": 0,
    "TRACE": 5,
    "DEBUG": 10,
    "INFO": 20,
    "SUCCESS": 25,
    "WARNING": 30,
    "WARN": 30,
    "ERROR": 40,
    "CRITICAL": 50,
    "FATAL": 50,
}
_LEVEL_NAMES = {0: "NOTSET", 5: "TRACE", 10: "DEBUG", 20: "INFO", 25: "SUCCESS", 30: "WARNING",
                40: "ERROR", 50: "CRITICAL"}  # fmt: skip
#: The name a declared level gives the root logger: the level of every logger no closer
#: declaration covers.
ROOT = "root"


def level_name(level: int) -> str:
    """``INFO`` for 20; ``Level 15`` for a level with no standard name."""
    return _LEVEL_NAMES.get(level) or logging.getLevelName(level)


class PolicyError(LeakcheckUsageError, ValueError):
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

    #: judge latent material as the operator sink it sits in (fail on a direct secret)
    strict_latent: bool = False
    #: declared production levels, ``(logger name, level)`` sorted by name; ``"root"`` is
    #: the level of every logger no closer name covers. None declared: every level counts.
    log_levels: tuple[tuple[str, int], ...] = ()

    def allows(self, secret_class: SecretClass | str, sink_class: SinkClass | str) -> bool:
        # (a member as itself: the enum's call was most of a look-up made for every text
        # and secret of every test)
        secret = secret_class if type(secret_class) is SecretClass else SecretClass(secret_class)
        sink = sink_class if type(sink_class) is SinkClass else SinkClass(sink_class)
        if sink is SinkClass.LATENT:
            return not self.strict_latent or (secret, SinkClass.OPERATOR) in self.allowed
        return (secret, sink) in self.allowed

    def with_latent(
        self,
        *,
        strict: bool | None = None,
        log_levels: Mapping[str, object] | Iterable[str] | str | None = None,
        what: str = "log_levels",
    ) -> Policy:
        """A copy with ``strict_latent`` set (``None``: kept) and ``log_levels`` declared
        on top of the ones it has (the same logger declared again takes the new level)."""
        levels = dict(self.log_levels)
        levels.update(parse_log_levels(log_levels, what))
        return replace(
            self,
            strict_latent=self.strict_latent if strict is None else bool(strict),
            log_levels=tuple(sorted(levels.items())),
        )

    def production_level(self, logger: str) -> tuple[str, int] | None:
        """The declared level that applies to ``logger``: its own, its closest declared
        ancestor's (``httpcore`` covers ``httpcore.http11``), else the root's; None when
        nothing covers it (then every level is emitted)."""
        if not self.log_levels:
            return None
        declared = dict(self.log_levels)
        name = logger if logger and logger != ROOT else ""
        while name:
            if name in declared:
                return name, declared[name]
            name = name.rpartition(".")[0]
        if ROOT in declared:
            return ROOT, declared[ROOT]
        return None

    def with_rules(
        self,
        allow: Mapping[str, Iterable[str]] | Iterable[str] = (),
        forbid: Mapping[str, Iterable[str]] | Iterable[str] = (),
    ) -> Policy:
        """A copy with pairs added (``allow``) and removed (``forbid``); each given as
        ``{"context": ["caller"]}`` or as strings ``"context: caller, operator"``."""
        allowed = set(self.allowed) | set(_pairs(allow, "allow"))
        allowed -= set(_pairs(forbid, "forbid"))
        return replace(self, allowed=frozenset(allowed))


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
                    f"{what} rule {quoted(rule)}: expected 'SECRET_CLASS: SINK_CLASS[, SINK_CLASS]'"
                )
            secret_class, sinks = rule.split(":", 1)
            items.append((secret_class, [s for s in sinks.replace(",", " ").split() if s]))
    secret_names = ", ".join(c.value for c in SecretClass)
    sink_names = ", ".join(c.value for c in RULE_SINK_CLASSES)
    for secret_class, sinks in items:
        try:
            cls = SecretClass(secret_class.strip())
        except ValueError:
            raise PolicyError(
                f"{what}: unknown secret class {quoted(secret_class.strip())}; use {secret_names}"
            ) from None
        if not sinks:
            raise PolicyError(f"{what}: no sink class for {cls.value!r}; use {sink_names}")
        for sink in sinks:
            try:
                sink_class = SinkClass(sink.strip())
            except ValueError:
                sink_class = None
            if sink_class not in RULE_SINK_CLASSES:
                hint = " (latent is judged by strict_latent)" if sink_class else ""
                raise PolicyError(
                    f"{what}: unknown sink class {quoted(sink.strip())}; use {sink_names}{hint}"
                )
            yield cls, sink_class


def parse_log_levels(
    spec: Mapping[str, object] | Iterable[str] | str | None, what: str = "log_levels"
) -> dict[str, int]:
    """``{logger: level}`` from ``{"httpcore": "INFO"}``, ``["httpcore=INFO", ...]`` or
    ``"httpcore=INFO root=WARNING"``: a level by name (any case: logging's, or loguru's
    TRACE and SUCCESS) or as a number. ``root`` names every logger no closer one covers."""
    shape = (
        f"{what}: expected {{'LOGGER': 'LEVEL'}} or 'LOGGER=LEVEL' entries "
        f"(e.g. httpcore=INFO root=WARNING)"
    )
    if spec is None:
        return {}
    if isinstance(spec, str):
        spec = spec.replace(",", " ").split()
    pairs: list[tuple[object, object]] = []
    if isinstance(spec, Mapping):
        pairs = list(spec.items())
    elif isinstance(spec, Iterable):
        for entry in spec:
            if not isinstance(entry, str):
                raise PolicyError(shape)
            for part in entry.replace(",", " ").split():
                name, equals, level = part.partition("=")
                if not equals:
                    named, colon, after = part.rpartition(":")
                    if colon and named and after.upper() in _LEVELS:  # ("httpx:INFO")
                        example = f"{named}={after}"
                    elif part.upper() in _LEVELS:
                        example = f"root={part}"
                    else:
                        example = "httpx=INFO" if looks_like_a_key(part) else f"{part}=INFO"
                    raise PolicyError(
                        f"{what}: {quoted(part)} has no level; write LOGGER=LEVEL (e.g. "
                        f"{example}; root is every logger no closer name covers)"
                    )
                pairs.append((name, level))
    else:
        raise PolicyError(shape)
    levels: dict[str, int] = {}
    for logger, value in pairs:
        if not isinstance(logger, str) or not logger.strip():
            raise PolicyError(f"{what}: a logger name must be a non-empty string ({ROOT} for all)")
        levels[logger.strip()] = _level(value, logger.strip(), what)
    return levels


def _level(level: object, name: str, what: str) -> int:
    if isinstance(level, bool):
        pass  # True is an int: never a level
    elif isinstance(level, int):
        if level >= 0:
            return level
    elif isinstance(level, str):
        text = level.strip()
        if text.isdigit():
            return int(text)
        if text.upper() in _LEVELS:
            return _LEVELS[text.upper()]
    raise PolicyError(
        f"{what}: unknown level {quoted(level)} for {quoted(name)}; use DEBUG, INFO, WARNING, "
        f"ERROR, CRITICAL, NOTSET, TRACE, SUCCESS or a number"
    )
