"""What the mocked HTTP fault transports (``respx`` for httpx, ``responses`` for requests)
share: the base URL a fault intercepts, option checks, and the OS and TLS errors a real
failure carries, worded as on Linux. Standard library only, so either plugin can import it
whichever HTTP library is installed."""

from __future__ import annotations

import ipaddress
import os
import re
import socket
import ssl
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any
from urllib.parse import unquote, urlsplit

from .errors import FaultOptionError, UnknownOptionError, did_you_mean, plain
from .faults import Fault, Reply, SecretFactory, UnknownTransportError, reply_for
from .placements import Placed
from .stages import HTTP, HTTP_ANSWERED, HTTP_RAISED, TLS_STAGES, Stage

__all__ = [
    "ANSWERED",
    "DEFAULT_URL",
    "RAISED",
    "TLS_STAGES",
    "SIGNED_URL_ANSWER",
    "BaseURL",
    "MockedHTTPFault",
    "cert_verify_error",
    "check_method",
    "check_options",
    "name_not_known",
    "os_error",
    "parse_base",
    "redirect_hosts",
    "safe_path",
]


#: the upstream a fault stands for unless told otherwise (``.test`` is reserved: RFC 6761)
DEFAULT_URL = "https://api.upstream.test"

#: stages answered with a full reply (``truncated_body`` is answered with a cut one), and
#: stages that fail before any response (the transport raises)
ANSWERED, RAISED = HTTP_ANSWERED, HTTP_RAISED

#: what the redirect target answers: the signed URL has expired (S3 wording)
SIGNED_URL_ANSWER = (
    403,
    (("Content-Type", "application/xml"),),
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>'
    b"<Message>Request has expired</Message><RequestId>7Q2X1B9M4K0PZ8RC</RequestId></Error>",
)


@dataclass(frozen=True)
class BaseURL:
    """The URL prefix a fault intercepts: scheme, host and port must match, and the path
    must start with ``path`` at a segment boundary."""

    scheme: str
    host: str
    port: int
    path: str

    @property
    def origin(self) -> str:
        """Scheme, host and port only: what messages show (a user's URL may hold a
        secret in its userinfo or path)."""
        default = 443 if self.scheme == "https" else 80
        port = "" if self.port == default else f":{self.port}"
        return f"{self.scheme}://{self.host}{port}"

    def covers(self, scheme: str, host: str, port: int | None, path: str) -> bool:
        scheme = scheme.lower()
        port = port or (443 if scheme == "https" else 80)
        if (scheme, host.lower(), port) != (self.scheme, self.host, self.port):
            return False
        return not self.path or path == self.path or path.startswith(self.path + "/")


def parse_base(transport: str, url: object, stage: Stage) -> BaseURL:
    """Validate ``url`` (never echoing it: it may hold a secret)."""
    hint = f"{transport} fault: url= must be an http:// or https:// URL with a host"
    if not isinstance(url, str):
        raise FaultOptionError(f"{hint}, such as {DEFAULT_URL!r}; got a {type(url).__name__}")
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        raise FaultOptionError(f"{hint} and a valid port, such as {DEFAULT_URL!r}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise FaultOptionError(f"{hint}, such as {DEFAULT_URL!r}")
    if parts.query or parts.fragment:
        raise FaultOptionError(
            f"{hint} and no query or fragment: it is a prefix of the URLs to answer"
        )
    if stage.name in TLS_STAGES and scheme != "https":
        raise FaultOptionError(f"{transport} fault: stage {stage.name} needs an https:// url")
    default = 443 if scheme == "https" else 80
    return BaseURL(scheme, parts.hostname.lower(), port or default, parts.path.rstrip("/"))


def check_options(transport: str, stage: Stage, options: dict[str, Any]) -> None:
    """Unknown options and stages this transport cannot force: a clear error, no traceback
    through the factory's signature."""
    if options:
        names = ", ".join(map(plain, sorted(options)))
        guess = did_you_mean(names, ("url", "method")) if len(options) == 1 else ""
        raise UnknownOptionError(
            f"{transport} fault: unknown option(s) {names}{guess}; it takes url= (the upstream "
            "base URL it answers for) and method= (answer one HTTP method only)"
        )
    if stage.gateway_side:
        raise UnknownTransportError(
            f"stage {stage.name} is a gateway-side stage: it needs no transport; call "
            f"force({stage.name!r}) without via="
        )
    if stage.transport != HTTP:
        raise UnknownTransportError(
            f"stage {stage.name} is a {stage.transport} stage; the {transport} transport "
            "forces HTTP stages only"
        )


def check_method(transport: str, method: object) -> str | None:
    if method is None:
        return None
    if not isinstance(method, str) or not re.fullmatch(r"[A-Za-z]+", method):
        raise FaultOptionError(
            f"{transport} fault: method= takes an HTTP method name such as 'POST'"
        )
    return method.upper()


def redirect_hosts(reply: Reply | None) -> frozenset[str]:
    """Hosts a client following this reply's ``Location`` would reach."""
    if reply is None or not 300 <= reply.status < 400:
        return frozenset()
    hosts = set()
    for name, value in reply.headers:
        if name.lower() == "location":
            host = urlsplit(value).hostname
            if host:
                hosts.add(host.lower())
    return frozenset(hosts)


def safe_path(raw_path: str, known: Iterable[str]) -> str:
    """The request path for evidence: no query, and withheld if it holds a known secret or
    any 6-character piece of one (a secret with a ``?`` or ``#`` in it is cut there)."""
    path = raw_path.split("?", 1)[0] or "/"
    seen = (path, unquote(path))
    for value in known:
        pieces = {value[i : i + 6] for i in range(max(1, len(value) - 5))}
        if any(piece in text for piece in pieces for text in seen):
            return "<a path holding a secret>"
    return path


@cache
def _ssl_c_location() -> str:
    """The `` (_ssl.c:NNNN)`` suffix this Python puts on handshake errors: every error of
    ``do_handshake`` carries the same source line, so a handshake that only wants more
    data (no peer, no network) shows it."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    sslobj = context.wrap_bio(ssl.MemoryBIO(), ssl.MemoryBIO(), server_hostname="upstream.invalid")
    try:
        sslobj.do_handshake()
    except ssl.SSLError as exc:
        found = re.search(r" \(_ssl\.c:\d+\)$", str(exc))
        if found:
            return found.group(0)
    return ""


def cert_verify_error(stage: str, host: str) -> ssl.SSLCertVerificationError:
    """The ``ssl.SSLCertVerificationError`` a client verifying ``host`` gets, with the
    attributes the ssl module sets."""
    if stage == "tls_hostname_mismatch":
        try:
            ipaddress.ip_address(host)
        except ValueError:
            code, what = 62, "Hostname mismatch"  # X509_V_ERR_HOSTNAME_MISMATCH
        else:
            code, what = 64, "IP address mismatch"  # X509_V_ERR_IP_ADDRESS_MISMATCH
        message = f"{what}, certificate is not valid for '{host}'."
    else:
        code, message = 20, "unable to get local issuer certificate"
    exc = ssl.SSLCertVerificationError(
        1, f"[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: {message}"
        f"{_ssl_c_location()}"
    )  # fmt: skip
    exc.reason = "CERTIFICATE_VERIFY_FAILED"
    exc.library = "SSL"
    exc.verify_code = code
    exc.verify_message = message
    return exc


def os_error(cls: type[OSError], code: int) -> OSError:
    """``cls(code, strerror)`` as the OS reports it (``[Errno 111] Connection refused``)."""
    return cls(code, os.strerror(code))


def name_not_known() -> socket.gaierror:
    return socket.gaierror(socket.EAI_NONAME, "Name or service not known")


class MockedHTTPFault(Fault):
    """What a mocked HTTP fault (respx, responses) does before its library comes in: check
    the options and the base URL, build the upstream reply (remembering every canary it
    plants, for ``safe_path``), count requests, and explain a fault that never fired.
    Subclasses install their library's mock in ``start`` and answer through ``target``."""

    #: the stages' transports this fault forces (a Target's mistake found at collection)
    STAGE_TRANSPORTS: frozenset[str] = frozenset({"http"})

    transport = "?"
    #: how to read a response body to its end, in the client's words
    read_hint = "read the response"
    #: what the mock does with a request to another URL
    others_verb = "saw"

    def __init__(
        self,
        stage: str | Stage,
        *,
        placed: Placed | None = None,
        secret: SecretFactory,
        url: str = DEFAULT_URL,
        method: str | None = None,
        **options: Any,
    ) -> None:
        super().__init__(stage, placed=placed)
        check_options(self.transport, self.stage, options)
        self._base = parse_base(self.transport, url, self.stage)
        self.url = url.strip().rstrip("/")
        self.method = check_method(self.transport, method)
        self.calls = 0
        self.other_calls = 0
        made: list[str] = []

        def remember(kind: str) -> str:
            made.append(secret(kind))
            return made[-1]

        self._reply = reply_for(self.stage, remember, placed)
        self._redirect_hosts = redirect_hosts(self._reply)
        self._known = [*(placed.secrets.values() if placed else ()), *made]

    def target(
        self, method: str, scheme: str, host: str, port: int | None, path: str
    ) -> str | None:
        """ "upstream" for a request this fault answers, "redirect" for one to the signed
        URL's host, None for any other."""
        if self.method is None or method == self.method:
            if self._base.covers(scheme, host, port, path):
                return "upstream"
        if host.lower() in self._redirect_hosts:
            return "redirect"
        return None

    def not_reached_reason(self) -> str:
        origin = self._base.origin
        if self.calls and self.stage.name == "truncated_body":
            return (
                f"a request reached {origin} ({self.transport}) but its body was never read "
                f"up to the cut: {self.read_hint}"
            )
        reason = f"no request reached {origin} ({self.transport})"
        if self.method:
            reason += f" with method {self.method}"
        if self.other_calls:
            reason += (
                f"; the mock {self.others_verb} {self.other_calls} request(s) to other URLs: "
                "give the gateway fault.url as its upstream"
            )
        return reason
