"""``leakcheck mcp``: audit any MCP server from the outside, with no code.

The server is started as a plain command over stdio (any language), once per case, with
canaries templated into its environment and ``{upstream}`` pointing at the loopback fault
server; its tools are listed and called with arguments generated from their input schemas
(or pinned), under every HTTP failure stage and every placement that applies; what the
model sees (the tool result, log notifications) and what the operator sees (the server's
stderr, the MCP client's log, files under the case's HOME) is judged with the plugin's
policy. One module per concept:

* ``model``: ``ServerSpec``, ``ToolInfo``, ``CaseOutcome``, ``AuditResult``, ``AuditError``;
* ``server``: starting the server, listing its tools, one case's process
  (``AuditStdioTarget``, a ``StdioMcpTarget``);
* ``node_proof``: the loopback fault's child proof for a Node.js server;
* ``arguments``: valid arguments from a JSON input schema, or pinned in a file;
* ``run``: the tool x stage x placement loop (``audit_mcp_server``);
* ``report``: the grid, and text, JSON, SARIF and JUnit;
* ``testing``: ``mcp_audit_test``, a pytest helper that pins an audit.

Usage as a library::

    from leakcheck.audit import audit_mcp_server

    result = audit_mcp_server(["node", "server.js"],
                              env={"API_URL": "{upstream}", "API_TOKEN": "{bearer}"})
    assert result.exit_code == 0, render(result, "text")
"""

from __future__ import annotations

from .model import AuditError, AuditResult, CaseOutcome, Outcome, ServerSpec, ToolInfo, ToolStatus
from .report import FORMATS, format_grid, render
from .run import AUDIT_STAGES, HTTP_STAGES, audit_mcp_server, literal_secrets

__all__ = [
    "AUDIT_STAGES",
    "FORMATS",
    "HTTP_STAGES",
    "AuditError",
    "AuditResult",
    "CaseOutcome",
    "Outcome",
    "ServerSpec",
    "ToolInfo",
    "ToolStatus",
    "audit_mcp_server",
    "format_grid",
    "literal_secrets",
    "render",
]
