"""``leakcheck mcp -- COMMAND``: exit codes, formats, every failure mode of the command
itself, and no secret in anything it prints.

The servers are small: ``tests/data/mcp_fake_server.py`` (stdlib only, starts in
milliseconds; ``FAKE_MODE`` picks a behaviour), the Node.js example, and the bundled
fastmcp examples (two seconds a start: one test, one case each). Each run is narrowed with
``--stages`` and ``--placements``; every timeout is at most half a second.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jsonschema
import leak_oracle
import pytest
from conftest import self_scan

from leakcheck import KINDS, CanaryFactory, Secret
from leakcheck.audit import HTTP_STAGES, AuditError, Outcome, audit_mcp_server
from leakcheck.audit.testing import check_audit, mcp_audit_test
from leakcheck.cli import main
from leakcheck.placements import PLACEMENTS

ROOT = Path(__file__).resolve().parent.parent
FAKE = str(ROOT / "tests" / "data" / "mcp_fake_server.py")
NODE_SERVER = ROOT / "examples" / "mcp_node_server" / "server.js"
SARIF_SCHEMA = ROOT / "tests" / "data" / "sarif-schema-2.1.0.json"
SEED = "mcp-cli-1"
ENV = ["--env", "API_TOKEN={bearer}", "--env", "API_URL={upstream}", "--env", "API_TIMEOUT=0.3"]
#: two stages, one answered and one without an answer; the base credential
NARROW = ["--stages", "http_401,dns_failure", "--placements", "authorization-header"]
TIMEOUTS = ["--call-timeout", "0.5", "--startup-timeout", "0.5"]


class Run:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err


def _chosen(argv: tuple[str, ...], option: str, every: list[str]) -> list[str]:
    values = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == option]
    return [v for value in values for v in value.split(",")] or every


def case_canaries(
    tools: list[str], stages: list[str], placements: list[str], seed: str = SEED
) -> list[Secret]:
    """Every canary the audit's cases can have planted, rebuilt from the seed and the case
    ids (namespace ``leakcheck-mcp::{operation}-{stage}-{placement}``), two of each kind."""
    secrets = []
    for tool in tools:
        for stage in stages:
            for placement in placements:
                namespace = f"leakcheck-mcp::{tool}-{stage}-{placement}"
                factory = CanaryFactory(seed=seed, namespace=namespace)
                secrets += [factory.nth(kind, n) for kind in KINDS for n in (1, 2)]
    return secrets


def no_echo(text: str | bytes, secrets: list[Secret], what: str) -> None:
    __tracebackhide__ = True
    if not secrets:
        return
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    try:
        self_scan(data, secrets, what)
    except AssertionError as exc:
        raise AssertionError(str(exc)) from None
    spelled = leak_oracle.hits(data, secrets)
    assert not spelled, f"{what}: {spelled}"


@pytest.fixture
def mcp(capsys: pytest.CaptureFixture[str], tmp_path: Path):
    """Run ``leakcheck mcp`` in process with a fixed seed; every output (stdout, stderr,
    files written) is checked for every canary its cases can have planted (rebuilt from the
    seed, the ``tools`` and the ``--stages``/``--placements`` given) and for ``extra``."""

    def run(
        *argv: str,
        server: list[str] | None = None,
        tools: tuple[str, ...] = ("fetch",),
        extra: tuple[Secret, ...] = (),
    ) -> Run:
        __tracebackhide__ = True
        command = server if server is not None else [sys.executable, FAKE]
        code = main(["mcp", "--seed", SEED, *argv, "--", *command])
        out, err = capsys.readouterr()
        secrets = list(extra)
        if "--stages" in argv and (code != 2 or "incomplete" in err):  # cases ran
            stages = _chosen(argv, "--stages", HTTP_STAGES)
            placements = _chosen(argv, "--placements", list(PLACEMENTS))
            secrets += case_canaries(list(tools), stages, placements)
        no_echo(out, secrets, "stdout")
        no_echo(err, secrets, "stderr")
        for path in tmp_path.iterdir():
            if path.is_file():
                no_echo(path.read_bytes(), secrets, f"output file {path.name}")
        assert "Traceback" not in err and "Traceback" not in out
        return Run(code, out, err)

    return run


def one_error_line(run: Run, *fragments: str) -> str:
    assert run.code == 2, (run.code, run.out, run.err)
    lines = [line for line in run.err.splitlines() if line.strip()]
    assert len(lines) == 1, run.err
    assert lines[0].startswith("leakcheck: error: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def fake(mode: str) -> list[str]:
    return ["--env", f"FAKE_MODE={mode}", *ENV, *TIMEOUTS]


# --- exit codes and what is printed ---------------------------------------------------------


def test_careful_server_is_clean_exit_0(mcp) -> None:
    run = mcp(*fake("careful"), *NARROW)
    assert run.code == 0, run.out + run.err
    assert "fetch: audited, arguments generated (item)" in run.out
    assert "http_401     1/1 ok" in run.out and "dns_failure  1/1 ok" in run.out
    assert "clean: 2 of 2 case(s) passed" in run.out
    assert "time: " in run.out and "s per case" in run.out
    assert "\r" not in run.err  # no progress line off a terminal
    assert run.err == ""


def test_leaky_server_fails_where_it_leaks_exit_1(mcp) -> None:
    run = mcp(*fake("leaky"), *NARROW)
    assert run.code == 1
    assert "0/1 hl" in run.out
    assert "leaks: bearer#1 (in tool response)" in run.out
    assert "\u00abcanary:bearer:raw\u00bb" in run.out  # masked evidence only
    assert "FAIL: 2 of 2 case(s)" in run.out


def test_formats_json_sarif_junit(mcp, tmp_path: Path) -> None:
    for fmt in ("json", "sarif", "junit"):
        path = tmp_path / f"report.{fmt}"
        run = mcp(*fake("leaky"), *NARROW, "--format", fmt, "-o", str(path))
        assert run.code == 1 and run.out == ""
        assert run.err.startswith("leakcheck mcp: FAIL: 2 of 2 case(s)") and "time: " in run.err
        text = path.read_text("utf-8")
        if fmt == "json":
            data = json.loads(text)
            assert data["exit_code"] == 1 and data["summary"]["failed"] == 2
            assert {c["outcome"] for c in data["cases"]} == {"failed"}
            assert data["tools"][0]["argument_names"] == ["item"]
        elif fmt == "sarif":
            data = json.loads(text)
            jsonschema.validate(data, json.loads(SARIF_SCHEMA.read_text("utf-8")))
            results = data["runs"][0]["results"]
            assert len(results) == 2 and {r["ruleId"] for r in results} == {"leakcheck/direct"}
            assert results[0]["properties"]["tool"] == "fetch"
            # the server's script, not its interpreter
            location = results[0]["locations"][0]["physicalLocation"]["artifactLocation"]
            assert location["uri"].endswith("tests/data/mcp_fake_server.py"), location
        else:
            suite = ET.fromstring(text).find("testsuite")
            assert suite is not None and suite.get("failures") == "2"
            assert len(suite.findall("testcase/failure")) == 2


def test_stage_not_reached_is_never_a_pass(mcp) -> None:
    # urllib refuses a credential with a newline before sending: no request, no proof
    run = mcp(*fake("careful"), "--stages", "http_401", "--placements",
              "authorization-header,credential-trailing-newline")  # fmt: skip
    assert run.code == 2
    assert "http_401  1/2 n" in run.out
    assert "not reached (the server made no request: proven nothing): 1 case(s)" in run.out
    assert "incomplete: 1 not reached" in run.out
    line = run.err.strip()
    assert line.startswith("leakcheck: error: the audit is incomplete: 1 not reached; first: ")
    # said in the audit's words, not the pytest API's (fault.url, via='responses')
    assert "is {upstream} where the server takes its API's URL from?" in run.out + line
    assert "fault.url" not in run.out + line and "via='responses'" not in run.out + line


def test_a_stage_with_no_case_is_said(mcp) -> None:
    """A token given only as {api_key}: the transport stages run with the credential
    placements, which need {bearer}, so no case runs there; said, never dropped (a
    newcomer's first audit showed only its http_401 row)."""
    env = [
        "--env",
        "API_TOKEN={api_key}",
        "--env",
        "API_URL={upstream}",
        "--env",
        "API_TIMEOUT=0.3",
    ]
    run = mcp("--env", "FAKE_MODE=careful", *env, *TIMEOUTS, "--stages", "http_401,dns_failure")
    assert "note: stages not run, no placement applies: dns_failure:" in run.out, run.out
    assert "{bearer}" in run.out
    assert "dns_failure" not in run.out.split("note:")[0]  # no grid row: no case ran there


def test_tool_not_callable_with_generated_arguments_says_so(mcp) -> None:
    run = mcp(*fake("no-request"), *NARROW)
    assert "fetch: NOT AUDITED (not callable): with its generated arguments (item)" in run.out
    one_error_line(run, "tool(s) not audited: fetch", "made no request")


def test_a_servers_own_key_in_its_answer_is_opaque(mcp, tmp_path: Path) -> None:
    """A tool's answer is quoted in every report (``answer``, "it answered: ..."): a key of
    the server's own configuration in it is no canary and went out raw, in text, JSON and
    SARIF. Shown as «opaque», as in an excerpt."""
    key = "Hq7ZrT2wKx9LmV4pNc8BdF3sJy6GaE1u"
    secret = Secret.from_user(key)
    for form in ("text", "json", "sarif"):
        report = tmp_path / f"audit.{form}"
        run = mcp(*fake("own-key"), "--env", f"ACCOUNT_REF={key}", *NARROW, "--format", form,
                  "-o", str(report), extra=(secret,))  # fmt: skip
        written = report.read_text(encoding="utf-8")
        assert "for account key «opaque»" in written, written
        no_echo(written, [secret], f"the {form} report")
        assert run.code == 2


def test_a_key_in_the_command_or_its_stderr_is_opaque(mcp, tmp_path: Path) -> None:
    """A command that cannot start is named, and the last line of a server's stderr quoted,
    in the error: a key there (a token given as the command; the server's own key in its
    log) is no canary and went out raw (found by a hunting helper). Shown «opaque», as
    the server's arguments and answers are."""
    key = "ghp_Hq7ZrT2wKx9LmV4pNc8BdF3sJy6GaE1uQw0z"
    secret = Secret.from_user(key)
    missing = mcp("--env", "API_URL={upstream}", server=[key], extra=(secret,))
    assert missing.code == 2 and "no such command '«opaque»'" in missing.err, missing.err
    exited = mcp(*fake("own-key-exit"), "--env", f"ACCOUNT_REF={key}", *NARROW, extra=(secret,))
    assert exited.code == 2 and "its stderr ends: config loaded with key «opaque»" in exited.err


def test_pinned_arguments(mcp, tmp_path: Path) -> None:
    pinned = tmp_path / "args.json"
    pinned.write_text(json.dumps({"fetch": {"item": "it_42"}}))
    run = mcp(*fake("careful"), *NARROW, "--arguments", str(pinned))
    assert run.code == 0 and "fetch: audited, arguments pinned (item)" in run.out
    pinned.write_text(json.dumps({"nope": {}}))
    one_error_line(mcp(*fake("careful"), *NARROW, "--arguments", str(pinned)), "nope")
    # names from the file that look like keys: «opaque», as --tools shows them (raw before:
    # found by a hunting helper)
    key = "ghp_Hq7ZrT2wKx9LmV4pNc8BdF3sJy6GaE1uQw0z"
    given = tmp_path / "given" / "args.json"  # (input, apart from what the run writes)
    given.parent.mkdir()
    given.write_text(json.dumps({key: {}}))
    run = mcp(*fake("careful"), *NARROW, "--arguments", str(given), extra=(Secret.from_user(key),))
    one_error_line(run, "«opaque»")
    pinned.write_text("{not json")
    one_error_line(mcp(*fake("careful"), *NARROW, "--arguments", str(pinned)), "not JSON")
    pinned.unlink()


def test_budget_spent_leaves_cases_not_run(mcp) -> None:
    run = mcp(*fake("careful"), *NARROW, "--budget", "0")
    assert "not run: 2 case(s): the wall-clock budget was spent" in run.out
    assert "budget 0.0 s (spent" in run.out
    one_error_line(run, "2 not run")


def test_jobs_2_gives_the_same_verdicts(mcp) -> None:
    run = mcp(*fake("leaky"), *NARROW, "--jobs", "2")
    assert run.code == 1 and "FAIL: 2 of 2 case(s)" in run.out


def test_instructions_naming_the_token_fail(mcp) -> None:
    """A host hands a server's ``instructions`` to the model: a server whose instructions
    name its token (built from its configuration) fails every case; the careful server,
    with none, passes (``test_careful_server_is_clean_exit_0``)."""
    only = ["--stages", "http_401", "--placements", "authorization-header"]
    run = mcp(*fake("instructions"), *only)
    assert run.code == 1, run.out + run.err
    assert "tool response mcp server instructions $.instructions" in run.out, run.out


@pytest.mark.parametrize("mode", ["tool-token", "tool-added"])
def test_a_tool_list_naming_the_token_fails(mcp, mode: str) -> None:
    """A host hands each tool's definition to the model, and lists the tools again when the
    server says they changed. The tools were listed once, before any case, with
    placeholder credentials: a server whose tool description named its token, or that
    added a tool quoting the failed request after a 401, passed (found by a hunting
    helper). The careful server's tool list holds nothing of the case
    (``test_careful_server_is_clean_exit_0``)."""
    only = ["--stages", "http_401", "--placements", "authorization-header"]
    run = mcp(*fake(mode), *only)
    assert run.code == 1, run.out + run.err
    assert "tool response mcp tool list $[" in run.out, run.out


@pytest.mark.parametrize(
    "mode, heard",
    [
        ("resource-token", "mcp resource contents"),
        ("prompt-token", "mcp prompt messages"),
        # (its error, as the host shows it: a token there passed, found by a hunting helper)
        ("resource-error", "mcp resource contents"),
    ],
)
def test_a_resource_or_prompt_naming_the_token_fails(mcp, mode: str, heard: str) -> None:
    """A host reads a server's resources and gets its prompts for the user and the model:
    each resource is read, and each prompt needing no argument got, in the case's session
    after the call. A ``config://settings`` naming the token passed, never read. The
    careful server offers none (``test_careful_server_is_clean_exit_0``); the next test
    shows an offered resource that holds nothing of the case passing."""
    only = ["--stages", "http_401", "--placements", "authorization-header"]
    run = mcp(*fake(mode), *only)
    assert run.code == 1, run.out + run.err
    assert f"tool response {heard} $[" in run.out, run.out


@pytest.mark.parametrize("mode", ["list-broken", "list-hang", "resource-hang"])
def test_a_listing_that_fails_after_the_call_keeps_the_call(
    mcp, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tools are listed again after each call: a server whose listing then breaks or
    hangs lost the whole case ("the MCP session failed", exit 2) and what its call showed
    was never judged (found by a hunting helper). The call's result stands."""
    from leakcheck.plugins import mcp_target

    monkeypatch.setattr(mcp_target, "_LISTING_SECONDS", 0.2)
    only = ["--stages", "http_401", "--placements", "authorization-header"]
    run = mcp(*fake(mode), *only)
    assert run.code == 0, run.out + run.err
    assert "http_401" in run.out and "1/1" in run.out, run.out
    # (a resource that did not answer in time is said, never judged clean for want of it:
    # a 50 MB one passed silently, found by a hunting helper)
    said = "was not read in 1 case(s), and is not judged" in run.out
    assert said is (mode == "resource-hang"), run.out


CARRIED = ["--stages", "http_401,http_5xx", "--placements", "authorization-header"]


def test_a_token_carried_from_case_to_case_fails_naming_the_earlier_case(
    mcp, tmp_path: Path
) -> None:
    """A server that keeps state from one case to the next (a shared --url server; here a
    file) answers a case with the token an earlier case gave it: that case fails on the
    earlier case's canary, named ``ID@CASE`` and said so; every report masks it."""
    carry = tmp_path.parent / f"{tmp_path.name}-carry"
    run = mcp(*fake("carry"), "--env", f"CARRY_FILE={carry}", *CARRIED)
    assert run.code == 1, run.out + run.err
    assert "FAIL: 1 of 2 case(s)" in run.out, run.out
    assert "bearer#1@fetch/http_401/authorization-header (in tool response)" in run.out, run.out
    assert "a canary of the earlier case fetch/http_401/authorization-header" in run.out, run.out
    # (stdout and stderr self-scanned by the ``mcp`` fixture, for every case's canaries)


def test_a_piece_of_an_earlier_cases_token_is_masked_in_the_report(mcp, tmp_path: Path) -> None:
    """Its first 14 characters only (a piece no detection form counts, so the cases pass):
    each case masked with its own canaries, and the JSON report's answer showed it raw."""
    carry = tmp_path.parent / f"{tmp_path.name}-carry"
    written = ["--format", "json", "-o", str(tmp_path / "report.json")]
    run = mcp(*fake("carry-piece"), "--env", f"CARRY_FILE={carry}", *CARRIED, *written)
    assert run.code == 0, run.out + run.err
    answers = [c["answer"] for c in json.loads((tmp_path / "report.json").read_text())["cases"]]
    assert "The last caller used «canary:bearer:" in answers[1], answers
    # (the report self-scanned by the ``mcp`` fixture, for every case's canaries)


@pytest.mark.parametrize("code", [-32000, -32001, -32603])
def test_a_json_rpc_error_holding_the_token_is_judged_whatever_its_code(mcp, code: int) -> None:
    """-32000 and -32001 are the MCP SDK's codes for a closed session and a timeout, and
    also server error codes JSON-RPC leaves to servers: a server's error of either code
    was taken for "the server process exited" or "did not answer", never judged."""
    only = ["--stages", "http_401", "--placements", "authorization-header"]
    run = mcp(*fake("rpc-error"), "--env", f"RPC_CODE={code}", *only)
    assert run.code == 1, run.out + run.err
    assert "leaks: bearer#1 (in exception); a JSON-RPC error instead of a result" in run.out


# --- failure modes of the command: one line, exit 2, never the secret -----------------------


def test_server_does_not_start(mcp) -> None:
    run = mcp(*fake("careful"), server=["/nonexistent/mcp-server"])
    one_error_line(run, "cannot start the server: no such command '/nonexistent/mcp-server'")


def test_server_exits_at_start_printing_a_secret(mcp, canaries) -> None:
    real = canaries("bearer")  # a real token given literally: printed by the server, masked
    run = mcp("--env", "FAKE_MODE=exit-start", "--env", f"API_TOKEN={real.value}",
              "--env", "API_URL={upstream}", *TIMEOUTS, extra=(real,))  # fmt: skip
    line = one_error_line(run, "the server exited before listing its tools", "stderr ends")
    assert "\u00abcanary:secret:raw\u00bb" in line


@pytest.mark.parametrize("report", ["text", "json", "junit"])  # (SARIF names no command)
def test_a_token_on_the_servers_command_line_is_never_shown(
    mcp, canaries, tmp_path: Path, report: str
) -> None:
    # the report names the server by its command line: a real token given there as an
    # option's value (--api-key VALUE, --token=VALUE) or a URL's password is masked like
    # an env literal
    key, token, password = canaries("api_key"), canaries("bearer"), canaries("password")
    from urllib.parse import quote

    database = f"postgresql://app:{quote(password.value, safe='')}@db.internal/app"
    server = [sys.executable, FAKE, "--api-key", key.value, f"--token={token.value}", database]
    written = tmp_path / f"report.{report}"
    run = mcp(*fake("careful"), *NARROW, "--format", report, "-o", str(written),
              server=server, extra=(key, token, password))  # fmt: skip
    assert run.code == 0, run.out + run.err
    shown = written.read_text(encoding="utf-8") + run.out
    assert "--api-key \u00abcanary:secret:" in shown or "--api-key \\u00abcanary" in shown


def test_server_prints_its_token_on_stdout_at_start(mcp) -> None:
    # a line on stdout that is not JSON-RPC: the MCP client logs it, token and all (a host's
    # log: an operator sink); the audit finds it there and never prints it
    run = mcp(*fake("stdout-start"), *NARROW)
    assert run.code == 1
    assert "(in mcp client log)" in run.out


def test_server_hangs_at_start(mcp) -> None:
    run = mcp(*fake("hang-start"))
    one_error_line(run, "did not complete the MCP handshake within 0.5 s")


def test_server_crashes_mid_run(mcp) -> None:
    run = mcp(*fake("crash"), *NARROW)
    assert "E" in run.out and "errors (the case could not be judged): 2 case(s)" in run.out
    one_error_line(run, "2 error", "the server process exited", "fake: crashing")


def test_an_answer_the_client_cannot_read_is_said_so(mcp) -> None:
    """A message the MCP SDK cannot read is dropped, and the call waits for its timeout:
    it was said to be a hang."""
    run = mcp(*fake("unreadable"), *NARROW)
    line = one_error_line(run, "the audit is incomplete")
    assert "the MCP client could not read 1 message(s) the server wrote" in line, line


def test_server_hangs_on_a_call(mcp) -> None:
    run = mcp(*fake("hang"), "--stages", "http_401", "--placements", "authorization-header")
    one_error_line(run, "1 error", "did not answer within 0.5 s")


def test_server_lists_no_tools(mcp) -> None:
    one_error_line(mcp(*fake("no-tools")), "the server lists no tools")


def test_tool_schema_invalid(mcp) -> None:
    one_error_line(mcp(*fake("bad-schema")), "tool fetch: its input schema is not a valid JSON")
    # one the SDK refuses to read at all: where and why (was "ValidationError with
    # placeholder credentials")
    one_error_line(
        mcp(*fake("array-schema")),
        "is not valid MCP (the MCP SDK refused it: tools.0.inputSchema.type: Input should be",
    )


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--env", "API_URL={nope}"], "--env: unknown template field(s) {nope}"),
        (["--env", "API_URL={upstrem}"], "{upstrem} (did you mean 'upstream'?)"),
        (["--env", "API_TOKEN={bearer"], "--env: a '{' or '}' without its pair"),
        (["--env", "API_TOKEN=abc}"], "a literal brace is written twice: {{ or }}"),
        (["--env", "=x"], "--env takes NAME=TEMPLATE"),
        (["--stages", "http_999"], "--stages http_999 matches no stage"),
        (["--tools", "zzz*"], "--tools zzz* matches no tool"),
        (["--placements", "nowhere"], "--placements nowhere matches no placement"),
        (["--call-timeout", "0"], "--call-timeout is a positive number"),
        (["--cwd", "/nonexistent/leakcheck"], "--cwd '/nonexistent/leakcheck': no such directory"),
    ],
)
def test_usage_errors(mcp, argv: list[str], fragment: str) -> None:
    one_error_line(mcp(*fake("careful"), *argv), fragment)


def test_no_upstream_template_is_said_before_any_case(mcp) -> None:
    """A server given no {upstream} calls its own API: every HTTP stage came back "not
    reached", a few seconds a case, before the audit said why."""
    env = ["--env", "FAKE_MODE=careful", "--env", "API_TOKEN={bearer}", *TIMEOUTS]
    run = mcp(*env, *NARROW)
    one_error_line(run, "no --env or server argument carries {upstream} (or {auth_url})")
    assert "never the fault server" in run.err
    # the invalid-input stage alone calls no API: it runs
    assert mcp(*env, "--stages", "invalid_input").code in (0, 1)


def test_a_secret_in_template_braces_is_never_quoted(mcp, tmp_path: Path) -> None:
    """``--env API_TOKEN={$TOKEN}`` (a CI script: the shell expands the variable inside the
    braces) made the token a field name, and the error quoted it raw; so did ``--header``
    and the server's arguments. An unknown field without a name's shape is described."""
    token = "Kp9xQ2mZ7vLw4RtB8nHc3JdF6gYs1EuA"
    secret = Secret.from_user(token)
    for argv, server in (
        (["--env", f"OTHER_TOKEN=ab{{{token}}}cd"], None),
        (["--env", "A=b"], [sys.executable, FAKE, "--api-key", f"{{{token}}}"]),
    ):
        run = mcp(*argv, *fake("careful")[2:], server=server, extra=(secret,))
        one_error_line(run, "unknown template field(s) a field of 32 characters that is no name")


def test_a_secret_in_header_braces_is_never_quoted(capsys: pytest.CaptureFixture[str]) -> None:
    token = "Kp9xQ2mZ7vLw4RtB8nHc3JdF6gYs1EuA"
    header = f"Authorization=Bearer {{{token}}}"
    assert main(["mcp", "--url", "http://127.0.0.1:9/mcp", "--header", header]) == 2
    err = capsys.readouterr().err
    no_echo(err, [Secret.from_user(token)], "stderr")
    assert "--header: unknown template field(s) a field of 32 characters" in err


def test_no_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mcp", "--env", "A=b"]) == 2
    assert capsys.readouterr().err.strip() == (
        "leakcheck: error: no server command: leakcheck mcp [options] -- COMMAND [ARGS...]"
    )


# --- another language, the bundled examples, the library and the pytest helper -------------


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_node_server_started_as_a_plain_command(mcp) -> None:
    # a real Node process's start (a bound, not a wait: it answers as soon as it is up)
    # took over 0.5 s once in a loaded CI run, as the Python servers' does always
    startup = ["--call-timeout", "0.5", "--startup-timeout", "10"]
    run = mcp("--env", "NOTES_API_URL={upstream}", "--env", "NOTES_API_KEY={api_key}",
              "--env", "NOTES_API_TIMEOUT=0.3", *startup, "--tools", "get_note",
              "--stages", "http_401,dns_failure,connection_refused",
              "--placements", "authorization-header",
              tools=("get_note",), server=["node", str(NODE_SERVER)])  # fmt: skip
    assert run.code == 1, run.out + run.err
    # its careful HTTP error, and its one mistake: the URL with the api_key when no answer
    assert "http_401            1/1 ok" in run.out
    assert "dns_failure         0/1 hl" in run.out  # proven inside Node (the require hook)
    assert "connection_refused  0/1 hl" in run.out
    assert "leaks: api_key#1 (in tool response)" in run.out


def test_bundled_python_examples(mcp) -> None:
    """The fastmcp examples over stdio, one case each (a start takes ~2 s; ``make demo``
    and bench/mcp_audit.py run the full audit): careful clean, leaky failing."""
    env = ["--env", "API_URL={auth_url}", "--env", "API_HEADERS={auth_headers}",
           "--env", "API_TIMEOUT=0.3", "--env", "FASTMCP_ENABLE_RICH_TRACEBACKS=false",
           "--tools", "create_deployment", "--placements", "authorization-header",
           "--cwd", str(ROOT), "--call-timeout", "20"]  # fmt: skip
    careful = mcp(*env, "--stages", "http_401", tools=("create_deployment",),
                  server=[sys.executable, "-m", "examples.mcp_careful_server"])  # fmt: skip
    assert careful.code == 0, careful.out + careful.err
    leaky = mcp(*env, "--stages", "dns_failure", tools=("create_deployment",),
                server=[sys.executable, "-m", "examples.mcp_leaky_server"])  # fmt: skip
    assert leaky.code == 1, leaky.out + leaky.err
    assert "leaks: bearer#1 (in tool response)" in leaky.out
    assert "tool response mcp log notification" in leaky.out  # its error log notification


def test_library_call_and_pytest_helper() -> None:
    env = {"FAKE_MODE": "leaky", "API_TOKEN": "{bearer}", "API_URL": "{upstream}",
           "API_TIMEOUT": "0.3"}  # fmt: skip
    options: dict[str, Any] = {
        "env": env, "stages": ["http_401"], "placements": ["authorization-header"],
        "call_timeout": 0.5, "startup_timeout": 0.5, "seed": 3,
    }  # fmt: skip
    result = audit_mcp_server([sys.executable, FAKE], **options)
    assert result.exit_code == 1
    assert [c.outcome for c in result.cases] == [Outcome.FAILED]
    assert check_audit(result, ["fetch/http_401/*"]) == ""
    # the helper: pinned as known-failing it passes; unpinned it fails, masked
    mcp_audit_test([sys.executable, FAKE], expect_failing=["fetch/*"], **options)()
    with pytest.raises(pytest.fail.Exception) as failed:
        mcp_audit_test([sys.executable, FAKE], **options)()
    assert "fetch/http_401/authorization-header fails: leaks: bearer#1" in str(failed.value)
    canaries = case_canaries(["fetch"], ["http_401"], ["authorization-header"], seed="3")
    no_echo(str(failed.value), canaries, "the helper's failure")


def test_a_progress_notification_naming_the_token_fails(mcp) -> None:
    """The audit's call asks for progress, as a host that shows it does: a server that
    says the token in a progress message (shown to the user) fails; its results are the
    careful server's, clean."""
    only = ["--stages", "http_401", "--placements", "authorization-header"]
    run = mcp(*fake("progress"), *only)
    assert run.code == 1, run.out + run.err
    assert "leaks: bearer#1 (in tool response)" in run.out, run.out
    assert "tool response mcp progress notification" in run.out, run.out
    # (the output self-scanned by the ``mcp`` fixture)


def test_an_elicitation_naming_the_token_fails(mcp) -> None:
    """A server of an earlier protocol that asks the host for input during the call (an
    ``elicitation/create``, shown to the user; 2026-07-28's ``InputRequiredResult``:
    ``test_mcp_target.py``) is answered as a user who declines, and what it asked is
    judged: the token in its message fails the case, whose result is the careful one."""
    only = ["--stages", "http_401", "--placements", "authorization-header"]
    run = mcp(*fake("elicit-legacy"), *only)
    assert run.code == 1, run.out + run.err
    assert "tool response mcp input request" in run.out, run.out
    assert "http_401  0/1 l" in run.out, run.out  # (the leak alone: no contract, no hygiene)


ASKING = str(ROOT / "tests" / "data" / "mcp_asking_server.py")


def test_the_handshake_is_a_2026_hosts_unless_told_legacy(mcp) -> None:
    """``auto`` (the default) opens each session as a 2026 host does: a fastmcp 4 server's
    ``InputRequiredResult`` is heard, answered and judged (its token: a leak). ``legacy``
    opens it with ``initialize`` as an older host does, where such a result is not the
    protocol's: the case says the server raised. (The stdlib fake server knows no
    ``server/discover``: every other test of it runs ``auto`` through the fallback.)"""
    args = ["--env", "API_TOKEN={bearer}", "--env", "API_URL={upstream}", "--stages", "http_401",
            "--placements", "authorization-header", "--call-timeout", "20"]  # fmt: skip
    modern = mcp(*args, server=[sys.executable, ASKING])
    assert modern.code == 1 and "tool response mcp input request" in modern.out, modern.out
    legacy = mcp(*args, "--handshake", "legacy", server=[sys.executable, ASKING])
    assert "mcp input request" not in legacy.out, legacy.out
    assert "http_401  0/1 x" in legacy.out, legacy.out


def test_an_unknown_handshake_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as ended:
        main(["mcp", "--handshake", "modern", "--", sys.executable, FAKE])
    assert ended.value.code == 2
    assert "invalid choice: 'modern'" in capsys.readouterr().err
    with pytest.raises(AuditError, match="--handshake is one of auto, legacy"):
        audit_mcp_server([sys.executable, FAKE], handshake="modern")


def test_invalid_input_stage(mcp) -> None:
    # the token where the schema's pattern does not take it: the careful server says a
    # fixed sentence (it calls the API, which refuses on this machine), the leaky one leaks
    only = ["--stages", "invalid_input", "--placements", "authorization-header"]
    careful = mcp(*fake("careful"), *only)
    assert careful.code == 0 and "invalid_input  1/1 ok" in careful.out
    leaky = mcp(*fake("leaky"), *only)
    assert leaky.code == 1 and "invalid_input  0/1" in leaky.out
    assert "fetch/invalid_input/authorization-header" in leaky.out


def test_streamable_http_server_by_url(mcp) -> None:
    sys.path.insert(0, str(ROOT / "tests" / "data"))
    import mcp_fake_http_server

    server = mcp_fake_http_server.serve()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    headers = ["--header", "Authorization=Bearer {bearer}", "--header", "X-Upstream={upstream}",
               "--stages", "http_401", "--placements", "authorization-header",
               *TIMEOUTS]  # fmt: skip
    try:
        careful = mcp("--url", f"{base}/careful/mcp", *headers, server=[])
        assert careful.code == 0 and "http_401  1/1 ok" in careful.out
        leaky = mcp("--url", f"{base}/leaky/mcp", *headers, server=[])
        assert leaky.code == 1 and "leaks: bearer#1 (in tool response)" in leaky.out
    finally:
        server.shutdown()
        server.server_close()
    gone = mcp("--url", f"{base}/careful/mcp", *headers, server=[])
    one_error_line(gone, f"cannot reach the MCP server at {base}/careful/mcp: ConnectError")
    both = mcp("--url", f"{base}/mcp", *headers)
    one_error_line(both, "either --url (a running streamable-HTTP server) or a COMMAND")


def test_stages_a_url_audit_cannot_prove_are_left_out_unless_named(mcp) -> None:
    """Over ``--url`` a host name mismatch is never proven (the running server's client
    does not trust the fault server's CA), nor, for a server in another process, a failed
    lookup or a refused or unanswered connect (no socket hook there): picked by a pattern
    or by default, such a stage is left out with a note and a careful server's audit is
    clean; named exactly, it is run, and the mismatch comes back not reached."""
    sys.path.insert(0, str(ROOT / "tests" / "data"))
    import mcp_fake_http_server

    server = mcp_fake_http_server.serve()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    headers = ["--header", "Authorization=Bearer {bearer}", "--header", "X-Upstream={upstream}",
               "--placements", "authorization-header", *TIMEOUTS]  # fmt: skip
    try:
        picked = mcp("--url", f"{base}/careful/mcp", *headers, "--stages",
                     "http_401,dns*,tls_h*", server=[])  # fmt: skip
        named = mcp("--url", f"{base}/careful/mcp", *headers, "--stages",
                    "http_401,tls_hostname_mismatch", server=[])  # fmt: skip
    finally:
        server.shutdown()
        server.server_close()
    assert picked.code == 0, picked.out
    assert "stages not run over --url: dns_failure, tls_hostname_mismatch:" in picked.out
    assert "tls_hostname_mismatch" not in picked.out.split("note:")[0]  # no grid row
    assert named.code == 2 and "the audit is incomplete" in named.err, named.err
    assert "tls_hostname_mismatch  0/1 n" in named.out


def test_a_token_pinned_as_a_tools_argument_is_never_shown(mcp, canaries, tmp_path: Path) -> None:
    # the server refuses an argument it does not know, naming it with its value: a real
    # token pinned there (--arguments) is masked like an env literal
    key, tokens = canaries("api_key"), canaries("bearer")
    pinned = tmp_path / "given" / "arguments.json"  # (the input: not an output scanned)
    pinned.parent.mkdir()
    given = {"item": "a", "api_key": key.value, "tokens": [tokens.value]}
    pinned.write_text(json.dumps({"fetch": given}))
    written = tmp_path / "report.json"
    run = mcp("--env", "FAKE_MODE=echo-arguments", *ENV, *TIMEOUTS, *NARROW,
              "--arguments", str(pinned), "--format", "json", "-o", str(written),
              extra=(key, tokens))  # fmt: skip
    assert run.code in (0, 1), run.err
    answers = [case["answer"] for case in json.loads(written.read_text())["cases"]]
    assert any("takes no arguments" in a and a.count("\u00abcanary:secret:") >= 2 for a in answers)


def test_credentials_in_the_url_are_never_shown(mcp, canaries) -> None:
    # --url names the server in every error and report: its userinfo password and a
    # secret-named query parameter, given literally, are masked (raw and percent-encoded)
    password, key = canaries("password"), canaries("api_key")
    from urllib.parse import quote

    url = (
        f"http://operator:{quote(password.value, safe='')}@127.0.0.1:9/mcp"
        f"?api_key={quote(key.value, safe='')}"
    )
    run = mcp("--url", url, *TIMEOUTS, server=[], extra=(password, key))
    # (a password is opaque whatever it is; the key, a secret-named parameter, masked)
    one_error_line(
        run, "at http://operator:\u00abopaque\u00bb@127.0.0.1:9/mcp?\u00abcanary:secret:"
    )


@pytest.mark.parametrize(
    "where",
    ["https://mcp.example/{t}/mcp", "https://mcp.example/mcp?session={t}&v=2",
     "https://mcp.example/mcp#{t}", "https://{t}.mcp.example/mcp",
     "https://mcp.example/v1/{pct}/mcp"],
)  # fmt: skip
def test_a_key_in_the_url_is_never_quoted(mcp, where: str) -> None:
    # a hosted MCP server's key in its path (or any query parameter, the fragment, a host
    # label): no secret the audit knows, quoted raw in "cannot reach the MCP server at"
    import secrets
    from urllib.parse import quote

    token = secrets.token_urlsafe(24)
    key = Secret.from_user(token, kind="secret", id="key")
    url = where.format(t=token, pct=quote(token[:12] + "/" + token[12:], safe=""))
    run = mcp("--url", url, *TIMEOUTS, server=[], extra=(key,))
    line = one_error_line(run, "cannot reach the MCP server at https://", "\u00abopaque\u00bb")
    assert "mcp.example" in line or "{t}." in where


def test_files_written_under_the_case_home_are_read(mcp) -> None:
    run = mcp(*fake("home-log"), "--stages", "http_401", "--placements", "authorization-header")
    assert run.code == 1 and "leaks: bearer#1 (in server files)" in run.out
    assert "operator: server files home/.fake/debug.log" in run.out


def test_a_file_named_after_the_token_under_the_case_home_fails(mcp) -> None:
    """``ls`` shows a file's name to every local user: a server caching by its token (an
    empty file named after it) fails; the careful server writes nothing there."""
    run = mcp(*fake("home-name"), "--stages", "http_401", "--placements", "authorization-header")
    assert run.code == 1 and "leaks: bearer#1 (in server files)" in run.out, run.out
    assert "operator: server files (file names)" in run.out, run.out


def test_progress_line_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    code = main(["mcp", "--seed", SEED, *fake("careful"), *NARROW, "--format", "json",
                 "-o", os.devnull, "--", sys.executable, FAKE])  # fmt: skip
    assert code == 0
    said = terminal.getvalue()
    assert "\r[1/2]" in said and "\r[2/2]" in said  # then cleared
    assert said.rstrip().splitlines()[-1].startswith("leakcheck mcp: clean: 2 of 2 case(s)")


def test_the_json_report_gives_scan_the_runs_canaries(
    mcp, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What the audit does not read (a running server's own log files, with ``--url``) is
    searched for the run's canaries with its JSON report: each case names the namespace its
    canaries were drawn in and their ids, never a value."""
    report = tmp_path / "audit.json"
    run = mcp(*fake("careful"), *NARROW, "--format", "json", "-o", str(report))
    assert run.code == 0
    cases = json.loads(report.read_text("utf-8"))["cases"]
    assert [c["canary_namespace"] for c in cases] == [
        "leakcheck-mcp::fetch-http_401-authorization-header",
        "leakcheck-mcp::fetch-dns_failure-authorization-header",
    ]
    assert all("bearer#1" in c["canaries"] for c in cases)
    namespace = "leakcheck-mcp::fetch-http_401-authorization-header"
    token = CanaryFactory(seed=SEED, namespace=namespace).nth("bearer", 1)
    logs = tmp_path / "server-logs"
    logs.mkdir()
    (logs / "leaky.log").write_text(f"GET /v1/items?token={quote(token.value)} 401\n")
    (logs / "clean.log").write_text("GET /v1/items 401\n")
    for name, expected in (("leaky.log", 1), ("clean.log", 0)):
        code = main(["scan", "--canaries-from", str(report), str(logs / name)])
        out, err = capsys.readouterr()
        no_echo(out + err, [token], f"scan of {name}")
        assert code == expected, out + err
        if expected:
            assert "bearer#1@fetch/http_401/authorization-header" in out


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupted_audit_stops_its_server_and_removes_its_files(
    tmp_path: Path, signum: int
) -> None:
    """``kill``, a CI job's timeout or ^C while a tool call hangs: the server (its own
    session, a canary in its environment) kept running, and the temporary directories
    stayed behind."""
    pids, temp = tmp_path / "pids", tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp)}
    audit = subprocess.Popen(
        [sys.executable, "-m", "leakcheck.cli", "mcp", "--env", "FAKE_MODE=hang", *ENV,
         "--env", f"FAKE_PID_FILE={pids}", "--call-timeout", "30", "--startup-timeout", "5",
         "--stages", "http_401", "--placements", "authorization-header",
         "--", sys.executable, FAKE],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        # the tool call is under way once the case's server has started and been called
        deadline = time.monotonic() + 30
        while not (pids.exists() and len(pids.read_text().split()) >= 2):
            assert audit.poll() is None, audit.communicate()
            assert time.monotonic() < deadline, "the servers never started"
            time.sleep(0.05)
        audit.send_signal(signum)
        _, err = audit.communicate(timeout=20)
    finally:
        if audit.poll() is None:
            audit.kill()
    assert "interrupted: the audit stopped" in err and "Traceback" not in err
    for pid in map(int, pids.read_text().split()):
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert list(temp.iterdir()) == []


def test_a_long_reason_is_cut_at_a_word() -> None:
    """The text report cut a reason at 300 characters mid-word ("The test proved no:")."""
    from leakcheck.audit.report import _short

    reason = "the server made no request at this stage: " + "the test proved nothing " * 20
    short = _short(reason)
    assert short.endswith(" ...") and len(short) <= 304
    assert reason.startswith(short[:-4]) and reason[len(short) - 4] == " "


def test_a_run_of_no_case_names_no_seed() -> None:
    """No case ran: no canary was drawn, and "canary seed 0" read as one."""
    from leakcheck.audit.model import AuditResult
    from leakcheck.audit.report import render_text

    said = render_text(AuditResult(server="python server.py", seed=0))
    assert "no case ran: no canary" in said and "canary seed" not in said
