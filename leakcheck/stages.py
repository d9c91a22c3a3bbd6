"""Stages: one name per way a tool call can fail, from the gateway's own checks to the
upstream's last byte. A fault (``leakcheck.faults``) forces one stage over one transport.

Each stage says which boundaries a call crossed before it failed: whether request bytes
left the machine (``bytes_sent``) and whether an upstream response arrived
(``response_received``). The contract checks hold the gateway's protected record to these.
``None`` means the stage does not decide it (a gateway-side stage stops before any
connection; a 5xx arrives after the bytes left, whatever the gateway did before).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .errors import LeakcheckUsageError, did_you_mean, quoted

__all__ = [
    "GATEWAY",
    "HTTP",
    "HTTP_ANSWERED",
    "HTTP_RAISED",
    "SSH",
    "STAGES",
    "TLS_STAGES",
    "Stage",
    "Transport",
    "UnknownStageError",
    "get_stage",
    "stages_for",
]

Transport = Literal["gateway", "http", "ssh"]
GATEWAY: Transport = "gateway"
HTTP: Transport = "http"
SSH: Transport = "ssh"


class UnknownStageError(LeakcheckUsageError, ValueError):
    """A stage name that is not in the vocabulary (the message lists the known ones)."""


@dataclass(frozen=True)
class Stage:
    name: str
    transport: Transport
    title: str
    #: did request bytes leave before the failure? (timeout *after* send: True; over SSH,
    #: was the command sent?)
    bytes_sent: bool | None
    #: did an upstream (HTTP or SSH) response arrive?
    response_received: bool | None
    #: an upstream HTTP status the gateway saw, for stages that have one
    http_status: int | None = None

    @property
    def gateway_side(self) -> bool:
        """A condition the gateway is put in (vault locked, approval declined...): the
        user maps it onto their gateway; no transport fault fires."""
        return self.transport == GATEWAY


def _s(
    name: str,
    transport: Transport,
    title: str,
    bytes_sent: bool | None,
    response: bool | None,
    status: int | None = None,
) -> Stage:
    return Stage(name, transport, title, bytes_sent, response, status)


_STAGE_LIST = [
    # gateway-side: before any credential leaves the vault
    _s("invalid_input", GATEWAY, "agent input fails validation", False, False),
    _s("vault_locked", GATEWAY, "credential vault is locked", False, False),
    _s("approval_declined", GATEWAY, "a person declined the approval", False, False),
    _s("gateway_exception", GATEWAY, "the gateway's own code raises", None, None),
    # HTTP: the upstream answered
    _s("http_401", HTTP, "upstream answers 401 Unauthorized", True, True, 401),
    _s("http_403", HTTP, "upstream answers 403 Forbidden", True, True, 403),
    _s("http_429", HTTP, "upstream answers 429 with Retry-After", True, True, 429),
    _s("http_5xx", HTTP, "upstream answers 503 Service Unavailable", True, True, 503),
    _s("malformed_json", HTTP, "upstream answers 200 with a broken JSON body", True, True, 200),
    _s("html_login_page", HTTP, "upstream answers an HTML login page, not JSON", True, True, 200),
    _s("redirect_signed_url", HTTP, "upstream redirects to a signed URL", True, True, 302),
    # HTTP: the connection failed
    _s("dns_failure", HTTP, "the upstream name does not resolve", False, False),
    _s("connection_refused", HTTP, "the upstream refuses the connection", False, False),
    _s("tls_hostname_mismatch", HTTP, "TLS certificate is for another hostname", False, False),
    _s("tls_untrusted_ca", HTTP, "TLS certificate from an untrusted CA", False, False),
    _s("timeout_before_send", HTTP, "connect timeout: no request byte left", False, False),
    _s("timeout_after_send", HTTP, "read timeout after the request was sent", True, False),
    _s("reset_after_send", HTTP, "connection reset after the request was sent", True, False),
    _s("truncated_body", HTTP, "the response body ends early", True, True, 200),
    # SSH
    _s("ssh_auth_rejected", SSH, "SSH server rejects the credentials", False, False),
    _s("ssh_host_key_mismatch", SSH, "SSH host key differs from known_hosts", False, False),
    _s("ssh_unknown_host_key", SSH, "SSH host key is not in known_hosts", False, False),
    _s("ssh_command_failed", SSH, "remote command exits non-zero with stderr", True, True),
    _s("ssh_hang_after_command", SSH, "remote command hangs after it was sent", True, False),
    _s("ssh_connection_refused", SSH, "SSH port refuses the connection", False, False),
]

#: every stage by name, in the order of a call's life
STAGES: dict[str, Stage] = {stage.name: stage for stage in _STAGE_LIST}

#: HTTP stages where the client raises before any response (a cause can ride on them)
HTTP_RAISED = frozenset(
    s.name for s in _STAGE_LIST if s.transport == HTTP and s.response_received is False
)
#: the stages a TLS handshake decides
TLS_STAGES = frozenset({"tls_hostname_mismatch", "tls_untrusted_ca"})
#: HTTP stages answered with a whole reply (``truncated_body`` gets a cut one)
HTTP_ANSWERED = frozenset(
    s.name
    for s in _STAGE_LIST
    if s.transport == HTTP and s.response_received and s.name != "truncated_body"
)


def get_stage(name: str | Stage) -> Stage:
    if isinstance(name, Stage):
        return name
    __tracebackhide__ = True  # (a misspelt stage is the caller's: their line, not ours)
    try:
        return STAGES[name]
    except KeyError:
        known = ", ".join(STAGES)
        guess = did_you_mean(name, STAGES)
        raise UnknownStageError(
            f"unknown stage {quoted(name)}{guess}; known stages: {known}"
        ) from None


def stages_for(transport: Transport) -> list[Stage]:
    """The gateway-side stages plus the stages of ``transport``."""
    return [s for s in _STAGE_LIST if s.transport in (GATEWAY, transport)]
