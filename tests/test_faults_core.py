"""The fault vocabulary without any transport: stages, placements, upstream replies, the
gateway-side test doubles, the socket watcher, and the harness error for a stage that was
never reached (in ``LeakCheck`` and through the pytest plugin)."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import pytest
from conftest import assert_inner_run_safe, inner_outcomes

from leakcheck import CanaryFactory
from leakcheck.doubles import InternalError, VaultLockedError
from leakcheck.faults import (
    GatewayFault,
    StageNotReached,
    UnknownTransportError,
    make_fault,
    reply_for,
)
from leakcheck.harness import LeakCheck
from leakcheck.netwatch import failing_dns, watch
from leakcheck.placements import (
    PLACEMENTS,
    UnknownPlacementError,
    get_placement,
    placements_for,
)
from leakcheck.stages import (
    HTTP_ANSWERED,
    HTTP_RAISED,
    STAGES,
    UnknownStageError,
    get_stage,
    stages_for,
)

pytest_plugins = ["pytester"]

GATEWAY_STAGES = [s for s in STAGES.values() if s.gateway_side]
ANSWERED = [
    "http_401",
    "http_403",
    "http_429",
    "http_5xx",
    "malformed_json",
    "html_login_page",
    "redirect_signed_url",
    "truncated_body",
]


def _check() -> LeakCheck:
    return LeakCheck(seed="faults-core", sinks=[])


# --- stages -------------------------------------------------------------------------------


def test_every_stage_of_the_issue_is_named() -> None:
    wanted = {
        "invalid_input", "vault_locked", "approval_declined", "gateway_exception",
        "http_401", "http_403", "http_429", "http_5xx", "dns_failure", "connection_refused",
        "tls_hostname_mismatch", "tls_untrusted_ca", "timeout_before_send",
        "timeout_after_send", "reset_after_send", "truncated_body", "malformed_json",
        "html_login_page", "redirect_signed_url", "ssh_auth_rejected",
        "ssh_host_key_mismatch", "ssh_unknown_host_key", "ssh_command_failed",
        "ssh_hang_after_command", "ssh_connection_refused",
    }  # fmt: skip
    assert set(STAGES) == wanted


def test_boundaries_follow_the_call_life() -> None:
    # what the protected-record check holds gateways to: before send means no bytes left
    assert get_stage("timeout_before_send").bytes_sent is False
    assert get_stage("timeout_after_send").bytes_sent is True
    assert get_stage("timeout_after_send").response_received is False
    assert get_stage("http_429").response_received is True
    assert get_stage("http_429").http_status == 429
    assert get_stage("dns_failure").http_status is None
    for stage in STAGES.values():
        if stage.response_received:
            assert stage.bytes_sent, stage.name
        if stage.http_status is not None:
            assert stage.transport == "http" and stage.response_received, stage.name


def test_stages_for_a_transport_include_the_gateway_side() -> None:
    http = {s.name for s in stages_for("http")}
    ssh = {s.name for s in stages_for("ssh")}
    assert "vault_locked" in http and "vault_locked" in ssh
    assert "http_401" in http and "http_401" not in ssh
    assert "ssh_auth_rejected" in ssh and "ssh_auth_rejected" not in http


def test_answered_and_raised_http_stages() -> None:
    assert HTTP_ANSWERED == set(ANSWERED) - {"truncated_body"}
    assert HTTP_RAISED == {
        "dns_failure", "connection_refused", "tls_hostname_mismatch", "tls_untrusted_ca",
        "timeout_before_send", "timeout_after_send", "reset_after_send",
    }  # fmt: skip


def test_unknown_stage_lists_the_known_ones() -> None:
    with pytest.raises(UnknownStageError, match="known stages: invalid_input"):
        get_stage("http_418")


# --- placements ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(PLACEMENTS))
def test_every_placement_plants_registered_canaries(name: str) -> None:
    check = _check()
    placed = check.place(name)
    assert set(placed.secrets) == set(get_placement(name).kinds)
    registered = {s.value for s in check.secrets}
    assert set(placed.secrets.values()) <= registered
    # the base credential is in every placement, as a template and rendered
    assert placed.auth.headers[0] == ("Authorization", "Bearer {bearer}")
    # rendered from what the vault holds (damaged where a malformed placement says)
    headers, _, _ = placed.auth.render(placed.credentials.__getitem__)
    same = headers == placed.request_headers  # compared without showing the values
    assert same, "the rendered templates differ from the placed request headers"
    carried = placed.secrets["bearer"] in placed.request_headers[0][1]
    assert carried, "the Authorization header does not carry the bearer canary"


def test_placement_pieces_land_where_they_say() -> None:
    check = _check()
    userinfo = check.place("url-userinfo")
    assert userinfo.userinfo == (userinfo.secrets["user_name"], userinfo.secrets["password"])
    odd = check.place("odd-case-headers")
    names = [k for k, _ in odd.request_headers]
    assert "x-Api-KEY" in names and "X-API-Key" in names
    cookies = check.place("upstream-set-cookie")
    assert sum(1 for k, _ in cookies.reply_headers if k.lower() == "set-cookie") == 2
    ssh = check.place("ssh-env")
    assert set(ssh.ssh.env) == {"API_TOKEN", "DEPLOY_KEY"}
    chain = check.place("exception-chain")
    cause = chain.cause_exception()
    assert isinstance(cause, ConnectionError)
    assert chain.secrets["api_key"] in str(cause)
    assert "{" in str(cause) and "{bearer}" not in str(cause)  # literal braces, rendered kinds


def test_placed_repr_shows_no_value() -> None:
    check = _check()
    for name in PLACEMENTS:
        placed = check.place(name)
        text = repr(placed) + repr(placed.ssh) + repr(placed.auth)
        assert not any(v in text for v in placed.secrets.values()), name


def test_placements_by_transport() -> None:
    http = {p.where for p in placements_for("http")}
    ssh = {p.where for p in placements_for("ssh")}
    assert "ssh" not in http and "upstream" in http
    assert "upstream" not in ssh and "ssh" in ssh


def test_unknown_placement_lists_the_known_ones() -> None:
    with pytest.raises(UnknownPlacementError, match="authorization-header"):
        get_placement("in-a-bottle")


# --- upstream replies ---------------------------------------------------------------------


@pytest.mark.parametrize("stage", ANSWERED)
def test_answered_stages_have_a_reply(stage: str) -> None:
    reply = reply_for(stage, _check().secret)
    assert reply is not None
    expected = get_stage(stage).http_status
    assert reply.status == expected
    assert reply.body


def test_unanswered_stages_have_none() -> None:
    for stage in ("dns_failure", "timeout_after_send", "vault_locked"):
        assert reply_for(stage, _check().secret) is None


def test_retry_after_and_signed_redirect() -> None:
    check = _check()
    assert reply_for("http_429", check.secret).header("retry-after") == "7"  # type: ignore[union-attr]
    redirect = reply_for("redirect_signed_url", check.secret)
    assert redirect is not None
    location = redirect.header("Location") or ""
    signature = next(s.value for s in check.secrets if s.kind == "signature")
    assert location.startswith("https://") and signature in location


def test_reply_takes_the_placement_pieces_and_reflects() -> None:
    check = _check()
    placed = check.place("upstream-prose")
    reply = reply_for("http_401", check.secret, placed)
    assert reply is not None and placed.secrets["prose"].encode() in reply.body
    reflect = check.place("upstream-reflects-request")
    reply = reply_for("http_403", check.secret, reflect)
    assert reply is not None and reply.reflect_request
    token = reflect.secrets["bearer"]
    body = reply.reflected("POST", "https://api.upstream.test/v1", [("Authorization", token)])
    assert token.encode() in body and body.startswith(reply.body)
    plain = reply_for("http_403", check.secret)
    assert plain is not None and plain.reflected("GET", "/", [("A", token)]) == plain.body


# --- gateway-side faults and their doubles -------------------------------------------------


def test_vault_locked_fires_only_when_asked() -> None:
    check = _check()
    fault = check.force("vault_locked", placement="url-userinfo")
    assert isinstance(fault, GatewayFault)
    assert not fault.fired and check.unreached() == [fault]
    with pytest.raises(VaultLockedError) as info:
        fault.vault.get("password")
    assert fault.fired and check.unreached() == []
    secret_values = [s.value for s in check.secrets]
    assert not any(v in str(info.value) + repr(fault.vault) for v in secret_values)


def test_unlocked_vault_serves_every_placed_kind_and_proves_nothing() -> None:
    check = _check()
    fault = check.force("approval_declined", placement="url-userinfo")
    placed = fault.placed
    assert placed is not None
    for kind, value in placed.secrets.items():
        assert fault.vault.get(kind) == value
    assert not fault.fired  # a healthy vault is not the fault of this stage
    assert fault.approver.approve("create_deployment", "web") is False
    assert fault.fired


def test_approver_approves_in_other_stages() -> None:
    fault = _check().force("vault_locked")
    assert fault.approver.approve("get_deployment") is True
    assert not fault.fired


def test_invalid_input_proves_the_gateway_read_it() -> None:
    fault = _check().force("invalid_input", placement="agent-input-json")
    assert fault.invalid_fields == ("replicas", "repo")
    assert set(fault.agent_input) >= {"repo", "replicas", "options"}  # iterating is reading
    assert fault.fired
    assert "replicas" in repr(fault.agent_input) and "many" not in repr(fault.agent_input)


def test_invalid_input_unread_is_unreached() -> None:
    fault = _check().force("invalid_input")
    with pytest.raises(StageNotReached, match="never read fault.agent_input"):
        fault.assert_fired()


def test_gateway_exception_raises_with_secrets_inside() -> None:
    check = _check()
    fault = check.force("gateway_exception")
    with pytest.raises(InternalError) as info:
        fault.boom()
    assert fault.fired
    leaked = check.secrets[-1].value  # the hostname the message carries
    assert leaked in str(info.value)
    assert leaked not in repr(fault.boom)
    other = check.force("vault_locked")
    other.boom()  # disarmed outside its stage: a no-op
    assert not other.fired


def test_transport_stage_without_transport_is_a_clear_error() -> None:
    with pytest.raises(UnknownTransportError, match="needs a transport: via="):
        _check().force("http_401")
    with pytest.raises(UnknownTransportError, match="no fault transport 'carrier-pigeon'"):
        make_fault("http_401", via="carrier-pigeon", secret=_check().secret)
    with pytest.raises(UnknownTransportError, match="not by the gateway"):
        GatewayFault("http_401", secret=_check().secret)


def test_check_raises_harness_error_before_leaks() -> None:
    check = _check()
    token = check.secret("bearer")
    check.expose({"error": token})
    check.force("approval_declined")
    with pytest.raises(StageNotReached) as info:
        check.check()
    message = str(info.value)
    assert "stage approval_declined via gateway was never reached" in message
    assert token not in message


def test_stop_disarms_every_fault_once() -> None:
    stopped: list[str] = []

    class Probe(GatewayFault):
        def stop(self) -> None:
            stopped.append(self.stage.name)

    check = _check()
    for name in ("vault_locked", "approval_declined"):
        fault = Probe(name, secret=check.secret)
        fault.start()
        check.faults.append(fault)
        check._armed.append(fault)
    check.stop()
    check.stop()
    assert stopped == ["approval_declined", "vault_locked"]


# --- the socket watcher --------------------------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_watch_counts_connects_to_its_port_only() -> None:
    port = _closed_port()
    with watch(host="127.0.0.1", port=port) as seen, watch(port=port + 1) as other:
        with socket.socket() as sock, pytest.raises(ConnectionRefusedError):
            sock.connect(("127.0.0.1", port))
    assert seen.connects == 1 and other.connects == 0
    with socket.socket() as sock, pytest.raises(ConnectionRefusedError):
        sock.connect(("127.0.0.1", port))
    assert seen.connects == 1  # no longer watching


def test_watch_counts_lookups() -> None:
    with watch(lookup="localhost") as seen:
        socket.getaddrinfo("localhost", 80)
    assert seen.lookups == 1


def test_failing_dns_fails_reserved_names_and_restores() -> None:
    original = socket.getaddrinfo
    with failing_dns() as failed:
        with pytest.raises(socket.gaierror) as info:
            socket.getaddrinfo("api.upstream.invalid", 443)
        assert info.value.errno == socket.EAI_NONAME
        assert socket.getaddrinfo("localhost", 80)  # other names still resolve
        assert failed() == 1
    assert socket.getaddrinfo is original


def _recording_resolver(monkeypatch: pytest.MonkeyPatch) -> tuple[Callable[..., Any], list[str]]:
    """A stand-in for the machine's resolver: names what it was asked, answers nothing."""
    asked: list[str] = []

    def resolver(host: str, *args: Any, **kwargs: Any) -> list[Any]:
        asked.append(host)
        return []

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    return resolver, asked


def test_a_failing_dns_ended_under_a_replacement_leaves_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A replacement made inside the block (a test's monkeypatch) stays after it: putting
    back what failing_dns found dropped it, and its own restore later put back the failing
    lookup for the rest of the process. The ended lookup under it passes names through."""
    _, asked = _recording_resolver(monkeypatch)
    with failing_dns():
        inner = socket.getaddrinfo

        def apps_lookup(host: str, *args: Any, **kwargs: Any) -> Any:
            return inner(host, *args, **kwargs)

        socket.getaddrinfo = apps_lookup
    assert socket.getaddrinfo is apps_lookup
    socket.getaddrinfo("api.upstream.invalid", 443)  # no gaierror: the block has ended
    assert asked == ["api.upstream.invalid"]


def test_overlapping_failing_dns_ended_out_of_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """A loopback dns_failure scoped with ``with`` and a redirect fault armed inside it:
    the first one's exit dropped the redirect's guard, so the canary host name of its
    Location header reached the resolver."""
    resolver, asked = _recording_resolver(monkeypatch)
    dns_fault, redirect_guard = failing_dns(".invalid"), failing_dns("cdn.canary.example")
    dns_fault.__enter__()
    redirect_guard.__enter__()
    dns_fault.__exit__(None, None, None)
    with pytest.raises(socket.gaierror):
        socket.getaddrinfo("cdn.canary.example", 443)
    socket.getaddrinfo("api.upstream.invalid", 443)  # the ended one's name passes through
    redirect_guard.__exit__(None, None, None)
    assert socket.getaddrinfo is resolver  # neither failing lookup is left behind
    assert asked == ["api.upstream.invalid"]


# --- through the pytest plugin ---------------------------------------------------------------

INNER = """
import pytest

def test_reached(leakcheck):
    fault = leakcheck.force("vault_locked")
    try:
        fault.vault.get("bearer")
    except Exception:
        pass
    leakcheck.expose({"ok": False, "code": "VAULT_LOCKED"})

def test_never_reached(leakcheck):
    leakcheck.force("approval_declined")
    leakcheck.expose({"ok": True})

@pytest.mark.xfail(reason="expected to fail for another reason")
def test_never_reached_xfail(leakcheck):
    leakcheck.force("invalid_input")
    assert False

def test_skipped(leakcheck):
    leakcheck.force("gateway_exception")
    pytest.skip("not today")
"""


def test_unreached_stage_fails_the_test_as_a_harness_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest("-p", "no:randomly", "-rA", "--leakcheck-seed=faults-core")
    outcomes = inner_outcomes(result)
    assert outcomes == {
        "test_reached": "PASSED",
        "test_never_reached": "FAILED",
        "test_never_reached_xfail": "FAILED",
    }
    out = result.stdout.str()
    assert "harness error: stage approval_declined via gateway was never reached" in out
    assert "harness error: stage invalid_input via gateway was never reached" in out
    assert "SKIPPED" in out
    factory = CanaryFactory("faults-core", namespace="test_inner.py::test_reached")
    assert_inner_run_safe(pytester, result, [factory.secret("bearer")])


def test_transports_offer_their_upstream_through_the_protocols() -> None:
    """The matrix asks a fault what it provides through typed protocols (never attribute
    names): each bundled transport offers exactly what its clients need."""
    from leakcheck.faults import HttpUpstream, Listening, SshUpstream, TlsUpstream

    offered = {}
    check = LeakCheck(seed="protocols-1", sinks=[])
    try:
        for stage, via in (
            ("http_401", "respx"),
            ("http_401", "responses"),
            ("tls_untrusted_ca", "loopback"),
            ("ssh_auth_rejected", "ssh"),
        ):
            fault = check.force(stage, via=via)
            offered[via] = {
                p.__name__ for p in (HttpUpstream, TlsUpstream, SshUpstream, Listening)
                if isinstance(fault, p)
            }  # fmt: skip
    finally:
        check.stop()
    assert offered == {
        "respx": {"HttpUpstream"},
        "responses": {"HttpUpstream"},
        "loopback": {"HttpUpstream", "TlsUpstream", "Listening"},
        "ssh": {"SshUpstream", "Listening"},
    }


def test_a_fault_loads_only_its_own_transports_plugin() -> None:
    """A fault over one transport imports the plugin named for it, not every fault plugin:
    all of them for an HTTP fault imported asyncssh (0.15 s; on a recent ``cryptography``,
    five lines of its deprecation warnings in every ``leakcheck mcp`` run). A fresh
    process: this one has imported them all already."""
    import subprocess
    import sys
    import textwrap

    program = textwrap.dedent(
        """
        import sys
        from leakcheck.faults import fault_factory
        heavy = ("asyncssh", "leakcheck.plugins.ssh_server")
        assert fault_factory("respx") is not None
        print(sorted(name for name in heavy if name in sys.modules))
        assert fault_factory("ssh") is not None
        print(sorted(name for name in heavy if name in sys.modules))
        print(fault_factory("no-such-transport"))
        """
    )
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", program],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == [
        "[]",
        "['asyncssh', 'leakcheck.plugins.ssh_server']",
        "None",
    ]


def test_a_transport_whose_library_is_not_installed_says_what_to_install() -> None:
    """``http_via`` defaults to respx: a newcomer without it is told to install it, in the
    fault's error and in the matrix's collection error. A fresh process in which respx
    cannot be imported (None in ``sys.modules``, as an uninstalled package)."""
    import subprocess
    import sys
    import textwrap

    program = textwrap.dedent(
        """
        import sys
        sys.modules["respx"] = None
        from leakcheck.faults import UnknownTransportError, make_fault
        from leakcheck.matrix import Operation, Target, TargetError, stage_matrix
        try:
            make_fault("http_401", via="respx", secret=lambda kind: "x")
        except UnknownTransportError as exc:
            print(exc)

        class Gateway(Target):
            operations = [Operation("fetch", "http", repeatable=True)]
            stages = ["http_401"]

            def call(self, case):
                return None

        try:
            stage_matrix(Gateway())
        except TargetError as exc:
            print(exc)
        """
    )
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", program],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    fault, matrix = done.stdout.splitlines()
    assert fault.startswith("no fault transport 'respx' (plugin skipped: ModuleNotFoundError")
    assert "; pip install respx to use it" in fault
    assert "respx: plugin skipped (ModuleNotFoundError" in matrix
    assert "; pip install respx to use it)" in matrix
    assert "known: " in matrix
