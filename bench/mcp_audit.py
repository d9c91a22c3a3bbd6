"""``leakcheck mcp`` on real servers: the time of a full audit of the bundled careful
example and its cost per case, the leaky and Node.js examples, and a third-party server
from PyPI that takes its credentials from the environment (mcp-atlassian).

    python bench/mcp_audit.py [careful] [leaky] [node] [atlassian] [--jobs N]
        [--atlassian-cmd /tmp/lc-thirdparty/bin/mcp-atlassian]

The third-party server is installed in a venv of its own, never in the project's:

    python -m venv /tmp/lc-thirdparty && /tmp/lc-thirdparty/bin/pip install mcp-atlassian

Each audit's JSON report goes to ``bench/out/mcp_<name>.json``; the grid, the verdict and
the time are printed. Findings of the third-party audit, checked by hand, are in
bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from leakcheck.audit import AuditError, audit_mcp_server, render  # noqa: E402
from leakcheck.audit.report import json_document  # noqa: E402

OUT = ROOT / "bench" / "out"

#: the examples' environment, as examples/mcp_targets.py gives it over stdio
EXAMPLE_ENV = {
    "API_URL": "{auth_url}",
    "API_HEADERS": "{auth_headers}",
    "API_QUERY": "{auth_query}",
    "API_TIMEOUT": "{timeout}",
    "FASTMCP_ENABLE_RICH_TRACEBACKS": "false",
}

#: mcp-atlassian against the fault server: Jira Server/Data Center with basic auth (a
#: literal user, the token a canary), read-only, retries off (with them a 429 waits the
#: upstream's Retry-After, longer than any call timeout), its HTTP timeout 1 s (its least)
ATLASSIAN_ENV = {
    "JIRA_URL": "{upstream}",
    "JIRA_USERNAME": "audit@example.com",
    "JIRA_API_TOKEN": "{bearer}",
    "JIRA_TIMEOUT": "1",
    "CONFLUENCE_URL": "{upstream}",
    "CONFLUENCE_USERNAME": "audit@example.com",
    "CONFLUENCE_API_TOKEN": "{bearer}",
    "CONFLUENCE_TIMEOUT": "1",
    "READ_ONLY_MODE": "true",
    "ATLASSIAN_RETRY_TOTAL": "0",
}
ATLASSIAN_TOOLS = ["jira_get_issue", "jira_search", "confluence_get_page", "confluence_search"]


def audits(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    node = shutil.which("node")
    return {
        "careful": {
            "command": [sys.executable, "-m", "examples.mcp_careful_server"],
            "env": EXAMPLE_ENV, "cwd": ROOT,
        },
        "leaky": {
            "command": [sys.executable, "-m", "examples.mcp_leaky_server"],
            "env": EXAMPLE_ENV, "cwd": ROOT,
        },
        "node": {
            "command": [node or "node", str(ROOT / "examples" / "mcp_node_server" / "server.js")],
            "env": {"NOTES_API_URL": "{upstream}", "NOTES_API_TOKEN": "{bearer}",
                    "NOTES_API_KEY": "{api_key}", "NOTES_API_TIMEOUT": "{timeout}"},
        },
        "atlassian": {
            "command": [args.atlassian_cmd],
            "env": ATLASSIAN_ENV, "tools": ATLASSIAN_TOOLS, "call_timeout": 20.0,
        },
    }  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("which", nargs="*", default=["careful"])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", default="bench-mcp-1")
    parser.add_argument("--atlassian-cmd", default="/tmp/lc-thirdparty/bin/mcp-atlassian")
    args = parser.parse_args()
    known = audits(args)
    OUT.mkdir(parents=True, exist_ok=True)
    status = 0
    for name in args.which:
        if name not in known:
            parser.error(f"unknown audit {name!r}; known: {', '.join(known)}")
        options = dict(known[name])
        command = options.pop("command")
        if not (os.path.exists(command[0]) or shutil.which(command[0])):
            print(f"=== {name}: skipped ({command[0]} is not installed)")
            continue
        started = time.monotonic()
        try:
            result = audit_mcp_server(
                command, seed=args.seed, jobs=args.jobs, call_timeout=options.pop(
                    "call_timeout", 20.0), **options,
            )  # fmt: skip
        except AuditError as exc:
            print(f"=== {name}: audit could not run: {exc}")
            status = 2
            continue
        wall = time.monotonic() - started
        ran = [c for c in result.cases if c.outcome.value != "not run"]
        per_case = sum(c.seconds for c in ran) / len(ran) if ran else 0.0
        (OUT / f"mcp_{name}.json").write_text(
            json.dumps(json_document(result), indent=2) + "\n", encoding="utf-8"
        )
        print(f"=== {name}: {len(result.cases)} cases, exit {result.exit_code}, {wall:.1f} s "
              f"wall with --jobs {args.jobs} ({wall / max(1, len(ran)):.2f} s per case of "
              f"wall time; {per_case:.2f} s per case in its process) ===")  # fmt: skip
        print(render(result, "text"))
    return status


if __name__ == "__main__":
    raise SystemExit(main())
