"""``@pytest.mark.leakcheck(...)``: a test's options, validated into a typed object."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from ..capture import ProtectedRecordSink
from ..extensions import skipped_plugins
from ..harness import LeakCheck
from ..policy import Policy, PolicyError

__all__ = ["DEFAULT_OPTIONS", "MARKER", "LeakcheckOptions", "known_sink_names", "options_for"]

MARKER = "leakcheck"
MARKER_KEYS = {"allow", "forbid", "skip_sinks", "decode"}


@dataclass(frozen=True)
class LeakcheckOptions:
    """The ``@pytest.mark.leakcheck(...)`` options, validated."""

    allow: dict[str, list[str]] | list[str] = field(default_factory=dict)
    forbid: dict[str, list[str]] | list[str] = field(default_factory=dict)
    skip_sinks: dict[str, str] = field(default_factory=dict)
    decode: bool = True

    @classmethod
    def from_markers(cls, markers: list[pytest.Mark]) -> LeakcheckOptions:
        """The options of a test's markers, closest first (``item.iter_markers``): a key
        set on the test overrides the same key set on its class or module, and keys set
        only farther out still apply. A key's value is taken whole, never merged."""
        kwargs: dict[str, Any] = {}
        for marker in reversed(markers):
            if marker.args:
                raise pytest.UsageError("@pytest.mark.leakcheck takes keyword arguments only")
            kwargs.update(marker.kwargs)
        unknown = set(kwargs) - MARKER_KEYS
        if unknown:
            raise pytest.UsageError(
                f"@pytest.mark.leakcheck: unknown option(s) {', '.join(sorted(unknown))}; "
                f"known: {', '.join(sorted(MARKER_KEYS))}"
            )
        skip = kwargs.get("skip_sinks", {})
        if not isinstance(skip, dict) or not all(
            isinstance(reason, str) and reason.strip() for reason in skip.values()
        ):
            raise pytest.UsageError(
                "@pytest.mark.leakcheck(skip_sinks=...) takes {sink name: reason}; "
                "every opt-out states its reason"
            )
        if not all(isinstance(name, str) for name in skip):
            raise pytest.UsageError(
                "@pytest.mark.leakcheck(skip_sinks=...) takes {sink name: reason}"
            )
        unknown_sinks = sorted(set(skip) - known_sink_names())
        # a sink of a plugin whose library is missing here has no known name: let it be
        if unknown_sinks and not skipped_plugins():
            raise pytest.UsageError(
                f"@pytest.mark.leakcheck(skip_sinks=...): unknown sink(s) "
                f"{', '.join(repr(n) for n in unknown_sinks)}; known: "
                f"{', '.join(sorted(known_sink_names()))}"
            )
        decode = kwargs.get("decode", True)
        if not isinstance(decode, bool):
            raise pytest.UsageError(
                f"@pytest.mark.leakcheck(decode=...) takes True or False, "
                f"not {type(decode).__name__}"
            )
        rules: dict[str, Any] = {}
        for key in ("allow", "forbid"):
            value = kwargs.get(key) or {}
            if isinstance(value, str):
                value = [value]
            if not isinstance(value, (dict, list, tuple)):
                raise pytest.UsageError(
                    f"@pytest.mark.leakcheck({key}=...) takes {{secret class: [sink class, "
                    f"...]}} or ['secret class: sink class', ...], not {type(value).__name__}"
                )
            rules[key] = value
        return cls(
            allow=rules["allow"],
            forbid=rules["forbid"],
            skip_sinks=dict(skip),
            decode=decode,
        )

    def policy(self, base: Policy, where: str) -> Policy:
        try:
            return base.with_rules(allow=self.allow, forbid=self.forbid)
        except PolicyError as exc:
            raise pytest.UsageError(f"@pytest.mark.leakcheck on {where}: {exc}") from None


DEFAULT_OPTIONS = LeakcheckOptions()


def known_sink_names() -> set[str]:
    # every sink a check starts with (its own, the built-in and the plugins' ones) and the
    # stage matrix's protected record
    return {sink.name for sink in LeakCheck().sinks} | {ProtectedRecordSink.name}


def options_for(item: pytest.Item, base: Policy) -> tuple[LeakcheckOptions, Policy]:
    """The validated marker options of ``item`` and the policy they make."""
    markers = list(item.iter_markers(MARKER))
    if not markers:  # the common case: the session's policy as it is
        return DEFAULT_OPTIONS, base
    try:
        options = LeakcheckOptions.from_markers(markers)
    except pytest.UsageError as exc:
        raise pytest.UsageError(f"{exc} (on {item.nodeid})") from None
    return options, options.policy(base, item.nodeid)
