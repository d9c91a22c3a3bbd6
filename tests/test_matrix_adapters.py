"""The stage matrix on a gateway built without leakcheck in mind: a pluggable contract (the
gateway's own error shape through an ``ErrorAdapter``, or off), no protected record, only
the seams it has, invalid inputs with a canary in the rejected value, a gateway that
raises, a credential the gateway never asked for, request ids holding a hostname, and what
is not checked showing as such (never "ok") in the grid and the report.

Most cases run in process through ``run_case`` (a started ``LeakCheck`` per case, stopped
after it); one inner pytest run checks the grid, the JSON report and the session's
request-id line end to end."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import self_scan

from leakcheck.contract import (
    ADAPTER_RULES,
    DEFAULT,
    NOT_CHECKED,
    ContractCheck,
    EnvelopeV1,
    ErrorAdapter,
    Expectations,
    Violation,
    check_envelope,
    example_envelope,
    load_schema,
)
from leakcheck.harness import LeakCheck
from leakcheck.matrix import (
    DEFAULT_INVALID_INPUT,
    CaseSpec,
    MatrixFailure,
    Operation,
    Target,
    TargetError,
    cases_for,
    contract_of,
    default_invalid_input,
    format_grid,
    run_case,
    stage_matrix,
)
from leakcheck.records import Assertion, CaseResult
from leakcheck.stages import HTTP_RAISED, STAGES

pytest_plugins = ["pytester"]

#: a gateway of its own making: results are ``ToolResult`` objects (an error flag, a text
#: for the model, its own error kinds), no envelope, no record; credentials from a vault
#: object, an approver, and no checkpoint hook (``boom`` is wired by patching a helper)
MINI = """
import re
import secrets
from dataclasses import dataclass
from unittest import mock
from urllib.parse import urlsplit

from leakcheck.contract import ErrorAdapter
from leakcheck.matrix import Operation, Target

ERRORS = {
    "bad_input": ("INVALID_INPUT", "repair_input"),
    "locked": ("VAULT_LOCKED", "stop_and_report"),
    "denied": ("USER_DENIED", "stop_and_report"),
    "auth": ("AUTH_FAILED", "stop_and_report"),
    "internal": ("INTERNAL_ERROR", "stop_and_report"),
}


@dataclass
class ToolResult:
    is_error: bool
    text: str
    kind: str = ""
    request_id: str | None = None


def to_error(result):
    return ERRORS[result.kind] if result.is_error else None


def _summary(operation, repo):  # the gateway's own helper: where boom is wired in
    return f"{operation} of {repo}"


class Mini:
    def __init__(self, case, mistakes):
        self.case, self.mistakes = case, mistakes

    def rid(self):
        if "no_ids" in self.mistakes:
            return None
        token = secrets.token_urlsafe(16)
        if "rid_host" in self.mistakes:
            return "req-" + urlsplit(self.case.upstream_url).hostname.replace(".", "-") + token
        return "req_" + token

    def run(self):
        case, rid = self.case, self.rid()
        repo = case.agent_input.get("repo")
        if not isinstance(repo, str) or not re.fullmatch(r"[a-z0-9-]{1,40}", repo):
            text = f"invalid repo {repo!r}" if "echo" in self.mistakes else "invalid input: repo"
            return ToolResult(True, text, "bad_input", rid)
        try:
            token = case.vault.get("bearer")
        except Exception:
            return ToolResult(True, "the vault is locked", "locked", rid)
        if "raises" in self.mistakes:
            raise RuntimeError(f"deploy failed with {token}")
        if not case.approver.approve(case.operation.name, ""):
            kind = "auth" if "denial_as_auth" in self.mistakes else "denied"
            return ToolResult(True, "not approved", kind, rid)
        try:
            summary = _summary(case.operation.name, repo)
        except Exception as exc:
            if "swallow" in self.mistakes:
                return ToolResult(False, "done", "", rid)
            text = str(exc) if "raw" in self.mistakes else "internal error"
            return ToolResult(True, text, "internal", rid)
        return ToolResult(False, summary, "", rid)


class MiniTarget(Target):
    operations = [Operation("create_deployment", "http", repeatable=False, input={"repo": "web"})]
    stages = ["invalid_input", "vault_locked", "approval_declined", "gateway_exception"]
    placements = ["authorization-header", "agent-input-json"]
    contract = ErrorAdapter(to_error, name="tool-result")

    def __init__(self, *mistakes, **attrs):
        self.mistakes = mistakes
        for name, value in attrs.items():
            setattr(self, name, value)

    def call(self, case):
        real = _summary

        def boom_first(*args, **kwargs):
            case.boom()  # raises only in the gateway_exception stage
            return real(*args, **kwargs)

        # no checkpoint hook: boom rides on a helper the gateway calls on every path
        with mock.patch.dict(Mini.run.__globals__, {"_summary": boom_first}):
            return Mini(case, self.mistakes).run()
"""


@pytest.fixture(scope="module")
def mini() -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "mini_gateway"}
    code = compile(MINI, "mini_gateway.py", "exec", dont_inherit=True)  # not our __future__
    exec(code, namespace)  # noqa: S102 - our own source
    return namespace


class Ran:
    """One case run in process: its result, its failure text, its forbidden leaks."""

    def __init__(self, spec: CaseSpec, check: LeakCheck, failure: str | None) -> None:
        self.spec, self.check, self.failure = spec, check, failure
        assert check.matrix is not None, "every case is reported"
        self.result: CaseResult = check.matrix
        self.leaks = check.violations()
        self.unreached = check.unreached()
        self.secrets = check.secrets


def _run(target: Target, *, only: str = "", seed: str = "adapters-1") -> dict[str, Ran]:
    ran = {}
    for spec in cases_for(target):
        if only and only not in spec.id:
            continue
        with LeakCheck(seed=seed, namespace=spec.id, sinks=[]) as check:
            try:
                run_case(check, target, spec, nodeid=f"t.py::test[{spec.id}]")
                failure = None
            except MatrixFailure as exc:
                failure = str(exc)
        ran[spec.id] = Ran(spec, check, failure)
    assert ran, "no case selected"
    return ran


def _failed(ran: Ran) -> set[str]:
    return {a.value for a in ran.result.failed} | ({"leaks"} if ran.leaks else set())


# --- the gateway's own error shape, through an adapter -----------------------------------------


def test_a_careful_gateway_passes_under_its_adapter_without_a_record(mini: dict) -> None:
    ran = _run(mini["MiniTarget"]())
    assert len(ran) == 4 * 2
    for case in ran.values():
        assert _failed(case) == set() and case.failure is None, (case.spec.id, case.failure)
        assert not case.unreached, case.spec.id  # every double was consulted
        # no record kept: the record assertion is not checked, and says so
        assert case.result.unchecked == {Assertion.RECORD}
        assert case.result.request_id is not None  # read from the result's attribute


def test_adapter_mistakes_fail_the_contract_where_they_are(mini: dict) -> None:
    ran = _run(mini["MiniTarget"]("denial_as_auth", "swallow"))
    for case_id, case in ran.items():
        if "approval_declined" in case_id:
            assert _failed(case) == {"contract"}
            assert case.failure is not None
            assert "[contract] expected code and permitted action (tool-result):" in case.failure
            assert (
                "expected-code at code: expected USER_DENIED (stage approval_declined, "
                "operation create_deployment, not repeatable), got AUTH_FAILED" in case.failure
            )
        elif "gateway_exception" in case_id:  # the failure swallowed: told it worked
            assert _failed(case) == {"contract"}
            assert case.failure is not None and "adapter-not-an-error" in case.failure
        else:
            assert _failed(case) == set(), case_id


def test_the_contract_off_checks_leaks_and_hygiene_only(mini: dict) -> None:
    ran = _run(mini["MiniTarget"]("denial_as_auth", "raw", contract=NOT_CHECKED))
    for case_id, case in ran.items():
        assert case.result.unchecked == {Assertion.CONTRACT, Assertion.RECORD}
        if "gateway_exception" in case_id:  # the raw exception text: a token, a host
            assert "leaks" in _failed(case) and "hygiene" in _failed(case)
        else:  # the wrong code is not judged: contract off
            assert _failed(case) == set(), case_id


def test_a_raising_gateway_is_a_gateway_raised_failure(mini: dict) -> None:
    ran = _run(mini["MiniTarget"]("raises"), only="approval_declined")
    for case in ran.values():
        assert Assertion.RAISED in case.result.failed
        assert case.leaks, "the token in the exception reached the agent"
        assert case.failure is not None
        assert "[raised] the gateway raised instead of returning an error:" in case.failure
        assert "the gateway raised RuntimeError instead of returning an error result" in (
            case.failure
        )
        self_scan(case.failure, case.secrets, "the raised case's failure text")


# --- invalid input: a canary in the rejected value ----------------------------------------------


def test_an_echoed_rejected_value_leaks_the_planted_canary(mini: dict) -> None:
    declared = Operation(
        "create_deployment", "http", repeatable=False, input={"repo": "web"},
        invalid_input={"repo": "token {bearer} pasted"},
    )  # fmt: skip
    for operations in (None, [declared]):  # the default invalid input, then a declared one
        extra = {"operations": operations} if operations else {}
        echo = _run(mini["MiniTarget"]("echo", **extra), only="invalid_input")
        careful = _run(mini["MiniTarget"](**extra), only="invalid_input")
        for case_id, case in echo.items():
            # whatever the placement: the rejected value itself holds the token
            assert case.leaks and {leak.sink for leak in case.leaks} == {"tool response"}
            assert _failed(careful[case_id]) == set(), case_id


def test_the_default_invalid_input_holds_the_token_in_each_rejected_field() -> None:
    default = default_invalid_input(Operation("a", "http", True, input={"repo": "web"}))
    assert default == dict(DEFAULT_INVALID_INPUT) == {"replicas": "{bearer}", "repo": ["{bearer}"]}
    default["repo"] = 0  # a copy: the constant stays as it is
    assert DEFAULT_INVALID_INPUT["repo"] == ["{bearer}"]


@pytest.mark.parametrize(
    ("invalid", "message"),
    [
        ({"repo": "{bearer"}, "unbalanced brace"),
        ({"repo": "{no_such_kind}"}, r"unknown canary kind\(s\) 'no_such_kind'"),
        ({}, "non-empty mapping"),
        (["repo"], "non-empty mapping"),
        ({"repo": "{}"}, r"unknown canary kind\(s\) ''"),
    ],
)
def test_a_bad_invalid_input_is_a_clear_error(invalid: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Operation("create_deployment", "http", repeatable=False, invalid_input=invalid)


# --- seams ----------------------------------------------------------------------------------------


def _stages(target: Target) -> set[str]:
    return {spec.stage for spec in cases_for(target)}


def test_gateway_side_stages_only_for_declared_seams(mini: dict) -> None:
    target = mini["MiniTarget"]
    assert _stages(target()) == set(target.stages)  # default: all four seams
    only = _stages(target(seams=frozenset({"validation", "exception"})))
    assert only == {"invalid_input", "gateway_exception"}  # listed in stages, never generated
    assert _stages(target(seams=frozenset())) == set()
    ran = _run(target(seams={"vault"}))  # any set will do
    assert {r.spec.stage for r in ran.values()} == {"vault_locked"}
    assert all(not r.unreached and not r.result.failed for r in ran.values())
    with pytest.raises(TargetError, match=r"unknown seam\(s\) 'vaults'; known: approval"):
        cases_for(target(seams={"vaults"}))
    with pytest.raises(TargetError, match="a set of seam names"):
        cases_for(target(seams="vault"))


# --- a credential the gateway never asked for -----------------------------------------------------


class HttpMini(Target):
    """An httpx gateway that sends the bearer token only: a cookie placement's cookie is
    never asked for, so the cookie case proved nothing (and says so)."""

    operations = [Operation("get_deployment", "http", repeatable=True, input={"id": "dep_7"})]
    stages = ["http_401"]
    placements = ["authorization-header", "cookie"]
    contract = ErrorAdapter(lambda r: ("AUTH_FAILED", "stop_and_report") if r else None)

    def __init__(self, **attrs: Any) -> None:
        for name, value in attrs.items():
            setattr(self, name, value)

    def call(self, case: Any) -> bool:
        import httpx

        headers = {"Authorization": "Bearer " + case.vault.get("bearer")}
        with httpx.Client(timeout=case.timeout) as client:
            reply = client.get(case.upstream_url + "/v1/deployments/dep_7", headers=headers)
        return reply.status_code >= 400


def test_a_placement_whose_credential_was_never_read_is_reported() -> None:
    ran = _run(HttpMini())
    cookie = ran["get_deployment-http_401-cookie"]
    assert cookie.result.failed == {Assertion.HARNESS}
    assert cookie.failure is not None
    assert "placement cookie: the gateway never asked for the cookie" in cookie.failure
    assert "vault.get('cookie')" in cookie.failure and "Target.placements" in cookie.failure
    plain = ran["get_deployment-http_401-authorization-header"]
    assert plain.result.failed == set() and plain.failure is None
    # a gateway without a vault seam takes its credentials otherwise: nothing to hold it to
    no_vault = _run(HttpMini(seams=frozenset({"validation"})), only="http_401")
    assert all(not r.result.failed for r in no_vault.values())


def test_exception_chain_only_where_the_transport_chains_the_cause() -> None:
    class Chains(Target):
        operations = [Operation("get_deployment", "http", repeatable=True)]
        placements = ["exception-chain"]

    def stages(via: str) -> set[str]:
        target = Chains()
        target.http_via = via
        return {s.stage for s in cases_for(target)}

    assert stages("respx") == stages("responses") == set(HTTP_RAISED) | {"gateway_exception"}
    # real sockets: the client library raises, nothing can chain the cause under it; the
    # gateway's own exception (fault.boom) carries it whatever the transport
    assert stages("loopback") == {"gateway_exception"}


# --- request ids ---------------------------------------------------------------------------------


def test_a_request_id_holding_the_upstream_hostname_fails_hygiene(mini: dict) -> None:
    ran = _run(mini["MiniTarget"]("rid_host"), only="vault_locked")
    for case in ran.values():
        assert case.result.failed == {Assertion.HYGIENE}
        assert case.failure is not None
        assert (
            "request-id-forbidden-word at request_id: holds the case's upstream hostname"
            in case.failure
        )


# --- the contract's pieces ----------------------------------------------------------------------


def test_every_contract_check_is_a_contract_check() -> None:
    for check in (EnvelopeV1(), ErrorAdapter(lambda r: None), NOT_CHECKED):
        assert isinstance(check, ContractCheck) and isinstance(check.name, str)
    assert NOT_CHECKED.check({}, stage=STAGES["http_401"]) is None


def _adapter(to_error: Any) -> list[Violation]:
    return ErrorAdapter(to_error, name="mine").check(
        object(),
        stage=STAGES["http_5xx"],
        operation="create_deployment",
        repeatable=False,
        expectations=DEFAULT,
        agent_input={},
    )


def test_error_adapter_holds_the_pair_to_the_stage() -> None:
    assert _adapter(lambda r: ("OUTCOME_UNKNOWN", "inspect_outcome")) == []
    wrong = _adapter(lambda r: ("UPSTREAM_UNAVAILABLE", "retry_after_delay"))
    assert [v.rule for v in wrong] == ["expected-code", "expected-action"]
    assert "expected OUTCOME_UNKNOWN" in wrong[0].message
    # a code outside the vocabulary may be anything (the token itself): never shown
    token = "lcb.secret-value-from-the-result"
    odd = _adapter(lambda r: (token, token))
    assert all(token not in v.message and "another value" in v.message for v in odd)
    assert [v.rule for v in _adapter(lambda r: None)] == ["adapter-not-an-error"]

    def broken(result: Any) -> Any:
        raise KeyError(token)

    failed = _adapter(broken)
    assert [v.rule for v in failed] == ["adapter-failed"] and token not in failed[0].message
    assert "KeyError" in failed[0].message
    assert [v.rule for v in _adapter(lambda r: "AUTH_FAILED")] == ["adapter-result"]
    assert set(ADAPTER_RULES) == {"adapter-failed", "adapter-not-an-error", "adapter-result"}
    with pytest.raises(TypeError, match="a function from the gateway's result"):
        ErrorAdapter("not callable")  # type: ignore[arg-type]


def test_envelope_v1_is_check_envelope_and_target_schema_still_works(tmp_path: Any) -> None:
    stage = STAGES["http_429"]
    envelope = example_envelope(stage, operation="create_deployment")
    bad = {**envelope, "code": "AUTH_FAILED"}
    for sample in (envelope, bad):
        expected = check_envelope(sample, stage=stage, operation="create_deployment",
                                  repeatable=False)  # fmt: skip
        got = EnvelopeV1().check(
            sample, stage=stage, operation="create_deployment", repeatable=False,
            expectations=DEFAULT, agent_input={},
        )  # fmt: skip
        assert got == expected
    assert EnvelopeV1().check(bad, stage=stage, operation="create_deployment", repeatable=False)

    schema = load_schema("v1")
    schema["properties"]["code"]["enum"] = [*schema["properties"]["code"]["enum"], "MY_CODE"]

    class WithSchema(Target):
        operations = [Operation("create_deployment", "http", repeatable=False)]

    target = WithSchema()
    target.schema = schema
    contract = contract_of(target)
    assert isinstance(contract, EnvelopeV1) and contract.schema is schema
    target.contract = NOT_CHECKED
    with pytest.raises(TargetError, match="schema is envelope v1's option"):
        cases_for(target)
    with pytest.raises(ValueError, match="not a valid JSON Schema"):
        EnvelopeV1({"type": 12})
    # an expectation the schema cannot express: said at collection, not once per case
    narrow = load_schema("v1")
    narrow["properties"]["code"]["enum"] = ["AUTH_FAILED"]
    other = WithSchema()
    other.contract = EnvelopeV1(narrow)
    with pytest.raises(TargetError, match="which the schema's code enum does not allow"):
        cases_for(other)
    other.stages = ["http_401"]  # only stages whose expectation it allows: fine
    assert {s.stage for s in cases_for(other)} == {"http_401"}
    assert isinstance(Expectations(), Expectations)


def test_a_contract_check_that_breaks_is_a_clear_masked_error(mini: dict) -> None:
    class Breaks:
        name = "breaks"

        def check(self, result: Any, **_: Any) -> list[Violation]:
            raise ValueError(f"cannot read {result.text}")

    target = mini["MiniTarget"]("raw", contract=Breaks())
    spec = next(s for s in cases_for(target) if s.stage == "gateway_exception")
    with LeakCheck(seed="adapters-1", namespace=spec.id, sinks=[]) as check:
        with pytest.raises(TargetError) as raised:
            run_case(check, target, spec)
    text = str(raised.value)
    assert "the contract check 'breaks' raised ValueError: cannot read" in text
    assert raised.value.leakcheck_verdict  # printed without a traceback
    self_scan(text, check.secrets, "the contract error")
    assert check.matrix is not None  # still in the grid (as a harness failure)


def test_target_mistakes_are_clear_errors() -> None:
    class NoCall(Target):
        operations = [Operation("a", "http", repeatable=True)]

    with pytest.raises(TargetError, match=r"implement call\(self, case\)"):
        stage_matrix(NoCall())

    class Claims(NoCall):
        has_record = True

        def call(self, case: Any) -> Any:
            return None

    with pytest.raises(TargetError, match="has_record is true but record"):
        stage_matrix(Claims())

    class Odd(Claims):
        has_record = None
        contract = "envelope"  # type: ignore[assignment]

    with pytest.raises(TargetError, match="contract: a contract check"):
        cases_for(Odd())


# --- "not checked" in the records and the grid ------------------------------------------------


def test_unchecked_round_trips_and_the_old_keys_stay_as_they_were() -> None:
    plain = CaseResult("a", "http_401", "cookie", "req_1", {Assertion.LEAKS})
    assert list(plain.to_json()) == ["operation", "stage", "placement", "request_id", "failed"]
    assert CaseResult.from_json(plain.to_json()) == plain
    off = CaseResult(
        "a", "http_401", "cookie", None, {Assertion.RAISED}, {Assertion.RECORD, Assertion.CONTRACT}
    )
    data = off.to_json()
    assert data["unchecked"] == ["contract", "record"] and data["failed"] == ["raised"]
    again = CaseResult.from_json(json.loads(json.dumps(data)))
    assert again == off and json.dumps(again.to_json()) == json.dumps(data)


def _record(stage: str, failed: list[str], *, unchecked: tuple[str, ...] = (), sinks: tuple = (),
            outcome: str = "") -> dict:  # fmt: skip
    matrix: dict[str, Any] = {"operation": "op", "stage": stage, "placement": "p", "failed": failed}
    if unchecked:
        matrix["unchecked"] = list(unchecked)
    findings = [{"sink": sink, "allowed": False} for sink in sinks]
    record = {"test": f"t.py::t[{stage}]", "matrix": matrix, "forbidden": len(findings),
              "findings": findings}  # fmt: skip
    if outcome:
        record["outcome"] = outcome
    return record


def _row(grid: str, stage: str) -> str:
    return next(line for line in grid.splitlines() if line.startswith(stage + " "))


def test_the_grid_never_says_ok_for_what_was_not_checked() -> None:
    grid = format_grid(
        [
            _record("http_401", [], unchecked=("contract", "record")),
            _record("http_401", [], unchecked=("record",)),
            _record("http_403", ["leaks"], sinks=("tool response",), unchecked=("record",)),
            _record("http_403", []),
            _record("http_429", []),
        ]
    )
    assert "?=not checked" in grid.splitlines()[0]
    assert _row(grid, "http_401").split()[1:] == ["2/2", "?cr"]  # no "ok"
    assert _row(grid, "http_403").split()[1:] == ["1/2", "FAIL", "l", "?r"]
    assert _row(grid, "http_429").split()[1:] == ["1/1", "ok"]
    assert "not checked: contract in 1 of 5 case(s)" in grid
    assert "not checked: record in 3 of 5 case(s)" in grid
    # a target that checks everything: the grid as it always was
    assert "?" not in format_grid([_record("http_401", [])])


def test_a_leak_only_in_the_protected_record_is_the_record_letter() -> None:
    grid = format_grid(
        [
            _record("http_401", ["record"], sinks=("protected record",), outcome="failed"),
            _record("http_403", ["leaks", "record"], sinks=("protected record", "log record")),
            _record("http_429", ["raised"], sinks=("exception",), outcome="failed"),
            _record("http_5xx", [], outcome="failed"),
        ]
    )
    assert _row(grid, "http_401").split()[1:] == ["0/1", "FAIL", "r"]
    assert _row(grid, "http_403").split()[1:] == ["0/1", "FAIL", "lr"]
    assert _row(grid, "http_429").split()[1:] == ["0/1", "FAIL", "lx"]
    assert _row(grid, "http_5xx").split()[1:] == ["0/1", "FAIL", "!"]
    assert "x=gateway raised" in grid.splitlines()[0]


# --- end to end: the grid, the JSON report, the request-id verdict ---------------------------


def _inner(pytester: pytest.Pytester, *mistakes: str) -> tuple[pytest.RunResult, dict]:
    pytester.makepyfile(mini_gateway=MINI)
    quoted = ", ".join(repr(m) for m in mistakes)
    pytester.makepyfile(
        test_mini="from mini_gateway import MiniTarget\n"
        "from leakcheck.matrix import stage_matrix\n"
        f"test_gateway = stage_matrix(MiniTarget({quoted}))\n"
    )
    report = pytester.path / "report.json"
    result = pytester.runpytest(
        "-p", "no:randomly", "-rA", "--leakcheck-seed=adapters-1", "--no-leakcheck-snapshots",
        f"--leakcheck-report={report}",
    )  # fmt: skip
    return result, json.loads(report.read_text())


@pytest.fixture
def no_ids_run(pytester: pytest.Pytester) -> Iterator[tuple[pytest.RunResult, dict]]:
    yield _inner(pytester, "no_ids", "raises")


def test_end_to_end_not_checked_raised_and_no_ids(
    no_ids_run: tuple[pytest.RunResult, dict],
) -> None:
    result, report = no_ids_run
    out = result.stdout.str()
    assert "INTERNALERROR" not in out and "Traceback" not in out
    assert len(report["tests"]) == 8  # every case reported, the raising ones included
    for record in report["tests"]:
        case = record["matrix"]
        assert case["unchecked"] == ["record"]
        raised = case["stage"] in ("approval_declined", "gateway_exception")
        assert ("raised" in case["failed"]) == raised, case["stage"]
        assert (record["outcome"] == "failed") == raised
    grid = out[out.index("stage matrix (") :]
    assert _row(grid, "invalid_input").split()[1:] == ["2/2", "?r"]
    assert "FAIL" in _row(grid, "approval_declined") and "x" in _row(grid, "approval_declined")
    assert "not checked: record in 8 of 8 case(s)" in grid
    # nothing to check is not "ok"
    assert "request ids across 8 case(s): no ids returned" in out
    assert report["request_ids"] == []


def test_a_fault_transport_that_does_not_exist_is_a_clear_error_at_collection() -> None:
    typo = HttpMini(http_via="respxx")
    with pytest.raises(TargetError, match=r"no fault transport 'respxx' \(http_via"):
        stage_matrix(typo)
    assert cases_for(typo)  # listing the cases needs no transport


def test_an_agent_input_placement_needs_an_operation_that_takes_its_fields() -> None:
    """A tool that refuses unknown arguments would reject the placement's fields before any
    stage: such cases are not generated (they would be harness errors)."""
    from leakcheck.matrix import Operation, Target, cases_for

    class Strict(Target):
        operations = [
            Operation("get_forecast", "http", repeatable=True, accepts=frozenset({"city"})),
            Operation("deploy", "http", repeatable=False, accepts=frozenset({"options", "city"})),
            Operation("anything", "http", repeatable=True),
        ]
        stages = ["http_401"]

        def call(self, case: Any) -> Any:
            raise NotImplementedError

    by_op: dict[str, set[str]] = {}
    for spec in cases_for(Strict()):
        by_op.setdefault(spec.operation, set()).add(spec.placement)
    agent = {"agent-input-json", "agent-input-signed-url"}
    assert not by_op["get_forecast"] & agent
    assert by_op["deploy"] & agent == {"agent-input-json"}  # its fields: options
    assert by_op["anything"] >= agent


# --- hygiene: upstream text ----------------------------------------------------------------------


def _hygiene_at(stage: str, envelope: dict[str, Any]) -> list[Violation]:
    from leakcheck.matrix.hygiene import hygiene_violations
    from leakcheck.matrix.run import build_case

    class Plain(Target):
        operations = [Operation("create_deployment", "http", repeatable=False)]

    spec = next(
        s for s in cases_for(Plain()) if s.stage == stage and s.placement == "authorization-header"
    )
    with LeakCheck(seed="hygiene") as check:
        return hygiene_violations(envelope, build_case(check, Plain(), spec))


def test_a_careful_gateways_own_words_are_not_upstream_text() -> None:
    """A careful gateway that says "Too many requests." or uses ``rate_limited`` as its own
    code failed hygiene at http_429 every run: the faked upstream said the same words.
    Its messages name the service now, as real ones do, and a piece is words, not a code."""
    for stage, code, message in (
        ("http_429", "rate_limited", "Too many requests."),
        ("http_401", "invalid_token", "The access token is invalid or has expired."),
    ):
        own = {"ok": False, "code": code, "message": message, "retryable": False}
        assert _hygiene_at(stage, own) == [], stage
    # passing the upstream's message through still fails, quoting the faked upstream's words
    passed = {
        "ok": False,
        "message": "Too many requests for this key on acme-deploy, retry in a minute.",
    }
    (found,) = _hygiene_at("http_429", passed)
    assert found.rule == "upstream-text" and found.field == "$.message"
    assert "'Too many requests for this key on acme-deploy, retry in a minute.'" in found.message
    assert "the faked upstream's words, not yours" in found.message


def test_an_unread_credential_of_an_agent_input_placement_names_the_added_argument() -> None:
    """A gateway that refuses unknown arguments (pydantic ``extra="forbid"``) stops at
    ``options`` before reading the bearer: the reason named the credential alone and said
    to leave the placement out, never the argument the placement added."""
    from leakcheck.matrix.run import build_case, unread_credentials

    class Strict(Target):
        seams = frozenset({"vault"})
        operations = [Operation("create_deployment", "http", repeatable=False)]

    for placement, added in (("agent-input-json", "options"), ("authorization-header", None)):
        spec = next(
            s for s in cases_for(Strict()) if s.stage == "http_401" and s.placement == placement
        )
        with LeakCheck(seed="strict") as check:
            (violation,) = unread_credentials(build_case(check, Strict(), spec), Strict())
        said = violation.message
        assert "never asked for the bearer" in said
        if added is None:
            assert "adds the argument" not in said
        else:
            assert f"adds the argument(s) {added} to the agent's input" in said
            assert "Operation(accepts={...})" in said
