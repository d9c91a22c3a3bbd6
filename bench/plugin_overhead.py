"""Cost of the pytest plugin on a suite of small realistic tests, measured in one run.

Generates a suite of N tests (default 1,000): each calls a small gateway over httpx with a
mocked transport, logs a few lines and returns an error envelope. The same suite is timed
four ways, each the best of --repeat runs (the modes take turns, so that a burst of load
from elsewhere does not fall on one mode only):

  off     the plugin not loaded (-p no:leakcheck); secrets are plain random strings
  unused  the plugin on, the tests do not request the fixture
  empty   the plugin on, the fixture requested, no secret registered
  three   the plugin on, three canaries per test (bearer, api_key, hostname)

Targets (issue 3): tests that do not use the fixture <= 1.10x the plugin-off wall time;
<= 2 ms added per test with three canaries. Wall time is the target; the CPU time of the
pytest process (user + system) is printed beside it, steadier on a shared machine.

    python bench/plugin_overhead.py [--tests 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CONFTEST = """
import os, secrets
import pytest

MODE = os.environ["LEAKCHECK_BENCH_MODE"]

class _Plain:
    def secret(self, kind="bearer"):
        return secrets.token_urlsafe(24)
    def expose(self, obj, name="tool response"):
        return obj

if MODE in ("off", "unused"):
    @pytest.fixture
    def lc():
        return _Plain()
else:
    @pytest.fixture
    def lc(leakcheck):
        return leakcheck
"""

SUITE = """
import logging, os
import httpx
import pytest

MODE = os.environ["LEAKCHECK_BENCH_MODE"]
log = logging.getLogger("gateway.http")


def upstream(request):
    return httpx.Response(401, json={"error": "invalid_token"})


class Gateway:
    def __init__(self, token):
        self.token = token
        self.client = httpx.Client(transport=httpx.MockTransport(upstream))

    def call(self, operation, payload):
        log.debug("calling %s", operation)
        response = self.client.post("https://api.example/deployments", json=payload,
                                    headers={"Authorization": f"Bearer {self.token}"})
        log.info("upstream answered %s", response.status_code)
        if response.status_code == 401:
            log.warning("auth failed for %s", operation)
            return {"ok": False, "code": "AUTH_FAILED", "action": "stop_and_report",
                    "retryable": False, "request_id": "act_0f3c9a", "http_status": 401}
        return {"ok": True}


@pytest.mark.parametrize("n", range(COUNT))
def test_gateway(n, lc):
    if MODE == "three":
        token = lc.secret("bearer")
        lc.secret("api_key")
        lc.secret("hostname")
    else:
        token = "t" * 24
    result = Gateway(token).call("create_deployment", {"repo": "web"})
    lc.expose(result)
    assert result["code"] == "AUTH_FAILED"
"""


MODES = ("off", "unused", "empty", "three")


def run(suite: Path, mode: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one pytest run of the suite."""
    env = {**os.environ, "LEAKCHECK_BENCH_MODE": mode, "PYTHONDONTWRITEBYTECODE": "1"}
    args = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:randomly",
        "-p",
        "no:cacheprovider",
        "-x",
    ]
    if mode == "off":
        args += ["-p", "no:leakcheck"]
    args.append(str(suite))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(args, cwd=suite.parent, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if result.returncode != 0:
        sys.exit(
            f"bench suite failed in mode {mode}:\n{result.stdout[-2000:]}{result.stderr[-2000:]}"
        )
    return elapsed, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tests", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="leakcheck-overhead-") as tmp:
        root = Path(tmp)
        (root / "conftest.py").write_text(CONFTEST)
        suite = root / "test_suite.py"
        suite.write_text(SUITE.replace("COUNT", str(args.tests)))
        runs: dict[str, list[tuple[float, float]]] = {mode: [] for mode in MODES}
        for _ in range(args.repeat):
            for mode in MODES:
                runs[mode].append(run(suite, mode))
    times = {mode: min(wall for wall, _ in results) for mode, results in runs.items()}
    cpu = {mode: min(c for _, c in results) for mode, results in runs.items()}
    print(f"plugin overhead: {args.tests} tests, best of {args.repeat} runs")
    print(
        f"  {'mode':<8}{'wall s':>8}{'ratio':>8}{'ms/test':>9}"
        f"{'cpu s':>9}{'ratio':>8}{'ms/test':>9}"
    )
    for mode in MODES:
        wall, c = times[mode], cpu[mode]
        print(
            f"  {mode:<8}{wall:>8.2f}{wall / times['off']:>7.2f}x"
            f"{(wall - times['off']) / args.tests * 1000:>9.2f}"
            f"{c:>9.2f}{c / cpu['off']:>7.2f}x{(c - cpu['off']) / args.tests * 1000:>9.2f}"
        )
    off = times["off"]
    unused_ratio = times["unused"] / off
    ratio, added = times["three"] / off, (times["three"] - off) / args.tests * 1000
    print(
        f"  targets: unused <= 1.10x: {'PASS' if unused_ratio <= 1.10 else 'MISS'} "
        f"({unused_ratio:.2f}x); three <= 2 ms/test: {'PASS' if added <= 2 else 'MISS'} "
        f"({added:.2f} ms, {ratio:.2f}x)"
    )
    out = Path(__file__).parent / "out"
    out.mkdir(exist_ok=True)
    (out / "plugin_overhead.json").write_text(
        json.dumps(
            {
                "tests": args.tests,
                "seconds": times,
                "cpu_seconds": cpu,
                "ratio_unused": unused_ratio,
                "ratio_three": ratio,
                "ms_added_three": added,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
