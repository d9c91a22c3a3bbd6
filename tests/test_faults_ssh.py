"""The SSH fault transport (``leakcheck.plugins.ssh_server``): a loopback asyncssh server in
its own thread, forcing each SSH stage against asyncssh and paramiko clients.

Assertions never render a canary: a failed ``assert x in y`` would print both strings, so
membership is computed first and only a boolean (or a masked text) reaches the message.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shlex
import socket
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import asyncssh
import paramiko
import pytest
from conftest import QUIET_INNER_ARGS, assert_inner_run_safe, inner_outcomes, self_scan
from leakcheck.plugins import ssh_server
from leakcheck.plugins.ssh_server import SERVER_THREAD_NAME, SSHFault

from leakcheck import CanaryFactory
from leakcheck.errors import UnknownOptionError
from leakcheck.faults import StageNotReached, UnknownTransportError
from leakcheck.harness import LeakCheck
from recorders import ssh as ssh_recorder

pytest_plugins = ["pytester"]

SEED = "ssh-faults-1"
SSH_STAGES = [
    "ssh_auth_rejected",
    "ssh_host_key_mismatch",
    "ssh_unknown_host_key",
    "ssh_command_failed",
    "ssh_hang_after_command",
    "ssh_connection_refused",
]
#: the part of the evidence each stage must record
EVIDENCE = {
    "ssh_auth_rejected": "rejected a password login",
    "ssh_host_key_mismatch": "known_hosts holds a different key",
    "ssh_unknown_host_key": "known_hosts holds no key",
    "ssh_command_failed": "received a command",
    "ssh_hang_after_command": "received a command",
    "ssh_connection_refused": "refused",
}


@pytest.fixture
def lc(request: pytest.FixtureRequest) -> Iterator[LeakCheck]:
    """A check with no global sinks: these tests judge the fault, not a gateway."""
    check = LeakCheck(seed=SEED, namespace=request.node.nodeid, sinks=[])
    try:
        yield check
    finally:
        check.stop()


def caught(call: Callable[[], Any]) -> BaseException | None:
    try:
        call()
    except Exception as exc:  # noqa: BLE001 (judged by the caller)
        return exc
    return None


def assert_is(lc: LeakCheck, exc: BaseException | None, expected: Any) -> None:
    ok = isinstance(exc, expected)
    assert ok, f"expected {expected}, got " + lc.mask(repr(exc))


def holds(haystack: str, needle: str) -> bool:
    return needle in haystack


@contextlib.contextmanager
def scanned() -> Iterator[None]:
    """Re-raise a self-scan failure from here: pytest's long traceback shows each frame's
    arguments, and ``self_scan``'s first argument is the unmasked text."""
    try:
        yield
    except AssertionError as exc:
        raise AssertionError(str(exc)) from None


async def asyncssh_run(fault: SSHFault, **overrides: Any) -> asyncssh.SSHCompletedProcess:
    options = {**fault.asyncssh_options(), **overrides}
    async with asyncssh.connect(**options) as conn:
        return await conn.run(fault.command, env=fault.env, check=True, timeout=fault.timeout)


def asyncssh_call(fault: SSHFault, **overrides: Any) -> asyncssh.SSHCompletedProcess:
    return asyncio.run(asyncssh_run(fault, **overrides))


def paramiko_call(fault: SSHFault, command: str | None = None) -> tuple[int, str]:
    """Run the command as a gateway would: (exit status, stderr)."""
    client = fault.paramiko_client()
    try:
        client.connect(**fault.paramiko_options())
        _stdin, stdout, stderr = client.exec_command(
            command or fault.command, environment=fault.env, timeout=fault.timeout
        )
        stdout.read()
        return stdout.channel.recv_exit_status(), stderr.read().decode("utf-8")
    finally:
        client.close()


def assert_proven(lc: LeakCheck, fault: SSHFault) -> None:
    assert fault.fired, lc.mask(fault.not_reached_reason())
    text = "\n".join(fault.evidence)
    with scanned():
        self_scan(text + fault.describe(), lc.secrets, "fault evidence")
    expected = holds(text, EVIDENCE[fault.stage.name])
    assert expected, lc.mask(text)


# --- each stage, each client ------------------------------------------------------------------

ASYNCSSH_ERRORS = {
    "ssh_auth_rejected": asyncssh.PermissionDenied,
    "ssh_host_key_mismatch": asyncssh.HostKeyNotVerifiable,
    "ssh_unknown_host_key": asyncssh.HostKeyNotVerifiable,
    "ssh_hang_after_command": TimeoutError,
    "ssh_connection_refused": ConnectionRefusedError,
}
PARAMIKO_ERRORS = {
    "ssh_auth_rejected": paramiko.AuthenticationException,
    "ssh_host_key_mismatch": paramiko.BadHostKeyException,
    "ssh_unknown_host_key": paramiko.SSHException,
    "ssh_hang_after_command": TimeoutError,
    "ssh_connection_refused": OSError,  # NoValidConnectionsError
}


@pytest.mark.parametrize("stage", sorted(ASYNCSSH_ERRORS))
def test_asyncssh_fails_the_expected_way(lc: LeakCheck, stage: str) -> None:
    fault = lc.force(stage, via="ssh", placement="ssh-command-args")
    assert isinstance(fault, SSHFault)
    started = time.perf_counter()
    exc = caught(lambda: asyncssh_call(fault))
    elapsed = time.perf_counter() - started
    assert_is(lc, exc, ASYNCSSH_ERRORS[stage])
    assert_proven(lc, fault)
    if stage == "ssh_hang_after_command":
        # the server held the command: only the client's own timeout ended the call
        assert fault.timeout * 0.9 <= elapsed < fault.timeout + 0.5
        assert fault.commands_received == 1
    if stage in ("ssh_host_key_mismatch", "ssh_unknown_host_key"):
        assert fault.host_keys_presented == 1 and fault.logins_accepted == 0
        assert not fault.host_key_ignored


@pytest.mark.parametrize("stage", sorted(PARAMIKO_ERRORS))
def test_paramiko_fails_the_expected_way(lc: LeakCheck, stage: str) -> None:
    fault = lc.force(stage, via="ssh", placement="ssh-command-args")
    assert isinstance(fault, SSHFault)
    exc = caught(lambda: paramiko_call(fault))
    assert_is(lc, exc, PARAMIKO_ERRORS[stage])
    if stage == "ssh_unknown_host_key":
        # missing, not mismatching: RejectPolicy's SSHException, not BadHostKeyException
        assert not isinstance(exc, paramiko.BadHostKeyException)
    assert_proven(lc, fault)


def test_a_gateway_with_no_timeout_is_let_go_and_said(
    lc: LeakCheck, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hung command under a client with no timeout of its own waited forever, and the
    run with it. The server lets go (HANG_LETS_GO: 5 s; 0.3 here) and the case says why:
    never a pass, never a hang."""
    monkeypatch.setattr(ssh_server, "HANG_LETS_GO", 0.3)
    fault = lc.force("ssh_hang_after_command", via="ssh", placement="ssh-command-args", timeout=0.2)
    client = fault.paramiko_client()
    started = time.perf_counter()
    try:
        client.connect(**fault.paramiko_options())
        _stdin, stdout, _stderr = client.exec_command(fault.command)  # no timeout
        status = stdout.channel.recv_exit_status()
    finally:
        client.close()
    assert time.perf_counter() - started < 5 and status == 255
    assert not fault.fired
    said = lc.harness_errors()
    assert "waited 0.3 s for the hung command with no timeout of its own" in said


def test_command_failed_reflects_args_asyncssh(lc: LeakCheck) -> None:
    fault = lc.force("ssh_command_failed", via="ssh", placement="ssh-command-args")
    assert isinstance(fault, SSHFault)
    token = fault.placed.ssh.command_args[1]  # type: ignore[union-attr]
    exc = caught(lambda: asyncssh_call(fault))
    assert_is(lc, exc, asyncssh.ProcessError)
    assert isinstance(exc, asyncssh.ProcessError)
    assert exc.exit_status == 2
    reflected = holds(exc.stderr, f"deploy: error: unknown flag --token {token}")
    assert reflected, "stderr does not reflect the command line"
    carried = holds(fault.command, token) or holds(fault.command, shlex.quote(token))
    assert carried, "fault.command does not carry the placed arguments"
    assert_proven(lc, fault)


def test_command_failed_reflects_env_paramiko(lc: LeakCheck) -> None:
    fault = lc.force("ssh_command_failed", via="ssh", placement="ssh-env")
    assert isinstance(fault, SSHFault)
    assert sorted(fault.env) == ["API_TOKEN", "DEPLOY_KEY"]
    status, stderr = paramiko_call(fault)
    assert status == 2
    for key, value in fault.env.items():
        reflected = holds(stderr, f"{key}={value}")
        assert reflected, f"stderr does not reflect {key}"
    assert_proven(lc, fault)
    assert "2 environment variables" in fault.evidence[0]


def test_command_failed_reflects_inline_env_assignments(lc: LeakCheck) -> None:
    """``KEY=value command`` (env assignments on the command line, the way gateways
    dodge sshd's AcceptEnv) is reflected as well."""
    fault = lc.force("ssh_command_failed", via="ssh", placement="ssh-env")
    assert isinstance(fault, SSHFault)
    line = " ".join(f"{k}={shlex.quote(v)}" for k, v in fault.env.items()) + " deploy"
    fault.env = {}
    status, stderr = paramiko_call(fault, command=line)
    assert status == 2
    secret_env = fault.placed.ssh.env  # type: ignore[union-attr]
    assert all(holds(stderr, f"{k}={v}") for k, v in secret_env.items())


# --- what a gateway's wrapper makes of it ----------------------------------------------------


def gateway_tool(fault: SSHFault, client: str, careful: bool) -> dict[str, Any]:
    """A tool call over SSH, wrapped carelessly (the library's text and the remote stderr
    handed to the agent) or carefully (an envelope of gateway-owned words)."""
    try:
        if client == "asyncssh":
            asyncssh_call(fault)
            return {"ok": True}
        status, stderr = paramiko_call(fault)
    except Exception as exc:  # noqa: BLE001 (a gateway's catch-all)
        if careful:
            code = "AUTH_FAILED" if "ermission" in type(exc).__name__ else "REMOTE_REJECTED"
            return {"ok": False, "code": code, "action": "stop_and_report", "retryable": False}
        return {"error": str(exc), "stderr": getattr(exc, "stderr", None)}
    if status == 0:
        return {"ok": True}
    if careful:
        return {"ok": False, "code": "REMOTE_REJECTED", "action": "stop_and_report"}
    return {"error": f"remote command exited with status {status}", "stderr": stderr}


@pytest.mark.parametrize(
    ("client", "stage", "placement", "leaked"),
    [
        ("asyncssh", "ssh_command_failed", "ssh-command-args", {"bearer#1"}),
        ("paramiko", "ssh_command_failed", "ssh-env", {"api_key#1", "bearer#1"}),
        ("asyncssh", "ssh_auth_rejected", "ssh-password", {"user_name#1"}),
    ],
)
def test_leaky_wrapper_leaks_and_careful_wrapper_passes(
    request: pytest.FixtureRequest, client: str, stage: str, placement: str, leaked: set[str]
) -> None:
    found = {}
    for careful in (False, True):
        namespace = f"{request.node.nodeid}/{careful}"
        check = LeakCheck(seed=SEED, namespace=namespace, sinks=[])
        try:
            fault = check.force(stage, via="ssh", placement=placement)
            assert isinstance(fault, SSHFault)
            check.expose(gateway_tool(fault, client, careful))
            assert fault.fired
            found[careful] = {leak.finding.secret_id for leak in check.violations()}
        finally:
            check.stop()
    assert leaked <= found[False], f"the leaky wrapper's response: only {found[False]} found"
    assert found[True] == set()


# --- isolation from the machine's ~/.ssh ------------------------------------------------------


@pytest.fixture
def hostile_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A HOME whose ~/.ssh would change any client that read it: a config that does not
    parse, a default key the server would see offered, a known_hosts that trusts the test
    server, and an agent socket that records a connection."""
    ssh = tmp_path / ".ssh"
    ssh.mkdir()
    (ssh / "config").write_text("Host *\n  Port notanumber\n")
    key = asyncssh.generate_private_key("ssh-ed25519")
    key.write_private_key(str(ssh / "id_ed25519"))
    key.write_public_key(str(ssh / "id_ed25519.pub"))
    agent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    agent.bind(str(tmp_path / "agent.sock"))
    agent.listen()
    asked: list[int] = []

    def fake_agent() -> None:
        # hangs up on every client at once: a client that asks waits for nothing
        while True:
            try:
                conn, _ = agent.accept()
            except OSError:
                return
            asked.append(1)
            conn.close()

    thread = threading.Thread(target=fake_agent, name="fake-ssh-agent")
    thread.start()
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("SSH_AUTH_SOCK", str(tmp_path / "agent.sock"))
    try:
        yield tmp_path
    finally:
        agent.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        agent.close()
        thread.join(0.5)
    assert not thread.is_alive()
    assert not asked, "a client asked the SSH agent of the machine"


def _trust_in_home(home: Path, fault: SSHFault) -> None:
    line = ssh_server._public_line(ssh_server._host_key())
    (home / ".ssh" / "known_hosts").write_text(f"[127.0.0.1]:{fault.port} {line}\n")


def test_clients_ignore_home_ssh(lc: LeakCheck, hostile_home: Path) -> None:
    fault = lc.force("ssh_command_failed", via="ssh")
    assert isinstance(fault, SSHFault)
    exc = caught(lambda: asyncssh_call(fault))  # a parsed config would raise instead
    assert_is(lc, exc, asyncssh.ProcessError)
    status, _ = paramiko_call(fault)
    assert status == 2
    # a default key offered would have been a rejected public key login
    assert (fault.logins_accepted, fault.logins_rejected) == (2, 0)
    options = fault.asyncssh_options()
    assert options["client_keys"] is None and options["agent_path"] is None
    assert options["config"] is None
    paramiko_options = fault.paramiko_options()
    assert not paramiko_options["look_for_keys"] and not paramiko_options["allow_agent"]


def test_home_known_hosts_is_not_trusted(lc: LeakCheck, hostile_home: Path) -> None:
    fault = lc.force("ssh_unknown_host_key", via="ssh")
    assert isinstance(fault, SSHFault)
    _trust_in_home(hostile_home, fault)
    assert_is(lc, caught(lambda: asyncssh_call(fault)), asyncssh.HostKeyNotVerifiable)
    assert_is(lc, caught(lambda: paramiko_call(fault)), paramiko.SSHException)
    assert fault.logins_accepted == 0 and fault.fired


# --- placements: paths, user name, host alias -------------------------------------------------


def test_ssh_paths_placement_gives_real_files(lc: LeakCheck) -> None:
    fault = lc.force("ssh_command_failed", via="ssh", placement="ssh-paths")
    assert isinstance(fault, SSHFault)
    placed = fault.placed.ssh  # type: ignore[union-attr]
    same = fault.username == placed.username and fault.host_alias == placed.host_alias
    assert same, "the placed user name and host alias are not the fault's"
    assert fault.identity_file is not None
    # the real files' paths carry the placed paths whole: quoting them quotes the canary
    whole = holds(fault.identity_file, placed.identity_file) and holds(
        fault.known_hosts, placed.known_hosts
    )
    assert whole, "the files' paths do not end with the placed paths"
    assert Path(fault.identity_file).stat().st_mode & 0o777 == 0o600
    # a key login with the placed identity file, checked against the placed host alias
    client = fault.paramiko_client()
    sock = socket.create_connection((fault.host, fault.port), timeout=fault.connect_timeout)
    try:
        options = {**fault.paramiko_options(), "password": None, "hostname": fault.host_alias}
        client.connect(sock=sock, **options)
        _stdin, stdout, _stderr = client.exec_command(fault.command, timeout=fault.timeout)
        assert stdout.channel.recv_exit_status() == 2
    finally:
        client.close()
        sock.close()
    assert fault.logins_accepted == 1 and fault.fired
    directory = Path(fault.known_hosts).parent
    lc.stop()
    assert not directory.exists(), "the fault's temporary files outlive it"


@pytest.mark.parametrize("shown", ["file", "pkcs8", "none"])
def test_the_identity_files_private_key_is_a_secret_of_the_test(lc: LeakCheck, shown: str) -> None:
    """The ``ssh-paths`` placement hands the gateway a real private key (its identity
    file): a gateway that shows the key, as the file holds it or exported as PKCS #8,
    leaks it, and leakcheck's reports mask it. It was registered nowhere: such a test
    passed, and ``-rA`` printed the key (found by a hunting helper)."""
    fault = lc.force("ssh_command_failed", via="ssh", placement="ssh-paths")
    assert isinstance(fault, SSHFault) and fault.identity_file is not None
    text = Path(fault.identity_file).read_text(encoding="ascii")
    key = asyncssh.read_private_key(fault.identity_file)
    exposed = {
        "file": {"debug_key": text},
        "pkcs8": {"detail": key.export_private_key("pkcs8-pem").decode()},
        "none": {"detail": f"login with {Path(fault.identity_file).name} refused"},
    }[shown]
    lc.expose(exposed)
    with contextlib.suppress(Exception):
        asyncssh_call(fault)  # (the stage fires: its proof is the login)
    leaked = {leak.finding.secret_id for leak in lc.violations()}
    planted = [s for s in lc.secrets if s.id.startswith("ssh_identity_key_")]
    assert planted, "the identity file's key is no secret of the test"
    assert bool(leaked & {s.id for s in planted}) is (shown != "none"), leaked
    self_scan(lc.report(), planted, "the report")


# --- usable from async code -------------------------------------------------------------------


@pytest.mark.anyio
async def test_usable_from_an_async_test(leakcheck: LeakCheck) -> None:
    """The real fixture, an event loop already running in this thread: the server's own
    loop lives in its thread, so this one only drives the client."""
    fault = leakcheck.force("ssh_command_failed", via="ssh")
    assert isinstance(fault, SSHFault)
    assert threading.current_thread() is threading.main_thread()
    with pytest.raises(asyncssh.ProcessError) as info:
        await asyncssh_run(fault)
    assert info.value.exit_status == 2
    assert fault.fired


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# --- teardown ---------------------------------------------------------------------------------


def test_stop_aborts_open_connections(lc: LeakCheck) -> None:
    before = set(threading.enumerate())
    fault = lc.force("ssh_command_failed", via="ssh")
    assert isinstance(fault, SSHFault)

    async def connected_then_stopped() -> None:
        async with asyncssh.connect(**fault.asyncssh_options()) as conn:
            client = fault.paramiko_client()
            client.connect(**fault.paramiko_options())
            transport = client.get_transport()
            assert transport is not None and transport.is_active()
            started = time.perf_counter()
            fault.stop()
            assert time.perf_counter() - started < 0.5
            await asyncio.wait_for(conn.wait_closed(), 0.5)  # asyncssh saw it go
            transport.join(0.5)  # paramiko's reader thread ends on the lost connection
            assert not transport.is_alive()
            client.close()
            with pytest.raises((asyncssh.ChannelOpenError, asyncssh.DisconnectError)):
                await conn.run("deploy", timeout=fault.timeout)

    asyncio.run(connected_then_stopped())
    left = {t.name for t in set(threading.enumerate()) - before}
    assert not left, f"threads left behind: {left}"
    fault.stop()  # idempotent


def test_hang_is_released_and_no_thread_is_left(lc: LeakCheck) -> None:
    before = set(threading.enumerate())
    fault = lc.force("ssh_hang_after_command", via="ssh")
    assert isinstance(fault, SSHFault)
    assert [t.name for t in threading.enumerate()].count(SERVER_THREAD_NAME) == 1
    assert_is(lc, caught(lambda: asyncssh_call(fault)), TimeoutError)
    started = time.perf_counter()
    lc.stop()  # the held session is still open on the server
    assert time.perf_counter() - started < 0.5
    left = {t.name for t in set(threading.enumerate()) - before}
    assert not left, f"threads left behind: {left}"
    assert fault.fired


def test_refused_port_is_released(lc: LeakCheck) -> None:
    fault = lc.force("ssh_connection_refused", via="ssh")
    assert isinstance(fault, SSHFault)
    port = fault.port
    assert_is(lc, caught(lambda: asyncssh_call(fault)), ConnectionRefusedError)
    lc.stop()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", port))  # the fault no longer holds it
    assert fault.fired


def test_server_log_records_stay_out_of_the_tests_sinks(request: pytest.FixtureRequest) -> None:
    """The log sink would take the server's records (which carry the command) for the
    gateway's: they are never made. paramiko logs no command, so every record here
    carrying a canary would be the server's."""
    from leakcheck.capture import LoggingSink

    check = LeakCheck(seed=SEED, namespace=request.node.nodeid, sinks=[LoggingSink()])
    check.start()
    try:
        fault = check.force("ssh_command_failed", via="ssh", placement="ssh-env")
        assert isinstance(fault, SSHFault)
        status, _ = paramiko_call(fault)
        assert status == 2
        leaks = [leak.finding.secret_id for leak in check.findings()]
    finally:
        check.stop()
    assert fault.fired and not leaks, f"log records leak {leaks}"


# --- a fault that never fired -----------------------------------------------------------------


@pytest.mark.parametrize("stage", SSH_STAGES)
def test_untriggered_fault_is_not_reached(lc: LeakCheck, stage: str) -> None:
    fault = lc.force(stage, via="ssh")
    assert not fault.fired
    with pytest.raises(StageNotReached) as info:
        fault.assert_fired()
    message = str(info.value)
    with scanned():
        self_scan(message, lc.secrets, "harness error")
    assert f"stage {stage} via ssh was never reached" in message
    assert "connect" in message


INNER = """
import asyncio, hashlib
import asyncssh, pytest

def proof(request, value):
    name = "proof-" + request.node.name + ".txt"
    open(name, "w").write(hashlib.sha256(value.encode()).hexdigest())

async def run(options, command):
    async with asyncssh.connect(**options) as conn:
        return await conn.run(command, timeout=0.3)

def test_never_connects(request, leakcheck):
    fault = leakcheck.force("ssh_command_failed", via="ssh")
    proof(request, fault.password)

def test_wrong_password(request, leakcheck):
    fault = leakcheck.force("ssh_hang_after_command", via="ssh")
    proof(request, fault.password)
    options = {**fault.asyncssh_options(), "password": "not the password"}
    with pytest.raises(asyncssh.PermissionDenied):
        asyncio.run(run(options, fault.command))

def test_host_key_not_checked(request, leakcheck):
    fault = leakcheck.force("ssh_host_key_mismatch", via="ssh")
    proof(request, fault.password)
    options = {**fault.asyncssh_options(), "known_hosts": None}  # checks nothing
    asyncio.run(run(options, fault.command))

# (asyncssh's own PermissionDenied names the user: a test of the fault firing, no
# gateway between; an error pytest.raises catches is judged as one that reached the caller)
@pytest.mark.leakcheck(skip_sinks={"exception": "asyncssh's own error, no gateway"})
def test_fired(request, leakcheck):
    fault = leakcheck.force("ssh_auth_rejected", via="ssh")
    proof(request, fault.password)
    with pytest.raises(asyncssh.PermissionDenied):
        asyncio.run(run(fault.asyncssh_options(), fault.command))
"""
INNER_IDS = ["test_never_connects", "test_wrong_password", "test_host_key_not_checked"]


def test_untriggered_fault_fails_the_inner_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner_ssh=textwrap.dedent(INNER))
    seed = "ssh-inner-1"
    result = pytester.runpytest(*QUIET_INNER_ARGS, "-rA", f"--leakcheck-seed={seed}")
    ids = [*INNER_IDS, "test_fired"]
    factories = {t: CanaryFactory(seed, namespace=f"test_inner_ssh.py::{t}") for t in ids}
    users = {t: f.secret("user_name") for t, f in factories.items()}
    passwords = [factories[t].secret("ssh_password") for t in ids]
    with scanned():
        assert_inner_run_safe(pytester, result, passwords, ids)
        self_scan("\n".join(result.outlines + result.errlines), users.values(), "inner output")
    outcomes = inner_outcomes(result)
    assert outcomes == {**dict.fromkeys(INNER_IDS, "FAILED"), "test_fired": "PASSED"}
    out = result.stdout.str()
    for stage, reason in [
        ("ssh_command_failed", "no client connected to the ssh server"),
        ("ssh_hang_after_command", "the ssh server rejected every login"),
        ("ssh_host_key_mismatch", "logged in anyway: it does not check host keys"),
    ]:
        assert f"harness error: stage {stage} via ssh was never reached" in out
        assert reason in out


# --- user mistakes ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stage", "options", "error", "words"),
    [
        ("ssh_auth_rejected", {"timeout": -1}, UnknownOptionError, "timeout must be a positive"),
        ("ssh_auth_rejected", {"timeout": "1"}, UnknownOptionError, "timeout must be a positive"),
        # (a hung command is let go after 5 s: a client that used such a timeout was told it
        # had none, found by a hunting helper)
        ("ssh_hang_after_command", {"timeout": 6}, UnknownOptionError, "timeout must be below 5"),
        ("ssh_auth_rejected", {"port": 22}, TypeError, "unknown option(s) port"),
        ("http_401", {}, UnknownTransportError, "not an ssh stage; ssh stages: ssh_auth"),
    ],
)
def test_bad_options_are_clear_errors(
    lc: LeakCheck, stage: str, options: dict[str, Any], error: type, words: str
) -> None:
    with pytest.raises(error) as info:
        lc.force(stage, via="ssh", **options)
    with scanned():
        self_scan(str(info.value), lc.secrets, "error message")
    assert words in str(info.value)
    assert SERVER_THREAD_NAME not in {t.name for t in threading.enumerate()}


# --- the exception-text corpus ----------------------------------------------------------------


def test_exception_corpus_matches_this_machine() -> None:
    data, secrets = ssh_recorder.record()
    path = resources.files("leakcheck.corpora").joinpath("exceptions", "ssh.json")
    text = path.read_text("utf-8")
    with scanned():
        self_scan(text, secrets, "corpora/exceptions/ssh.json")
    on_disk = json.loads(text)
    assert set(data["texts"]) == {"asyncssh", "paramiko"}
    assert all(set(texts) == set(SSH_STAGES) for texts in data["texts"].values())
    differ = sorted(
        f"{client}/{stage}"
        for client, texts in data["texts"].items()
        for stage, value in texts.items()
        if on_disk.get("texts", {}).get(client, {}).get(stage) != value
    )
    same = on_disk == data
    assert same, (
        "corpora/exceptions/ssh.json does not match what this machine's SSH libraries "
        f"produce (recorded with {on_disk.get('versions')}, installed {data['versions']}; "
        f"texts that differ: {differ or 'none'}). If the change is expected, review it "
        "and regenerate: python scripts/record_ssh_exceptions.py"
    )
