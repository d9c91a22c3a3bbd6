"""The leaky example MCP server as a child process over stdio, every stage with the base
credential: it fails where its mistakes are, as in process."""

from examples.mcp_targets import leaky_stdio
from leakcheck.matrix import stage_matrix

test_mcp_leaky_stdio = stage_matrix(leaky_stdio, name="test_mcp_leaky_stdio")
