"""Cost of the pytest plugin on a suite of small realistic tests, measured in one run.

Generates a suite of N tests (default 1,000): each calls a small gateway over httpx with a
mocked transport, logs a few lines and returns an error envelope. The same suite is timed
four ways, each the best of --repeat runs (the modes take turns, so that a burst of load
from elsewhere does not fall on one mode only):

  off     the plugin not loaded (-p no:leakcheck); secrets are plain random strings
  unused  the plugin on, the tests do not request the fixture
  empty   the plugin on, the fixture requested, no secret registered
  three   the plugin on, three canaries per test (bearer, api_key, hostname)

A second suite (``--suite mcp``) is the example MCP server's: each test builds the careful
example server (``examples.mcp_careful_server``, fastmcp ``from_openapi`` over httpx2)
with its credentials, calls a tool through ``fastmcp.Client`` in memory against an upstream
that answers 401, and exposes the ``CallToolResult``; in ``empty`` mode its three
credentials are plain random strings (the fixture's sinks and capture with nothing to
look for: the floor under the three-canary row).

Targets (issues 3 and 13): tests that do not use the fixture <= 1.10x the plugin-off wall
time; <= 1.5 ms added per test with three canaries; the MCP suite <= 1.10x. Wall time is
the target; the CPU time of the pytest process (user + system) is printed beside it,
steadier on a shared machine.

``--shares`` then runs the MCP suite once more, plugin on, with each test taking one of
the variants below in turn (test n the variant n mod 7, in one pytest process: a burst of
load falls on every variant alike) and prints each variant's median time per test
(``pytest_runtest_protocol``, setup to teardown, the verdict included) against ``as is``:
what each piece of the remaining cost is. The variants patch the SDK and the log sink in
the bench's conftest only; none of them is an option of the plugin.

  as is               the plugin as shipped
  no stacktrace       Span.record_exception without exception.stacktrace: neither the
                      SDK's formatting nor its scan
  stacktrace unread   the SDK formats it, the otel sink does not yield it: its scan only
  levels as set       Logger.isEnabledFor as the app set it while the log sink runs:
                      records below a logger's level are not made (the strict default's
                      share: DEBUG records of fastmcp, mcp, asyncio)
  no otel sink        skip_sinks opentelemetry (spans are still recorded: the provider is
                      set once per process): collecting and scanning the spans
  no log sink         skip_sinks log record
  neither sink        skip_sinks both

Bytecode is cached as on a developer's machine (``PYTHONPYCACHEPREFIX`` in the run's
temporary directory, one unmeasured warm-up run per mode): with ``PYTHONDONTWRITEBYTECODE``
set, every run would recompile each module pytest rewrites or imports fresh, a fixed cost
of the environment, not of the plugin.

``--instructions [TESTS]`` then counts, under callgrind, the instructions of one run of a
small suite of TESTS tests (200) plugin off and with three canaries: a figure the load of
a shared machine does not move, for comparing two trees where wall times drift by more
than the change (``PYTHONPATH`` at a worktree of the other: it comes first).
``--mcp-instructions [TESTS]`` does the same for the MCP suite (60 tests; off, empty and
three), whose wall-time ratio moves the most from one run to the next.

    python bench/plugin_overhead.py [--tests 1000] [--mcp-tests 300] [--repeat 3]
                                    [--suite small|mcp|both|none] [--shares]
                                    [--instructions [TESTS]] [--mcp-instructions [TESTS]]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the examples package, for the MCP suite

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


MCP_SUITE = """
import asyncio, os, secrets
import httpx2
import pytest
from fastmcp import Client

from examples.mcp_careful_server import build_server

MODE = os.environ["LEAKCHECK_BENCH_MODE"]


def upstream(request):
    return httpx2.Response(401, json={"error": "invalid_token"})


async def call(server):
    async with Client(server) as client:
        return await client.call_tool("create_deployment", {"repo": "web"}, raise_on_error=False)


@pytest.mark.parametrize("n", range(COUNT))
def test_mcp_tool(n, lc):
    if MODE == "empty":  # the fixture's sinks and strict capture, no secret to look for
        token, key, host = (secrets.token_urlsafe(24) for _ in range(3))
    else:
        token, key, host = lc.secret("bearer"), lc.secret("api_key"), lc.secret("hostname")
    server = build_server(
        f"https://{host}/", token=token, headers={"X-Api-Key": key},
        transport=httpx2.MockTransport(upstream),
    )
    result = asyncio.run(call(server))
    lc.expose(result, "tool result")
    assert result.is_error
"""

SHARES_CONFTEST = """
import logging, os, statistics, time

import pytest
from opentelemetry.sdk import trace as sdk_trace

from leakcheck import capture
from leakcheck.plugins import otel_sink

VARIANTS = ("as is", "no stacktrace", "stacktrace unread", "levels as set", "no otel sink",
            "no log sink", "neither sink")
SKIPS = {"no otel sink": ["opentelemetry"], "no log sink": ["log record"],
         "neither sink": ["opentelemetry", "log record"]}
TIMES = {v: [] for v in VARIANTS}
RECORD = sdk_trace.Span.record_exception
SPAN = otel_sink.OpenTelemetrySink._span
START = capture.LoggingSink.start
ENABLED = logging.Logger.isEnabledFor


def no_stacktrace(self, exception, attributes=None, timestamp=None, escaped=False):
    self.add_event("exception", {"exception.type": type(exception).__name__,
                                 "exception.message": str(exception)}, timestamp)


def unread(self, span, group):
    return (c for c in SPAN(self, span, group) if "stacktrace" not in c.path)


def levels_as_set(self):
    START(self)
    logging.Logger.isEnabledFor = ENABLED


def apply(v):
    sdk_trace.Span.record_exception = no_stacktrace if v == "no stacktrace" else RECORD
    otel_sink.OpenTelemetrySink._span = unread if v == "stacktrace unread" else SPAN
    capture.LoggingSink.start = levels_as_set if v == "levels as set" else START


def pytest_collection_modifyitems(items):
    for n, item in enumerate(items):
        item.lc_variant = v = VARIANTS[n % len(VARIANTS)]
        if v in SKIPS:
            item.add_marker(pytest.mark.leakcheck(skip_sinks=dict.fromkeys(SKIPS[v], "bench")))


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    apply(item.lc_variant)
    start = time.perf_counter()
    yield
    TIMES[item.lc_variant].append(time.perf_counter() - start)
    apply("as is")


def pytest_terminal_summary(terminalreporter):
    base = statistics.median(TIMES["as is"][2:])
    for v in VARIANTS:
        median = statistics.median(TIMES[v][2:])
        terminalreporter.write_line(
            f"SHARE {v}|{median * 1000:.2f}|{(base - median) * 1000:.2f}|{len(TIMES[v]) - 2}")
"""


def _pythonpath() -> str:
    """The suites' ``PYTHONPATH``: the caller's first, then this tree (the examples
    package). A caller's ``PYTHONPATH`` at a worktree of another commit measures that
    commit's leakcheck (this tree came first before, and such a comparison measured this
    tree twice)."""
    return os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH", ""), str(ROOT)]))


MODES = ("off", "unused", "empty", "three")
MCP_MODES = ("off", "unused", "empty", "three")


def run(suite: Path, mode: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one pytest run of the suite."""
    env = {
        **os.environ,
        "LEAKCHECK_BENCH_MODE": mode,
        "PYTHONPYCACHEPREFIX": str(suite.parent / "pycache"),
        "PYTHONPATH": _pythonpath(),
    }
    env.pop("PYTHONDONTWRITEBYTECODE", None)
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


def instructions(root: Path, count: int, suite: str = "small") -> dict[str, float] | None:
    """Instructions of one pytest run of a suite of ``count`` tests under callgrind, plugin
    off and with three canaries (the MCP suite: and the fixture with no secret, its
    floor): a count that the machine's load does not move, for telling a change of a few
    percent from noise (this machine's plugin-off run took 1.8 to 5.7 s in one hour; the
    MCP suite's three-canary ratio read 1.18x to 2.01x in one afternoon). Hash seed and
    canary seed fixed, so that two trees run the same work; a run's bytecode cached by an
    unmeasured run first. What it does not count: time lost to memory (a cache miss is one
    instruction; the collector's walks are mostly that), and the wall time the targets are
    stated in. None when valgrind is not installed."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        print("instructions: valgrind is not installed; not counted")
        return None
    where = root / f"instructions-{suite}"
    where.mkdir()
    (where / "conftest.py").write_text(CONFTEST)
    test_file = where / ("test_suite.py" if suite == "small" else "test_mcp_suite.py")
    test_file.write_text((SUITE if suite == "small" else MCP_SUITE).replace("COUNT", str(count)))
    modes = ("off", "three") if suite == "small" else ("off", "empty", "three")
    counted: dict[str, int] = {}
    # the plugin-off run again with a third of the tests: a test's own instructions apart
    # from the start-up's (fastmcp's imports are most of a short MCP run)
    third = where / f"third_{test_file.name}"
    third.write_text(test_file.read_text().replace(f"range({count})", f"range({count // 3})"))
    for mode, path in [*((m, test_file) for m in modes), ("off-third", third)]:
        env = {
            **os.environ,
            "LEAKCHECK_BENCH_MODE": mode.partition("-")[0],
            "PYTHONHASHSEED": "0",
            "PYTHONPYCACHEPREFIX": str(root / "pycache"),
            "PYTHONPATH": _pythonpath(),
        }
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        pytest_args = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p"]
        pytest_args += ["no:cacheprovider", "-x", str(path)]
        off = mode.startswith("off")
        pytest_args += ["-p", "no:leakcheck"] if off else ["--leakcheck-seed=13"]
        warm = subprocess.run(pytest_args, cwd=where, env=env, capture_output=True, text=True)
        if warm.returncode != 0:
            sys.exit(f"instructions: the {mode} suite failed:\n{warm.stdout[-2000:]}")
        measured = subprocess.run(
            [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", *pytest_args],
            cwd=where, env=env, capture_output=True, text=True,
        )  # fmt: skip
        found = re.search(r"Collected : (\d+)", measured.stderr)
        if measured.returncode != 0 or found is None:
            sys.exit(f"instructions: the {mode} run failed:\n{measured.stderr[-2000:]}")
        counted[mode] = int(found.group(1))
    off = counted["off"]
    per_test = (off - counted["off-third"]) / (count - count // 3)
    print(f"instructions, {suite} suite of {count} tests under callgrind (seeds fixed)")
    print(
        f"  off {off / 1e6:,.0f} M: {per_test / 1e6:.2f} M a test, "
        f"start-up {(off - count * per_test) / 1e6:,.0f} M"
    )
    for mode in modes[1:]:
        added = (counted[mode] - off) / count
        print(
            f"  {mode} {counted[mode] / 1e6:,.0f} M: {added / 1e6:.2f} M added a test, "
            f"{(per_test + added) / per_test:.2f}x a test's, {counted[mode] / off:.2f}x the run"
        )
    return {
        "tests": count,
        **counted,
        "per_test_off": per_test,
        "added": (counted["three"] - off) / count,
    }


def shares(root: Path, count: int) -> dict[str, dict[str, float]]:
    """Each variant's median ms per test and how much less than ``as is`` (see --shares)."""
    where = root / "shares"
    where.mkdir()
    (where / "conftest.py").write_text(CONFTEST + SHARES_CONFTEST)
    suite = where / "test_mcp_suite.py"
    suite.write_text(MCP_SUITE.replace("COUNT", str(count)))
    env = {
        **os.environ,
        "LEAKCHECK_BENCH_MODE": "three",
        "PYTHONPYCACHEPREFIX": str(root / "pycache"),
        "PYTHONPATH": _pythonpath(),
    }
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider"]
    result = subprocess.run(
        [*args, "-x", str(suite)], cwd=where, env=env, capture_output=True, text=True
    )
    if result.returncode != 0:
        sys.exit(f"shares run failed:\n{result.stdout[-2000:]}{result.stderr[-2000:]}")
    found: dict[str, dict[str, float]] = {}
    print(f"shares of the MCP suite's cost, plugin on, {count} tests interleaved (median)")
    print(f"  {'variant':<20}{'ms/test':>9}{'saves ms':>10}{'tests':>7}")
    for line in result.stdout.splitlines():
        if line.startswith("SHARE "):
            name, median, saved, tests = line[6:].split("|")
            found[name] = {"ms_per_test": float(median), "saves_ms": float(saved)}
            print(f"  {name:<20}{float(median):>9.2f}{float(saved):>10.2f}{tests:>7}")
    return found


def measure(
    suite: Path, modes: tuple[str, ...], repeat: int
) -> tuple[dict[str, float], dict[str, float]]:
    """Best wall and CPU seconds of each mode, after one unmeasured warm-up run of each
    (the modes take turns, so that a burst of load from elsewhere does not fall on one)."""
    for mode in modes:
        run(suite, mode)
    runs: dict[str, list[tuple[float, float]]] = {mode: [] for mode in modes}
    for _ in range(repeat):
        for mode in modes:
            runs[mode].append(run(suite, mode))
    wall = {mode: min(w for w, _ in results) for mode, results in runs.items()}
    cpu = {mode: min(c for _, c in results) for mode, results in runs.items()}
    return wall, cpu


def table(title: str, count: int, wall: dict[str, float], cpu: dict[str, float]) -> None:
    print(title)
    print(
        f"  {'mode':<8}{'wall s':>8}{'ratio':>8}{'ms/test':>9}"
        f"{'cpu s':>9}{'ratio':>8}{'ms/test':>9}"
    )
    for mode in wall:
        w, c = wall[mode], cpu[mode]
        print(
            f"  {mode:<8}{w:>8.2f}{w / wall['off']:>7.2f}x"
            f"{(w - wall['off']) / count * 1000:>9.2f}"
            f"{c:>9.2f}{c / cpu['off']:>7.2f}x{(c - cpu['off']) / count * 1000:>9.2f}"
        )


def verdict(name: str, ok: bool, figure: str) -> str:
    return f"{name}: {'PASS' if ok else 'MISS'} ({figure})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tests", type=int, default=1000)
    parser.add_argument("--mcp-tests", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--suite",
        choices=("small", "mcp", "both", "none"),
        default="both",
        help="the suites timed (none: only --shares or --instructions)",
    )
    parser.add_argument(
        "--shares",
        action="store_true",
        help="then run the MCP suite once with each piece of the cost left out in turn",
    )
    parser.add_argument(
        "--mcp-instructions",
        type=int,
        nargs="?",
        const=60,
        default=0,
        metavar="TESTS",
        help="then count the instructions of the MCP suite of TESTS tests (60), plugin off, "
        "fixture with no secret and three canaries, under callgrind (some 4 minutes)",
    )
    parser.add_argument(
        "--instructions",
        type=int,
        nargs="?",
        const=200,
        default=0,
        metavar="TESTS",
        help="then count the instructions of a small suite of TESTS tests (200), plugin off "
        "and with three canaries, under callgrind (valgrind): a figure load does not move",
    )
    args = parser.parse_args()
    results: dict[str, object] = {"load_average_start": os.getloadavg()}
    targets = []
    with tempfile.TemporaryDirectory(prefix="leakcheck-overhead-") as tmp:
        root = Path(tmp)
        (root / "conftest.py").write_text(CONFTEST)
        if args.suite in ("small", "both"):
            suite = root / "test_suite.py"
            suite.write_text(SUITE.replace("COUNT", str(args.tests)))
            wall, cpu = measure(suite, MODES, args.repeat)
            table(f"small tests: {args.tests}, best of {args.repeat}", args.tests, wall, cpu)
            unused = wall["unused"] / wall["off"]
            added = (wall["three"] - wall["off"]) / args.tests * 1000
            targets += [
                verdict("unused <= 1.10x", unused <= 1.10, f"{unused:.2f}x"),
                verdict(
                    "three <= 1.5 ms/test",
                    added <= 1.5,
                    f"{added:.2f} ms, {wall['three'] / wall['off']:.2f}x",
                ),
            ]
            results["small"] = {"tests": args.tests, "seconds": wall, "cpu_seconds": cpu}
        if args.suite in ("mcp", "both"):
            suite = root / "test_mcp_suite.py"
            suite.write_text(MCP_SUITE.replace("COUNT", str(args.mcp_tests)))
            wall, cpu = measure(suite, MCP_MODES, args.repeat)
            table(
                f"example MCP suite: {args.mcp_tests}, best of {args.repeat}",
                args.mcp_tests, wall, cpu,
            )  # fmt: skip
            ratio = wall["three"] / wall["off"]
            targets.append(verdict("MCP suite <= 1.10x", ratio <= 1.10, f"{ratio:.2f}x"))
            results["mcp"] = {"tests": args.mcp_tests, "seconds": wall, "cpu_seconds": cpu}
        if args.shares:
            results["mcp_shares"] = shares(root, max(args.mcp_tests, 7 * 60))
        if args.instructions:
            results["instructions"] = instructions(root, args.instructions)
        if args.mcp_instructions:
            results["mcp_instructions"] = instructions(root, args.mcp_instructions, "mcp")
    results["load_average_end"] = os.getloadavg()
    if targets:
        print("  targets: " + "; ".join(targets))
    out = Path(__file__).parent / "out"
    out.mkdir(exist_ok=True)
    (out / "plugin_overhead.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
