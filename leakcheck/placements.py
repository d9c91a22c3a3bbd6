"""Placements: where a canary sits when a tool call fails.

The placements are data (``corpora/placements.json``): templates that name canary kinds in
braces. ``place(name, secret)`` renders one with fresh canaries into a ``Placed``: the
credential config a gateway is given (request headers, query, userinfo), agent input, what
the upstream answers with (headers, body, whether it reflects the request), an injected
exception cause, and the SSH pieces (command arguments, environment, password, paths).
"""

from __future__ import annotations

import json
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, Literal

from .canaries import KINDS
from .errors import LeakcheckUsageError, did_you_mean, quoted
from .stages import STAGES

__all__ = [
    "BASELINE_PLACEMENTS",
    "PLACEMENTS",
    "AuthTemplate",
    "Placed",
    "Placement",
    "SSHPlacement",
    "UnknownPlacementError",
    "get_placement",
    "place",
    "placements_for",
    "render_template",
    "template_kinds",
]

Where = Literal["credential", "agent_input", "upstream", "exception", "ssh"]
Pairs = tuple[tuple[str, str], ...]


#: the placement whose matrix case records an error-text snapshot, per operation transport
#: (the base credential alone: the texts a plain call produces)
BASELINE_PLACEMENTS: dict[str, str] = {"http": "authorization-header", "ssh": "ssh-password"}


class UnknownPlacementError(LeakcheckUsageError, ValueError):
    """A placement name that is not in the corpus (the message lists the known ones)."""


@dataclass(frozen=True)
class Placement:
    name: str
    where: Where
    description: str
    spec: Mapping[str, Any] = field(repr=False, compare=False, hash=False)

    @property
    def kinds(self) -> tuple[str, ...]:
        """The canary kinds this placement (with the base credential) plants."""
        return tuple(sorted(template_kinds(_corpus()["base"]) | template_kinds(self.spec)))

    @property
    def stages(self) -> tuple[str, ...] | None:
        """The only stages this placement can show at (None: any that fits its kind)."""
        chosen = self.spec.get("stages")
        return tuple(chosen) if chosen is not None else None

    @property
    def malformed(self) -> Mapping[str, str]:
        """Credential kinds handed out damaged, and what is appended (a trailing ``"\\n"``)."""
        return dict(self.spec.get("malformed", {}))


@dataclass(frozen=True)
class AuthTemplate:
    """Where a gateway puts its credentials, as templates naming vault kinds
    (``"Bearer {bearer}"``): the gateway fills them from its vault, so the vault is
    consulted (credential selection) before anything leaves."""

    headers: Pairs = ()
    query: Pairs = ()
    userinfo: tuple[str, str] | None = None

    def kinds(self) -> tuple[str, ...]:
        return tuple(sorted(template_kinds([self.headers, self.query, self.userinfo or ()])))

    def render(self, lookup: Callable[[str], str]) -> tuple[Pairs, Pairs, tuple[str, str] | None]:
        """``(headers, query, userinfo)`` with each ``{kind}`` replaced by ``lookup(kind)``."""
        values = {kind: lookup(kind) for kind in self.kinds()}
        headers = tuple((k, v.format_map(values)) for k, v in self.headers)
        query = tuple((k, v.format_map(values)) for k, v in self.query)
        userinfo = None
        if self.userinfo is not None:
            userinfo = (self.userinfo[0].format_map(values), self.userinfo[1].format_map(values))
        return headers, query, userinfo


@dataclass(frozen=True, repr=False)
class SSHPlacement:
    command_args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    password: str | None = None
    identity_file: str | None = None
    known_hosts: str | None = None
    username: str | None = None
    host_alias: str | None = None

    def __repr__(self) -> str:  # names what is set, never a value
        set_ = [name for name, value in vars(self).items() if value]
        return f"SSHPlacement(set={set_})"


@dataclass(frozen=True)
class Placed:
    """One placement rendered with canaries. ``secrets`` maps each kind used to its value
    (they are registered with the check that made them)."""

    placement: Placement
    secrets: Mapping[str, str] = field(repr=False)
    request_headers: Pairs = field(default=(), repr=False)
    query: Pairs = field(default=(), repr=False)
    userinfo: tuple[str, str] | None = field(default=None, repr=False)
    agent_input: Mapping[str, Any] = field(default_factory=dict, repr=False)
    reply_headers: Pairs = field(default=(), repr=False)
    reply_body: str = field(default="", repr=False)
    reflect_request: bool = False
    cause: str | None = field(default=None, repr=False)
    ssh: SSHPlacement = field(default_factory=SSHPlacement, repr=False)
    #: the credential pieces as templates, for a gateway that reads its vault itself
    auth: AuthTemplate = field(default_factory=AuthTemplate)
    #: kind -> what is appended to its value where the gateway gets it (vault, headers);
    #: ``secrets`` keeps the value itself, which is what must never leak
    malformed: Mapping[str, str] = field(default_factory=dict, repr=False)

    @property
    def credentials(self) -> dict[str, str]:
        """What the gateway's vault hands out: each secret, damaged where the placement
        says (a token read from a mounted file with its trailing newline)."""
        return {kind: value + self.malformed.get(kind, "") for kind, value in self.secrets.items()}

    @property
    def name(self) -> str:
        return self.placement.name

    def cause_exception(self) -> ConnectionError | None:
        """The exception a careless transport wrapper would chain (``raise ... from``)."""
        return ConnectionError(self.cause) if self.cause is not None else None


@cache
def _corpus() -> dict[str, Any]:
    text = resources.files("leakcheck.corpora").joinpath("placements.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    unknown = template_kinds(data) - set(KINDS)
    for entry in data["placements"]:
        unknown |= set(entry.get("malformed", {})) - set(KINDS)
    if unknown:  # a corpus edit that names no canary kind is our bug, not the user's
        raise ValueError(f"placements.json names unknown canary kinds: {sorted(unknown)}")
    stages = {name for entry in data["placements"] for name in entry.get("stages", ())}
    if stages - set(STAGES):
        raise ValueError(f"placements.json names unknown stages: {sorted(stages - set(STAGES))}")
    return data


def template_kinds(value: Any) -> set[str]:
    """The names a template uses in braces: a string, or dicts and lists of them (the
    canary kinds of a placement, an invalid input, an MCP server's configuration)."""
    if isinstance(value, str):
        return {f for _, f, _, _ in string.Formatter().parse(value) if f is not None}
    if isinstance(value, Mapping):
        return set().union(*(template_kinds(v) for v in value.values()), set())
    if isinstance(value, list | tuple):
        return set().union(*(template_kinds(v) for v in value), set())
    return set()


def _load() -> dict[str, Placement]:
    out = {}
    for entry in _corpus()["placements"]:
        spec = {k: v for k, v in entry.items() if k not in ("name", "where", "description")}
        out[entry["name"]] = Placement(entry["name"], entry["where"], entry["description"], spec)
    return out


#: every placement by name, in corpus order
PLACEMENTS: dict[str, Placement] = _load()


def get_placement(name: str | Placement) -> Placement:
    if isinstance(name, Placement):
        return name
    try:
        return PLACEMENTS[name]
    except KeyError:
        known = ", ".join(PLACEMENTS)
        raise UnknownPlacementError(
            f"unknown placement {quoted(name)}{did_you_mean(name, PLACEMENTS)}; "
            f"known placements: {known}"
        ) from None


def placements_for(transport: str) -> list[Placement]:
    """Placements that make sense for ``transport`` ("http" or "ssh")."""
    if transport == "ssh":
        keep = {"ssh", "agent_input", "exception"}
    else:
        keep = {"credential", "agent_input", "upstream", "exception"}
    return [p for p in PLACEMENTS.values() if p.where in keep]


def render_template(value: Any, values: Mapping[str, str]) -> Any:
    """A template (a string, or dicts and lists of them) with each name filled."""
    if isinstance(value, str):
        return value.format_map(values)
    if isinstance(value, Mapping):
        return {k: render_template(v, values) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [render_template(v, values) for v in value]
    return value


def _pairs(value: Any) -> Pairs:
    return tuple((str(k), str(v)) for k, v in value or ())


def place(name: str | Placement, secret: Callable[[str], str]) -> Placed:
    """Render a placement, asking ``secret(kind)`` (``LeakCheck.secret``) once per kind."""
    placement = get_placement(name)
    values = {kind: secret(kind) for kind in placement.kinds}
    malformed = placement.malformed
    # the gateway's credential is damaged everywhere it is used; the secret is the value
    damaged = {kind: value + malformed.get(kind, "") for kind, value in values.items()}
    base = render_template(_corpus()["base"], damaged)
    spec = render_template(
        {k: v for k, v in placement.spec.items() if k not in ("malformed", "stages")}, damaged
    )
    ssh = spec.get("ssh", {})
    userinfo = spec.get("userinfo")
    raw_base, raw = _corpus()["base"], placement.spec
    raw_userinfo = raw.get("userinfo")
    auth = AuthTemplate(
        headers=_pairs(raw_base.get("request_headers")) + _pairs(raw.get("request_headers")),
        query=_pairs(raw.get("query")),
        userinfo=(raw_userinfo[0], raw_userinfo[1]) if raw_userinfo else None,
    )
    return Placed(
        placement=placement,
        secrets=values,
        request_headers=_pairs(base.get("request_headers")) + _pairs(spec.get("request_headers")),
        query=_pairs(spec.get("query")),
        userinfo=(userinfo[0], userinfo[1]) if userinfo else None,
        agent_input=spec.get("agent_input", {}),
        reply_headers=_pairs(spec.get("reply_headers")),
        reply_body=spec.get("reply_body", ""),
        reflect_request=bool(spec.get("reflect_request", False)),
        cause=spec.get("cause"),
        ssh=SSHPlacement(
            command_args=tuple(ssh.get("command_args", ())),
            env=dict(ssh.get("env", {})),
            password=ssh.get("password"),
            identity_file=ssh.get("identity_file"),
            known_hosts=ssh.get("known_hosts"),
            username=ssh.get("username"),
            host_alias=ssh.get("host_alias"),
        ),
        auth=auth,
        malformed=malformed,
    )
