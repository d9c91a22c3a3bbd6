"""``leakcheck mcp -- COMMAND [ARGS...]``: audit an MCP server from the outside.

Starts the server over stdio once per case, with canaries templated into its environment
(``--env NAME=TEMPLATE``: ``{bearer}``, ``{api_key}``..., ``{upstream}`` for the loopback
fault server, ``{ca_file}``, ``{timeout}``), lists its tools, calls each with arguments
generated from its input schema (or pinned with ``--arguments FILE``) under every HTTP
failure stage and placement that applies, and judges what the model and the operator
see (``leakcheck.audit``). Exit status: 0 clean, 1 a leak (or a broken MCP-result or
hygiene rule), 2 a usage error or an incomplete audit (the server does not start, crashes,
hangs, lists no tools, has an invalid schema; a stage it never reached). Nothing printed
carries a secret: every text is masked with every canary and every literal value the
server was configured with.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from ..errors import quoted
from ..findings import without_random_tokens
from .console import (
    EXIT_ERROR,
    UsageError,
    credential_argument,
    named,
    print_stderr,
    write_stdout,
)
from .output import Output

TYPE_CHECKING = False  # not typing's: its import was a twentieth of a scan's start-up
if TYPE_CHECKING:
    from typing import Any

__all__ = ["add_mcp_parser", "mcp_command"]

_FORMATS = ("text", "json", "sarif", "junit")


def add_mcp_parser(commands: Any) -> None:
    """The ``mcp`` subcommand's arguments (``commands``: the subparsers object)."""
    mcp = commands.add_parser(
        "mcp",
        help="audit an MCP server (any language) for leaks, from the outside",
        description="Start an MCP server over stdio once per case, with canary credentials "
        "in its environment and its upstream pointed at leakcheck's loopback fault server, "
        "call every tool under every HTTP failure stage and placement, and judge what the "
        "model and the operator see. Exit 0 when clean, 1 on leaks, 2 on usage errors or "
        "an incomplete audit.",
        usage="leakcheck mcp [options] -- COMMAND [ARGS...]\n       leakcheck mcp --url URL "
        "[--header NAME=TEMPLATE]... [options]",
    )
    mcp.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=TEMPLATE",
        help="an environment variable of the server; templates: {upstream} (the fault "
        "server's URL), {bearer}, {api_key}, {user_name}... (canaries), {auth_headers}, "
        "{auth_query}, {auth_url}, {ca_file}, {timeout}",
    )
    mcp.add_argument("--cwd", metavar="DIR", help="the server's working directory")
    mcp.add_argument(
        "--url",
        metavar="URL",
        default="",
        help="audit the streamable-HTTP MCP server running there instead of starting a "
        "COMMAND (each case a new session)",
    )
    mcp.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="NAME=TEMPLATE",
        help="a request header for --url, such as 'Authorization=Bearer {bearer}' "
        "(templates as for --env)",
    )
    mcp.add_argument(
        "--tools",
        action="append",
        metavar="PATTERN",
        help="audit only the tools matching these globs (repeat or comma-separate)",
    )
    mcp.add_argument(
        "--stages",
        action="append",
        metavar="PATTERN",
        help="only these stages (globs such as 'http_*', 'tls_*'; default: invalid_input and "
        "the 15 HTTP stages)",
    )
    mcp.add_argument(
        "--placements",
        action="append",
        metavar="PATTERN",
        help="only these placements (default: every placement the templates carry)",
    )
    mcp.add_argument(
        "--arguments",
        metavar="FILE",
        help='valid arguments per tool, a JSON object: {"tool": {"arg": "value"}} '
        "(default: generated from each tool's input schema)",
    )
    mcp.add_argument("--format", choices=_FORMATS, default="text")
    mcp.add_argument("--output", "-o", metavar="FILE", help="write the report here")
    mcp.add_argument("--seed", help="the canary seed (default: random, printed)")
    mcp.add_argument(
        "--jobs", "-j", type=int, default=1, metavar="N", help="cases run at once (default 1)"
    )
    mcp.add_argument(
        "--budget",
        type=float,
        metavar="SECONDS",
        help="wall-clock budget: no case starts after it (those left are reported not run)",
    )
    mcp.add_argument(
        "--call-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="one tool call (default 10); a server that does not answer by then: error",
    )
    mcp.add_argument(
        "--startup-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="the server's start and MCP handshake (default 30)",
    )
    mcp.add_argument(
        "--handshake",
        choices=("auto", "legacy"),
        default="auto",
        help="how each MCP session is opened: auto as a 2026 host does (server/discover, "
        "else initialize; the default), legacy as an older host does (initialize only)",
    )
    mcp.add_argument(
        "--timeout",
        type=float,
        default=0.5,
        metavar="SECONDS",
        help="the HTTP client timeout the server is told, as {timeout} (default 0.5)",
    )
    mcp.add_argument(
        "--keep-home",
        action="store_true",
        help="do not give each case a fresh HOME and TMPDIR (their files are then not read)",
    )
    mcp.add_argument(
        "server", nargs=argparse.REMAINDER, metavar="COMMAND", help="the server's command line"
    )


def _patterns(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return [p.strip() for value in values for p in value.split(",") if p.strip()]


def _environment(pairs: list[str], option: str = "--env") -> dict[str, str]:
    env: dict[str, str] = {}
    example = "Authorization=Bearer {bearer}" if option == "--header" else "API_TOKEN={bearer}"
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name or not name.replace("_", "a").replace("-", "a").isalnum():
            raise UsageError(
                f"{option} takes NAME=TEMPLATE (such as {example}), not {quoted(name[:40])}"
            )
        env[name] = value
    return env


class _Progress:
    """A progress line on standard error, only when it is a terminal."""

    def __init__(self) -> None:
        self.on = sys.stderr.isatty()
        self.started = time.monotonic()
        self.shown = False

    def __call__(self, done: int, total: int, label: str) -> None:
        if not self.on:
            return
        elapsed = time.monotonic() - self.started
        line = f"[{done}/{total}] {elapsed:5.0f} s  {label}"[:100]
        try:
            sys.stderr.write("\r" + line.ljust(100))
            sys.stderr.flush()
            self.shown = True
        except (OSError, ValueError):
            self.on = False

    def clear(self) -> None:
        if self.shown:
            try:
                sys.stderr.write("\r" + " " * 100 + "\r")
                sys.stderr.flush()
            except (OSError, ValueError):
                pass


def stop_on_sigterm() -> None:
    """SIGTERM (``kill``, ``timeout``, a CI job cancelled) interrupts the audit as ^C
    does, so that it unwinds; it ended the process at once, leaving the server it was
    calling running (its own session, a canary in its environment) and the temporary
    directories behind."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return

    def interrupt(signum: int, frame: object) -> None:
        # as ^C: SIGINT's handler (the event loop's, while a case runs: it cancels the
        # case and raises KeyboardInterrupt out of the loop; raised here, inside a task,
        # it came out wrapped in an exception group, a traceback)
        signal.raise_signal(signal.SIGINT)

    signal.signal(signal.SIGTERM, interrupt)


def mcp_command(args: argparse.Namespace, output: Output) -> int:
    try:
        from ..audit import AuditError, audit_mcp_server, literal_secrets, render
        from ..audit.arguments import load_pinned
        from ..audit.model import ServerSpec
    except ImportError as exc:  # the mcp extra is not installed
        raise UsageError(
            f"leakcheck mcp needs the MCP client and hypothesis-jsonschema ({exc.name} is "
            "missing): pip install 'pytest-leakcheck[mcp]'"
        ) from None
    server = list(args.server)
    if server and server[0] == "--":
        server = server[1:]
    if not server and not args.url:
        raise UsageError("no server command: leakcheck mcp [options] -- COMMAND [ARGS...]")
    if args.cwd is not None and not os.path.isdir(args.cwd):
        # (else the server's start failed as "no such command", naming the command)
        raise UsageError(f"--cwd {named(args.cwd)}: no such directory")
    env = _environment(args.env)
    headers = _environment(args.header, "--header")
    spec = ServerSpec(
        command=server[0] if server else "", args=tuple(server[1:]), env=env, headers=headers
    )
    if args.arguments and credential_argument(args.arguments):  # (a token given as it)
        raise UsageError(f"--arguments {named(args.arguments)}: no such file")
    try:  # (read once, here: the audit takes the arguments read)
        pinned = load_pinned(args.arguments) if args.arguments else {}
    except AuditError as exc:  # (names the file and where, never a value)
        raise UsageError(str(exc)) from None
    # a literal token given to the server, or pinned as a tool's argument: never shown
    output.use(literal_secrets(spec, pinned))
    seed: int | str | None = args.seed
    if isinstance(seed, str) and seed.isdigit():
        seed = int(seed)
    progress = _Progress()
    try:
        stop_on_sigterm()
        result = audit_mcp_server(
            server,
            env=env,
            cwd=args.cwd,
            tools=_patterns(args.tools),
            stages=_patterns(args.stages),
            placements=_patterns(args.placements),
            arguments=pinned,
            seed=seed,
            jobs=args.jobs,
            budget=args.budget,
            call_timeout=args.call_timeout,
            startup_timeout=args.startup_timeout,
            timeout=args.timeout,
            isolate_home=not args.keep_home,
            progress=progress,
            url=args.url,
            headers=headers,
            handshake=args.handshake,
        )
    except AuditError as exc:
        # (a key of the server's own in what it said, no secret known: «opaque», after
        # the literal secrets given to it are masked with their labels)
        raise UsageError(without_random_tokens(output.mask_one(str(exc)))) from None
    except KeyboardInterrupt:
        # (the servers and the fault servers stopped, their temporary files removed, by
        # the unwinding: ``kill``, a CI job's timeout or ^C left a server running with a
        # canary in its environment, and its files behind)
        print_stderr("leakcheck: interrupted: the audit stopped, its servers with it")
        raise
    finally:
        progress.clear()
    report = output.mask_one(render(result, args.format))
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as written:
                written.write(report)
        except OSError as exc:
            raise UsageError(
                f"cannot write {named(args.output, to_write=True)}: {exc.strerror or exc}"
            ) from None
    else:
        write_stdout(report)
    if args.output or args.format != "text":
        # the verdict and the time, where a person reads them
        from ..audit.report import timing_line, verdict_line

        said = f"leakcheck mcp: {verdict_line(result)}; {timing_line(result)}"
        print_stderr(output.mask_one(said))
    code = result.exit_code
    if code == EXIT_ERROR:
        first = next(
            (c.reason for c in result.cases if c.outcome.value in ("error", "not reached")),
            next((t.why for t in result.unaudited_tools), ""),
        )
        line = f"leakcheck: error: the audit is incomplete: {result.incomplete()}"
        if first:
            line += f"; first: {first}"
        print_stderr(output.mask_one(line[:600]))
    return code
