"""Error-text snapshots: an upgrade simulation reports drift with the dependency named; modes
(check, create-only, update); selection-aware unused detection; xdist merge; ``leakcheck
review``; nothing written or printed holds a canary."""

from __future__ import annotations

import base64
import io
import json
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import QUIET_INNER_ARGS, self_scan

from leakcheck import CanaryFactory, Secret
from leakcheck.canaries import canary_lookalikes
from leakcheck.cli import main
from leakcheck.matrix import CaseSpec
from leakcheck.snapshots import (
    PENDING_DIR,
    item_key,
    normalize,
    render_snapshot_file,
    side_by_side,
    snapshot_entry,
)

pytest_plugins = ["pytester"]

# A tiny gateway: one real refused connection (httpx to a closed loopback port), one 401
# from a mock transport (its exception text carries an internal-host canary), one stage
# that never calls a library.
GATEWAY = """
import secrets
import socket

import httpx


def closed_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def call(stage, token, host):
    rid = "req_" + secrets.token_urlsafe(16)

    def fail(code, action, message):
        return {"ok": False, "code": code, "action": action, "message": message,
                "retryable": action == "retry_after_delay", "request_id": rid}

    if stage == "vault_locked":
        return fail("VAULT_LOCKED", "stop_and_report", f"vault locked (request {rid})")
    headers = {"Authorization": f"Bearer {token}"}
    try:
        if stage == "connection_refused":
            httpx.get(f"http://127.0.0.1:{closed_port()}/deploy", headers=headers, timeout=0.3)
        else:
            reply = httpx.MockTransport(lambda request: httpx.Response(401, text="no"))
            with httpx.Client(transport=reply) as client:
                client.get(f"https://{host}/deploy", headers=headers).raise_for_status()
    except httpx.HTTPStatusError:
        return fail("AUTH_FAILED", "stop_and_report", "the upstream rejected the credential")
    except httpx.HTTPError as exc:
        return fail("UPSTREAM_UNREACHABLE", "retry_after_delay",
                    f"upstream unreachable ({type(exc).__name__}: {exc})")
    return {"ok": True, "request_id": rid}
"""

# What run_case will do for a baseline placement, written out for a parametrized test
# (the same ``leakcheck_case`` parameter and ids as ``stage_matrix``).
TESTS = """
import os

import pytest

import snapgw
from leakcheck.libtrace import library_exceptions
from leakcheck.matrix import CaseSpec
from leakcheck.snapshots import snapshot_entry

STAGES = os.environ.get("LC_STAGES", "vault_locked,connection_refused,http_401").split(",")
SILENT = os.environ.get("LC_SILENT", "").split(",")
BASE = "authorization-header"
SPECS = [CaseSpec(op, stage, BASE) for op in ("create_deployment", "get_deployment")
         for stage in STAGES]
SPECS.append(CaseSpec("create_deployment", "vault_locked", "agent-input-json"))
CACHE = {}


@pytest.mark.parametrize("leakcheck_case", SPECS, ids=[s.id for s in SPECS])
def test_gateway(leakcheck, leakcheck_case):
    token = leakcheck.secret("bearer")
    host = leakcheck.secret("hostname")
    with library_exceptions() as escaped:
        envelope = snapgw.call(leakcheck_case.stage, token, host)
    leakcheck.expose(envelope)
    if leakcheck_case.stage in SILENT:
        return
    key = f"{leakcheck_case.operation}/{leakcheck_case.stage}"
    leakcheck.snapshot = snapshot_entry(envelope, escaped.last, None, leakcheck.mask, key=key)


def test_cache_a_password(leakcheck):
    CACHE["password"] = leakcheck.secret("password")
"""

# Simulates an upgrade of httpx: a new version number and a new ConnectError text.
CONFTEST = """
import os

import httpx

import leakcheck.libtrace as libtrace

pytest_plugins = ["leakcheck.snapshots"]
_version = libtrace._distribution_version
_str = httpx.ConnectError.__str__


def pytest_configure(config):
    if os.environ.get("LC_UPGRADE"):
        libtrace._distribution_version = lambda n: "0.99.0" if n == "httpx" else _version(n)
        httpx.ConnectError.__str__ = lambda self: "connect failed: " + _str(self)


def pytest_unconfigure(config):
    libtrace._distribution_version = _version
    httpx.ConnectError.__str__ = _str
"""

SNAPSHOT = Path("__leakcheck_snapshots__") / "test_gw.json"
KEYS = {
    f"{op}/{stage}"
    for op in ("create_deployment", "get_deployment")
    for stage in ("vault_locked", "connection_refused", "http_401")
}
REFUSED = {"create_deployment/connection_refused", "get_deployment/connection_refused"}


@pytest.fixture
def inner(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(snapgw=GATEWAY, test_gw=TESTS, conftest=CONFTEST)
    return pytester


def run(
    pytester: pytest.Pytester,
    *args: str,
    seed: str = "snap-1",
    subprocess: bool = False,
) -> pytest.RunResult:
    argv = [*QUIET_INNER_ARGS, "-rA", f"--leakcheck-seed={seed}", *args]
    if subprocess:
        result = pytester.runpytest_subprocess(*_drop_no_xdist(argv))
    else:
        result = pytester.runpytest(*argv)
    output = "\n".join(result.outlines + result.errlines)
    assert "INTERNALERROR" not in output, output
    return result


def _drop_no_xdist(argv: list[str]) -> list[str]:
    out: list[str] = []
    for arg in argv:
        if arg == "no:xdist" and out and out[-1] == "-p":
            out.pop()
            continue
        out.append(arg)
    return out


def stored(pytester: pytest.Pytester) -> dict[str, Any]:
    return json.loads((pytester.path / SNAPSHOT).read_text(encoding="utf-8"))["entries"]


def pending(pytester: pytest.Pytester) -> dict[str, Any]:
    path = pytester.path / PENDING_DIR / "test_gw.json"
    return json.loads(path.read_text(encoding="utf-8"))["entries"] if path.exists() else {}


def inner_canaries(seed: str, specs: list[str]) -> list[Secret]:
    """The inner tests' canaries, rebuilt from the seed (bearer then hostname, per test)."""
    out = []
    for test_id in specs:
        factory = CanaryFactory(seed, namespace=f"test_gw.py::test_gateway[{test_id}]")
        out += [factory.secret("bearer"), factory.secret("hostname")]
    factory = CanaryFactory(seed, namespace="test_gw.py::test_cache_a_password")
    return [*out, factory.secret("password")]


ALL_IDS = [
    f"{op}-{stage}-authorization-header"
    for op in ("create_deployment", "get_deployment")
    for stage in ("vault_locked", "connection_refused", "http_401")
] + ["create_deployment-vault_locked-agent-input-json"]


def scan_everything(pytester: pytest.Pytester, result: pytest.RunResult, seed: str) -> None:
    secrets = inner_canaries(seed, ALL_IDS)
    self_scan("\n".join(result.outlines + result.errlines), secrets, "inner pytest output")
    for path in pytester.path.rglob("*"):
        if path.is_file() and {"__leakcheck_snapshots__", ".leakcheck"} & set(path.parts):
            self_scan(path.read_bytes(), secrets, str(path.relative_to(pytester.path)))


# --- the upgrade simulation ------------------------------------------------------------------


def test_upgrade_drift_names_the_dependency_and_review_accepts_it(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    first = run(inner, seed="snap-1")  # no snapshots yet: every baseline case says so
    first.assert_outcomes(passed=2, failed=6)
    assert "no snapshot for create_deployment/http_401; run with --leakcheck-snapshot-create" in (
        first.stdout.str()
    )
    assert not (inner.path / SNAPSHOT).exists()  # written only under a flag
    assert set(pending(inner)) == KEYS  # kept for review

    created = run(inner, "--leakcheck-snapshot-create", seed="snap-1")
    created.assert_outcomes(passed=8)
    entries = stored(inner)
    assert set(entries) == KEYS
    refused = entries["create_deployment/connection_refused"]
    assert refused["exception_type"] == "httpx.ConnectError"  # not httpcore's
    assert refused["exception"] == "httpx.ConnectError: [Errno 111] Connection refused\n"
    assert refused["response"]["request_id"] == "<request-id>"
    assert entries["create_deployment/vault_locked"]["exception"] is None
    assert "«canary:hostname:" in entries["get_deployment/http_401"]["exception"]
    assert not pending(inner)
    text = (inner.path / SNAPSHOT).read_text(encoding="utf-8")
    assert text == render_snapshot_file(entries) and text.endswith("}\n")

    # an identical rerun, other canaries (other seed), other ports and request ids: passes
    same = run(inner, seed="snap-2")
    same.assert_outcomes(passed=8)
    assert "mode check: 6 matched" in same.stdout.str()

    monkeypatch.setenv("LC_UPGRADE", "1")
    upgraded = run(inner, seed="snap-3")
    upgraded.assert_outcomes(passed=6, failed=2)
    out = upgraded.stdout.str()
    assert "leakcheck snapshot drift: create_deployment/connection_refused" in out
    # only the dependency that changed is named
    assert f"dependencies that changed version: httpx {httpx.__version__} -> 0.99.0\n" in out
    assert "-httpx.ConnectError: [Errno 111] Connection refused" in out
    assert "+httpx.ConnectError: connect failed: [Errno 111] Connection refused" in out
    assert "--- snapshot" in out and "+++ this run" in out
    assert "drifted: test_gw.py: create_deployment/connection_refused" in out
    assert set(pending(inner)) == REFUSED
    assert stored(inner) == entries  # a normal run never writes
    scan_everything(inner, upgraded, "snap-3")

    assert main(["review", "--dir", str(inner.path), "--accept-all"]) == 0
    shown = capsys.readouterr().out
    assert "httpx " in shown and "-> 0.99.0" in shown and "connect failed: [Errno 111]" in shown
    assert "2 accepted, 0 rejected, 0 pending" in shown
    assert not pending(inner)
    assert "connect failed" in stored(inner)["get_deployment/connection_refused"]["exception"]
    run(inner, seed="snap-4").assert_outcomes(passed=8)  # the accepted texts now match


def test_create_only_never_changes_an_existing_snapshot(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LC_STAGES", "vault_locked,connection_refused")
    run(inner, "--leakcheck-snapshot-create").assert_outcomes(passed=6)
    before = stored(inner)
    monkeypatch.setenv("LC_STAGES", "vault_locked,connection_refused,http_401")
    monkeypatch.setenv("LC_UPGRADE", "1")
    result = run(inner, "--leakcheck-snapshot-create", seed="snap-2")
    result.assert_outcomes(passed=6, failed=2)  # the drifted cases still fail
    after = stored(inner)
    assert {k: after[k] for k in before} == before
    assert set(after) - set(before) == {"create_deployment/http_401", "get_deployment/http_401"}
    assert set(pending(inner)) == REFUSED


def test_off_switch_and_contradicting_flags(inner: pytest.Pytester) -> None:
    off = run(inner, "--no-leakcheck-snapshots")
    off.assert_outcomes(passed=8)  # no snapshot, no failure, nothing written
    assert "leakcheck snapshots" not in off.stdout.str()
    assert not (inner.path / "__leakcheck_snapshots__").exists()
    assert not (inner.path / ".leakcheck").exists()
    for flags in (
        ("--leakcheck-snapshot-update", "--leakcheck-snapshot-create"),
        ("--no-leakcheck-snapshots", "--leakcheck-snapshot-update"),
    ):
        result = run(inner, *flags)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert "Traceback" not in "\n".join(result.errlines)
        assert "give one of" in result.stderr.str() or "snapshots are off" in result.stderr.str()


def test_one_snapshot_dir_extra_libraries_and_a_broken_file(inner: pytest.Pytester) -> None:
    inner.makeini("[pytest]\nleakcheck_snapshot_libraries = pytest\n    no-such-dist-lc\n")
    run(inner, "--leakcheck-snapshot-create", "--leakcheck-snapshot-dir=snaps").assert_outcomes(
        passed=8
    )
    path = inner.path / "snaps" / "test_gw.json"
    entries = json.loads(path.read_text(encoding="utf-8"))["entries"]
    versions = entries["get_deployment/http_401"]["versions"]
    assert versions["pytest"] == pytest.__version__
    assert versions["no-such-dist-lc"] == "not installed"
    assert not (inner.path / "__leakcheck_snapshots__").exists()
    path.write_text("{not json", encoding="utf-8")
    broken = run(inner, "--leakcheck-snapshot-dir=snaps", "--leakcheck-snapshot-update")
    broken.assert_outcomes(passed=2, failed=6)
    assert "snaps/test_gw.json is not valid JSON (line 1, column 2)" in broken.stdout.str()
    assert "resolve its merge conflict, or delete it and write it anew" in broken.stdout.str()
    assert "Traceback" not in broken.stdout.str()
    assert path.read_text(encoding="utf-8") == "{not json"  # never overwritten blindly


def test_update_overwrites_and_deletes_unused_only_when_whole(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(inner, "--leakcheck-snapshot-create").assert_outcomes(passed=8)
    monkeypatch.setenv("LC_UPGRADE", "1")
    monkeypatch.setenv("LC_STAGES", "vault_locked,connection_refused")
    # narrowed to one test with path::name: the other keys are not known to be unused
    one = "test_gw.py::test_gateway[get_deployment-connection_refused-authorization-header]"
    narrowed = run(inner, one, "--leakcheck-snapshot-update")
    narrowed.assert_outcomes(passed=1)
    entries = stored(inner)
    assert set(entries) == KEYS
    assert "connect failed" in entries["get_deployment/connection_refused"]["exception"]
    assert "connect failed" not in entries["create_deployment/connection_refused"]["exception"]

    whole = run(inner, "--leakcheck-snapshot-update", seed="snap-2")
    whole.assert_outcomes(passed=6)
    entries = stored(inner)
    assert set(entries) == KEYS - {"create_deployment/http_401", "get_deployment/http_401"}
    assert all("connect failed" in entries[k]["exception"] for k in REFUSED)
    assert all(entries[k]["versions"]["httpx"] == "0.99.0" for k in entries)
    assert "deleted: test_gw.py: create_deployment/http_401" in whole.stdout.str()
    assert not pending(inner)


def test_unused_detection_honours_deselection(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(inner, "--leakcheck-snapshot-create").assert_outcomes(passed=8)
    # vault_locked no longer produces an entry; only get_deployment's case is selected
    monkeypatch.setenv("LC_SILENT", "vault_locked")
    result = run(inner, "-k", "get_deployment", "--leakcheck-snapshot-update")
    result.assert_outcomes(passed=3)
    out = result.stdout.str()
    assert "unused: test_gw.py: get_deployment/vault_locked" in out
    assert "create_deployment/vault_locked" not in out.split("leakcheck snapshots")[-1]
    assert set(stored(inner)) == KEYS - {"get_deployment/vault_locked"}


def test_xdist_workers_merge_and_the_controller_writes(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LC_STAGES", "vault_locked,connection_refused")
    run(inner, "--leakcheck-snapshot-create").assert_outcomes(passed=6)
    monkeypatch.setenv("LC_STAGES", "vault_locked,connection_refused,http_401")
    monkeypatch.setenv("LC_UPGRADE", "1")  # connection_refused drifts
    monkeypatch.setenv("LC_SILENT", "vault_locked")  # selected, passes, no entry: unused
    result = run(inner, "-n", "2", "--leakcheck-snapshot-create", subprocess=True, seed="x-2")
    result.assert_outcomes(passed=6, failed=2)
    out = result.stdout.str()
    assert "2 workers [8 items]" in out
    # every worker's observations, selections and outcomes reached the controller
    assert "mode create: 2 drifted, 2 written, 2 unused" in out
    assert set(pending(inner)) == REFUSED
    entries = stored(inner)
    assert set(entries) == KEYS  # the new http_401 keys from whichever worker ran them
    assert not any("connect failed" in entries[k]["exception"] for k in REFUSED)
    assert "unused: test_gw.py: create_deployment/vault_locked" in out
    assert "unused: test_gw.py: get_deployment/vault_locked" in out


# --- secrets -------------------------------------------------------------------------------------

LEAKY = """
import pytest

from leakcheck.matrix import CaseSpec
from leakcheck.snapshots import snapshot_entry

SAVED = {}


def test_a_saves_its_password(leakcheck):
    SAVED["password"] = leakcheck.secret("password")


@pytest.mark.parametrize("leakcheck_case", [CaseSpec("op", "vault_locked", "authorization-header")])
def test_b_unmasked_own_token(leakcheck, leakcheck_case):
    token = leakcheck.secret("bearer")
    leakcheck.snapshot = snapshot_entry({"message": f"token {token}"}, None, key="op/vault_locked")


@pytest.mark.parametrize("leakcheck_case", [CaseSpec("op", "http_401", "authorization-header")])
def test_c_another_tests_password(leakcheck, leakcheck_case):
    # a gateway that kept an earlier test's credential: this test's scan cannot know it
    leakcheck.snapshot = snapshot_entry({"message": "x " + SAVED["password"]}, None, key="k")
"""


def test_a_canary_in_an_entry_refuses_the_write(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_leaky=LEAKY, conftest='pytest_plugins = ["leakcheck.snapshots"]')
    result = run(pytester, "--leakcheck-snapshot-update", "-p", "no:randomly", seed="leaky-1")
    result.assert_outcomes(passed=2, failed=1)
    out = result.stdout.str()
    assert "leakcheck snapshot op/vault_locked: holds a form of a registered secret: " in out
    assert "bearer#1 (raw)" in out and "the entry was not recorded" in out
    assert "refused to write __leakcheck_snapshots__/test_leaky.json" in out
    assert "password#1 (raw)" in out
    assert result.ret == 1
    assert not (pytester.path / "__leakcheck_snapshots__" / "test_leaky.json").exists()
    secrets = [
        CanaryFactory("leaky-1", namespace="test_leaky.py::test_a_saves_its_password").secret(
            "password"
        ),
        CanaryFactory(
            "leaky-1", namespace="test_leaky.py::test_b_unmasked_own_token[leakcheck_case0]"
        ).secret("bearer"),
    ]
    self_scan("\n".join(result.outlines + result.errlines), secrets, "inner output")


def test_a_drifted_entry_with_another_tests_secret_is_never_written_pending(
    pytester: pytest.Pytester,
) -> None:
    """Check mode: test_c's entry drifted from its snapshot and holds test_a's password,
    which test_c's own check cannot know; the session's secrets keep it out of the
    pending file."""
    pytester.makepyfile(test_leaky=LEAKY, conftest='pytest_plugins = ["leakcheck.snapshots"]')
    stored = snapshot_entry({"message": "x old"}, None, key="k")
    directory = pytester.path / "__leakcheck_snapshots__"
    directory.mkdir()
    (directory / "test_leaky.json").write_text(render_snapshot_file({"k": stored}))
    result = run(pytester, "-p", "no:randomly", "-k", "not test_b", seed="leaky-1")
    out = result.stdout.str()
    assert "refused to write .leakcheck/pending/" in out and "password#1 (raw)" in out
    assert not list((pytester.path / PENDING_DIR).glob("*.json"))
    assert result.ret == 1


PLANTS = """
def test_plants_a_token(leakcheck):
    leakcheck.secret("bearer")
"""

# a gateway that kept the tail of a token another test (another worker's, under xdist) gave it
CARRIES = """
import os

import pytest

from leakcheck import CanaryFactory
from leakcheck.matrix import CaseSpec
from leakcheck.snapshots import snapshot_entry


@pytest.mark.parametrize("leakcheck_case", [CaseSpec("op", "http_401", "authorization-header")])
def test_carries_its_tail(leakcheck, leakcheck_case):
    seed = os.environ["LC_SEED"]
    earlier = CanaryFactory(seed, namespace="test_one.py::test_plants_a_token", announce=False)
    tail = earlier.secret("bearer").value[-12:]
    leakcheck.snapshot = snapshot_entry({"message": f"last caller ...{tail}"}, None, key="k")
"""


def test_xdist_an_entry_holding_another_workers_canary_is_never_written(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under xdist the controller writes every file and runs no test: it scanned with the
    canary-shaped backstop alone, and an entry holding the last 12 characters of a canary
    of a test another worker ran went into the snapshot file, the pending file and
    ``leakcheck review``. It draws every worker's canaries again now, from the seed and
    their records."""
    pytester.makepyfile(
        test_one=PLANTS, test_two=CARRIES, conftest='pytest_plugins = ["leakcheck.snapshots"]'
    )
    monkeypatch.setenv("LC_SEED", "carry-1")
    argv = ["-n", "2", "--dist", "loadfile", "-v", "--leakcheck-snapshot-update"]
    result = run(pytester, *argv, subprocess=True, seed="carry-1")
    out = result.stdout.str()
    workers = {line.split("]")[0] for line in out.splitlines() if line.startswith("[gw")}
    assert len(workers) == 2, out  # (each test on a worker of its own)
    assert "refused to write __leakcheck_snapshots__/test_two.json" in out, out
    assert "bearer#1@test_one.py::test_plants_a_token (suffix" in out, out
    assert result.ret == 1
    assert not (pytester.path / "__leakcheck_snapshots__" / "test_two.json").exists()
    token = CanaryFactory("carry-1", namespace="test_one.py::test_plants_a_token").secret("bearer")
    self_scan("\n".join(result.outlines + result.errlines), [token], "inner output")


REGISTERS = """
import pytest

from leakcheck.matrix import CaseSpec
from leakcheck.snapshots import snapshot_entry

SAVED = {}


def test_a_registers_a_password(leakcheck):
    SAVED["password"] = leakcheck.register("Xk9-tQ2#mW7vR4pL8nZ3", kind="password")


@pytest.mark.parametrize("leakcheck_case", [CaseSpec("op", "http_401", "authorization-header")])
def test_b_holds_it(leakcheck, leakcheck_case):
    leakcheck.snapshot = snapshot_entry({"message": "x " + SAVED["password"]}, None, key="k")
"""


def test_xdist_an_entry_holding_a_secret_its_worker_knows_is_never_written(
    pytester: pytest.Pytester,
) -> None:
    """A secret a test registered itself is known to its worker alone (the controller
    cannot draw it again): the worker scans the entries it observed with every secret it
    knows before it hands them over, and the controller refuses the module's files."""
    pytester.makepyfile(test_reg=REGISTERS, conftest='pytest_plugins = ["leakcheck.snapshots"]')
    argv = ["-n", "1", "-p", "no:randomly", "--leakcheck-snapshot-update"]
    result = run(pytester, *argv, subprocess=True, seed="reg-1")
    out = result.stdout.str()
    assert "refused to write __leakcheck_snapshots__/test_reg.json" in out, out
    assert "entries hold a form of a registered secret: op/http_401 (password#user1 (raw))" in out
    assert result.ret == 1
    assert not (pytester.path / "__leakcheck_snapshots__" / "test_reg.json").exists()
    assert "Xk9-tQ2#mW7vR4pL8nZ3" not in "\n".join(result.outlines + result.errlines)


def test_snapshot_files_hold_no_canary_form(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    created = run(inner, "--leakcheck-snapshot-create", seed="clean-1")
    created.assert_outcomes(passed=8)
    scan_everything(inner, created, "clean-1")
    monkeypatch.setenv("LC_UPGRADE", "1")
    drifted = run(inner, seed="clean-2")
    assert pending(inner)
    scan_everything(inner, drifted, "clean-2")
    snapshots = inner.path / "__leakcheck_snapshots__"
    assert "«canary:" in (snapshots / ".gitleaks.toml").read_text(encoding="utf-8")
    assert "__leakcheck_snapshots__" in (snapshots / "trufflehog-exclude.txt").read_text(
        encoding="utf-8"
    )
    for path in snapshots.iterdir():
        assert not canary_lookalikes(path.read_text(encoding="utf-8")), path


# --- leakcheck review ---------------------------------------------------------------------------


def _pending_tree(root: Path) -> None:
    """Two drifted entries and one new one, as a normal run leaves them."""

    def entry(key: str, text: str | None, version: str) -> dict[str, Any]:
        exc = ConnectionRefusedError(111, text) if text else None
        return snapshot_entry(
            {"ok": False, "code": "UPSTREAM_UNREACHABLE", "request_id": "req_abcdefgh"},
            exc,
            {"httpx": version, "requests": "2.0"},
            key=key,
        )

    def new(key: str, text: str | None) -> dict[str, Any]:
        return entry(key, text, "2")

    old = {k: entry(k, "Connection refused", "1.0") for k in ("a/dns_failure", "b/dns_failure")}
    snapshot = root / "tests" / "__leakcheck_snapshots__" / "test_x.json"
    snapshot.parent.mkdir(parents=True)
    snapshot.write_text(render_snapshot_file(old), encoding="utf-8")
    document = {
        "format": 1,
        "module": "tests/test_x.py",
        "snapshot_file": "tests/__leakcheck_snapshots__/test_x.json",
        "entries": {
            "a/dns_failure": {"old": old["a/dns_failure"], "new": new("a/dns_failure", "Refused")},
            "b/dns_failure": {"old": old["b/dns_failure"], "new": new("b/dns_failure", "Gone")},
            "c/http_401": {"old": None, "new": new("c/http_401", None)},
        },
    }
    (root / PENDING_DIR).mkdir(parents=True)
    (root / PENDING_DIR / "test_x.json").write_text(json.dumps(document), encoding="utf-8")


def _snapshot(root: Path) -> dict[str, Any]:
    path = root / "tests" / "__leakcheck_snapshots__" / "test_x.json"
    return json.loads(path.read_text(encoding="utf-8"))["entries"]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_review_reject_all_keeps_snapshots(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "160")  # side by side, unwrapped
    assert main(["review", "--dir", str(tmp_path)]) == 0  # nothing pending
    assert "nothing pending" in capsys.readouterr().out
    _pending_tree(tmp_path)
    before = _snapshot(tmp_path)
    assert main(["review", "--dir", str(tmp_path)]) == 1  # not a terminal: shows, keeps
    shown = capsys.readouterr().out
    assert "dependencies that changed version: httpx 1.0 -> 2\n" in shown
    assert "| ConnectionRefusedError: [Errno 111] Refused" in shown
    assert "new case: no snapshot yet" in shown
    assert main(["review", "--dir", str(tmp_path), "--reject-all"]) == 0
    assert "0 accepted, 3 rejected, 0 pending" in capsys.readouterr().out
    assert _snapshot(tmp_path) == before
    assert not list((tmp_path / PENDING_DIR).glob("*.json"))
    assert main(["review", "--dir", str(tmp_path / "missing")]) == 2
    assert "is not a directory" in capsys.readouterr().err


def test_review_asks_per_entry_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _pending_tree(tmp_path)
    answers = iter(["x", "a", "r", "s"])  # a wrong key is asked again
    monkeypatch.setattr(sys, "stdin", _Terminal())
    monkeypatch.setattr("builtins.input", lambda prompt: next(answers))
    assert main(["review", "--dir", str(tmp_path)]) == 1
    assert "1 accepted, 1 rejected, 1 pending" in capsys.readouterr().out
    entries = _snapshot(tmp_path)
    assert "Refused" in entries["a/dns_failure"]["exception"]  # accepted
    assert "Connection refused" in entries["b/dns_failure"]["exception"]  # rejected
    left = json.loads((tmp_path / PENDING_DIR / "test_x.json").read_text(encoding="utf-8"))
    assert list(left["entries"]) == ["c/http_401"]  # skipped
    monkeypatch.setattr("builtins.input", lambda prompt: "a")
    assert main(["review", "--dir", str(tmp_path)]) == 0
    assert set(_snapshot(tmp_path)) == {"a/dns_failure", "b/dns_failure", "c/http_401"}
    assert (tmp_path / "tests" / "__leakcheck_snapshots__" / ".gitleaks.toml").exists()


@pytest.mark.parametrize("encoding", ["raw", "hex", "base64"])
def test_review_never_shows_or_accepts_canary_shaped_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], canaries: CanaryFactory, encoding: str
) -> None:
    """A canary's shape, raw or encoded (a hand-edited pending file, or one from a fork's
    CI run: its hex and base64 were shown and, accepted, written into the committed
    snapshot), is withheld and never accepted."""
    _pending_tree(tmp_path)
    token = canaries("bearer")
    data = token.value.encode()
    spelled = {
        "raw": token.value,
        "hex": data.hex(),
        "base64": base64.b64encode(b"x" + data).decode(),
    }[encoding]
    path = tmp_path / PENDING_DIR / "test_x.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    document["entries"]["c/http_401"]["new"]["response"]["message"] = f"bad {spelled}"
    path.write_text(json.dumps(document), encoding="utf-8")
    assert main(["review", "--dir", str(tmp_path), "--accept-all"]) == 1
    shown = capsys.readouterr().out
    self_scan(shown, [token], "review output")
    assert spelled[12:32] not in shown
    label = "bearer" if encoding == "raw" else f"bearer ({encoding})"
    assert f"«canary?:{label}: line" in shown  # (rows may wrap the label)
    assert "refusing to accept c/http_401" in shown
    assert "c/http_401" not in _snapshot(tmp_path)


def test_review_shows_no_key_shaped_id_and_refuses_a_malformed_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _pending_tree(tmp_path)
    token = "tok_" + secrets.token_urlsafe(24)
    path = tmp_path / PENDING_DIR / "test_x.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    document["entries"][f"c/http_401_{token}"] = document["entries"].pop("c/http_401")
    path.write_text(json.dumps(document), encoding="utf-8")
    assert main(["review", "--dir", str(tmp_path), "--accept-all"]) == 1
    shown = capsys.readouterr().out
    assert token[4:12] not in shown and "«opaque»" in shown
    assert not any(token in key for key in _snapshot(tmp_path))
    # an entry that is no pending snapshot: one line, no traceback
    document["entries"]["d/http_403"] = "not an entry"
    path.write_text(json.dumps(document), encoding="utf-8")
    assert main(["review", "--dir", str(tmp_path), "--reject-all"]) == 0
    assert "are not pending snapshots" in capsys.readouterr().out


def test_review_refuses_a_key_named_pending_file_without_showing_its_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pending file is named after its module; one named after a key (hand-made, or
    from a fork's CI run) that review refuses was named raw in the refusal (found by a
    hunting helper): shown «opaque», as its module and ids are."""
    _pending_tree(tmp_path)
    token = "ghp_" + secrets.token_urlsafe(27)
    pending = tmp_path / PENDING_DIR
    source = pending / "test_x.json"
    document = json.loads(source.read_text(encoding="utf-8"))
    document["snapshot_file"] = "../outside.json"
    (pending / f"{token}.json").write_text(json.dumps(document), encoding="utf-8")
    source.unlink()
    assert main(["review", "--dir", str(tmp_path), "--reject-all"]) == 0
    shown = capsys.readouterr().out
    assert "refusing «opaque»: the snapshot file" in shown and token[4:12] not in shown, shown


def test_review_masks_pieces_and_refuses_a_listed_secret(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--secrets-file: a piece of a listed secret (a truncated repr) is not shown, and an
    entry holding the secret is never accepted into a snapshot file."""
    _pending_tree(tmp_path)
    token = "ghp_Zq7Xk2Lm9Pw4Rt6Yv8Bn3Cd5Fg1Hj0Ks9Q"
    path = tmp_path / PENDING_DIR / "test_x.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    new = document["entries"]["c/http_401"]["new"]
    new["response"]["message"] = f"bad {token}"
    new["exception"] = f"AuthError('bad {token[:14]}...')"
    path.write_text(json.dumps(document), encoding="utf-8")
    secrets = tmp_path / "secrets.txt"
    secrets.write_text(token + "\n")
    args = ["review", "--dir", str(tmp_path), "--accept-all", "--secrets-file", str(secrets)]
    assert main(args) == 1
    shown = capsys.readouterr().out
    assert token[4:14] not in shown
    assert "refusing to accept c/http_401: it holds a secret of --secrets-file" in shown
    assert "c/http_401" not in _snapshot(tmp_path)
    self_scan(shown, [Secret.from_user(token, id="S1")], "review output")


# --- units -----------------------------------------------------------------------------------


def test_normalize_replaces_what_changes_between_runs() -> None:
    rid = "req_Zx81kQ"
    text = (
        f"request {rid}: Cannot connect to host 127.0.0.1:43817 ssl:default "
        "[Connect call failed ('127.0.0.1', 43817)]; localhost:5000, [::1]:6001, "
        "HTTPConnectionPool(host='127.0.0.1', port=38829), Unable to connect to port 40022; "
        "known_hosts /tmp/pytest-of-ci/pytest-7/test_x0/known_hosts, "
        "<Response at 0x7f3a2b4c5d60>, (_ssl.c:1006), got SHA256:abcdefghijklmnopqrstuvwxyz012, "
        "host «canary:hostname:prefix-13» tail «canary:bearer:pct>suffix-21», "
        "read timeout=0.3, timed out after 0.30s, HTTP 401, api-upstream.invalid:51234"
    )
    out = normalize(text, request_ids=[rid], ports=[51234])
    assert rid not in out and "request <request-id>:" in out
    assert "127.0.0.1:PORT" in out and "('127.0.0.1', PORT)" in out
    assert "localhost:PORT" in out and "[::1]:PORT" in out
    assert "port=PORT" in out and "port PORT" in out and "api-upstream.invalid:PORT" in out
    assert "known_hosts <tmp>," in out and "/tmp" not in out
    assert "0xADDR" in out and "(_ssl.c:LINE)" in out and "FINGERPRINT" in out
    assert "«canary:hostname:prefix»" in out and "«canary:bearer:pct>suffix»" in out
    # fixed by the harness, kept: a measured time would be the gateway's problem
    assert "read timeout=0.3" in out and "after 0.30s" in out and "HTTP 401" in out
    assert normalize(out) == out


def test_entry_masks_before_normalizing(canaries: CanaryFactory) -> None:
    token = canaries("bearer")
    from leakcheck.detect import Scanner

    mask = Scanner([token], decode=True).mask
    exc = ValueError(f"bad token {token.value} at 0x7f00aa11")
    entry = snapshot_entry(
        {"request_id": "req_q1w2e3r4", "detail": f"{token.value} (req_q1w2e3r4)"},
        exc,
        {"httpx": "1"},
        mask,
        key="op/stage",
    )
    self_scan(json.dumps(entry, ensure_ascii=False), [token], "entry")
    assert entry["exception_type"] == "builtins.ValueError"
    assert entry["exception"] == "ValueError: bad token «canary:bearer:raw» at 0xADDR\n"
    assert entry["response"] == {
        "request_id": "<request-id>",
        "detail": "«canary:bearer:raw» (<request-id>)",
    }


def test_item_keys_are_baseline_matrix_cases_only() -> None:
    class Item:
        def __init__(self, spec: object) -> None:
            self.callspec = type("CallSpec", (), {"params": {"leakcheck_case": spec}})()

    assert item_key(Item(CaseSpec("run", "ssh_auth_rejected", "ssh-password"))) == (
        "run/ssh_auth_rejected"
    )
    assert item_key(Item(CaseSpec("get", "http_401", "authorization-header"))) == "get/http_401"
    assert item_key(Item(CaseSpec("get", "http_401", "cookie"))) is None
    assert item_key(object()) is None


def test_side_by_side_aligns_changed_lines() -> None:
    rows = side_by_side("a\nsame\nold only", "a\nsame\nnew one\nextra", width=40)
    assert rows[2].startswith("a") and " a" in rows[2]
    assert any("|" in row and "old only" in row and "new one" in row for row in rows)
    assert any(row.strip().startswith(">") or " > " in row for row in rows)


def test_the_store_and_leakcheck_review_import_no_pytest(tmp_path) -> None:
    """``leakcheck review`` and the snapshot store run where pytest is not installed (a
    reviewer's shell): importing and running them loads no module of pytest's."""
    code = (
        "import sys\n"
        "import leakcheck.snapshot_store\n"
        "from leakcheck.cli import main\n"
        f"code = main(['review', '--dir', {str(tmp_path)!r}])\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('pytest', '_pytest'))\n"
        "print(code, loaded)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.stdout.splitlines()[-1] == "0 []", done.stdout + done.stderr


def test_a_result_objects_request_id_is_normalized() -> None:
    """A Target's ``call`` may return an object with a ``request_id`` attribute (README):
    its id, new every run, was left in the snapshot and every case drifted every run."""
    import dataclasses

    @dataclasses.dataclass
    class ToolResult:
        ok: bool
        request_id: str
        detail: str

    entries = [
        snapshot_entry(ToolResult(False, rid, f"failed ({rid})"), None, {"httpx": "1"})
        for rid in ("5f7e42fc0a1b", "12ca7e00d9e3")
    ]
    assert entries[0] == entries[1]
    assert "<request-id>" in json.dumps(entries[0]["response"])

    class Hostile:
        @property
        def request_id(self) -> str:
            raise RuntimeError("not loaded")

    assert snapshot_entry(Hostile(), None, {})["key"] == ""  # no id to normalize, no crash


def test_review_writes_only_below_the_rootdir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pending file is input (one fetched from a CI run of a fork's change): a
    ``snapshot_file`` of ``../../x.json`` or an absolute path was written there on accept."""
    root = tmp_path / "repo"
    root.mkdir()
    pending = root / PENDING_DIR
    pending.mkdir(parents=True)
    outside = tmp_path / "evil.json"
    for name, target in (("up", "../evil.json"), ("abs", str(outside)), ("txt", "tests/x.txt")):
        entries = {"k": {"old": None, "new": {"response": "hello"}}}
        document = {"format": 1, "module": name, "snapshot_file": target, "entries": entries}
        (pending / f"{name}.json").write_text(json.dumps(document), encoding="utf-8")
    assert main(["review", "--dir", str(root), "--accept-all"]) == 0
    out = capsys.readouterr().out
    assert out.count("the snapshot file it names is not a .json file below") == 3
    assert not outside.exists() and not (tmp_path / ".gitleaks.toml").exists()
    assert not (root / "tests" / "x.txt").exists()


def test_review_from_a_subdirectory_and_without_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run from ``tests/`` it said "nothing pending" with differences one level up; with
    no terminal it showed them and asked nothing, without saying why."""
    _pending_tree(tmp_path)
    sub = tmp_path / "tests"
    sub.mkdir(exist_ok=True)
    monkeypatch.chdir(sub)
    assert main(["review"]) == 1
    captured = capsys.readouterr()
    assert f"reviewing {str(tmp_path)!r}" in captured.err
    assert "0 accepted, 0 rejected, 3 pending" in captured.out
    assert "standard input is not a terminal: nothing was asked" in captured.err
    assert main(["review", "--dir", str(sub)]) == 2
    assert "give --dir the pytest rootdir" in capsys.readouterr().err


def test_review_output_that_cannot_be_written_is_one_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _pending_tree(tmp_path)

    class Full(io.StringIO):
        def write(self, text: str) -> int:
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(sys, "stdout", Full())
    assert main(["review", "--dir", str(tmp_path), "--reject-all"]) == 2
    err = capsys.readouterr().err
    assert "cannot write to standard output: No space left on device" in err
    assert "Traceback" not in err


def test_a_hand_edited_snapshots_key_shaped_names_are_opaque_in_drift() -> None:
    """A stored snapshot is a file of the repository: a version or a key edited by hand to
    hold a token was printed in the drift text and the summary as it was."""
    from leakcheck.snapshot_store import drift_line, render_drift

    token = "tok_" + secrets.token_urlsafe(24)
    old = snapshot_entry({"ok": False}, None, {"httpx": token}, key="a/http_401")
    new = snapshot_entry({"ok": True}, None, {"httpx": "0.29.0"}, key="a/http_401")
    shown = render_drift(f"a/http_401_{token}", old, new) + drift_line(old, new)
    assert token[4:12] not in shown and "«opaque» -> 0.29.0" in shown
    # (the twin: a plain version is shown)
    plain = snapshot_entry({"ok": False}, None, {"httpx": "0.28.1"}, key="a/http_401")
    assert "0.28.1 -> 0.29.0" in drift_line(plain, new)
