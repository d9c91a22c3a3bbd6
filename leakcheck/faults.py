"""Faults: force one stage over one transport, and prove that it fired.

A fault is armed before the code under test runs and disarmed after it. It records
evidence when the failure actually happens (the mocked route was called, the loopback
server read the request bytes, the TLS handshake was attempted, the SSH server saw the
auth attempt). A fault with no evidence at the end is a harness error
(``StageNotReached``): the test proved nothing, so it must never pass.

Transports are plugins: a module in the ``leakcheck.faults`` entry-point group exposes
``FAULTS = {"respx": factory, ...}``; a factory is called as
``factory(stage, placed=..., secret=..., **options)`` and returns a ``Fault``.
Gateway-side stages (invalid input, vault locked, approval declined, gateway exception)
need no transport: ``GatewayFault`` hands out test doubles (``leakcheck.doubles``) that
the user wires into their gateway, and the double records that it was consulted.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, Protocol, runtime_checkable

from .doubles import Approver, Boom, ObservedInput, Vault
from .errors import LeakcheckUsageError, did_you_mean, quoted
from .extensions import load_plugins
from .placements import Placed
from .stages import Stage, get_stage

__all__ = [
    "FAULTS_GROUP",
    "Fault",
    "GatewayFault",
    "HarnessError",
    "Reply",
    "StageNotReached",
    "UnknownTransportError",
    "fault_factories",
    "fault_factory",
    "make_fault",
    "reply_for",
    "ChildProcessUpstream",
    "HttpUpstream",
    "Listening",
    "SshUpstream",
    "TlsUpstream",
]

FAULTS_GROUP = "leakcheck.faults"

SecretFactory = Callable[[str], str]


class HarnessError(Exception):
    """The harness could not do what the test asked: never a verdict on the gateway."""


class StageNotReached(HarnessError):
    """A forced stage never fired: the test would have passed without testing anything."""


class UnknownTransportError(LeakcheckUsageError, ValueError):
    """No fault plugin for this transport (or it cannot force this stage)."""


@dataclass(frozen=True)
class Reply:
    """What a faked upstream answers with. ``declared_length`` above ``len(body)`` makes a
    truncated body; ``reflect_request`` appends the request line and headers it saw."""

    status: int
    headers: tuple[tuple[str, str], ...] = field(repr=False)
    body: bytes = field(repr=False)
    reflect_request: bool = False
    declared_length: int | None = None

    def header(self, name: str) -> str | None:
        lowered = name.lower()
        return next((v for k, v in self.headers if k.lower() == lowered), None)

    def reflected(self, method: str, url: str, headers: list[tuple[str, str]]) -> bytes:
        """The body, with the request appended when this reply reflects it (as careless
        upstreams do in their error pages)."""
        if not self.reflect_request:
            return self.body
        echo = {"request": {"method": method, "url": url, "headers": dict(headers)}}
        return self.body + b"\n" + json.dumps(echo).encode()


@cache
def _replies() -> dict[str, Any]:
    path = resources.files("leakcheck.corpora").joinpath("upstream_replies.json")
    replies: dict[str, Any] = json.loads(path.read_text("utf-8"))["replies"]
    return replies


def reply_for(
    stage: str | Stage, secret: SecretFactory, placed: Placed | None = None
) -> Reply | None:
    """The upstream answer for ``stage`` (None for stages with no answer, such as a DNS
    failure), with the placement's response headers and body added."""
    spec = _replies().get(get_stage(stage).name)
    if spec is None:
        return None
    kinds = {"hostname", "signature"}
    values = {k: secret(k) for k in kinds if "{" + k + "}" in json.dumps(spec)}
    headers = tuple((k, v.format_map(values)) for k, v in spec["headers"])
    body = spec["body"].format_map(values) if values else spec["body"]
    reflect = False
    if placed is not None:
        headers += placed.reply_headers
        if placed.reply_body:
            body += "\n" + placed.reply_body
        reflect = placed.reflect_request
    return Reply(
        status=spec["status"],
        headers=headers,
        body=body.encode("utf-8"),
        reflect_request=reflect,
        declared_length=spec.get("declared_length"),
    )


class Fault:
    """One forced stage. Subclasses arm in ``start``, disarm in ``stop`` and call
    ``record(evidence)`` when the failure really happens."""

    transport = "?"

    def __init__(self, stage: str | Stage, *, placed: Placed | None = None) -> None:
        self.stage = get_stage(stage)
        self.placed = placed
        self.evidence: list[str] = []

    def start(self) -> None:
        """Arm the fault."""

    def stop(self) -> None:
        """Disarm it and restore every global it touched."""

    def record(self, evidence: str) -> None:
        """Note that the fault fired. ``evidence`` is shown in reports: no secrets."""
        self.evidence.append(evidence)

    @property
    def fired(self) -> bool:
        return bool(self.evidence)

    def not_reached_reason(self) -> str:
        """Why the fault did not fire, in words a user can act on."""
        return "nothing triggered it"

    def describe(self) -> str:
        return f"stage {self.stage.name} via {self.transport}"

    def assert_fired(self) -> None:
        if not self.fired:
            raise StageNotReached(
                f"harness error: {self.describe()} was never reached: "
                f"{self.not_reached_reason()}. The test proved nothing about this stage."
            )

    def __enter__(self) -> Fault:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


# --- what an armed fault offers the code under test ----------------------------------------
#
# The stage matrix asks a fault for what its transport provides, through these protocols,
# never by attribute names: a third-party transport offers the same by having them.


@runtime_checkable
class HttpUpstream(Protocol):
    """A fault that stands for an HTTP upstream: point the client at ``url``."""

    url: str


@runtime_checkable
class TlsUpstream(HttpUpstream, Protocol):
    """An HTTP upstream that may speak TLS: a client that trusts ``ssl_context()`` reaches
    it when ``scheme`` is ``https``."""

    scheme: str

    def ssl_context(self) -> ssl.SSLContext: ...


@runtime_checkable
class Listening(Protocol):
    """A fault that listens on a loopback ``port`` (which a caller must never be shown)."""

    port: int


@runtime_checkable
class ChildProcessUpstream(Protocol):
    """A fault that can be forced and proven in a Python child process (an MCP server over
    stdio, a gateway run as a command): merge ``child_environment()`` into the child's
    environment (while the fault is armed) and the fault's proof covers what the child did."""

    def child_environment(self) -> dict[str, str]: ...


@runtime_checkable
class SshUpstream(Listening, Protocol):
    """A fault that stands for an SSH host: where it listens, who logs in with which
    password, and the known_hosts file that holds its key."""

    host: str
    username: str
    password: str
    known_hosts: str


class GatewayFault(Fault):
    """A gateway-side stage: the gateway is put in a condition through test doubles.

    ``vault_locked``: ``fault.vault`` is a locked ``Vault``; ``approval_declined``:
    ``fault.approver`` declines; ``invalid_input``: ``fault.agent_input`` is an input
    with ``invalid_fields`` wrong, that records the gateway read it; ``gateway_exception``:
    ``fault.boom`` raises an internal error whose message carries secrets. The other
    doubles are healthy (an unlocked vault, an approving approver), so one gateway
    fixture serves every stage.
    """

    transport = "gateway"

    def __init__(
        self,
        stage: str | Stage,
        *,
        placed: Placed | None = None,
        secret: SecretFactory,
        credentials: Mapping[str, str] | None = None,
        agent_input: Mapping[str, Any] | None = None,
        invalid_fields: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(stage, placed=placed)
        if not self.stage.gateway_side:
            raise UnknownTransportError(
                f"stage {self.stage.name} is forced by a transport (http or ssh), "
                "not by the gateway; pass via=..."
            )
        name = self.stage.name
        creds = dict(credentials or {})
        if not creds:
            creds = dict(placed.secrets) if placed is not None else {"bearer": secret("bearer")}
        self.vault = Vault(creds, locked=name == "vault_locked", on_locked=self.record)
        self.approver = Approver(decline=name == "approval_declined", on_decline=self.record)
        base_input = dict(agent_input or {"repo": "web"})
        if placed is not None:
            base_input.update(placed.agent_input)
        if name == "invalid_input":
            base_input.update(invalid_fields or {"replicas": "many", "repo": 42})
        self.invalid_fields = (
            tuple(sorted(invalid_fields or {"replicas": "many", "repo": 42}))
            if name == "invalid_input"
            else ()
        )
        self.agent_input = ObservedInput(
            base_input, on_read=self.record if name == "invalid_input" else None
        )
        self.boom = Boom(
            secret,
            on_raise=self.record if name == "gateway_exception" else None,
            cause=placed.cause_exception() if placed is not None else None,
        )

    def not_reached_reason(self) -> str:
        return {
            "vault_locked": "the gateway never asked fault.vault for a credential",
            "approval_declined": "the gateway never asked fault.approver for approval",
            "invalid_input": "the gateway never read fault.agent_input",
            "gateway_exception": "fault.boom was never called inside the gateway",
        }.get(self.stage.name, "the gateway never consulted its test double")


@cache
def fault_factories() -> dict[str, Callable[..., Fault]]:
    """``{transport name: factory}`` from every fault plugin whose library imports."""
    factories: dict[str, Callable[..., Fault]] = {}
    for module in load_plugins(FAULTS_GROUP):
        factories.update(getattr(module, "FAULTS", {}))
    return factories


def fault_factory(via: str) -> Callable[..., Fault] | None:
    """The factory of transport ``via``, or None: from the plugin named for it first (each
    bundled transport's entry point is), else from every plugin. Loading them all for one
    imported asyncssh for every HTTP fault: 0.15 s, and on a recent ``cryptography`` five
    lines of its deprecation warnings in a ``leakcheck mcp`` run or a test session."""
    return _named_factories(via).get(via) or fault_factories().get(via)


@cache
def _named_factories(via: str) -> dict[str, Callable[..., Fault]]:
    factories: dict[str, Callable[..., Fault]] = {}
    for module in load_plugins(FAULTS_GROUP, named=via):
        factories.update(getattr(module, "FAULTS", {}))
    return factories


def make_fault(
    stage: str | Stage,
    *,
    via: str | None = None,
    placed: Placed | None = None,
    secret: SecretFactory,
    **options: Any,
) -> Fault:
    """A fault for ``stage`` over transport ``via`` (None for gateway-side stages)."""
    resolved = get_stage(stage)
    if via is None or via == "gateway":
        if not resolved.gateway_side:
            raise UnknownTransportError(
                f"stage {resolved.name} needs a transport: via="
                + " or ".join(repr(n) for n in sorted(fault_factories()))
            )
        return GatewayFault(resolved, placed=placed, secret=secret, **options)
    factory = fault_factory(via)
    if factory is None:
        from .extensions import install_hint, skipped_plugins

        skipped = skipped_plugins()
        hint = f" (plugin skipped: {skipped[via]})" if via in skipped else ""
        if install_hint(via):
            hint += f"; {install_hint(via)} to use it"
        known = ", ".join(sorted(fault_factories())) or "none installed"
        guess = did_you_mean(via, fault_factories())
        raise UnknownTransportError(
            f"no fault transport {quoted(via)}{guess}{hint}; known: {known}"
        )
    return factory(resolved, placed=placed, secret=secret, **options)
