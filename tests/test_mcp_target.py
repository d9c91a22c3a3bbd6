"""MCP servers as stage-matrix targets (``leakcheck.plugins.mcp_target``).

The example servers (``examples/mcp_*``: ``FastMCP.from_openapi`` over the deployments API)
under the matrix, run as a user runs them (an inner pytest, its JSON report): the careful
one passes every case, in process and over stdio; the leaky one fails exactly the cases
that carry one of its mistakes, each where it shows (assertion, sink), and no other. The
mocked transport (respx, which intercepts httpx2) and real loopback sockets find the same
caller-visible leaks for each stage and placement. Then the target's parts: the "MCP result"
contract, templates, tool listing, log notifications and stderr as sinks, the environment.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
from conftest import cases_of, run_example_matrix, self_scan, wrong_cases

from leakcheck.harness import LeakCheck
from leakcheck.matrix import CaseSpec, MatrixFailure, build_case, cases_for, run_case
from leakcheck.policy import SinkClass
from leakcheck.stages import HTTP_RAISED, STAGES

mcp_target = pytest.importorskip("leakcheck.plugins.mcp_target")
fastmcp = pytest.importorskip("fastmcp")

ROOT = Path(__file__).resolve().parent.parent
SEED = "mcp-examples-1"
HTTP_STAGES = [name for name, stage in STAGES.items() if stage.transport == "http"]
#: placements whose credential an httpx2 URL carries (the INFO request line shows it)
URL_CREDENTIALS = {"query-api-key", "url-userinfo"}
MALFORMED = {"credential-trailing-newline", "credential-trailing-crlf"}
#: stages where the request got no answer (a transport error): a cut body is one too
UNANSWERED = HTTP_RAISED | {"truncated_body"}
#: stages answered with headers (httpcore2 traces them)
ANSWERED = {name for name in HTTP_STAGES if STAGES[name].response_received}


#: The stages of the stdio grids the suite runs: each case starts a server process (two to
#: three seconds of fastmcp imports and start-up), so the suite keeps to the cases that
#: show each mistake visible over stdio (the error body, the redirect, a request without an
#: answer, a 2xx that is not JSON, the login page, the credential with a newline at 401)
#: and a clean one (429), 8 of 18; ``make demo`` runs the whole grids, and the in-process
#: grids of every stage and placement run here in full.
STDIO_STAGES = (
    "http_401", "http_429", "redirect_signed_url", "connection_refused", "malformed_json",
    "html_login_page",
)  # fmt: skip
STDIO_CASES = 8


#: The leaky in-process grid (266 cases, the suite's longest run) runs in two halves, one
#: per tool, which the two xdist workers make at once (``test_leaky_grid_half``).
LEAKY_HALVES = ("create_deployment", "get_deployment")


@cache
def _run(module: str, tmp: str, select: tuple[str, ...] = ()) -> tuple[int, str, dict[str, Any]]:
    # fastmcp's rich tracebacks take half a second each to render (same texts)
    if "stdio" in module:
        select = ("-k", " or ".join(f"{stage}-" for stage in STDIO_STAGES))
    elif module == "test_mcp_leaky_matrix" and not select:
        halves = [_run(module, tmp, ("-k", f"{tool}-")) for tool in LEAKY_HALVES]
        report = {**halves[0][2], "tests": [r for *_, half in halves for r in half["tests"]]}
        return max(code for code, _, _ in halves), "\n".join(o for _, o, _ in halves), report
    return run_example_matrix(
        module, tmp, seed=SEED, env={"FASTMCP_ENABLE_RICH_TRACEBACKS": "false"},
        extra_args=select,
    )  # fmt: skip


@pytest.fixture(scope="module")
def tmp_reports(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("mcp-reports"))


def _observed(record: dict[str, Any]) -> set[str]:
    """The failed assertions and where each forbidden hit was: ``response`` (the tool
    result), ``notification`` (a log notification to the client), ``log:LOGGER``, or
    another sink's name."""
    shows = set(record["matrix"]["failed"])
    for leak in record["findings"]:
        if leak["allowed"]:
            continue
        if leak["sink"] == "tool response":
            notification = leak["path"].startswith("mcp log notification")
            shows.add("notification" if notification else "response")
        elif leak["sink"] == "log record":
            shows.add("log:" + leak["path"].split(" ")[0])
        else:
            shows.add(leak["sink"])
    return shows


# --- the careful server: every case passes ---------------------------------------------------


@pytest.mark.parametrize("tool", LEAKY_HALVES)
def test_leaky_grid_half(tool: str, tmp_reports: str) -> None:
    """Each half of the leaky grid, run (and shared with the other worker) before the tests
    that read the whole grid: its cases are those of one tool, every one of them judged."""
    code, _, report = _run("test_mcp_leaky_matrix", tmp_reports, ("-k", f"{tool}-"))
    cases = cases_of(report)
    assert cases and {op for op, _, _ in cases} == {tool}
    assert code == 1  # the leaky server fails somewhere in each tool's grid


@pytest.mark.parametrize(
    "module, cases", [("test_mcp_matrix", 280), ("test_mcp_stdio_matrix", STDIO_CASES)]
)
def test_careful_server_passes_every_case(module: str, cases: int, tmp_reports: str) -> None:
    code, out, report = _run(module, tmp_reports)
    by_case = cases_of(report)
    assert len(by_case) == cases
    failing = sorted("-".join(k) for k, r in by_case.items() if r["outcome"] != "passed")
    assert failing == [], failing[:10]
    assert code == 0, out[-2000:]
    # only HTTP stages (no gateway-side seam), every one of them; the record is off
    stages = set(STDIO_STAGES) if "stdio" in module else set(HTTP_STAGES)
    assert {stage for _, stage, _ in by_case} == stages
    assert all(r["matrix"].get("unchecked") == ["record"] for r in by_case.values())
    assert f"not checked: record in {cases} of {cases} case(s)" in out
    assert "request ids across" in out and "no ids returned" in out


# --- the leaky server: one predicate per mistake -----------------------------------------------


@dataclass(frozen=True)
class Mistake:
    name: str
    #: failed assertions and leak sinks in process ("response", "log:NAME", ...)
    shows_as: frozenset[str]
    applies: Callable[[str, str], bool]  # (stage, placement)
    #: what shows of it over stdio (the child's logs and telemetry are not the test's)
    over_stdio: frozenset[str] | None = None

    def shows(self, stdio: bool) -> frozenset[str]:
        if not stdio:
            return self.shows_as
        if self.over_stdio is not None:
            return self.over_stdio
        shows = self.shows_as & {"contract", "hygiene", "leaks", "response", "notification"}
        if not shows & {"response", "notification"}:
            shows -= {"leaks"}  # its sinks are the child's own (its logs, its telemetry)
        return shows


STATUS_ERRORS = {"http_401", "http_403", "http_5xx"}
NOT_JSON = {"malformed_json", "html_login_page"}

MISTAKES = [
    Mistake(
        "1. the upstream's error body in the tool error (fastmcp's default)",
        frozenset({"hygiene"}),
        lambda stage, p: stage in STATUS_ERRORS and p not in MALFORMED,
    ),
    Mistake(
        "1. ... so a reflected request or remote instructions reach the model",
        frozenset({"hygiene", "leaks", "response"}),
        lambda stage, p: (
            stage in STATUS_ERRORS | NOT_JSON
            and p in ("upstream-reflects-request", "upstream-prose")
        ),
    ),
    Mistake(
        "1. ... and the exception holding the body is recorded on fastmcp's span",
        frozenset({"leaks", "opentelemetry"}),
        lambda stage, p: stage in STATUS_ERRORS | {"http_429"} and p == "upstream-reflects-request",
    ),
    Mistake(
        "2. the redirect's Location (a signed URL) in the tool error",
        frozenset({"hygiene", "leaks", "response", "opentelemetry"}),
        lambda stage, p: stage == "redirect_signed_url",
    ),
    Mistake(
        "3. a request without an answer: its headers and URL in the error and the log notification",
        frozenset(
            {"hygiene", "leaks", "response", "notification", "log:fastmcp.server.context.to_client"}
        ),
        lambda stage, p: stage in UNANSWERED or p in MALFORMED,
    ),  # fmt: skip
    Mistake(
        "4. a 2xx answer that is not JSON returned as the tool's success",
        frozenset({"contract"}),
        lambda stage, p: stage in NOT_JSON,
    ),
    Mistake(
        "4. ... the login page's text as the result",
        frozenset({"hygiene"}),
        lambda stage, p: stage == "html_login_page",
    ),
    Mistake(
        "5. the credential on the client: httpx2's INFO request line shows the URL",
        frozenset({"leaks", "log:httpx2"}),
        lambda stage, p: stage in ANSWERED and p in URL_CREDENTIALS,
    ),
    Mistake(
        "5. fastmcp's DEBUG records of the tool arguments",
        frozenset(
            {
                "leaks",
                "log:fastmcp.server.mixins.mcp_operations",
                "log:fastmcp.utilities.openapi.director",
            }
        ),
        lambda stage, p: p.startswith("agent-input"),
    ),  # fmt: skip
    Mistake(
        "5. httpcore2's DEBUG traces of response headers (Set-Cookie, a signed Location)",
        frozenset({"leaks", "log:httpcore2.http11"}),
        lambda stage, p: (
            stage in ANSWERED
            and (
                stage == "redirect_signed_url"
                or p in ("upstream-set-cookie", "upstream-signed-location")
            )
        ),
    ),
    Mistake(
        "5. a credential with a trailing newline sent as it is: h11's error quotes it",
        frozenset(
            {
                "leaks",
                "log:fastmcp.server.server",
                "log:httpcore2.http11",
                "opentelemetry",
                "stderr",
            }
        ),
        lambda stage, p: p in MALFORMED,
        over_stdio=frozenset({"leaks", "mcp server stderr"}),
    ),  # fmt: skip
]


def _expected(stage: str, placement: str, *, stdio: bool) -> set[str]:
    expected: set[str] = set()
    for mistake in MISTAKES:
        if mistake.applies(stage, placement):
            expected |= mistake.shows(stdio)
    return expected


@pytest.mark.parametrize(
    "module, cases, stdio",
    [("test_mcp_leaky_matrix", 266, False), ("test_mcp_leaky_stdio_matrix", STDIO_CASES, True)],
)
def test_leaky_server_fails_exactly_where_its_mistakes_are(
    module: str, cases: int, stdio: bool, tmp_reports: str
) -> None:
    code, out, report = _run(module, tmp_reports)
    by_case = cases_of(report)
    assert len(by_case) == cases
    wrong = wrong_cases(
        by_case, lambda op, stage, placement: _expected(stage, placement, stdio=stdio), _observed
    )
    assert wrong == [], "\n".join(wrong[:20])
    shown = {m.name for m in MISTAKES if any(m.applies(s, p) for _, s, p in by_case)}
    if stdio:  # one tool, the base and the malformed credentials: no upstream placement
        visible = {m.name for m in MISTAKES if m.shows(stdio) and m.name in shown}
        wanted = {m.name for m in MISTAKES if m.name.startswith(("2.", "3.", "4."))}
        wanted |= {MISTAKES[0].name, MISTAKES[-1].name}  # the error body; the newline
        assert visible == wanted
    else:
        assert shown == {m.name for m in MISTAKES}  # every mistake shows somewhere
    assert any(r["outcome"] == "passed" for r in by_case.values())  # some carry none
    assert code == 1
    # a failure reads like a bug report, and names the contract it broke
    assert "leakcheck matrix: operation create_deployment, stage malformed_json" in out
    assert "mcp-is-error at /isError" in out
    assert f"--leakcheck-seed={SEED}" in out
    # the run's own output and report hold none of its canaries, in any form
    from leakcheck.cli import canaries_from_report

    secrets, registered, lost = canaries_from_report(report)
    assert (registered, lost) == (0, 0) and secrets
    self_scan(out, secrets, f"{module} output")
    self_scan(json.dumps(report), secrets, f"{module} report")


# --- the mocked transport finds what real sockets find --------------------------------------------


#: the leaky grid's node ids: its canaries are drawn for them (the plugin's namespace)
LEAKY_NODE = "examples/test_mcp_leaky_matrix.py::test_mcp_leaky[{}]"


def _caller_leaks(target: Any, spec: CaseSpec) -> tuple[str, set[tuple[str, str, str, str]]]:
    """The harness errors of one case run here, and each caller-visible hit: (kind, sink,
    path, form). The canaries are those of the same case in the leaky grid's run."""
    with LeakCheck(seed=SEED, namespace=LEAKY_NODE.format(spec.id)) as check:
        try:
            run_case(check, target, spec)
        except MatrixFailure:
            pass
        harness = check.harness_errors()
        leaks = {
            (leak.finding.kind, leak.sink, leak.path, leak.finding.form)
            for leak in check.findings()
            if leak.sink_class == SinkClass.CALLER and not leak.allowed
        }
    return harness, leaks


def _report_caller_leaks(record: dict[str, Any]) -> set[tuple[str, str, str, str]]:
    """The same, from a case's record in a grid run's JSON report."""
    return {
        (leak["finding"]["kind"], leak["sink"], leak["path"], leak["finding"]["form"])
        for leak in record["findings"]
        if leak["sink_class"] == SinkClass.CALLER.value and not leak["allowed"]
    }


@pytest.fixture
def plain_fastmcp_tracebacks(monkeypatch: pytest.MonkeyPatch) -> None:
    """fastmcp's traceback handler without rich tracebacks, as the grid's runs have it
    (``FASTMCP_ENABLE_RICH_TRACEBACKS``, read when fastmcp is imported): each takes a tenth
    of a second to render, and it writes to the operator's log, which the comparison below
    leaves out."""
    import logging

    from rich.logging import RichHandler

    for handler in logging.getLogger("fastmcp").handlers:
        if isinstance(handler, RichHandler):
            monkeypatch.setattr(handler, "rich_tracebacks", False)


@pytest.mark.parametrize("stage", HTTP_STAGES)
@pytest.mark.usefixtures("plain_fastmcp_tracebacks")
def test_mocked_and_loopback_transports_find_the_same_leaks(stage: str, tmp_reports: str) -> None:
    """fastmcp 4 (httpx2) ``from_openapi``, in process: under respx every HTTP stage
    fires, and the caller-visible leaks are exactly those real loopback sockets give (the
    leaky grid's run on loopback, the one the leaky test above reads: same canaries)."""
    from examples import mcp_leaky_server
    from examples.mcp_targets import in_process

    mocked = in_process(mcp_leaky_server, http_via="respx", stages=[stage])
    real = in_process(mcp_leaky_server, stages=[stage])
    specs = [s for s in cases_for(mocked) if s.operation == "create_deployment"]
    on_sockets = {s for s in cases_for(real) if s.operation == "create_deployment"}
    # the one placement real sockets cannot have: a cause the mock chains under its error
    assert {s.placement for s in specs if s not in on_sockets} <= {"exception-chain"}
    assert on_sockets <= set(specs)
    _, _, report = _run("test_mcp_leaky_matrix", tmp_reports)
    grid = cases_of(report)
    differ, seen = [], 0
    for spec in specs:
        harness, by_respx = _caller_leaks(mocked, spec)
        assert harness == "", f"{spec.id} via respx: {harness}"
        if spec not in on_sockets:
            continue
        record = grid[(spec.operation, spec.stage, spec.placement)]
        assert "harness" not in record["matrix"]["failed"], f"{spec.id} via loopback"
        by_loopback = _report_caller_leaks(record)
        seen += bool(by_respx)
        if by_respx != by_loopback:
            differ.append(
                f"{spec.placement}: respx only {sorted(by_respx - by_loopback)}, "
                f"loopback only {sorted(by_loopback - by_respx)}"
            )
    assert differ == [], "\n".join(differ)
    compared = len(on_sockets)
    if stage in UNANSWERED | {"redirect_signed_url"}:
        assert seen == compared  # the leaky server leaks at every placement there
    else:
        assert seen < compared


# --- the contract: "MCP result" -------------------------------------------------------------------


def _result(is_error: bool, *texts: str, **extra: Any) -> dict[str, Any]:
    content = [{"type": "text", "text": t} for t in texts]
    return {"content": content, "isError": is_error, **extra}


def test_mcp_result_contract() -> None:
    contract = mcp_target.McpResultContract()
    check = lambda result: contract.check(  # noqa: E731
        result, stage=STAGES["http_401"], operation="get_item", repeatable=True,
        expectations=None, agent_input={},
    )  # fmt: skip
    assert contract.name == "MCP result"
    assert check(_result(True, "The API rejected the credential.")) == []
    # a success for a failure stage: the model is told the call worked
    assert [v.rule for v in check(_result(False, "<html>Sign in</html>"))] == ["mcp-is-error"]
    assert [v.rule for v in check(_result(True, "  "))] == ["mcp-error-text"]
    assert [v.rule for v in check({"content": [{"type": "image"}], "isError": True})] == [
        "mcp-error-text"
    ]
    assert [v.rule for v in check("an envelope")] == ["mcp-result"]
    assert [v.rule for v in check({"isError": True})] == ["mcp-result"]


def test_mcp_result_contract_reads_the_sdk_type_and_never_quotes_a_value(
    canaries: Any,
) -> None:
    import mcp.types as types

    token = canaries.secret("bearer")
    result = types.CallToolResult(
        content=[types.TextContent(type="text", text=f"bad token {token.value}")], is_error=False
    )
    found = mcp_target.McpResultContract().check(
        result, stage="http_401", operation="get_item", repeatable=False,
        expectations=None, agent_input={},
    )  # fmt: skip
    assert [v.rule for v in found] == ["mcp-is-error"]
    self_scan(" ".join(f"{v.field} {v.message}" for v in found), [token], "violations")


def test_the_target_declares_no_seam_and_no_record() -> None:
    from leakcheck.contract import ContractCheck
    from leakcheck.matrix import keeps_record

    target = mcp_target.InProcessMcpTarget(
        _tiny_server, kwargs={"token": "{bearer}"}, arguments={"fetch": {"item": "a"}}
    )
    assert isinstance(target.contract, ContractCheck)
    assert target.seams == frozenset() and not keeps_record(target)
    stages = {spec.stage for spec in cases_for(target)}
    assert stages == set(HTTP_STAGES)  # no gateway-side stage without a seam
    validating = mcp_target.InProcessMcpTarget(
        _tiny_server, kwargs={"token": "{bearer}"}, arguments={"fetch": {"item": "a"}},
        seams={"validation"},
    )  # fmt: skip
    assert {spec.stage for spec in cases_for(validating)} == stages | {"invalid_input"}
    with pytest.raises(ValueError, match="unknown seam"):
        mcp_target.InProcessMcpTarget(_tiny_server, seams={"vaults"})


# --- tools as operations -------------------------------------------------------------------------


def _tiny_server(token: str = "", url: str = "", **_: Any) -> Any:
    """A fastmcp server with two tools: ``fetch`` tells the client (a log notification)
    which token it holds, then fails; ``listThings`` needs nothing."""
    from fastmcp.exceptions import ToolError

    server = fastmcp.FastMCP("tiny")

    @server.tool
    async def fetch(item: str, ctx: fastmcp.Context) -> str:
        await ctx.log(f"fetching {item} with token {token}", level="info")
        raise ToolError("could not fetch the item")

    @server.tool(name="listThings")
    def list_things() -> list[str]:
        return []

    return server


def test_operations_are_the_listed_tools() -> None:
    target = mcp_target.InProcessMcpTarget(
        _tiny_server, kwargs={"token": "{bearer}"},
        arguments={"fetch": {"item": "a"}}, repeatable={"listThings"},
    )  # fmt: skip
    ops = {op.name: op for op in target.operations}
    assert set(ops) == {"fetch", "list_things"}  # a camelCase tool, as an operation name
    assert ops["list_things"].repeatable and not ops["fetch"].repeatable
    assert dict(ops["fetch"].input) == {"item": "a"} and dict(ops["list_things"].input) == {}
    assert all(op.transport == "http" for op in ops.values())
    only = mcp_target.InProcessMcpTarget(
        _tiny_server, arguments={"fetch": {"item": "a"}}, tools=["fetch"]
    )
    assert [op.name for op in only.operations] == ["fetch"]


@pytest.mark.parametrize(
    "options, message",
    [
        ({}, "give valid arguments for tool fetch"),
        ({"arguments": {"fetch": {"item": "a"}}, "repeatable": {"fetsh"}}, "no tool named fetsh"),
        ({"arguments": {"fetch": {"item": "a"}}, "tools": ["nope"]}, "no tool named nope"),
    ],
)
def test_tool_marks_that_do_not_fit_the_server_are_errors(
    options: dict[str, Any], message: str
) -> None:
    target = mcp_target.InProcessMcpTarget(_tiny_server, **options)
    with pytest.raises(ValueError, match=message):
        target.operations  # noqa: B018 - listed on first use


def test_unknown_template_fields_are_refused_when_the_target_is_made() -> None:
    with pytest.raises(mcp_target.McpTemplateError, match="unknown template field.*upstrem"):
        mcp_target.InProcessMcpTarget(_tiny_server, kwargs={"url": "{upstrem}"})
    with pytest.raises(mcp_target.McpTemplateError, match="beare"):
        mcp_target.StdioMcpTarget(sys.executable, env={"TOKEN": "{beare}"})


# --- one case: templates, what is exposed, the environment ----------------------------------------


def _case(check: LeakCheck, target: Any, stage: str, placement: str) -> Any:
    target.operations  # noqa: B018
    return build_case(check, target, CaseSpec(target.operations[0].name, stage, placement))


def test_templates_render_the_case(canaries: Any) -> None:
    seen: dict[str, Any] = {}

    def factory(**kwargs: Any) -> Any:
        seen.update(kwargs)
        return _tiny_server()

    target = mcp_target.InProcessMcpTarget(
        factory,
        kwargs={
            "url": "{auth_url}", "headers": "{auth_headers}", "query": "{auth_query}",
            "verify": "{verify}", "timeout": "{timeout}", "line": "key={api_key};t={timeout}",
            "both": ["{upstream}", {"h": "{auth_headers}"}],
        },
        arguments={"fetch": {"item": "a"}}, tools=["fetch"], http_via="loopback",
    )  # fmt: skip
    with LeakCheck(seed=SEED, namespace="templates") as check:
        case = _case(check, target, "http_401", "odd-case-headers")
        seen.clear()
        values = mcp_target._CaseValues(case)
        rendered = mcp_target.render(target.kwargs, values)
        header_key, bearer = case.vault.get("header_key"), case.vault.get("bearer")
        _same(rendered["url"], case.upstream_url, "url")
        _same(
            rendered["headers"],
            {"Authorization": f"Bearer {bearer}", "x-Api-KEY": header_key,
             "X-API-Key": header_key},
            "auth_headers (a dict, as the whole value)",
        )  # fmt: skip
        _same(rendered["query"], {}, "auth_query")
        assert rendered["verify"] is True and rendered["timeout"] == case.timeout
        # inserted as it is, never parsed again; a kind this placement does not plant
        # (api_key) is a fresh canary of the case, searched like the others
        api_key = values("api_key")
        _same(rendered["line"], f"key={api_key};t={case.timeout}", "a template in a string")
        assert any(secret.value == api_key for secret in check.secrets), "not registered"
        _same(rendered["both"], [case.upstream_url, {"h": rendered["headers"]}], "nested")
        as_text = json.loads(mcp_target.render("{auth_headers}", values, text=True))
        _same(as_text, rendered["headers"], "auth_headers as text (JSON)")

        userinfo = _case(check, target, "http_401", "url-userinfo")
        parts = urlsplit(mcp_target._CaseValues(userinfo)("auth_url"))
        _same(
            (unquote(parts.username or ""), unquote(parts.password or "")),
            (userinfo.vault.get("user_name"), userinfo.vault.get("password")),
            "auth_url's userinfo (percent-encoded in full)",
        )
        assert parts.hostname == urlsplit(userinfo.upstream_url).hostname

        query = _case(check, target, "http_401", "query-api-key")
        _same(
            mcp_target._CaseValues(query)("auth_query"),
            {"api_key": query.vault.get("api_key")},
            "auth_query",
        )
        before = len(check.secrets)
        cookie = mcp_target._CaseValues(query)("cookie")
        assert len(check.secrets) == before + 1, "a fresh canary is registered"
        _same(check.secrets[-1].value, cookie, "the fresh canary")


def _same(got: Any, want: Any, what: str) -> None:
    """``got == want``, failing with ``what`` only: the values are canaries."""
    __tracebackhide__ = True
    if got != want:
        pytest.fail(f"{what}: not the expected value (values not shown)", pytrace=False)


def test_log_notifications_are_caller_visible() -> None:
    target = mcp_target.InProcessMcpTarget(
        _tiny_server, kwargs={"token": "{bearer}", "url": "{upstream}"},
        arguments={"fetch": {"item": "a"}}, tools=["fetch"], http_via="loopback",
    )  # fmt: skip
    with LeakCheck(seed=SEED, namespace="notifications") as check:
        case = _case(check, target, "http_401", "authorization-header")
        result = target.call(case)
        assert result["isError"] is True
        assert result["content"] == [{"type": "text", "text": "could not fetch the item"}]
        found = [leak for leak in check.findings() if not leak.allowed]
    where = {(leak.sink, leak.sink_class, leak.path.split(" $")[0]) for leak in found}
    assert ("tool response", SinkClass.CALLER, "mcp log notification") in where
    assert {leak.finding.kind for leak in found} == {"bearer"}


def _progress_server(token: str = "", careful: str = "", **_: Any) -> Any:
    """A fastmcp server whose ``fetch`` reports progress (with the token in its message
    unless ``careful``), then fails."""
    from fastmcp.exceptions import ToolError

    server = fastmcp.FastMCP("progress")

    @server.tool
    async def fetch(item: str, ctx: fastmcp.Context) -> str:
        shown = "the upstream" if careful else f"the upstream with token {token}"
        await ctx.report_progress(1, 2, message=f"fetching {item} from {shown}")
        raise ToolError("could not fetch the item")

    return server


def _fetch_once(factory: Any, careful: str, heard: str) -> tuple[Any, set[Any], list[str]]:
    """Call ``fetch`` of the server ``factory`` makes (``careful`` or not) once, at
    http_401: its result, where its forbidden hits were (sink, class, path) and the texts
    exposed at ``heard``."""
    target = mcp_target.InProcessMcpTarget(
        factory, kwargs={"token": "{bearer}", "careful": careful},
        arguments={"fetch": {"item": "a"}}, tools=["fetch"], http_via="loopback",
    )  # fmt: skip
    with LeakCheck(seed=SEED, namespace=f"{heard}-{careful}") as check:
        case = _case(check, target, "http_401", "authorization-header")
        result = target.call(case)
        found = [leak for leak in check.findings() if not leak.allowed]
        exposed = [str(item.text) for item in check.captured() if item.path.startswith(heard)]
    where = {(leak.sink, leak.sink_class, leak.path.split(" $")[0]) for leak in found}
    return result, where, exposed


@pytest.mark.parametrize("careful", ["", "yes"], ids=["leaky", "careful"])
def test_progress_notifications_are_caller_visible(careful: str) -> None:
    """A host that shows progress sends a progress token with the call and shows each
    progress notification's message to the user: the call asks for them as such a host
    does (a server sends none to a client that asked for none)."""
    heard = "mcp progress notification"
    result, where, exposed = _fetch_once(_progress_server, careful, heard)
    assert result["isError"] is True
    # (the careful message was heard and searched: not a pass for want of one)
    assert any("fetching a from the upstream" in text for text in exposed), len(exposed)
    assert where == (set() if careful else {("tool response", SinkClass.CALLER, heard)})


def _asking_server(token: str = "", careful: str = "", **_: Any) -> Any:
    """A fastmcp server whose ``fetch`` first asks the host for input (an
    ``InputRequiredResult``: an elicitation, and a sampling request for the model), the
    token in its messages unless ``careful``; answered, it fails saying what came back."""
    import mcp.types as types
    from fastmcp.exceptions import ToolError

    server = fastmcp.FastMCP("asking")

    @server.tool
    async def fetch(item: str, ctx: fastmcp.Context) -> Any:
        if ctx.input_responses:
            answers = {
                key: getattr(a, "action", "sampled") for key, a in ctx.input_responses.items()
            }
            raise ToolError(f"could not fetch {item}: the user answered {answers}")
        said = "the upstream refused" if careful else f"the upstream refused {token}"
        return types.InputRequiredResult(
            input_requests={
                "retry": types.ElicitRequest(
                    params=types.ElicitRequestFormParams(
                        message=f"{said}: retry?",
                        requested_schema={"type": "object", "properties": {}},
                    )
                ),
                "explain": types.CreateMessageRequest(
                    params=types.CreateMessageRequestParams(
                        messages=[
                            types.SamplingMessage(
                                role="user", content=types.TextContent(type="text", text=said)
                            )
                        ],
                        max_tokens=50,
                    )
                ),
            },
            request_state="round-1",
        )

    return server


@pytest.mark.parametrize("careful", ["", "yes"], ids=["leaky", "careful"])
def test_a_servers_requests_for_input_are_caller_visible_and_declined(careful: str) -> None:
    """A 2026-07-28 server asks the host for input in an ``InputRequiredResult`` (the
    elicitation is shown to the user, the sampling request handed to the model): what
    it asks is judged, and the call is made again with a declining user's answers."""
    heard = "mcp input request"
    result, where, exposed = _fetch_once(_asking_server, careful, heard)
    # answered as a user who declines, with the audit's own reply to the sampling request
    said = result["content"][0]["text"]
    assert result["isError"] is True and "'retry': 'decline'" in said, said
    assert "'explain': 'sampled'" in said, said
    assert any("the upstream refused" in text for text in exposed), len(exposed)
    assert where == (set() if careful else {("tool response", SinkClass.CALLER, heard)})


def _retrying_server(token: str = "", careful: str = "", **_: Any) -> Any:
    """A fastmcp server whose ``fetch`` fails and then offers a ``retry_fetch`` tool (the
    client is told the tools changed) whose description quotes the refused request's
    token unless ``careful``."""
    from fastmcp.exceptions import ToolError

    server = fastmcp.FastMCP("retrying")

    @server.tool
    async def fetch(item: str) -> str:
        said = "the upstream refused" if careful else f"401 for Authorization: Bearer {token}"

        def retry_fetch(item: str) -> str:
            return item

        server.tool(retry_fetch, description=f"Retry {item} after: {said}")
        raise ToolError("could not fetch the item")

    return server


@pytest.mark.parametrize("careful", ["", "yes"], ids=["leaky", "careful"])
def test_the_tools_listed_in_the_case_are_caller_visible(careful: str) -> None:
    """Each tool's definition goes to the model, and a host lists them again when the
    server says they changed: they are listed in the case's session after the call (they
    were listed once, before any case, with placeholder credentials: found by a hunting
    helper)."""
    heard = "mcp tool list"
    result, where, exposed = _fetch_once(_retrying_server, careful, heard)
    assert result["isError"] is True
    # (the tool added after the failure was listed and searched: not a pass for want of it)
    assert any("Retry a after" in text for text in exposed), len(exposed)
    assert where == (set() if careful else {("tool response", SinkClass.CALLER, heard)})


def _offering_server(token: str = "", careful: str = "", **_: Any) -> Any:
    """A fastmcp server whose ``fetch`` fails, and which offers a settings resource, a
    resource template and two prompts (one taking no argument, one requiring an item):
    unless ``careful``, the settings' contents, the template's description and the
    argument-free prompt's text name the token (the required-argument prompt's text
    always does: it is never got, as a host needs the user's argument for it)."""
    from fastmcp.exceptions import ToolError

    server = fastmcp.FastMCP("offering")
    shown = "<configured>" if careful else token

    @server.tool
    async def fetch(item: str) -> str:
        raise ToolError("could not fetch the item")

    @server.resource("config://settings")
    def settings() -> str:
        return f"upstream=https://api.example/ authorization=Bearer {shown}"

    @server.resource("items://{item}", description=f"An item, fetched as {shown}")
    def item_resource(item: str) -> str:
        return item

    @server.prompt
    def triage() -> str:
        return f"Triage the failed call (credential {shown})."

    @server.prompt
    def explain(item: str) -> str:
        return f"Explain {item} (credential {token})."

    return server


@pytest.mark.parametrize("careful", ["", "yes"], ids=["leaky", "careful"])
@pytest.mark.parametrize(
    "heard, said",
    [
        ("mcp resource contents", "upstream=https://api.example/"),
        ("mcp resource template list", "An item, fetched as"),
        ("mcp prompt messages", "Triage the failed call"),
    ],
)
def test_the_resources_and_prompts_offered_in_the_case_are_caller_visible(
    careful: str, heard: str, said: str
) -> None:
    """A host shows a server's resources and prompts to the user and hands those chosen to
    the model: they are listed in the case's session after the call, each resource read
    and each prompt that needs no argument got. A ``config://settings`` holding the token
    passed, never read (a documented limit until a hunting stop)."""
    result, where, exposed = _fetch_once(_offering_server, careful, heard)
    assert result["isError"] is True
    # (each was read and searched: not a pass for want of it)
    assert any(said in text for text in exposed), len(exposed)
    assert {w for w in where if w[2] == heard} == (
        set() if careful else {("tool response", SinkClass.CALLER, heard)}
    )
    # the prompt that needs an argument is listed, not got
    assert where <= {("tool response", SinkClass.CALLER, name) for name in LISTINGS}


def test_a_list_past_its_first_items_is_said_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """A server listing 10,000 resources took a second a case to judge (found by a hunting
    helper): each list is judged to its first LIST_AT_MOST items, and the rest is said
    not inspected (here the first 1 of the offering server's two prompts)."""
    monkeypatch.setattr(mcp_target, "LIST_AT_MOST", 1)
    target = mcp_target.InProcessMcpTarget(
        _offering_server, kwargs={"token": "{bearer}", "careful": "yes"},
        arguments={"fetch": {"item": "a"}}, tools=["fetch"], http_via="loopback",
    )  # fmt: skip
    with LeakCheck(seed=SEED, namespace="list-cap") as check:
        target.call(_case(check, target, "http_401", "authorization-header"))
        unread = [c.uninspected for c in check.captured() if c.sink == mcp_target.UNREAD_SINK]
        prompts = [c for c in check.captured() if c.path.startswith("mcp prompt list")]
    assert unread == ["not read: mcp prompt list: 1 past the first 1"], unread
    assert prompts and all("$[1]" not in c.path for c in prompts)


def test_a_server_offering_no_resource_or_prompt_is_not_asked_in_each_case() -> None:
    """Three more requests a case (15 to 20 ms in process under the plugin's capture) for
    a server that lists no resource, template or prompt when its tools are listed and says
    those lists do not change (most fastmcp servers: they declare both): asked once, not
    in each case. One that offers any is asked in each case (the test above)."""

    async def offers_nothing(factory: Any) -> bool:
        async with fastmcp.Client(factory()) as client:
            return await mcp_target._offers_nothing(client.session)

    def empty() -> Any:
        server = fastmcp.FastMCP("empty")

        @server.tool
        def fetch(item: str) -> str:
            return item

        return server

    import anyio

    assert anyio.run(offers_nothing, empty) is True
    assert anyio.run(offers_nothing, _offering_server) is False
    target = mcp_target.InProcessMcpTarget(
        empty, arguments={"fetch": {"item": "a"}}, tools=["fetch"], http_via="loopback"
    )
    target.operations  # noqa: B018 - lists the tools, and asks whether it offers more
    assert target._offers_nothing is True


#: what the offering server's case exposes besides the call's result
LISTINGS = (
    "mcp resource list", "mcp resource contents", "mcp resource template list",
    "mcp prompt list", "mcp prompt messages",
)  # fmt: skip


def test_env_is_set_for_the_case_and_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TINY_URL", raising=False)
    monkeypatch.setenv("TINY_KEEP", "before")
    seen = {}

    def factory() -> Any:
        seen["url"], seen["keep"] = os.environ.get("TINY_URL"), os.environ.get("TINY_KEEP")
        return _tiny_server()

    target = mcp_target.InProcessMcpTarget(
        factory, env={"TINY_URL": "{upstream}", "TINY_KEEP": "during"},
        arguments={"fetch": {"item": "a"}}, tools=["fetch"], http_via="loopback",
    )  # fmt: skip
    with LeakCheck(seed=SEED, namespace="env") as check:
        case = _case(check, target, "http_401", "authorization-header")
        seen.clear()
        target.call(case)
        assert seen == {"url": case.upstream_url, "keep": "during"}
    assert "TINY_URL" not in os.environ and os.environ["TINY_KEEP"] == "before"


# --- over stdio: the child's environment and stderr -----------------------------------------------


class _ChildFault:
    def child_environment(self) -> dict[str, str]:
        return {"PYTHONPATH": "/hook", "SSL_CERT_FILE": "/ca.pem"}


def test_child_environment_comes_from_the_fault_and_joins_the_path() -> None:
    assert mcp_target.child_environment(_ChildFault()) == {
        "PYTHONPATH": "/hook", "SSL_CERT_FILE": "/ca.pem"
    }  # fmt: skip
    assert mcp_target.child_environment(object()) == {}
    target = mcp_target.StdioMcpTarget(
        sys.executable, ["-m", "{api_key}"], env={"PYTHONPATH": "/mine", "TOKEN": "{bearer}"}
    )
    params = target._parameters(lambda name: f"<{name}>", _ChildFault().child_environment())
    assert params.env["PYTHONPATH"] == os.pathsep.join(["/hook", "/mine"])
    assert params.env["TOKEN"] == "<bearer>" and params.env["SSL_CERT_FILE"] == "/ca.pem"
    assert params.args == ["-m", "<api_key>"]


TINY_STDIO_SERVER = """
import os, sys
from fastmcp import FastMCP
from fastmcp.exceptions import ToolError

server = FastMCP("tiny-stdio")

@server.tool
def fetch(item: str) -> str:
    print("fetching with", os.environ["TINY_TOKEN"], file=sys.stderr, flush=True)
    raise ToolError("could not fetch the item")

server.run(transport="stdio", show_banner=False)
"""


def test_a_stdio_servers_stderr_is_an_operator_sink(tmp_path: Path) -> None:
    script = tmp_path / "tiny_server.py"
    script.write_text(textwrap.dedent(TINY_STDIO_SERVER))
    target = mcp_target.StdioMcpTarget(
        sys.executable, [str(script)], env={"TINY_TOKEN": "{bearer}"},
        arguments={"fetch": {"item": "a"}}, startup_timeout=60,
    )  # fmt: skip
    assert [op.name for op in target.operations] == ["fetch"]
    with LeakCheck(seed=SEED, namespace="stderr") as check:
        case = _case(check, target, "http_401", "authorization-header")
        result = target.call(case)
        assert result["isError"] is True
        found = [leak for leak in check.findings() if not leak.allowed]
    assert {(leak.sink, leak.sink_class) for leak in found} == {
        ("mcp server stderr", SinkClass.OPERATOR)
    }
    assert {leak.finding.kind for leak in found} == {"bearer"}


def test_a_server_that_does_not_start_is_one_clear_error() -> None:
    from leakcheck.matrix import TargetError

    target = mcp_target.StdioMcpTarget(
        sys.executable, ["-c", "import sys; sys.exit('no MCP server here')"],
        arguments={"fetch": {"item": "a"}}, startup_timeout=60,
    )  # fmt: skip
    with pytest.raises(TargetError, match="could not list the tools of") as caught:
        target.operations  # noqa: B018
    assert "no MCP server here" in str(caught.value)  # what the server said on stderr
    # a program that answers, but no MCP: the cause named, not "ExceptionGroup"
    echo = "import sys\nfor line in sys.stdin:\n    sys.stdout.write(line)\n    sys.stdout.flush()"
    target = mcp_target.StdioMcpTarget(
        sys.executable, ["-c", echo], arguments={"fetch": {"item": "a"}}, startup_timeout=5
    )
    with pytest.raises(TargetError) as caught:
        target.operations  # noqa: B018
    assert "ExceptionGroup" not in str(caught.value)
    assert "could not list the tools of" in str(caught.value) and "Error" in str(caught.value)


def test_a_tool_that_refuses_its_arguments_is_said_beside_the_stage_not_reached() -> None:
    """``arguments={"fetch": {"itme": ...}}``: the tool answered a validation error and no
    request reached the fault; the case said only "never reached"."""
    target = mcp_target.InProcessMcpTarget(
        _tiny_server, tools=["fetch"], arguments={"fetch": {"itme": "a"}}
    )
    with LeakCheck(seed=SEED, namespace="bad-args") as check:
        case = _case(check, target, "http_401", "authorization-header")
        result = target.call(case)
        assert result["isError"] is True
        said = check.harness_errors()
    assert "was never reached" in said
    assert "the tool 'fetch' answered an error before any request reached the fault" in said
    assert "are its arguments (arguments=) ones it takes?" in said
    # a tool that answers without an error is not said to have refused anything
    fine = mcp_target.InProcessMcpTarget(_tiny_server, tools=["listThings"])
    with LeakCheck(seed=SEED, namespace="no-error") as check:
        assert fine.call(_case(check, fine, "http_401", "authorization-header"))["isError"] is False
        assert check.harness_hints == [] and "was never reached" in check.harness_errors()


def test_an_in_process_factory_written_wrong_is_one_clear_error() -> None:
    """A factory that forgets to return the server, takes no such keyword or raises: a
    dozen frames of anyio, asyncio and fastmcp, ending in "Could not infer a valid
    transport from: None"; now one TargetError naming what went wrong."""
    from leakcheck.matrix import TargetError

    def forgets(**kwargs: Any) -> None:
        pass

    def takes_nothing() -> Any:
        raise AssertionError("never called")

    def raises(**kwargs: Any) -> Any:
        raise ValueError("bad token format")

    for factory, kwargs, said in (
        (forgets, {}, "the server factory returned None: it returns the server"),
        (takes_nothing, {"api_token": "{bearer}"}, "got an unexpected keyword argument"),
        (raises, {}, "could not list the server's tools: ValueError: bad token format"),
    ):
        target = mcp_target.InProcessMcpTarget(factory, kwargs=kwargs)
        with pytest.raises(TargetError) as caught:
            target.operations  # noqa: B018
        assert said in str(caught.value), str(caught.value)


def test_what_a_target_quotes_shows_no_literal_token() -> None:
    """A token given literally (``args=``, ``env=``: no secret leakcheck knows) was
    printed whole in the command line of "could not list the tools of", cut to a piece
    by the stderr tail (its last 2,000 characters) and by the factory's message (200),
    and nearly whole in the tool-refused hint (200): each shown ``«opaque»`` now."""
    import secrets

    from leakcheck.findings import OPAQUE_LABEL
    from leakcheck.matrix import TargetError

    token = "tok_" + secrets.token_urlsafe(24)

    def shown(text: str) -> bool:
        body = token[4:]
        return any(body[i : i + 6] in text for i in range(len(body) - 5))

    server = (
        "import sys; sys.stderr.write('cfg API_TOKEN=' + sys.argv[2] + chr(10) + 'x' * 1984);"
        " sys.exit(3)"
    )
    target = mcp_target.StdioMcpTarget(
        sys.executable, ["-c", server, "--api-key", token], startup_timeout=60
    )
    with pytest.raises(TargetError) as caught:
        target.operations  # noqa: B018
    said = str(caught.value)
    assert "could not list the tools of" in said and OPAQUE_LABEL in said
    assert not shown(said)

    def raises(**kwargs: Any) -> Any:
        raise RuntimeError("x" * 170 + " API_TOKEN=" + token + " rejected")

    with pytest.raises(TargetError) as caught:
        mcp_target.InProcessMcpTarget(raises).operations  # noqa: B018
    assert "could not list the server's tools" in str(caught.value)
    assert not shown(str(caught.value))

    def refusing(**kwargs: Any) -> Any:
        from fastmcp.exceptions import ToolError

        server = fastmcp.FastMCP("refusing")

        @server.tool
        def fetch(item: str) -> str:
            raise ToolError("x" * 150 + " with SERVICE_KEY=" + token + " denied")

        return server

    hinted = mcp_target.InProcessMcpTarget(refusing, arguments={"fetch": {"item": "a"}})
    with LeakCheck(seed=SEED, namespace="refusing") as check:
        hinted.call(_case(check, hinted, "http_401", "authorization-header"))
        hint = " ".join(check.harness_hints)
    assert "answered an error before any request reached the fault" in hint
    assert not shown(hint)


# --- placements: only those whose credentials the server is given ------------------------


def test_placements_are_those_the_templates_carry() -> None:
    from leakcheck.placements import PLACEMENTS

    credential = {n for n, p in PLACEMENTS.items() if p.where == "credential"}
    others = [n for n in PLACEMENTS if n not in credential]
    token_only = mcp_target.carried({"bearer", "upstream"})
    assert set(token_only) - set(others) == {
        "authorization-header", "credential-trailing-newline", "credential-trailing-crlf"
    }  # fmt: skip
    assert set(mcp_target.carried({"auth_headers", "auth_query", "auth_url"})) >= credential
    assert set(mcp_target.carried({"upstream"})) == set(others)  # no credential at all
    with_key = mcp_target.carried({"bearer", "api_key", "header_key"})
    assert {"query-api-key", "odd-case-headers"} <= set(with_key)
    assert "cookie" not in with_key and "url-userinfo" not in with_key

    target = mcp_target.StdioMcpTarget(
        sys.executable, env={"API_TOKEN": "{bearer}", "API_URL": "{upstream}"}
    )
    assert target.placements == token_only
    given = mcp_target.StdioMcpTarget(sys.executable, env={}, placements=["cookie"])
    assert given.placements == ["cookie"]  # as given
