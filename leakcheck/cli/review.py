"""``leakcheck review``: pending snapshot differences, accepted or rejected (the snapshot
store imports no pytest, and neither does this command)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .console import UsageError, named, print_stderr, write_stdout
from .secrets_file import load_secrets

TYPE_CHECKING = False  # not typing's (its import is start-up), nor output's scanner here
if TYPE_CHECKING:
    from .output import Output

__all__ = ["review_command"]


def review_command(args: argparse.Namespace, output: Output) -> int:
    # imported here: the snapshot machinery only for this command (it imports no pytest)
    from ..snapshot_store import SnapshotError, review

    # (first: every message below names a path, masked with them; a pending file's name
    # is a snapshot's id, which a test may have made of a secret)
    secrets = load_secrets(args.secrets_file) if args.secrets_file else []
    output.use(secrets)
    root = Path(args.dir)
    if not root.is_dir():
        raise UsageError(f"--dir {named(args.dir)} is not a directory")
    if not (root / ".leakcheck").is_dir():
        # (run from a subdirectory, or given a directory that is not the rootdir: it said
        # "nothing pending" with pending differences one level up)
        found = next((d for d in root.resolve().parents if (d / ".leakcheck").is_dir()), None)
        if found is not None and args.dir != ".":
            raise UsageError(
                f"no .leakcheck/ in {named(args.dir)}, and {named(str(found))} has one: give "
                "--dir the pytest rootdir, where a run that saw drift wrote .leakcheck/pending"
            )
        if found is not None:  # (run from a subdirectory of the rootdir: as pytest finds it)
            said = f"leakcheck review: reviewing {named(str(found))} (its .leakcheck/)"
            print_stderr(output.mask_one(said))
            root = found
    decision = "accept" if args.accept_all else "reject" if args.reject_all else None
    try:
        interactive = decision is None and sys.stdin.isatty()
    except (AttributeError, ValueError):
        interactive = False
    try:
        code = review(
            root, decision=decision, interactive=interactive, secrets=secrets, out=_Stdout()
        )
    except SnapshotError as exc:
        raise UsageError(str(exc)) from None
    if code and decision is None and not interactive:
        print_stderr(
            "leakcheck review: standard input is not a terminal: nothing was asked; decide "
            "with --accept-all or --reject-all"
        )
    return code


class _Stdout:
    """Standard output for the review: a write that fails (a closed pipe, ``> /dev/full``)
    is the command's one-line error, not a traceback."""

    def write(self, text: str) -> None:
        write_stdout(text)
