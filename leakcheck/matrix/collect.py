"""Collection: the cases of a target (``cases_for``: which stage fits which placement and
transport), the checks that make a mistaken ``Target`` one clear error when the module is
collected, and ``stage_matrix``, the parametrized test function."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..contract import ContractCheck, EnvelopeV1, Expectations
from ..errors import did_you_mean, quoted
from ..faults import fault_factories, fault_factory
from ..placements import PLACEMENTS, Placement, placements_for
from ..stages import HTTP_RAISED, STAGES, Stage, stages_for
from .model import SEAMS, CaseSpec, Operation, Target, TargetError, contract_of, seams_of
from .run import run_case

if TYPE_CHECKING:
    from ..harness import LeakCheck

#: fault transports whose transport-raised exceptions carry the ``exception-chain``
#: placement's cause (a transport declares it with a class attribute ``injects_cause``)
_CAUSE_TRANSPORTS = frozenset({"respx", "responses"})


def _via(target: Target, operation: Operation, stage: Stage) -> str:
    """The fault transport of a transport stage of ``operation``."""
    return operation.via or (target.http_via if stage.transport == "http" else target.ssh_via)


def _injects_cause(via: str) -> bool:
    """Whether transport ``via`` chains the ``exception-chain`` cause under the exception
    it raises (a transport on real sockets cannot: the client library raises)."""
    declared = getattr(fault_factory(via), "injects_cause", None)
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
                if _fits(stage, placement, via) and _takes(operation, placement):
                    specs.append(CaseSpec(operation.name, stage.name, placement.name))
    return specs


def caseless_stages(target: Target, specs: Sequence[CaseSpec]) -> dict[str, tuple[str, ...]]:
    """``{operation: stages}``: the stages ``cases_for`` would run for an operation (its
    transport's, those the target asks for, a gateway-side one only with its seam) where
    no placement applies, so no case runs them (a transport stage runs with the credential
    placements only: an MCP server whose templates carry no such credential gets none)."""
    seams = seams_of(target)
    ran = {(spec.operation, spec.stage) for spec in specs}
    caseless: dict[str, tuple[str, ...]] = {}
    for operation in target.operations:
        missing = tuple(
            stage.name
            for stage in stages_for(operation.transport)
            if (target.stages is None or stage.name in target.stages)
            and not (stage.gateway_side and SEAMS[stage.name] not in seams)
            and (operation.name, stage.name) not in ran
        )
        if missing:
            caseless[operation.name] = missing
    return caseless


def _takes(operation: Operation, placement: Placement) -> bool:
    """Whether the operation takes the fields an agent-input placement adds (a tool that
    refuses unknown arguments never reaches the stage with them)."""
    if placement.where != "agent_input" or operation.accepts is None:
        return True
    return set(placement.spec.get("agent_input", {})) <= operation.accepts


def _validate_target(target: Target) -> None:
    if isinstance(target, type):
        shown = target.__name__
        raise TargetError(f"stage_matrix({shown}): pass an instance, {shown}(), not the class")
    name = type(target).__name__
    if not isinstance(target, Target):
        raise TargetError(
            f"{name} is not a leakcheck.matrix.Target: subclass it (class {name}(Target)) "
            "and declare its operations"
        )
    operations = target.operations
    if isinstance(operations, (str, bytes)) or not isinstance(operations, Sequence):
        raise TargetError(f"{name}.operations: a list of Operation(name, transport, ...)")
    if not operations:
        raise TargetError(f"{name}.operations is empty: declare at least one Operation")
    if not all(isinstance(op, Operation) for op in operations):
        raise TargetError(f"{name}.operations: each one an Operation(name, transport, ...)")
    names = [op.name for op in operations]
    if len(set(names)) != len(names):
        raise TargetError(f"{name}.operations: operation names must be unique")
    for attr, known in (("stages", STAGES), ("placements", PLACEMENTS)):
        chosen = getattr(target, attr)
        if isinstance(chosen, str):
            raise TargetError(f"{name}.{attr}: a list of names, not one string")
        unknown = sorted(set(chosen or ()) - set(known), key=str)
        if unknown:
            said = ", ".join(f"{quoted(u)}{did_you_mean(u, known)}" for u in unknown)
            raise TargetError(f"{name}.{attr}: unknown {attr} {said}; known: {', '.join(known)}")
    if target.stages is not None:
        # (a stage no operation's transport has was dropped: "1 skipped", exit 0)
        runnable = {st.name for op in operations for st in stages_for(op.transport)}
        unusable = [stage for stage in target.stages if stage not in runnable]
        if unusable:
            kinds = sorted({op.transport for op in operations})
            raise TargetError(
                f"{name}.stages: {', '.join(unusable)} apply to no operation of it (its "
                f"operations' transports: {', '.join(kinds)}; an ssh stage needs an "
                "Operation(..., 'ssh'), an http one an 'http' one)"
            )
    timeout = target.timeout
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise TargetError(f"{name}.timeout: a number of seconds above 0, not {quoted(timeout)}")
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
    missing = sorted(via for via in vias if fault_factory(via) is None)
    for spec in specs:
        stage = STAGES[spec.stage]
        via = None if stage.gateway_side else _via(target, operations[spec.operation], stage)
        forces = getattr(fault_factory(via), "STAGE_TRANSPORTS", None) if via else None
        if forces is not None and stage.transport not in forces:
            # (found per case before: every case failed through pytest's own frames)
            raise TargetError(
                f"{name}: operation {spec.operation!r} ({operations[spec.operation].transport}) "
                f"forces its stages via {via!r}, which forces {', '.join(sorted(forces))} "
                "stages only (Operation.via, http_via, ssh_via)"
            )
    if missing:
        from ..extensions import install_hint, skipped_plugins

        skipped = skipped_plugins()
        why = "; ".join(
            f"{via}: plugin skipped ({skipped[via]}"
            + (f"; {install_hint(via)} to use it" if install_hint(via) else "")
            + ")"
            for via in missing
            if via in skipped
        )
        raise TargetError(
            f"{name}: no fault transport {', '.join(map(quoted, missing))} (http_via, ssh_via or "
            f"Operation.via){'; ' + why if why else ''}; known: "
            f"{', '.join(sorted(fault_factories())) or 'none installed'}"
        )
    call = type(target).call
    if call is Target.call:
        raise TargetError(f"{name}: implement call(self, case) (call the gateway once)")
    if inspect.iscoroutinefunction(call):
        raise TargetError(
            f"{name}.call is async: the matrix calls it as a function, so it must return "
            "the result (run an async gateway inside it: asyncio.run(...))"
        )
    try:
        inspect.signature(call).bind(target, object())
    except TypeError:
        taken = ", ".join(inspect.signature(call).parameters)
        raise TargetError(f"{name}.call({taken}): it is called as call(self, case)") from None
    except ValueError:  # (a builtin without a signature: let it run)
        pass
    if target.has_record and type(target).record is Target.record:
        raise TargetError(
            f"{name}.has_record is true but record(self, case, request_id) is not "
            "implemented: implement it, or leave has_record unset"
        )


def stage_matrix(target: Target, *, name: str = "test_stage_matrix") -> Callable[..., None]:
    """A pytest test function with one parametrized case per operation x stage x placement.
    Assign it to a ``test_*`` name in a test module."""
    import pytest

    # A target written wrong is the user's mistake: pytest shows their module's line and
    # the message, not the frames of ours that found it
    __tracebackhide__ = True
    try:
        specs = cases_for(target)
        _validate_runnable(target, specs)
        caseless = caseless_stages(target, specs)
    except TargetError as exc:
        raise exc.with_traceback(None) from None

    @pytest.mark.parametrize("leakcheck_case", specs, ids=[s.id for s in specs])
    def test(leakcheck: LeakCheck, leakcheck_case: CaseSpec, request: Any) -> None:
        run_case(
            leakcheck, target, leakcheck_case, nodeid=request.node.nodeid,
            caseless=caseless.get(leakcheck_case.operation, ()),
        )  # fmt: skip

    test.__name__ = test.__qualname__ = name
    return test
