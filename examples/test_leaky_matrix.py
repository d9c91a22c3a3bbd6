"""The leaky example gateway under the whole stage matrix: each of its mistakes fails the
cases that carry it (tests/test_examples_matrix.py lists which)."""

from examples.targets import LeakyTarget
from leakcheck.matrix import stage_matrix

test_leaky_gateway = stage_matrix(LeakyTarget(), name="test_leaky_gateway")
