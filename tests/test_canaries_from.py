"""``leakcheck scan --canaries-from REPORT``: the canaries a pytest run planted, rebuilt from
its JSON report (seed, test ids, canary ids; never a value), searched for in the artifacts
the run left behind (logs, cassettes, dumps)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import self_scan

from leakcheck import cli
from leakcheck.canaries import CANARY_GENERATION, CanaryFactory, Secret
from leakcheck.cli import load_canaries

pytest_plugins = ["pytester"]

SEED = "canaries-from-1"

#: Each inner test writes what it planted into an artifact (or not), and the sha256 of every
#: canary value it made into a side file, so the rebuilt ones can be proven equal.
SUITE = """
import hashlib, json, os
from pathlib import Path
import pytest

ARTIFACTS = Path(os.environ["LEAKCHECK_TEST_ARTIFACTS"])

def _note(leakcheck, request):
    hashes = ARTIFACTS / "planted.jsonl"
    with hashes.open("a") as out:
        for secret in leakcheck.secrets:
            digest = hashlib.sha256(secret.value.encode()).hexdigest()
            out.write(json.dumps([request.node.nodeid, secret.id, digest]) + "\\n")

def test_writes_a_key_to_its_log(leakcheck, request):
    leakcheck.secret("bearer")
    key = leakcheck.secret("api_key")
    (ARTIFACTS / "gateway.log").write_text(f"GET /v1/deployments?api_key={key} 401\\n")
    _note(leakcheck, request)

@pytest.mark.parametrize("region", ["eu", "us"])
def test_writes_a_host_to_a_cassette(leakcheck, request, region):
    host = leakcheck.secret("hostname")
    if region == "us":
        (ARTIFACTS / "cassette.json").write_text(json.dumps({"url": f"https://{host}/x"}))
    _note(leakcheck, request)

def test_registers_its_own_token(leakcheck, request):
    leakcheck.register("ghp_Zq7Xk2Lm9Pw4Rt6Yv8Bn3Cd5Fg1Hj0Ks9Q")
    leakcheck.secret("cookie")
    _note(leakcheck, request)

def test_without_secrets():
    pass
"""


def run_suite(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, *args: str, subprocess: bool
) -> tuple[Path, Path]:
    artifacts = pytester.path / "artifacts"
    artifacts.mkdir()
    monkeypatch.setenv("LEAKCHECK_TEST_ARTIFACTS", str(artifacts))
    pytester.makepyfile(test_gw=SUITE)
    report = pytester.path / "leakcheck.json"
    run = pytester.runpytest_subprocess if subprocess else pytester.runpytest
    result = run(
        "-p", "no:randomly", "-p", "no:hypothesispytest",
        f"--leakcheck-seed={SEED}", f"--leakcheck-report={report}", *args,
    )  # fmt: skip
    result.assert_outcomes(passed=5)
    return report, artifacts


def planted(artifacts: Path) -> dict[str, str]:
    """``{id@test: sha256 of its value}`` as the inner run recorded them."""
    lines = (artifacts / "planted.jsonl").read_text().splitlines()
    return {f"{i}@{test}": digest for test, i, digest in map(json.loads, lines)}


def scan(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()  # an in-process inner run's own output is not the scan's
    code = cli.main(["scan", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_rebuilt_canaries_are_the_planted_ones_and_are_found(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    workers: tuple[str, ...],
) -> None:
    report, artifacts = run_suite(pytester, monkeypatch, *workers, subprocess=bool(workers))
    canaries, registered, lost = load_canaries(str(report))
    by_id = {c.id: hashlib.sha256(c.value.encode()).hexdigest() for c in canaries}
    expected = {k: v for k, v in planted(artifacts).items() if "#user" not in k}
    assert by_id == expected
    assert (registered, lost) == (1, 0)
    # the report itself holds no form of any of them
    self_scan(report.read_text(encoding="utf-8"), canaries, "the JSON report")

    code, out, err = scan(
        capsys, "--canaries-from", str(report), "--format", "json", str(artifacts)
    )
    assert code == 1, err
    found = {(f["secret_id"], Path(f["source"]).name) for f in json.loads(out)["findings"]}
    assert found == {
        ("api_key#1@test_gw.py::test_writes_a_key_to_its_log", "gateway.log"),
        ("hostname#1@test_gw.py::test_writes_a_host_to_a_cassette[us]", "cassette.json"),
    }
    assert "1 secret(s) that tests registered themselves cannot be rebuilt" in err
    self_scan(out + err, canaries, "scan output")


def test_a_clean_artifact_passes_and_registered_secrets_come_from_a_file(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    report, _ = run_suite(pytester, monkeypatch, subprocess=False)
    clean = tmp_path / "clean.log"
    clean.write_text("GET /v1/deployments?api_key=[REDACTED] 401\n")
    secrets = tmp_path / "secrets.txt"
    secrets.write_text("ghp_Zq7Xk2Lm9Pw4Rt6Yv8Bn3Cd5Fg1Hj0Ks9Q\n")
    code, out, err = scan(capsys, "--canaries-from", str(report), str(clean))
    assert (code, "note:" in err) == (0, True), (code, err)
    code, out, err = scan(
        capsys, "--canaries-from", str(report), "--secrets-file", str(secrets), str(clean)
    )
    assert (code, err) == (0, "")
    clean.write_text("token ghp_Zq7Xk2Lm9Pw4Rt6Yv8Bn3Cd5Fg1Hj0Ks9Q\n")
    code, out, _ = scan(
        capsys, "--canaries-from", str(report), "--secrets-file", str(secrets), str(clean)
    )
    assert code == 1 and "S1 (secret, direct): 1 hit" in out
    self_scan(out, [Secret.from_user("ghp_Zq7Xk2Lm9Pw4Rt6Yv8Bn3Cd5Fg1Hj0Ks9Q", id="S1")])


def _report(tests: Any, **extra: Any) -> str:
    return json.dumps(
        {
            "tool": "leakcheck",
            "canary_generation": CANARY_GENERATION,
            "seed": "1",
            "tests": tests,
            **extra,
        }
    )


def _mcp_report(cases: Any, **extra: Any) -> str:
    return json.dumps(
        {"leakcheck_mcp": 1, "seed": 3, "canary_generation": CANARY_GENERATION, "cases": cases}
        | extra
    )


_MCP_CASE = {"tool": "fetch", "stage": "http_401", "placement": "authorization-header"}
_MCP_NAMESPACE = "leakcheck-mcp::fetch-http_401-authorization-header"

BAD_REPORTS = [
    ("not json", "{", "is not valid JSON (line 1"),
    # an MCP audit's report (leakcheck mcp --format json)
    ("an mcp report of another version", _mcp_report([], leakcheck_mcp=2), "is not a leakcheck"),
    (
        "an mcp report before its cases named their canaries",
        json.dumps({"leakcheck_mcp": 1, "seed": 3, "cases": [_MCP_CASE]}),
        "an MCP audit report whose cases do not name their canaries",
    ),
    ("an mcp case not as written", _mcp_report([_MCP_CASE]), "case 1: not a case as leakcheck"),
    (
        "an mcp case's bad canary id",
        _mcp_report([_MCP_CASE | {"canary_namespace": _MCP_NAMESPACE, "canaries": ["beaver#1"]}]),
        "case 1: a canary id is not KIND#N",
    ),
    ("an mcp report of no case", _mcp_report([]), "lists no canary to search for"),
    ("another tool", json.dumps({"tool": "gitleaks"}), "is not a leakcheck report"),
    ("no seed", json.dumps({"tool": "leakcheck", "tests": []}), "is not a leakcheck report"),
    ("old report", _report([{"test": "t.py::t", "findings": []}]), "test 1: no list of its"),
    (
        "bad id",
        _report([{"test": "t.py::t", "secrets": [{"id": "beaver#1", "generated": True}]}]),
        "test 1: canary kind 'beaver' is none this leakcheck makes (a report of a newer",
    ),
    (
        "no test id",
        _report([{"test": None, "secrets": [{"id": "bearer#1", "generated": True}]}]),
        "test 1: its 'test' (the test's id) is no string",
    ),
    (
        "zero",
        _report([{"test": "t.py::t", "secrets": [{"id": "bearer#0", "generated": True}]}]),
        "is not a canary id",
    ),
    ("nothing planted", _report([]), "lists no canary to search for"),
    # another generation rebuilds other values from the same seed: it would find nothing
    (
        "written before generation 2",
        json.dumps(
            {
                "tool": "leakcheck",
                "seed": "1",
                "tests": [{"test": "t.py::t", "secrets": [{"id": "bearer#1", "generated": True}]}],
            }
        ),
        "its canaries are of generation 1, and this leakcheck makes generation 2",
    ),
    (
        "a generation not a number",
        _report(
            [{"test": "t.py::t", "secrets": [{"id": "bearer#1", "generated": True}]}],
            canary_generation="2",
        ),
        "its canaries are of generation unknown",
    ),
    # each entry is read as the plugin writes it (records.TestRecord): what is none, refused
    (
        "an entry not an object",
        _report([{"test": "t.py::t", "secrets": ["bearer#1"]}]),
        "test 1: not a test entry as leakcheck writes one",
    ),
    (
        "a bad matrix case",
        _report(
            [
                {
                    "test": "t.py::t",
                    "secrets": [{"id": "bearer#1", "generated": True}],
                    "matrix": {"stage": "upstream"},
                }
            ]
        ),
        "test 1: not a test entry as leakcheck writes one",
    ),
]


@pytest.mark.parametrize(
    ("text", "message"), [b[1:] for b in BAD_REPORTS], ids=[b[0] for b in BAD_REPORTS]
)
def test_a_bad_report_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, message: str
) -> None:
    report = tmp_path / "report.json"
    report.write_text(text)
    (tmp_path / "a.log").write_text("hello\n")
    code, out, err = scan(capsys, "--canaries-from", str(report), str(tmp_path / "a.log"))
    assert code == 2 and out == ""
    assert err.startswith("leakcheck: error: ") and message in err, err
    assert "Traceback" not in err


def test_scan_needs_some_secrets(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "a.log").write_text("hello\n")
    code, _, err = scan(capsys, str(tmp_path / "a.log"))
    assert code == 2
    assert "give --secrets-file FILE, --canaries-from REPORT, or both" in err
    code, _, err = scan(capsys, "--canaries-from", str(tmp_path / "missing.json"), "x")
    assert code == 2 and "cannot read report" in err and "No such file" in err


def test_canaries_of_a_test_whose_id_was_masked_are_named_not_rebuilt(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A test id holding a registered secret is masked in the report; its canaries were
    made from the id as it was: never silently searched for as something else."""
    report = tmp_path / "report.json"
    planted = {"id": "bearer#1", "kind": "bearer", "generated": True}
    report.write_text(
        _report(
            [
                {"test": "t.py::test_a[\u00abcanary:secret:raw\u00bb]", "secrets": [planted]},
                {"test": "t.py::test_b", "secrets": [planted]},
            ]
        )
    )
    canaries, registered, lost = load_canaries(str(report))
    assert [c.id for c in canaries] == ["bearer#1@t.py::test_b"]
    assert (registered, lost) == (0, 1)
    (tmp_path / "a.log").write_text("hello\n")
    code, _, err = scan(capsys, "--canaries-from", str(report), str(tmp_path / "a.log"))
    assert code == 0
    assert "warning: 1 canary(ies) cannot be rebuilt: their test's id (or MCP case's" in err
    assert "tool name) holds a secret and is masked in the report" in err


# --- a sharded run: one report per shard ---------------------------------------------------

#: The inner suite split into two shards with ``-k``, as a CI matrix runs it (each shard its
#: own seed, drawn by the plugin): shard 1 writes its api key into gateway.log, shard 2 its
#: "us" host into cassette.json.
SHARD_SELECTIONS = {"1": "log or without", "2": "cassette or registers"}


def run_shards(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[Path], Path]:
    artifacts = pytester.path / "artifacts"
    artifacts.mkdir()
    monkeypatch.setenv("LEAKCHECK_TEST_ARTIFACTS", str(artifacts))
    pytester.makepyfile(test_gw=SUITE)
    reports = []
    for shard, selection in SHARD_SELECTIONS.items():
        report = pytester.path / "build" / f"leakcheck-{shard}.json"
        result = pytester.runpytest(
            "-p", "no:randomly", "-p", "no:hypothesispytest", "-k", selection,
            f"--leakcheck-report={report}",
        )  # fmt: skip
        result.assert_outcomes(passed={"1": 2, "2": 3}[shard])
        reports.append(report)
    return reports, artifacts


def found_in(out: str) -> set[tuple[str, str]]:
    return {(f["secret_id"], Path(f["source"]).name) for f in json.loads(out)["findings"]}


def test_the_canaries_of_every_shard_are_searched_for(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--canaries-from`` once per report: every shard's canaries, each rebuilt from its own
    report's seed. Before, the last option alone was kept: shard 1's leak went unseen."""
    (one, two), artifacts = run_shards(pytester, monkeypatch)
    assert json.loads(one.read_text())["seed"] != json.loads(two.read_text())["seed"]
    canaries = [c for r in (one, two) for c in load_canaries(str(r))[0]]
    by_hash = {f"{c.id}": hashlib.sha256(c.value.encode()).hexdigest() for c in canaries}
    assert by_hash == {k: v for k, v in planted(artifacts).items() if "#user" not in k}

    args = ("--format", "json", str(artifacts))
    code, out, err = scan(capsys, "--canaries-from", str(one), "--canaries-from", str(two), *args)
    assert code == 1, err
    assert found_in(out) == {
        ("api_key#1@test_gw.py::test_writes_a_key_to_its_log", "gateway.log"),
        ("hostname#1@test_gw.py::test_writes_a_host_to_a_cassette[us]", "cassette.json"),
    }
    assert len(json.loads(out)["secrets"]) == len(canaries)
    assert "1 secret(s) that tests registered themselves cannot be rebuilt from the reports" in err
    self_scan(out + err, canaries, "scan output")
    # the option's = form too; a shard alone finds its own leak only
    code, out, _ = scan(capsys, f"--canaries-from={two}", *args)
    assert (code, {s for _, s in found_in(out)}) == (1, {"cassette.json"})
    code, out, _ = scan(capsys, "--canaries-from", str(one), *args)
    assert (code, {s for _, s in found_in(out)}) == (1, {"gateway.log"})


def test_a_report_after_the_option_by_a_glob_is_refused(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--canaries-from build/leakcheck-*.json build/`` gives the option the first report
    only and makes the others PATHs: a usage error naming the report, never a scan that
    silently leaves a shard's canaries out. A report also given with the option is scanned
    as any artifact (the demo scans a run's own report)."""
    (one, two), artifacts = run_shards(pytester, monkeypatch)
    code, out, err = scan(capsys, "--canaries-from", str(one), str(two), str(artifacts))
    assert (code, out) == (2, "")
    assert err.startswith(f"leakcheck: error: {str(two)!r} is a leakcheck report named as a PATH")
    assert "give each report its own --canaries-from" in err and err.count("\n") == 1
    code, _, err = scan(capsys, "--canaries-from", str(one), "--canaries-from", str(two),
                        str(one), str(two), str(artifacts))  # fmt: skip
    assert code == 1, err
    # a report below a directory is an artifact like any other (named, it would be refused)
    code, _, err = scan(capsys, "--canaries-from", str(one), str(pytester.path / "build"))
    assert code == 0, err
    # with no --canaries-from at all (a secrets file only): refused too, saying the fix
    secrets = pytester.path / "secrets.txt"
    secrets.write_text("ghp_Wd4Kx9Qm2Vt7Lp3Rz8Hn5Jc1Fb6Gs0Ya\n")
    code, out, err = scan(capsys, "--secrets-file", str(secrets), str(two), str(artifacts))
    assert (code, out) == (2, "")
    assert err.startswith(f"leakcheck: error: {str(two)!r} is a leakcheck report named as a PATH")
    assert "give it with --canaries-from REPORT" in err


def test_a_report_given_twice_is_read_once(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (one, _), artifacts = run_shards(pytester, monkeypatch)
    link = one.parent / "again.json"
    link.symlink_to(one)
    twice = ("--canaries-from", str(one), "--canaries-from", str(one))
    code, out, err = scan(capsys, *twice, "--canaries-from", str(link), "--format", "json",
                          str(artifacts))  # fmt: skip
    assert code == 1 and "given as" not in err, err
    assert len(json.loads(out)["secrets"]) == len(load_canaries(str(one))[0])


@pytest.mark.parametrize("seeds", [("1", "1"), ("1", "2")], ids=["same seed", "other seed"])
def test_one_test_in_two_shards(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, seeds: tuple[str, str]
) -> None:
    """The same test run in two shards (overlapping selections, a re-run): with the same
    seed its canary is the same value, searched for once under its name; with another seed
    it is another canary, named after its report so that a finding says which shard's."""
    entry = {"test": "t.py::t", "secrets": [{"id": "bearer#1", "generated": True}]}
    paths = []
    for n, seed in enumerate(seeds, start=1):
        path = tmp_path / f"leakcheck-{n}.json"
        path.write_text(
            json.dumps(
                {
                    "tool": "leakcheck",
                    "canary_generation": CANARY_GENERATION,
                    "seed": seed,
                    "tests": [entry],
                }
            )
        )
        paths.append(path)
    log = tmp_path / "a.log"
    log.write_text("nothing here\n")
    code, out, err = scan(capsys, "--canaries-from", str(paths[0]), "--canaries-from",
                          str(paths[1]), "--format", "json", str(log))  # fmt: skip
    assert (code, err) == (0, "")
    ids = [s["id"] for s in json.loads(out)["secrets"]]
    if seeds[0] == seeds[1]:
        assert ids == ["bearer#1@t.py::t"]
    else:
        assert ids == ["bearer#1@t.py::t", f"bearer#1@t.py::t@{paths[1]}"]


def test_an_unreadable_report_among_several_is_a_usage_error_naming_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    good = tmp_path / "leakcheck-1.json"
    good.write_text(
        _report([{"test": "t.py::t", "secrets": [{"id": "bearer#1", "generated": True}]}])
    )
    (tmp_path / "a.log").write_text("hello\n")
    bad = tmp_path / "leakcheck-2.json"
    for text, message in [
        (None, "cannot read report"),
        ('{"tool": "leakcheck", "seed": "1", "tests": [', "is not valid JSON (line 1"),
        (json.dumps({"tool": "gitleaks", "token": "ghp_Zq7Xk2Lm9Pw4Rt6Yv8Bn3Cd5Fg1Hj0Ks9Q"}),
         "is not a leakcheck report"),
    ]:  # fmt: skip
        if text is not None:
            bad.write_text(text)
        code, out, err = scan(capsys, "--canaries-from", str(good), "--canaries-from", str(bad),
                              str(tmp_path / "a.log"))  # fmt: skip
        assert (code, out) == (2, "")
        assert err.startswith("leakcheck: error: ") and err.count("\n") == 1, err
        assert repr(str(bad)) in err and message in err, err
        assert "gitleaks" not in err and "ghp_" not in err and "Traceback" not in err
    empty = tmp_path / "empty.json"
    empty.write_text(_report([]))
    code, _, err = scan(capsys, "--canaries-from", str(empty), "--canaries-from", str(bad),
                        str(tmp_path / "a.log"))  # fmt: skip
    assert code == 2 and "is not a leakcheck report" in err
    bad.write_text(_report([]))
    code, _, err = scan(capsys, "--canaries-from", str(empty), "--canaries-from", str(bad),
                        str(tmp_path / "a.log"))  # fmt: skip
    assert code == 2
    assert f"reports {str(empty)!r} and {str(bad)!r} list no canary to search for" in err


def test_an_mcp_audits_report_rebuilds_its_cases_canaries(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Each case's canaries, drawn with the run's seed in the case's namespace, named by
    the case; a case whose namespace was masked (a tool named with a secret) has lost its
    canaries, and the scan says how many. ``leakcheck request-ids`` says it reads pytest's
    reports, not that an audit's report is none."""
    token = CanaryFactory(3, namespace=_MCP_NAMESPACE).nth("bearer", 1)
    report = tmp_path / "audit.json"
    report.write_text(
        _mcp_report(
            [
                _MCP_CASE | {"canary_namespace": _MCP_NAMESPACE, "canaries": ["bearer#1"]},
                _MCP_CASE | {"canary_namespace": "leakcheck-mcp::\u00abcanary:bearer:raw\u00bb",
                             "canaries": ["bearer#1", "api_key#1"]},
                _MCP_CASE | {"canary_namespace": _MCP_NAMESPACE, "canaries": []},
            ]
        )
    )  # fmt: skip
    log = tmp_path / "server.log"
    log.write_text(f"authorization: Bearer {token.value}\n")
    code, out, err = scan(capsys, "--canaries-from", str(report), str(log))
    assert code == 1, err
    assert "bearer#1@fetch/http_401/authorization-header (bearer, direct): 1 hit" in out
    assert "2 canary(ies) cannot be rebuilt" in err
    self_scan(out + err, [token])
    code = cli.main(["request-ids", str(report)])
    out, err = capsys.readouterr()
    assert code == 2 and "is an MCP audit's report: a request id is checked across" in err
