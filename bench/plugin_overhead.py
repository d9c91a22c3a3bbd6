"""Cost of the pytest plugin on a suite of small realistic tests, measured in one run.

Generates a suite of N tests (default 1,000): each calls a small gateway over httpx with a
mocked transport, logs a few lines and returns an error envelope. The same suite is timed
three ways, each the best of --repeat runs:

  off    the plugin not loaded (-p no:leakcheck); secrets are plain random strings
  empty  the plugin on, the fixture requested, no secret registered
  three  the plugin on, three canaries per test (bearer, api_key, hostname)

Targets (issue 3): <= 1.10x the plugin-off wall time, <= 2 ms added per test.

    python bench/plugin_overhead.py [--tests 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
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

if MODE == "off":
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


def run(suite: Path, mode: str) -> float:
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
    start = time.perf_counter()
    result = subprocess.run(args, cwd=suite.parent, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(
            f"bench suite failed in mode {mode}:\n{result.stdout[-2000:]}{result.stderr[-2000:]}"
        )
    return elapsed


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
        times: dict[str, float] = {}
        for mode in ("off", "empty", "three"):
            times[mode] = min(run(suite, mode) for _ in range(args.repeat))
    off = times["off"]
    print(f"plugin overhead: {args.tests} tests, best of {args.repeat} runs (wall time)")
    print(f"  {'mode':<8}{'seconds':>9}{'ratio':>8}{'ms/test added':>16}")
    for mode, seconds in times.items():
        added = (seconds - off) / args.tests * 1000
        print(f"  {mode:<8}{seconds:>9.2f}{seconds / off:>7.2f}x{added:>15.2f}")
    three = times["three"]
    ratio, added = three / off, (three - off) / args.tests * 1000
    print(
        f"  target <= 1.10x: {'PASS' if ratio <= 1.10 else 'MISS'} ({ratio:.2f}x); "
        f"<= 2 ms/test: {'PASS' if added <= 2 else 'MISS'} ({added:.2f} ms)"
    )
    out = Path(__file__).parent / "out"
    out.mkdir(exist_ok=True)
    (out / "plugin_overhead.json").write_text(
        json.dumps(
            {"tests": args.tests, "seconds": times, "ratio_three": ratio, "ms_added_three": added},
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
