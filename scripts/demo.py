"""`make demo`: the stage matrix against the two bundled example gateways, then a scan.

1. Runs `pytest examples/test_careful_matrix.py` and `examples/test_leaky_matrix.py` (3
   operations x every stage x every placement, 423 cases each, under `-n 2`), exactly as a
   gateway team runs leakcheck in CI, and prints each gateway's summary grid (stages x
   verdict) and the first failure of the leaky one as a sample bug report. Full pytest
   output and the JSON reports go to build/demo/.
2. Runs `leakcheck scan` over the bundled captured logs (corpora/demo/), as a job would scan
   logs and traces after the tests, with JSON and SARIF reports.
3. Runs `leakcheck scan --canaries-from` with the leaky run's report over that run's own
   pytest output and JSON report: every canary it planted, rebuilt, in no form there.

Exits non-zero only if a verdict is not the expected one (careful passes, leaky fails,
leaky log has findings, clean log has none, the leaky run's outputs hold none of its
canaries).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "corpora" / "demo"
OUT = ROOT / "build" / "demo"
LEAKCHECK = shutil.which("leakcheck", path=str(Path(sys.executable).parent)) or "leakcheck"
SEED = "demo-1"


def run_matrix(name: str) -> tuple[int, float, dict]:
    report = OUT / f"{name}-matrix.json"
    log = OUT / f"{name}-matrix.txt"
    started = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable, "-m", "pytest", f"examples/test_{name}_matrix.py", "-n", "2",
            "-p", "no:randomly", "-p", "no:cacheprovider", "-q", "--no-header",
            f"--leakcheck-seed={SEED}", f"--leakcheck-report={report}",
        ],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    elapsed = time.perf_counter() - started
    log.write_text(done.stdout + done.stderr, encoding="utf-8")
    data = json.loads(report.read_text(encoding="utf-8")) if report.exists() else {}
    return done.returncode, elapsed, data


def first_failure(path: Path) -> str:
    """The first failure of a pytest log (already masked by leakcheck), without the
    traceback and captured-output parts."""
    text = path.read_text(encoding="utf-8")
    if "= FAILURES =" not in text:
        return ""
    body = text.split("= FAILURES =", 1)[1]
    sections = [s for s in re.split(r"\n_{3,} .+ _{3,}\n", body)[1:] if s.strip()]
    first = sections[0].split("\n----", 1)[0] if sections else ""
    lines = [ln for ln in first.splitlines() if ln.strip() and not ln.startswith("[gw")]
    return "\n".join(lines[:24])


def scan(log: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            LEAKCHECK, "scan", "--secrets-file", str(DEMO / "secrets.json"), "--decode",
            *extra, str((DEMO / log).relative_to(ROOT)),
        ],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip


def main() -> int:
    from leakcheck.matrix import format_grid

    OUT.mkdir(parents=True, exist_ok=True)
    ok = True
    print("leakcheck demo, part 1: the stage matrix against two example gateways")
    print("(examples/: the same pipeline, one careful, one with the seed article's mistakes)\n")
    for name, expected in (("careful", 0), ("leaky", 1)):
        code, elapsed, report = run_matrix(name)
        records = [r for r in report.get("tests", []) if "matrix" in r]
        failed = sum(1 for r in records if r.get("outcome") == "failed")
        verdict = "PASS" if code == 0 else "FAIL"
        print(f"=== {name} gateway: {len(records)} cases, {failed} failed, {elapsed:.1f} s "
              f"(-n 2): {verdict} ===")  # fmt: skip
        if records:
            print(format_grid(records))
        problems = report.get("request_ids", [])
        print(f"request ids: {'FAILED' if problems else 'ok'}")
        for problem in problems:
            message = problem["message"]
            if len(message) > 110:  # (cut at a word, said: the rest is in the JSON report)
                message = message[:110].rsplit(" ", 1)[0] + " ..."
            print(f"  - {problem['rule']}: {message}")
        print(f"full output: {(OUT / f'{name}-matrix.txt').relative_to(ROOT)}, "
              f"JSON report: {(OUT / f'{name}-matrix.json').relative_to(ROOT)}\n")  # fmt: skip
        if name == "leaky" and failed:
            print("a sample failure (masked, as pytest prints it):")
            print("    " + first_failure(OUT / "leaky-matrix.txt").replace("\n", "\n    ") + "\n")
        ok &= code == expected and bool(records)

    print("leakcheck demo, part 2: `leakcheck scan` over captured logs of two gateways")
    rows = []
    for log, expected in (("leaky-gateway.log", 1), ("clean-gateway.log", 0)):
        result = scan(log)
        for fmt in ("json", "sarif"):
            scan(log, "--format", fmt, "--output", str(OUT / f"{Path(log).stem}.{fmt}"))
        findings = result.stdout.split(" finding", 1)[0].rsplit(" ", 1)[-1]
        verdict = {0: "clean", 1: "LEAKS"}.get(result.returncode, "ERROR")
        rows.append((log, findings, verdict, result.returncode))
        ok &= result.returncode == expected
        if result.returncode == 1:
            print("\n".join(result.stdout.splitlines()[:8]) + "\n  ...")
    print(f"  {'log':<20} {'findings':>8}  verdict")
    for log, findings, verdict, code in rows:
        print(f"  {log:<20} {findings:>8}  {verdict} (exit {code})")

    print("\nleakcheck demo, part 3: the CI step after the tests, over their own outputs")
    report = (OUT / "leaky-matrix.json").relative_to(ROOT)
    outputs = [str((OUT / f).relative_to(ROOT)) for f in ("leaky-matrix.txt", "leaky-matrix.json")]
    print(f"  $ leakcheck scan --canaries-from {report} {' '.join(outputs)}")
    done = subprocess.run(
        [LEAKCHECK, "scan", "--canaries-from", str(report), *outputs],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    print("  " + (done.stdout.splitlines() or [done.stderr.strip()])[0])
    print("  (every canary the leaky run planted, rebuilt from its report: its failure texts")
    print("   and JSON report show them masked only)")
    ok &= done.returncode == 0

    print(f"\nall reports (pytest output, JSON, SARIF): {OUT.relative_to(ROOT)}/")
    if not ok:
        print("demo: unexpected verdicts (see above)", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
