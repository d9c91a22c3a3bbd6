"""The leaky example MCP server in process, under the whole stage matrix: each of its
mistakes fails the cases that carry it (``tests/test_mcp_target.py`` lists which)."""

from examples.mcp_targets import leaky
from leakcheck.matrix import stage_matrix

test_mcp_leaky = stage_matrix(leaky, name="test_mcp_leaky")
