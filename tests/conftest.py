"""Shared fixtures: reproducible canaries, the self-scan check, inner pytest runs.

``self_scan(text, secrets)`` asserts that no form of any secret appears in ``text`` (str or
bytes): the raw values by plain substring search, every other form with a decoding scanner.
Its failure message names secret ids, forms and locations, never a value.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import importlib.util
import json
import logging
import os
import random
import re
import string
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from leakcheck import CanaryFactory, Scanner, Secret
from leakcheck.extensions import WATCHED_LIBRARIES, load_plugins

# pytester restores sys.modules after each in-process run: load the integrations (and their
# libraries) here, once, rather than in every inner run. The bundled sinks load only once
# their library is imported (extensions.WATCHED_LIBRARIES): import them all first.
for _library in WATCHED_LIBRARIES.values():
    with contextlib.suppress(ImportError):
        importlib.import_module(_library)
load_plugins()

#: Inner pytest runs load the leakcheck plugin through its entry point; unrelated plugins
#: stay out (speed, and no outer state such as random order leaks in).
QUIET_INNER_ARGS = (
    "-p", "no:randomly", "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
    "-p", "no:xdist", "-p", "no:anyio", "-p", "no:respx",
)  # fmt: skip


@pytest.fixture(scope="session", autouse=True)
def _children_keep_bytecode(tmp_path_factory: pytest.TempPathFactory) -> Iterable[None]:
    """Inner pytest runs in a subprocess compile leakcheck, its plugins and the examples
    once per session, into the session's temporary directory (shared by the xdist workers:
    a worker's is under it), instead of from source in each run (about 1.1 s of each one's
    2 s where ``PYTHONDONTWRITEBYTECODE`` is set, as on CI machines). Nothing is written into
    the repository; the environment is restored at the session's end."""
    base = tmp_path_factory.getbasetemp()
    session = base.parent if base.name.startswith("popen-gw") else base
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
        patch.setenv("PYTHONPYCACHEPREFIX", str(session / "pycache"))
        yield


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """``pytester`` whose in-process runs keep their log records to themselves: the outer
    test's log capture would otherwise show the inner canaries, unmasked, if it failed."""
    inline_run = pytester.inline_run

    def isolated(*args: Any, **kwargs: Any) -> Any:
        outer = logging.root.handlers[:]
        logging.root.handlers[:] = []
        try:
            return inline_run(*args, **kwargs)
        finally:
            logging.root.handlers[:] = outer

    monkeypatch.setattr(pytester, "inline_run", isolated)
    return pytester


#: Every canary is derived from this seed and the test's node id; set LEAKCHECK_SEED to vary.
SEED = os.environ.get("LEAKCHECK_SEED", "leakcheck-tests-1")


@pytest.fixture
def canaries(request: pytest.FixtureRequest) -> CanaryFactory:
    """A ``CanaryFactory`` seeded per test, so a failure replays identically."""
    return CanaryFactory(seed=SEED, namespace=request.node.nodeid)


#: Past this many secrets the self-scan searches with the automaton: hyperscan compiled an
#: example grid's 1,548 canaries (every form, decoding on) in 7.6 s, the automaton in 1.7 s,
#: and the texts checked here are a few megabytes (tests/test_engine.py holds the two
#: engines to the same hits).
AUTOMATON_FROM_SECRETS = 64


@functools.lru_cache(maxsize=32)
def _checker(secrets: tuple[Secret, ...]) -> Scanner:
    backend = "ahocorasick" if len(secrets) > AUTOMATON_FROM_SECRETS else "auto"
    return Scanner(secrets, decode=True, backend=backend)


def brute_force(patterns: list[bytes], data: bytes) -> Counter[tuple[int, int]]:
    """Every (pattern index, end offset), overlapping occurrences included: what an
    engine must find, by ``bytes.find``."""
    hits: Counter[tuple[int, int]] = Counter()
    for index, pattern in enumerate(patterns):
        start = data.find(pattern)
        while start >= 0:
            hits[(index, start + len(pattern))] += 1
            start = data.find(pattern, start + 1)
    return hits


#: The characters of the random user tokens below.
ALNUM = string.ascii_letters + string.digits


def random_tokens(
    count: int, seed: int, *, length: int = 32, prefixes: tuple[str, ...] = ()
) -> list[str]:
    """``count`` random user tokens of ``length`` letters and digits, each behind one of
    ``prefixes`` (a family's public head) when given; the same for the same seed."""
    rng = random.Random(seed)
    return [
        (rng.choice(prefixes) if prefixes else "")
        + "".join(rng.choice(ALNUM) for _ in range(length))
        for _ in range(count)
    ]


def scan_report(tmp_path: Path, tokens: list[str], log: str, *extra: str) -> str:
    """``leakcheck scan --format json`` of ``log`` (written to ``app.log``) for ``tokens``
    (a secrets file, one a line), with ``extra`` options: the report's text. The exit
    code is checked against its findings."""
    secrets_file = tmp_path / "secrets.txt"
    secrets_file.write_text("\n".join(tokens) + "\n")
    target = tmp_path / "app.log"
    target.write_text(log)
    out = tmp_path / "report.json"
    from leakcheck.cli import main

    code = main(
        ["scan", "--secrets-file", str(secrets_file), "--format", "json", "-o", str(out)]
        + [*extra, str(target)]
    )
    text = out.read_text()
    assert code == (1 if json.loads(text)["findings"] else 0)
    return text


def self_scan(text: str | bytes, secrets: Iterable[Secret], what: str = "output") -> None:
    """Assert that no form of any of ``secrets`` appears in ``text``."""
    # pytest prints a failing frame's arguments: the text under test, unmasked
    __tracebackhide__ = True
    secrets = tuple(secrets)
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    raw = [s.id for s in secrets if s.value.encode("utf-8", "surrogatepass") in data]
    assert not raw, f"{what} holds the raw value of {raw}"
    if not secrets:
        return
    findings = _checker(secrets).scan(data)
    assert not findings, f"{what} leaks: " + "; ".join(
        f"{f.secret_id} as {f.form} at {f.line}:{f.column}" for f in findings
    )


# --- inner pytest runs ------------------------------------------------------------------------


def run_with_report(
    pytester: pytest.Pytester, seed: str, *args: str, report: str = "leakcheck-report.json"
) -> tuple[pytest.RunResult, dict[str, Any]]:
    """Run the inner suite in process (``-rA``, the given canary seed) and read its JSON
    report; an INTERNALERROR is a failure of ours, never a verdict."""
    path = pytester.path / report
    result = pytester.runpytest(
        "-p", "no:randomly", "-p", "no:hypothesispytest", "-rA",
        f"--leakcheck-seed={seed}", f"--leakcheck-report={path}", *args,
    )  # fmt: skip
    assert "INTERNALERROR" not in "\n".join(result.outlines + result.errlines)
    return result, json.loads(path.read_text(encoding="utf-8"))


def fault_canaries(seed: str, test: str, stage: str, via: str, placement: str) -> list[Secret]:
    """The canaries an inner ``test_inner.py::test`` made by forcing ``stage`` over ``via``
    with ``placement``, rebuilt from the seed and its node id (in the order it made them)."""
    from leakcheck.faults import make_fault
    from leakcheck.harness import LeakCheck

    check = LeakCheck(seed=seed, namespace=f"test_inner.py::{test}", sinks=[])
    make_fault(stage, via=via, placed=check.place(placement), secret=check.secret)
    return check.secrets


#: a failure (or setup/teardown error) header of pytest's terminal report
_FAILURE_HEADER = re.compile(r"^_{3,} (?:ERROR at \w+ of )?(\S+) _{3,}$")


def failure_section(result: pytest.RunResult, test: str) -> str:
    """What an inner run printed under ``test``'s failure header, up to the next header or
    summary line (``test`` as pytest names it there: ``test_x[param]``)."""
    lines, inside = [], False
    for line in result.outlines:
        header = _FAILURE_HEADER.match(line)
        if header or line.startswith("====="):
            inside = bool(header) and header[1] == test
            continue
        if inside:
            lines.append(line)
    return "\n".join(lines)


def inner_outcomes(result: pytest.RunResult) -> dict[str, str]:
    """``{test name: PASSED|FAILED|ERROR}`` from an inner run's ``-rA`` summary."""
    found = {}
    for line in result.outlines:
        word, _, rest = line.partition(" ")
        if word in ("PASSED", "FAILED", "ERROR") and "::" in rest:
            found[rest.split(" ")[0].split("::")[-1]] = word
    return found


def assert_inner_run_safe(
    pytester: pytest.Pytester,
    result: pytest.RunResult,
    secrets: list[Secret],
    ids: Iterable[str] = (),
) -> None:
    """No form of the inner run's secrets in its output; and, for each test in ``ids``, the
    sha256 proof it wrote matches the rebuilt canary (so the scan looked for the right one)."""
    self_scan("\n".join(result.outlines + result.errlines), secrets, "inner pytest output")
    for secret, test in zip(secrets, ids, strict=False):
        proof = pytester.path / f"proof-{test}.txt"
        digest = hashlib.sha256(secret.value.encode()).hexdigest()
        assert proof.read_text() == digest, "canary reconstruction differs"


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Server contexts: one whose certificate names another host, one from a CA the
    client does not trust; and a client context trusting the first CA."""
    import ssl

    import trustme

    ca, other_ca = trustme.CA(), trustme.CA()
    mismatch = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("other-host.example").configure_cert(mismatch)
    untrusted = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    other_ca.issue_cert("localhost").configure_cert(untrusted)
    client = ssl.create_default_context()
    ca.configure_trust(client)
    ca_file = tmp_path_factory.mktemp("ca") / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    return {"mismatch": mismatch, "untrusted": untrusted, "client": client, "ca_file": ca_file}


#: tests that each run a whole example matrix in a subprocess (30 to 70 s): started first,
#: so that under ``-n 2`` they overlap the many short tests instead of forming a tail
_LONG_RUNNING = (
    "tests/test_mcp_target.py::test_leaky_grid_half",
    "tests/test_examples_matrix.py::",
    "tests/test_mcp_target.py::test_careful_server_passes_every_case",
    "tests/test_mcp_target.py::test_leaky_server_fails_exactly_where_its_mistakes_are",
)
#: tests that read a grid's shared run (``run_example_matrix``): last, so that they find it
#: made rather than wait for it with a worker idle
_READING_SHARED_RUNS = ("tests/test_mcp_target.py::test_mocked_and_loopback_transports",)


def _order(item: pytest.Item) -> tuple[int, int]:
    long = next((i for i, p in enumerate(_LONG_RUNNING) if item.nodeid.startswith(p)), None)
    if long is not None:
        return (0, long)
    return (2, 0) if item.nodeid.startswith(_READING_SHARED_RUNS) else (1, 0)


@pytest.hookimpl(trylast=True)  # after pytest-randomly's shuffle; the same order on every worker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_order)


def run_example_matrix(
    module: str,
    tmp: str,
    *,
    seed: str,
    extra_args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    timeout: float = 600,
) -> tuple[int, str, dict[str, Any]]:
    """Run ``examples/<module>.py`` as a user runs it, serially in a subprocess, with a fixed
    seed and a JSON report in ``tmp``: (exit code, output, report). Under xdist the run is
    shared by the workers of the session (a file per module and arguments, made under a
    lock by the first worker that asks): a whole example grid takes a minute."""
    import fcntl
    from pathlib import Path

    # a worker's temporary directories are under popen-gwN, in the session's own directory
    # (pytest keeps the last three sessions' and removes the rest)
    worker = next((p for p in Path(tmp).resolve().parents if p.name.startswith("popen-gw")), None)
    if not os.environ.get("PYTEST_XDIST_TESTRUNUID") or worker is None:
        return _run_example_matrix(module, tmp, seed, extra_args, env, timeout)
    key = hashlib.sha256(json.dumps([module, seed, extra_args, env]).encode()).hexdigest()[:16]
    shared = worker.parent / "example-runs"
    shared.mkdir(exist_ok=True)
    done = shared / f"{module}-{key}.json"
    with open(shared / f"{module}-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.exists():
            result = _run_example_matrix(module, tmp, seed, extra_args, env, timeout)
            done.write_text(json.dumps(result))
        code, out, report = json.loads(done.read_text())
    return code, out, report


def _run_example_matrix(
    module: str,
    tmp: str,
    seed: str,
    extra_args: tuple[str, ...],
    env: dict[str, str] | None,
    timeout: float,
) -> tuple[int, str, dict[str, Any]]:
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    report = Path(tmp) / f"{module}.json"
    done = subprocess.run(
        [
            sys.executable, "-m", "pytest", f"examples/{module}.py", "-q",
            "-p", "no:randomly", "-p", "no:xdist", "-p", "no:cacheprovider", *extra_args,
            f"--leakcheck-seed={seed}", f"--leakcheck-report={report}",
        ],
        cwd=root, capture_output=True, text=True, timeout=timeout,
        env={**os.environ, **(env or {})},  # (bytecode: _children_keep_bytecode)
    )  # fmt: skip
    return done.returncode, done.stdout + done.stderr, json.loads(report.read_text())


def wrong_cases(
    by_case: dict[tuple[str, str, str], dict[str, Any]],
    expected_of: Any,
    observed_of: Any,
) -> list[str]:
    """Each case of a grid run whose failed assertions and leak places (``observed_of``
    its record) differ from what its mistakes show (``expected_of`` its operation, stage
    and placement), one line each; a case fails exactly when something is expected."""
    wrong = []
    for (op, stage, placement), record in sorted(by_case.items()):
        expected, observed = expected_of(op, stage, placement), observed_of(record)
        if observed != expected:
            wrong.append(
                f"{op}-{stage}-{placement}: missing {sorted(expected - observed)}, "
                f"unexpected {sorted(observed - expected)}"
            )
        assert (record["outcome"] == "failed") == bool(expected), (op, stage, placement)
    return wrong


def cases_of(report: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """A matrix run's report records by (operation, stage, placement)."""
    return {
        (r["matrix"]["operation"], r["matrix"]["stage"], r["matrix"]["placement"]): r
        for r in report["tests"]
    }


def bench_module(name: str) -> ModuleType:
    """``bench/<name>.py`` (the benchmarks are scripts, not a package), imported once."""
    module_name = f"leakcheck_bench_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    path = Path(__file__).resolve().parent.parent / "bench" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module
