"""The ``leakcheck`` command: ``main`` and its argument parser; each command in its module.

``leakcheck scan`` searches logs, cassettes, traces and crash dumps for known secrets. Exit
status: 0 clean, 1 findings, 2 usage or I/O error. Secrets come from a file, never from argv
(where shell history, ``ps`` and CI logs would keep them); nothing printed carries one: every
string the command prints (report, notes, errors; stdout, stderr, ``--output``) is masked
with every form and every short piece of every secret (see ``output.Output``).

The parts: ``scan`` (the command), ``secrets_file`` (``--secrets-file``), ``canaries_from``
(``--canaries-from``: a report's test entries, read as ``records.TestRecord``), ``budget``
(how many secrets a scan takes), ``inputs`` (what the PATH arguments name), ``output`` (the
masking of what is printed), ``console`` (exit codes, errors, stdout and stderr),
``request_ids`` (``leakcheck request-ids``: the request-id verdict over several reports),
``review`` and ``schema`` (the other commands). The names scripts import (``main``,
``load_secrets``, ``load_canaries``, ``canaries_from_report``, ``UsageError``, the limits)
are importable from here as before; the limits are read in ``budget``, where a test sets them.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from ..engine import BACKENDS
from ..report import RENDERERS
from ..version import __version__
from .budget import HYPERSCAN_MAX_SECRETS, MAX_SECRET_CHARS, MAX_SECRETS
from .console import (
    EXIT_CLEAN,
    EXIT_ERROR,
    EXIT_FINDINGS,
    StdoutError,
    UsageError,
    print_stderr,
    quotable_choice,
    silence_stdout,
    write_stdout,
)
from .mcp import add_mcp_parser, mcp_command
from .output import Output
from .scan import scan_command
from .secrets_file import load_secrets

TYPE_CHECKING = False  # not typing's: its import was a twentieth of a scan's start-up
if TYPE_CHECKING:
    from typing import Any, NoReturn

    from .canaries_from import canaries_from_report, load_canaries

__all__ = [
    "EXIT_CLEAN",
    "EXIT_ERROR",
    "EXIT_FINDINGS",
    "HYPERSCAN_MAX_SECRETS",
    "MAX_SECRETS",
    "MAX_SECRET_CHARS",
    "UsageError",
    "canaries_from_report",
    "load_canaries",
    "load_secrets",
    "main",
]


def __getattr__(name: str) -> Any:
    """The report-reading names, imported on first use (``leakcheck scan`` without
    ``--canaries-from`` never needs them)."""
    if name in ("canaries_from_report", "load_canaries"):
        from . import canaries_from

        return getattr(canaries_from, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _Formatter(argparse.HelpFormatter):
    """argparse's formatter, its width read as ``shutil.get_terminal_size`` reads it
    without importing shutil (bz2, lzma, fnmatch: 10 ms of a scan's 60 ms start-up; argparse
    makes a formatter for every option it is given)."""

    def __init__(self, prog: str, **kwargs: Any) -> None:
        if kwargs.get("width") is None:
            kwargs["width"] = _columns() - 2
        super().__init__(prog, **kwargs)


def _columns() -> int:
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose formatter is ``_Formatter`` unless told otherwise (its
    subcommands' parsers are of its class)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        # (no abbreviations: "--secret TOKEN" was taken for --secrets-file, and the error
        # quoted the token as the file it could not read)
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        """argparse's usage error, with an argument that looks like a credential shown as
        «opaque» (``leakcheck kinds $TOKEN`` printed "unrecognized arguments: <TOKEN>")."""
        from ..findings import without_random_tokens  # (on this error path only)

        super().error(without_random_tokens(message))

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """argparse's check of a value against its option's choices, the value quoted
        only when ``console.quotable_choice`` says so: argparse quoted it whole ("invalid
        choice: '<a passphrase>'"), and a value of words with a few digits or symbols does
        not look like a key to the «opaque» rule (a tester gave ``--format "$(cat
        pw.txt)"``)."""
        choices = action.choices
        if choices is not None and value not in choices and not quotable_choice(value, choices):
            shown = ", ".join(map(str, choices))
            raise argparse.ArgumentError(
                action,
                f"invalid choice (a value of {len(str(value))} characters, not shown); "
                f"choose from {shown}",
            )
        super()._check_value(action, value)


def _add_scan(commands: Any) -> None:
    scan = commands.add_parser(
        "scan",
        help="search files for every form of known secrets",
        description="Search files, directories (recursively) or stdin ('-') for every "
        "encoded or partial form of the secrets in --secrets-file. Exit 0 when clean, "
        "1 on findings, 2 on usage or I/O errors.",
    )
    scan.add_argument(
        "--secrets-file",
        action="append",
        metavar="FILE",
        help="one secret per line (UTF-8), or a .json list; secrets are never taken from "
        "argv; repeat it for several files (searched for together)",
    )
    scan.add_argument(
        "--canaries-from",
        action="append",
        metavar="REPORT",
        help="also search for every canary a pytest run planted, rebuilt from its "
        "--leakcheck-report JSON (which holds the seed and canary ids, never a value), or "
        "an MCP audit planted, from its 'leakcheck mcp --format json' report; repeat it "
        "for several reports (one per shard of a sharded run)",
    )
    scan.add_argument("--format", choices=sorted(RENDERERS), default="text")
    scan.add_argument("--output", "-o", metavar="FILE", help="write the report here")
    scan.add_argument(
        "--decode",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="decode percent, base64, hex, backslash, HTML and quoted-printable runs "
        "(2 layers) to find chains such as base64-of-JSON (the default; --no-decode: "
        "encoded forms of one layer only)",
    )
    scan.add_argument("--engine", choices=("auto", *BACKENDS), default="auto")
    scan.add_argument(
        "--full-estimate",
        action="store_true",
        help="judge every secret of --secrets-file with zxcvbn at start-up, none accepted "
        "early (the same pieces are reported either way: an early-accepted secret's are "
        "verified with zxcvbn when one is found), at 3 to 40 ms a secret",
    )
    scan.add_argument("paths", nargs="+", metavar="PATH", help="file, directory or '-'")


def _add_request_ids(commands: Any) -> None:
    request_ids = commands.add_parser(
        "request-ids",
        help="judge the request ids of several runs' reports together (CI shards)",
        description="Check the request ids that the stage matrix's cases returned, over "
        "every REPORT (--leakcheck-report JSON) together: unique, not sequential, at least "
        "64 random bits, as the pytest plugin checks one run's. Exit 0 when no rule is "
        "broken, 1 on a violation, 2 on usage or I/O errors.",
    )
    request_ids.add_argument(
        "reports", nargs="+", metavar="REPORT", help="a pytest --leakcheck-report JSON"
    )


def _add_kinds(commands: Any) -> None:
    commands.add_parser("kinds", help="list the kinds of canary leakcheck generates")


def _add_schema(commands: Any) -> None:
    schema = commands.add_parser(
        "schema",
        help="print the agent error envelope's JSON Schema",
        description="Print the default agent error envelope schema (JSON Schema 2020-12) "
        "that the contract checks validate against, for a gateway's own tests or docs.",
    )
    schema.add_argument(
        "--version",
        default="v1",
        metavar="VERSION",
        help="schema version (default: v1)",
    )


def _add_review(commands: Any) -> None:
    review = commands.add_parser(
        "review",
        help="review error-text snapshot differences and accept or reject them",
        description="Show each pending snapshot difference (written by a pytest run that "
        "saw drift) side by side and accept it (written into the snapshot file) or reject "
        "it. Asks per entry on a terminal. Exit 0 when nothing is left pending, 1 otherwise, "
        "2 on usage or I/O errors.",
    )
    review.add_argument(
        "--dir",
        default=".",
        metavar="ROOT",
        help="the pytest rootdir holding .leakcheck/pending (default: the current directory)",
    )
    decide = review.add_mutually_exclusive_group()
    decide.add_argument("--accept-all", action="store_true", help="accept every pending difference")
    decide.add_argument("--reject-all", action="store_true", help="reject every pending difference")
    review.add_argument(
        "--secrets-file",
        metavar="FILE",
        help="also mask these secrets in what is shown (one per line, or a .json list)",
    )


#: each command's parser, in the order ``leakcheck --help`` lists them
_COMMANDS: dict[str, Any] = {
    "scan": _add_scan,
    "request-ids": _add_request_ids,
    "kinds": _add_kinds,
    "schema": _add_schema,
    "review": _add_review,
    "mcp": add_mcp_parser,
}


def _build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; for a command line that names its command first (``leakcheck scan
    ...``), with that command's parser only: the other five cost a scan's start-up 1.5 ms,
    and no message of that command's parsing names them (``leakcheck --help``, an unknown
    or missing command and ``--version`` get every one)."""
    parser = _Parser(
        prog="leakcheck",
        description="Prove that secrets do not leak from AI-agent tool gateways.",
    )
    parser.add_argument("--version", action="version", version=f"leakcheck {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    first = list(sys.argv[1:] if argv is None else argv)[:1]
    named = [first[0]] if first and first[0] in _COMMANDS else list(_COMMANDS)
    for command in named:
        _COMMANDS[command](commands)
    return parser


#: What ``leakcheck kinds`` says of a kind whose canaries a client refuses in a header.
_BEYOND_ASCII = " (characters beyond ASCII: not for a header)"


def _refuse_unrecognized(
    parser: argparse.ArgumentParser, command: str | None, extra: list[str]
) -> NoReturn:
    """argparse's "unrecognized arguments", said by the command's own parser (its usage
    line, not the top level's) with the option each misspelt one is close to
    (``--secret-file``: did you mean ``--secrets-file``?)."""
    from ..errors import did_you_mean

    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    commands: dict[str, argparse.ArgumentParser] = subparsers[0].choices if subparsers else {}
    owner = commands.get(command or "", parser)
    options = [name for action in owner._actions for name in action.option_strings]
    said = []
    for arg in extra:
        hint = did_you_mean(arg.partition("=")[0], options) if arg.startswith("--") else ""
        said.append(arg + hint)
    owner.error(f"unrecognized arguments: {' '.join(said)}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = _build_parser(argv)
    args, extra = parser.parse_known_args(argv)
    if extra:
        _refuse_unrecognized(parser, getattr(args, "command", None), extra)
    output = Output()
    try:
        if args.command == "scan":
            code = scan_command(args, args.output or None, output)
        elif args.command == "request-ids":
            from .request_ids import request_ids_command

            code = request_ids_command(args, output)
        elif args.command == "kinds":
            from ..canaries import KINDS, CanaryFactory

            # (a kind's hostile characters are the same in every canary: one sample says)
            sample = CanaryFactory(seed=0, namespace="kinds", announce=False)
            lines = [
                f"{kind.name:<16} {kind.secret_class.value:<8} {kind.description}"
                + ("" if sample.nth(kind.name, 1).value.isascii() else _BEYOND_ASCII)
                for kind in KINDS.values()
            ]
            write_stdout("\n".join(lines) + "\n")
            code = EXIT_CLEAN
        elif args.command == "schema":
            from .schema import schema_command

            code = schema_command(args.version)
        elif args.command == "review":
            from .review import review_command

            code = review_command(args, output)
        elif args.command == "mcp":
            code = mcp_command(args, output)
        else:
            parser.print_help()
            code = EXIT_ERROR
        write_stdout("")  # flushed here, where a failure can still be reported
    except UsageError as exc:
        # the message may name a path or an id: masked with the secrets known so far
        if exc.secrets:
            output.use([*output.secrets, *exc.secrets])
        print_stderr(output.mask_one(f"leakcheck: error: {exc}"))
        return EXIT_ERROR
    except StdoutError as exc:
        print_stderr(f"leakcheck: error: cannot write to standard output: {exc}")
        silence_stdout()
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    return code
