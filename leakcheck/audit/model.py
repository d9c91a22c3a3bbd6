"""What an audit is made of, as types: ``ServerSpec`` (how to start or reach the server),
``ToolInfo`` (a listed tool and the arguments it is called with), ``CaseOutcome`` (one tool
x stage x placement, judged) and ``AuditResult`` (the whole run, and its exit status).
None of them holds a secret's value: ids, kinds, names and masked texts only."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ..findings import without_random_tokens

__all__ = [
    "AuditError",
    "AuditResult",
    "CaseOutcome",
    "Outcome",
    "ServerSpec",
    "ToolInfo",
    "ToolStatus",
]


class AuditError(Exception):
    """The audit cannot run as asked (the server does not start, lists no tools, offers
    an invalid input schema, a template names an unknown field...): one line, masked,
    never a verdict on the server's leaks. ``leakcheck mcp`` prints it and exits 2."""

    leakcheck_verdict = True  # ours: printed as it is, never scanned as caller output


@dataclass(frozen=True)
class ServerSpec:
    """The server under audit: ``command`` and ``args`` started over stdio (``env``
    templates rendered per case, ``cwd``), or ``url`` of a streamable-HTTP server with
    ``headers`` templates. Templates name ``{upstream}``, ``{ca_file}``, ``{timeout}``...
    and canary kinds (``{bearer}``, ``{api_key}``), as ``StdioMcpTarget``'s do."""

    command: str = ""
    args: Sequence[str] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    #: starting the server and the MCP handshake, in seconds
    startup_timeout: float = 30.0
    #: one tool call, in seconds (a server that does not answer by then: the case errs)
    call_timeout: float = 10.0
    #: the HTTP client timeout the server is told to use (``{timeout}``)
    timeout: float = 0.5
    #: a fresh HOME (and TMPDIR) per case, whose files are read as an operator sink
    isolate_home: bool = True
    #: how each session is opened (``mcp_target.HANDSHAKES``): ``auto`` as a 2026 host
    handshake: str = "auto"

    def describe(self) -> str:
        """The server as a person would name it (the command line, or the URL), each run
        in it that looks like a key shown ``«opaque»``: a token given as an argument
        (``-k $TOKEN``, a header) is no secret the audit knows, and this is quoted in
        errors and reports."""
        from ..findings import without_random_tokens  # (findings imports no audit module)

        if self.url:
            return described_url(self.url)
        return without_random_tokens(" ".join([self.command, *self.args]))


#: Where a URL is cut into the pieces ``described_url`` judges one by one.
_URL_DELIMITERS = re.compile(r"([/?&=#;:@])")


def described_url(url: str) -> str:
    """``url`` as an error or a report names it: its scheme, host and port as given, a
    password ``«opaque»`` whatever it is, and each piece of the rest (between ``/ ? & = #``
    and the like) that looks like a key, percent-decoded, ``«opaque»``. A key in a hosted
    MCP server's path (``https://mcp.example/<key>/mcp``) or in any query parameter is no
    secret the audit knows: quoted raw, an unreachable server's error showed it. The
    secrets it does know (a password, a secret-named query parameter) are masked after."""
    from urllib.parse import unquote

    from ..findings import OPAQUE_LABEL, without_random_tokens

    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    authority, slash, tail = rest.partition("/")
    userinfo, at, host = authority.rpartition("@")
    if at:
        user, colon, _password = userinfo.partition(":")
        userinfo = user + (f":{OPAQUE_LABEL}" if colon else "")

    def pieces(text: str) -> str:
        out = []
        for piece in _URL_DELIMITERS.split(text):
            plain = unquote(piece)
            looks_like_a_key = len(plain) >= 20 and without_random_tokens(plain) != plain
            out.append(OPAQUE_LABEL if looks_like_a_key else piece)
        return "".join(out)

    # (a host is judged whole as well: its labels are short, a key cut at its dots is not)
    shown_host = OPAQUE_LABEL if without_random_tokens(host) != host else pieces(host)
    return f"{scheme}{sep}{pieces(userinfo)}{at}{shown_host}{slash}{pieces(tail)}"


class ToolStatus(str, Enum):
    """Whether a listed tool was audited."""

    AUDITED = "audited"
    #: with the generated (or pinned) arguments it made no request to the upstream
    NOT_CALLABLE = "not callable"
    #: arguments could not be generated from its input schema
    NO_ARGUMENTS = "no arguments"
    #: left out by --tools
    LEFT_OUT = "left out"

    def __str__(self) -> str:
        return self.value


@dataclass
class ToolInfo:
    """A tool the server lists: its input schema, the arguments it is called with and
    where they came from ("pinned", "generated", "none needed"), and its status."""

    name: str
    schema: Mapping[str, Any]
    arguments: dict[str, Any] | None = None
    source: str = ""
    #: the invalid_input stage's fields (templates), None: the schema takes any input
    invalid: dict[str, Any] | None = None
    status: ToolStatus = ToolStatus.AUDITED
    #: why it was not audited (masked)
    why: str = ""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "name": self.name,
            "status": self.status.value,
            "arguments_from": self.source,
            "argument_names": [without_random_tokens(n) for n in sorted(self.arguments or {})],
        }
        if self.why:
            data["why"] = self.why
        return data


class Outcome(str, Enum):
    """How one case ended."""

    PASSED = "passed"
    #: a leak, or the MCP result contract or hygiene broken
    FAILED = "failed"
    #: the forced stage never fired: the server made no request (never a pass)
    NOT_REACHED = "not reached"
    #: the server crashed, broke the protocol or did not answer in time
    ERROR = "error"
    #: not run: its tool is not callable, or the budget was spent
    NOT_RUN = "not run"

    def __str__(self) -> str:
        return self.value


@dataclass
class CaseOutcome:
    """One case, judged. ``failed`` names the assertions broken (leaks, contract,
    hygiene); ``details`` is the masked failure text; ``findings`` the masked leak
    dicts (``Leak.to_dict``); ``seconds`` its wall time."""

    tool: str
    stage: str
    placement: str
    outcome: Outcome
    failed: list[str] = field(default_factory=list)
    reason: str = ""
    details: str = ""
    findings: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    #: the first line of the tool result's text (masked): what the model read first
    answer: str = ""
    #: the canaries the case planted, by id (``KIND#N``), and the namespace they were
    #: drawn in with the run's seed: ``leakcheck scan --canaries-from`` rebuilds them
    #: from the JSON report (a server's own log files, which the audit does not read)
    canaries: list[str] = field(default_factory=list)
    canary_namespace: str = ""
    #: what the server offers that the case could not read (a resource that did not
    #: answer within the listing budget, a list past its first 1,000 items): never judged
    #: clean for want of it
    unread: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.tool}/{self.stage}/{self.placement}"

    @property
    def forbidden(self) -> list[dict[str, Any]]:
        return [f for f in self.findings if not f.get("allowed", False)]

    def to_json(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "stage": self.stage,
            "placement": self.placement,
            "outcome": self.outcome.value,
            "failed": list(self.failed),
            "reason": self.reason,
            "details": self.details,
            "findings": self.findings,
            "answer": self.answer,
            "seconds": round(self.seconds, 3),
            "canary_namespace": self.canary_namespace,
            "canaries": list(self.canaries),
            **({"unread": list(self.unread)} if self.unread else {}),
        }


@dataclass
class AuditResult:
    """The whole audit: the server, its tools, every case, the canary seed, the time."""

    server: str
    seed: int | str
    tools: list[ToolInfo] = field(default_factory=list)
    cases: list[CaseOutcome] = field(default_factory=list)
    seconds: float = 0.0
    #: the wall-clock budget, if one was set, and whether it ran out
    budget: float | None = None
    budget_spent: bool = False
    #: what the user should know that is neither a finding nor an error
    notes: list[str] = field(default_factory=list)

    def count(self, outcome: Outcome) -> int:
        return sum(1 for case in self.cases if case.outcome is outcome)

    @property
    def failed(self) -> list[CaseOutcome]:
        return [case for case in self.cases if case.outcome is Outcome.FAILED]

    @property
    def clean(self) -> bool:
        """Every case ran and passed, and every selected tool was audited."""
        return (
            bool(self.cases)
            and all(case.outcome is Outcome.PASSED for case in self.cases)
            and not self.unaudited_tools
        )

    @property
    def unaudited_tools(self) -> list[ToolInfo]:
        return [
            tool
            for tool in self.tools
            if tool.status in (ToolStatus.NOT_CALLABLE, ToolStatus.NO_ARGUMENTS)
        ]

    @property
    def exit_code(self) -> int:
        """0 clean; 1 a leak (or a broken contract or hygiene rule) in any case; 2 when
        nothing failed but the audit is incomplete (a case not reached, errored or not
        run, a tool not callable): it proved nothing about those."""
        if self.failed:
            return 1
        return 0 if self.clean else 2

    def incomplete(self) -> str:
        """One line saying what the audit could not judge ("" when complete)."""
        parts = []
        for outcome in (Outcome.NOT_REACHED, Outcome.ERROR, Outcome.NOT_RUN):
            n = self.count(outcome)
            if n:
                parts.append(f"{n} {outcome.value}")
        tools = self.unaudited_tools
        if tools:
            parts.append(f"tool(s) not audited: {', '.join(t.name for t in tools)}")
        if not self.cases and not tools:
            parts.append("no case to run")
        return "; ".join(parts)
