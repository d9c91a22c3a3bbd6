"""What both example gateways share: settings, input contracts, credential selection, the
HTTP and SSH calls, the protected record, and the agent error contract's vocabulary.

A gateway call is one pipeline (``GatewayBase.call``)::

    validate the input -> select the credential (vault) -> ask the approver
    -> call upstream (HTTP or SSH) -> map the outcome -> protected record + agent envelope

Each step that can fail produces a ``Problem``: the code the contract asks for, decided
here once from facts (were request bytes sent? did a response arrive? is the operation
repeatable?), the evidence (exception, response, SSH stderr) and an operator-only
``detail``. What reaches the agent is each gateway's own decision,
``envelope(call, problem)``: the careful gateway builds it from the code alone, an
allowlist; the leaky gateway copies evidence into it, the way real wrappers do.

Two records, two audiences (the seed's "two-record diagnostic path"): the envelope is safe
to paste into a public issue; the protected record (``RecordStore``) holds the request id,
the credential's record id (never its value), the boundaries the call reached and an
operator detail such as the upstream host and status. Neither ever holds a credential.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import email.utils
import errno
import functools
import json
import logging
import math
import os
import re
import shlex
import socket
import ssl
import string
import threading
import time
import traceback
from abc import ABC, abstractmethod
from collections.abc import Callable, Coroutine, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timezone
from typing import Any, ClassVar, Literal, Protocol, TypeVar
from urllib.parse import quote

import asyncssh
import httpx
from asyncssh.logging import SSHLogger

__all__ = [
    "BOUNDARIES",
    "CONTRACT",
    "MESSAGES",
    "MESSAGE_LIMIT",
    "OPERATIONS",
    "Call",
    "CredentialTransport",
    "CredentialUnavailable",
    "Credentials",
    "Exchange",
    "GatewayBase",
    "HttpAuth",
    "Operation",
    "Problem",
    "RecordStore",
    "RedactingSSHLogger",
    "SSHSettings",
    "SshOutcome",
    "TransportFailure",
    "error_envelope",
    "is_tls_failure",
    "one_line",
    "retry_after_seconds",
    "run_ssh",
    "run_sync",
    "select_credentials",
    "send",
    "success_envelope",
    "url_with_userinfo",
    "validate",
]

T = TypeVar("T")

# --- settings ---------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class HttpAuth:
    """Where the credential goes, as templates naming vault kinds: ``("Authorization",
    "Bearer {bearer}")``, ``("api_key", "{api_key}")``, userinfo ``("{user_name}",
    "{password}")``. The gateway fills them from the vault on every call."""

    headers: tuple[tuple[str, str], ...] = ()
    query: tuple[tuple[str, str], ...] = ()
    userinfo: tuple[str, str] | None = None

    def __repr__(self) -> str:
        return f"HttpAuth(kinds={list(auth_kinds(self))})"


@dataclass(frozen=True, repr=False)
class SSHSettings:
    """The SSH host the ``run_command`` operation runs ``deploy`` on. ``command_args`` and
    ``env`` are configuration that may carry secrets; the password comes from the vault
    (``password_kind``). ``timeout`` (None: the gateway's) bounds the connect and the run."""

    host: str
    port: int
    username: str
    known_hosts: str
    timeout: float | None = None
    command_args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    password_kind: str = "ssh_password"

    def __repr__(self) -> str:
        return f"SSHSettings(args={len(self.command_args)}, env={len(self.env)})"


class VaultLike(Protocol):
    def get(self, kind: str) -> str: ...


class ApproverLike(Protocol):
    def approve(self, operation: str, summary: str) -> bool: ...


# --- the protected record -------------------------------------------------------------------

#: the boundaries a call crosses, in order (the seed's trace for high-value actions)
BOUNDARIES: tuple[str, ...] = (
    "validated",
    "credential_selected",
    "authorized",
    "connection_started",
    "bytes_sent",
    "response_received",
    "result_returned",
)


class RecordStore:
    """Protected diagnostics: one record per call, by request id. No agent tool reads it;
    an operator does, with the request id the agent was given. ``get`` returns a copy, so
    a reader cannot rewrite what happened."""

    def __init__(self) -> None:
        self._records: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def put(self, record: Mapping[str, Any]) -> None:
        with self._lock:
            self._records[str(record["request_id"])] = copy.deepcopy(dict(record))

    def get(self, request_id: str) -> dict[str, Any] | None:
        with self._lock:
            record = self._records.get(request_id)
            return copy.deepcopy(record) if record is not None else None

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)

    def __repr__(self) -> str:
        return f"RecordStore({len(self)} records)"


# --- the agent error contract (envelope v1) ---------------------------------------------------

RETRY, STOP, REPAIR, INSPECT = (
    "retry_after_delay",
    "stop_and_report",
    "repair_input",
    "inspect_outcome",
)

#: code -> the one action it tells the agent to take; retryable iff the action is a retry
CONTRACT: dict[str, str] = {
    "INVALID_INPUT": REPAIR,
    "VAULT_LOCKED": STOP,
    "USER_DENIED": STOP,
    "AUTH_FAILED": STOP,
    "PERMISSION_DENIED": STOP,
    "RATE_LIMITED": RETRY,
    "UPSTREAM_UNREACHABLE": RETRY,
    "REMOTE_UNVERIFIED": STOP,
    "OUTCOME_UNKNOWN": INSPECT,
    "UPSTREAM_UNAVAILABLE": RETRY,
    "UPSTREAM_INVALID_RESPONSE": STOP,
    "REMOTE_REJECTED": STOP,
    "INTERNAL_ERROR": STOP,
}

#: gateway-owned words, one per code: no upstream text, no input value, no destination
MESSAGES: dict[str, str] = {
    "INVALID_INPUT": "The input does not match the operation; correct the listed fields.",
    "VAULT_LOCKED": (
        "The credential vault is locked; ask a person to unlock the gateway. "
        "Do not supply a credential yourself."
    ),
    "USER_DENIED": "The requested action was not approved and did not run.",
    "AUTH_FAILED": "The remote service rejected the stored credential.",
    "PERMISSION_DENIED": "The remote service refused this action for the stored credential.",
    "RATE_LIMITED": "The remote service is limiting requests; retry once after the delay.",
    "UPSTREAM_UNREACHABLE": "The remote service could not be reached; the request was not sent.",
    "REMOTE_UNVERIFIED": (
        "The remote service's identity could not be verified; the connection was blocked."
    ),
    "OUTCOME_UNKNOWN": (
        "The connection ended after the request started. The remote action may have completed."
    ),
    "UPSTREAM_UNAVAILABLE": "The remote service did not complete the request; retry later.",
    "UPSTREAM_INVALID_RESPONSE": "The remote service returned a response the gateway cannot use.",
    "REMOTE_REJECTED": "The remote side rejected the request.",
    "INTERNAL_ERROR": (
        "The gateway failed while handling the request; an operator can inspect it by its "
        "request id."
    ),
}

#: the envelope schema's bound on ``message`` (one line)
MESSAGE_LIMIT = 200
RETRY_AFTER_BOUNDS = (1, 3600)
#: the gateway's own delay for a 429 that names none: it owns the retry budget
DEFAULT_RETRY_AFTER = 30


def error_envelope(
    code: str,
    message: str,
    request_id: str,
    *,
    operation: str | None = None,
    http_status: int | None = None,
    retry_after_seconds: int | None = None,
    invalid_fields: tuple[str, ...] | list[str] = (),
) -> dict[str, Any]:
    """An envelope v1: ``action``/``retryable`` follow from ``code``; the optional fields
    appear only where the contract allows them."""
    action = CONTRACT[code]
    envelope: dict[str, Any] = {
        "ok": False,
        "code": code,
        "message": message,
        "action": action,
        "retryable": action == RETRY,
        "request_id": request_id,
    }
    if http_status is not None and 100 <= http_status <= 599:
        envelope["http_status"] = int(http_status)
    if retry_after_seconds is not None and action == RETRY:
        low, high = RETRY_AFTER_BOUNDS
        envelope["retry_after_seconds"] = min(max(int(retry_after_seconds), low), high)
    if operation is not None:
        envelope["operation"] = operation
    if invalid_fields and code == "INVALID_INPUT":
        envelope["invalid_fields"] = list(invalid_fields)
    return envelope


def success_envelope(request_id: str, result: Mapping[str, Any]) -> dict[str, Any]:
    return {"ok": True, "request_id": request_id, "result": dict(result)}


def one_line(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """``text`` on one line, at most ``limit`` characters (the envelope's message shape)."""
    flat = " ".join(str(text).split())
    return (flat[: limit - 1] + "…") if len(flat) > limit else (flat or "-")


def retry_after_seconds(value: str | None, *, now: float | None = None) -> int | None:
    """A ``Retry-After`` header (seconds or an HTTP date) as whole seconds within
    ``RETRY_AFTER_BOUNDS``; None when absent or unreadable. Only the number crosses to the
    agent, never the header text."""
    if value is None:
        return None
    value = value.strip()
    if re.fullmatch(r"[0-9]{1,12}", value):
        seconds = int(value)
    else:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        seconds = math.ceil(when.timestamp() - (time.time() if now is None else now))
    low, high = RETRY_AFTER_BOUNDS
    return min(max(seconds, low), high)


# --- operations and input validation ----------------------------------------------------------

_REPO = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")
_REF = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,199}")
_DEPLOYMENT_ID = re.compile(r"dep_[a-z0-9]{1,32}")
#: an unknown key is named back only when it reads as a field name, not as a value
_FIELD_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,31}")
UNNAMED_FIELD = "_unrecognized_field"


def _repo(value: Any) -> bool:
    return isinstance(value, str) and _REPO.fullmatch(value) is not None


def _ref(value: Any) -> bool:
    return isinstance(value, str) and _REF.fullmatch(value) is not None


def _replicas(value: Any) -> bool:
    return type(value) is int and 1 <= value <= 50


def _deployment_id(value: Any) -> bool:
    return isinstance(value, str) and _DEPLOYMENT_ID.fullmatch(value) is not None


def _args(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) <= 64
        and all(isinstance(a, str) and len(a) <= 1024 and "\x00" not in a for a in value)
    )


def _json_object(value: Any) -> bool:
    if not isinstance(value, Mapping):
        return False
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


def _url(value: Any) -> bool:
    return (
        isinstance(value, str) and len(value) <= 2048 and value.startswith(("https://", "http://"))
    )


@dataclass(frozen=True)
class Operation:
    """An operation the agent may call. ``repeatable`` is the integration author's label
    (never guessed from the method): it decides what a failure after send tells the agent."""

    name: str
    transport: Literal["http", "ssh"]
    repeatable: bool
    fields: Mapping[str, Callable[[Any], bool]]
    required: tuple[str, ...] = ()
    method: str = ""
    path: str = ""
    body_fields: tuple[str, ...] = ()

    def summary(self, clean: Mapping[str, Any]) -> str:
        """What the approver is shown: the operation and its validated contract fields
        (never free-form options, URLs or arguments, which may carry anything)."""
        if self.name == "create_deployment":
            text = f"create a deployment of {clean['repo']}"
            if "ref" in clean:
                text += f" at {clean['ref']}"
            return text + (f" with {clean['replicas']} replicas" if "replicas" in clean else "")
        if self.name == "get_deployment":
            return f"read deployment {clean['deployment_id']}"
        count = len(clean.get("args", ()))
        return f"run the deploy command with {count} agent argument(s)"


_COMMON: dict[str, Callable[[Any], bool]] = {"options": _json_object, "source_url": _url}

OPERATIONS: dict[str, Operation] = {
    op.name: op
    for op in (
        Operation(
            "create_deployment",
            "http",
            repeatable=False,
            fields={"repo": _repo, "ref": _ref, "replicas": _replicas, **_COMMON},
            required=("repo",),
            method="POST",
            path="/v1/deployments",
            body_fields=("repo", "ref", "replicas", "options", "source_url"),
        ),
        Operation(
            "get_deployment",
            "http",
            repeatable=True,
            fields={"deployment_id": _deployment_id, **_COMMON},
            required=("deployment_id",),
            method="GET",
            path="/v1/deployments/{deployment_id}",
        ),
        Operation(
            "run_command",
            "ssh",
            repeatable=False,
            fields={"args": _args, "repo": _repo, **_COMMON},
        ),
    )
}


def _field_name(key: Any) -> str:
    return key if isinstance(key, str) and _FIELD_NAME.fullmatch(key) else UNNAMED_FIELD


def validate(operation: Operation, data: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``(clean input, names of the bad fields)``: unknown fields, missing required ones and
    values of the wrong shape are all named, never echoed."""
    bad: set[str] = set()
    for name, check in operation.fields.items():
        if name in data:
            if not check(data[name]):
                bad.add(name)
        elif name in operation.required:
            bad.add(name)
    bad.update(_field_name(key) for key in data if key not in operation.fields)
    if bad:
        return {}, sorted(bad)
    return {name: data[name] for name in operation.fields if name in data}, []


def read_input(agent_input: Any) -> dict[str, Any] | None:
    """The agent's input as a plain dict (None if it is not a mapping)."""
    if not isinstance(agent_input, Mapping):
        return None
    return {key: value for key, value in agent_input.items()}


# --- credentials --------------------------------------------------------------------------------


def template_kinds(template: str) -> list[str]:
    """The vault kinds a template names (``"Bearer {bearer}"`` -> ``["bearer"]``)."""
    return [name for _, name, _, _ in string.Formatter().parse(template) if name]


def render(template: str, values: Mapping[str, str]) -> str:
    """``template`` with each ``{kind}`` replaced; a value is inserted as is, whatever
    braces, spaces or ``%`` it holds (it is never parsed again)."""
    out = []
    for literal, name, _, _ in string.Formatter().parse(template):
        out.append(literal)
        if name:
            out.append(values[name])
    return "".join(out)


def auth_kinds(auth: HttpAuth) -> list[str]:
    templates = [t for pair in (*auth.headers, *auth.query, auth.userinfo or ()) for t in pair]
    kinds: list[str] = []
    for template in templates:
        kinds += [k for k in template_kinds(template) if k not in kinds]
    return kinds


@dataclass(frozen=True, repr=False)
class Credentials:
    """A rendered credential. ``id`` names the vault records it came from (the protected
    record keeps that, never a value); nothing here shows in a repr."""

    id: str
    values: Mapping[str, str]
    headers: tuple[tuple[bytes, bytes], ...] = ()
    query: tuple[tuple[str, str], ...] = ()
    userinfo: tuple[str, str] | None = None

    def __repr__(self) -> str:
        return f"Credentials({self.id})"


class CredentialUnavailable(Exception):
    """The vault did not hand out a credential. ``locked`` says whether it was locked;
    the message carries the failing exception's class only."""

    def __init__(self, exc: BaseException, *, locked: bool) -> None:
        super().__init__(f"vault refused: {type(exc).__name__}")
        self.locked = locked
        self.exc_type = type(exc).__name__


def _looks_locked(exc: BaseException, vault: Any) -> bool:
    # Vaults differ in their exception types; a "...Locked..." class or a vault that says
    # it is locked both mean the same thing to the agent: ask a person to unlock it.
    names = [cls.__name__.lower() for cls in type(exc).__mro__]
    return any("locked" in name for name in names) or getattr(vault, "locked", False) is True


def _read_vault(vault: VaultLike, kinds: list[str], strip: bool = True) -> dict[str, str]:
    values: dict[str, str] = {}
    for kind in kinds:
        try:
            value = vault.get(kind)
        except Exception as exc:  # noqa: BLE001 - any vault failure stops the call here
            raise CredentialUnavailable(exc, locked=_looks_locked(exc, vault)) from None
        if not isinstance(value, str):
            raise CredentialUnavailable(TypeError(), locked=False)
        values[kind] = value.strip() if strip else value
    return values


def select_credentials(
    vault: VaultLike,
    operation: Operation,
    auth: HttpAuth,
    ssh: SSHSettings | None,
    *,
    strip: bool = True,
) -> Credentials:
    """Read from the vault what ``operation`` needs (``CredentialUnavailable`` if it
    refuses) and render it, headers encoded as UTF-8 so that any value can travel."""
    if operation.transport == "ssh":
        kind = ssh.password_kind if ssh is not None else "ssh_password"
        return Credentials(f"vault:{kind}", _read_vault(vault, [kind], strip))
    kinds = auth_kinds(auth)
    values = _read_vault(vault, kinds, strip)
    headers = tuple(
        (name.encode("ascii"), render(value, values).encode("utf-8"))
        for name, value in auth.headers
    )
    query = tuple((name, render(value, values)) for name, value in auth.query)
    userinfo = None
    if auth.userinfo is not None:
        userinfo = (render(auth.userinfo[0], values), render(auth.userinfo[1], values))
    return Credentials("vault:" + "+".join(sorted(kinds)), values, headers, query, userinfo)


# --- HTTP -------------------------------------------------------------------------------------


def target_url(upstream_url: str, path: str) -> httpx.URL:
    base = httpx.URL(upstream_url)
    return base.copy_with(path=base.path.rstrip("/") + path, query=None)


def url_with_userinfo(url: httpx.URL, userinfo: tuple[str, str]) -> httpx.URL:
    """``url`` with user and password percent-encoded in full: httpx keeps a ``%41`` it is
    given as an escape, so a password holding one would otherwise arrive changed."""
    user, password = (quote_all(part) for part in userinfo)
    return url.copy_with(username=user, password=password)


def quote_all(text: str) -> str:
    return quote(text, safe="")


def basic_authorization(user: str, password: str) -> bytes:
    """The header an HTTP client sends for URL userinfo (RFC 7617, UTF-8)."""
    return b"Basic " + base64.b64encode(f"{user}:{password}".encode())


def with_credentials(request: httpx.Request, credentials: Credentials) -> httpx.Request:
    """A copy of ``request`` carrying ``credentials``: query parameters merged into the
    URL, headers added, URL userinfo sent the way httpx sends it (``Authorization: Basic``,
    replacing any other ``Authorization``)."""
    url = request.url
    if credentials.query:
        url = url.copy_merge_params(list(credentials.query))
    headers = [*request.headers.raw, *credentials.headers]
    if credentials.userinfo is not None:
        headers = [(k, v) for k, v in headers if k.lower() != b"authorization"]
        headers.append((b"Authorization", basic_authorization(*credentials.userinfo)))
    return httpx.Request(
        request.method, url, headers=headers, stream=request.stream, extensions=request.extensions
    )


class CredentialTransport(httpx.BaseTransport):
    """Adds the credential at the last moment, below the client: the ``httpx.Request``
    that the client logs (``HTTP Request: POST https://...`` at INFO), attaches to its
    exceptions (``exc.request``) and to the response (``response.request``) never holds
    one, so no code that formats those can leak it."""

    def __init__(self, inner: httpx.BaseTransport, credentials: Credentials) -> None:
        self._inner = inner
        self._credentials = credentials

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self._inner.handle_request(with_credentials(request, self._credentials))

    def close(self) -> None:
        self._inner.close()

    def __repr__(self) -> str:
        return "CredentialTransport()"


@dataclass(frozen=True)
class TransportFailure:
    """An HTTP call that did not produce a usable response, as facts: were request bytes
    (possibly) sent, did it fail while reading the body of a response that had arrived,
    was it a timeout, was it TLS verification."""

    exc: Exception
    sent: bool
    in_body: bool = False
    timeout: bool = False
    tls: bool = False


@dataclass
class Exchange:
    response: httpx.Response | None = None
    failure: TransportFailure | None = None


def is_tls_failure(exc: BaseException) -> bool:
    """Whether a connect error is TLS refusing the peer (verification, hostname, handshake):
    an ``ssl.SSLError`` in the cause/context chain, or the verifier's own words."""
    # both links of every node: a mocking layer or a wrapper may re-raise with a new
    # __cause__ and leave the TLS error only in __context__
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, ssl.SSLError):
            return True
        try:
            text = str(node)
        except Exception:  # noqa: BLE001 - a broken __str__ says nothing about TLS
            text = ""
        if "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text.lower():
            return True
        todo += [link for link in (node.__cause__, node.__context__) if link is not None]
    return False


@functools.cache
def _system_trust() -> ssl.SSLContext:
    return httpx.create_ssl_context(verify=True, trust_env=False)


def send(client: httpx.Client, request: httpx.Request) -> Exchange:
    """Send ``request`` and read the whole body. Transport errors become facts
    (``TransportFailure``); anything else (a bug, a mock's assertion) propagates."""
    try:
        response = client.send(request, stream=True)
    except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
        # nothing left the machine: the connection (TCP, DNS, TLS) never completed
        return Exchange(
            failure=TransportFailure(
                exc,
                sent=False,
                timeout=isinstance(exc, httpx.TimeoutException),
                tls=isinstance(exc, httpx.ConnectError) and is_tls_failure(exc),
            )
        )
    except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
        # connected, then write/read failed: the upstream may have acted on the request
        return Exchange(
            failure=TransportFailure(
                exc, sent=True, timeout=isinstance(exc, httpx.TimeoutException)
            )
        )
    try:
        response.read()
    except httpx.RequestError as exc:
        return Exchange(
            response,
            TransportFailure(
                exc, sent=True, in_body=True, timeout=isinstance(exc, httpx.TimeoutException)
            ),
        )
    finally:
        response.close()
    return Exchange(response)


def parse_json_object(response: httpx.Response) -> tuple[dict[str, Any] | None, Exception | None]:
    """The body as a JSON object, or the reason it is not one."""
    try:
        data = json.loads(response.content)
    except (ValueError, UnicodeDecodeError) as exc:
        return None, exc
    if not isinstance(data, dict):
        return None, TypeError("the response body is JSON but not an object")
    return data, None


def invalid_body_code(repeatable: bool) -> str:
    # a write whose answer is unreadable may still have happened
    return "UPSTREAM_INVALID_RESPONSE" if repeatable else "OUTCOME_UNKNOWN"


def after_send_code(repeatable: bool) -> str:
    return "UPSTREAM_UNAVAILABLE" if repeatable else "OUTCOME_UNKNOWN"


def code_for_transport(failure: TransportFailure, repeatable: bool) -> str:
    if failure.in_body:
        return invalid_body_code(repeatable)
    if not failure.sent:
        return "REMOTE_UNVERIFIED" if failure.tls else "UPSTREAM_UNREACHABLE"
    return after_send_code(repeatable)


def code_for_status(status: int, repeatable: bool) -> str:
    """The code for a non-2xx answer. A redirect is not followed: its ``Location`` may be
    a signed URL for another host, and the answer is unusable whatever the operation."""
    if 300 <= status < 400:
        return "UPSTREAM_INVALID_RESPONSE"
    if status == 401:
        return "AUTH_FAILED"
    if status == 403:
        return "PERMISSION_DENIED"
    if status == 429:
        return "RATE_LIMITED"
    if status == 408 or status >= 500:
        return after_send_code(repeatable)
    return "REMOTE_REJECTED"


# --- SSH --------------------------------------------------------------------------------------

SshFailureKind = Literal["auth", "host_key", "unreachable", "timeout", "lost"]

_NETWORK_ERRNOS = {
    errno.ECONNREFUSED,
    errno.ECONNRESET,
    errno.EHOSTUNREACH,
    errno.ENETUNREACH,
    errno.ETIMEDOUT,
    errno.EADDRNOTAVAIL,
}


@dataclass
class SshOutcome:
    """What an SSH run reached, as facts. ``command_sent`` is the SSH side of "request bytes
    left"; an ``exit_status`` is the remote's answer."""

    connected: bool = False
    command_sent: bool = False
    exit_status: int | None = None
    stdout: str = ""
    stderr: str = ""
    error: BaseException | None = None
    failure: SshFailureKind | None = None

    def failed(self, kind: SshFailureKind, exc: BaseException) -> SshOutcome:
        self.failure, self.error = kind, exc
        return self


def _network_error(exc: OSError) -> bool:
    return isinstance(exc, (ConnectionError, socket.gaierror)) or exc.errno in _NETWORK_ERRNOS


def isolated_ssh_options(settings: SSHSettings, password: str, timeout: float) -> dict[str, Any]:
    """asyncssh options that read nothing from ``~/.ssh`` or the environment: no config
    file, no agent, no default keys (``None``: an empty list loads them), no CA bundle,
    no GSSAPI; host keys from ``settings.known_hosts`` only."""
    return {
        "username": settings.username,
        "password": password,
        "known_hosts": settings.known_hosts,
        "client_keys": None,
        "agent_path": None,
        "agent_forwarding": False,
        "config": None,
        "x509_trusted_certs": None,
        "x509_trusted_cert_paths": [],
        "gss_kex": False,
        "gss_auth": False,
        "host_based_auth": False,
        "kbdint_auth": False,
        "preferred_auth": "password",
        "connect_timeout": timeout,
        "login_timeout": timeout,
    }


class RedactingSSHLogger(SSHLogger):
    """asyncssh logs the command it runs at INFO and each environment variable at DEBUG,
    values included, so a token in the command line or the environment reaches every log
    handler. This logger keeps each message's words and numbers and replaces every other
    argument (and any attached exception) before a record exists: sanitized before
    serialization, not after the logs spread."""

    def log(self, level: int, msg: object, *args: Any, **kwargs: Any) -> None:
        kept = [a if type(a) in (int, float) else "[redacted]" for a in args]
        kwargs.pop("exc_info", None)
        super().log(level, msg, *kept, **kwargs)


def redact_ssh_logs(conn: Any) -> None:
    """Route what ``conn`` and its channels log from now on through ``RedactingSSHLogger``.
    (asyncssh takes no logger argument; its connection keeps one in ``_logger``, and each
    channel derives its own from it when it opens.)"""
    current = getattr(conn, "_logger", None)
    if isinstance(current, SSHLogger):
        conn._logger = RedactingSSHLogger(current.logger, context=getattr(current, "_context", ""))


async def run_ssh(
    settings: SSHSettings,
    password: str,
    command: str,
    timeout: float,
    *,
    redact_logs: bool = True,
) -> SshOutcome:
    """Run ``command`` on the host; failures become facts (``SshOutcome.failure``), other
    exceptions (a missing known_hosts file: configuration) propagate. ``redact_logs``:
    see ``RedactingSSHLogger``."""
    outcome = SshOutcome()
    try:
        conn = await asyncio.wait_for(
            asyncssh.connect(
                settings.host, settings.port, **isolated_ssh_options(settings, password, timeout)
            ),
            timeout,
        )
    except asyncssh.PermissionDenied as exc:
        return outcome.failed("auth", exc)
    except asyncssh.HostKeyNotVerifiable as exc:
        return outcome.failed("host_key", exc)
    except (asyncio.TimeoutError, TimeoutError) as exc:
        return outcome.failed("unreachable", exc)
    except (asyncssh.DisconnectError, asyncssh.ConnectionLost) as exc:
        return outcome.failed("unreachable", exc)
    except OSError as exc:
        if _network_error(exc):
            return outcome.failed("unreachable", exc)
        raise
    outcome.connected = True
    if redact_logs:
        redact_ssh_logs(conn)
    try:
        outcome.command_sent = True
        result = await asyncio.wait_for(
            conn.run(command, env=dict(settings.env), check=False), timeout
        )
    except (asyncio.TimeoutError, TimeoutError) as exc:
        return outcome.failed("timeout", exc)
    except (asyncssh.Error, OSError) as exc:
        return outcome.failed("lost", exc)
    else:
        outcome.exit_status = result.exit_status
        outcome.stdout, outcome.stderr = _text(result.stdout), _text(result.stderr)
        return outcome
    finally:
        conn.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(conn.wait_closed(), timeout)


def _text(data: Any) -> str:
    if data is None:
        return ""
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)


def code_for_ssh(outcome: SshOutcome, repeatable: bool) -> str:
    if outcome.failure == "auth":
        return "AUTH_FAILED"
    if outcome.failure == "host_key":
        return "REMOTE_UNVERIFIED"
    if outcome.failure == "unreachable":
        return "UPSTREAM_UNREACHABLE"
    if outcome.failure is not None or outcome.exit_status is None or outcome.exit_status < 0:
        return after_send_code(repeatable)  # sent, then no answer: it may have run
    return "REMOTE_REJECTED"


def run_sync(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine from sync code on a private event loop (never the caller's, never
    set as the thread's loop). Inside a running loop (an async agent framework) it runs on
    a worker thread, since blocking that loop would deadlock it."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _run_in_new_loop(make)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="gateway-ssh") as pool:
        return pool.submit(_run_in_new_loop, make).result()


def _run_in_new_loop(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(make())
    finally:
        try:
            pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            loop.close()


# --- the pipeline --------------------------------------------------------------------------

ProblemStage = Literal[
    "input", "vault", "approval", "http_status", "http_body", "http_transport", "ssh", "internal"
]


@dataclass(repr=False)
class Call:
    """One call in flight: what the gateway knows so far."""

    request_id: str
    operation: Operation | None = None
    agent_data: dict[str, Any] = field(default_factory=dict)
    clean: dict[str, Any] = field(default_factory=dict)
    credentials: Credentials | None = None
    target: httpx.URL | None = None
    request: httpx.Request | None = None
    command: str | None = None
    boundaries: dict[str, bool] = field(default_factory=lambda: dict.fromkeys(BOUNDARIES, False))
    step: str = "starting"

    @property
    def operation_name(self) -> str | None:
        return self.operation.name if self.operation is not None else None

    def __repr__(self) -> str:
        return f"Call({self.operation_name}, step={self.step!r})"


@dataclass(repr=False)
class Problem:
    """A failed call: the contract's ``code``, an operator-only ``detail`` (host, status,
    exception class; never a credential, a URL with its query, or upstream text) and the
    raw evidence, which a careful envelope never reads."""

    code: str
    detail: str
    stage: ProblemStage
    http_status: int | None = None
    retry_after_seconds: int | None = None
    invalid_fields: tuple[str, ...] = ()
    exc: BaseException | None = None
    response: httpx.Response | None = None
    transport: TransportFailure | None = None
    ssh: SshOutcome | None = None

    def __repr__(self) -> str:
        return f"Problem({self.code}, stage={self.stage})"


class GatewayBase(ABC):
    """The pipeline. A gateway supplies its request ids, its HTTP client and request, and
    its ``envelope``: what the agent is told about a ``Problem``."""

    log: ClassVar[logging.Logger]
    #: whether the SSH library's own log records are sanitized (``RedactingSSHLogger``)
    redact_library_logs: ClassVar[bool] = True
    #: whether a credential is stripped of surrounding whitespace when read (a token from a
    #: mounted secret file or an ``.env`` line ends in a newline, which the HTTP client
    #: refuses in a header, quoting the token in its error)
    strip_credentials: ClassVar[bool] = True

    def __init__(
        self,
        *,
        vault: VaultLike,
        approver: ApproverLike,
        records: RecordStore,
        upstream_url: str,
        auth: HttpAuth,
        ssh: SSHSettings | None = None,
        timeout: float = 0.3,
        verify: ssl.SSLContext | bool = True,
        checkpoint: Callable[[str], None] | None = None,
    ) -> None:
        self.vault = vault
        self.approver = approver
        self.records = records
        self.upstream_url = upstream_url
        self.auth = auth
        self.ssh = ssh
        self.timeout = timeout
        # the system trust store loaded once per process, not per client (19 ms each)
        self.verify = _system_trust() if verify is True else verify
        self.checkpoint = checkpoint

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    # --- what each gateway decides -------------------------------------------------------

    @abstractmethod
    def new_request_id(self) -> str: ...

    @abstractmethod
    def http_request(self, call: Call) -> tuple[httpx.Client, httpx.Request]:
        """The client and the request for ``call`` (``call.target``, ``call.credentials``)."""

    @abstractmethod
    def envelope(self, call: Call, problem: Problem) -> dict[str, Any]:
        """What the agent gets for ``problem``."""

    def before_send(self, call: Call) -> None:
        """Called right before the upstream call (a place to log it)."""
        return None

    # --- the pipeline ----------------------------------------------------------------------

    def call(self, operation: str, agent_input: Mapping[str, Any]) -> dict[str, Any]:
        """Run ``operation``; an envelope comes back for every failure, nothing raises."""
        call = Call(request_id=self.new_request_id())
        try:
            outcome = self._run(call, operation, agent_input)
        except Exception as exc:  # noqa: BLE001 - the gateway's own failure is an envelope too
            detail = _internal_detail(exc, call.step)
            outcome = Problem("INTERNAL_ERROR", detail, "internal", exc=exc)
        return self._finish(call, outcome)

    def _run(self, call: Call, operation: str, agent_input: Mapping[str, Any]) -> Any:
        call.step = "validating the input"
        data = read_input(agent_input)
        if data is None:
            return Problem(
                "INVALID_INPUT", "input is not an object", "input", invalid_fields=("input",)
            )
        call.agent_data = data
        op = OPERATIONS.get(operation) if isinstance(operation, str) else None
        if op is None:
            return Problem(
                "INVALID_INPUT", "unknown operation", "input", invalid_fields=("operation",)
            )
        call.operation = op
        clean, bad = validate(op, data)
        if bad:
            detail = "invalid fields: " + ", ".join(bad)
            return Problem("INVALID_INPUT", detail, "input", invalid_fields=tuple(bad))
        call.clean = clean
        call.boundaries["validated"] = True

        call.step = "selecting the credential"
        try:
            call.credentials = select_credentials(
                self.vault, op, self.auth, self.ssh, strip=self.strip_credentials
            )
        except CredentialUnavailable as exc:
            if exc.locked:
                return Problem("VAULT_LOCKED", f"vault locked ({exc.exc_type})", "vault")
            return Problem("INTERNAL_ERROR", f"vault lookup failed ({exc.exc_type})", "internal")
        call.boundaries["credential_selected"] = True

        call.step = "asking for approval"
        if self.approver.approve(op.name, op.summary(clean)) is not True:
            return Problem("USER_DENIED", "the approver declined", "approval")
        call.boundaries["authorized"] = True

        call.step = "preparing the request"
        self._checkpoint("before_request")
        if op.transport == "http":
            return self._call_http(call, op)
        return self._call_ssh(call, op)

    def _checkpoint(self, name: str) -> None:
        if self.checkpoint is not None:
            self.checkpoint(name)

    def _call_http(self, call: Call, op: Operation) -> Any:
        call.target = target_url(self.upstream_url, op.path.format(**call.clean))
        client, request = self.http_request(call)
        call.request = request
        where = f"{op.method} {call.target.host}{op.path}"
        with client:
            self.before_send(call)
            self.log.info("request %s: %s to %s", call.request_id, op.name, call.target.host)
            call.step = "calling the upstream"
            call.boundaries["connection_started"] = True
            exchange = send(client, request)
        failure, response = exchange.failure, exchange.response
        sent = response is not None or (failure is not None and failure.sent)
        call.boundaries["bytes_sent"] = sent
        call.boundaries["response_received"] = response is not None
        call.step = "reading the response"
        self._checkpoint("after_response")

        if response is None:
            assert failure is not None
            when = "after" if failure.sent else "before"
            return Problem(
                code_for_transport(failure, op.repeatable),
                f"{where}: {type(failure.exc).__name__} {when} the request was sent",
                "http_transport",
                exc=failure.exc,
                transport=failure,
            )
        status = response.status_code
        if failure is not None:
            return Problem(
                code_for_transport(failure, op.repeatable),
                f"{where} -> HTTP {status}, body cut short ({type(failure.exc).__name__})",
                "http_body",
                http_status=status,
                exc=failure.exc,
                response=response,
                transport=failure,
            )
        if 200 <= status < 300:
            result, error = parse_json_object(response)
            if error is None:
                assert result is not None
                return result
            return Problem(
                invalid_body_code(op.repeatable),
                f"{where} -> HTTP {status}, body is not a JSON object ({type(error).__name__})",
                "http_body",
                http_status=status,
                exc=error,
                response=response,
            )
        code = code_for_status(status, op.repeatable)
        delay = None
        if CONTRACT[code] == RETRY:
            delay = retry_after_seconds(response.headers.get("retry-after"))
            if delay is None and code == "RATE_LIMITED":
                delay = DEFAULT_RETRY_AFTER
        return Problem(
            code,
            f"{where} -> HTTP {status}",
            "http_status",
            http_status=status,
            retry_after_seconds=delay,
            response=response,
        )

    def _call_ssh(self, call: Call, op: Operation) -> Any:
        ssh = self.ssh
        if ssh is None:
            raise RuntimeError("run_command needs SSH settings")
        assert call.credentials is not None
        argv = ["deploy", *ssh.command_args, *call.clean.get("args", ())]
        if "repo" in call.clean:
            argv += ["--repo", call.clean["repo"]]
        call.command = shlex.join(argv)
        password = call.credentials.values[ssh.password_kind]
        timeout = ssh.timeout or self.timeout
        command = call.command
        self.before_send(call)
        self.log.info("request %s: %s on %s:%s", call.request_id, op.name, ssh.host, ssh.port)
        call.step = "running the remote command"
        call.boundaries["connection_started"] = True
        redact = self.redact_library_logs
        outcome = run_sync(lambda: run_ssh(ssh, password, command, timeout, redact_logs=redact))
        call.boundaries["bytes_sent"] = outcome.command_sent
        call.boundaries["response_received"] = outcome.exit_status is not None
        call.step = "reading the remote result"
        self._checkpoint("after_response")
        if outcome.failure is None and outcome.exit_status == 0:
            return {"exit_status": 0}
        where = f"ssh {ssh.host}:{ssh.port}"
        if outcome.failure is None:
            detail = f"{where}: exit status {outcome.exit_status}"
        else:
            detail = f"{where}: {outcome.failure} ({type(outcome.error).__name__})"
        return Problem(
            code_for_ssh(outcome, op.repeatable), detail, "ssh", exc=outcome.error, ssh=outcome
        )

    def _finish(self, call: Call, outcome: Any) -> dict[str, Any]:
        error: dict[str, str] | None = None
        if isinstance(outcome, Problem):
            try:
                envelope = self.envelope(call, outcome)
            except Exception as exc:  # noqa: BLE001 - a failing policy still owes an answer
                outcome.detail += f"; the envelope failed ({type(exc).__name__})"
                envelope = error_envelope(
                    "INTERNAL_ERROR",
                    MESSAGES["INTERNAL_ERROR"],
                    call.request_id,
                    operation=call.operation_name,
                )
            error = {"code": str(envelope.get("code")), "detail": outcome.detail}
            self.log.warning("request %s: %s (%s)", call.request_id, error["code"], outcome.detail)
        else:
            call.boundaries["result_returned"] = True
            envelope = success_envelope(call.request_id, outcome)
            self.log.info("request %s: %s succeeded", call.request_id, call.operation_name)
        self.records.put(
            {
                "request_id": call.request_id,
                "operation": call.operation_name,
                "credential_id": call.credentials.id if call.credentials is not None else None,
                "boundaries": dict(call.boundaries),
                "error": error,
            }
        )
        return envelope


def _internal_detail(exc: BaseException, step: str) -> str:
    """The exception's class and where it was raised: enough to find the bug, while its
    message (which may hold a URL, a header, a token) stays out of every record."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno}" if frames else ""
    return f"{type(exc).__name__} while {step}{where}"
