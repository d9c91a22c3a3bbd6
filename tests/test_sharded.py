"""Sharded CI: a suite split over several machines, each shard its own pytest run with its
own ``--leakcheck-report``. Each shard judges only its own request ids; ``leakcheck
request-ids REPORT...`` judges all of them together, as the plugin judges one run's.

The shard reports here are real: a small stage matrix over a toy gateway, split with
``-k`` into two inner pytest runs, as a CI matrix job would run it. The gateway's request
ids come from a generator chosen by an environment variable: random (clean), a PRNG seeded
the same in every process (unique in each shard, the same ids in both), or that seeded
draw plus the shard's worker number (unique everywhere, but each id of the second shard is
one of the first's stepped by one). Assertions compare counts, rules and indexes: neither a
request id nor a canary is printed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import self_scan

from leakcheck import cli
from leakcheck.canaries import CANARY_GENERATION, Secret
from leakcheck.cli import load_canaries
from leakcheck.contract.request_ids import request_id_verdict
from leakcheck.records import CaseResult, TestRecord

pytest_plugins = ["pytester"]

TOY = """
import itertools
import os
import random
import secrets

from leakcheck.matrix import Operation, Target

IDS = os.environ["TOY_IDS"]
RNG = random.Random(20260101)  # "seeded", "worker": the same in every process
COUNTER = itertools.count(1)


def request_id():
    if IDS == "random":
        return "req_" + secrets.token_hex(16)
    if IDS == "seeded":
        return f"req_{RNG.getrandbits(128):032x}"
    if IDS == "worker":  # a snowflake-style id: a seeded draw and the worker's number
        return f"req_{RNG.getrandbits(96):024x}-w{os.environ['TOY_WORKER']}"
    return f"req_{next(COUNTER):020d}"  # "counter"


class Toy:
    def __init__(self, case):
        self.case, self.records = case, {}

    def call(self):
        case, rid = self.case, request_id()
        states = dict.fromkeys(
            ["validated", "credential_selected", "authorized", "connection_started",
             "bytes_sent", "response_received", "result_returned"], False)
        self.records[rid] = {"request_id": rid, "states": states}

        def fail(code, action, **extra):
            return {"ok": False, "code": code, "action": action, "message": "failed",
                    "retryable": False, "request_id": rid, "operation": case.operation.name,
                    **extra}

        data = case.agent_input
        bad = sorted(k for k in ("repo", "replicas") if k in data and not isinstance(data[k], str))
        if bad:
            return fail("INVALID_INPUT", "repair_input", invalid_fields=bad)
        states["validated"] = True
        try:
            case.vault.get("bearer")
        except Exception:
            return fail("VAULT_LOCKED", "stop_and_report")
        states["credential_selected"] = True
        return {"ok": True, "request_id": rid}


class ToyTarget(Target):
    operations = [
        Operation("create_deployment", "http", repeatable=False, input={"repo": "web"}),
        Operation("get_deployment", "http", repeatable=True, input={"repo": "web"}),
    ]
    stages = ["invalid_input", "vault_locked"]
    placements = ["authorization-header", "agent-input-json"]

    def call(self, case):
        case.context["gateway"] = gateway = Toy(case)
        return gateway.call()

    def record(self, case, request_id):
        return case.context["gateway"].records.get(request_id)
"""

#: The two shards of the CI matrix, as ``-k`` selections (pytest-split works the same way:
#: each shard a disjoint part of the collected cases).
SHARDS = {"1": "create_deployment", "2": "get_deployment"}
CASES_PER_SHARD = 4


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(toy=TOY)
    pytester.makepyfile(
        test_toy="from toy import ToyTarget\nfrom leakcheck.matrix import stage_matrix\n"
        "test_gateway = stage_matrix(ToyTarget())\n"
    )
    return pytester


def run_shard(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    shard: str,
    ids: str,
    *args: str,
    subprocess: bool = False,
) -> tuple[Path, pytest.RunResult]:
    """``pytest -k SELECTION --leakcheck-report build/leakcheck-SHARD.json`` (its own
    seed, as each CI job draws one), the gateway's ids made by ``ids``."""
    monkeypatch.setenv("TOY_IDS", ids)
    monkeypatch.setenv("TOY_WORKER", shard)
    report = pytester.path / "build" / f"leakcheck-{shard}.json"
    run = pytester.runpytest_subprocess if subprocess else pytester.runpytest
    result = run(
        "-p", "no:randomly", "-p", "no:hypothesispytest", "--no-leakcheck-snapshots",
        "-k", SHARDS[shard], f"--leakcheck-report={report}", *args,
    )  # fmt: skip
    result.assert_outcomes(passed=CASES_PER_SHARD)
    return report, result


def shards(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, ids: str
) -> list[tuple[Path, pytest.RunResult]]:
    return [run_shard(pytester, monkeypatch, shard, ids) for shard in SHARDS]


def request_ids(capsys: pytest.CaptureFixture[str], *reports: Path | str) -> tuple[int, str, str]:
    capsys.readouterr()  # an in-process inner run's own output is not the command's
    try:
        code = cli.main(["request-ids", *map(str, reports)])
    except SystemExit as exc:  # argparse's own usage errors
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def ids_of(report: Path) -> list[str]:
    return [t["matrix"]["request_id"] for t in json.loads(report.read_text())["tests"]]


def planted(*reports: Path) -> list[Secret]:
    return [c for r in reports for c in load_canaries(str(r))[0]]


def rules(out: str) -> set[str]:
    return set(re.findall(r"^  - ([a-z-]+): ", out, re.MULTILINE))


def test_ids_unique_in_each_shard_but_the_same_across_shards_fail(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A generator seeded the same in every process: each shard's own verdict is ok (it
    sees four distinct ids), yet the second shard handed out the first one's ids again."""
    (one, first), (two, second) = shards(suite, monkeypatch, "seeded")
    for result in (first, second):
        assert result.ret == 0
        assert f"request ids across {CASES_PER_SHARD} case(s): ok" in result.stdout.str()
    assert len(set(ids_of(one))) == len(set(ids_of(two))) == CASES_PER_SHARD
    assert set(ids_of(one)) == set(ids_of(two))  # compared, never shown

    code, out, err = request_ids(capsys, one, two)
    assert (code, err) == (1, "")
    lines = out.splitlines()
    assert lines[0] == "leakcheck request-ids: 2 report(s), 8 matrix case(s), 8 id(s) returned"
    assert lines[1] == f"  {one}: {CASES_PER_SHARD} case(s), alone: ok"
    assert lines[2] == f"  {two}: {CASES_PER_SHARD} case(s), alone: ok"
    assert "request ids across 8 case(s): FAILED" in lines
    assert "request-id-unique" in rules(out)
    # the repeats are the second shard's ids (4 to 7), each named with its report and test
    assert "repeats an earlier id: ids[4], ids[5], ids[6], ids[7]" in out
    for index in range(4, 8):
        assert re.search(rf"^  ids\[{index}\]: {re.escape(str(two))} test_toy\.py::", out, re.M)
    self_scan(out, planted(one, two), "request-ids output")
    assert not any(rid in out for rid in ids_of(one))  # the ids themselves are never printed

    # the order of the reports changes which are called repeats, not the verdict
    code, out, _ = request_ids(capsys, two, one)
    assert code == 1 and "request-id-unique" in rules(out)


def test_ids_stepped_by_the_shard_number_are_sequential_across_shards(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Snowflake-style ids, a seeded draw plus the worker's number: every id is distinct,
    each shard alone passes, and together every id of shard 2 is one of shard 1's with a
    decimal number stepped by 1 (found in sorted order, as ids handed out concurrently)."""
    (one, first), (two, second) = shards(suite, monkeypatch, "worker")
    assert first.ret == second.ret == 0
    assert len(set(ids_of(one) + ids_of(two))) == 2 * CASES_PER_SHARD

    code, out, _ = request_ids(capsys, one, two)
    assert code == 1
    assert "request-id-sequential" in rules(out)
    assert "request-id-unique" not in rules(out)
    assert "stepped by 1: a counter, not an opaque id" in out
    self_scan(out, planted(one, two), "request-ids output")


def test_a_clean_pair_of_shards_passes(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Random ids, each shard under ``-n 2`` as in CI (its workers merged into its report)."""
    one, _ = run_shard(suite, monkeypatch, "1", "random", "-n", "2", subprocess=True)
    two, _ = run_shard(suite, monkeypatch, "2", "random", "-n", "2", subprocess=True)
    code, out, err = request_ids(capsys, one, two)
    assert (code, err) == (0, ""), out
    assert "request ids across 8 case(s): ok" in out.splitlines()
    assert "  - " not in out
    self_scan(out, planted(one, two), "request-ids output")


def test_the_verdict_is_the_one_the_plugin_prints(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """On one run's report the command prints, line for line, the verdict the plugin
    printed at the end of that run: for a counter (failed) and for random ids (ok)."""
    for ids, code in (("counter", 1), ("random", 0)):
        report, result = run_shard(suite, monkeypatch, "1", ids)
        got, out, _ = request_ids(capsys, report)
        assert got == code
        verdict = out.splitlines()[2 : 3 + (len(rules(out)) if code else 0)]
        assert verdict[0].startswith("request ids across 4 case(s): ")
        plugin = result.stdout.lines
        start = plugin.index(verdict[0])
        assert plugin[start : start + len(verdict)] == verdict
        if code:  # the plugin's next line is no further violation
            assert not plugin[start + len(verdict)].startswith("  - ")


def test_the_same_report_twice_is_read_once(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Named twice (or through a link), a report's ids would all repeat: read once."""
    report, _ = run_shard(suite, monkeypatch, "1", "random")
    link = report.parent / "link.json"
    link.symlink_to(report)
    code, out, _ = request_ids(capsys, report, report, link)
    assert code == 0
    assert out.splitlines()[0].startswith("leakcheck request-ids: 1 report(s), 4 matrix")


def crafted(path: Path, request_ids: list[str | None], seed: str = "1") -> Path:
    """A report as the plugin writes one, from ``TestRecord.to_json``."""
    tests = []
    for n, rid in enumerate(request_ids):
        case = CaseResult("get_deployment", "vault_locked", f"p{n}", request_id=rid)
        tests.append(TestRecord(f"t.py::test_gw[{n}]", 0, matrix=case, outcome="passed").to_json())
    path.write_text(
        json.dumps(
            {
                "tool": "leakcheck",
                "canary_generation": CANARY_GENERATION,
                "seed": seed,
                "tests": tests,
            }
        )
    )
    return path


def test_too_few_ids_are_said_never_ok(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one = crafted(tmp_path / "a.json", [None, None])
    code, out, _ = request_ids(capsys, one)
    assert code == 0 and "request ids across 2 case(s): no ids returned" in out
    two = crafted(tmp_path / "b.json", ["req_" + "ab" * 16])
    code, out, _ = request_ids(capsys, one, two)
    assert code == 0 and "request ids across 3 case(s): 1 id returned, too few to check" in out


def test_verdict_over_records_matches_the_plugins_rules() -> None:
    """``request_id_verdict`` reads records as the plugin gathers them: only matrix cases,
    only ids returned, in order; none checked below two."""
    records: list[dict[str, Any]] = [
        {"test": "a", "forbidden": 0},
        {"test": "b", "matrix": {"request_id": None}},
        {"test": "c", "matrix": {"request_id": "req_00000000000000000001"}},
        {"test": "d", "matrix": {"request_id": "req_00000000000000000002"}},
    ]
    verdict = request_id_verdict(records)
    assert (verdict.cases, verdict.returned, verdict.word) == (3, 2, "FAILED")
    assert verdict.lines()[0] == "request ids across 3 case(s): FAILED"
    assert request_id_verdict(records[:3]).word == "1 id returned, too few to check"


BAD = {
    "missing": (None, "cannot read report", "No such file"),
    "not json": ("{", "is not valid JSON (line 1", ""),
    "another tool": (json.dumps({"tool": "gitleaks"}), "is not a leakcheck report", ""),
    "an entry not one": (
        json.dumps({"tool": "leakcheck", "seed": "1", "tests": [{"test": "t", "matrix": 3}]}),
        "test 1: its matrix case is not one as leakcheck writes it",
        "",
    ),
}


@pytest.mark.parametrize("name", list(BAD))
def test_a_report_that_cannot_be_read_is_a_usage_error_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    good = crafted(tmp_path / "good.json", ["req_" + "ab" * 16, "req_" + "cd" * 16])
    text, *fragments = BAD[name]
    bad = tmp_path / "shard-2.json"
    if text is not None:
        bad.write_text(text)
    code, out, err = request_ids(capsys, good, bad)
    assert (code, out) == (2, "")
    assert err.startswith("leakcheck: error: ") and err.count("\n") == 1, err
    assert repr(str(bad)) in err
    assert all(f in err for f in fragments), err
    assert "Traceback" not in err and "gitleaks" not in err


def test_reports_without_a_matrix_case_are_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "leakcheck.json"
    report.write_text(json.dumps({"tool": "leakcheck", "seed": "1", "tests": []}))
    code, out, err = request_ids(capsys, report)
    assert (code, out) == (2, "")
    assert err.startswith("leakcheck: error: no matrix case in ") and err.count("\n") == 1
    code, _, err = request_ids(capsys)
    assert code == 2 and "REPORT" in err and "Traceback" not in err
