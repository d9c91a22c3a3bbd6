"""One case: ``build_case`` arms its fault and hands out what the gateway needs,
``run_case`` calls the gateway once and judges the four assertions (and whether every
credential of the placement was read), ``MatrixFailure`` says what failed and how to
rerun it."""

from __future__ import annotations

import os
import socket
import ssl
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ..capture import ProtectedRecordSink
from ..contract import ContractCheck, EnvelopeV1, NotChecked, Violation, check_record
from ..doubles import Approver, Boom, ObservedInput, Vault
from ..faults import (
    Fault,
    GatewayFault,
    HarnessError,
    HttpUpstream,
    Listening,
    SshUpstream,
    TlsUpstream,
)
from ..libtrace import library_exceptions
from ..placements import (
    BASELINE_PLACEMENTS,
    Placed,
    placements_for,
    render_template,
    template_kinds,
)
from ..records import Assertion, CaseResult
from ..serialize import safe_str
from ..snapshot_store import request_id_of, snapshot_entry
from ..stages import STAGES
from .hygiene import hygiene_violations, request_id_words
from .model import (
    UNREACHABLE_URL,
    Case,
    CaseSpec,
    Operation,
    SSHTarget,
    Target,
    TargetError,
    contract_of,
    keeps_record,
    seams_of,
)

if TYPE_CHECKING:
    from ..harness import LeakCheck

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


class Problem(NamedTuple):
    """One broken rule of one of a case's assertions."""

    assertion: Assertion
    violation: Violation


class MatrixFailure(AssertionError):
    """A case that broke one of the four assertions; the message is masked."""

    leakcheck_verdict = True  # ours, not the gateway's: never scanned as caller output
    names_case_and_rerun = True  # its message: the case, each assertion, the rerun command


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
        for kind in sorted(template_kinds(template))
    }
    rendered = render_template(template, values)
    assert isinstance(rendered, dict)
    return rendered


def run_case(
    check: LeakCheck,
    target: Target,
    spec: CaseSpec,
    *,
    nodeid: str = "",
    caseless: Sequence[str] = (),
) -> None:
    """Run one case and raise ``MatrixFailure`` (masked) if an assertion other than the
    leak verdict fails; the leak verdict is the fixture's, made at the end of the test.

    The case is in the grid and the report whatever happens: its result is set before
    anything runs (a crash of the harness shows as ``!``), a gateway that raises fails it
    as "gateway raised", and what the target switched off is "not checked"."""
    contract = contract_of(target)
    with_record = keeps_record(target)
    result = CaseResult(spec.operation, spec.stage, spec.placement, caseless=tuple(caseless))
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
        missing = missing_credentials(case)
        if missing:
            # the target asked for a kind this placement does not plant: the double's
            # error, not the gateway's (it proved nothing)
            result.failed = {Assertion.HARNESS}
            _fail(check, spec, nodeid, [Problem(Assertion.HARNESS, v) for v in missing], contract)
            return
        result.failed = {Assertion.RAISED}
        what = "an error envelope" if isinstance(contract, EnvelopeV1) else "an error result"
        _fail(
            check, spec, nodeid,
            [Problem(Assertion.RAISED, Violation("gateway-raised", "", "the gateway raised "
                     f"{type(exc).__name__} instead of returning {what}"
                     f"{_raised_at(exc, check.mask)}"))],
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
    request_id = request_id_of(returned)
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
    problems += [Problem(Assertion.HARNESS, v) for v in missing_credentials(case)]
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
    added = sorted(case.placement.spec.get("agent_input", {}))
    why = (
        f"; the placement adds the argument(s) {', '.join(added)} to the agent's input: a "
        "gateway that refuses arguments it does not know stops there, before the "
        "credential (declare the arguments it takes, Operation(accepts={...}), and the "
        "matrix leaves such placements out)"
        if case.placement.where == "agent_input" and added
        else ""
    )
    return [
        Violation(
            "placement-not-read",
            "",
            f"placement {case.placement.name}: the gateway never asked for {names} "
            f"({calls}){why}; a gateway that takes no such credential: leave the placement "
            "out (Target.placements)",
        )
    ]


def missing_credentials(case: Case) -> list[Violation]:
    """Each kind the gateway asked the vault for that this case's placement does not plant
    (``Vault.missing``): the gateway got a ``MissingCredential`` where it expected a
    credential, so the case exercised nothing; said with the placements that plant one."""
    violations = []
    for kind in dict.fromkeys(case.vault.missing):
        planting = [p.name for p in placements_for(case.operation.transport) if kind in p.kinds]
        way_out = (
            f"Placements that plant one: {', '.join(planting)}; keep to them "
            "(Target.placements) or ask for what this one plants"
            if planting
            else "No placement plants one: ask for the kinds placements plant"
        )
        held = ", ".join(case.vault.kinds()) or "none"
        if "bearer" in case.vault.kinds():
            # (every HTTP placement plants the base credential: a gateway's one key)
            way_out += (
                "; a gateway with one key, whatever it calls it, can take the base "
                "credential every placement plants (vault.get('bearer'))"
            )
        violations.append(
            Violation(
                "placement-lacks-credential",
                "",
                f"placement {case.placement.name} plants no {kind}, and the gateway asked "
                f"for one (vault.get({kind!r})); the vault holds: {held}. " + way_out,
            )
        )
    return violations


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


#: The characters of a raised exception's message that a gateway-raised failure quotes.
_RAISED_MESSAGE_CHARS = 200


def _raised_at(exc: BaseException, mask: Callable[[str], str]) -> str:
    """`` (raised at FILE:LINE in FUNCTION: MESSAGE)``: the innermost frame of ``exc`` and
    the first line of its message, for finding the raise (a ``TypeError`` of a call given
    the placement's extra input was only a type's name). The line is masked whole, then
    shortened: cut first, a secret at the cut would leave a piece too short to mask."""
    frame = exc.__traceback__
    where = ""
    if frame is not None:
        while frame.tb_next is not None:
            frame = frame.tb_next
        code = frame.tb_frame.f_code
        where = f"{os.path.basename(code.co_filename)}:{frame.tb_lineno} in {code.co_name}"
    lines = safe_str(exc).strip().splitlines()
    message = mask(lines[0]) if lines else ""
    if len(message) > _RAISED_MESSAGE_CHARS:
        message = message[:_RAISED_MESSAGE_CHARS] + "…"
    said = ": ".join(part for part in (f"raised at {where}" if where else "", message) if part)
    return f" ({said})" if said else ""


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
