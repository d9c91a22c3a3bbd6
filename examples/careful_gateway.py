"""A careful action gateway: the agent gets decisions, the operator gets evidence.

The pipeline (validation, vault, approval, HTTP with httpx, SSH with asyncssh, the
protected record) is ``gateway_kit.GatewayBase``; this module is the policy, and its rule
is an allowlist: every field of the agent's envelope is built from the contract's code
alone (``MESSAGES[code]``, the action the code implies, the HTTP status number, a bounded
``Retry-After`` number, field *names*). No exception text, upstream body, header, URL,
input value, command line or credential fragment is ever read into it, so none can leak,
whatever the libraries put in their messages next release.

Three more choices keep the operator side clean as well:

* the credential is added below the HTTP client (``CredentialTransport``): the request
  httpx logs at INFO and attaches to its exceptions carries no credential;
* operator logs (logger ``examples.careful``) and the protected record name the upstream
  host, the status and exception *classes*, never an exception message (a gateway bug's
  message may hold a header: see ``leakcheck.doubles.Boom``);
* request ids are 128 random bits, independent of time, host, user and credential;
* httpcore's DEBUG trace records of request and response headers (``Set-Cookie``, a
  signed ``Location``, an ``Authorization`` header) are dropped at their loggers, so
  turning on DEBUG in production one day cannot write credentials to the logs.

Usage::

    records = RecordStore()
    gateway = Gateway(vault=vault, approver=approver, records=records,
                      upstream_url="https://api.example", auth=HttpAuth(
                          headers=(("Authorization", "Bearer {bearer}"),)))
    envelope = gateway.call("create_deployment", {"repo": "web"})
    records.get(envelope["request_id"])      # the operator's view
"""

from __future__ import annotations

import logging
import secrets
from typing import Any

import httpx

from .gateway_kit import (
    MESSAGES,
    Call,
    CredentialTransport,
    GatewayBase,
    HttpAuth,
    Problem,
    RecordStore,
    SSHSettings,
    error_envelope,
)

__all__ = ["CarefulGateway", "Gateway", "HttpAuth", "RecordStore", "SSHSettings"]


def _no_header_traces(record: logging.LogRecord) -> bool:
    # httpcore logs "send_request_headers.started request=..." and
    # "receive_response_headers.complete return_value=(..., [(b'Set-Cookie', ...)])"
    return "_headers." not in str(record.msg)


def quiet_header_traces() -> None:
    """Drop httpcore's header traces at their own loggers (filters are not inherited by
    child loggers, hence one per module that logs them). Idempotent."""
    for name in ("httpcore.http11", "httpcore.http2", "httpcore.connection"):
        logger = logging.getLogger(name)
        if _no_header_traces not in logger.filters:
            logger.addFilter(_no_header_traces)


class Gateway(GatewayBase):
    log = logging.getLogger("examples.careful")

    def __init__(self, **settings: Any) -> None:
        quiet_header_traces()
        super().__init__(**settings)

    def new_request_id(self) -> str:
        # opaque: random, so it says nothing about time, order, host or credential
        return "req_" + secrets.token_urlsafe(16)

    def http_request(self, call: Call) -> tuple[httpx.Client, httpx.Request]:
        assert call.credentials is not None and call.target is not None and call.operation
        transport = CredentialTransport(
            httpx.HTTPTransport(verify=self.verify, trust_env=False, retries=0),
            call.credentials,
        )
        # trust_env=False: no proxy, netrc or CA bundle from the environment; redirects are
        # not followed (a Location may be a signed URL for a host we never meant to call)
        client = httpx.Client(
            transport=transport, timeout=self.timeout, trust_env=False, follow_redirects=False
        )
        op = call.operation
        body = {k: call.clean[k] for k in op.body_fields if k in call.clean}
        request = client.build_request(
            op.method, call.target, json=body if op.method != "GET" else None
        )
        return client, request

    def envelope(self, call: Call, problem: Problem) -> dict[str, Any]:
        # The allowlist: code-derived words and numbers only. ``problem.exc``,
        # ``problem.response`` and ``problem.ssh`` are evidence for the operator path.
        return error_envelope(
            problem.code,
            MESSAGES[problem.code],
            call.request_id,
            operation=call.operation_name,
            http_status=problem.http_status,
            retry_after_seconds=problem.retry_after_seconds,
            invalid_fields=problem.invalid_fields,
        )


CarefulGateway = Gateway
