"""How the example MCP servers are put under leakcheck's stage matrix: the lines a team
writes once for its own MCP server (``leakcheck.plugins.mcp_target``).

The servers (``mcp_careful_server``, ``mcp_leaky_server``) are ``FastMCP.from_openapi``
servers over the deployments API (``mcp_api``). As targets, their operations are their
tools (``create_deployment``, not repeatable; ``get_deployment``, repeatable, each with a
valid argument set), the credentials go in the way the servers take them (constructor
arguments in process, ``API_*`` environment variables over stdio), the API's URL is the
armed fault, and the contract is "MCP result" (a failure must come back as ``isError``
with a text), with no record and no gateway-side seam.

One matrix per test module (error-text snapshots are kept per module):

=====================================  =================================================
``test_mcp_matrix.py``                 careful, in process: every stage and placement
``test_mcp_leaky_matrix.py``           leaky, in process: fails where its mistakes are
``test_mcp_stdio_matrix.py``           careful over stdio: every stage of create_deployment,
                                       the base and the malformed credentials
``test_mcp_leaky_stdio_matrix.py``     leaky over stdio: the same cases
=====================================  =================================================

The HTTP stages are served by the loopback HTTP(S) server (real sockets, real httpx2
texts): in process by choice, over stdio by necessity (a child's client cannot be mocked;
the fault's ``child_environment()`` makes DNS, refused and TLS stages provable there).
Over stdio each case starts a server process (about two seconds), hence one tool, the base
credential (``authorization-header``) and the malformed ones (a trailing newline).

``python -m examples.mcp_targets`` (``make demo``) runs the four matrices under ``-n 2`` and
prints their grids.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from leakcheck.plugins.mcp_target import InProcessMcpTarget, StdioMcpTarget

from . import mcp_api, mcp_careful_server, mcp_leaky_server

__all__ = ["ENV", "KWARGS", "TOOLS", "careful", "careful_stdio", "in_process", "leaky",
           "leaky_stdio", "over_stdio"]  # fmt: skip

ROOT = Path(__file__).resolve().parent.parent

#: the servers' tools: which may be retried, and valid arguments for each
TOOLS: dict[str, Any] = {"repeatable": {"get_deployment"}, "arguments": mcp_api.TOOLS}

#: in process: the servers' constructor arguments (``mcp_api.ApiSettings``), from the case
KWARGS = {
    "url": "{auth_url}",
    "headers": "{auth_headers}",
    "query": "{auth_query}",
    "verify": "{verify}",
    "timeout": "{timeout}",
}

#: over stdio: the servers' environment, from the case (plain tracebacks on stderr:
#: fastmcp's rich ones take half a second each to render, with the same texts)
ENV = {
    "API_URL": "{auth_url}",
    "API_HEADERS": "{auth_headers}",
    "API_QUERY": "{auth_query}",
    "API_TIMEOUT": "{timeout}",
    "FASTMCP_ENABLE_RICH_TRACEBACKS": "false",
}


#: the client timeout the servers are given: the longest a test may wait, so that a loaded
#: machine still sends the request (and its fault fires) before a timeout stage's timeout
TIMEOUT = 0.5

#: over stdio: the base credential, and one read with a trailing newline (or CRLF), as a
#: mounted secret or an ``.env`` line gives it (those fit two stages)
STDIO_PLACEMENTS = [
    "authorization-header",
    "credential-trailing-newline",
    "credential-trailing-crlf",
]


def in_process(module: Any, **options: Any) -> InProcessMcpTarget:
    """A server module's ``build_server``, in process, HTTP stages on loopback sockets
    (unless ``http_via`` says otherwise)."""
    options.setdefault("http_via", "loopback")
    options.setdefault("timeout", TIMEOUT)
    return InProcessMcpTarget(module.build_server, kwargs=KWARGS, **TOOLS, **options)


def over_stdio(module: Any, **options: Any) -> StdioMcpTarget:
    """``python -m <module>`` over stdio: one tool, the base credential (a server process
    per case)."""
    options.setdefault("placements", STDIO_PLACEMENTS)
    options.setdefault("tools", ["create_deployment"])
    options.setdefault("timeout", TIMEOUT)
    return StdioMcpTarget(
        sys.executable, ["-m", module.__name__], cwd=ROOT, env=ENV, **TOOLS, **options
    )


# the careful grid under the mocked transport (respx intercepts httpx2; a timeout raises at
# once: 14 s instead of 67 s), which tests/test_mcp_target.py shows finds what loopback
# sockets find; it adds the exception-chain cases, which only a mock can inject. The leaky
# one on loopback: httpcore2's own DEBUG header traces exist only over a real connection.
careful = in_process(mcp_careful_server, http_via="respx")
leaky = in_process(mcp_leaky_server)
careful_stdio = over_stdio(mcp_careful_server)
leaky_stdio = over_stdio(mcp_leaky_server)


# --- make demo ------------------------------------------------------------------------------

#: module -> whether every case should pass
MATRICES = {
    "test_mcp_matrix": True,
    "test_mcp_leaky_matrix": False,
    "test_mcp_stdio_matrix": True,
    "test_mcp_leaky_stdio_matrix": False,
}


def sample_failure(output: str, limit: int = 16) -> str:
    """One case failure of a pytest output (masked by leakcheck already), as pytest
    printed it, without the captured-output parts: the first where the model was handed
    a secret, else the first; at most ``limit`` lines before its ``rerun:`` line."""
    failures = output.split("= FAILURES =", 1)[-1]
    sections = re.split(r"\n_+ \S.* _+\n", failures)[1:]  # one per test
    for section in sorted(sections, key=lambda text: "[LEAK] caller" not in text):
        lines = section.split("\n-----", 1)[0].splitlines()
        lines = [line for line in lines if line.startswith(("leakcheck", " ", "rerun:"))]
        rerun = [line for line in lines if line.startswith("rerun:")]
        body = [line for line in lines if not line.startswith("rerun:")]
        if len(body) > limit:
            body = [*body[:limit], "  ..."]
        return "sample failure:\n" + "\n".join("  " + line for line in [*body, *rerun])
    return ""


def demo() -> int:
    """Each MCP matrix under ``-n 2``, its grid, and whether it came out as expected
    (careful passes, leaky fails); pytest output and JSON reports in build/demo/."""
    from leakcheck.matrix import format_grid

    out = ROOT / "build" / "demo"
    out.mkdir(parents=True, exist_ok=True)
    unexpected = 0
    for module, should_pass in MATRICES.items():
        report = out / f"{module}.json"
        report.unlink(missing_ok=True)
        done = subprocess.run(
            [
                sys.executable, "-m", "pytest", f"examples/{module}.py", "-n", "2",
                "-p", "no:randomly", "-p", "no:cacheprovider", "-q", "--no-header",
                "--leakcheck-seed=demo-mcp-1", f"--leakcheck-report={report}",
            ],
            cwd=ROOT, capture_output=True, text=True, check=False,
            env={**os.environ, "FASTMCP_ENABLE_RICH_TRACEBACKS": "false"},
        )  # fmt: skip
        (out / f"{module}.txt").write_text(done.stdout + done.stderr, encoding="utf-8")
        records = json.loads(report.read_text("utf-8"))["tests"] if report.exists() else []
        failed = sum(1 for r in records if r.get("outcome") == "failed")
        verdict = "FAIL" if done.returncode else "ok"
        print(f"=== MCP server, {module}: {len(records)} cases, {failed} failed: {verdict} ===")
        if records:
            print(format_grid(records))
        if not should_pass:
            print(sample_failure(done.stdout))
        if (done.returncode == 0) != should_pass or not records:
            unexpected += 1
            print(f"unexpected: {module} should {'pass' if should_pass else 'fail'}")
    return 1 if unexpected else 0


if __name__ == "__main__":
    raise SystemExit(demo())
