"""The careful example gateway under the whole stage matrix with real sockets: HTTP stages
served by the loopback HTTP(S) server (real httpx/httpcore exception texts and log
records) instead of respx."""

from examples.targets import CarefulTarget
from leakcheck.matrix import stage_matrix


class CarefulOverLoopback(CarefulTarget):
    http_via = "loopback"


test_careful_gateway_loopback = stage_matrix(
    CarefulOverLoopback(), name="test_careful_gateway_loopback"
)
