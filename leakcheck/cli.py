"""``leakcheck scan``: search logs, cassettes, traces and crash dumps for known secrets.

Exit status: 0 clean, 1 findings, 2 usage or I/O error. Secrets come from a file, never from
argv (where shell history, ``ps`` and CI logs would keep them); nothing printed carries one.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import stat
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from . import __version__
from .canaries import KINDS, CanaryFactory, Secret, WeakSecretError
from .detect import Scanner
from .engine import BACKENDS
from .findings import MASK_LABEL, Finding
from .report import RENDERERS, ScanSummary
from .serialize import parse_json, read_json_file

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class UsageError(Exception):
    """A user mistake: reported as one line, exit 2, never a traceback."""


def load_secrets(path: str) -> list[Secret]:
    """One secret per line (UTF-8, blank lines ignored), or a ``.json`` list of strings or of
    ``{"value", "kind", "id"}`` objects for multi-line secrets such as PEM keys."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read secrets file {path!r}: {exc.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise UsageError(f"secrets file {path!r} is not valid UTF-8 (line {line})") from None
    entries: list[tuple[str, str, str]] = []  # (value, kind, id)
    if path.endswith(".json"):
        document = parse_json(text, f"secrets file {path!r}", UsageError)
        if not isinstance(document, list):
            raise UsageError(f"secrets file {path!r}: expected a JSON list")
        for n, item in enumerate(document, start=1):
            if isinstance(item, str):
                item = {"value": item}
            if not isinstance(item, dict) or not isinstance(item.get("value"), str):
                raise UsageError(
                    f"secrets file {path!r} item {n}: expected a string or an object with a "
                    "string 'value'"
                )
            kind = str(item.get("kind", "secret"))
            entries.append((item["value"], kind, str(item.get("id", f"S{n}"))))
    else:
        for n, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                entries.append((line, "secret", f"S{n}"))
    if not entries:
        raise UsageError(f"secrets file {path!r} holds no secret")
    secrets = []
    for value, kind, secret_id in entries:
        try:
            secrets.append(Secret.from_user(value, kind=kind, id=secret_id))
        except WeakSecretError as exc:
            raise UsageError(f"secrets file {path!r}: {exc}") from None
    return secrets


def load_canaries(path: str) -> tuple[list[Secret], int, int]:
    """The canaries a pytest run planted, rebuilt from its ``--leakcheck-report`` (the
    report holds their seed, tests and ids, never a value); how many secrets its tests
    registered themselves (those come with ``--secrets-file``); and how many canaries
    cannot be rebuilt, their test's id having held a secret (masked in the report)."""
    return canaries_from_report(read_json_file(path, f"report {path!r}", UsageError), path)


def canaries_from_report(document: Any, path: str = "<report>") -> tuple[list[Secret], int, int]:
    """``load_canaries`` of a report already read (``path`` names it in messages)."""
    if not (
        isinstance(document, dict)
        and document.get("tool") == "leakcheck"
        and isinstance(document.get("seed"), str)
        and isinstance(document.get("tests"), list)
    ):
        raise UsageError(
            f"{path!r} is not a leakcheck report (pytest --leakcheck-report=PATH writes one)"
        )
    seed, canaries, registered, lost = document["seed"], [], 0, 0
    for n, record in enumerate(document["tests"], start=1):
        listed = record.get("secrets") if isinstance(record, dict) else None
        test = record.get("test") if isinstance(record, dict) else None
        if not isinstance(listed, list) or not isinstance(test, str):
            raise UsageError(
                f"report {path!r} test {n}: no list of its secrets (written by an older "
                "leakcheck? run pytest again)"
            )
        factory = CanaryFactory(seed, namespace=test)
        # a test id that held a secret was masked in the report: its canaries were made
        # from the id as it was, which the report no longer has
        masked_id = MASK_LABEL.search(test) is not None
        for entry in listed:
            if not isinstance(entry, dict) or not entry.get("generated"):
                registered += 1
                continue
            if masked_id:
                lost += 1
                continue
            kind, _, number = str(entry.get("id", "")).partition("#")
            if kind not in KINDS or not number.isdigit() or int(number) < 1:
                raise UsageError(
                    f"report {path!r} test {n}: {str(entry.get('id'))[:40]!r} is not a "
                    "canary id (KIND#N)"
                )
            canary = factory.nth(kind, int(number))
            canaries.append(dataclasses.replace(canary, id=f"{canary.id}@{test}"))
    return canaries, registered, lost


def _total_size(targets: list[str | None]) -> int | None:
    """Bytes to scan, or None when unknown: stdin, or a FIFO or device named on the
    command line (``<(kubectl logs ...)`` may stream gigabytes)."""
    total = 0
    for path in targets:
        if path is None:
            return None
        try:
            status = os.stat(path)
        except OSError:
            continue  # reported when it is read
        if not stat.S_ISREG(status.st_mode):
            return None
        total += status.st_size
    return total


def _walk(path: str, special: list[str], errors: list[str]) -> Iterator[str]:
    """``path`` itself (a file, a FIFO, ``/dev/stdin``: what the user named is read), or
    every regular file below a directory. Below a directory, a FIFO, socket or device is
    listed in ``special`` instead: opening a FIFO nobody writes to would wait forever. A
    directory that cannot be listed is an error, never silently left out."""
    if not os.path.isdir(path):
        yield path
        return

    def unlisted(exc: OSError) -> None:
        errors.append(f"cannot list {exc.filename}: {exc.strerror}")

    for root, dirs, files in os.walk(path, onerror=unlisted):
        dirs.sort()
        for name in sorted(files):
            entry = os.path.join(root, name)
            if os.path.isfile(entry) or not os.path.exists(entry):  # dangling: say so
                yield entry
            else:
                special.append(entry)


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="leakcheck",
        description="Prove that secrets do not leak from AI-agent tool gateways.",
    )
    parser.add_argument("--version", action="version", version=f"leakcheck {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    scan = commands.add_parser(
        "scan",
        help="search files for every form of known secrets",
        description="Search files, directories (recursively) or stdin ('-') for every "
        "encoded or partial form of the secrets in --secrets-file. Exit 0 when clean, "
        "1 on findings, 2 on usage or I/O errors.",
    )
    scan.add_argument(
        "--secrets-file",
        metavar="FILE",
        help="one secret per line (UTF-8), or a .json list; secrets are never taken from argv",
    )
    scan.add_argument(
        "--canaries-from",
        metavar="REPORT",
        help="also search for every canary a pytest run planted, rebuilt from its "
        "--leakcheck-report JSON (which holds the seed and canary ids, never a value)",
    )
    scan.add_argument("--format", choices=sorted(RENDERERS), default="text")
    scan.add_argument("--output", "-o", metavar="FILE", help="write the report here")
    scan.add_argument(
        "--decode",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="also decode percent, base64 and hex runs (2 layers) to find chains such as "
        "base64-of-JSON; off by default (see README for the cost)",
    )
    scan.add_argument("--engine", choices=("auto", *BACKENDS), default="auto")
    scan.add_argument("paths", nargs="+", metavar="PATH", help="file, directory or '-'")
    commands.add_parser("kinds", help="list the kinds of canary leakcheck generates")
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
    return parser


def _review(args: argparse.Namespace) -> int:
    # imported here: pytest and the snapshot machinery only for this command
    from .snapshots import SnapshotError, review

    root = Path(args.dir)
    if not root.is_dir():
        raise UsageError(f"--dir {args.dir!r} is not a directory")
    secrets = load_secrets(args.secrets_file) if args.secrets_file else []
    decision = "accept" if args.accept_all else "reject" if args.reject_all else None
    try:
        interactive = decision is None and sys.stdin.isatty()
    except (AttributeError, ValueError):
        interactive = False
    try:
        return review(root, decision=decision, interactive=interactive, secrets=secrets)
    except SnapshotError as exc:
        raise UsageError(str(exc)) from None


def _schema(version: str) -> int:
    # imported here: the scanner commands need none of the contract module
    from .contract import SCHEMA_VERSIONS, load_schema

    if version not in SCHEMA_VERSIONS:
        raise UsageError(
            f"unknown schema version {version!r}; known versions: {', '.join(SCHEMA_VERSIONS)}"
        )
    sys.stdout.write(json.dumps(load_schema(version), indent=2, ensure_ascii=False) + "\n")
    return EXIT_CLEAN


def _scan(args: argparse.Namespace, out: Path | None) -> int:
    if not args.secrets_file and not args.canaries_from:
        raise UsageError("give --secrets-file FILE, --canaries-from REPORT, or both")
    secrets = load_secrets(args.secrets_file) if args.secrets_file else []
    if args.canaries_from:
        canaries, registered, lost = load_canaries(args.canaries_from)
        if registered and not args.secrets_file:
            print(
                f"leakcheck: note: {registered} secret(s) that tests registered themselves "
                "cannot be rebuilt from the report: pass them with --secrets-file",
                file=sys.stderr,
            )
        if lost:
            print(
                f"leakcheck: warning: {lost} canary(ies) cannot be rebuilt: their test's id "
                "holds a secret and is masked in the report (keep secrets out of test ids)",
                file=sys.stderr,
            )
        if not canaries and not secrets:
            raise UsageError(f"report {args.canaries_from!r} lists no canary to search for")
        secrets += canaries
    # what to read, first: its size lets "auto" pick the engine that finishes first
    targets: list[str | None] = []  # None: stdin
    errors: list[str] = []
    special: list[str] = []
    for arg in args.paths:
        if arg == "-":
            targets.append(None)
        elif not os.path.exists(arg):
            errors.append(f"no such file or directory: {arg}")
        else:
            targets += _walk(arg, special, errors)
    try:
        scanner = Scanner(
            secrets, decode=args.decode, backend=args.engine, input_bytes=_total_size(targets)
        )
    except RuntimeError as exc:
        raise UsageError(str(exc)) from None
    errors = [scanner.mask(error) for error in errors]
    for path in special:
        print(
            scanner.mask(f"leakcheck: note: not read (a FIFO, socket or device): {path}"),
            file=sys.stderr,
        )
    findings: list[Finding] = []
    sources = 0
    for path in targets:
        if path is None:
            sources += 1
            findings += scanner.scan_stream(sys.stdin.buffer, "<stdin>")
            continue
        try:
            with open(path, "rb") as stream:
                sources += 1
                # a path may hold a secret (a directory named after a user): masked
                findings += scanner.scan_stream(stream, scanner.mask(path))
        except OSError as exc:
            errors.append(scanner.mask(f"cannot read {path}: {exc.strerror}"))
    summary = ScanSummary(
        findings=findings,
        sources=sources,
        secrets=[(s.id, s.kind) for s in secrets],
        needles=scanner.needle_count,
        engine=scanner.engine.name,
        decode=args.decode,
        errors=errors,
    )
    report = RENDERERS[args.format](summary)
    if out is not None:
        try:
            out.write_text(report, encoding="utf-8")
        except OSError as exc:
            raise UsageError(
                scanner.mask(f"cannot write report {str(out)!r}: {exc.strerror}")
            ) from None
        print(
            scanner.mask(f"leakcheck: {len(findings)} findings, report written to {out}"),
            file=sys.stderr,
        )
    else:
        sys.stdout.write(report)
    if errors:
        if out is not None or args.format != "text":
            for error in errors:
                print(f"leakcheck: error: {error}", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_FINDINGS if findings else EXIT_CLEAN


def main(argv: Sequence[str] | None = None) -> int:
    parser = _build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "scan":
            return _scan(args, Path(args.output) if args.output else None)
        if args.command == "kinds":
            for kind in KINDS.values():
                print(f"{kind.name:<16} {kind.secret_class.value:<8} {kind.description}")
            return EXIT_CLEAN
        if args.command == "schema":
            return _schema(args.version)
        if args.command == "review":
            return _review(args)
        parser.print_help()
        return EXIT_ERROR
    except UsageError as exc:
        print(f"leakcheck: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_ERROR


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
