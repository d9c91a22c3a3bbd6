"""A loopback fault forced and proven in a Python child process (an MCP server over stdio,
a gateway run as a command): ``fault.child_environment()``.

A child started with it (``python -c`` with httpx2, and with urllib) fails the stage as the
test process would (DNS failure, refused connection, full accept queue, an answered 401 over
HTTPS trusted through ``SSL_CERT_FILE``) and the fault proves it from what the child's hook
wrote; the same child started without it leaves the fault unreached (the proof of a socket
stage exists only in the process that made the call), and so does a child that makes no
request. The hook chains to the child's own sitecustomize, never writes a secret (redirect
hosts travel as digests), and its directory goes at stop.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path

import pytest
from conftest import self_scan
from leakcheck.plugins.loopback_http import DNS_FAILURE_HOST, LoopbackFault

from leakcheck.faults import ChildProcessUpstream, GatewayFault, HarnessError, StageNotReached
from leakcheck.harness import LeakCheck
from leakcheck.netwatch import CHILD_EVENT_CAP, CHILD_FAULT_ENV, CHILD_PROOF_ENV, merge_environment

#: a child's own safety bound (it starts an interpreter and imports httpx2); its requests
#: use the fault's timeout
CHILD_BOUND = 60
TIMEOUT = 0.3

#: the child gateways: argv[1] is the base URL; the credential comes from the environment,
#: as an MCP server takes it; they print what failed (a class name or a status), never text
HTTPX2_CHILD = """
import os, sys
import httpx2
try:
    response = httpx2.get(
        sys.argv[1] + "/v1/deployments",
        params={"api_key": os.environ["UPSTREAM_API_KEY"]},
        timeout=float(sys.argv[2]),
        follow_redirects=len(sys.argv) > 3,
    )
    print("status", response.status_code)
except Exception as exc:
    print(type(exc).__module__ + "." + type(exc).__qualname__)
"""
URLLIB_CHILD = """
import os, sys, urllib.error, urllib.parse, urllib.request
query = urllib.parse.urlencode({"api_key": os.environ["UPSTREAM_API_KEY"]})
try:
    with urllib.request.urlopen(
        sys.argv[1] + "/v1/deployments?" + query, timeout=float(sys.argv[2])
    ) as response:
        print("status", response.status)
except urllib.error.HTTPError as exc:
    print("status", exc.code)
except urllib.error.URLError as exc:
    print("URLError", type(exc.reason).__name__)
except Exception as exc:
    print(type(exc).__name__)
"""
CHILDREN = {"httpx2": HTTPX2_CHILD, "urllib": URLLIB_CHILD}

#: what each child prints at each stage
SEEN = {
    ("httpx2", "dns_failure"): "httpx2.ConnectError",
    ("httpx2", "connection_refused"): "httpx2.ConnectError",
    ("httpx2", "timeout_before_send"): "httpx2.ConnectTimeout",
    ("httpx2", "http_401"): "status 401",
    ("urllib", "dns_failure"): "URLError gaierror",
    ("urllib", "connection_refused"): "URLError ConnectionRefusedError",
    ("urllib", "timeout_before_send"): "URLError TimeoutError",
    ("urllib", "http_401"): "status 401",
}
SCHEMES = {"http_401": "https"}


def _check(request: pytest.FixtureRequest) -> LeakCheck:
    return LeakCheck(seed="child-proof", namespace=request.node.nodeid, sinks=[])


def _run(source: str, env: Mapping[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-c", source, *args],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=CHILD_BOUND,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]  # the children print no secret
    return done


def _child_env(fault: LoopbackFault, api_key: str, **base: str) -> dict[str, str]:
    return merge_environment(
        {**os.environ, **base, "UPSTREAM_API_KEY": api_key}, fault.child_environment()
    )


@pytest.mark.parametrize(
    ("client", "stage"), [pytest.param(*key, id="-".join(key)) for key in sorted(SEEN)]
)
def test_a_child_process_fails_the_stage_and_the_fault_proves_it(
    request: pytest.FixtureRequest, client: str, stage: str
) -> None:
    check = _check(request)
    placed = check.place("query-api-key")
    threads = threading.active_count()
    fault = LoopbackFault(
        stage, placed=placed, secret=check.secret, timeout=TIMEOUT, scheme=SCHEMES.get(stage)
    )
    with fault:
        hook_env = fault.child_environment()
        env = _child_env(fault, placed.secrets["api_key"])
        assert isinstance(fault, ChildProcessUpstream)
        assert fault.url.startswith(SCHEMES.get(stage, "http") + "://")
        done = _run(CHILDREN[client], env, fault.url, str(fault.timeout))
        proof = Path(env[CHILD_PROOF_ENV]).read_text("ascii")
        events = fault.child_events()
        fired = fault.fired
        directory = Path(env[CHILD_PROOF_ENV]).parent
    assert done.stdout.strip() == SEEN[client, stage]
    assert fired, check.mask(fault.not_reached_reason())
    assert events.processes == 1
    if stage == "dns_failure":
        assert fault.failed_lookups >= 1 and events.lookups("suffix .invalid") >= 1
        assert fault.evidence == [
            f"a lookup of {DNS_FAILURE_HOST} failed in a child process (EAI_NONAME)"
        ]
    elif stage in ("connection_refused", "timeout_before_send"):
        # nothing in this process connected: the proof is the child's
        assert fault.connects == events.connects >= 1
        assert fault.evidence[0].startswith("a client in a child process tried to connect")
    else:
        assert fault.requests == 1 and events.connects == 0  # the server's own proof
    # the proof file and the environment hold names and ports, never a value
    self_scan(proof + repr(sorted(hook_env.items())), check.secrets, "child proof")
    assert "UPSTREAM_API_KEY" not in proof
    assert not directory.exists(), "the child hook's directory outlived stop()"
    assert threading.active_count() == threads


@pytest.mark.parametrize("stage", ["connection_refused", "timeout_before_send"])
def test_without_the_environment_a_child_leaves_the_fault_unreached(
    request: pytest.FixtureRequest, stage: str
) -> None:
    """The reason the hook exists: the child's connect really failed, but no proof of it
    reaches the test process (no DNS stage here: its child would ask the real resolver)."""
    check = _check(request)
    placed = check.place("query-api-key")
    with LoopbackFault(stage, placed=placed, secret=check.secret, timeout=TIMEOUT) as fault:
        env = {**os.environ, "UPSTREAM_API_KEY": placed.secrets["api_key"]}
        done = _run(HTTPX2_CHILD, env, fault.url, str(fault.timeout))
        assert done.stdout.strip() == SEEN["httpx2", stage]
        assert not fault.fired
        with pytest.raises(StageNotReached, match="no client connected"):
            fault.assert_fired()


def test_a_child_that_makes_no_request_leaves_the_fault_unreached(
    request: pytest.FixtureRequest,
) -> None:
    check = _check(request)
    with LoopbackFault("dns_failure", secret=check.secret, timeout=TIMEOUT) as fault:
        env = merge_environment(os.environ, fault.child_environment())
        assert "no Python child process loaded the hook" in fault.not_reached_reason()
        for _ in range(2):
            _run("import json; json.dumps({})", env)
        assert fault.child_events().processes == 2
        assert not fault.fired
        with pytest.raises(StageNotReached) as info:
            fault.assert_fired()
    message = str(info.value)
    assert f"no client looked up {DNS_FAILURE_HOST}" in message
    assert "2 Python child processes ran with fault.child_environment()" in message
    self_scan(message, check.secrets, "harness error")


def test_a_child_started_isolated_is_told_apart(request: pytest.FixtureRequest) -> None:
    check = _check(request)
    placed = check.place("query-api-key")
    with LoopbackFault(
        "connection_refused", placed=placed, secret=check.secret, timeout=TIMEOUT
    ) as fault:
        env = _child_env(fault, placed.secrets["api_key"])
        done = subprocess.run(  # -I: no PYTHONPATH, so no hook
            [sys.executable, "-I", "-c", URLLIB_CHILD, fault.url, str(fault.timeout)],
            env=env,
            capture_output=True,
            text=True,
            timeout=CHILD_BOUND,
            check=False,
        )
        assert done.stdout.strip() == "URLError ConnectionRefusedError"
        assert not fault.fired
        assert "without -I, -E or -S" in fault.not_reached_reason()


def test_the_child_trusts_the_fault_ca_only_through_the_environment(
    request: pytest.FixtureRequest,
) -> None:
    check = _check(request)
    placed = check.place("query-api-key")
    with LoopbackFault("http_401", placed=placed, secret=check.secret, scheme="https") as fault:
        env = fault.child_environment()
        ca_vars = {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS"}
        assert {env[name] for name in ca_vars} == {fault.ca_file}
        assert Path(fault.ca_file).read_text("ascii").startswith("-----BEGIN CERTIFICATE-----")
        # without them, the child rejects the loopback certificate: no request is read
        bare = {k: v for k, v in _child_env(fault, placed.secrets["api_key"]).items()}
        for name in ca_vars:
            bare.pop(name)
        done = _run(URLLIB_CHILD, bare, fault.url, str(TIMEOUT))
        assert done.stdout.strip() == "URLError SSLCertVerificationError"
        assert not fault.fired and "TLS handshake" in fault.not_reached_reason()
    with LoopbackFault("connection_refused", secret=check.secret) as plain:
        assert not ca_vars & set(plain.child_environment())


def test_a_redirect_host_is_failed_in_the_child_as_a_digest(
    request: pytest.FixtureRequest,
) -> None:
    check = _check(request)
    placed = check.place("query-api-key")
    with LoopbackFault(
        "redirect_signed_url", placed=placed, secret=check.secret, timeout=TIMEOUT
    ) as fault:
        env = _child_env(fault, placed.secrets["api_key"])
        # following the redirect: the canary host name must not reach a real resolver
        done = _run(HTTPX2_CHILD, env, fault.url, str(fault.timeout), "follow")
        proof = Path(env[CHILD_PROOF_ENV]).read_text("ascii")
        assert done.stdout.strip() == "httpx2.ConnectError"
        assert fault.fired and fault.redirect_lookups == 1
        assert fault.child_events().failed_lookups == {"digest 0": 1}
    self_scan(proof + env[CHILD_FAULT_ENV], check.secrets, "child hook")


def test_the_child_still_runs_its_own_sitecustomize(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    own = tmp_path / "own-site"
    own.mkdir()
    (own / "sitecustomize.py").write_text("import sys\nsys.own_site_ran = True\n")
    check = _check(request)
    placed = check.place("query-api-key")
    with LoopbackFault("dns_failure", placed=placed, secret=check.secret) as fault:
        env = _child_env(fault, placed.secrets["api_key"], PYTHONPATH=str(own))
        paths = env["PYTHONPATH"].split(os.pathsep)
        assert paths.index(str(own)) > 0  # after the hook's directory, kept
        probe = (
            "import sys, sitecustomize\n"
            "print(sys.own_site_ran, sitecustomize.__file__ == sys.argv.pop(1))\n"
        ) + HTTPX2_CHILD
        done = _run(probe, env, str(own / "sitecustomize.py"), fault.url, str(TIMEOUT))
        assert done.stdout.split("\n")[:2] == ["True True", "httpx2.ConnectError"]
        assert fault.fired


def test_child_environment_only_while_armed(request: pytest.FixtureRequest) -> None:
    check = _check(request)
    fault = LoopbackFault("connection_refused", secret=check.secret)
    with pytest.raises(HarnessError, match="not armed"):
        fault.child_environment()
    fault.start()
    env = fault.child_environment()
    assert fault.child_environment() == env  # one hook directory per fault
    site = Path(env["PYTHONPATH"].split(os.pathsep)[0])
    assert (site / "sitecustomize.py").is_file()
    fault.stop()
    assert not site.exists() and fault.tmpdir is not None and not Path(fault.tmpdir).exists()
    with pytest.raises(HarnessError, match="is stopped"):
        fault.child_environment()
    assert not isinstance(GatewayFault("vault_locked", secret=check.secret), ChildProcessUpstream)


def test_merge_environment_joins_pythonpath() -> None:
    sep = os.pathsep
    base = {"PATH": "/bin", "PYTHONPATH": sep.join(["/app", "/shared"]), "TOKEN_FILE": "a"}
    merged = merge_environment(
        base, {"PYTHONPATH": sep.join(["/hook", "/shared"]), "TOKEN_FILE": "b"}, {"X": "1"}
    )
    assert merged == {
        "PATH": "/bin",
        "PYTHONPATH": sep.join(["/hook", "/shared", "/app"]),
        "TOKEN_FILE": "b",
        "X": "1",
    }
    assert merge_environment({"A": "1"}) == {"A": "1"}
    assert base["PYTHONPATH"] == sep.join(["/app", "/shared"])  # not changed in place


AIOHTTP_CHILD = """
import asyncio, sys
import aiohttp, aiohttp.connector

print(aiohttp.connector.DefaultResolver.__name__)
if len(sys.argv) < 2:
    sys.exit(0)


async def main():
    timeout = aiohttp.ClientTimeout(sock_connect=float(sys.argv[2]))
    async with aiohttp.ClientSession(timeout=timeout) as session:
        try:
            async with session.get(sys.argv[1] + "/v1/deployments"):
                print("answered")
        except Exception as exc:
            print(type(exc).__name__)


asyncio.run(main())
"""
#: stands for aiodns: with it installed, aiohttp's default resolver asks c-ares
FAKE_AIODNS = """
class DNSResolver:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("c-ares was asked")

    def getaddrinfo(self, *args, **kwargs):
        raise RuntimeError("c-ares was asked")
"""


def test_aiohttp_in_the_child_resolves_through_the_failing_resolver(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    (tmp_path / "aiodns").mkdir()
    (tmp_path / "aiodns" / "__init__.py").write_text(FAKE_AIODNS)
    base = {**os.environ, "PYTHONPATH": str(tmp_path)}
    # without the hook, the child's connectors would ask c-ares (no request made here)
    assert _run(AIOHTTP_CHILD, base).stdout.split() == ["AsyncResolver"]
    check = _check(request)
    with LoopbackFault("dns_failure", secret=check.secret, timeout=TIMEOUT) as fault:
        env = merge_environment(base, fault.child_environment())
        done = _run(AIOHTTP_CHILD, env, fault.url, str(TIMEOUT))
        assert done.stdout.split() == ["ThreadedResolver", "ClientConnectorDNSError"]
        assert fault.fired and fault.failed_lookups == 1


def test_a_child_in_a_retry_loop_writes_at_most_the_cap(request: pytest.FixtureRequest) -> None:
    check = _check(request)
    with LoopbackFault("connection_refused", secret=check.secret) as fault:
        env = merge_environment(os.environ, fault.child_environment())
        loop = (
            "import socket, sys\n"
            "for _ in range(CHILD_EVENT_CAP + 50):\n"
            "    with socket.socket() as s:\n"
            "        s.connect_ex(('127.0.0.1', int(sys.argv[1])))\n"
        ).replace("CHILD_EVENT_CAP", str(CHILD_EVENT_CAP))
        _run(loop, env, str(fault.port))
        proof = Path(env[CHILD_PROOF_ENV])
        assert len(proof.read_text("ascii").splitlines()) == CHILD_EVENT_CAP
        with proof.open("a", encoding="ascii") as f:
            f.write('{"event": "connect", "host": "127.0.0.1", "po')  # a line being written
        events = fault.child_events()
        assert events.processes == 1 and events.connects == CHILD_EVENT_CAP - 1
        assert fault.fired
