"""``leakcheck schema``: the agent error envelope's JSON Schema, printed."""

from __future__ import annotations

import json

from ..errors import quoted
from .console import EXIT_CLEAN, UsageError, write_stdout

__all__ = ["schema_command"]


def schema_command(version: str) -> int:
    # imported here: the scanner commands need none of the contract module
    from ..contract import SCHEMA_VERSIONS, load_schema

    if version not in SCHEMA_VERSIONS:
        raise UsageError(
            f"unknown schema version {quoted(version)}; known versions: "
            + ", ".join(SCHEMA_VERSIONS)
        )
    write_stdout(json.dumps(load_schema(version), indent=2, ensure_ascii=False) + "\n")
    return EXIT_CLEAN
