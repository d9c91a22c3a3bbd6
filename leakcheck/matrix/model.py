"""What a user declares and what a case is: ``Operation``, ``Target`` (its seams, its
contract, whether it keeps a record), ``CaseSpec`` (what a test id names), ``Case`` (what
``Target.call`` gets), ``SSHTarget``, and the invalid-input templates."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..canaries import KINDS
from ..contract import (
    DEFAULT as DEFAULT_EXPECTATIONS,
)
from ..contract import ContractCheck, EnvelopeV1, Expectations
from ..doubles import Approver, Boom, ObservedInput, Vault
from ..errors import LeakcheckUsageError, quoted
from ..faults import Fault
from ..placements import AuthTemplate, Placed, Placement, template_kinds
from ..stages import Stage

if TYPE_CHECKING:
    from ..harness import LeakCheck

#: gateway-side stage -> the seam of the gateway it needs (``Target.seams``)
SEAMS: dict[str, str] = {
    "invalid_input": "validation",
    "vault_locked": "vault",
    "approval_declined": "approval",
    "gateway_exception": "exception",
}
ALL_SEAMS: frozenset[str] = frozenset(SEAMS.values())

#: a host no mock answers for and no resolver is asked about: gateway-side stages point the
#: gateway here, so a gateway that calls upstream anyway fails fast and offline
UNREACHABLE_URL = "https://api.upstream.invalid"
DEFAULT_UPSTREAM = "https://api.upstream.test"


class TargetError(LeakcheckUsageError, ValueError):
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
    token in ``replicas`` and, as a list, in ``repo``).

    ``accepts`` names the arguments the operation takes, when it refuses any other (an MCP
    tool's input schema): an agent-input placement that adds fields it does not take is
    not generated, since the call would be refused before any stage (None: any field)."""

    name: str
    transport: Literal["http", "ssh"]
    repeatable: bool
    input: Mapping[str, Any] = field(default_factory=dict)
    via: str | None = None
    invalid_input: Mapping[str, Any] | None = None
    accepts: frozenset[str] | None = None

    def __post_init__(self) -> None:
        # (an Operation written wrong is the user's mistake: pytest shows their module's
        # line and the message, not our frames)
        __tracebackhide__ = True
        if self.transport not in ("http", "ssh"):
            raise ValueError(
                f"operation {quoted(self.name)}: transport must be 'http' or 'ssh', "
                f"not {quoted(self.transport)}"
            )
        if not re.fullmatch(r"[a-z][a-z0-9_]{0,63}", self.name):
            raise ValueError(
                f"operation name {quoted(self.name)} must be a generic action class "
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


def _check_invalid_input(name: str, invalid: Any) -> None:
    __tracebackhide__ = True
    where = f"operation {name!r}: invalid_input"
    if not isinstance(invalid, Mapping) or not invalid:
        raise ValueError(
            f"{where} is a non-empty mapping of the fields to make invalid "
            f"(such as {{'repo': '{{bearer}}'}}), not {type(invalid).__name__}"
        )
    if not all(isinstance(key, str) and key for key in invalid):
        raise ValueError(f"{where}: its keys are field names (non-empty strings)")
    try:
        kinds = template_kinds(invalid)
    except ValueError:
        raise ValueError(
            f"{where}: a template has an unbalanced brace (a literal brace is written {{{{ or }}}})"
        ) from None
    unknown = sorted(kinds - set(KINDS))
    if unknown:
        raise ValueError(
            f"{where} names unknown canary kind(s) {', '.join(map(quoted, unknown))}; "
            f"known kinds: {', '.join(KINDS)}"
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
        # (each quoted as a usage error quotes a name: one that looks like a key described)
        said = ", ".join(quoted(s) for s in unknown)
        raise TargetError(
            f"{name}.seams: unknown seam(s) {said}; known: {', '.join(sorted(ALL_SEAMS))}"
        )
    return chosen
