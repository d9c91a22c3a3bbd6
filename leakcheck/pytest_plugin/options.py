"""``@pytest.mark.leakcheck(...)``: a test's options, validated into a typed object; and
the session's latent options (ini ``leakcheck_strict_latent``, ``leakcheck_log_levels``, the
``--leakcheck-strict-latent`` flag), which a test's marker refines."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from ..errors import did_you_mean, plain, quoted
from ..extensions import skipped_plugins, waiting_plugins
from ..policy import Policy, PolicyError, parse_log_levels

__all__ = [
    "DEFAULT_OPTIONS",
    "MARKER",
    "MARKER_HELP",
    "LeakcheckOptions",
    "addoption",
    "configure",
    "known_sink_names",
    "options_for",
]

MARKER = "leakcheck"
MARKER_KEYS = {"allow", "forbid", "skip_sinks", "decode", "strict_latent", "log_levels"}
MARKER_HELP = (
    "leakcheck(allow=None, forbid=None, skip_sinks=None, decode=True, strict_latent=None, "
    "log_levels=None): per-test leak policy; skip_sinks maps a sink name to the reason it "
    "is opted out; strict_latent=True fails on latent material too; log_levels maps a "
    "logger to its production level ({'httpcore': 'INFO'}): a record below it is latent"
)

#: the session's latent options, read once from the ini and the command line
_SESSION_LATENT = pytest.StashKey[tuple[bool, dict[str, int]]]()
#: the session policy with them applied: (the policy it was made from, the result)
_SESSION_POLICY = pytest.StashKey[tuple[Policy, Policy]]()


def addoption(parser: pytest.Parser) -> None:
    """The latent options: a strict switch (ini and command line) and production levels."""
    parser.getgroup("leakcheck").addoption(
        "--leakcheck-strict-latent",
        action="store_true",
        default=False,
        help="fail on latent material too (present on a logged object, rendered by no "
        "handler; below a declared production level); same as ini leakcheck_strict_latent",
    )
    parser.addini(
        "leakcheck_strict_latent",
        type="bool",
        default=False,
        help="fail on latent material too (default false: latent findings are reported, "
        "not failed)",
    )
    parser.addini(
        "leakcheck_log_levels",
        type="args",
        default=[],
        help="production log levels, LOGGER=LEVEL each (httpcore=INFO root=WARNING): a "
        "record below its logger's level is latent (default: none, every level counts)",
    )


def configure(config: pytest.Config) -> None:
    """Read the session's latent options now: one written wrong is a usage error before
    any test runs."""
    _session_latent(config)


def _session_latent(config: pytest.Config) -> tuple[bool, dict[str, int]]:
    found = config.stash.get(_SESSION_LATENT, None)
    if found is not None:
        return found
    try:
        strict = bool(config.getini("leakcheck_strict_latent"))
    except (ValueError, pytest.UsageError):  # "invalid truth value": say which option
        # (not pytest's message: it quotes the value, and a value may be a token)
        raise pytest.UsageError(
            "leakcheck ini: leakcheck_strict_latent: not a truth value (write true or false)"
        ) from None
    strict = strict or bool(config.getoption("--leakcheck-strict-latent"))
    try:
        parsed = parse_log_levels(config.getini("leakcheck_log_levels"), "leakcheck_log_levels")
    except PolicyError as exc:
        raise pytest.UsageError(f"leakcheck ini: {exc}") from None
    found = config.stash[_SESSION_LATENT] = (strict, parsed)
    return found


def session_policy(config: pytest.Config, base: Policy) -> Policy:
    """``base`` (the ini's allow/forbid) with the session's latent options applied."""
    cached = config.stash.get(_SESSION_POLICY, None)
    if cached is not None and cached[0] is base:
        return cached[1]
    strict, levels = _session_latent(config)
    policy = base.with_latent(strict=strict, log_levels=levels) if strict or levels else base
    config.stash[_SESSION_POLICY] = (base, policy)
    return policy


@dataclass(frozen=True)
class LeakcheckOptions:
    """The ``@pytest.mark.leakcheck(...)`` options, validated."""

    allow: dict[str, list[str]] | list[str] = field(default_factory=dict)
    forbid: dict[str, list[str]] | list[str] = field(default_factory=dict)
    skip_sinks: dict[str, str] = field(default_factory=dict)
    decode: bool = True
    #: None: the session's (ini, command line); True/False: this test's
    strict_latent: bool | None = None
    #: declared on top of the session's, the same logger taking this test's level
    log_levels: dict[str, int] = field(default_factory=dict)

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
            guess = did_you_mean(next(iter(unknown)), MARKER_KEYS) if len(unknown) == 1 else ""
            raise pytest.UsageError(
                "@pytest.mark.leakcheck: unknown option(s) "
                f"{', '.join(map(plain, sorted(unknown)))}{guess}; "
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
        known_sinks = known_sink_names()
        unknown_sinks = sorted(set(skip) - known_sinks)
        # a sink of a plugin whose library is missing here has no known name: let it be,
        # unless it is a known one misspelt ("log recrd": the log sink stayed on, the
        # typo listed as an opt-out)
        misspelt = [n for n in unknown_sinks if did_you_mean(n, known_sinks)]
        if misspelt:
            raise pytest.UsageError(
                f"@pytest.mark.leakcheck(skip_sinks=...): unknown sink "
                f"{quoted(misspelt[0])}{did_you_mean(misspelt[0], known_sinks)}; known: "
                f"{', '.join(sorted(known_sinks))}"
            )
        if unknown_sinks and not skipped_plugins() and not waiting_plugins():
            raise pytest.UsageError(
                f"@pytest.mark.leakcheck(skip_sinks=...): unknown sink(s) "
                f"{', '.join(map(quoted, unknown_sinks))}; known: "
                f"{', '.join(sorted(known_sink_names()))}"
            )
        decode = kwargs.get("decode", True)
        if not isinstance(decode, bool):
            raise pytest.UsageError(
                f"@pytest.mark.leakcheck(decode=...) takes True or False, "
                f"not {type(decode).__name__}"
            )
        strict_latent = kwargs.get("strict_latent")
        if strict_latent is not None and not isinstance(strict_latent, bool):
            raise pytest.UsageError(
                f"@pytest.mark.leakcheck(strict_latent=...) takes True or False, "
                f"not {type(strict_latent).__name__}"
            )
        try:
            log_levels = parse_log_levels(kwargs.get("log_levels"), "log_levels=...)")
        except PolicyError as exc:
            raise pytest.UsageError(f"@pytest.mark.leakcheck({exc}") from None
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
            strict_latent=strict_latent,
            log_levels=log_levels,
        )

    def policy(self, base: Policy, where: str) -> Policy:
        try:
            policy = base.with_rules(allow=self.allow, forbid=self.forbid)
        except PolicyError as exc:
            raise pytest.UsageError(f"@pytest.mark.leakcheck on {where}: {exc}") from None
        if self.strict_latent is None and not self.log_levels:
            return policy
        return policy.with_latent(strict=self.strict_latent, log_levels=self.log_levels)


DEFAULT_OPTIONS = LeakcheckOptions()


def known_sink_names() -> set[str]:
    # every sink a check starts with (its own, the built-in and the plugins' ones) and the
    # stage matrix's protected record
    from ..capture import ProtectedRecordSink
    from ..harness import LeakCheck

    return {sink.name for sink in LeakCheck().sinks} | {ProtectedRecordSink.name}


def options_for(item: pytest.Item, base: Policy) -> tuple[LeakcheckOptions, Policy]:
    """The validated marker options of ``item`` and the policy they make, on top of
    ``base`` with the session's latent options."""
    base = session_policy(item.config, base)
    markers = list(item.iter_markers(MARKER))
    if not markers:  # the common case: the session's policy as it is
        return DEFAULT_OPTIONS, base
    try:
        options = LeakcheckOptions.from_markers(markers)
    except pytest.UsageError as exc:
        raise pytest.UsageError(f"{exc} (on {item.nodeid})") from None
    return options, options.policy(base, item.nodeid)
