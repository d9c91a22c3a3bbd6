"""The stage matrix: every operation x stage x placement of a gateway, one test item each.

A user describes their gateway once, as a ``Target``: its operations (transport, whether a
retry is safe, a valid input) and how to call it under a generated ``Case``. Then

    test_gateway = stage_matrix(MyTarget())

in a test module collects one item per case, eagerly (``-k``, ``--collect-only`` and
``-n 2`` work; ids are names, never values). Each case forces its stage, calls the gateway
once and makes the seed's four assertions:

1. contract: the envelope validates against the schema, follows the semantic rules, and
   carries the code and action expected for this stage and operation;
2. leaks: no secret in any caller-visible field or forbidden sink (the ``leakcheck``
   fixture's verdict, reported above the matrix's own);
3. hygiene: no raw header, upstream body text, upstream-prose marker or local connection
   detail (loopback address, server port, known_hosts path) in the response;
4. record: the protected record exists, carries the request id and boundary states
   consistent with the stage, and holds no direct secret (it is scanned as an operator sink).

Across the matrix, request ids are checked at the end of the session (unique, not
sequential, >= 64 random bits, nothing recognisable inside).
"""

from __future__ import annotations

import os
import re
import socket
import ssl
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from .capture import ProtectedRecordSink
from .contract import (
    DEFAULT as DEFAULT_EXPECTATIONS,
)
from .contract import (
    Expectations,
    Violation,
    check_envelope,
    check_record,
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
    "Case",
    "CaseSpec",
    "MatrixFailure",
    "Operation",
    "SSHTarget",
    "Target",
    "cases_for",
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


class Problem(NamedTuple):
    """One broken rule of one of a case's assertions."""

    assertion: Assertion
    violation: Violation


#: a host no mock answers for and no resolver is asked about: gateway-side stages point the
#: gateway here, so a gateway that calls upstream anyway fails fast and offline
UNREACHABLE_URL = "https://api.upstream.invalid"
DEFAULT_UPSTREAM = "https://api.upstream.test"

#: stages where an exception carries the failure (an injected cause can ride on it)
_RAISING = HTTP_RAISED | {"gateway_exception"}


class MatrixFailure(AssertionError):
    """A case that broke one of the four assertions; the message is masked."""

    leakcheck_verdict = True  # ours, not the gateway's: never scanned as caller output
    names_case_and_rerun = True  # its message: the case, each assertion, the rerun command


@dataclass(frozen=True)
class Operation:
    """One operation of the gateway. ``input`` is a valid agent input for it; ``via`` is the
    fault transport (default: the target's, "respx" for HTTP and "ssh" for SSH)."""

    name: str
    transport: Literal["http", "ssh"]
    repeatable: bool
    input: Mapping[str, Any] = field(default_factory=dict)
    via: str | None = None

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


class Target:
    """Subclass: set ``operations``; implement ``call`` and ``record``.

    ``expectations`` overrides the default code/action per stage and operation,
    ``schema`` replaces the agent-error v1 schema, ``stages``/``placements`` narrow the
    matrix, ``http_via`` picks the HTTP fault transport ("respx", "responses",
    "loopback"), ``timeout`` is what the gateway should use as its client timeout.
    """

    operations: Sequence[Operation] = ()
    expectations: Expectations = DEFAULT_EXPECTATIONS
    schema: Mapping[str, Any] | str | None = None
    stages: Sequence[str] | None = None
    placements: Sequence[str] | None = None
    http_via: str = "respx"
    ssh_via: str = "ssh"
    upstream_url: str = DEFAULT_UPSTREAM
    timeout: float = 0.3

    def call(self, case: Case) -> Mapping[str, Any]:
        """Call the gateway once under ``case`` and return the envelope the agent gets."""
        raise NotImplementedError

    def record(self, case: Case, request_id: str) -> Mapping[str, Any] | None:
        """The protected record the gateway wrote for ``request_id`` (None if none)."""
        raise NotImplementedError


# --- collection -------------------------------------------------------------------------------


def _fits(stage: Stage, placement: Placement) -> bool:
    """Whether a placement can show at a stage (an upstream header needs an answer)."""
    if placement.stages is not None and stage.name not in placement.stages:
        return False
    if placement.where == "upstream":
        return stage.response_received is True and stage.transport == "http"
    if placement.where == "exception":
        return stage.name in _RAISING
    return True


def cases_for(target: Target) -> list[CaseSpec]:
    """Every (operation, stage, placement) of ``target``, in a stable order."""
    _validate_target(target)
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
            for placement in placements:
                if _fits(stage, placement):
                    specs.append(CaseSpec(operation.name, stage.name, placement.name))
    return specs


def _validate_target(target: Target) -> None:
    name = type(target).__name__
    if not target.operations:
        raise ValueError(f"{name}.operations is empty: declare at least one Operation")
    names = [op.name for op in target.operations]
    if len(set(names)) != len(names):
        raise ValueError(f"{name}.operations: operation names must be unique")
    for attr, known in (("stages", STAGES), ("placements", PLACEMENTS)):
        chosen = getattr(target, attr)
        unknown = sorted(set(chosen or ()) - set(known))
        if unknown:
            raise ValueError(f"{name}.{attr}: unknown {attr} {unknown}; known: {', '.join(known)}")


def stage_matrix(target: Target, *, name: str = "test_stage_matrix") -> Callable[..., None]:
    """A pytest test function with one parametrized case per operation x stage x placement.
    Assign it to a ``test_*`` name in a test module."""
    import pytest

    specs = cases_for(target)

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
        fault: Fault = check.force(
            stage, placement=placed, credentials=credentials, agent_input=agent_input
        )
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
        options: dict[str, Any] = {}
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


def run_case(check: LeakCheck, target: Target, spec: CaseSpec, *, nodeid: str = "") -> None:
    """Run one case and raise ``MatrixFailure`` (masked) if an assertion other than the
    leak verdict fails; the leak verdict is the fixture's, made at the end of the test."""
    case = build_case(check, target, spec)
    records = ProtectedRecordSink()
    if records.name not in check.skip_sinks:  # an opt-out is honoured, as for every sink
        check.sinks.append(records)
    try:
        # which library exception the gateway turned into this envelope (snapshots)
        with library_exceptions() as escaped:
            envelope = target.call(case)
    except Exception as exc:  # the agent would get this exception: it is caller-visible
        check.exception_reached_caller(exc)
        # in the grid and the report as well
        check.matrix = CaseResult(
            spec.operation, spec.stage, spec.placement, None, {Assertion.CONTRACT}
        )
        _fail(
            check, spec, nodeid,
            [Problem(Assertion.CONTRACT, Violation("gateway-raised", "", "the gateway raised "
                     f"{type(exc).__name__} instead of returning an error envelope"))],
        )  # fmt: skip
        return
    check.expose(envelope)
    if spec.placement == BASELINE_PLACEMENTS.get(case.operation.transport):
        check.snapshot = _snapshot(case, spec, envelope, escaped.last)
    problems: list[Problem] = []
    problems += [
        Problem(Assertion.CONTRACT, v)
        for v in check_envelope(
            envelope,
            stage=case.stage,
            operation=case.operation.name,
            repeatable=case.operation.repeatable,
            expectations=target.expectations,
            schema=target.schema,
            # dict.items, not the double's: reading it here must not prove the gateway did
            agent_input=dict(dict.items(case.agent_input)),
        )
    ]
    problems += [Problem(Assertion.HYGIENE, v) for v in hygiene_violations(envelope, case)]
    request_id = envelope.get("request_id") if isinstance(envelope, Mapping) else None
    record = target.record(case, request_id) if isinstance(request_id, str) else None
    if record is not None:
        records.add(record, records.name)
    problems += [
        Problem(Assertion.RECORD, v)
        for v in check_record(record, stage=case.stage, request_id=request_id or "")
    ]
    check.matrix = CaseResult(
        spec.operation,
        spec.stage,
        spec.placement,
        request_id if isinstance(request_id, str) else None,
        {problem.assertion for problem in problems},
    )
    if problems:
        _fail(check, spec, nodeid, problems)


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


def _fail(check: LeakCheck, spec: CaseSpec, nodeid: str, problems: list[Problem]) -> None:
    lines = [
        f"leakcheck matrix: operation {spec.operation}, stage {spec.stage}, "
        f"placement {spec.placement}"
    ]
    for assertion, title in ASSERTIONS.items():
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
    "harness": "!",
}


def format_grid(records: Sequence[Mapping[str, Any]]) -> str:
    """Stages down, operations across; each cell ``passed/cases`` and the assertions that
    failed (c=contract, l=leaks, h=hygiene, r=record). Built from report records, so the
    plugin and ``make demo`` print the same thing."""
    cells: dict[tuple[str, str], list[TestRecord]] = {}
    operations: list[str] = []
    stages: list[str] = []
    for record in map(TestRecord.from_json, records):
        if record.matrix is None:
            continue
        op, stage = record.matrix.operation, record.matrix.stage
        if op not in operations:
            operations.append(op)
        if stage not in stages:
            stages.append(stage)
        cells.setdefault((stage, op), []).append(record)
    stages.sort(key=lambda s: list(STAGES).index(s) if s in STAGES else len(STAGES))
    width = max(len(s) for s in stages)
    col = max(14, *(len(o) for o in operations))
    lines = [
        "stage matrix (passed/cases; failed: c=contract l=leaks h=hygiene r=record "
        "s=snapshot drift !=stage not reached)",
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
            bad = 0
            for record in group:
                assert record.matrix is not None  # grouped by it above
                which = {assertion.value for assertion in record.matrix.failed}
                if record.forbidden:
                    which.add("leaks")
                if record.outcome == "failed" and not which:
                    which.add("harness")
                failed |= which
                bad += bool(which)
            mark = "".join(sorted(_GRID_LETTERS.get(w, "?") for w in failed))
            cell = f"{len(group) - bad}/{len(group)}" + (f" FAIL {mark}" if bad else " ok")
            row.append(cell.ljust(col))
        lines.append(stage.ljust(width) + "  " + "  ".join(row))
    return "\n".join(lines)
