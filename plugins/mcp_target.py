"""MCP servers as stage-matrix targets: the tools of a server, each failure stage forced
under it, judged on what an MCP client hands the model.

Two ways to run the server under test, each case with its own server configured from the
case (credentials from the case's vault, the upstream URL pointing at the armed fault):

* in process (``InProcessMcpTarget``): ``server`` is a callable returning a fastmcp
  ``FastMCP`` server (its constructor or your factory), called with ``kwargs`` rendered
  from the case, with ``env`` set in ``os.environ`` while the case runs (and restored);
  tools are called through ``fastmcp.Client(server)``, in memory;
* over stdio (``StdioMcpTarget``): ``command`` and ``args`` started by the official
  ``mcp`` SDK client (``mcp.client.stdio.stdio_client``, ``ClientSession``) with ``env``
  rendered from the case, as an MCP client's ``mcpServers`` entry would start it. The
  child cannot be reached by a mocked transport: ``http_via`` is ``"loopback"``, and the
  fault's ``child_environment()`` (``faults.ChildProcessUpstream``: DNS, refused, TLS proof
  inside the child; the loopback CA) is merged into the child's environment. The start is
  ``process_sink.provisioning()``: the environment the harness configures the server with
  is not judged as a leak (its command line still is).

::

    from leakcheck.plugins.mcp_target import StdioMcpTarget
    from leakcheck.matrix import stage_matrix

    target = StdioMcpTarget(
        sys.executable, ["-m", "myserver"],
        env={"API_TOKEN": "{bearer}", "API_URL": "{upstream}"},
        repeatable={"get_item"}, arguments={"get_item": {"id": "it_1"}},
    )
    test_my_server = stage_matrix(target, name="test_my_server")

Templates (``env``, ``args``, ``kwargs``; strings, or dicts and lists of them) name
``{KIND}`` (a canary kind: the case's credential of that kind, from its vault, or a fresh
canary of the case when the placement plants none), ``{upstream}`` (the case's
``upstream_url``: the armed fault), ``{auth_url}`` (the same with the placement's URL
userinfo), ``{auth_headers}`` and ``{auth_query}`` (the placement's credential headers and
query parameters, rendered: JSON objects inside a string), ``{ca_file}`` (the loopback
CA's PEM file for an HTTPS fault, else empty), ``{verify}`` (``case.verify``) and
``{timeout}``. A value that is exactly one field is that field's value (a dict, an
``ssl.SSLContext``, a float) for ``kwargs``; inside a longer string, or in ``env`` and
``args``, it is text. The placements default to those whose credentials the templates
carry (``carried``): a server given only ``{bearer}`` gets no ``cookie`` case, which
would pass without testing anything.

Operations are the server's tools, listed from it once (at collection; a stdio server is
started once for that, with placeholder credentials); the user marks which are
repeatable and gives each one valid arguments (a tool with no required argument may go
without). What the model sees of a call, and what the checks read:

* the ``CallToolResult`` as the server sent it (its JSON: ``content`` with the text
  blocks, ``structuredContent``, ``isError``; not checked against the tool's output
  schema, as a host that does not check hands it over): returned by ``call`` (the matrix
  exposes it as caller-visible and checks it);
* the server's log notifications to the client during the call (caller-visible: clients
  show them to the model or the user), exposed as ``mcp log notification``; and its
  progress notifications (the call carries a progress token, as a host's that shows
  progress does: their ``message`` is shown to the user), ``mcp progress notification``;
  and what it asks the host for during the call (elicitations shown to the user, sampling
  requests handed to the model: a 2026-07-28 ``InputRequiredResult``, an earlier
  protocol's requests to the client), answered as a user who declines, ``mcp input
  request``; and what it said of itself when the session opened (``instructions``, handed
  to the model, and ``serverInfo``), ``mcp server instructions``; and its tools as it
  lists them in the case's session after the call (each definition goes to the model; a
  server adding a tool after a failure says ``tools/list_changed``, and a host lists them
  again), ``mcp tool list``; and where it declares them, its resources, resource templates
  and prompts listed in that session, each of its first 16 resources read and each of its
  first 16 prompts that need no argument got (``mcp resource list``, ``mcp resource
  template list``, ``mcp prompt list``, ``mcp resource contents``, ``mcp prompt
  messages``);
* the stdio server's stderr: an operator sink, ``mcp server stderr``
  (``McpServerStderrSink``). An in-process server's logging is the ``log record`` sink's.

The contract is ``McpResultContract`` ("MCP result"): a failure stage must produce
``isError: true`` with non-empty text content. There is no protected record; no
gateway-side seam by default (a ``from_openapi`` server has no vault or approval, and
forwards invalid arguments to the API rather than rejecting them: ``seams={"validation"}``
for a server that validates its inputs).

Active only when ``mcp`` (the stdio client) and, for in-process servers, ``fastmcp``
import.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import string
import tempfile
import threading
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import anyio
import anyio.lowlevel
import mcp  # noqa: F401 - the plugin is active only when the official SDK imports
import mcp.types as mcp_types
from leakcheck.plugins.process_sink import provisioning
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from leakcheck.canaries import KINDS, is_kind_name
from leakcheck.capture import Captured
from leakcheck.contract import DEFAULT as DEFAULT_EXPECTATIONS
from leakcheck.contract import Expectations, Violation
from leakcheck.errors import LeakcheckUsageError, did_you_mean, first_leaf, quoted
from leakcheck.faults import ChildProcessUpstream, TlsUpstream
from leakcheck.findings import cut_whole, without_random_tokens
from leakcheck.matrix import SEAMS, UNREACHABLE_URL, Case, Operation, Target, TargetError
from leakcheck.netwatch import merge_environment
from leakcheck.placements import PLACEMENTS, template_kinds
from leakcheck.policy import SinkClass
from leakcheck.stages import Stage, get_stage

__all__ = [
    "CASE_FIELDS",
    "InProcessMcpTarget",
    "McpResultContract",
    "McpServerStderrSink",
    "McpTarget",
    "McpTemplateError",
    "StdioMcpTarget",
    "carried",
    "child_environment",
    "render",
    "template_fields",
]

#: what each template field stands for
CASE_FIELDS: dict[str, str] = {
    "upstream": "the case's upstream_url (the armed fault)",
    "auth_url": "upstream_url with the placement's URL userinfo, percent-encoded",
    "auth_headers": "the placement's credential headers, rendered (a JSON object in text)",
    "auth_query": "the placement's credential query parameters (a JSON object in text)",
    "ca_file": "the loopback CA's PEM file for an HTTPS fault, else empty",
    "verify": "case.verify: an ssl.SSLContext for an HTTPS fault, else True",
    "timeout": "the client timeout the case asks for, in seconds",
}

_PLACEHOLDER = "leakcheck-placeholder"
_OPERATION_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")


class McpTemplateError(LeakcheckUsageError, ValueError):
    """A template names a field that does not exist (the message lists the known ones)."""


# --- the contract ---------------------------------------------------------------------------


def _wire(result: Any) -> Any:
    """A ``CallToolResult`` as its JSON (what went over the wire), or ``result`` as is."""
    dump = getattr(result, "model_dump", None)
    if callable(dump):
        with contextlib.suppress(Exception):
            return dump(by_alias=True, mode="json", exclude_none=True)
    return result


class McpResultContract:
    """ "MCP result": for a failure stage, the tool result must say so: ``isError: true``
    with at least one non-empty text content block (the model is told that, and what,
    failed). A success result for a failure stage (a 2xx non-JSON body handed over as the
    tool's output, an error page as its text) is a violation. Violations name the field
    and the rule, never a value. Implements ``leakcheck.contract``'s ``ContractCheck``."""

    name = "MCP result"

    def check(
        self,
        result: Any,
        *,
        stage: str | Stage,
        operation: str | None = None,
        repeatable: bool = False,
        expectations: Expectations | None = None,
        agent_input: Any = None,
    ) -> list[Violation] | None:
        stage = get_stage(stage)
        data = _wire(result)
        if not isinstance(data, Mapping):
            return [Violation("mcp-result", "", "the call did not return a CallToolResult")]
        content = data.get("content")
        if not isinstance(content, list):
            return [Violation("mcp-result", "/content", "a CallToolResult has a content list")]
        found = []
        is_error = data.get("isError", data.get("is_error"))
        if is_error is not True:
            found.append(
                Violation(
                    "mcp-is-error",
                    "/isError",
                    f"must be true for a failure (stage {stage.name}): the result says "
                    "the call succeeded",
                )
            )
        texts = [
            block.get("text")
            for block in content
            if isinstance(block, Mapping) and block.get("type") == "text"
        ]
        if not any(isinstance(text, str) and text.strip() for text in texts):
            found.append(
                Violation(
                    "mcp-error-text",
                    "/content",
                    "an error result needs a non-empty text block saying what failed",
                )
            )
        return found

    def __repr__(self) -> str:
        return "McpResultContract()"


# --- the stdio server's stderr --------------------------------------------------------------


class McpServerStderrSink:
    """What an MCP server process wrote to its stderr: an operator sink (the operator
    reads it in the client's log; the model does not see it)."""

    name = "mcp server stderr"
    sink_class = SinkClass.OPERATOR

    def __init__(self) -> None:
        self._texts: list[tuple[str, str]] = []

    def add(self, path: str, text: str) -> None:
        self._texts.append((path, text))

    def start(self) -> None:
        return None

    def stop(self) -> None:
        return None

    def collect(self) -> Iterator[Captured]:
        for path, text in self._texts:
            yield Captured(self.name, self.sink_class, path, text)


# --- templates ---------------------------------------------------------------------------------


#: the field names a template (a string, or dicts and lists of them) uses
template_fields = template_kinds


def _check_fields(templates: Iterable[Any], where: str) -> None:
    known = [*CASE_FIELDS, *KINDS]
    for template in templates:
        try:
            fields = template_fields(template)
        except ValueError:  # string.Formatter: an unbalanced brace (said, never quoted)
            raise McpTemplateError(
                f"{where}: a '{{' or '}}' without its pair (a template field is {{bearer}}; a "
                "literal brace is written twice: {{ or }})"
            ) from None
        unknown = sorted(fields - set(known))
        if unknown:
            said = ", ".join(_field_shown(name, known) for name in unknown)
            raise McpTemplateError(
                f"{where}: unknown template field(s) {said}; known: "
                f"{', '.join(CASE_FIELDS)} and the canary kinds {', '.join(KINDS)} (a literal "
                "brace is written twice: {{ or }})"
            )


def _field_shown(name: str, known: Sequence[str]) -> str:
    """An unknown field as an error says it: quoted when it has a name's shape, else
    described (``--env API_TOKEN={$TOKEN}``: the shell put the token itself in the braces,
    and the error printed it)."""
    if is_kind_name(name) and len(name) <= 32:
        return f"{{{name}}}{did_you_mean(name, known)}"
    return f"a field of {len(name)} characters that is no name"


def _as_text(name: str, value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool | int | float):
        return str(value)
    raise McpTemplateError(f"template field {{{name}}} cannot be text: use it alone, in kwargs")


def render(template: Any, lookup: Callable[[str], Any], *, text: bool = False) -> Any:
    """``template`` with every ``{field}`` replaced by ``lookup(field)``. A string that
    is exactly one field gives that field's value (unless ``text``); values are inserted
    as they are, never parsed again (a canary's braces stay braces)."""
    if isinstance(template, Mapping):
        return {k: render(v, lookup, text=text) for k, v in template.items()}
    if isinstance(template, list | tuple):
        return [render(v, lookup, text=text) for v in template]
    if not isinstance(template, str):
        return template
    parts = list(string.Formatter().parse(template))
    if not text and len(parts) == 1 and parts[0][0] == "" and parts[0][1]:
        return lookup(parts[0][1])
    out = []
    for literal, name, _, _ in parts:
        out.append(literal)
        if name:
            out.append(_as_text(name, lookup(name)))
    return "".join(out)


class _CaseValues:
    """The template fields of one case, each read when first used (a credential from
    the vault, as a gateway reads it)."""

    def __init__(self, case: Case) -> None:
        self._case = case
        self._cache: dict[str, Any] = {}

    def __call__(self, name: str) -> Any:
        if name not in self._cache:
            self._cache[name] = self._value(name)
        return self._cache[name]

    def _credential(self, kind: str) -> str:
        case = self._case
        if kind in case.vault.kinds():
            return case.vault.get(kind)
        return case.check.secret(kind)  # not placed here: a fresh canary, still searched

    def _value(self, name: str) -> Any:
        case = self._case
        if name in KINDS:
            return self._credential(name)
        if name == "upstream":
            return case.upstream_url
        if name == "auth_url":
            return _with_userinfo(case.upstream_url, case.auth.userinfo, self._credential)
        if name in ("auth_headers", "auth_query"):
            pairs = case.auth.headers if name == "auth_headers" else case.auth.query
            return {key: _fill(value, self._credential) for key, value in pairs}
        if name == "ca_file":
            return _ca_file(case.fault)
        if name == "verify":
            return case.verify
        if name == "timeout":
            return case.timeout
        raise McpTemplateError(f"unknown template field {{{name}}}")


def _fill(template: str, credential: Callable[[str], str]) -> str:
    return "".join(
        literal + (credential(name) if name else "")
        for literal, name, _, _ in string.Formatter().parse(template)
    )


def _with_userinfo(
    url: str, userinfo: tuple[str, str] | None, credential: Callable[[str], str]
) -> str:
    if userinfo is None:
        return url
    user, password = (quote(_fill(part, credential), safe="") for part in userinfo)
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{user}:{password}@{host}"))


def _ca_file(fault: Any) -> str:
    if isinstance(fault, TlsUpstream) and fault.scheme == "https":
        ca_file = getattr(fault, "ca_file", "")
        return ca_file if isinstance(ca_file, str) else ""
    return ""


def _placeholder(name: str) -> Any:
    """Template values for listing the tools (no case yet): nothing real."""
    if name in KINDS:
        return f"{_PLACEHOLDER}-{name}"
    return {
        "upstream": UNREACHABLE_URL,
        "auth_url": UNREACHABLE_URL,
        "auth_headers": {},
        "auth_query": {},
        "ca_file": "",
        "verify": True,
        "timeout": 0.3,
    }[name]


def carried(fields: Iterable[str]) -> list[str]:
    """The placements whose credentials reach a server configured with templates naming
    ``fields``: every placement that is not a credential (agent input, upstream answers,
    an exception), and each credential placement whose credentials the templates carry
    (its kinds, or ``auth_headers``, ``auth_query``, ``auth_url`` for its headers, query
    and userinfo; the base bearer token as ``{bearer}`` or in ``auth_headers``). A
    placement whose credential the server is never given would pass without testing
    anything: it is not generated."""
    fields = set(fields)
    out = []
    for name, placement in PLACEMENTS.items():
        if placement.where != "credential":
            out.append(name)
            continue
        spec = placement.spec
        needs = [(["{bearer}"], "auth_headers")]  # the base credential
        for key, whole in (("request_headers", "auth_headers"), ("query", "auth_query"),
                           ("userinfo", "auth_url")):  # fmt: skip
            if spec.get(key):
                needs.append((spec[key], whole))
        if all(whole in fields or template_fields(t) <= fields for t, whole in needs):
            out.append(name)
    return out


# --- child processes and loopback faults -----------------------------------------------------


def child_environment(fault: Any) -> dict[str, str]:
    """What a fault asks a child process's environment to hold so that its stage is
    forced and proven inside the child (``ChildProcessUpstream.child_environment()``:
    the proof hook on ``PYTHONPATH``, the loopback CA for HTTPS); empty for a fault that
    offers none."""
    if isinstance(fault, ChildProcessUpstream):
        return {str(k): str(v) for k, v in fault.child_environment().items()}
    return {}


# --- running the async client from a sync test ------------------------------------------------


def _run(fn: Callable[[], Any]) -> Any:
    """Run an async function to completion from sync code (in a worker thread when this
    thread already runs an event loop)."""
    try:
        asyncio.get_running_loop()
        running = True
    except RuntimeError:
        running = False
    if not running:  # outside the except block: no "no running event loop" context
        return anyio.run(fn)
    box: dict[str, Any] = {}

    def worker() -> None:
        try:
            box["value"] = anyio.run(fn)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=worker, name="leakcheck-mcp-call", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


#: rounds of input a call is answered for: a host asks its user (or its model) each time
#: the server says it needs input; the audit declines, and a server that asks again
#: after that many is judged on what it said last
_INPUT_ROUNDS = 3
_CALL_RESULT: Any = None  # (the result's type adapter, made on first use: pydantic)


def _call_result() -> Any:
    global _CALL_RESULT
    if _CALL_RESULT is None:
        from pydantic import TypeAdapter

        _CALL_RESULT = TypeAdapter(mcp_types.CallToolResult | mcp_types.InputRequiredResult)
    return _CALL_RESULT


async def _call(
    session: ClientSession, tool: str, arguments: Any, timeout: float, heard: _Call | None = None
) -> Any:
    """``tools/call``, and the result as the server sent it: ``ClientSession.call_tool``
    would check it against the tool's output schema and raise instead (a host that does
    not check hands the model what the server said, which is what is judged).

    With ``heard``, as a host does: the request carries a progress token, and each
    progress notification's parameters go to ``heard.progress`` (a server sends none to a
    client that asked for none; a host shows their ``message`` to the user); a result
    that asks for input (``InputRequiredResult``: an elicitation shown to the user, a
    sampling request handed to the model) goes to ``heard.input_requests`` and is answered
    (declined, ``_declined``) for up to _INPUT_ROUNDS rounds, the call made again with the
    answers and the server's state."""

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        assert heard is not None  # (asked for only then)
        heard.progress.append({"progress": progress, "total": total, "message": message})

    answers: Any = None
    state: str | None = None
    for _ in range(_INPUT_ROUNDS + 1):
        request = mcp_types.CallToolRequest(
            params=mcp_types.CallToolRequestParams(
                name=tool, arguments=arguments, input_responses=answers, request_state=state
            )
        )
        result = await session.send_request(
            request,
            _call_result(),
            request_read_timeout_seconds=timeout,
            progress_callback=None if heard is None else on_progress,
        )
        if heard is None or not isinstance(result, mcp_types.InputRequiredResult):
            return result
        wired = _wire(result)
        heard.input_requests.append(wired.get("inputRequests", wired))
        answers, state = _declined(result.input_requests or {}), result.request_state
    return result


def _declined(requests: Mapping[str, Any]) -> dict[str, Any]:
    """What a host whose user says no answers each of ``requests``: an elicitation
    declined, no roots, and for a sampling request a reply of the audit's own (the
    protocol has no refusal there) that holds nothing of the case."""
    answers: dict[str, Any] = {}
    for key, request in requests.items():
        if isinstance(request, mcp_types.ElicitRequest):
            answers[key] = mcp_types.ElicitResult(action="decline")
        elif isinstance(request, mcp_types.ListRootsRequest):
            answers[key] = mcp_types.ListRootsResult(roots=[])
        else:
            answers[key] = mcp_types.CreateMessageResult(
                role="assistant",
                content=mcp_types.TextContent(type="text", text=_NO_MODEL),
                model="leakcheck-audit",
                stop_reason="endTurn",
            )
    return answers


#: the audit's reply to a sampling request (no model answers in an audit)
_NO_MODEL = "No model is available: the user declined."


async def _settle() -> None:
    """Let the client's notification callbacks (spawned as each notification arrived,
    before the result did) run before the call is judged."""
    for _ in range(8):
        await anyio.lowlevel.checkpoint()


# --- the target ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Tool:
    name: str
    required: tuple[str, ...]
    #: the arguments its input schema takes, if it refuses others (None: any)
    accepts: frozenset[str] | None = None


@dataclass
class _Call:
    result: Any
    notifications: list[dict[str, Any]]
    #: the progress notifications of the call (``_call``)
    progress: list[dict[str, Any]] = field(default_factory=list)
    #: what the server asked the host for during the call, elicitations (shown to the
    #: user) and sampling requests (handed to the model): in an ``InputRequiredResult``
    #: (``_call``) or, on a connection of an earlier protocol, as requests of its own
    #: (``on_elicitation``, ``on_sampling``)
    input_requests: list[Any] = field(default_factory=list)
    #: what the server said of itself when the session opened (``_server_said``)
    server: dict[str, Any] = field(default_factory=dict)
    #: its tools as listed in the case's session after the call (``_listings_said``)
    tools: list[Any] = field(default_factory=list)
    #: the rest of what it offers the host, listed and read in that session after the call
    #: (``_listings_said``): what each holds, by the name it is exposed as
    offers: dict[str, list[Any]] = field(default_factory=dict)
    #: what of those was not read (no answer within the budget, past LIST_AT_MOST)
    unread: list[str] = field(default_factory=list)

    async def on_log(self, params: Any) -> None:
        """A log notification: heard."""
        self.notifications.append(_notification(params))

    async def on_elicitation(self, context: Any, params: Any) -> Any:
        """An earlier protocol's ``elicitation/create``: heard, declined."""
        self.input_requests.append({"elicitation": _wire(params)})
        return mcp_types.ElicitResult(action="decline")

    async def on_sampling(self, context: Any, params: Any) -> Any:
        """An earlier protocol's ``sampling/createMessage``: heard, refused."""
        self.input_requests.append({"sampling": _wire(params)})
        return mcp_types.ErrorData(code=-1, message="the user declined the sampling request")


def _operation_name(tool: str) -> str:
    if _OPERATION_NAME.fullmatch(tool):
        return tool
    name = re.sub(r"[^a-z0-9_]+", "_", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", tool).lower())
    name = name.strip("_") or "tool"
    if not name[0].isalpha():
        name = "t_" + name
    return name[:64]


def _notification(params: Any) -> dict[str, Any]:
    data = _wire(params)
    if isinstance(data, Mapping):
        return {k: data[k] for k in ("level", "logger", "data") if k in data}
    return {"data": data}


class McpTarget(Target):
    """What both MCP targets share: tools as operations, templates, the contract. Use
    ``InProcessMcpTarget`` or ``StdioMcpTarget``."""

    #: the contract the matrix checks a result with ("MCP result")
    contract = McpResultContract()
    #: no protected record: ``record`` is not overridden
    seams: frozenset[str] = frozenset()

    def template_where(self, what: str) -> str:
        """What a template error names: the target's option (``leakcheck mcp`` says its
        command line's)."""
        return f"{type(self).__name__} {what}"

    def __init__(
        self,
        *,
        env: Mapping[str, Any] | None = None,
        repeatable: Iterable[str] = (),
        arguments: Mapping[str, Mapping[str, Any]] | None = None,
        tools: Sequence[str] | None = None,
        seams: Iterable[str] = (),
        stages: Sequence[str] | None = None,
        placements: Sequence[str] | None = None,
        expectations: Expectations = DEFAULT_EXPECTATIONS,
        http_via: str | None = None,
        timeout: float | None = None,
        call_timeout: float = 10.0,
    ) -> None:
        self.env = dict(env or {})
        _check_fields(self.env.values(), self.template_where("env"))
        self.repeatable = frozenset(repeatable)
        self.arguments = {name: dict(args) for name, args in (arguments or {}).items()}
        self.tools = tuple(tools) if tools is not None else None
        self.seams = frozenset(seams)
        unknown = sorted(self.seams - set(SEAMS.values()))
        if unknown:
            known = ", ".join(sorted(set(SEAMS.values())))
            said = ", ".join(quoted(seam) for seam in unknown)
            raise TargetError(f"unknown seam(s) {said}; known: {known}")
        #: None: every HTTP stage, and the gateway-side stages of the declared seams
        self.stages = list(stages) if stages is not None else None
        #: None: the placements whose credentials the templates carry (``carried``)
        self.placements = list(placements) if placements is not None else None
        self._placements_given = placements is not None
        self.expectations = expectations
        if http_via is not None:
            self.http_via = http_via
        if timeout is not None:
            self.timeout = timeout
        self.call_timeout = call_timeout
        self._operations: list[Operation] | None = None
        self._tool_of: dict[str, str] = {}
        #: the server listed no resource, template or prompt when its tools were listed
        #: (placeholder credentials) and said those lists do not change: not asked again
        #: in each case (``_offers_nothing``)
        self._offers_nothing = False

    def _choose_placements(self, templates: Iterable[Any]) -> None:
        if not self._placements_given:
            fields = set().union(*(template_fields(t) for t in templates), set())
            self.placements = carried(fields)

    # --- what the server offers ---------------------------------------------------------

    async def _list_tools(self) -> list[_Tool]:
        raise NotImplementedError

    async def _call_tool(self, case: Case, values: _CaseValues, tool: str, args: Any) -> _Call:
        raise NotImplementedError

    @property
    def operations(self) -> Sequence[Operation]:  # type: ignore[override]  # an attribute there
        if self._operations is None:
            try:
                listed = _run(self._list_tools)
            except Exception as exc:  # noqa: BLE001 - said as one TargetError, below
                # (a factory that returned None, took no such keyword or raised: a dozen
                # frames of anyio, asyncio and fastmcp, ending in "Could not infer a valid
                # transport from: None")
                leaf = first_leaf(exc)
                if isinstance(leaf, TargetError):
                    raise leaf.with_traceback(None) from None
                said = _shown(str(leaf).splitlines()[0], 200) if str(leaf) else ""
                raise TargetError(
                    f"{type(self).__name__}: could not list the server's tools: "
                    f"{type(leaf).__name__}" + (f": {said}" if said else "")
                ) from None
            self._operations = self._make_operations(listed)
        return self._operations

    def _make_operations(self, listed: list[_Tool]) -> list[Operation]:
        self._tool_of = {}
        by_name = {tool.name: tool for tool in listed}
        wanted = list(self.tools) if self.tools is not None else list(by_name)
        named = set(wanted) | set(self.repeatable) | set(self.arguments)
        missing = sorted(named - set(by_name))
        if missing:
            raise TargetError(
                f"{type(self).__name__}: the server lists no tool named {', '.join(missing)}; "
                f"it lists: {', '.join(by_name) or 'none'}"
            )
        operations = []
        for name in wanted:
            tool = by_name[name]
            if name not in self.arguments and tool.required:
                raise TargetError(
                    f"{type(self).__name__}: give valid arguments for tool {name} "
                    f"(it requires {', '.join(tool.required)}), or leave it out with tools="
                )
            op = _operation_name(name)
            if op in self._tool_of:
                raise TargetError(f"tools {self._tool_of[op]} and {name} make one operation name")
            self._tool_of[op] = name
            operations.append(
                Operation(op, "http", repeatable=name in self.repeatable,
                          input=self.arguments.get(name, {}), accepts=tool.accepts)
            )  # fmt: skip
        return operations

    # --- one case -------------------------------------------------------------------------

    def call(self, case: Case) -> Any:
        """Call the case's tool once; return the ``CallToolResult`` as its JSON. The log
        notifications the server sent meanwhile are exposed as caller-visible."""
        self.operations  # noqa: B018 - the tool names
        tool = self._tool_of[case.operation.name]
        # what the agent sent: dict.items, not the double's (the server reads it)
        arguments = dict(dict.items(case.agent_input))
        values = _CaseValues(case)
        done: _Call = _run(lambda: self._call_tool(case, values, tool, arguments))
        if done.server:
            case.check.expose(done.server, "mcp server instructions")
        if done.tools:
            case.check.expose(done.tools, "mcp tool list")
        for name, offered in done.offers.items():
            answered = [item for item in offered if item is not None]
            if answered:
                case.check.expose(answered, name)
        if done.unread:
            _said_unread(case.check, done.unread)
        if done.notifications:
            case.check.expose(done.notifications, "mcp log notification")
        if done.progress:
            case.check.expose(done.progress, "mcp progress notification")
        if done.input_requests:
            case.check.expose(done.input_requests, "mcp input request")
        wire = _wire(done.result)
        if isinstance(wire, Mapping) and wire.get("isError") and case.check.unreached():
            # (an argument the tool refused read as "never reached", nothing more)
            said = case.check.mask(_first_text(wire))  # (masked whole, then cut)
            case.check.harness_hints.append(
                f"the tool {tool!r} answered an error before any request reached the fault: "
                "are its arguments (arguments=) ones it takes?"
                + (f" It said: {_shown(said, 200)!r}" if said else "")
            )
        return wire


def _said_unread(check: Any, unread: Sequence[str]) -> None:
    """What the server offers that the case could not read, listed as not inspected (in
    the report and the summary: never a clean verdict for want of it)."""
    from leakcheck.policy import SinkClass

    sink = check.text_sink(UNREAD_SINK, SinkClass.CALLER)
    for what in unread:
        sink.add_uninspected(check.mask(what), "not read: " + check.mask(what))


#: where what a case could not read of a server's offers is said (``_said_unread``)
UNREAD_SINK = "mcp offers"


def _shown(text: str, size: int, *, keep_end: bool = False) -> str:
    """``text`` cut to ``size`` characters as a message quotes it: a run of credential
    characters cut at the edge, and every run that looks like a key, shown ``«opaque»``
    (what a server said may hold a literal token of ``env=``: no secret leakcheck knows)."""
    return without_random_tokens(cut_whole(text, size, keep_end=keep_end))


def _first_text(result: Mapping[str, Any]) -> str:
    """The first text content of a ``CallToolResult`` as JSON, or ""."""
    for item in result.get("content") or ():
        if isinstance(item, Mapping) and isinstance(item.get("text"), str):
            return str(item["text"])
    return ""


def _accepts(schema: Any) -> frozenset[str] | None:
    """The argument names an input schema takes. A field outside them is refused (a
    fastmcp function tool validates against its signature) or dropped unread (a
    ``from_openapi`` tool sends only its parameters on): either way an agent-input canary
    there tests nothing, unless the schema opens ``additionalProperties``."""
    if not isinstance(schema, Mapping) or schema.get("additionalProperties") not in (None, False):
        return None
    properties = schema.get("properties")
    return frozenset(map(str, properties)) if isinstance(properties, Mapping) else frozenset()


def _required(schema: Any) -> tuple[str, ...]:
    required = schema.get("required", ()) if isinstance(schema, Mapping) else ()
    return tuple(str(name) for name in required) if isinstance(required, list) else ()


class InProcessMcpTarget(McpTarget):
    """An in-process fastmcp server, built per case by ``server(**kwargs)`` (``kwargs``
    rendered from the case, ``env`` set in ``os.environ`` meanwhile), called through
    ``fastmcp.Client(server)``."""

    def __init__(
        self,
        server: Callable[..., Any],
        *,
        kwargs: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        if not callable(server):
            raise TypeError("server: a callable returning a FastMCP server (per case)")
        self.server = server
        self.kwargs = dict(kwargs or {})
        _check_fields(self.kwargs.values(), self.template_where("kwargs"))
        self._choose_placements([*self.env.values(), *self.kwargs.values()])

    @contextlib.contextmanager
    def _environment(self, lookup: Callable[[str], Any]) -> Iterator[None]:
        rendered = {k: render(v, lookup, text=True) for k, v in self.env.items()}
        saved = {k: os.environ.get(k) for k in rendered}
        os.environ.update(rendered)
        try:
            yield
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    def _build(self, lookup: Callable[[str], Any]) -> Any:
        built = self.server(**render(self.kwargs, lookup))
        if built is None:
            raise TargetError(
                "InProcessMcpTarget: the server factory returned None: it returns the server "
                "(a FastMCP server or the SDK's), built for the case's values"
            )
        return built

    async def _list_tools(self) -> list[_Tool]:
        from fastmcp import Client

        with self._environment(_placeholder):
            server = self._build(_placeholder)
            async with Client(server, timeout=self.call_timeout) as client:
                listed = await client.list_tools()
                self._offers_nothing = await _offers_nothing(client.session)
        return [_Tool(t.name, _required(t.input_schema), _accepts(t.input_schema)) for t in listed]

    async def _call_tool(self, case: Case, values: _CaseValues, tool: str, args: Any) -> _Call:
        from fastmcp import Client

        heard = _Call(None, [])

        async def on_elicitation(message: str, kind: Any, params: Any, context: Any) -> Any:
            return await heard.on_elicitation(context, params)

        async def on_sampling(messages: Any, params: Any, context: Any) -> Any:
            await heard.on_sampling(context, params)
            raise RuntimeError("the user declined the sampling request")  # (fastmcp: an error)

        with self._environment(values):
            server = self._build(values)
            with anyio.fail_after(self.call_timeout):
                async with Client(
                    server,
                    log_handler=heard.on_log,
                    elicitation_handler=on_elicitation,
                    sampling_handler=on_sampling,
                    timeout=self.call_timeout,
                ) as client:
                    heard.server = _server_said(client.session)
                    heard.result = await _call(client.session, tool, args, self.call_timeout, heard)
                    await _settle()
                    await _listings_said(client.session, heard, offers=not self._offers_nothing)
        return heard


class StdioMcpTarget(McpTarget):
    """An MCP server started as ``command args`` over stdio by the official SDK client,
    per case, with ``env`` rendered from the case (over the SDK's default inherited
    environment) and the fault's ``child_environment()``. ``startup_timeout`` bounds the
    server's start and handshake, ``call_timeout`` the tool call; ``handshake``
    (``HANDSHAKES``) how the session is opened, ``auto`` as a 2026 host does."""

    http_via = "loopback"

    def __init__(
        self,
        command: str,
        args: Sequence[Any] = (),
        *,
        cwd: str | Path | None = None,
        startup_timeout: float = 30.0,
        handshake: str = "auto",
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self.command = command
        self.args = list(args)
        _check_fields(self.args, self.template_where("args"))
        self._choose_placements([*self.env.values(), *self.args])
        self.cwd = cwd
        self.startup_timeout = startup_timeout
        self.handshake = _checked_handshake(handshake)

    def _parameters(self, lookup: Callable[[str], Any], extra: Mapping[str, str]) -> Any:
        env = {k: render(v, lookup, text=True) for k, v in self.env.items()}
        return StdioServerParameters(
            command=self.command,
            args=[render(a, lookup, text=True) for a in self.args],
            env=merge_environment(env, extra),
            cwd=self.cwd,
        )

    async def _session(
        self,
        parameters: Any,
        errlog: Any,
        body: Callable[[ClientSession], Any],
        heard: _Call | None = None,
    ) -> Any:
        # the harness starting the server under test, configured as an operator would: its
        # environment is not a leak (its command line still is)
        with provisioning(), anyio.fail_after(self.startup_timeout + self.call_timeout):
            async with stdio_client(parameters, errlog=errlog) as (read, write):
                async with ClientSession(
                    read, write, read_timeout_seconds=self.startup_timeout, **_listening(heard)
                ) as session:
                    await _handshake(session, self.handshake)
                    return await body(session)

    async def _list_tools(self) -> list[_Tool]:
        async def body(session: ClientSession) -> Any:
            tools = (await session.list_tools()).tools
            self._offers_nothing = await _offers_nothing(session)
            return tools

        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
            try:
                listed = await self._session(self._parameters(_placeholder, {}), errlog, body)
            except Exception as exc:  # noqa: BLE001 - said once, as the user's mistake
                # (the first failure inside anyio's groups: "ExceptionGroup" named no cause)
                leaf = first_leaf(exc)
                detail = _shown(str(leaf).splitlines()[0], 160) if str(leaf) else ""
                failure = type(leaf).__name__ + (f" ({detail})" if detail else "")
            else:
                return [
                    _Tool(t.name, _required(t.input_schema), _accepts(t.input_schema))
                    for t in listed
                ]
            errlog.seek(0)
            # (placeholders only, no case yet: a literal token in env= or args= is no
            # secret leakcheck knows, and is shown opaque)
            said = _shown(errlog.read(), 2000, keep_end=True).strip()
        command = without_random_tokens(" ".join([self.command, *map(str, self.args)]))
        raise TargetError(
            f"{type(self).__name__}: could not list the tools of {command!r} (placeholder "
            f"credentials, upstream {UNREACHABLE_URL}): {failure}"
            + (f"; its stderr ends:\n{said}" if said else "; it wrote nothing to stderr")
        )

    def _case_environment(self, case: Case) -> dict[str, str]:
        """What the case adds to the server's environment: the fault's
        ``child_environment()`` (a subclass adds its own, such as a per-case HOME)."""
        return child_environment(case.fault)

    def _stderr_sink(self, case: Case) -> McpServerStderrSink | None:
        check = case.check
        if McpServerStderrSink.name in check.skip_sinks:
            return None
        sink = next((s for s in check.sinks if isinstance(s, McpServerStderrSink)), None)
        if sink is None:
            sink = McpServerStderrSink()
            check.sinks.append(sink)
        return sink

    async def _call_tool(self, case: Case, values: _CaseValues, tool: str, args: Any) -> _Call:
        heard, body = _call_parts(tool, args, self.call_timeout, offers=not self._offers_nothing)
        parameters = self._parameters(values, self._case_environment(case))
        sink = self._stderr_sink(case)
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
            try:
                result = await self._session(parameters, errlog, body, heard)
            finally:
                errlog.flush()
                errlog.seek(0)
                text = errlog.read()
                if sink is not None and text:
                    sink.add(f"{Path(self.command).name} stderr", text)
        heard.result = result
        return heard


def _call_parts(
    tool: str, args: Any, timeout: float, *, offers: bool = True
) -> tuple[_Call, Callable[[Any], Awaitable[Any]]]:
    """(the call, what it hears to be filled and its result to be set; the body that calls
    ``tool`` in a session, opened with ``_listening(call)``): one call, however the
    session is opened (stdio, HTTP). A ping after the result is a round trip: what the
    server sent before it has come in. ``offers``: whether resources and prompts are
    listed after it (``_listings_said``)."""
    heard = _Call(None, [])

    async def body(session: Any) -> Any:
        heard.server = _server_said(session)
        with anyio.fail_after(timeout):
            result = await _call(session, tool, args, timeout, heard)
            with contextlib.suppress(MCPError):
                await session.send_ping()
            await _settle()
        await _listings_said(session, heard, offers=offers)
        return result

    return heard, body


#: how long a case's listing of the tools after its call may take (apart from the call's
#: own budget: a server that answers the listing badly or not at all loses the listing, not
#: the call's result)
_LISTING_SECONDS = 2.0
#: what is kept of an enclosing deadline for closing the session after the listing
_CLOSING_SECONDS = 0.25


async def _offers_nothing(session: Any, timeout: float = _LISTING_SECONDS) -> bool:
    """Whether ``session``'s server lists no resource, resource template or prompt and
    says those lists do not change (``listChanged`` false or absent where it declares
    them): then the cases do not ask for them again (three requests a case, 15 to 20 ms in
    process under the plugin's capture; a fastmcp server declares both and most offer
    neither). False when it cannot tell."""
    capabilities = getattr(session, "server_capabilities", None)
    lists: list[tuple[str, str]] = []  # (the session's method, the result's field)
    for name, kinds in (
        ("resources", (("list_resources", "resources"),
                       ("list_resource_templates", "resource_templates"))),
        ("prompts", (("list_prompts", "prompts"),)),
    ):  # fmt: skip
        declared = getattr(capabilities, name, None)
        if declared is None:
            continue
        if getattr(declared, "list_changed", False):
            return False
        lists += kinds
    try:
        with anyio.fail_after(timeout):
            for method, field_name in lists:
                if getattr(await getattr(session, method)(), field_name, None):
                    return False
    except Exception:  # noqa: BLE001 - a listing it answers badly: asked in each case
        return False
    return True


async def _listings_said(
    session: Any, heard: _Call, timeout: float = _LISTING_SECONDS, *, offers: bool = True
) -> None:
    """What ``session``'s server offers a host now, as a host reads it, into ``heard``: its
    tools (each definition, name, title, description, annotations, schemas and ``_meta``,
    goes to the model), and where it declares them its resources, resource templates and
    prompts (listed: a host shows them to the user and hands what is chosen to the model),
    the contents of its first READ_AT_MOST resources and the messages of its first
    READ_AT_MOST prompts that take no required argument. Listed before any case, with
    placeholder credentials, a server that wrote its token into a description, or added a
    tool quoting its failure after a 401 (and said ``tools/list_changed``, on which a host
    lists them again), passed; a resource such as ``config://settings`` was never read
    (found by hunting helpers). Each part is asked for at once; an error the server
    answers one with is what the host shows (judged, ``{"error": ...}``); one it answers
    badly is left out; one it does not answer within ``timeout`` in all, and each list's
    items past LIST_AT_MOST, are said not read (``heard.unread``): the call was judged
    all the same (a hunting helper found the case lost when the listing failed)."""
    # (within any deadline around it, with room to close the session: a listing that takes
    # long must not time the case out)
    remaining = anyio.current_effective_deadline() - anyio.current_time() - _CLOSING_SECONDS
    timeout = min(timeout, remaining)
    capabilities = getattr(session, "server_capabilities", None)
    declared = {name for name in ("resources", "prompts") if getattr(capabilities, name, None)}
    if not offers:  # (none when the tools were listed, and said not to change: not asked)
        declared = set()
    if timeout <= 0:
        heard.unread += [
            f"its {name}: not listed, no time left within the case's deadline"
            for name in sorted(declared)
        ]
        return

    # what was asked and is not answered yet: said "not read" if the budget runs out
    pending: dict[str, str] = {}

    async def asking(what: str, request: Awaitable[Any]) -> Any:
        """``request``'s answer; an error the server answered with, as the host shows it
        (``{"error": ...}``: a token in it passed, found by a hunting helper); None for
        any other failure."""
        pending[what] = what
        try:
            answer = await request
        except MCPError as exc:
            if _client_made(exc):  # (no answer: it stays pending, said not read)
                return None
            answer = {"error": {"code": exc.code, "message": exc.message, "data": exc.data}}
        except Exception:  # noqa: BLE001 - a malformed answer: nothing the host shows
            answer = None
        # (cancelled by the budget, it stays pending: said not read)
        pending.pop(what, None)
        return answer

    def listed_part(name: str, items: list[Any]) -> list[Any]:
        if len(items) > LIST_AT_MOST:
            heard.unread.append(
                f"{name}: {len(items) - LIST_AT_MOST} past the first {LIST_AT_MOST}"
            )
        return [_wire(item) for item in items[:LIST_AT_MOST]]

    async def tools() -> None:
        listed = await session.list_tools()
        heard.tools = [_wire(tool) for tool in getattr(listed, "tools", None) or ()]

    async def resources() -> None:
        answer = await asking(RESOURCE_LIST, session.list_resources())
        if isinstance(answer, dict):  # (its error)
            heard.offers[RESOURCE_LIST] = [answer]
            return
        listed = getattr(answer, "resources", None) or []
        heard.offers[RESOURCE_LIST] = listed_part(RESOURCE_LIST, listed)
        uris = [str(r.uri) for r in listed if getattr(r, "uri", None)][:READ_AT_MOST]
        # (in the order listed, whichever answers first)
        read: list[Any] = [None] * len(uris)
        heard.offers[RESOURCE_CONTENTS] = read

        async def contents(at: int) -> None:
            read[at] = _wire(await asking(f"resource {uris[at]}", session.read_resource(uris[at])))

        await _each(contents, range(len(uris)))

    async def templates() -> None:
        answer = await asking(TEMPLATE_LIST, session.list_resource_templates())
        listed = getattr(answer, "resource_templates", None) or []
        heard.offers[TEMPLATE_LIST] = (
            [answer] if isinstance(answer, dict) else listed_part(TEMPLATE_LIST, listed)
        )

    async def prompts() -> None:
        answer = await asking(PROMPT_LIST, session.list_prompts())
        if isinstance(answer, dict):
            heard.offers[PROMPT_LIST] = [answer]
            return
        listed = getattr(answer, "prompts", None) or []
        heard.offers[PROMPT_LIST] = listed_part(PROMPT_LIST, listed)
        free = [p.name for p in listed if not any(a.required for a in p.arguments or ())]
        free = free[:READ_AT_MOST]
        got: list[Any] = [None] * len(free)
        heard.offers[PROMPT_MESSAGES] = got

        async def messages(at: int) -> None:
            got[at] = _wire(await asking(f"prompt {free[at]}", session.get_prompt(free[at])))

        await _each(messages, range(len(free)))

    asked = [tools]
    if "resources" in declared:
        asked += [resources, templates]
    if "prompts" in declared:
        asked.append(prompts)
    with anyio.move_on_after(timeout):
        await _each(lambda ask: ask(), asked)
    # (never a silent pass: what the budget cut off is said, not judged clean)
    heard.unread += [f"{what}: no answer within {timeout:.1f} s" for what in pending]


#: What the MCP client says when the server did not answer (its read timeout: "Request
#: 'resources/read' timed out"; the connection closed): no answer of the server's.
_CLIENT_MADE = re.compile(r"Request '[^']*' timed out|Connection closed")


def _client_made(exc: MCPError) -> bool:
    """Whether ``exc`` is the client's own (no answer came), not an error the server sent."""
    return exc.code in (mcp_types.REQUEST_TIMEOUT, mcp_types.CONNECTION_CLOSED) and bool(
        _CLIENT_MADE.fullmatch(str(exc.message))
    )


#: how many of a server's resources are read, and of its prompts got, in a case
READ_AT_MOST = 16
#: how many items of each list (resources, templates, prompts) are judged in a case: a
#: server listing 10,000 resources took a second a case to judge (found by a hunting
#: helper); the rest are said not inspected
LIST_AT_MOST = 1_000
#: the names what a server offers besides its tools is exposed as (``_listings_said``)
RESOURCE_LIST = "mcp resource list"
RESOURCE_CONTENTS = "mcp resource contents"
TEMPLATE_LIST = "mcp resource template list"
PROMPT_LIST = "mcp prompt list"
PROMPT_MESSAGES = "mcp prompt messages"


async def _each(ask: Callable[[Any], Awaitable[None]], items: Sequence[Any]) -> None:
    """``ask`` each of the first READ_AT_MOST ``items`` at once; one that fails is left
    out (the others and the call's result stand)."""

    async def one(item: Any) -> None:
        with contextlib.suppress(Exception):
            await ask(item)

    async with anyio.create_task_group() as group:
        for item in items[:READ_AT_MOST]:
            group.start_soon(one, item)


def _server_said(session: Any) -> dict[str, Any]:
    """What the server said of itself when ``session`` opened, as a host reads it: its
    ``instructions`` (a host hands them to the model) and its ``serverInfo`` (name, title,
    version, description: shown to the user). A server that built them from its
    configuration (an upstream URL with a key in it) showed them to every session, and no
    case was judged on them (found by a hunting helper)."""
    said: dict[str, Any] = {}
    instructions = getattr(session, "instructions", None)
    if instructions:
        said["instructions"] = instructions
    info = _wire(getattr(session, "server_info", None))
    if info:
        said["serverInfo"] = info
    return said


def _listening(heard: _Call | None) -> dict[str, Any]:
    """A ``ClientSession``'s callbacks that hand what the server sends the client during
    ``heard`` to it: log notifications (on a 2026-07-28 connection a server sends them only
    to a request that opts in, with a level: every level asked for, as a host that shows
    them all asks), and an earlier protocol's elicitation and sampling requests (declared
    so, as a host that shows them declares them); none without it."""
    if heard is None:
        return {}
    return {
        "log_level": "debug",
        "logging_callback": heard.on_log,
        "elicitation_callback": heard.on_elicitation,
        "sampling_callback": heard.on_sampling,
    }


#: How a session is opened: ``auto`` as a 2026 host does (``server/discover`` for the
#: 2026-07-28 protocol, the ``initialize`` handshake where the server has no such method,
#: the SDK's own policy: ``fastmcp.Client``'s default), ``legacy`` as an older host does
#: (``initialize``, 2025-11-25 at most). A server can differ between them: an
#: ``InputRequiredResult`` exists only on a modern connection.
HANDSHAKES = ("auto", "legacy")


async def _handshake(session: ClientSession, how: str) -> None:
    """Open ``session`` as ``how`` (``HANDSHAKES``) says."""
    if how == "legacy":
        await session.initialize()
        return
    from mcp.client._probe import negotiate_auto  # (the SDK's connect policy, not exported)

    await negotiate_auto(session)


def _checked_handshake(how: str) -> str:
    if how not in HANDSHAKES:
        raise McpTemplateError(f"handshake {how!r} is none of {', '.join(HANDSHAKES)}")
    return how


# --- the parts an outside audit builds its targets from (``leakcheck mcp``) -----------------

#: the parts of one tool call in a session (see ``_call_parts``)
call_parts = _call_parts
#: a session's callbacks for what the server sends the client during a call
listening = _listening
#: open a session as ``HANDSHAKES`` says
handshake = _handshake

#: a listed tool (name, required arguments, the arguments its schema takes)
ListedTool = _Tool
#: what one call gave: the result as sent, the notifications and input requests meanwhile
ToolCall = _Call
#: ``tools/call`` with the result as the server sent it (no output-schema check)
call_tool = _call
#: an unknown template field is a ``McpTemplateError`` naming ``where``
check_fields = _check_fields
#: a log notification's parameters as the client saw them
notification = _notification
#: the template values used to list the tools before any case (nothing real)
placeholder = _placeholder
#: run an async function to completion from sync code
run_sync = _run
#: let the client's notification callbacks run before a call is judged
settle = _settle
#: the argument names an input schema takes (None: any)
schema_accepts = _accepts
