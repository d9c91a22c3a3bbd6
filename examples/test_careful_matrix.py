"""The careful example gateway under the whole stage matrix: every case passes."""

from examples.targets import CarefulTarget
from leakcheck.matrix import stage_matrix

test_careful_gateway = stage_matrix(CarefulTarget(), name="test_careful_gateway")
