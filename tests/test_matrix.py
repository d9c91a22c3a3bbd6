"""The stage matrix on a toy gateway (gateway-side stages only, so no transport is needed):
collection, ids, the four assertions, failure text, the request-id check, the grid."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import inner_outcomes, self_scan

from leakcheck import CanaryFactory
from leakcheck.matrix import (
    CaseSpec,
    Operation,
    Target,
    TargetError,
    cases_for,
    format_grid,
    stage_matrix,
)

pytest_plugins = ["pytester"]

TOY = '''
import secrets
import itertools
from leakcheck.matrix import Operation, Target, stage_matrix

COUNTER = itertools.count(1)


class Toy:
    """A gateway with a switch per mistake."""

    def __init__(self, case, mistakes):
        self.case, self.mistakes, self.records = case, mistakes, {}

    def request_id(self):
        if "sequential" in self.mistakes:
            return f"req_{next(COUNTER):020d}"
        return "req_" + secrets.token_urlsafe(16)

    def call(self):
        case, rid = self.case, self.request_id()
        states = dict.fromkeys(
            ["validated", "credential_selected", "authorized", "connection_started",
             "bytes_sent", "response_received", "result_returned"], False)
        self.records[rid] = {"request_id": rid, "states": states}
        def fail(code, action, **extra):
            message = extra.pop("message", "failed")
            return {"ok": False, "code": code, "action": action, "message": message,
                    "retryable": action == "retry_after_delay", "request_id": rid,
                    "operation": case.operation.name, **extra}
        data = case.agent_input
        bad = sorted(k for k in ("repo", "replicas") if k in data and not isinstance(data[k], str))
        if bad:
            msg = f"bad repo {data['repo']!r}" if "echo" in self.mistakes else "input is invalid"
            return fail("INVALID_INPUT", "repair_input", invalid_fields=bad, message=msg)
        states["validated"] = True
        try:
            token = case.vault.get("bearer")
        except Exception:
            return fail("VAULT_LOCKED", "stop_and_report")
        states["credential_selected"] = True
        if "raises" in self.mistakes:
            raise RuntimeError(f"could not deploy with {token}")
        if "record_token" in self.mistakes:
            self.records[rid]["credential"] = token
        if not case.approver.approve(case.operation.name, ""):
            code = "AUTH_FAILED" if "denial_as_auth" in self.mistakes else "USER_DENIED"
            return fail(code, "stop_and_report")
        states["authorized"] = True
        try:
            case.boom()
        except Exception as exc:
            msg = str(exc) if "raw" in self.mistakes else "internal error"
            return fail("INTERNAL_ERROR", "stop_and_report", message=msg)
        return {"ok": True, "request_id": rid}


class ToyTarget(Target):
    operations = [
        Operation("create_deployment", "http", repeatable=False, input={"repo": "web"}),
        Operation("get_deployment", "http", repeatable=True, input={"repo": "web"}),
    ]
    stages = ["invalid_input", "vault_locked", "approval_declined", "gateway_exception"]
    placements = ["authorization-header", "agent-input-json"]

    def __init__(self, *mistakes):
        self.mistakes = mistakes

    def call(self, case):
        case.context["gateway"] = gateway = Toy(case, self.mistakes)
        return gateway.call()

    def record(self, case, request_id):
        return case.context["gateway"].records.get(request_id)
'''


def _inner(pytester: pytest.Pytester, *mistakes: str, args: tuple[str, ...] = ()) -> tuple:
    pytester.makepyfile(toy=TOY)
    quoted = ", ".join(repr(m) for m in mistakes)
    pytester.makepyfile(
        test_toy=f"from toy import ToyTarget\nfrom leakcheck.matrix import stage_matrix\n"
        f"test_gateway = stage_matrix(ToyTarget({quoted}))\n"
    )
    report = pytester.path / "report.json"
    result = pytester.runpytest(
        "-p", "no:randomly", "-rA", "--leakcheck-seed=matrix-1", "--no-leakcheck-snapshots",
        f"--leakcheck-report={report}", *args,
    )  # fmt: skip
    return result, json.loads(report.read_text()) if report.exists() else {}


def test_cases_are_operation_by_stage_by_placement() -> None:
    class Two(Target):
        operations = [
            Operation("create_deployment", "http", repeatable=False),
            Operation("run_command", "ssh", repeatable=False),
        ]

    specs = cases_for(Two())
    ids = [s.id for s in specs]
    assert len(ids) == len(set(ids))
    assert "create_deployment-http_401-upstream-prose" in ids
    # an upstream header cannot show when nothing answered; SSH has no HTTP placements
    assert "create_deployment-dns_failure-upstream-set-cookie" not in ids
    assert not any(i.startswith("run_command-http_") for i in ids)
    assert "run_command-ssh_command_failed-ssh-env" in ids
    assert "create_deployment-vault_locked-exception-chain" not in ids
    assert "create_deployment-gateway_exception-exception-chain" in ids


def test_bad_targets_are_clear_errors() -> None:
    class Empty(Target):
        pass

    with pytest.raises(ValueError, match="operations is empty"):
        cases_for(Empty())

    class Typo(Target):
        operations = [Operation("a", "http", repeatable=True)]
        stages = ["http_418"]

    with pytest.raises(TargetError, match=r"unknown stages 'http_418' \(did you mean 'http_401'"):
        cases_for(Typo())
    with pytest.raises(ValueError, match="transport must be"):
        Operation("a", "ftp", repeatable=True)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="generic action class"):
        Operation("POST /v1/deployments", "http", repeatable=True)


def test_a_target_written_wrong_is_one_message() -> None:
    """A newcomer's Target mistakes, each a TargetError naming the fix (before: an
    AttributeError from our frames, a ValueError, or a harness error about a request that
    never came: an async ``call`` returned a coroutine, a ``call(self)`` raised TypeError,
    read as the gateway's own)."""

    class Plain(Target):
        stages = ["http_401"]
        operations = [Operation("create_deployment", "http", repeatable=False)]

        def call(self, case: Any) -> Any:
            return {}

    class NoCase(Plain):
        def call(self) -> Any:  # type: ignore[override]
            return {}

    class Async(Plain):
        async def call(self, case: Any) -> Any:  # type: ignore[override]
            return {}

    class Slow(Plain):
        timeout = "0.3"  # type: ignore[assignment]

    class Spelt(Plain):
        placements = ["authorisation-header"]

    class Duck:
        operations = Plain.operations

    class Unrunnable(Plain):
        stages = ["http_401", "ssh_auth_rejected"]

    class SshOverLoopback(Plain):
        stages = ["ssh_auth_rejected"]
        operations = [Operation("run_command", "ssh", repeatable=False, via="loopback")]

    for target, said in (
        (Plain, "stage_matrix(Plain): pass an instance, Plain(), not the class"),
        (Duck(), "Duck is not a leakcheck.matrix.Target: subclass it"),
        (Async(), "Async.call is async: the matrix calls it as a function"),
        (NoCase(), "NoCase.call(self): it is called as call(self, case)"),
        (Slow(), "Slow.timeout: a number of seconds above 0, not '0.3'"),
        (Unrunnable(), "Unrunnable.stages: ssh_auth_rejected apply to no operation of it"),
        (SshOverLoopback(), "forces its stages via 'loopback', which forces http stages only"),
        (Spelt(), "unknown placements 'authorisation-header' (did you mean 'authorization-header'"),
    ):
        with pytest.raises(TargetError) as info:
            stage_matrix(target)  # type: ignore[arg-type]
        assert said in str(info.value), str(info.value)


def test_careful_toy_passes_every_case(pytester: pytest.Pytester) -> None:
    result, report = _inner(pytester)
    outcomes = inner_outcomes(result)
    assert len(outcomes) == 2 * 4 * 2
    assert set(outcomes.values()) == {"PASSED"}, result.stdout.str()
    assert report["request_ids"] == []
    assert "request ids across 16 case(s): ok" in result.stdout.str()
    assert all(not r["matrix"]["failed"] for r in report["tests"])


def test_collection_is_eager_and_selectable(pytester: pytest.Pytester) -> None:
    result, _ = _inner(pytester, args=("--collect-only", "-q", "-k", "vault_locked"))
    lines = [line for line in result.outlines if "::" in line]
    assert len(lines) == 4
    assert all("vault_locked" in line for line in lines)


def test_each_mistake_fails_its_assertion_only(pytester: pytest.Pytester) -> None:
    result, report = _inner(pytester, "denial_as_auth", "echo", "raw", "record_token")

    def expected(stage: str, placement: str) -> set[str]:
        # the token is read from the vault before approval: from then on it is in the record
        if stage == "approval_declined":
            return {"contract", "record"}  # denial reported as AUTH_FAILED
        if stage == "gateway_exception":  # str(exc): a token, a host, a header name
            return {"leaks", "hygiene", "record"}
        if stage == "invalid_input":  # the echoed input: the rejected value holds a token
            return {"leaks"}
        return set()

    for record in report["tests"]:
        case = record["matrix"]
        want = expected(case["stage"], case["placement"])
        assert set(case["failed"]) == want, (case["stage"], case["placement"])
        assert (record["outcome"] == "failed") == bool(want)
    out = result.stdout.str()
    assert "leakcheck matrix: operation create_deployment, stage approval_declined" in out
    assert "[contract] expected code and permitted action" in out
    assert "[hygiene] no raw headers" in out
    assert "rerun: pytest 'test_toy.py::test_gateway[" in out
    assert "[LEAK] operator: protected record $.credential" in out
    _scan_inner(pytester, result)


def test_a_gateway_that_raises_is_a_counted_gateway_raised_failure(
    pytester: pytest.Pytester,
) -> None:
    """An exception instead of an envelope reaches the agent: the case fails as "gateway
    raised" (never a harness crash, never missing from the grid) and the token in its
    message is a leak."""
    result, report = _inner(pytester, "raises")
    out = result.stdout.str()
    assert "INTERNALERROR" not in out
    assert len(report["tests"]) == 16  # every case reported, the raising ones included
    for record in report["tests"]:
        case = record["matrix"]
        raised = case["stage"] in ("approval_declined", "gateway_exception")
        assert ({"raised", "leaks"} <= set(case["failed"])) == raised, case["stage"]
        assert (record["outcome"] == "failed") == raised
    result.stdout.fnmatch_lines(
        [
            "*[[]raised[]] the gateway raised instead of returning an error:",
            "*- gateway-raised: the gateway raised RuntimeError instead of returning an error "
            "envelope (raised at *:* in *: *)",
        ]
    )
    grid = out[out.index("stage matrix (") :]
    assert "x=gateway raised" in grid
    row = next(line for line in grid.splitlines() if line.startswith("gateway_exception"))
    assert "0/2 FAIL" in row and "x" in row.split("FAIL")[1]
    _scan_inner(pytester, result)


def test_sequential_request_ids_fail_the_session(pytester: pytest.Pytester) -> None:
    result, report = _inner(pytester, "sequential")
    assert set(inner_outcomes(result).values()) == {"PASSED"}
    assert result.ret == 1
    rules = {p["rule"] for p in report["request_ids"]}
    assert "request_id.sequential" in rules or any("sequen" in r for r in rules), rules
    assert "request ids across 16 case(s): FAILED" in result.stdout.str()


def test_grid_reads_at_a_glance() -> None:
    def record(op: str, stage: str, failed: list[str], forbidden: int = 0) -> dict:
        return {
            "test": f"test_x.py::test_gateway[{op}-{stage}]",
            "matrix": {"operation": op, "stage": stage, "placement": "cookie", "failed": failed},
            "forbidden": forbidden,
        }

    grid = format_grid(
        [
            record("create_deployment", "vault_locked", []),
            record("create_deployment", "vault_locked", ["contract"], 1),
            record("create_deployment", "http_401", []),
            record("get_deployment", "http_401", ["record"]),
        ]
    )
    lines = grid.splitlines()
    assert lines[1].split() == ["create_deployment", "get_deployment"]
    vault = next(line for line in lines if line.startswith("vault_locked"))
    assert "1/2 FAIL cl" in vault and vault.rstrip().endswith("-")
    assert "c=contract" in lines[0] and "!=stage not reached" in lines[0]
    http = next(line for line in lines if line.startswith("http_401"))
    assert "1/1 ok" in http and "0/1 FAIL r" in http
    # stages in the order of a call's life
    assert lines.index(vault) < lines.index(http)


def test_two_matrices_get_a_grid_each() -> None:
    """A careful and a careless target in one module: one grid over both added their
    cases up (``http_429 0/12 FAIL h``: six careful, six careless)."""

    def record(test: str, failed: list[str]) -> dict:
        return {
            "test": f"test_x.py::{test}[create_deployment-http_429-cookie]",
            "matrix": {"operation": "create_deployment", "stage": "http_429",
                       "placement": "cookie", "failed": failed},
        }  # fmt: skip

    grid = format_grid([record("test_careful", []), record("test_careless", ["hygiene"])])
    careful, careless = grid.split("\n\n")
    assert careful.startswith("test_x.py::test_careful:\nstage matrix")
    assert careless.startswith("test_x.py::test_careless:\nstage matrix")
    assert "1/1 ok" in careful and "0/1 FAIL h" in careless


def _scan_inner(pytester: pytest.Pytester, result: pytest.RunResult) -> None:
    text = "\n".join(result.outlines + result.errlines)
    report = (pytester.path / "report.json").read_text()
    # every inner canary: rebuilt from the seed and each test's node id
    secrets = []
    for line in result.outlines:
        if line.startswith(("PASSED ", "FAILED ")) and "::" in line:
            nodeid = line.split(" ")[1]
            factory = CanaryFactory("matrix-1", namespace=nodeid)
            secrets += [factory.secret(k) for k in ("bearer", "hostname", "ssh_password")]
    assert secrets
    self_scan(text, secrets, "inner matrix output")
    self_scan(report, secrets, "inner matrix report")


def test_case_spec_ids_hold_names_only() -> None:
    spec = CaseSpec("create_deployment", "http_401", "url-userinfo")
    assert spec.id == "create_deployment-http_401-url-userinfo"


def test_matrix_under_xdist_merges_every_case(pytester: pytest.Pytester) -> None:
    """Eager collection lets ``-n 2`` split the cases; the controller merges every worker's
    records, so the grid counts all cases and the request-id check sees every id (the
    counter here runs per worker process: still caught across the merge)."""
    pytester.makepyfile(toy=TOY)
    pytester.makepyfile(
        test_toy="from toy import ToyTarget\nfrom leakcheck.matrix import stage_matrix\n"
        "test_gateway = stage_matrix(ToyTarget('sequential'))\n"
    )
    report = pytester.path / "report.json"
    result = pytester.runpytest_subprocess(
        "-n", "2", "-p", "no:randomly", "--leakcheck-seed=matrix-x",
        "--no-leakcheck-snapshots", f"--leakcheck-report={report}",
    )  # fmt: skip
    data = json.loads(report.read_text())
    assert len(data["tests"]) == 16
    assert {r["outcome"] for r in data["tests"]} == {"passed"}
    assert "request ids across 16 case(s): FAILED" in result.stdout.str()
    assert result.ret == 1


def test_an_opted_out_protected_record_is_not_scanned(pytester: pytest.Pytester) -> None:
    """skip_sinks names the protected record like any sink: its leak is then not judged
    (and the opt-out is listed), where without it the same case fails."""
    pytester.makepyfile(toy=TOY)
    pytester.makepyfile(
        test_toy="import pytest\nfrom toy import ToyTarget\n"
        "from leakcheck.matrix import stage_matrix\n"
        "pytestmark = pytest.mark.leakcheck(skip_sinks={'protected record': 'GW-7: reviewed'})\n"
        "test_gateway = stage_matrix(ToyTarget('record_token'))\n"
    )
    result = pytester.runpytest(
        "-p", "no:randomly", "-rA", "--leakcheck-seed=matrix-1", "--no-leakcheck-snapshots",
        "-k", "gateway_exception",
    )  # fmt: skip
    assert set(inner_outcomes(result).values()) == {"PASSED"}, result.stdout.str()
    out = result.stdout.str()
    assert "[LEAK] operator: protected record" not in out
    assert "sink 'protected record' (GW-7: reviewed)" in out
    without, _ = _inner(pytester, "record_token", args=("-k", "gateway_exception"))
    assert set(inner_outcomes(without).values()) == {"FAILED"}


def test_a_stage_no_placement_applies_to_is_said_under_the_grid() -> None:
    """A transport stage runs with the credential placements only: a target whose
    placements are all the upstream's answers gets no case at DNS, TLS or a timeout. Such
    a stage is named under the grid, never a silent gap; a stage the target leaves out
    (``stages``) or has no seam for is not."""
    from leakcheck.matrix import caseless_stages
    from leakcheck.records import CaseResult

    class AnswersOnly(Target):
        operations = [Operation("fetch", "http", repeatable=True)]
        seams = frozenset()
        stages = ["vault_locked", "http_401", "dns_failure", "timeout_after_send"]
        placements = ["upstream-reflects-request", "authorization-header"]

    full = AnswersOnly()
    specs = cases_for(full)
    assert caseless_stages(full, specs) == {}  # the base credential runs them all

    answers = AnswersOnly()
    answers.placements = ["upstream-reflects-request"]
    specs = cases_for(answers)
    assert {spec.stage for spec in specs} == {"http_401"}
    caseless = caseless_stages(answers, specs)
    # vault_locked: no seam (seams empty), so not a gap
    assert caseless == {"fetch": ("dns_failure", "timeout_after_send")}
    result = CaseResult(
        "fetch", "http_401", "upstream-reflects-request", caseless=caseless["fetch"]
    )
    assert CaseResult.from_json(result.to_json()) == result
    assert "caseless" not in CaseResult("fetch", "http_401", "p").to_json()
    record = {"test": "t.py::test_x[fetch-http_401]", "matrix": result.to_json(), "forbidden": 0}
    lines = format_grid([record]).splitlines()
    assert lines[-1].startswith(
        "no case, no placement applies: fetch: dns_failure, timeout_after_send ("
    )
    clean = {**record, "matrix": CaseResult("fetch", "http_401", "p").to_json()}
    assert not any(line.startswith("no case") for line in format_grid([clean]).splitlines())


def test_a_target_written_wrong_is_shown_at_the_users_line_without_our_frames(
    pytester: pytest.Pytester,
) -> None:
    """A user's mistake at collection (here a transport that does not exist) is their
    module's line and the message: not a traceback through the matrix's own code."""
    pytester.makepyfile(
        test_typo="""
from leakcheck.matrix import Operation, Target, stage_matrix


class Typo(Target):
    operations = [Operation("fetch", "http", repeatable=True)]
    stages = ["http_401"]
    http_via = "respxx"

    def call(self, case):
        return None


test_gateway = stage_matrix(Typo())
"""
    )
    result = pytester.runpytest("-p", "no:randomly", "--no-leakcheck-snapshots")
    result.assert_outcomes(errors=1)
    out = result.stdout.str()
    assert "test_typo.py:13: in <module>" in out
    assert "TargetError: Typo: no fault transport 'respxx'" in out
    assert "leakcheck/matrix/" not in out and "raise TargetError" not in out


def test_a_gateway_raised_failure_says_where_and_what() -> None:
    """A newcomer's gateway raised ``TypeError`` (its call given the placement's extra
    input): the failure names the innermost frame and the message's first line, shortened;
    an exception never raised, or with nothing to say, adds nothing."""
    from leakcheck.matrix.run import _RAISED_MESSAGE_CHARS, _raised_at

    def forecast(city: str) -> None:
        raise TypeError("forecast() got an unexpected keyword argument 'options'\nmore")

    try:
        forecast("Paris")
    except TypeError as exc:
        said = _raised_at(exc, str)
    line = forecast.__code__.co_firstlineno + 1
    assert said == (
        f" (raised at test_matrix.py:{line} in forecast: "
        "forecast() got an unexpected keyword argument 'options')"
    )
    long = ValueError("x" * (_RAISED_MESSAGE_CHARS + 50))
    assert _raised_at(long, str) == f" ({'x' * _RAISED_MESSAGE_CHARS}…)"
    assert _raised_at(RuntimeError(), str) == ""

    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    assert _raised_at(Unprintable(), str) == ""  # (its str raises: nothing said, no crash)


def test_a_raised_message_is_masked_whole_before_it_is_shortened() -> None:
    """A secret where the message is cut: masked first, nothing of it is left; cut first,
    its first characters would stay, too few for any mask to know them."""
    from leakcheck.harness import LeakCheck
    from leakcheck.matrix.run import _RAISED_MESSAGE_CHARS, _raised_at

    check = LeakCheck(seed="raised-cut", sinks=[], announce=False)
    value = check.register("Zq7Wm2Kx9Vb4Np8Rt3Ly6Hd5", kind="api_key")
    # (three characters at the cut: fewer bits than a masked head, "Zq7W…", has)
    exc = RuntimeError("." * (_RAISED_MESSAGE_CHARS - 3) + value + " and more")
    said = _raised_at(exc, check.mask)
    assert "«" in said  # (masked, its label cut at the end)
    assert (value[:3] in said) is False
