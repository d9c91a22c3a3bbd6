"""The careful example MCP server (``FastMCP.from_openapi`` over the deployments API) in
process, under the whole stage matrix: every case passes. ``examples/mcp_targets.py`` says
how it is wired; the leaky server and the stdio runs are the other ``test_mcp_*`` modules."""

from examples.mcp_targets import careful
from leakcheck.matrix import stage_matrix

test_mcp_careful = stage_matrix(careful, name="test_mcp_careful")
