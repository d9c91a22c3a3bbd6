"""SSH faults: a real asyncssh server on 127.0.0.1 that fails the way an SSH host fails.

``leakcheck.force("ssh_command_failed", via="ssh", placement="ssh-env")`` starts an
asyncssh server on an ephemeral loopback port, in its own thread with its own event loop,
so that sync tests (paramiko, ``asyncio.run``) and async tests (any running loop) reach it
alike. The fault hands the client everything it needs, isolated from the machine's
``~/.ssh`` (config, agent, default keys, known hosts):

    async with asyncssh.connect(**fault.asyncssh_options()) as conn:
        await conn.run(fault.command, env=fault.env, check=True)

    client = fault.paramiko_client()          # host keys from fault.known_hosts only
    client.connect(**fault.paramiko_options())

Stages and the proof each one records (evidence never names a user, password or command):

* ``ssh_auth_rejected``: every password or key login is refused; proof: the server refused
  one.
* ``ssh_host_key_mismatch`` / ``ssh_unknown_host_key``: a healthy server, but
  ``fault.known_hosts`` holds a different key for it / no key for it; proof: the server
  presented its host key in a key exchange. A client that then logs in anyway does not
  check host keys: the stage counts as not reached, and the harness error says why.
* ``ssh_command_failed``: the session writes to stderr a message that reflects the command
  line and environment it got (as careless remote tools do) and exits 2; proof: the
  command arrived.
* ``ssh_hang_after_command``: the command is accepted and nothing comes back until the
  fault stops; the client's own timeout (``fault.timeout``) has to fire.
* ``ssh_connection_refused``: a port bound to nothing listening; proof: a connect attempt
  seen by ``leakcheck.netwatch``.

The server's own asyncssh log records are silenced: they would carry the command (and so
the canaries) into the test's log sink, as if the gateway had logged them. The client
library's records are the gateway's business: asyncssh logs the command it runs at INFO
and each environment variable at DEBUG, so a direct secret in command arguments or env is
a finding of the log sink whatever the gateway's wrapper does.

``stop()`` aborts every open connection, closes the listener, stops the loop and joins the
thread. ``record_exception_texts()`` gathers, for each client and stage, the exception
text a gateway would catch, masked and normalized, for the upgrade snapshot in
``corpora/exceptions/ssh.json`` (``scripts/record_ssh_exceptions.py`` writes it).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import math
import os
import re
import shlex
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any

import asyncssh
from asyncssh.logging import SSHLogger

from leakcheck.canaries import Secret
from leakcheck.errors import UnknownOptionError, did_you_mean, plain, quoted
from leakcheck.faults import Fault, HarnessError, SecretFactory, UnknownTransportError
from leakcheck.netwatch import Watcher, watch
from leakcheck.placements import Placed
from leakcheck.stages import SSH, Stage, stages_for

__all__ = [
    "FAULTS",
    "SERVER_THREAD_NAME",
    "SSHFault",
]

SERVER_THREAD_NAME = "leakcheck-ssh-server"
HOST = "127.0.0.1"
DEFAULT_COMMAND = "deploy"
#: What a client's connect and login may take at most (``SSHFault.connect_timeout``).
CONNECT_BOUND = 5.0
#: Start and stop wait at most this long: a guard against a wedged server thread, never
#: waited in practice (binding a loopback port takes milliseconds).
_THREAD_BOUND = 5.0

_AUTH_REJECTED = "ssh_auth_rejected"
_MISMATCH = "ssh_host_key_mismatch"
_UNKNOWN = "ssh_unknown_host_key"
_COMMAND_FAILED = "ssh_command_failed"
_HANG = "ssh_hang_after_command"
#: How long the server keeps a hung command before it lets go (a gateway with no timeout
#: of its own then gets its channel closed, and the case says why, never a pass).
HANG_LETS_GO = 5.0
_REFUSED = "ssh_connection_refused"
_HOST_KEY_STAGES = (_MISMATCH, _UNKNOWN)
_ENV_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


# --- keys: generated once per process, so that a fault starts in milliseconds --------------


@functools.cache
def _host_key() -> asyncssh.SSHKey:
    return asyncssh.generate_private_key("ssh-ed25519")


@functools.cache
def _other_host_key() -> asyncssh.SSHKey:
    """The key a mismatching known_hosts file claims the server has."""
    return asyncssh.generate_private_key("ssh-ed25519")


@functools.cache
def _client_key() -> asyncssh.SSHKey:
    """The key written to a placed identity file; the server accepts it (but for
    ``ssh_auth_rejected``)."""
    return asyncssh.generate_private_key("ssh-ed25519")


@functools.cache
def _client_key_texts() -> tuple[tuple[str, str], ...]:
    """``(format, text)`` of the client key's private half as a gateway may show it: the
    OpenSSH file written, PKCS #8 and traditional PEM."""
    key = _client_key()
    return tuple(
        (name, key.export_private_key(name).decode("ascii"))
        for name in ("openssh", "pkcs8-pem", "pkcs1-pem")
        if _exports(key, name)
    )


def _exports(key: asyncssh.SSHKey, name: str) -> bool:
    try:
        key.export_private_key(name)
    except Exception:  # noqa: BLE001 - a format this key type has not (ed25519: no pkcs1)
        return False
    return True


def _public_line(key: asyncssh.SSHKey) -> str:
    """``ssh-ed25519 AAAA...`` (no comment), as a known_hosts line has it."""
    return " ".join(key.export_public_key("openssh").decode("ascii").split()[:2])


# --- silencing the server's own log records ---------------------------------------------------


class _SilentLogger(logging.Logger):
    """A logger that makes no record at all, whatever ``logging.Logger`` is patched to do
    (the leakcheck log sink patches the class to capture every record of every level)."""

    def isEnabledFor(self, level: int) -> bool:
        return False

    def handle(self, record: logging.LogRecord) -> None:
        return None

    def getChild(self, suffix: str) -> _SilentLogger:
        return _SilentLogger(f"{self.name}.{suffix}")


def _silence(conn: Any) -> None:
    """Route a server connection's records (and those of its channels, which log through
    children of its logger) to a silent logger."""
    current = getattr(conn, "_logger", None)
    if isinstance(current, SSHLogger):
        context = getattr(current, "_context", "")
        conn._logger = SSHLogger(_SilentLogger("leakcheck.ssh_server"), context=context)


# --- the server side ----------------------------------------------------------------------------


class _Server(asyncssh.SSHServer):
    """One connection's view of the fault: reports what the client did."""

    def __init__(self, fault: SSHFault) -> None:
        self._fault = fault
        self._conn: Any = None

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        _silence(conn)
        self._conn = conn
        self._fault._connection_made(conn)

    def connection_lost(self, exc: Exception | None) -> None:
        self._fault._connections.discard(self._conn)

    def begin_auth(self, username: str) -> bool:
        self._fault._auth_began()
        return True

    def password_auth_supported(self) -> bool:
        return True

    def validate_password(self, username: str, password: str) -> bool:
        return self._fault._login("password", username == self._fault.username, password)

    def public_key_auth_supported(self) -> bool:
        return True

    def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
        fault = self._fault
        known = fault.identity_file is not None and key.public_data == _client_key().public_data
        return fault._login("public key", username == fault.username and known, None)

    def kbdint_auth_supported(self) -> bool:
        return False

    def host_based_auth_supported(self) -> bool:
        return False


def _careless_stderr(command: str, env: Mapping[str, str]) -> str:
    """What a careless remote tool prints: its argv and environment, verbatim."""
    try:
        argv = shlex.split(command)
    except ValueError:
        argv = command.split()
    inline: dict[str, str] = {}
    while argv and _ENV_ASSIGNMENT.match(argv[0]):
        key, _, value = argv.pop(0).partition("=")
        inline[key] = value
    prog = os.path.basename(argv[0]) if argv else "sh"
    args = argv[1:]
    lines = [
        f"{prog}: error: unknown flag {' '.join(args)}"
        if args
        else f"{prog}: error: no deployment target given"
    ]
    for key, value in sorted({**env, **inline}.items()):
        lines.append(f"{prog}: with environment {key}={value}")
    lines.append(f"{prog}: exiting with status 2")
    return "\n".join(lines) + "\n"


class SSHFault(Fault):
    """Force one SSH stage against a real asyncssh server on 127.0.0.1.

    Attributes for the client: ``host``, ``port``, ``username``, ``password``,
    ``known_hosts`` (a file path), ``identity_file`` (a key file path, or None),
    ``host_alias`` (a name for the host, or None), ``command``, ``env``, ``timeout`` (for
    the command: what the client waits before giving up on ``ssh_hang_after_command``) and
    ``connect_timeout`` (connect and login: at least CONNECT_BOUND, never meant to fire).
    Paths and names from an ``ssh-paths`` placement are real: the files exist under a
    temporary directory, their paths end with the placed path.
    """

    #: the stages' transports this fault forces (a Target's mistake found at collection)
    STAGE_TRANSPORTS: frozenset[str] = frozenset({"ssh"})

    transport = "ssh"

    def __init__(
        self,
        stage: str | Stage,
        *,
        placed: Placed | None = None,
        secret: SecretFactory,
        timeout: float = 0.3,
        **unknown: object,
    ) -> None:
        if unknown:
            names = ", ".join(map(plain, sorted(unknown)))
            guess = did_you_mean(names, ("timeout",)) if len(unknown) == 1 else ""
            raise UnknownOptionError(
                f"ssh fault: unknown option(s) {names}{guess}; the only option is timeout"
            )
        super().__init__(stage, placed=placed)
        if self.stage.transport != SSH:
            ssh_stages = ", ".join(s.name for s in stages_for(SSH) if s.transport == SSH)
            raise UnknownTransportError(
                f"stage {self.stage.name} is not an ssh stage; ssh stages: {ssh_stages}"
            )
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not math.isfinite(timeout)
            or timeout <= 0
        ):
            raise UnknownOptionError(
                f"ssh fault: timeout must be a positive number of seconds, not {quoted(timeout)}"
            )
        if timeout >= HANG_LETS_GO:
            # (the hung command is let go after HANG_LETS_GO s, and a client still waiting
            # then is said to have no timeout: one that used this timeout was told so,
            # found by a hunting helper)
            raise UnknownOptionError(
                f"ssh fault: timeout must be below {HANG_LETS_GO:g} s (a hung command is let "
                f"go after {HANG_LETS_GO:g} s, and a client still waiting then has no timeout "
                f"of its own), not {timeout:g}"
            )
        ssh = placed.ssh if placed is not None else None
        self.host = HOST
        self.port = 0
        self.timeout = float(timeout)
        #: connect and login: a bound, never meant to fire (no stage hangs before the
        #: login, and a passing run takes milliseconds). At 0.5 s it fired on a loaded
        #: machine (two xdist workers, an inner pytest, client and server doing their key
        #: exchange in one process): a careless client's login then never began, and its
        #: harness error named the wrong cause.
        self.connect_timeout = max(self.timeout, CONNECT_BOUND)
        self.username = (ssh.username if ssh else None) or secret("user_name")
        self.password = (ssh.password if ssh else None) or secret("ssh_password")
        self.host_alias = ssh.host_alias if ssh else None
        self.command = shlex.join([DEFAULT_COMMAND, *(ssh.command_args if ssh else ())])
        self.env: dict[str, str] = dict(ssh.env) if ssh else {}
        self.known_hosts = ""
        self.identity_file: str | None = None
        self._placed_known_hosts = ssh.known_hosts if ssh else None
        self._placed_identity = ssh.identity_file if ssh else None
        # what the server saw (written by the server thread, read by the test's)
        self.connections_seen = 0
        self.host_keys_presented = 0
        self.logins_rejected = 0
        self.logins_accepted = 0
        self.commands_received = 0
        self.host_key_ignored = False
        self._connections: set[Any] = set()
        self._dir: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._startup_error: BaseException | None = None
        self._acceptor: Any = None
        self._release: asyncio.Event | None = None
        #: the hung command's client waited HANG_LETS_GO seconds: it has no timeout
        self.gateway_never_gave_up = False
        self._closed_port: socket.socket | None = None
        self._watch: AbstractContextManager[Watcher] | None = None
        self._watcher: Watcher | None = None
        self._started = False
        self._stopped = False

    # --- lifecycle ---------------------------------------------------------------------------

    @property
    def directory(self) -> str | None:
        """Its temporary directory (known_hosts, keys) while the fault is armed, else None."""
        return self._dir

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        try:
            self._dir = tempfile.mkdtemp(prefix="leakcheck-ssh-")
            if self.stage.name == _REFUSED:
                self._bind_closed_port()
            else:
                self._start_server()
            self._write_files()
        except BaseException:
            self.stop()
            raise

    def _bind_closed_port(self) -> None:
        # Bound but never listening: a connect is refused, and no other process can take
        # the port while the fault holds it.
        self._closed_port = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._closed_port.bind((HOST, 0))
        self.port = self._closed_port.getsockname()[1]
        self._watch = watch(host=HOST, port=self.port)
        self._watcher = self._watch.__enter__()

    def _start_server(self) -> None:
        _host_key()  # keygen (cached) here, not inside the start bound
        if self._placed_identity:
            _client_key()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name=SERVER_THREAD_NAME, daemon=True)
        self._thread.start()
        if not self._ready.wait(_THREAD_BOUND):
            raise HarnessError("ssh fault: the server thread did not start listening")
        if self._startup_error is not None:
            raise HarnessError(
                "ssh fault: the server could not listen on 127.0.0.1: "
                f"{type(self._startup_error).__name__}"
            ) from self._startup_error

    def _serve(self) -> None:
        loop = self._loop
        assert loop is not None
        asyncio.set_event_loop(loop)
        # the default handler logs through "asyncio", into the test's log sink
        loop.set_exception_handler(lambda _loop, _context: None)
        try:
            try:
                self._acceptor = loop.run_until_complete(self._listen())
            except BaseException as exc:  # noqa: BLE001 (reported by start())
                self._startup_error = exc
                return
            finally:
                self._ready.set()
            loop.run_forever()
        finally:
            with contextlib.suppress(BaseException):
                pending = asyncio.all_tasks(loop)
                for task in pending:
                    task.cancel()
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.run_until_complete(loop.shutdown_default_executor())
            asyncio.set_event_loop(None)
            loop.close()

    async def _listen(self) -> Any:
        self._release = asyncio.Event()
        acceptor = await asyncssh.listen(
            HOST,
            0,
            server_factory=lambda: _Server(self),
            server_host_keys=[_host_key()],
            process_factory=self._session,
            config=None,
            gss_host=None,  # else asyncssh asks the resolver for this machine's FQDN
            gss_kex=False,
            gss_auth=False,
            allow_pty=False,
            agent_forwarding=False,
            x11_forwarding=False,
            keepalive_interval=0,
        )
        self.port = acceptor.get_port()
        return acceptor

    def stop(self) -> None:
        """Abort every open connection, close the server, stop its loop and thread.
        Idempotent; bounded."""
        if self._stopped:
            return
        self._stopped = True
        loop, thread = self._loop, self._thread
        if loop is not None and thread is not None and thread.is_alive():
            with contextlib.suppress(Exception):
                future = asyncio.run_coroutine_threadsafe(self._shutdown(), loop)
                future.result(_THREAD_BOUND)
            with contextlib.suppress(RuntimeError):  # the loop already closed
                loop.call_soon_threadsafe(loop.stop)
            thread.join(_THREAD_BOUND)
        wedged = thread is not None and thread.is_alive()
        if self._watch is not None:
            self._sync_refused()
            self._watch.__exit__(None, None, None)
            self._watch = None
        if self._closed_port is not None:
            self._closed_port.close()
            self._closed_port = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
        if wedged:
            raise HarnessError("ssh fault: the server thread did not stop")

    async def _shutdown(self) -> None:
        if self._release is not None:
            self._release.set()
        for conn in list(self._connections):
            conn.abort()
        if self._acceptor is not None:
            self._acceptor.close()
            await self._acceptor.wait_closed()

    # --- client-side files ---------------------------------------------------------------------

    def _path(self, placed: str | None, default: str) -> str:
        assert self._dir is not None
        if not placed:
            return os.path.join(self._dir, default)
        # the placed path (a local_path canary) is kept whole, under the temp directory,
        # so that a message quoting the real path quotes the canary
        path = os.path.join(self._dir, placed.lstrip("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return path

    def _write_files(self) -> None:
        names = [f"[{HOST}]:{self.port}"]
        if self.host_alias:
            names += [f"[{self.host_alias}]:{self.port}", self.host_alias]
        if self.stage.name == _MISMATCH:
            lines = [f"{name} {_public_line(_other_host_key())}" for name in names]
        elif self.stage.name == _UNKNOWN:
            # a real file with another host in it: this one is simply not there
            lines = [f"[127.0.0.2]:{self.port} {_public_line(_other_host_key())}"]
        else:
            lines = [f"{name} {_public_line(_host_key())}" for name in names]
        self.known_hosts = self._path(self._placed_known_hosts, "known_hosts")
        with open(self.known_hosts, "w", encoding="utf-8") as file:
            file.write("# written by leakcheck for one ssh fault\n" + "\n".join(lines) + "\n")
        if self._placed_identity:
            self.identity_file = self._path(self._placed_identity, "id_ed25519")
            fd = os.open(self.identity_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as file:
                file.write(_client_key().export_private_key("openssh"))

    def planted_secrets(self) -> list[Secret]:
        """The private key of the identity file this fault writes (``ssh-paths``), in the
        formats a gateway may show it in (the OpenSSH file as written, PKCS #8 and
        traditional PEM): a direct secret of the test (``LeakCheck.force`` registers it),
        searched and masked as its canaries are. None without an identity file."""
        if not self._placed_identity:
            return []
        return [
            Secret.from_user(text, kind="pem_private_key", id=f"ssh_identity_key_{name}")
            for name, text in _client_key_texts()
        ]

    # --- what the client passes --------------------------------------------------------------

    def asyncssh_options(self) -> dict[str, Any]:
        """``asyncssh.connect(**options)`` for this fault, reading nothing from ``~/.ssh``:
        no config file, no agent, no default keys, no default known_hosts or CA bundle."""
        return {
            "host": self.host,
            "port": self.port,
            "username": self.username,
            "password": self.password,
            "known_hosts": self.known_hosts,
            # None, not []: an empty list makes asyncssh load the default keys
            "client_keys": [self.identity_file] if self.identity_file else None,
            "agent_path": None,
            "agent_forwarding": False,
            "config": None,
            "x509_trusted_certs": None,
            "x509_trusted_cert_paths": [],
            "gss_kex": False,
            "gss_auth": False,
            "host_based_auth": False,
            "kbdint_auth": False,
            "connect_timeout": self.connect_timeout,
            "login_timeout": self.connect_timeout,
        }

    def paramiko_options(self) -> dict[str, Any]:
        """``SSHClient.connect(**options)`` for this fault: no agent, no keys looked up."""
        options: dict[str, Any] = {
            "hostname": self.host,
            "port": self.port,
            "username": self.username,
            "password": self.password,
            "look_for_keys": False,
            "allow_agent": False,
            "timeout": self.connect_timeout,
            "banner_timeout": self.connect_timeout,
            "auth_timeout": self.connect_timeout,
            "channel_timeout": self.connect_timeout,
        }
        if self.identity_file:
            options["key_filename"] = self.identity_file
        return options

    def paramiko_client(self) -> Any:
        """A ``paramiko.SSHClient`` that trusts only ``fault.known_hosts`` and rejects
        unknown hosts (never the machine's known_hosts)."""
        import paramiko

        client = paramiko.SSHClient()
        client.load_host_keys(self.known_hosts)
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
        return client

    # --- what the server saw (called in the server thread) -------------------------------

    def _connection_made(self, conn: Any) -> None:
        self._connections.add(conn)
        self.connections_seen += 1
        original = conn.get_server_host_key
        presented = False

        def get_server_host_key() -> Any:
            # every key exchange method asks for the host key just before it signs the
            # exchange with it and sends it: the moment the client is shown the key
            nonlocal presented
            if not presented:
                presented = True
                self._host_key_presented()
            return original()

        conn.get_server_host_key = get_server_host_key

    def _host_key_presented(self) -> None:
        self.host_keys_presented += 1
        if self.stage.name == _MISMATCH:
            self.record(
                "ssh server presented its host key in a key exchange; the client's "
                "known_hosts holds a different key for it"
            )
        elif self.stage.name == _UNKNOWN:
            self.record(
                "ssh server presented its host key in a key exchange; the client's "
                "known_hosts holds no key for it"
            )

    def _auth_began(self) -> None:
        if self.stage.name in _HOST_KEY_STAGES:
            self.host_key_ignored = True

    def _login(self, method: str, user_ok: bool, password: str | None) -> bool:
        if self.stage.name == _AUTH_REJECTED:
            self.logins_rejected += 1
            self.record(f"ssh server rejected a {method} login")
            return False
        ok = user_ok and (password is None or password == self.password)
        if ok:
            self.logins_accepted += 1
        else:
            self.logins_rejected += 1
        return ok

    async def _session(self, process: asyncssh.SSHServerProcess) -> None:
        command = process.command or ""
        env = dict(process.env)
        self.commands_received += 1
        size = len(command.encode("utf-8", "surrogateescape"))
        try:
            if self.stage.name == _HANG:
                self.record(
                    f"ssh server received a command ({size} bytes) and sends nothing back "
                    "until the fault stops"
                )
                assert self._release is not None
                try:
                    # a gateway with no timeout of its own waited forever, and the run
                    # with it (a CI job killed at its limit, a temp directory left)
                    await asyncio.wait_for(self._release.wait(), HANG_LETS_GO)
                except asyncio.TimeoutError:
                    self.gateway_never_gave_up = True
                    process.exit(255)
            elif self.stage.name == _COMMAND_FAILED:
                self.record(
                    f"ssh server received a command ({size} bytes, {len(env)} environment "
                    "variables) and failed it with exit status 2 and a stderr message"
                )
                process.stderr.write(_careless_stderr(command, env))
                process.exit(2)
            else:  # a client that got past a stage meant to stop it
                process.exit(0)
        except (OSError, asyncssh.Error):
            pass  # the connection went away (the fault stopped): nothing left to answer

    # --- verdict -------------------------------------------------------------------------------

    def _sync_refused(self) -> None:
        watcher = self._watcher
        if watcher is not None and watcher.connects and not self.evidence:
            self.record("a client's connection to the closed ssh port was refused")

    @property
    def fired(self) -> bool:
        if self.gateway_never_gave_up:  # (the stage proved the gateway has no timeout)
            return False
        if self.stage.name == _REFUSED:
            self._sync_refused()
        if self.stage.name in _HOST_KEY_STAGES and self.host_key_ignored:
            return False
        return bool(self.evidence)

    def not_reached_reason(self) -> str:
        name = self.stage.name
        where = f"{self.host}:{self.port}"
        if self.gateway_never_gave_up:
            return (
                f"the gateway waited {HANG_LETS_GO:g} s for the hung command with no timeout "
                "of its own, until the ssh server let go: give its client a timeout "
                "(fault.timeout) so that the agent is not left waiting"
            )
        if name == _REFUSED:
            return f"nothing tried to connect to fault.host:fault.port ({where})"
        if not self.connections_seen:
            return f"no client connected to the ssh server at fault.host:fault.port ({where})"
        if name in _HOST_KEY_STAGES:
            if self.host_key_ignored:
                return (
                    "the client was shown a host key its known_hosts does not trust and "
                    "logged in anyway: it does not check host keys against "
                    "fault.known_hosts (use fault.paramiko_client() or "
                    "fault.asyncssh_options())"
                )
            return "a client connected but the key exchange never began"
        if name == _AUTH_REJECTED:
            return (
                "a client connected but never tried to log in with a password or key "
                "(did it refuse the host key? use fault.known_hosts)"
            )
        if not self.logins_accepted:
            if self.logins_rejected:
                return (
                    "the ssh server rejected every login: log in as fault.username with "
                    "fault.password"
                )
            return "a client connected but never logged in (use fault.known_hosts)"
        return "the client logged in but never ran a command"


FAULTS: dict[str, Callable[..., Fault]] = {"ssh": SSHFault}
