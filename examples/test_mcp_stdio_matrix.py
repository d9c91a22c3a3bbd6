"""The careful example MCP server as a child process over stdio (the official ``mcp`` SDK
client), every stage with the base credential, the HTTP stages on loopback sockets proven
inside the child: every case passes."""

from examples.mcp_targets import careful_stdio
from leakcheck.matrix import stage_matrix

test_mcp_careful_stdio = stage_matrix(careful_stdio, name="test_mcp_careful_stdio")
