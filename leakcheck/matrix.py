"""The stage matrix: every operation x stage x placement of a gateway, one test item each.

A user describes their gateway once, as a ``Target``: its operations (transport, whether a
retry is safe, a valid input, an invalid one) and how to call it under a generated
``Case``. Then

    test_gateway = stage_matrix(MyTarget())

in a test module collects one item per case, eagerly (``-k``, ``--collect-only`` and
``-n 2`` work; ids are names, never values). Each case forces its stage, calls the gateway
once and makes the seed's four assertions:

1. contract: what the gateway returned carries the code and action expected for this
   stage and operation, judged by ``Target.contract`` (envelope v1 by default: the schema
   and the semantic rules too; an ``ErrorAdapter`` for a gateway's own error shape;
   ``NOT_CHECKED``);
2. leaks: no secret in any caller-visible field or forbidden sink (the ``leakcheck``
   fixture's verdict, reported above the matrix's own);
3. hygiene: no raw header, upstream body text, upstream-prose marker or local connection
   detail (loopback address, server port, known_hosts path) in the response, and no
   hostname or user name of the case in its request id;
4. record: the protected record exists, carries the request id and boundary states
   consistent with the stage, and holds no direct secret (it is scanned as an operator
   sink). Off for a target that keeps no record (``Target.record`` not overridden).

What is off is "not checked" in the grid and the reports, never "ok". A gateway that
raises instead of returning fails its case as "gateway raised"; a placement whose
credential the gateway never asked the vault for fails it as not exercised. The
gateway-side stages are generated only for the seams the target declares
(``Target.seams``).

Across the matrix, request ids are checked at the end of the session (unique, not
sequential, >= 64 random bits, nothing recognisable inside).
"""

from __future__ import annotations

import os
import re
import socket
import ssl
import string
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple
from urllib.parse import urlsplit

from .canaries import KINDS
from .capture import ProtectedRecordSink
from .contract import (
    DEFAULT as DEFAULT_EXPECTATIONS,
)
from .contract import (
    ContractCheck,
    EnvelopeV1,
    Expectations,
    NotChecked,
    Violation,
    check_record,
    check_request_ids,
)
from .doubles import Approver, Boom, ObservedInput, Vault
from .faults import (
    Fault,
    GatewayFault,
    HarnessError,
    HttpUpstream,
    Listening,
    SshUpstream,
    TlsUpstream,
    fault_factories,
    reply_for,
)
from .libtrace import library_exceptions
from .placements import (
    BASELINE_PLACEMENTS,
    PLACEMENTS,
    AuthTemplate,
    Placed,
    Placement,
    placements_for,
)
from .records import Assertion, CaseResult, TestRecord
from .serialize import leaves, to_jsonable
from .snapshot_store import snapshot_entry
from .stages import HTTP_RAISED, STAGES, Stage, stages_for

if TYPE_CHECKING:
    from .harness import LeakCheck

__all__ = [
    "ASSERTIONS",
    "DEFAULT_INVALID_INPUT",
    "SEAMS",
    "Case",
    "CaseSpec",
    "MatrixFailure",
    "Operation",
    "SSHTarget",
    "Target",
    "TargetError",
    "cases_for",
    "default_invalid_input",
    "run_case",
    "stage_matrix",
]

#: the four per-case assertions, by the names failures and reports use
ASSERTIONS = {
    Assertion.CONTRACT: "expected code and permitted action, valid envelope",
    Assertion.LEAKS: "no secret in any caller-visible field or forbidden sink",
    Assertion.HYGIENE: "no raw headers, upstream text, prose marker or connection details",
    Assertion.RECORD: "protected record with the request id and consistent boundary states",
}
#: what else a case can fail on, in its failure text
_OTHER_TITLES = {
    Assertion.RAISED: "the gateway raised instead of returning an error",
    Assertion.HARNESS: "what the case could not exercise (it proved nothing about it)",
}

#: gateway-side stage -> the seam of the gateway it needs (``Target.seams``)
SEAMS: dict[str, str] = {
    "invalid_input": "validation",
    "vault_locked": "vault",
    "approval_declined": "approval",
    "gateway_exception": "exception",
}
ALL_SEAMS: frozenset[str] = frozenset(SEAMS.values())

#: fault transports whose transport-raised exceptions carry the ``exception-chain``
#: placement's cause (a transport declares it with a class attribute ``injects_cause``)
_CAUSE_TRANSPORTS = frozenset({"respx", "responses"})


class Problem(NamedTuple):
    """One broken rule of one of a case's assertions."""

    assertion: Assertion
    violation: Violation


#: a host no mock answers for and no resolver is asked about: gateway-side stages point the
#: gateway here, so a gateway that calls upstream anyway fails fast and offline
UNREACHABLE_URL = "https://api.upstream.invalid"
DEFAULT_UPSTREAM = "https://api.upstream.test"


class MatrixFailure(AssertionError):
    """A case that broke one of the four assertions; the message is masked."""

    leakcheck_verdict = True  # ours, not the gateway's: never scanned as caller output
    names_case_and_rerun = True  # its message: the case, each assertion, the rerun command


class TargetError(ValueError):
    """A ``Target`` or ``Operation`` that cannot work as declared: a user's mistake, said
    in one message (no traceback), never a verdict on the gateway."""

    leakcheck_verdict = True  # ours: printed as it is, never scanned as caller output


@dataclass(frozen=True)
class Operation:
    """One operation of the gateway. ``input`` is a valid agent input for it; ``via`` is the
    fault transport (default: the target's, "respx" for HTTP and "ssh" for SSH).

    ``invalid_input`` is what the ``invalid_input`` stage merges over ``input``: the fields
    your gateway must reject, as templates naming canary kinds like the placements do
    (``{"repo": "{bearer}"}``: an agent pasting its token into a field), so that a gateway
    echoing a rejected value leaks a canary. None: ``DEFAULT_INVALID_INPUT`` (the bearer
    token in ``replicas`` and, as a list, in ``repo``)."""

    name: str
    transport: Literal["http", "ssh"]
    repeatable: bool
    input: Mapping[str, Any] = field(default_factory=dict)
    via: str | None = None
    invalid_input: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.transport not in ("http", "ssh"):
            raise ValueError(
                f"operation {self.name!r}: transport must be 'http' or 'ssh', "
                f"not {self.transport!r}"
            )
        if not re.fullmatch(r"[a-z][a-z0-9_]{0,63}", self.name):
            raise ValueError(
                f"operation name {self.name!r} must be a generic action class "
                "(lower case letters, digits, underscores)"
            )
        if not isinstance(self.input, Mapping):
            raise ValueError(
                f"operation {self.name!r}: input is a mapping (the agent's arguments), "
                f"not {type(self.input).__name__}"
            )
        if self.invalid_input is not None:
            _check_invalid_input(self.name, self.invalid_input)

    def invalid_template(self) -> Mapping[str, Any]:
        """The invalid input as declared, or the default (templates, not yet rendered)."""
        if self.invalid_input is not None:
            return self.invalid_input
        return default_invalid_input(self)


#: the invalid input of an operation that declares none: the agent pasted its bearer token
#: where a count belongs (``replicas``) and, as a list, where a name belongs (``repo``);
#: a gateway that knows neither field rejects them as unknown. Whichever field a gateway
#: rejects first, echoing its value leaks the token.
DEFAULT_INVALID_INPUT: Mapping[str, Any] = {"replicas": "{bearer}", "repo": ["{bearer}"]}


def default_invalid_input(operation: Operation) -> dict[str, Any]:
    """The invalid input of an operation that declares none (``DEFAULT_INVALID_INPUT``).
    A gateway that ignores unknown fields accepts it for an operation without them:
    declare ``Operation.invalid_input`` there."""
    return dict(DEFAULT_INVALID_INPUT)


def _template_kinds(value: Any) -> set[str]:
    if isinstance(value, str):
        return {f for _, f, _, _ in string.Formatter().parse(value) if f is not None}
    if isinstance(value, Mapping):
        return set().union(set(), *(_template_kinds(v) for v in value.values()))
    if isinstance(value, list | tuple):
        return set().union(set(), *(_template_kinds(v) for v in value))
    return set()


def _render(value: Any, values: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return value.format_map(values)
    if isinstance(value, Mapping):
        return {k: _render(v, values) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_render(v, values) for v in value]
    return value


def _check_invalid_input(name: str, invalid: Any) -> None:
    where = f"operation {name!r}: invalid_input"
    if not isinstance(invalid, Mapping) or not invalid:
        raise ValueError(
            f"{where} is a non-empty mapping of the fields to make invalid "
            f"(such as {{'repo': '{{bearer}}'}}), not {type(invalid).__name__}"
        )
    if not all(isinstance(key, str) and key for key in invalid):
        raise ValueError(f"{where}: its keys are field names (non-empty strings)")
    try:
        kinds = _template_kinds(invalid)
    except ValueError:
        raise ValueError(
            f"{where}: a template has an unbalanced brace (a literal brace is written {{{{ or }}}})"
        ) from None
    unknown = sorted(kinds - set(KINDS))
    if unknown:
        raise ValueError(
            f"{where} names unknown canary kind(s) {unknown}; known kinds: {', '.join(KINDS)}"
        )


@dataclass(frozen=True)
class SSHTarget:
    """Where and how the gateway connects over SSH in this case (isolated from ``~/.ssh``)."""

    host: str
    port: int
    username: str = field(repr=False)
    known_hosts: str = field(repr=False)
    timeout: float
    command_args: tuple[str, ...] = field(default=(), repr=False)
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    #: the vault kind holding the password the gateway logs in with
    password_kind: str = "ssh_password"


@dataclass(frozen=True)
class CaseSpec:
    """What a test id names: cheap, picklable, free of secrets."""

    operation: str
    stage: str
    placement: str

    @property
    def id(self) -> str:
        return f"{self.operation}-{self.stage}-{self.placement}"


@dataclass
class Case:
    """One generated case, handed to ``Target.call``: map it onto your gateway."""

    operation: Operation
    stage: Stage
    placement: Placement
    placed: Placed = field(repr=False)
    fault: Fault = field(repr=False)
    check: LeakCheck = field(repr=False)
    vault: Vault = field(repr=False)
    approver: Approver = field(repr=False)
    agent_input: ObservedInput = field(repr=False)
    #: call it where your gateway's own code could fail (it raises only in the
    #: gateway_exception stage)
    boom: Boom = field(repr=False)
    upstream_url: str = field(repr=False)
    #: credential templates ("Bearer {bearer}"): fill them from ``vault.get(kind)``
    auth: AuthTemplate = field(repr=False)
    ssh: SSHTarget | None = field(default=None, repr=False)
    #: TLS verification for the client: an ``ssl.SSLContext`` (loopback HTTPS) or True
    verify: Any = field(default=True, repr=False)
    timeout: float = 0.3
    #: the target's own per-case state (a record store, a client)
    context: dict[str, Any] = field(default_factory=dict, repr=False)


#: the contract of a target that names none: envelope v1 (with ``Target.schema`` if set)
DEFAULT_CONTRACT = EnvelopeV1()


class Target:
    """Subclass: set ``operations``; implement ``call`` (and ``record``, if the gateway
    keeps a protected record).

    ``contract`` judges what ``call`` returns (``EnvelopeV1()`` by default,
    ``ErrorAdapter(to_error)`` for the gateway's own error shape, ``NOT_CHECKED``),
    ``expectations`` overrides the default code/action per stage and operation,
    ``schema`` replaces the agent-error v1 schema (the same as
    ``contract = EnvelopeV1(schema)``), ``seams`` names the gateway-side seams the
    gateway has (a stage whose seam it lacks is not generated), ``has_record`` says whether
    it keeps a protected record (default: whether ``record`` is overridden),
    ``stages``/``placements`` narrow the matrix, ``http_via`` picks the HTTP fault
    transport ("respx", "responses", "loopback"), ``timeout`` is what the gateway should
    use as its client timeout.
    """

    operations: Sequence[Operation] = ()
    contract: ContractCheck = DEFAULT_CONTRACT
    expectations: Expectations = DEFAULT_EXPECTATIONS
    schema: Mapping[str, Any] | str | None = None
    #: the gateway-side seams: "validation" (it reads ``case.agent_input`` and rejects
    #: invalid input), "vault" (it takes credentials from ``case.vault``), "approval" (it
    #: asks ``case.approver``), "exception" (``case.boom`` is called inside it)
    seams: frozenset[str] = ALL_SEAMS
    has_record: bool | None = None
    stages: Sequence[str] | None = None
    placements: Sequence[str] | None = None
    http_via: str = "respx"
    ssh_via: str = "ssh"
    upstream_url: str = DEFAULT_UPSTREAM
    timeout: float = 0.3

    def call(self, case: Case) -> Any:
        """Call the gateway once under ``case`` and return what the agent gets (the
        envelope, or the gateway's own result for an ``ErrorAdapter`` contract)."""
        raise NotImplementedError

    def record(self, case: Case, request_id: str) -> Mapping[str, Any] | None:
        """The protected record the gateway wrote for ``request_id`` (None if none)."""
        raise NotImplementedError


def contract_of(target: Target) -> ContractCheck:
    """The contract check a target's cases use (``Target.schema`` folded in)."""
    contract = target.contract
    if target.schema is not None:
        if contract is DEFAULT_CONTRACT:
            return EnvelopeV1(target.schema)
        if not isinstance(contract, EnvelopeV1) or contract.schema is not None:
            raise TargetError(
                f"{type(target).__name__}: schema is envelope v1's option; with contract "
                f"{getattr(contract, 'name', '?')!r} leave schema unset (or give "
                "contract = EnvelopeV1(schema=...))"
            )
        return EnvelopeV1(target.schema)
    return contract


def keeps_record(target: Target) -> bool:
    """Whether the record assertion applies: ``has_record``, else whether the target
    overrides ``record``."""
    if target.has_record is not None:
        return bool(target.has_record)
    return type(target).record is not Target.record


def seams_of(target: Target) -> frozenset[str]:
    """The target's seams, checked (a typo is a clear error)."""
    seams = target.seams
    name = type(target).__name__
    if isinstance(seams, str) or not isinstance(seams, Iterable):
        raise TargetError(
            f"{name}.seams is a set of seam names ({', '.join(sorted(ALL_SEAMS))}), "
            f"not {type(seams).__name__}"
        )
    chosen = frozenset(seams)
    unknown = sorted(str(s) for s in chosen - ALL_SEAMS)
    if unknown:
        raise TargetError(
            f"{name}.seams: unknown seam(s) {unknown}; known: {', '.join(sorted(ALL_SEAMS))}"
        )
    return chosen


# --- collection -------------------------------------------------------------------------------


def _via(target: Target, operation: Operation, stage: Stage) -> str:
    """The fault transport of a transport stage of ``operation``."""
    return operation.via or (target.http_via if stage.transport == "http" else target.ssh_via)


def _injects_cause(via: str) -> bool:
    """Whether transport ``via`` chains the ``exception-chain`` cause under the exception
    it raises (a transport on real sockets cannot: the client library raises)."""
    declared = getattr(fault_factories().get(via), "injects_cause", None)
    if isinstance(declared, bool):
        return declared
    return via in _CAUSE_TRANSPORTS


def _fits(stage: Stage, placement: Placement, via: str | None = None) -> bool:
    """Whether a placement can show at a stage (an upstream header needs an answer; an
    injected cause, an exception that can carry it)."""
    if placement.stages is not None and stage.name not in placement.stages:
        return False
    if placement.where == "upstream":
        return stage.response_received is True and stage.transport == "http"
    if placement.where == "exception":
        if stage.name == "gateway_exception":
            return True  # fault.boom carries it, whatever the transport
        return stage.name in HTTP_RAISED and (via is None or _injects_cause(via))
    return True


def cases_for(target: Target) -> list[CaseSpec]:
    """Every (operation, stage, placement) of ``target``, in a stable order. A gateway-side
    stage whose seam the target lacks (``Target.seams``) is not generated, nor an
    ``exception-chain`` case whose transport cannot chain the cause."""
    _validate_target(target)
    seams = seams_of(target)
    specs = []
    for operation in target.operations:
        placements = [
            p
            for p in placements_for(operation.transport)
            if target.placements is None or p.name in target.placements
        ]
        for stage in stages_for(operation.transport):
            if target.stages is not None and stage.name not in target.stages:
                continue
            if stage.gateway_side and SEAMS[stage.name] not in seams:
                continue  # the gateway has no such seam: the stage cannot be reached
            via = None if stage.gateway_side else _via(target, operation, stage)
            for placement in placements:
                if _fits(stage, placement, via):
                    specs.append(CaseSpec(operation.name, stage.name, placement.name))
    return specs


def _validate_target(target: Target) -> None:
    name = type(target).__name__
    if not target.operations:
        raise ValueError(f"{name}.operations is empty: declare at least one Operation")
    if not all(isinstance(op, Operation) for op in target.operations):
        raise ValueError(f"{name}.operations: each one an Operation(name, transport, ...)")
    names = [op.name for op in target.operations]
    if len(set(names)) != len(names):
        raise ValueError(f"{name}.operations: operation names must be unique")
    for attr, known in (("stages", STAGES), ("placements", PLACEMENTS)):
        chosen = getattr(target, attr)
        if isinstance(chosen, str):
            raise ValueError(f"{name}.{attr}: a list of names, not one string")
        unknown = sorted(set(chosen or ()) - set(known))
        if unknown:
            raise ValueError(f"{name}.{attr}: unknown {attr} {unknown}; known: {', '.join(known)}")
    if not isinstance(target.expectations, Expectations):
        raise TargetError(f"{name}.expectations: an Expectations object")
    contract = contract_of(target)
    if not isinstance(contract, ContractCheck):
        raise TargetError(
            f"{name}.contract: a contract check (EnvelopeV1(), ErrorAdapter(to_error), "
            f"NOT_CHECKED or an object with name and check()), not {type(contract).__name__}"
        )
    if isinstance(contract, EnvelopeV1):
        _check_codes(target, contract)


def _check_codes(target: Target, contract: EnvelopeV1) -> None:
    """Every code the expectations ask for is one the schema allows (else every case of
    the stage would fail for the harness's reason, not the gateway's)."""
    allowed = contract.codes_allowed()
    if allowed is None:
        return
    for operation in target.operations:
        for stage in stages_for(operation.transport):
            if target.stages is not None and stage.name not in target.stages:
                continue
            try:
                expected = target.expectations.expected(
                    stage, operation=operation.name, repeatable=operation.repeatable
                )
            except ValueError as exc:
                raise TargetError(f"{type(target).__name__}.expectations: {exc}") from None
            if expected.code not in allowed:
                raise TargetError(
                    f"{type(target).__name__}: the expectation for stage {stage.name} of "
                    f"{operation.name} is code {expected.code}, which the schema's code "
                    "enum does not allow"
                )


def _validate_runnable(target: Target, specs: Sequence[CaseSpec]) -> None:
    name = type(target).__name__
    operations = {op.name: op for op in target.operations}
    vias = {
        _via(target, operations[spec.operation], STAGES[spec.stage])
        for spec in specs
        if not STAGES[spec.stage].gateway_side
    }
    missing = sorted(vias - set(fault_factories())) if vias else []
    if missing:
        from .extensions import skipped_plugins

        skipped = skipped_plugins()
        why = "; ".join(
            f"{via}: plugin skipped ({skipped[via]})" for via in missing if via in skipped
        )
        raise TargetError(
            f"{name}: no fault transport {', '.join(map(repr, missing))} (http_via, ssh_via or "
            f"Operation.via){'; ' + why if why else ''}; known: "
            f"{', '.join(sorted(fault_factories())) or 'none installed'}"
        )
    if type(target).call is Target.call:
        raise TargetError(f"{name}: implement call(self, case) (call the gateway once)")
    if target.has_record and type(target).record is Target.record:
        raise TargetError(
            f"{name}.has_record is true but record(self, case, request_id) is not "
            "implemented: implement it, or leave has_record unset"
        )


def stage_matrix(target: Target, *, name: str = "test_stage_matrix") -> Callable[..., None]:
    """A pytest test function with one parametrized case per operation x stage x placement.
    Assign it to a ``test_*`` name in a test module."""
    import pytest

    specs = cases_for(target)
    _validate_runnable(target, specs)

    @pytest.mark.parametrize("leakcheck_case", specs, ids=[s.id for s in specs])
    def test(leakcheck: LeakCheck, leakcheck_case: CaseSpec, request: Any) -> None:
        run_case(leakcheck, target, leakcheck_case, nodeid=request.node.nodeid)

    test.__name__ = test.__qualname__ = name
    return test


# --- one case ----------------------------------------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def build_case(check: LeakCheck, target: Target, spec: CaseSpec) -> Case:
    """Arm the fault of ``spec`` and hand out everything the gateway needs."""
    operation = next(op for op in target.operations if op.name == spec.operation)
    stage = STAGES[spec.stage]
    placed = check.place(spec.placement)
    ssh_password = placed.ssh.password or check.secret("ssh_password")
    # as the gateway's vault holds them: damaged where the placement says (a trailing \n)
    credentials = {**placed.credentials, "ssh_password": ssh_password}
    agent_input = {**operation.input, **placed.agent_input}
    upstream, ssh = target.upstream_url, None
    verify: ssl.SSLContext | bool = True
    if stage.gateway_side:
        options: dict[str, Any] = {"credentials": credentials, "agent_input": agent_input}
        if stage.name == "invalid_input":  # the fields to reject, a canary in their values
            options["invalid_fields"] = _invalid_input(check, operation, placed)
        fault: Fault = check.force(stage, placement=placed, **options)
        assert isinstance(fault, GatewayFault)
        vault, approver, observed, boom = fault.vault, fault.approver, fault.agent_input, fault.boom
        upstream = UNREACHABLE_URL
        if operation.transport == "ssh":
            ssh = SSHTarget(
                "127.0.0.1", _closed_port(), placed.ssh.username or "deploy", os.devnull,
                target.timeout, placed.ssh.command_args, placed.ssh.env,
            )  # fmt: skip
    else:
        via = operation.via or (target.http_via if stage.transport == "http" else target.ssh_via)
        options = {}
        if via in ("respx", "responses"):
            options["url"] = target.upstream_url
        if via == "ssh":
            options["timeout"] = target.timeout
        fault = check.force(stage, via=via, placement=placed, **options)
        if stage.transport == "ssh":
            if not isinstance(fault, SshUpstream):
                raise HarnessError(f"transport {via!r} offers no SSH upstream for {stage.name}")
            credentials["ssh_password"] = fault.password
            ssh = SSHTarget(
                fault.host, fault.port, fault.username, fault.known_hosts,
                target.timeout, placed.ssh.command_args, placed.ssh.env,
            )  # fmt: skip
        else:
            if isinstance(fault, HttpUpstream):
                upstream = fault.url
            # a CA per case costs ms: only for TLS
            if isinstance(fault, TlsUpstream) and fault.scheme == "https":
                verify = fault.ssl_context()
        vault = Vault(credentials)
        approver = Approver()
        observed = ObservedInput(agent_input)
        boom = Boom(check.secret, cause=None)
    return Case(
        operation=operation, stage=stage, placement=placed.placement, placed=placed,
        fault=fault, check=check, vault=vault, approver=approver, agent_input=observed,
        boom=boom, upstream_url=upstream, auth=placed.auth, ssh=ssh, verify=verify,
        timeout=target.timeout,
    )  # fmt: skip


def _invalid_input(check: LeakCheck, operation: Operation, placed: Placed) -> dict[str, Any]:
    """The operation's invalid fields, rendered: a kind the placement planted is that
    canary (the agent pasted the very token), any other a fresh one."""
    template = operation.invalid_template()
    values = {
        kind: placed.secrets[kind] if kind in placed.secrets else check.secret(kind)
        for kind in sorted(_template_kinds(template))
    }
    rendered = _render(template, values)
    assert isinstance(rendered, dict)
    return rendered


def run_case(check: LeakCheck, target: Target, spec: CaseSpec, *, nodeid: str = "") -> None:
    """Run one case and raise ``MatrixFailure`` (masked) if an assertion other than the
    leak verdict fails; the leak verdict is the fixture's, made at the end of the test.

    The case is in the grid and the report whatever happens: its result is set before
    anything runs (a crash of the harness shows as ``!``), a gateway that raises fails it
    as "gateway raised", and what the target switched off is "not checked"."""
    contract = contract_of(target)
    with_record = keeps_record(target)
    result = CaseResult(spec.operation, spec.stage, spec.placement)
    if not with_record:
        result.unchecked.add(Assertion.RECORD)
    if isinstance(contract, NotChecked):
        result.unchecked.add(Assertion.CONTRACT)
    check.matrix = result
    case = build_case(check, target, spec)
    records = ProtectedRecordSink()
    if with_record and records.name not in check.skip_sinks:  # an opt-out is honoured
        check.sinks.append(records)
    try:
        # which library exception the gateway turned into this result (snapshots)
        with library_exceptions() as escaped:
            returned = target.call(case)
    except HarnessError:
        raise  # the harness's own failure (a fault that could not arm): never the gateway's
    except Exception as exc:  # the agent would get this exception: it is caller-visible
        check.exception_reached_caller(exc)
        result.failed = {Assertion.RAISED}
        what = "an error envelope" if isinstance(contract, EnvelopeV1) else "an error result"
        _fail(
            check, spec, nodeid,
            [Problem(Assertion.RAISED, Violation("gateway-raised", "", "the gateway raised "
                     f"{type(exc).__name__} instead of returning {what}"))],
            contract,
        )  # fmt: skip
        return
    check.expose(returned)
    if spec.placement == BASELINE_PLACEMENTS.get(case.operation.transport):
        check.snapshot = _snapshot(case, spec, returned, escaped.last)
    problems: list[Problem] = []
    verdict = _contract_verdict(check, contract, target, case, returned)
    if verdict is None:
        result.unchecked.add(Assertion.CONTRACT)
    else:
        problems += [Problem(Assertion.CONTRACT, v) for v in verdict]
    problems += [Problem(Assertion.HYGIENE, v) for v in hygiene_violations(returned, case)]
    request_id = _request_id(returned)
    problems += [Problem(Assertion.HYGIENE, v) for v in request_id_words(request_id, case)]
    if with_record:
        record = target.record(case, request_id) if request_id is not None else None
        if record is not None:
            records.add(record, records.name)
        problems += [
            Problem(Assertion.RECORD, v)
            for v in check_record(record, stage=case.stage, request_id=request_id or "")
        ]
    problems += [Problem(Assertion.HARNESS, v) for v in unread_credentials(case, target)]
    result.request_id = request_id
    result.failed = {problem.assertion for problem in problems}
    if problems:
        _fail(check, spec, nodeid, problems, contract)


def _contract_verdict(
    check: LeakCheck, contract: ContractCheck, target: Target, case: Case, returned: Any
) -> list[Violation] | None:
    try:
        return contract.check(
            returned,
            stage=case.stage,
            operation=case.operation.name,
            repeatable=case.operation.repeatable,
            expectations=target.expectations,
            # dict.items, not the double's: reading it here must not prove the gateway did
            agent_input=dict(dict.items(case.agent_input)),
        )
    except Exception as exc:  # a contract check of the user's that breaks: said plainly
        raise TargetError(
            check.mask(
                f"leakcheck matrix: the contract check {getattr(contract, 'name', '?')!r} "
                f"raised {type(exc).__name__}: {exc}"
            )
        ) from None


def _request_id(returned: Any) -> str | None:
    """The request id the gateway returned: an envelope's ``request_id`` (a mapping key or
    an attribute of a result object)."""
    if isinstance(returned, Mapping):
        value = returned.get("request_id")
    else:
        value = getattr(returned, "request_id", None)
    return value if isinstance(value, str) and value else None


def _words_of(case: Case) -> list[tuple[str, str]]:
    """(what, word): the hostnames and user names of ``case`` a request id must not hold."""
    words: list[tuple[str, str]] = []
    for what, value in (
        ("hostname", case.placed.secrets.get("hostname")),
        ("user name", case.placed.secrets.get("user_name")),
        ("upstream hostname", urlsplit(case.upstream_url).hostname),
        ("SSH user name", case.ssh.username if case.ssh is not None else None),
        ("SSH host alias", case.placed.ssh.host_alias),
        ("SSH user name", case.placed.ssh.username),
    ):
        if not isinstance(value, str) or len(value) < 4:
            continue  # a shorter word would match random ids by chance
        if re.fullmatch(r"[0-9.:]+", value):
            continue  # an address: the hygiene check's connection details cover it
        if value not in (w for _, w in words):
            words.append((what, value))
    return words


def request_id_words(request_id: str | None, case: Case) -> list[Violation]:
    """The request id holds none of the case's hostnames and user names (README: "no
    hostname, user name, secret or timestamp inside"; secrets are the leak verdict's,
    the rest is checked across the run at the end of the session)."""
    if request_id is None:
        return []
    found = []
    for what, word in _words_of(case):
        checked = check_request_ids([request_id], forbidden_words=[word], min_bits=0)
        if any(v.rule == "request-id-forbidden-word" for v in checked):
            found.append(
                Violation(
                    "request-id-forbidden-word",
                    "request_id",
                    f"holds the case's {what} (a request id is an opaque handle)",
                )
            )
    return found


def unread_credentials(case: Case, target: Target) -> list[Violation]:
    """A transport stage of a gateway with a vault seam: every credential kind of the
    placement was asked for (``vault.get``). One never asked for was never sent: the case
    proved nothing about it, which is said, never passed in silence."""
    if case.stage.gateway_side or "vault" not in seams_of(target):
        return []
    if case.operation.transport == "ssh":
        kinds = [case.ssh.password_kind] if case.ssh is not None else []
    else:
        kinds = list(case.auth.kinds())
    asked = set(case.vault.requests)
    missing = [kind for kind in kinds if kind not in asked]
    if not missing:
        return []
    names = ", ".join(f"the {kind.replace('_', ' ')}" for kind in missing)
    calls = ", ".join(f"vault.get({kind!r})" for kind in missing)
    return [
        Violation(
            "placement-not-read",
            "",
            f"placement {case.placement.name}: the gateway never asked for {names} "
            f"({calls}); a gateway that takes no such credential: leave the placement "
            "out (Target.placements)",
        )
    ]


def _snapshot(case: Case, spec: CaseSpec, envelope: Any, exc: BaseException | None) -> Any:
    """The error-text snapshot entry of a baseline case (masked, normalized)."""

    port = case.fault.port if isinstance(case.fault, Listening) else None
    paths = []
    if case.ssh is not None and case.ssh.known_hosts != os.devnull:
        paths.append(os.path.dirname(case.ssh.known_hosts))
    return snapshot_entry(
        envelope,
        exc,
        None,  # the snapshot session records the library versions
        case.check.mask,
        key=f"{spec.operation}/{spec.stage}",
        ports=[port] if isinstance(port, int) else [],
        paths=paths,
    )


def _fail(
    check: LeakCheck,
    spec: CaseSpec,
    nodeid: str,
    problems: list[Problem],
    contract: ContractCheck | None = None,
) -> None:
    lines = [
        f"leakcheck matrix: operation {spec.operation}, stage {spec.stage}, "
        f"placement {spec.placement}"
    ]
    titles = {**ASSERTIONS, **_OTHER_TITLES}
    if contract is not None and not isinstance(contract, EnvelopeV1):
        titles[Assertion.CONTRACT] = f"expected code and permitted action ({contract.name})"
    order = [Assertion.RAISED, *ASSERTIONS, Assertion.HARNESS]
    for assertion in order:
        title = titles[assertion]
        mine = [p.violation for p in problems if p.assertion == assertion]
        if not mine:
            continue
        lines.append(f"  [{assertion.value}] {title}:")
        for v in mine:
            where = f" at {v.field}" if v.field else ""
            lines.append(f"    - {v.rule}{where}: {v.message}")
    if nodeid:
        lines.append(f"rerun: pytest {nodeid!r} --leakcheck-seed={check.seed}")
    raise MatrixFailure(check.mask("\n".join(lines)))


# --- assertion 3: what the response must not carry ------------------------------------------


_GENERIC_HEADERS = {"content-type", "content-length"}
_BODY_PIECE = re.compile(r"[A-Za-z][A-Za-z0-9 _.,'-]{11,}")


def _forbidden_texts(case: Case) -> dict[str, list[str]]:
    """What the response must not show, by reason (values only used for searching)."""
    out: dict[str, list[str]] = {"raw header": [], "upstream text": [], "connection detail": []}
    names = {k.lower() for k, _ in case.auth.headers}
    names |= {k.lower() for k, _ in case.placed.reply_headers}
    # the reply's own words and header names; its canaries are the leak verdict's business
    # (a placeholder here: asking the check would plant canaries the fault never used)
    reply = reply_for(case.stage, lambda kind: "", case.placed)
    if reply is not None and case.stage.transport == "http":
        names |= {k.lower() for k, _ in reply.headers}
        body = reply.body.decode("utf-8", "replace")
        out["upstream text"] = [p.strip() for p in _BODY_PIECE.findall(body) if len(p) >= 12]
    out["raw header"] = sorted(n for n in names - _GENERIC_HEADERS)
    details = ["127.0.0.1", "localhost", "::1"]
    if isinstance(case.fault, Listening):
        details.append(f":{case.fault.port}")
    if case.ssh is not None and case.ssh.known_hosts != os.devnull:
        details.append(case.ssh.known_hosts)
    out["connection detail"] = details
    return out


def hygiene_violations(envelope: Any, case: Case) -> list[Violation]:
    """Assertion 3, field by field; messages say what kind of thing was found, not what."""
    problems = []
    forbidden = _forbidden_texts(case)
    prose = case.placed.secrets.get("prose")
    for path, text in leaves(to_jsonable(envelope)):
        if not isinstance(text, str):
            continue
        lowered = text.lower()
        for name in forbidden["raw header"]:
            # a header as text shows as ``Name: value``, ``'name': ...`` or ``name=...``
            pattern = rf"(?<![a-z0-9-]){re.escape(name)}['\"]?\s*[:=]"
            if re.search(pattern, lowered):
                problems.append(Violation("raw-header", path, f"names the {name!r} header"))
        if any(piece in text for piece in forbidden["upstream text"]):
            problems.append(Violation("upstream-text", path, "carries text of the upstream body"))
        if prose is not None and prose[:24] in text:
            problems.append(Violation("upstream-prose", path, "carries the upstream-prose marker"))
        for detail in forbidden["connection detail"]:
            if detail in text:
                problems.append(
                    Violation(
                        "connection-detail",
                        path,
                        "carries a local connection detail (address, port or path)",
                    )  # fmt: skip
                )
                break
    return problems


# --- the summary grid ---------------------------------------------------------------------------


_GRID_LETTERS = {
    "contract": "c",
    "leaks": "l",
    "hygiene": "h",
    "record": "r",
    "snapshot": "s",
    "raised": "x",
    "harness": "!",
}
_RECORD_SINK = ProtectedRecordSink.name


def _failed_of(record: TestRecord) -> set[str]:
    """The assertions a reported case failed, by name. A forbidden hit is the leak
    verdict's unless every one of them is in the protected record: that is the record's
    (assertion 4), so a leak found only there is ``r``, not ``l``."""
    assert record.matrix is not None
    which = {assertion.value for assertion in record.matrix.failed}
    if record.forbidden:
        sinks = {
            f.get("sink")
            for f in record.findings
            if isinstance(f, Mapping) and not f.get("allowed", False)
        }
        which.add("record" if sinks == {_RECORD_SINK} else "leaks")
    if record.outcome == "failed" and not which:
        which.add("harness")
    return which


def _letters(names: Iterable[str]) -> str:
    return "".join(sorted(_GRID_LETTERS.get(n, "?") for n in set(names)))


def format_grid(records: Sequence[Mapping[str, Any]]) -> str:
    """Stages down, operations across; each cell ``passed/cases`` and the assertions that
    failed (c=contract, l=leaks, h=hygiene, r=record, x=gateway raised...), and, after
    ``?``, the assertions not checked (switched off by the target): such a cell never
    reads "ok". Built from report records, so the plugin and ``make demo`` print the
    same thing."""
    cells: dict[tuple[str, str], list[TestRecord]] = {}
    operations: list[str] = []
    stages: list[str] = []
    unchecked_cases: dict[str, int] = {}
    total = 0
    for record in map(TestRecord.from_json, records):
        if record.matrix is None:
            continue
        total += 1
        op, stage = record.matrix.operation, record.matrix.stage
        if op not in operations:
            operations.append(op)
        if stage not in stages:
            stages.append(stage)
        cells.setdefault((stage, op), []).append(record)
        for assertion in record.matrix.unchecked:
            unchecked_cases[assertion.value] = unchecked_cases.get(assertion.value, 0) + 1
    if not cells:
        return "stage matrix: no case reported"
    stages.sort(key=lambda s: list(STAGES).index(s) if s in STAGES else len(STAGES))
    width = max(len(s) for s in stages)
    col = max(14, *(len(o) for o in operations))
    lines = [
        "stage matrix (passed/cases; failed: c=contract l=leaks h=hygiene r=record "
        "s=snapshot drift x=gateway raised !=stage not reached or placement not read"
        + ("; ?=not checked" if unchecked_cases else "")
        + ")",
        " " * width + "  " + "  ".join(op.ljust(col) for op in operations),
    ]
    for stage in stages:
        row = []
        for op in operations:
            group = cells.get((stage, op), [])
            if not group:
                row.append("-".ljust(col))
                continue
            failed: set[str] = set()
            unchecked: set[str] = set()
            bad = 0
            for record in group:
                assert record.matrix is not None  # grouped by it above
                which = _failed_of(record)
                unchecked |= {a.value for a in record.matrix.unchecked}
                failed |= which
                bad += bool(which)
            cell = f"{len(group) - bad}/{len(group)}"
            if bad:
                cell += f" FAIL {_letters(failed)}"
            elif not unchecked:
                cell += " ok"
            if unchecked:
                cell += f" ?{_letters(unchecked)}"
            row.append(cell.ljust(col))
        lines.append(stage.ljust(width) + "  " + "  ".join(row))
    for name, count in sorted(unchecked_cases.items()):
        lines.append(f"not checked: {name} in {count} of {total} case(s)")
    return "\n".join(lines)
