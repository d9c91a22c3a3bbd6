"""The audit: list the tools, give each valid arguments, then every tool x stage x
placement the server can reach, each case with a fresh server process (the stage matrix's
``build_case``/``run_case`` under a ``LeakCheck`` of its own, outside pytest), judged with
the plugin's policy.

Order and shortcuts, so that a run says what it could not test instead of spending its
time on it:

* each tool's first case is a probe (an answered stage, the base placement): if the
  server made no request there, the tool is "not callable" with its arguments (it
  rejected them, or it calls no HTTP API) and its other cases are not run;
* after two errors at one stage of a tool (a hang at 429) its other placements there are
  not run, and after errors at three stages in a row (a crash on every call) none of the
  tool's other cases;
* past the wall-clock ``budget`` no case is started; those not run are said.

``jobs`` > 1 runs cases in that many forked worker processes (each case's server is a
process anyway; the faults patch process-wide hooks, which threads would share).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import fnmatch
import multiprocessing
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..canaries import KINDS, Secret, WeakSecretError, drawn_again
from ..capture import resolve_latent
from ..errors import plain
from ..faults import HarnessError
from ..findings import without_random_tokens
from ..harness import LeakCheck
from ..masking import SessionMasker
from ..matrix import CaseSpec, MatrixFailure, caseless_stages, cases_for, run_case
from ..placements import PLACEMENTS, template_kinds
from ..records import Assertion
from ..stages import STAGES
from ..verdict import earlier_leaks, format_leaks, root_causes
from .arguments import (
    ArgumentError,
    arguments_for,
    check_input_schema,
    invalid_input_for,
    load_pinned,
)
from .model import (
    AuditError,
    AuditResult,
    CaseOutcome,
    Outcome,
    ServerSpec,
    ToolInfo,
    ToolStatus,
)
from .server import (
    UNSENDABLE,
    AuditTarget,
    CaseError,
    HomeFilesSink,
    list_tools,
    make_target,
)

__all__ = ["AUDIT_STAGES", "HTTP_STAGES", "Progress", "audit_mcp_server", "literal_secrets"]

#: the stages an outside audit can force: every HTTP stage (a server has no seam for the
#: gateway-side ones)
HTTP_STAGES = [name for name, stage in STAGES.items() if stage.transport == "http"]
#: and invalid input: the bearer canary where a tool's schema does not take it (a tool
#: whose schema takes any string everywhere has no such case), base placement only
AUDIT_STAGES = ["invalid_input", *HTTP_STAGES]

#: Stages a ``--url`` audit cannot prove: DNS failure, refused and connect timeout are
#: proven inside a server process leakcheck starts (its socket hook), and the host name
#: mismatch needs a client that trusts the fault server's CA, which a running server does
#: not (its client refuses the CA first). Left out unless named exactly in ``stages``.
URL_UNPROVEN = ("dns_failure", "connection_refused", "timeout_before_send", "tls_hostname_mismatch")
#: stages erring in a row on one tool after which its other cases are not run
MAX_ERRORS_IN_A_ROW = 3
#: errors at one stage of one tool after which its other placements there are not run
MAX_ERRORS_AT_A_STAGE = 2

#: ``progress(done, total, label)``: called after each case
Progress = Callable[[int, int, str], None]


def _pick(names: Sequence[str], patterns: Sequence[str] | None, what: str) -> list[str]:
    """``names`` matching any of ``patterns`` (globs; None: all), in ``names``' order."""
    if patterns is None:
        return list(names)
    chosen = [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in patterns)]
    unmatched = [p for p in patterns if not any(fnmatch.fnmatchcase(n, p) for n in names)]
    if unmatched:
        raise AuditError(
            f"--{what} {', '.join(map(plain, unmatched))} matches no {what[:-1]}; "
            f"known: {', '.join(names) or 'none'}"
        )
    return chosen


#: words in a variable's (or header's) name that say its value is a secret
_SECRET_NAMES = ("TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "PASS", "AUTH", "COOKIE",
                 "CREDENTIAL", "SESSION", "PAT", "SIGNATURE", "PRIVATE")  # fmt: skip


def _secret_options(args: Sequence[str]) -> list[tuple[str, str]]:
    """``(option, value)`` for each option of a command line given a value, as
    ``--name=VALUE`` or ``--name VALUE`` (the value may be anything: a secret-named one
    is judged by its name)."""
    found = []
    for n, arg in enumerate(args):
        if not arg.startswith("-") or arg == "--":
            continue
        name, equals, value = arg.partition("=")
        if equals:
            found.append((name, value))
        elif n + 1 < len(args):
            found.append((name, args[n + 1]))
    return found


def _url_credentials(url: str) -> list[tuple[str, str]]:
    """``(name, value)`` of a URL's userinfo password and its query parameters (decoded
    and as written): ``--url`` names the server in every error and report."""
    if not url:
        return []
    from urllib.parse import parse_qsl, urlsplit

    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return []
    found = [("PASSWORD", password)] if password else []
    found += parse_qsl(parts.query, keep_blank_values=False)
    for pair in parts.query.split("&"):
        name, equals, value = pair.partition("=")
        if equals:
            found.append((name, value))
    raw_userinfo = parts.netloc.rpartition("@")[0]
    if ":" in raw_userinfo:
        found.append(("PASSWORD", raw_userinfo.partition(":")[2]))
    return found


def _pinned_values(pinned: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(argument name, value)`` of each string among pinned tool arguments, nested
    objects' and lists' included, a list's strings under its name (``--arguments``: a
    token pinned as an argument's value)."""
    found: list[tuple[str, str]] = []
    for name, value in pinned.items():
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, str):
                found.append((str(name), item))
            elif isinstance(item, Mapping):
                found += _pinned_values(item)
    return found


def literal_secrets(
    spec: ServerSpec, pinned: Mapping[str, Mapping[str, Any]] | None = None
) -> list[Secret]:
    """The literal values (no template field) of the server's secret-named environment
    variables, headers and command-line options (``*TOKEN*``, ``*KEY*``, ``*SECRET*``,
    ``*PASSWORD*``, ``Authorization``, ``--api-key VALUE``, ``--token=VALUE``), and the
    password and secret-named query parameters of any URL given (``--url``, a database URL
    among the arguments or variables), that are strong enough to be secrets: every text
    the command prints or writes is masked with them too (a server that prints its real
    token on startup; the command line itself, in the report's ``server`` field); and so
    are the values of secret-named ``pinned`` tool arguments (a server that echoes an
    argument it refuses)."""
    values: list[str] = []
    options = [(name.lstrip("-").replace("-", "_"), value) for name, value in
               _secret_options(spec.args)]  # fmt: skip
    # any URL given to the server (an argument, a variable, a header: a database URL's
    # password) and the --url itself
    urls = [text for text in (*spec.args, *spec.env.values(), *spec.headers.values(), spec.url)
            if "://" in text]  # fmt: skip
    given = [*spec.env.items(), *spec.headers.items(), *options,
             *_pinned_values(pinned or {})]  # fmt: skip
    for name, template in [*given, *(pair for url in urls for pair in _url_credentials(url))]:
        if not any(word in name.upper() for word in _SECRET_NAMES):
            continue
        try:
            if template_kinds(template):
                continue
        except ValueError:
            pass
        values.append(str(template))
    secrets = []
    for i, value in enumerate(dict.fromkeys(values)):
        try:
            secrets.append(Secret.from_user(value, kind="secret", id=f"configured#{i + 1}"))
        except (WeakSecretError, ValueError):
            continue
    return secrets


def _select_tools(
    listed: list[ToolInfo],
    patterns: Sequence[str] | None,
    pinned: Mapping[str, Mapping[str, Any]],
) -> list[ToolInfo]:
    names = [tool.name for tool in listed]
    chosen = set(_pick(names, patterns, "tools"))
    unknown = sorted(set(pinned) - set(names))
    if unknown:
        # (names from a file: one that looks like a key shown «opaque», as --tools shows it)
        raise AuditError(
            "--arguments names tool(s) the server does not list: "
            f"{', '.join(without_random_tokens(name) for name in unknown)}; "
            f"it lists: {', '.join(without_random_tokens(name) for name in names)}"
        )
    for tool in listed:
        if tool.name not in chosen:
            tool.status = ToolStatus.LEFT_OUT
            continue
        try:
            check_input_schema(tool.name, tool.schema)
        except AuditError as exc:
            raise AuditError(f"{exc}; leave it out with --tools to audit the others") from None
        if tool.name in pinned:
            tool.arguments, tool.source = dict(pinned[tool.name]), "pinned"
            continue
        try:
            tool.arguments = arguments_for(tool.schema)
        except ArgumentError as exc:
            tool.status, tool.why = ToolStatus.NO_ARGUMENTS, str(exc)
            continue
        tool.source = "generated" if tool.arguments else "none needed"
    for tool in listed:
        if tool.status is ToolStatus.AUDITED:
            tool.invalid = invalid_input_for(tool.schema)
    return listed


@dataclass
class _Plan:
    target: AuditTarget
    specs: list[CaseSpec]
    seed: int | str


# the plan of the run, for forked workers (set before the pool starts)
_PLAN: _Plan | None = None


def _run_one(spec: CaseSpec) -> CaseOutcome:
    assert _PLAN is not None
    return run_one(_PLAN.target, spec, _PLAN.seed)


def case_namespace(spec: CaseSpec) -> str:
    """The namespace a case's canaries are drawn in (with the run's seed)."""
    return f"leakcheck-mcp::{spec.id}"


#: The pytest API's advice in a fault's "never reached" reason, and what it means for
#: ``leakcheck mcp``, where the server is the gateway and {upstream} the fault's URL.
_API_ADVICE = (
    (re.compile(r": point the gateway at fault\.url(?: \([^()]*(?:\([^()]*\))?[^()]*\))?\.?"),
     ": is {upstream} where the server takes its API's URL from?"),
    (re.compile(r"; for requests force it via='responses'"), ""),
    (re.compile(r" The test proved nothing about this stage\."), " Nothing was proven here."),
)  # fmt: skip


def _for_the_cli(reason: str) -> str:
    """A fault's reason with the pytest API's advice (``fault.url``) said as the audit's."""
    for pattern, said in _API_ADVICE:
        reason = pattern.sub(said, reason)
    return reason


def _upstream_given(spec: ServerSpec) -> bool:
    """Whether a template of ``spec`` names the case's upstream (or is malformed, or names
    an unknown field: that is said first, when the target is made)."""
    from leakcheck.plugins.mcp_target import CASE_FIELDS

    templates = [*spec.env.values(), *spec.args, *spec.headers.values()]
    try:
        fields = set().union(*map(template_kinds, templates))
    except ValueError:
        return True
    return bool({"upstream", "auth_url"} & fields) or not fields <= {*CASE_FIELDS, *KINDS}


#: Said under a leak of an earlier case's canary.
CARRIED = (
    "a canary of the earlier case {owner}, shown in this one: the server keeps what a case "
    "gave it from one case to the next (a cache, a file; every case of a --url server is "
    "one process), and a model sees another session's credential"
)

#: The canaries of the cases this process ran in this audit (``run_one``): a case's outputs
#: are searched for them too. A forked worker (``--jobs``) knows those of its own cases.
_EARLIER: SessionMasker | None = None


def _earlier_cases() -> SessionMasker:
    global _EARLIER
    if _EARLIER is None:
        _EARLIER = SessionMasker()
    return _EARLIER


def run_one(target: AuditTarget, spec: CaseSpec, seed: int | str) -> CaseOutcome:
    """One case in a fresh server process, judged; never raises for the server's sake."""
    namespace = case_namespace(spec)
    check = LeakCheck(seed=seed, namespace=namespace, sinks=[])
    tool = target.tool_of(spec.operation)
    started = time.monotonic()
    failure = error = ""
    try:
        run_case(check, target, spec)
    except MatrixFailure as exc:
        failure = str(exc)
    except CaseError as exc:
        error = check.mask(str(exc))
    except HarnessError as exc:
        error = check.mask(f"the harness could not run the case: {exc}")
    except Exception as exc:  # noqa: BLE001 - the harness's own failure, said, not raised
        error = check.mask(f"the harness failed: {type(exc).__name__}: {exc}")
    except BaseException:
        # interrupted (^C, SIGTERM): the case's fault stopped and its files removed on the
        # way out (its loopback directory was left behind)
        with contextlib.suppress(Exception):
            check.stop()
        for sink in check.sinks:
            if isinstance(sink, HomeFilesSink):
                shutil.rmtree(sink.root, ignore_errors=True)
        raise
    try:
        check.stop()
    except Exception as exc:  # noqa: BLE001
        error = error or check.mask(f"the harness could not stop the case's fault: {exc}")
    unreached = check.harness_errors()
    leaks = check.findings()
    earlier = _earlier_cases()
    if check.secrets:
        items = resolve_latent(check.captured(), check.policy)
        leaks += earlier_leaks(
            earlier, items, check.policy, before=earlier.batch_count(),
            leaving_out=check.secrets, note=CARRIED,
        )  # fmt: skip
        earlier.add(
            [s for s in check.secrets if s.generated], by=f"{tool}/{spec.stage}/{spec.placement}"
        )
    for sink in check.sinks:
        if isinstance(sink, HomeFilesSink):
            shutil.rmtree(sink.root, ignore_errors=True)
    forbidden = [leak for leak in leaks if not leak.allowed]
    result = check.matrix
    failed = {a.value for a in result.failed} if result is not None else set()
    failed.discard(Assertion.HARNESS.value)
    if forbidden:
        failed.add(Assertion.LEAKS.value)
    outcome = CaseOutcome(tool, spec.stage, spec.placement, Outcome.PASSED)
    outcome.seconds = time.monotonic() - started
    outcome.findings = [_masked(leak.to_dict(), check.mask) for leak in leaks]
    details = [line for line in failure.splitlines()[1:] if not line.startswith("rerun:")]
    if forbidden:
        causes = len(root_causes(forbidden))
        header = (
            f"  [leaks] {len(forbidden)} forbidden hit(s) of "
            f"{len({leak.finding.secret_id for leak in forbidden})} secret(s) in {causes} "
            f"root cause(s) (canary seed {check.seed}):"
        )
        text = format_leaks(forbidden, header=header)
        details += [header] + ["    " + line for line in text.splitlines()[1:]]
    reasons = []
    if forbidden:
        sinks = ", ".join(sorted({leak.sink for leak in forbidden}))
        ids = ", ".join(sorted({leak.finding.secret_id for leak in forbidden}))
        reasons.append(f"leaks: {ids} (in {sinks})")
    for name in sorted(failed - {Assertion.LEAKS.value}):
        reasons.append(
            {
                "contract": "MCP result contract",
                "raised": "a JSON-RPC error instead of a result",
            }.get(name, name)
        )
    if error:
        outcome.outcome, outcome.reason = Outcome.ERROR, error
        if failed:  # what it showed before it broke still counts
            outcome.outcome = Outcome.FAILED
            outcome.reason = "; ".join([*reasons, f"error: {error}"])
    elif failed:
        outcome.outcome, outcome.reason = Outcome.FAILED, "; ".join(reasons)
    elif unreached:
        outcome.outcome = Outcome.NOT_REACHED
        outcome.reason = "the server made no request at this stage: " + _for_the_cli(
            unreached.splitlines()[0]
        )
    if unreached and outcome.outcome is Outcome.FAILED:
        details.append("  (and the stage was not reached: " + unreached.splitlines()[0] + ")")
    answer = getattr(check, "audit_answer", "")
    outcome.answer = check.mask(answer) if isinstance(answer, str) else ""
    from leakcheck.plugins.mcp_target import UNREAD_SINK

    outcome.unread = [
        check.mask(item.uninspected)
        for sink in check.sinks
        if getattr(sink, "name", "") == UNREAD_SINK
        for item in sink.collect()
        if item.uninspected
    ]
    outcome.failed = sorted(failed)
    outcome.canary_namespace = namespace
    outcome.canaries = [secret.id for secret in check.secrets if secret.generated]
    outcome.details = check.mask("\n".join(details))
    outcome.reason = check.mask(outcome.reason)
    return outcome


def _masked(data: Any, mask: Callable[[str], str]) -> Any:
    if isinstance(data, str):
        return mask(data)
    if isinstance(data, dict):
        return {k: _masked(v, mask) for k, v in data.items()}
    if isinstance(data, list):
        return [_masked(v, mask) for v in data]
    return data


def _probe_of(specs: Iterable[CaseSpec]) -> CaseSpec | None:
    """A tool's probe: its first case at an answered stage (else its first case)."""
    specs = list(specs)
    answered = [s for s in specs if STAGES[s.stage].response_received]
    base = [s for s in answered if s.placement == "authorization-header"]
    chosen = base or answered or specs
    return chosen[0] if chosen else None


def audit_mcp_server(
    command: str | Sequence[str] = "",
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    tools: Sequence[str] | None = None,
    stages: Sequence[str] | None = None,
    placements: Sequence[str] | None = None,
    arguments: Mapping[str, Mapping[str, Any]] | str | Path | None = None,
    seed: int | str | None = None,
    jobs: int = 1,
    budget: float | None = None,
    call_timeout: float = 10.0,
    startup_timeout: float = 30.0,
    timeout: float = 0.5,
    isolate_home: bool = True,
    progress: Progress | None = None,
    url: str = "",
    headers: Mapping[str, str] | None = None,
    handshake: str = "auto",
) -> AuditResult:
    """Audit the MCP server started by ``command`` (a command line as a list, or its
    program alone) over stdio, or the streamable-HTTP server running at ``url`` (each
    case a new session, ``headers`` templates rendered from it).

    Returns the ``AuditResult`` (``.exit_code``: 0 clean, 1 leaks, 2 incomplete). ``env``
    templates name ``{upstream}``, ``{ca_file}``, ``{timeout}`` and canary kinds
    (``{bearer}``, ``{api_key}``...); ``tools``, ``stages`` and ``placements`` are glob
    patterns narrowing the run; ``arguments`` pins a tool's arguments (a mapping, or a
    JSON file). Raises ``AuditError`` (one line) when the audit cannot run: the server
    does not start, lists no tools, offers an invalid input schema, a template or a name
    is unknown. ``handshake``: how each session is opened, ``auto`` as a 2026 host does
    (``server/discover``, else ``initialize``), ``legacy`` as an older one (``initialize``
    only)."""
    from leakcheck.plugins.mcp_target import HANDSHAKES, McpTemplateError

    began = time.monotonic()
    argv = [command] if isinstance(command, str) else list(command)
    argv = [part for part in argv if part]
    if url and argv:
        raise AuditError("either --url (a running streamable-HTTP server) or a COMMAND, not both")
    if url and not url.startswith(("http://", "https://")):
        # (its scheme alone: the rest of a URL given here is masked by nothing yet, and
        # a query may carry a token)
        scheme = url.partition(":")[0] if ":" in url else ""
        shown = (
            f"one starting {scheme}:" if scheme.isalpha() and len(scheme) <= 16 else "other text"
        )
        raise AuditError(f"--url is an http:// or https:// URL, not {shown}")
    if not argv and not url:
        raise AuditError("no server command: leakcheck mcp [options] -- COMMAND [ARGS...]")
    if headers and not url:
        raise AuditError("--header is for a streamable-HTTP server (--url); over stdio use --env")
    if jobs < 1:
        raise AuditError("--jobs is at least 1")
    if handshake not in HANDSHAKES:
        raise AuditError(f"--handshake is one of {', '.join(HANDSHAKES)}")
    for name, value in (("call", call_timeout), ("startup", startup_timeout)):
        if not value > 0:
            raise AuditError(f"--{name}-timeout is a positive number of seconds")
    spec = ServerSpec(
        command=argv[0] if argv else "", args=tuple(argv[1:]), env=dict(env or {}),
        url=url, headers=dict(headers or {}),
        cwd=str(cwd) if cwd is not None else None, startup_timeout=startup_timeout,
        call_timeout=call_timeout, timeout=timeout, isolate_home=isolate_home,
        handshake=handshake,
    )  # fmt: skip
    pinned = load_pinned(arguments) if isinstance(arguments, str | Path) else dict(arguments or {})
    chosen_stages = _pick(AUDIT_STAGES, stages, "stages")
    unproven = [
        stage for stage in chosen_stages
        if url and stage in URL_UNPROVEN and stage not in (stages or ())
    ]  # fmt: skip
    chosen_stages = [stage for stage in chosen_stages if stage not in unproven]
    chosen_placements = _pick(list(PLACEMENTS), placements, "placements") if placements else None
    stages_called = any(stage != "invalid_input" for stage in chosen_stages)
    if not url and stages_called and not _upstream_given(spec):
        raise AuditError(
            "no --env or server argument carries {upstream} (or {auth_url}): the server "
            "would call its own API, never the fault server, and every HTTP stage would come "
            "back not reached; give it where the server takes its API's URL from (--env "
            "API_URL={upstream}), or audit --stages invalid_input alone"
        )
    masker = LeakCheck(sinks=[])
    for secret in literal_secrets(spec, pinned):
        masker.register_secret(secret)
    workdir = tempfile.mkdtemp(prefix="leakcheck-mcp-")
    try:
        result = _audit(spec, workdir, tools, pinned, chosen_stages, chosen_placements,
                        placements, seed, jobs, budget, began, progress)  # fmt: skip
    except McpTemplateError as exc:
        raise AuditError(masker.mask(str(exc).replace("AuditTarget ", "--"))) from None
    except AuditError as exc:
        raise AuditError(masker.mask(str(exc))) from None
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    result.seconds = time.monotonic() - began
    if unproven:
        result.notes.append(
            f"stages not run over --url: {', '.join(unproven)}: a running server's failed "
            "lookups, refused and unanswered connects are proven only inside a server process "
            "leakcheck starts, and its client does not trust the fault server's CA (name a "
            "stage exactly in --stages to run it anyway)"
        )
    _mask_across_cases(result)
    if masker.secrets:  # what the server was configured with literally: never printed
        result.server = masker.mask(result.server)
        _mask_texts(result, masker.mask)
    # A tool's answer, quoted in every report: a token of the server's own that is none of
    # the secrets masked above (a key from its configuration) shown as «opaque», as an
    # excerpt shows one (it went raw into the text, JSON and SARIF reports)
    # (and what a case says of the server, its stderr's last line among it: a key of its own
    # there went raw into every report, found by a hunting helper)
    for tool in result.tools:
        tool.why = without_random_tokens(tool.why)
    for case in result.cases:
        case.answer = without_random_tokens(case.answer)
        case.reason = without_random_tokens(case.reason)
        case.details = without_random_tokens(case.details)
        case.unread = [without_random_tokens(what) for what in case.unread]
    unread = [case for case in result.cases if case.unread]
    if unread:
        first = unread[0]
        result.notes.append(
            f"part of what the server offers besides its tools was not read in {len(unread)} "
            f"case(s), and is not judged (first: {first.id}: {first.unread[0]})"
        )
    return result


def _mask_across_cases(result: AuditResult) -> None:
    """Every case's texts masked with the canaries of every case, not its own alone: a
    server that keeps state from call to call (a shared ``--url`` server, a stdio server
    writing to disk) answers one case with what another planted, and a 14-character
    piece of an earlier case's token went raw into every report, the verdict clean. Each
    case's canaries are drawn again from the run's seed in its namespace (cases run in
    forked workers, and an outcome carries ids, never values)."""
    masker = SessionMasker()
    for case in result.cases:
        batch = drawn_again(result.seed, case.canary_namespace, case.canaries)
        if batch:
            masker.add(batch)
    if len(masker):
        _mask_texts(result, masker.mask)


def _mask_texts(result: AuditResult, mask: Callable[[str], str]) -> None:
    """The texts of ``result``'s tools and cases that a server's doing can show, masked."""
    for tool in result.tools:
        tool.why = mask(tool.why)
    for case in result.cases:
        case.reason, case.details = mask(case.reason), mask(case.details)
        case.answer = mask(case.answer)
        case.findings = _masked(case.findings, mask)
        case.unread = [mask(what) for what in case.unread]


def _audit(
    spec: ServerSpec,
    workdir: str,
    tools: Sequence[str] | None,
    pinned: Mapping[str, Mapping[str, Any]],
    stages: list[str],
    placements: list[str] | None,
    asked_placements: Sequence[str] | None,
    seed: int | str | None,
    jobs: int,
    budget: float | None,
    began: float,
    progress: Progress | None,
) -> AuditResult:
    listed = _select_tools(list_tools(spec, workdir), tools, pinned)
    audited = [t for t in listed if t.status is ToolStatus.AUDITED]
    result = AuditResult(server=spec.describe(), seed=seed if seed is not None else 0)
    result.tools, result.budget = listed, budget
    if not audited:
        return result
    target = make_target(
        spec, workdir, tools=[t.name for t in audited],
        arguments={t.name: t.arguments or {} for t in audited},
        stages=stages, placements=placements,
        seams={"validation"} if "invalid_input" in stages else (),
    )  # fmt: skip
    target.use_tools(audited)
    try:
        specs = _invalid_once(cases_for(target), target)
    except ValueError as exc:
        raise AuditError(str(exc)) from None
    if seed is None:
        seed = LeakCheck().seed
    result.seed = seed
    _carried_note(result, target, asked_placements)
    _caseless_note(result, target, stages, specs)
    _run_all(result, target, specs, seed, jobs, budget, began, progress)
    return result


def _caseless_note(
    result: AuditResult, target: AuditTarget, stages: Sequence[str], specs: list[CaseSpec]
) -> None:
    """A stage asked for that no case of any tool runs is said, never silently dropped
    (``matrix.caseless_stages``, which the pytest grid says by operation): the transport
    stages (refused, DNS, TLS, timeouts, reset) are run with the credential placements
    only, and those need a credential the templates carry."""
    caseless = caseless_stages(target, specs)
    missing = [
        stage
        for stage in stages
        if all(stage in caseless.get(op.name, ()) for op in target.operations)
    ]
    if missing:
        result.notes.append(
            f"stages not run, no placement applies: {', '.join(missing)}: they are run with "
            "the credential placements only (the upstream's answers are not read there): "
            "give the server its token as {bearer} or {auth_headers}"
        )


def _invalid_once(specs: list[CaseSpec], target: AuditTarget) -> list[CaseSpec]:
    """The ``invalid_input`` cases: only for a tool with an invalid input, and only with
    its first placement (the base credential when the templates carry it): the canary
    under test is the one in the arguments."""
    operations = {op.name: op for op in target.operations}
    seen: set[str] = set()
    kept = []
    for spec in specs:
        if spec.stage == "invalid_input":
            if operations[spec.operation].invalid_input is None or spec.operation in seen:
                continue
            seen.add(spec.operation)
        kept.append(spec)
    return kept


def _carried_note(result: AuditResult, target: AuditTarget, asked: Sequence[str] | None) -> None:
    if asked is not None:
        return
    credential = [n for n, p in PLACEMENTS.items() if p.where == "credential"]
    skipped = [n for n in credential if n not in (target.placements or [])]
    if target.spec.url:  # the auditor is the HTTP client: it sends no header with a newline
        skipped = [n for n in skipped if n not in UNSENDABLE]
    if skipped:
        result.notes.append(
            f"credential placements not run: {', '.join(skipped)}: the server's templates do "
            "not carry their credentials (each needs the base token, {bearer} or "
            "{auth_headers}, and its own: {auth_headers}, {auth_query} or {auth_url})"
        )


def _run_all(
    result: AuditResult,
    target: AuditTarget,
    specs: list[CaseSpec],
    seed: int | str,
    jobs: int,
    budget: float | None,
    began: float,
    progress: Progress | None,
) -> None:
    global _PLAN, _EARLIER
    _EARLIER = None  # (a new audit: an earlier one's canaries are no case of this one)
    by_tool: dict[str, list[CaseSpec]] = {}
    for spec in specs:
        by_tool.setdefault(spec.operation, []).append(spec)
    probes = {op: _probe_of(group) for op, group in by_tool.items()}
    outcomes: dict[CaseSpec, CaseOutcome] = {}
    total = len(specs)
    stopped: dict[str, str] = {}  # operation -> why its other cases are not run
    errors_in_a_row: dict[str, list[str]] = {}
    errors_at: dict[tuple[str, str], int] = {}
    stopped_at: dict[tuple[str, str], str] = {}  # (operation, stage) -> why
    tool_info = {t.name: t for t in result.tools}

    def over_budget() -> bool:
        return budget is not None and time.monotonic() - began >= budget

    def record(spec: CaseSpec, outcome: CaseOutcome) -> None:
        outcomes[spec] = outcome
        op, key = spec.operation, (spec.operation, spec.stage)
        if outcome.outcome is Outcome.ERROR:
            # the same stage erring again: its other placements would too (a hang at 429)
            errors_at[key] = errors_at.get(key, 0) + 1
            if errors_at[key] >= MAX_ERRORS_AT_A_STAGE and key not in stopped_at:
                stopped_at[key] = (
                    f"stopped after {MAX_ERRORS_AT_A_STAGE} errors at this stage of this tool"
                )
            # errors at several stages in a row: every call fails (a crash on each call)
            erring = errors_in_a_row.setdefault(op, [])
            if spec.stage not in erring:
                erring.append(spec.stage)
            if len(erring) >= MAX_ERRORS_IN_A_ROW and op not in stopped:
                stopped[op] = (
                    f"stopped after errors at {MAX_ERRORS_IN_A_ROW} stages in a row on this tool"
                )
        elif outcome.outcome is not Outcome.NOT_RUN:
            errors_in_a_row[op] = []
        if probes.get(op) == spec and outcome.outcome is Outcome.NOT_REACHED:
            info = tool_info[target.tool_of(op)]
            names = ", ".join(sorted(info.arguments or {}))
            given = (
                f"with its {info.source or 'generated'} arguments ({names})"
                if names
                else "with no arguments (its schema requires none)"
            )
            info.status = ToolStatus.NOT_CALLABLE
            info.why = (
                f"{given} the server made no request to the upstream (it rejected them, or "
                "the tool calls no HTTP API): pin valid ones with --arguments FILE, or leave "
                "it out with --tools"
            )
            if outcome.answer:
                info.why += f"; it answered: {outcome.answer}"
            stopped[op] = "its tool made no request with its arguments (see the tool)"
        if progress is not None:
            progress(len(outcomes), total, outcome.id)

    def not_run(spec: CaseSpec, why: str) -> CaseOutcome:
        return CaseOutcome(
            target.tool_of(spec.operation), spec.stage, spec.placement, Outcome.NOT_RUN,
            reason=why,
        )  # fmt: skip

    first = [p for p in probes.values() if p is not None]
    rest = [s for s in specs if s not in first]
    if jobs == 1:
        for spec in [*first, *rest]:
            why = stopped.get(spec.operation) or stopped_at.get((spec.operation, spec.stage))
            if why:
                record(spec, not_run(spec, why))
            elif over_budget():
                result.budget_spent = True
                record(spec, not_run(spec, "the wall-clock budget was spent"))
            else:
                record(spec, run_one(target, spec, seed))
    else:
        _PLAN = _Plan(target, specs, seed)
        try:
            context = multiprocessing.get_context("fork")
            with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=context) as pool:
                for batch in (first, rest):
                    queue = list(batch)
                    running: dict[concurrent.futures.Future[CaseOutcome], CaseSpec] = {}
                    while queue or running:
                        while queue and len(running) < jobs * 2:
                            spec = queue.pop(0)
                            why = stopped.get(spec.operation) or stopped_at.get(
                                (spec.operation, spec.stage)
                            )
                            if why:
                                record(spec, not_run(spec, why))
                            elif over_budget():
                                result.budget_spent = True
                                record(spec, not_run(spec, "the wall-clock budget was spent"))
                            else:
                                running[pool.submit(_run_one, spec)] = spec
                        if not running:
                            continue
                        done, _ = concurrent.futures.wait(
                            running, return_when=concurrent.futures.FIRST_COMPLETED
                        )
                        for future in done:
                            spec = running.pop(future)
                            try:
                                outcome = future.result()
                            except Exception as exc:  # noqa: BLE001 - a worker that died
                                outcome = not_run(spec, f"the worker failed: {type(exc).__name__}")
                                outcome.outcome = Outcome.ERROR
                            record(spec, outcome)
        finally:
            _PLAN = None
    result.cases = [outcomes[spec] for spec in specs]
    for op in by_tool:
        info = tool_info[target.tool_of(op)]
        if info.status is ToolStatus.AUDITED and op in stopped and "errors" in stopped[op]:
            info.why = stopped[op]


def cpu_jobs() -> int:
    """A default for ``--jobs``: the CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)
