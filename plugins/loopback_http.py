"""Loopback fault transport: a real HTTP/HTTPS server on 127.0.0.1 that fails for real.

Mocks (respx, responses) reproduce status codes and bodies, not the text a client library
writes into its exceptions when a socket misbehaves: ``Max retries exceeded with url:
/v1?api_key=...``, ``Connection timeout to host http://...``, ``peer closed connection
without sending complete message body``. Those texts are what careless wrappers hand to an
agent, so this transport makes each HTTP stage happen on a real socket, with every client
library's own code path, and proves that it happened:

=====================  ======================================================  ==================
stage                  what the loopback side does                              proof (evidence)
=====================  ======================================================  ==================
answered stages        reads the request, answers ``reply_for(stage)`` (bodies  request head read
(401, 403, 429, 5xx,   and repeated headers as the corpus has them; a
malformed JSON, HTML,  ``reflect_request`` placement echoes the request the
302 to a signed URL)   server parsed)
timeout_before_send    a listening socket whose accept queue is full: the       ``socket.connect``
                       kernel drops the client's SYN, ``connect()`` times out   audit event
timeout_after_send     reads the whole request, never answers (until stop)      request read
reset_after_send       reads the whole request, then RST (``SO_LINGER`` 0);     request read
                       ``disconnect="close_without_response"``: FIN instead
truncated_body         200 with ``Content-Length`` 4096 and a shorter body      request read
                       (default, ``truncation="content-length"``), or
                       ``truncation="chunked"``: a chunk cut in its middle
connection_refused     a port bound without ``listen()``: the kernel answers    ``socket.connect``
                       RST, ``ECONNREFUSED``                                    audit event
dns_failure            ``fault.url`` names ``api-upstream.invalid``;             failed lookups
                       ``netwatch.failing_dns()`` fails it like a resolver
tls_hostname_mismatch  HTTPS; the certificate, from the CA of ``fault.ca_file``, a ClientHello read
                       names ``upstream.other-host.example`` only
tls_untrusted_ca       HTTPS; the certificate comes from another CA             a ClientHello read
=====================  ======================================================  ==================

Usage::

    fault = leakcheck.force("timeout_after_send", via="loopback", scheme="https")
    httpx.get(fault.url + "/v1/x", verify=fault.ssl_context(), timeout=fault.timeout)

``fault.url`` is ``http(s)://127.0.0.1:PORT`` (TLS certificates carry the IP address
127.0.0.1 as a subject alternative name, so no name lookup is involved; for DNS failure it
is ``http(s)://api-upstream.invalid:PORT``). ``scheme`` defaults to ``https`` for the TLS
stages and ``http`` otherwise. ``fault.ssl_context()`` trusts ``fault.ca_file`` (a PEM file
in a temporary directory removed at stop); requests takes ``verify=fault.ca_file``.

The full accept queue (how many connections fill it, as measured, and how the proof checks
that no client got in): ``loopback_backlog``.

A client in a Python child process (an MCP server over stdio, a gateway run as a
command) is forced and proven the same way: start it with ``fault.child_environment()``
merged into its environment (``ChildProcessUpstream`` in ``leakcheck.faults``)::

    env = netwatch.merge_environment(os.environ, fault.child_environment())
    subprocess.run([sys.executable, "server.py"], env=env)

Its ``PYTHONPATH`` starts with a generated ``sitecustomize.py`` (``netwatch.ChildProof``,
which chains to the child's own) that fails the ``.invalid`` lookup and a redirect target's
host as ``failing_dns`` does, and writes each failed lookup and each connect to the fault's
port to ``LEAKCHECK_CHILD_PROOF``; the fault's ``connects``, ``failed_lookups``,
``redirect_lookups`` and evidence count them. The server-side proof (a request read, a
ClientHello) needs nothing more; an https fault adds ``SSL_CERT_FILE``,
``REQUESTS_CA_BUNDLE`` and ``NODE_EXTRA_CA_CERTS`` naming ``fault.ca_file``. The directory
is removed at stop.

A stage that did not really happen is not evidence: a TLS stage whose handshake the client
completed (verification off) or, for ``tls_hostname_mismatch``, a client that rejected the
issuer rather than the name (it does not trust ``fault.ca_file``) stays unreached, and the
harness error says why. Evidence strings carry no secret: a method and a path without its
query, counts, TLS alert names.

The clients leakcheck drives against it and the corpus of the real exception text each one
produces at each stage (``corpora/exceptions/http.json``) are test and corpus tooling, not
shipped: ``recorders/http.py`` in the repository.

The fault and its server are here; their parts are sibling modules: ``loopback_wire`` (the
request reader, the response head), ``loopback_backlog`` (the full accept queue, checked
in /proc/net/tcp), ``loopback_tls`` (the CA and each stage's certificate),
``loopback_child`` (the proof hook of a Python child process).
"""

from __future__ import annotations

import contextlib
import math
import selectors
import shutil
import socket
import ssl
import struct
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any, Literal

from leakcheck.errors import UnknownOptionError, did_you_mean, plain, quoted
from leakcheck.faults import Fault, HarnessError, Reply, UnknownTransportError, reply_for
from leakcheck.netwatch import ChildEvents, ChildProof, Watcher, failing_dns, watch
from leakcheck.placements import Placed
from leakcheck.stages import HTTP_ANSWERED, TLS_STAGES, Stage

from .loopback_backlog import accept_queue, fill_accept_queue, intruders
from .loopback_child import TRUST_VARIABLES, child_note, child_proof
from .loopback_tls import MISMATCH_HOSTNAME, LoopbackCA
from .loopback_wire import Closed, Request, read_request, response_head

__all__ = [
    "DNS_FAILURE_HOST",
    "FAULTS",
    "LOOPBACK",
    "MISMATCH_HOSTNAME",
    "LoopbackFault",
    "LoopbackOptionError",
]

LOOPBACK = "127.0.0.1"
#: RFC 6761 reserves ``.invalid``: no resolver may answer it, and ``failing_dns`` makes
#: sure none is asked.
DNS_FAILURE_HOST = "api-upstream.invalid"

Truncation = Literal["content-length", "chunked"]
Disconnect = Literal["reset", "close_without_response"]

#: stages the loopback server answers with ``reply_for(stage)``
ANSWERED = HTTP_ANSWERED
#: stages where a client reaches the loopback server and sends (or tries TLS)
SERVED = (
    ANSWERED
    | {
        "timeout_after_send",
        "reset_after_send",
        "truncated_body",
    }
    | TLS_STAGES
)
SUPPORTED = SERVED | {"timeout_before_send", "connection_refused", "dns_failure"}
#: stages where a strict client connects, then refuses to send a malformed request
_REFUSABLE = SERVED - TLS_STAGES

#: a socket operation of the server that takes this long means stop() was never called
_IO_SAFETY = 30.0
#: stop() waits this long, in all, for the server's threads
_JOIN_TIMEOUT = 2.0
#: how long ``fired`` waits for TLS handshakes in flight to finish (the client sends its
#: alert before it raises, so the server has it within microseconds)
_SETTLE_TIMEOUT = 0.5
_EVIDENCE_CAP = 20


class LoopbackOptionError(UnknownOptionError, UnknownTransportError):
    """An option the loopback transport does not take for this stage."""


#: ``loopback_backlog.accept_queue`` under its old name (tests/test_faults_loopback.py reads it)
_accept_queue = accept_queue


def _check_choice(name: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        choices = ", ".join(repr(a) for a in allowed)
        raise LoopbackOptionError(f"loopback: {name} must be one of {choices}, not {quoted(value)}")


class LoopbackFault(Fault):
    """Force an HTTP stage on a real socket on 127.0.0.1 (see the module docstring).

    ``scheme``: "http" or "https" (default: https for the TLS stages, http otherwise);
    ``timeout``: the client timeout tests should use (``fault.timeout``);
    ``truncation`` (truncated_body): "content-length" (default) or "chunked";
    ``disconnect`` (reset_after_send): "reset" (default, RST) or "close_without_response"
    (an orderly close before any response byte).
    """

    #: the stages' transports this fault forces (a Target's mistake found at collection)
    STAGE_TRANSPORTS: frozenset[str] = frozenset({"http"})

    transport = "loopback"

    def __init__(
        self,
        stage: str | Stage,
        *,
        placed: Placed | None = None,
        secret: Callable[[str], str],
        scheme: str | None = None,
        timeout: float = 0.3,
        truncation: str | None = None,
        disconnect: str | None = None,
        **unknown: Any,
    ) -> None:
        super().__init__(stage, placed=placed)
        name = self.stage.name
        if unknown:
            known = ("scheme", "timeout", "truncation", "disconnect")
            guess = did_you_mean(next(iter(unknown)), known) if len(unknown) == 1 else ""
            raise LoopbackOptionError(
                f"loopback: unknown option(s) {', '.join(map(plain, sorted(unknown)))}{guess}; "
                f"known: {', '.join(known)}"
            )
        if name not in SUPPORTED:
            raise UnknownTransportError(
                f"the loopback transport forces HTTP stages only, not {name} "
                f"({self.stage.transport}); its stages: {', '.join(sorted(SUPPORTED))}"
            )
        if scheme is None:
            scheme = "https" if name in TLS_STAGES else "http"
        _check_choice("scheme", scheme, ("http", "https"))
        if name in TLS_STAGES and scheme != "https":
            raise LoopbackOptionError(f"loopback: stage {name} needs scheme='https'")
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not math.isfinite(timeout)
            or timeout <= 0
        ):
            raise LoopbackOptionError(
                f"loopback: timeout must be a positive number of seconds, not {quoted(timeout)}"
            )
        if truncation is not None:
            if name != "truncated_body":
                raise LoopbackOptionError(
                    f"loopback: truncation= applies to stage truncated_body, not {name}"
                )
            _check_choice("truncation", truncation, ("content-length", "chunked"))
        if disconnect is not None:
            if name != "reset_after_send":
                raise LoopbackOptionError(
                    f"loopback: disconnect= applies to stage reset_after_send, not {name}"
                )
            _check_choice("disconnect", disconnect, ("reset", "close_without_response"))
        self.scheme = scheme
        self.timeout = float(timeout)
        self.truncation: str = truncation or "content-length"
        self.disconnect: str = disconnect or "reset"
        self.host = DNS_FAILURE_HOST if name == "dns_failure" else LOOPBACK
        self.port = 0
        self.reply: Reply | None = reply_for(self.stage, secret, placed)
        if name == "truncated_body" and self.reply is None:  # pragma: no cover - corpus bug
            raise HarnessError("upstream_replies.json has no truncated_body reply")

        self._lock = threading.Lock()
        self._settled = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._started = False
        self._stopped = False
        self._stack = ExitStack()
        self._tmpdir: str | None = None
        self._child: ChildProof | None = None
        self._ca = LoopbackCA(LOOPBACK, self._ensure_tmpdir)
        self._listener: socket.socket | None = None
        self._fillers: list[socket.socket] = []
        self._closed_port: socket.socket | None = None
        self._wake: tuple[socket.socket, socket.socket] | None = None
        self._accept_thread: threading.Thread | None = None
        self._threads: list[threading.Thread] = []
        self._conns: set[socket.socket] = set()
        self._watcher: Watcher | None = None
        self._failed_lookups: Callable[[], int] = lambda: 0
        self._redirect_lookups: list[Callable[[], int]] = []
        self._final: dict[str, int] = {}
        self._noted: set[str] = set()
        self._errors: list[str] = []
        self._tls: ssl.SSLContext | None = None
        # what the server saw
        self.requests = 0
        self.client_hellos = 0
        self.tls_alerts: list[str] = []
        self.tls_completed = 0
        self.plaintext_on_tls = 0
        #: connections accepted, and those closed before a byte of a request arrived
        self.accepted = 0
        self.silent_closes = 0
        self._served_watcher: Watcher | None = None
        self._handshaking = 0
        self._backlog_breached = False

    # --- addresses and TLS material ------------------------------------------------------

    @property
    def url(self) -> str:
        """The base URL to point the client at (no path, no secret)."""
        return f"{self.scheme}://{self.host}:{self.port}"

    @property
    def tmpdir(self) -> str | None:
        """The temporary directory of its TLS material and child hook while the fault is
        armed (a text that names it is normalized by the corpus), else None."""
        return self._tmpdir

    @property
    def ca_file(self) -> str:
        """PEM path of the CA clients should trust (created on first use for http)."""
        with self._lock:
            self._ensure_ca()
            assert self._ca.file is not None
            return self._ca.file

    def ssl_context(self) -> ssl.SSLContext:
        """A client context that trusts ``ca_file`` (and nothing else)."""
        if self._stopped:
            raise HarnessError(f"{self.describe()} is stopped: its CA file is gone")
        return ssl.create_default_context(cafile=self.ca_file)

    def _ensure_ca(self) -> None:
        if self._ca.made:
            return
        if self._stopped:  # a directory made now would never be removed
            raise HarnessError(f"{self.describe()} is stopped: its CA file is gone")
        self._ca.make()

    def _ensure_tmpdir(self) -> str:
        if self._tmpdir is None:
            self._tmpdir = tempfile.mkdtemp(prefix="leakcheck-loopback-")
        return self._tmpdir

    # --- a Python child process as the client ------------------------------------------------

    def child_environment(self) -> dict[str, str]:
        """Environment variables to merge into a Python child process's environment (an
        MCP server over stdio, a gateway run as a command), so that the stage is forced
        and proven there too: ``PYTHONPATH`` (a generated directory with a
        ``sitecustomize.py``, first, then this process's ``PYTHONPATH``),
        ``LEAKCHECK_CHILD_PROOF`` (the file the child's proof events go to) and
        ``LEAKCHECK_CHILD_FAULT`` (what its hook fails and watches: the fault's port, the
        ``.invalid`` suffix, redirect hosts as digests). For an https fault also
        ``SSL_CERT_FILE``, ``REQUESTS_CA_BUNDLE`` and ``NODE_EXTRA_CA_CERTS``, naming
        ``ca_file`` (``SSL_CERT_FILE`` replaces the system CAs in the child: it trusts the
        fault alone). Valid from ``start()`` to ``stop()``, which removes the directory;
        ``leakcheck.netwatch.merge_environment`` joins ``PYTHONPATH`` with a base's."""
        if self._stopped:
            raise HarnessError(f"{self.describe()} is stopped: its child hook is gone")
        if not self._started:
            raise HarnessError(
                f"{self.describe()} is not armed: start it (or leakcheck.force) before "
                "asking for child_environment(), which names its port"
            )
        name = self.stage.name
        with self._lock:
            if self._child is None:
                self._child = child_proof(
                    self._ensure_tmpdir(), name, (LOOPBACK, self.port), self._locations()
                )
            env = self._child.environment()
        if self.scheme == "https":
            ca_file = self.ca_file
            for variable in TRUST_VARIABLES:
                env[variable] = ca_file
        return env

    def child_events(self) -> ChildEvents:
        """What the hooks of child processes given ``child_environment()`` wrote so far."""
        return self._child.read() if self._child is not None else ChildEvents()

    # --- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        if self._stopped:
            raise HarnessError(f"{self.describe()}: a stopped fault cannot be started again")
        if self._started:
            return
        self._started = True
        try:
            self._start()
        except BaseException:
            with contextlib.suppress(Exception):
                self.stop()
            raise

    def _start(self) -> None:
        name = self.stage.name
        if name in ("connection_refused", "dns_failure"):
            # bound, never listening: the kernel refuses every connect, and no other
            # process can take the port while the fault holds it
            self._closed_port = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self._closed_port.bind((LOOPBACK, 0))
            self.port = self._closed_port.getsockname()[1]
            if name == "connection_refused":
                self._watcher = self._stack.enter_context(watch(LOOPBACK, self.port))
            else:
                self._failed_lookups = self._stack.enter_context(failing_dns(".invalid"))
                self._stack.enter_context(_aiohttp_threaded_resolver())
            return
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener = listener
        listener.bind((LOOPBACK, 0))
        self.port = listener.getsockname()[1]
        if name == "timeout_before_send":
            listener.listen(0)
            fill_accept_queue(listener, self._fillers)
            self._watcher = self._stack.enter_context(watch(LOOPBACK, self.port))
            return
        listener.listen(16)
        # connects of this process, so a refusal's close is waited for (see _settle)
        self._served_watcher = self._stack.enter_context(watch(LOOPBACK, self.port))
        self._tls = self._ca.server_context(name) if self.scheme == "https" else None
        for location in self._locations():
            # a client that follows the redirect must not ask a real resolver for the
            # canary host name (that would send it off the machine)
            self._redirect_lookups.append(self._stack.enter_context(failing_dns(location)))
        self._wake = socket.socketpair()
        self._accept_thread = threading.Thread(
            target=self._accept_loop, name=f"leakcheck-loopback-{self.port}", daemon=True
        )
        self._accept_thread.start()

    def _locations(self) -> list[str]:
        if self.reply is None:
            return []
        hosts = []
        for key, value in self.reply.headers:
            if key.lower() == "location":
                host = urllib.parse.urlsplit(value).hostname
                if host and host not in (LOOPBACK, "localhost"):
                    hosts.append(host.lower())
        return hosts

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        if not self._started:
            self._remove_tmpdir()
            return
        self._stopping.set()
        self._refresh()
        if self._wake is not None:
            with contextlib.suppress(OSError):
                self._wake[1].send(b"x")
        deadline = _Deadline(_JOIN_TIMEOUT)
        if self._accept_thread is not None:
            self._accept_thread.join(deadline.left())
        with self._lock:
            for conn in list(self._conns):
                with contextlib.suppress(OSError):
                    # the plain socket's shutdown (SSLSocket.shutdown would drop its TLS
                    # state under the handler thread): wakes a blocked recv or handshake
                    socket.socket.shutdown(conn, socket.SHUT_RDWR)
        stuck = []
        for thread in [t for t in (self._accept_thread,) if t] + self._threads:
            thread.join(deadline.left())
            if thread.is_alive():
                stuck.append(thread.name)
        self._final = {
            "connects": self.connects,
            "failed_lookups": self.failed_lookups,
            "redirect_lookups": self.redirect_lookups,
        }
        if self._child is not None:
            self._child.read()  # the last counts, kept once its directory is gone
        sockets = [*self._fillers, self._listener, self._closed_port, *(self._wake or ())]
        for sock in sockets:
            if sock is not None:
                sock.close()
        try:
            self._stack.close()
        finally:
            self._remove_tmpdir()
        if stuck:
            raise HarnessError(f"loopback server threads did not stop: {', '.join(stuck)}")
        if self._errors:
            raise HarnessError("loopback server failed: " + "; ".join(self._errors[:3]))

    def _remove_tmpdir(self) -> None:
        with self._lock:
            if self._tmpdir is not None:
                shutil.rmtree(self._tmpdir, ignore_errors=True)

    # --- the server ----------------------------------------------------------------------

    def _accept_loop(self) -> None:
        assert self._listener is not None and self._wake is not None
        selector = selectors.DefaultSelector()
        selector.register(self._listener, selectors.EVENT_READ, "accept")
        selector.register(self._wake[0], selectors.EVENT_READ, "wake")
        try:
            while not self._stopping.is_set():
                for key, _ in selector.select():
                    if key.data == "wake":
                        return
                    try:
                        conn, _ = self._listener.accept()
                    except OSError:
                        continue
                    with self._lock:
                        if self._stopping.is_set():
                            conn.close()
                            return
                        self._conns.add(conn)
                        self.accepted += 1
                        thread = threading.Thread(
                            target=self._serve,
                            args=(conn,),
                            name=f"leakcheck-loopback-{self.port}-{len(self._threads) + 1}",
                            daemon=True,
                        )
                        self._threads.append(thread)
                    thread.start()
        finally:
            selector.close()

    def _serve(self, conn: socket.socket) -> None:
        sock = conn
        try:
            conn.settimeout(_IO_SAFETY)
            if self._tls is not None:
                wrapped = self._handshake(conn)
                if wrapped is None:
                    return
                sock = wrapped
            self._answer(sock, read_request(sock))
        except Closed as closed:
            if closed.silent and not self._stopping.is_set():
                self._closed_silently()
        except (OSError, ValueError):
            pass  # the client went away, or stop() shut the socket: nothing to answer
        except Exception as exc:  # noqa: BLE001 - a bug of ours, reported at stop()
            self._errors.append(f"{type(exc).__name__} in the server thread")
        finally:
            with self._lock:
                self._conns.discard(conn)
                self._conns.discard(sock)
            sock.close()
            with self._settled:
                self._settled.notify_all()

    def _closed_silently(self) -> None:
        """A client connected and closed without sending a byte: what a strict client does
        with a request it refuses to send (h11 checks the headers after connecting)."""
        with self._lock:
            self.silent_closes += 1
        malformed = self.placed is not None and bool(self.placed.malformed)
        if malformed and self.stage.name in _REFUSABLE:
            self.record(
                f"loopback server: a client connected to {self.url} and closed the connection "
                "without sending a byte: it refused to send the request (the placement's "
                "credential is malformed)"
            )

    def _handshake(self, conn: socket.socket) -> ssl.SSLSocket | None:
        assert self._tls is not None
        first = conn.recv(1, socket.MSG_PEEK)
        if not first:
            return None
        if first[0] != 0x16:  # not a TLS handshake record: plain HTTP to the HTTPS port
            self.plaintext_on_tls += 1
            return None
        with self._lock:
            self.client_hellos += 1
            self._handshaking += 1
        if self.stage.name in TLS_STAGES:
            # before the server sends its certificate: the client cannot fail earlier
            self.record(f"loopback TLS server read a ClientHello on {self.url}")
        try:
            with self._lock:
                if self._stopping.is_set():
                    return None
                sock = self._tls.wrap_socket(conn, server_side=True, do_handshake_on_connect=False)
                self._conns.discard(conn)
                self._conns.add(sock)
            try:
                sock.do_handshake()
            except ssl.SSLError as exc:
                self.tls_alerts.append(str(exc.reason or type(exc).__name__))
                return None
            if self.stage.name in TLS_STAGES:
                self.tls_completed += 1
                return None
            return sock
        finally:
            with self._settled:
                self._handshaking -= 1
                self._settled.notify_all()

    def _answer(self, sock: socket.socket, request: Request) -> None:
        with self._lock:
            self.requests += 1
        name = self.stage.name
        read = f"loopback server read 1 request head ({request.what})"
        if name == "timeout_after_send":
            self.record(f"{read} and {request.body_length} body bytes; it never answers")
            self._stopping.wait()
            return
        if name == "reset_after_send":
            if self.disconnect == "reset":
                self.record(f"{read}, then reset the connection (RST)")
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            else:
                self.record(f"{read}, then closed it without a response")
            return  # _serve closes the socket
        if name in TLS_STAGES:  # pragma: no cover - a completed handshake returns before
            return
        reply = self.reply
        assert reply is not None
        body = reply.reflected(request.method, request.target, request.headers)
        if name == "truncated_body":
            declared = max(reply.declared_length or 0, len(body) + 1)
            if self.truncation == "chunked":
                self.record(
                    f"{read}; answered 200 with a chunk of {declared} declared bytes cut "
                    f"after {len(body)}"
                )
                head = response_head(
                    reply.status, reply.headers, ["Transfer-Encoding: chunked", "Connection: close"]
                )
                sock.sendall(head + f"{declared:x}\r\n".encode() + body)
            else:
                self.record(
                    f"{read}; answered 200 with {len(body)} of {declared} declared body bytes"
                )
                head = response_head(
                    reply.status,
                    reply.headers,
                    [f"Content-Length: {declared}", "Connection: close"],
                )
                sock.sendall(head + body)
            return
        self.record(f"{read}; answered {reply.status}")
        extra = [f"Content-Length: {len(body)}", "Connection: close"]
        sock.sendall(response_head(reply.status, reply.headers, extra) + body)

    def record(self, evidence: str) -> None:
        with self._lock:
            if len(self.evidence) < _EVIDENCE_CAP:
                self.evidence.append(evidence)

    # --- evidence --------------------------------------------------------------------------

    @property
    def tls_failures(self) -> int:
        """TLS handshakes that failed server-side (the alert names: ``tls_alerts``)."""
        return len(self.tls_alerts)

    @property
    def connects(self) -> int:
        """Connection attempts to the fault's port (timeout_before_send, refused), in this
        process and in child processes given ``child_environment()``."""
        if "connects" in self._final:
            return self._final["connects"]
        own = self._watcher.connects if self._watcher is not None else 0
        return own + self.child_events().connects

    @property
    def failed_lookups(self) -> int:
        """Lookups of ``.invalid`` names that failed (dns_failure), here and in children."""
        if "failed_lookups" in self._final:
            return self._final["failed_lookups"]
        return self._failed_lookups() + self.child_events().lookups("suffix ")

    @property
    def redirect_lookups(self) -> int:
        """Lookups of a redirect target's host, failed on purpose (the client followed)."""
        if "redirect_lookups" in self._final:
            return self._final["redirect_lookups"]
        own = sum(count() for count in self._redirect_lookups)
        return own + self.child_events().lookups("digest ")

    def _note(self, key: str, evidence: str) -> None:
        if key not in self._noted:
            self._noted.add(key)
            self.record(evidence)

    def _refresh(self) -> None:
        """Evidence that no server thread sees: counted socket events, in this process
        (the audit hook, the patched resolver) and in child processes (their proof file)."""
        name = self.stage.name
        if name in ("timeout_before_send", "connection_refused") and self.connects:
            if name == "timeout_before_send":
                listening = self._listener is not None and self._listener.fileno() != -1
                if listening and self._intruders():
                    self._backlog_breached = True
                what = f"{LOOPBACK}:{self.port}, whose accept queue is full: its SYN was dropped"
            else:
                what = f"{LOOPBACK}:{self.port}: refused"
            if self._watcher is not None and self._watcher.connects:
                self._note("connect", f"a client tried to connect to {what}")
            if self.child_events().connects:
                self._note(
                    "child-connect", f"a client in a child process tried to connect to {what}"
                )
        elif name == "dns_failure" and self.failed_lookups:
            if self._failed_lookups():
                self._note("dns", f"a lookup of {DNS_FAILURE_HOST} failed (EAI_NONAME)")
            if self.child_events().lookups("suffix "):
                self._note(
                    "child-dns",
                    f"a lookup of {DNS_FAILURE_HOST} failed in a child process (EAI_NONAME)",
                )

    def _intruders(self) -> set[int]:
        """Client ports of connections the kernel established to the full listener
        (Linux: from /proc/net/tcp); a connect that got in did not time out."""
        return intruders(self.port, self._fillers)

    def _settle(self) -> None:
        with self._settled:
            self._settled.wait_for(lambda: self._handshaking == 0, _SETTLE_TIMEOUT)
        if not self.evidence and self._served_watcher is not None:
            # a client that refuses its own request connects and closes at once; the server
            # may not have accepted or read it yet
            watcher = self._served_watcher
            with self._settled:
                self._settled.wait_for(
                    lambda: self.accepted >= watcher.connects and not self._conns,
                    _SETTLE_TIMEOUT,
                )

    def _contradiction(self) -> str:
        """Why the evidence does not prove the stage ("" when it does)."""
        name = self.stage.name
        if name in TLS_STAGES:
            self._settle()
            if self.tls_completed:
                return (
                    "the client completed the TLS handshake with a certificate it must "
                    "reject: its certificate verification is off"
                )
            if (
                name == "tls_hostname_mismatch"
                and self.tls_alerts
                and all("UNKNOWN_CA" in alert for alert in self.tls_alerts)
            ):
                return (
                    "the client rejected the certificate's issuer, not its host name: it "
                    "does not trust fault.ca_file (pass verify=fault.ssl_context(), or "
                    "fault.ca_file to requests)"
                )
        if self._backlog_breached:
            return (
                "the kernel let the client's connection into the full accept queue, so "
                "its connect did not time out"
            )
        return ""

    @property
    def fired(self) -> bool:
        self._refresh()
        if not self.evidence:
            self._settle()
        return bool(self.evidence) and not self._contradiction()

    def not_reached_reason(self) -> str:
        self._refresh()
        self._settle()
        contradiction = self._contradiction()
        if self.evidence and contradiction:
            return contradiction
        return self._unreached() + child_note(self._child)

    def _unreached(self) -> str:
        name = self.stage.name
        if name == "dns_failure":
            return f"no client looked up {DNS_FAILURE_HOST}: point the gateway at fault.url"
        if name in ("connection_refused", "timeout_before_send"):
            return f"no client connected to {LOOPBACK}:{self.port}: point the gateway at fault.url"
        why = f"the loopback server at {self.url} read no request"
        if name in TLS_STAGES:
            why = f"no TLS ClientHello reached {self.url}"
        if self.placed is not None and self.placed.malformed and not self.silent_closes:
            why += (
                " (the placement's credential is malformed: a client that refuses it before "
                "connecting, as requests does, leaves no trace on a server; for requests "
                "force it via='responses')"
            )
        if self.silent_closes:
            why += (
                f" ({self.silent_closes} connection(s) closed before a byte was sent: a client "
                "that refuses its own request, such as a header value with a newline)"
            )
        if self.plaintext_on_tls:
            why += " (a client spoke plain HTTP to it: use fault.url, which is https)"
        elif self.tls_alerts and name not in TLS_STAGES:
            why += (
                f" (the client aborted the TLS handshake: {self.tls_alerts[0]}; pass "
                "verify=fault.ssl_context(), or fault.ca_file to requests)"
            )
        return why + ": point the gateway at fault.url"

    def describe(self) -> str:
        return f"stage {self.stage.name} via loopback ({self.url})"


class _Deadline:
    def __init__(self, seconds: float) -> None:
        self._end = time.monotonic() + seconds

    def left(self) -> float:
        return max(0.0, self._end - time.monotonic())


class _ResolverHolds:
    """The faults holding aiohttp's ``DefaultResolver`` on the threaded resolver, and what
    it was before the first of them.

    Put back when the last hold ends, not by each: faults overlap (a ``with`` block's
    dns_failure and a fault armed inside it, ended in either order), and the first to end
    put back aiodns's resolver under the other, whose lookups then left the machine. And
    only if it is still the threaded resolver: one the app set meanwhile stays."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.count = 0
        #: what the threaded resolver replaced, while holds are running (None: nothing)
        self.replaced: Any = None


_RESOLVER_HOLDS = _ResolverHolds()


@contextlib.contextmanager
def _aiohttp_threaded_resolver() -> Iterator[None]:
    """aiohttp with aiodns installed resolves through c-ares, not ``socket.getaddrinfo``:
    connectors made while the fault is armed use the threaded resolver instead, so the
    lookup fails here and never leaves the machine."""
    connector = sys.modules.get("aiohttp.connector")
    resolver = sys.modules.get("aiohttp.resolver")
    threaded = getattr(resolver, "ThreadedResolver", None)
    if connector is None or threaded is None:
        yield
        return
    holds = _RESOLVER_HOLDS
    with holds.lock:
        holds.count += 1
        current = getattr(connector, "DefaultResolver", None)
        if current is not threaded:
            # (set by the app since an earlier hold began: that is what to put back)
            holds.replaced = current
            connector.DefaultResolver = threaded  # type: ignore[attr-defined]  # a ModuleType to mypy
    try:
        yield
    finally:
        with holds.lock:
            holds.count -= 1
            if holds.count == 0:
                replaced, holds.replaced = holds.replaced, None
                if replaced is not None and connector.DefaultResolver is threaded:
                    connector.DefaultResolver = replaced  # type: ignore[attr-defined]  # a ModuleType to mypy


FAULTS = {"loopback": LoopbackFault}
