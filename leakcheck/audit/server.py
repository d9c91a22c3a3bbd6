"""Starting the server under audit, listing its tools, and one case's server process.

``AuditStdioTarget`` is ``StdioMcpTarget`` (a fresh server process per case, the official
SDK client, the fault's ``child_environment()``) plus what an outside audit needs:

* a fresh ``HOME`` and ``TMPDIR`` per case (``ServerSpec.isolate_home``), whose files are
  read after the call as an operator sink (``server files``): a server that writes a
  cache, a log or a crash dump there is judged on it;
* the MCP client's own log records (the SDK logs a line a server wrote to stdout that is
  not JSON-RPC, with the line in it) as an operator sink (``mcp client log``), never on
  the auditing process's stderr;
* a Node.js proof hook (``NODE_OPTIONS=--require``): a Node server's failed lookups and
  connects are proven inside it as a Python child's are (``node_proof``);
* a server that crashes, breaks the protocol or does not answer in time is a
  ``CaseError`` (the case could not be judged), not a verdict on the tool.

``list_tools`` starts the server once with placeholder credentials and the unreachable
upstream, as the target does at collection, and turns every way that can fail into one
line (``AuditError``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import re
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
from mcp.shared.exceptions import MCPError

from leakcheck.plugins.mcp_target import (
    ListedTool,
    McpTarget,
    StdioMcpTarget,
    ToolCall,
    call_parts,
    check_fields,
    handshake,
    listening,
    placeholder,
    render,
    run_sync,
    schema_accepts,
)
from leakcheck.plugins.process_sink import provisioning

from ..capture import Captured
from ..errors import first_leaf
from ..faults import HarnessError
from ..findings import cut_whole, without_random_tokens
from ..matrix import UNREACHABLE_URL, Case
from ..policy import SinkClass
from .model import AuditError, ServerSpec, ToolInfo
from .node_proof import node_options

__all__ = [
    "AuditHttpTarget",
    "AuditStdioTarget",
    "CaseError",
    "ClientLogSink",
    "HomeFilesSink",
    "capture_client_log",
    "list_tools",
    "make_target",
]

#: what a files sink reads at most per file and in all (a server writing a huge cache)
_FILE_LIMIT = 1 << 20
_FILES_LIMIT = 8 << 20


class CaseError(HarnessError):
    """A case that could not be judged: the server crashed, broke the protocol or did not
    answer within the call timeout. Its message is masked by the runner."""


# --- the MCP client's own log -----------------------------------------------------------------


#: What the MCP SDK logs when a line a server wrote is not JSON-RPC it can read
_UNREADABLE = "Failed to parse JSONRPC message"


class ClientLogSink:
    """What the MCP client library logged while a case ran (a host's log): operator."""

    name = "mcp client log"
    sink_class = SinkClass.OPERATOR

    def __init__(self) -> None:
        self.texts: list[str] = []

    def start(self) -> None:
        return None

    def stop(self) -> None:
        return None

    def collect(self) -> Iterator[Captured]:
        for i, text in enumerate(self.texts):
            yield Captured(self.name, self.sink_class, f"record {i + 1}", text)


_current = threading.local()


class _ClientLogHandler(logging.Handler):
    """Hands each record of the ``mcp`` loggers to the sink of the thread that logged it
    (each case runs its event loop in one thread); a record with no sink is dropped."""

    def emit(self, record: logging.LogRecord) -> None:
        sink = getattr(_current, "sink", None)
        if sink is None:
            return
        try:
            text = record.getMessage()
            if record.exc_info:
                text += "\n" + logging.Formatter().formatException(record.exc_info)
            sink.texts.append(text)
        except Exception:  # noqa: BLE001 - a record that cannot be formatted: not ours
            return


#: what a host's log shows by default of the client library: INFO and above (its DEBUG
#: traces of every message would be the auditor's own requests, not the server's doing)
_handler = _ClientLogHandler(level=logging.INFO)
_handler_lock = threading.Lock()
_handler_users = 0


class capture_client_log:  # noqa: N801 - used as a context manager, like a function
    """While active, the ``mcp`` loggers' records go to ``sink`` (for this thread) and
    never to the process's handlers (they may quote what a server wrote, secrets and all)."""

    def __init__(self, sink: ClientLogSink | None) -> None:
        self.sink = sink
        self._saved: tuple[bool, int] | None = None

    def __enter__(self) -> ClientLogSink | None:
        global _handler_users
        logger = logging.getLogger("mcp")
        with _handler_lock:
            if _handler_users == 0:
                logger.addHandler(_handler)
                _handler.saved = (logger.propagate, logger.level)  # type: ignore[attr-defined]
                logger.propagate = False
                logger.setLevel(logging.INFO)
            _handler_users += 1
        self._previous = getattr(_current, "sink", None)
        _current.sink = self.sink
        return self.sink

    def __exit__(self, *exc_info: Any) -> None:
        global _handler_users
        _current.sink = self._previous
        logger = logging.getLogger("mcp")
        with _handler_lock:
            _handler_users -= 1
            if _handler_users == 0:
                logger.removeHandler(_handler)
                propagate, level = _handler.saved  # type: ignore[attr-defined]
                logger.propagate = propagate
                logger.setLevel(level)


# --- files under the case's HOME --------------------------------------------------------------


class HomeFilesSink:
    """The files a server wrote under its per-case HOME and TMPDIR: operator."""

    name = "server files"
    sink_class = SinkClass.OPERATOR

    def __init__(self, root: str) -> None:
        self.root = root

    def start(self) -> None:
        return None

    def stop(self) -> None:
        return None

    def collect(self) -> Iterator[Captured]:
        # their names too: a file or directory named after a token (a cache keyed by it)
        # is shown to every local user by ``ls`` (found by a hunting helper)
        paths = sorted(Path(self.root).rglob("*"))
        if paths:
            names = "\n".join(path.relative_to(self.root).as_posix() for path in paths)
            yield Captured(self.name, self.sink_class, "(file names)", names)
        total = 0
        for path in paths:
            if total >= _FILES_LIMIT:
                return
            try:
                if path.is_symlink() or not path.is_file():
                    continue
                with path.open("rb") as f:
                    data = f.read(_FILE_LIMIT)
            except OSError:
                continue
            total += len(data)
            relative = path.relative_to(self.root).as_posix()
            yield Captured(self.name, self.sink_class, relative, data.decode("utf-8", "replace"))


# --- the target --------------------------------------------------------------------------------


#: The texts of the errors the MCP SDK makes itself when a session closes or a request
#: times out (``mcp.shared.jsonrpc_dispatcher``, ``direct_dispatcher``,
#: ``client.streamable_http``).
_SDK_MESSAGES = frozenset({"Connection closed", "SSE stream ended without a response"})
_SDK_TIMEOUT = re.compile(r"Request .{1,200} timed out")


def sdk_error(leaf: BaseException, code: int) -> bool:
    """Whether ``leaf`` is the MCP SDK's own error of ``code`` (a session that closed, a
    request that timed out), not a JSON-RPC error the server sent with that code: -32000
    and -32001 are in the range JSON-RPC leaves to servers, and a server's error holding
    its token was taken for "the server exited" (and -32001 for a timeout), never judged."""
    if not isinstance(leaf, MCPError) or leaf.code != code or leaf.data is not None:
        return False
    message = leaf.message
    return message in _SDK_MESSAGES or _SDK_TIMEOUT.fullmatch(message) is not None


def _why(exc: BaseException, spec: ServerSpec) -> str | None:
    """What a session failure means, or None for an error the server chose to send (a
    JSON-RPC error answer: the tool's own, judged as caller-visible)."""
    from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

    leaf = first_leaf(exc)
    if isinstance(leaf, TimeoutError) or sdk_error(leaf, REQUEST_TIMEOUT):
        return (
            f"the server did not answer within {spec.call_timeout:g} s "
            "(a hang, or an HTTP client timeout longer than --call-timeout)"
        )
    if sdk_error(leaf, CONNECTION_CLOSED):
        return "the server process exited (or closed its stdout) during the call"
    if isinstance(leaf, FileNotFoundError | PermissionError):
        return f"the server command cannot be started ({type(leaf).__name__})"
    if isinstance(leaf, MCPError):
        return None
    if leaf is not exc or isinstance(leaf, OSError | EOFError):
        return f"the MCP session failed ({type(leaf).__name__})"
    return None


@contextlib.contextmanager
def _closing(case: Case) -> Iterator[None]:
    try:
        yield
    finally:
        sock = case.context.pop("closed_port", None)
        if isinstance(sock, socket.socket):
            sock.close()


def _closed_port(case: Case) -> int:
    """A loopback port bound without listening (the kernel refuses connects to it), held
    until the case's check stops."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    case.context["closed_port"] = sock
    return int(sock.getsockname()[1])


def _first_text(result: Any) -> str:
    """The first line of a result's first text block (what the model read first)."""
    content = result.get("content") if isinstance(result, dict) else None
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and isinstance(block.get("text"), str):
            lines = [line.strip() for line in block["text"].splitlines() if line.strip()]
            error = " (isError)" if result.get("isError") else ""
            return (cut_whole(lines[0], 200) if lines else "") + error
    return ""


def _stderr_tail(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return cut_whole(lines[-1], 200) if lines else ""


class _Audit(McpTarget):
    """What both audit targets add to an MCP target: the listed tools without another
    start, the invalid-input stage, the MCP client's log, a failed session as a
    ``CaseError``."""

    spec: ServerSpec

    def template_where(self, what: str) -> str:
        return {"env": "--env", "args": "the server's arguments (after --)"}.get(what, what)

    def use_tools(self, tools: Sequence[ToolInfo]) -> None:
        """The listed tools (already listed: the server is not started again for them),
        each with its invalid input for the ``invalid_input`` stage."""
        listed = [ListedTool(t.name, (), _accepts_of(t.schema)) for t in tools]
        operations = self._make_operations(listed)
        invalid = {t.name: t.invalid for t in tools}
        self._operations = [
            dataclasses.replace(op, invalid_input=invalid.get(self._tool_of[op.name]))
            for op in operations
        ]

    def tool_of(self, operation: str) -> str:
        return self._tool_of[operation]

    def _before(self, case: Case) -> None:
        """Per-case set-up before the server is started or connected to."""

    def call(self, case: Case) -> Any:
        check = case.check
        self._before(case)
        client_log = ClientLogSink()
        check.sinks.append(client_log)
        invalid = case.stage.name == "invalid_input"
        if invalid:
            # no upstream for this stage: a server that calls one anyway is refused at once,
            # on this machine (never a resolver asked about UNREACHABLE_URL's host)
            case.upstream_url = f"http://127.0.0.1:{_closed_port(case)}"
        try:
            with capture_client_log(client_log), _closing(case):
                returned = super().call(case)
            setattr(check, "audit_answer", _first_text(returned))  # noqa: B010 - read by the runner
            if invalid:
                # the server was handed the invalid arguments and answered: the stage fired
                # (what the double records when a gateway reads its input)
                next(iter(case.agent_input), None)
            return returned
        except HarnessError:
            raise
        except Exception as exc:
            why = _why(exc, self.spec)
            if why is None:
                raise  # the server's own JSON-RPC error: caller-visible, judged
            unread = sum(_UNREADABLE in text for text in client_log.texts)
            if unread and why.startswith("the server did not answer"):
                # (an answer the client could not read is dropped, and the call waits: a
                # lone surrogate, a structure too deep, was said to be a hang)
                why = (
                    f"the MCP client could not read {unread} message(s) the server wrote "
                    "(not JSON-RPC the MCP SDK reads: a lone surrogate, a structure too "
                    "deep) and no answer it could read came before the call timed out "
                    f"({self.spec.call_timeout:g} s)"
                )
            said = next(
                (
                    _stderr_tail(item.text if isinstance(item.text, str) else "")
                    for sink in check.sinks
                    if sink.name == "mcp server stderr"
                    for item in sink.collect()
                ),
                "",
            )
            raise CaseError(why + (f"; its stderr ends: {said}" if said else "")) from None


class AuditStdioTarget(_Audit, StdioMcpTarget):
    """``StdioMcpTarget`` for ``leakcheck mcp``: see the module's documentation."""

    def __init__(self, spec: ServerSpec, *, workdir: str, **options: Any) -> None:
        super().__init__(
            spec.command,
            list(spec.args),
            env=dict(spec.env),
            cwd=spec.cwd,
            startup_timeout=spec.startup_timeout,
            handshake=spec.handshake,
            call_timeout=spec.call_timeout,
            timeout=spec.timeout,
            **options,
        )
        self.spec = spec
        self.workdir = workdir
        self._node_options = node_options(workdir)

    def _case_environment(self, case: Case) -> dict[str, str]:
        env = super()._case_environment(case)
        home = case.context.get("home")
        if isinstance(home, str):
            for name, sub in (("HOME", "home"), ("TMPDIR", "tmp")):
                env[name] = os.path.join(home, sub)
        if "LEAKCHECK_CHILD_FAULT" in env:
            inherited = os.environ.get("NODE_OPTIONS", "")
            env["NODE_OPTIONS"] = f"{self._node_options} {inherited}".strip()
        return env

    def _before(self, case: Case) -> None:
        if self.spec.isolate_home:
            home = tempfile.mkdtemp(prefix="case-", dir=self.workdir)
            for sub in ("home", "tmp"):
                os.mkdir(os.path.join(home, sub))
            case.context["home"] = home
            case.check.sinks.append(HomeFilesSink(home))


#: placements whose credential no HTTP client sends (a header value with a newline): the
#: auditor itself is the client of a streamable-HTTP server
UNSENDABLE = ("credential-trailing-newline", "credential-trailing-crlf")


class AuditHttpTarget(_Audit):
    """A streamable-HTTP MCP server already running at ``spec.url``. Each case is a new
    MCP session (its own connection and ``Mcp-Session-Id``) whose request headers are
    ``spec.headers`` rendered from the case: the documented reuse is the server process,
    one for every case (what it keeps across sessions can cross from case to case). Its
    upstream is the case's fault only where a header carries ``{upstream}``; the stages
    proven inside a server process (DNS failure, refused, connect timeout) are not
    proven for a server leakcheck did not start; its stderr is not captured."""

    http_via = "loopback"

    def __init__(self, spec: ServerSpec, *, workdir: str, **options: Any) -> None:
        super().__init__(call_timeout=spec.call_timeout, timeout=spec.timeout, **options)
        self.spec = spec
        self.workdir = workdir
        self.headers = dict(spec.headers)
        check_fields(self.headers.values(), "--header")
        self._choose_placements(self.headers.values())
        chosen: Sequence[str] | None = getattr(self, "placements", None)
        if not self._placements_given and chosen is not None:
            self.placements = [p for p in chosen if p not in UNSENDABLE]

    async def _session(
        self,
        headers: Mapping[str, str],
        body: Callable[[Any], Any],
        heard: ToolCall | None = None,
    ) -> Any:
        import httpx2
        from mcp.client.session import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        timeout = httpx2.Timeout(self.call_timeout, connect=self.spec.startup_timeout)
        with anyio.fail_after(self.spec.startup_timeout + self.call_timeout):
            async with httpx2.AsyncClient(headers=dict(headers), timeout=timeout) as http:
                async with streamable_http_client(self.spec.url, http_client=http) as streams:
                    read, write = streams[0], streams[1]
                    async with ClientSession(
                        read,
                        write,
                        read_timeout_seconds=self.spec.startup_timeout,
                        **listening(heard),
                    ) as session:
                        await handshake(session, self.spec.handshake)
                        return await body(session)

    def _headers(self, lookup: Callable[[str], Any]) -> dict[str, str]:
        return {k: render(v, lookup, text=True) for k, v in self.headers.items()}

    async def _list_tools(self) -> list[ListedTool]:
        async def body(session: Any) -> Any:
            return (await session.list_tools()).tools

        listed = await self._session(self._headers(placeholder), body)
        return [ListedTool(t.name, (), _accepts_of(t.input_schema)) for t in listed]

    async def _call_tool(self, case: Case, values: Any, tool: str, args: Any) -> ToolCall:
        heard, body = call_parts(tool, args, self.call_timeout)
        with provisioning():
            heard.result = await self._session(self._headers(values), body, heard)
        return heard


AuditTarget = AuditStdioTarget | AuditHttpTarget


def make_target(spec: ServerSpec, workdir: str, **options: Any) -> AuditTarget:
    """The audit target for ``spec``: over stdio, or streamable HTTP when it has a URL."""
    if spec.url:
        return AuditHttpTarget(spec, workdir=workdir, **options)
    return AuditStdioTarget(spec, workdir=workdir, **options)


def _accepts_of(schema: Any) -> frozenset[str] | None:
    return schema_accepts(schema)


# --- listing the tools --------------------------------------------------------------------------


def list_tools(spec: ServerSpec, workdir: str) -> list[ToolInfo]:
    """Start the server once (placeholder credentials, upstream ``UNREACHABLE_URL``), or
    connect to it, and list its tools; each way that fails is one ``AuditError`` line
    (its stderr's last line in it, masked by the caller)."""
    target = make_target(spec, workdir)

    async def body(session: Any) -> Any:
        return (await session.list_tools()).tools

    home = tempfile.mkdtemp(prefix="list-", dir=workdir)
    extra = {"HOME": home, "TMPDIR": home} if spec.isolate_home else {}
    sink = ClientLogSink()
    errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
    try:
        with errlog, capture_client_log(sink):
            try:
                if isinstance(target, AuditHttpTarget):
                    headers = target._headers(placeholder)
                    listed = run_sync(lambda: target._session(headers, body))
                else:
                    parameters = target._parameters(placeholder, extra)
                    listed = run_sync(lambda: target._session(parameters, errlog, body))
            except Exception as exc:  # noqa: BLE001 - each said as one line
                errlog.seek(0)
                raise AuditError(_start_failure(spec, exc, _stderr_tail(errlog.read()))) from None
    finally:
        shutil.rmtree(home, ignore_errors=True)
    if not listed:
        raise AuditError(
            f"the server lists no tools ({spec.describe()!r} answered tools/list with an "
            "empty list): nothing to audit"
        )
    return [ToolInfo(t.name, t.input_schema if t.input_schema is not None else {}) for t in listed]


def _start_failure(spec: ServerSpec, exc: BaseException, said: str) -> str:
    from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

    leaf = first_leaf(exc)
    command = spec.describe()
    if spec.url and not isinstance(leaf, TimeoutError | MCPError):
        return (
            f"cannot reach the MCP server at {command}: {type(leaf).__name__} (is it "
            "running, and is that its streamable-HTTP endpoint?)"
        )
    # (the command as ``describe`` shows it, a piece that looks like a key «opaque»: quoted
    # raw, a token given as the command went to stderr, found by a hunting helper)
    program = without_random_tokens(spec.command)
    if isinstance(leaf, FileNotFoundError):
        what = f"cannot start the server: no such command {program!r}"
    elif isinstance(leaf, PermissionError):
        what = f"cannot start the server: {program!r} is not executable"
    elif isinstance(leaf, TimeoutError) or sdk_error(leaf, REQUEST_TIMEOUT):
        what = (
            f"the server did not complete the MCP handshake within "
            f"{spec.startup_timeout:g} s ({command!r}; --startup-timeout)"
        )
    elif sdk_error(leaf, CONNECTION_CLOSED):
        what = f"the server exited before listing its tools ({command!r})"
    elif type(leaf).__name__ == "ValidationError" and callable(getattr(leaf, "errors", None)):
        # (pydantic's, from the SDK reading tools/list: where and what, never the value)
        where = why = ""
        with contextlib.suppress(Exception):
            first = getattr(leaf, "errors")()[0]  # noqa: B009 - pydantic's, not BaseException's
            where = ".".join(str(part) for part in first.get("loc", ()))
            why = str(first.get("msg", ""))[:160]
        what = (
            f"the tools/list answer of {command!r} is not valid MCP (the MCP SDK refused it"
            + (f": {where}: {why}" if where else "")
            + "; a tool's inputSchema is a JSON Schema of type object)"
        )
        return what + (f"; its stderr ends: {said}" if said else "")
    else:
        what = f"could not list the tools of {command!r}: {type(leaf).__name__}"
    if spec.url:
        return what
    what += f" with placeholder credentials and upstream {UNREACHABLE_URL}"
    # (its stderr's last line: a key of the server's own there, no secret leakcheck knows,
    # is shown «opaque» where the error is printed, after the literal secrets are masked:
    # ``cli.mcp``; found by a hunting helper)
    return what + (f"; its stderr ends: {said}" if said else "; it wrote nothing to stderr")
