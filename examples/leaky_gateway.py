"""A realistic leaky action gateway: the same pipeline as the careful one, written the way
gateways usually are, "helpfully".

Every mistake the seed article lists is here once, marked ``# MISTAKE (seed: ...)``, each
in its own small function so that a failing leakcheck case points at exactly one of them:

1. ``raw_exception``     raw exception strings, with the request URL (query ``api_key``,
                         userinfo password) in the agent's message
2. ``echo_input``        the agent's input echoed back in INVALID_INPUT
3. ``upstream_text``     the upstream's error body passed through on 4xx/5xx
4. ``token_tail``        "credential ending in 7KQ2" on a 401
5. ``retry_code``        timeouts and resets after send flattened into a retryable
                         UPSTREAM_UNAVAILABLE, even for a deployment (duplicate deploys)
6. ``denial``            a person's "no" reported as AUTH_FAILED
7. ``new_request_id``    sequential request ids (``req-0000000000000001``, ...)
8. ``ssh_failure``       the SSH failure message carries stderr and the command line with
                         its environment
9. ``before_send``       request headers logged at DEBUG (logger ``examples.leaky``)
10. ``http_request``     the credential rides on the ``httpx.Request``: httpx's own INFO
                         line (``HTTP Request: GET https://...?api_key=...``) and every
                         exception's ``.request`` carry it
11. ``redact_library_logs``  asyncssh's own records keep the command line (INFO) and the
                         environment values (DEBUG)
12. ``strip_credentials``  a token read with its trailing newline is sent as it is: the
                         HTTP client refuses the header, and its error (``Illegal header
                         value b'Bearer ...\\n'``) reaches the agent through ``raw_exception``
13. (no function: the mistake is what is missing) httpcore's own DEBUG header traces are
                         not dropped, as the careful gateway drops them: the upstream's
                         ``Set-Cookie`` and signed ``Location``, and h11's refusal quoting
                         the token with its newline, are logged by ``httpcore.http11``

Apart from those it behaves like the careful gateway, and its envelopes keep the v1 shape
(one line, at most 200 characters, a request id of 16+ characters), so each mistake shows
alone.
"""

from __future__ import annotations

import itertools
import logging
from typing import Any

import httpx

from .gateway_kit import (
    MESSAGES,
    Call,
    GatewayBase,
    HttpAuth,
    Problem,
    RecordStore,
    SSHSettings,
    error_envelope,
    one_line,
    url_with_userinfo,
)

__all__ = ["Gateway", "HttpAuth", "LeakyGateway", "RecordStore", "SSHSettings"]

#: the counter behind ``Gateway.new_request_id`` (one per process)
_request_numbers = itertools.count(1)


class Gateway(GatewayBase):
    log = logging.getLogger("examples.leaky")
    # MISTAKE (seed: "Sanitize before serialization, not after logs spread"): asyncssh's
    # own records (the command line at INFO, each environment variable at DEBUG) go out
    # as the library wrote them
    redact_library_logs = False
    strip_credentials = False

    def new_request_id(self) -> str:
        # MISTAKE (seed: "Do not encode ... an incrementing database ID"): sequential, so
        # an id tells how many calls the gateway made, is guessable, and repeats across
        # processes
        return f"req-{next(_request_numbers):016d}"

    def http_request(self, call: Call) -> tuple[httpx.Client, httpx.Request]:
        assert call.credentials is not None and call.target is not None and call.operation
        credentials, op = call.credentials, call.operation
        client = httpx.Client(timeout=self.timeout, verify=self.verify, trust_env=False)
        url = call.target
        if credentials.userinfo is not None:
            url = url_with_userinfo(url, credentials.userinfo)
        body = {k: call.clean[k] for k in op.body_fields if k in call.clean}
        # MISTAKE (seed: "A typical HTTP library exception may include the complete
        # requested URL"): the credential is part of the request object that httpx logs
        # at INFO and attaches to every exception
        request = client.build_request(
            op.method,
            url,
            params=list(credentials.query) or None,
            headers=list(credentials.headers),
            json=body if op.method != "GET" else None,
        )
        return client, request

    def before_send(self, call: Call) -> None:
        if call.request is not None:
            # MISTAKE (seed: "Someone adds request_headers because an agent kept getting
            # 401 responses"): headers, Authorization and Cookie included, in the log
            self.log.debug(
                "sending %s %s headers=%s",
                call.request.method,
                call.request.url,
                dict(call.request.headers),
            )

    def envelope(self, call: Call, problem: Problem) -> dict[str, Any]:
        code, message = problem.code, MESSAGES[problem.code]
        if problem.stage == "input":
            message = echo_input(call)
        elif problem.stage == "approval":
            code, message = denial()
        elif problem.stage == "http_status" and problem.response is not None:
            if problem.http_status == 401:
                message = token_tail(call)
            elif problem.response.is_error:
                message = upstream_text(problem.response)
        elif problem.stage in ("http_transport", "http_body", "internal"):
            message = raw_exception(call, problem.exc)
            code = retry_code(problem)
        elif problem.stage == "ssh":
            message = ssh_failure(self.ssh, call, problem)
            code = retry_code(problem)
        return error_envelope(
            code,
            message,
            call.request_id,
            operation=call.operation_name,
            http_status=problem.http_status,
            retry_after_seconds=problem.retry_after_seconds,
            invalid_fields=problem.invalid_fields,
        )


def raw_exception(call: Call, exc: BaseException | None) -> str:
    # MISTAKE (seed: "a wrapper catches an exception, returns the library message"):
    # request.url is the full URL, userinfo and api_key included
    if call.request is not None:
        return one_line(f"{call.request.method} {call.request.url} failed: {exc}")
    return one_line(f"internal error: {exc}")


def echo_input(call: Call) -> str:
    # MISTAKE (seed: "the caller receives only fields that remain safe if copied into a
    # public issue"): the whole input echoed, secrets the agent pasted into it included
    return one_line(f"invalid input for {call.operation_name}: {call.agent_data!r}")


def upstream_text(response: httpx.Response) -> str:
    # MISTAKE (seed: "Treat remote messages as untrusted input"): the upstream's body,
    # reflected headers and "run this command" prose included, handed to the agent
    return one_line(response.text[:300])


def token_tail(call: Call) -> str:
    # MISTAKE (seed: 'Do not return "credential ending in 7KQ2 was rejected."')
    assert call.credentials is not None
    token = next(iter(call.credentials.values.values()), "")
    return f"The credential ending in {token[-4:]} was rejected."


def retry_code(problem: Problem) -> str:
    # MISTAKE (seed: "If you flatten both cases into NETWORK_ERROR, an agent will retry a
    # possibly completed action"): after-send timeouts and resets say "retry"
    transport, ssh = problem.transport, problem.ssh
    if transport is not None and transport.sent and not transport.in_body:
        return "UPSTREAM_UNAVAILABLE"
    if ssh is not None and ssh.failure in ("timeout", "lost"):
        return "UPSTREAM_UNAVAILABLE"
    return problem.code


def denial() -> tuple[str, str]:
    # MISTAKE (seed: "Do not change AUTH_FAILED to mean both bad credentials and a local
    # approval refusal"): the agent now tries other credentials instead of stopping
    return "AUTH_FAILED", "Not authorized to run this operation."


def ssh_failure(ssh: SSHSettings | None, call: Call, problem: Problem) -> str:
    # MISTAKE (seed: "Do not return a command line containing a private target"): target,
    # environment, command line and the remote's stderr, verbatim
    outcome = problem.ssh
    env = " ".join(f"{k}={v}" for k, v in (ssh.env.items() if ssh else ()))
    target = f"{ssh.username}@{ssh.host}:{ssh.port}" if ssh else "?"
    why = (outcome.stderr if outcome is not None and outcome.stderr else "") or str(problem.exc)
    return one_line(f"`{env} {call.command}` on {target} failed: {why}")


LeakyGateway = Gateway
