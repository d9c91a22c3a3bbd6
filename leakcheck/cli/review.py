"""``leakcheck review``: pending snapshot differences, accepted or rejected (the snapshot
store imports no pytest, and neither does this command)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .console import UsageError
from .secrets_file import load_secrets

__all__ = ["review_command"]


def review_command(args: argparse.Namespace) -> int:
    # imported here: the snapshot machinery only for this command (it imports no pytest)
    from ..snapshot_store import SnapshotError, review

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
