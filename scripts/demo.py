"""`make demo`: scan the bundled captured gateway logs and show the report.

Runs the real `leakcheck scan` command, as a CI job would, over a leaky and a clean log
(corpora/demo/), prints both reports and a summary, and writes JSON and SARIF reports to
build/demo/. Exits non-zero only if the verdicts are not the expected ones (leaky: 1, clean: 0).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "corpora" / "demo"
OUT = ROOT / "build" / "demo"
LEAKCHECK = shutil.which("leakcheck", path=str(Path(sys.executable).parent)) or "leakcheck"


def scan(log: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            LEAKCHECK,
            "scan",
            "--secrets-file",
            str(DEMO / "secrets.json"),
            "--decode",
            *extra,
            str((DEMO / log).relative_to(ROOT)),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    print("leakcheck demo: the captured error logs of two gateways that hit the same failures")
    print(f"secrets: the demo canaries in {(DEMO / 'secrets.json').relative_to(ROOT)}\n")
    rows, ok = [], True
    for log, expected in (("leaky-gateway.log", 1), ("clean-gateway.log", 0)):
        result = scan(log)
        print(f"=== leakcheck scan ... {log} (exit {result.returncode}) ===")
        print(result.stdout + result.stderr)
        for fmt in ("json", "sarif"):
            scan(log, "--format", fmt, "--output", str(OUT / f"{Path(log).stem}.{fmt}"))
        findings = result.stdout.split(" finding", 1)[0].rsplit(" ", 1)[-1]
        verdict = {0: "clean", 1: "LEAKS"}.get(result.returncode, "ERROR")
        rows.append((log, findings, verdict, result.returncode))
        ok &= result.returncode == expected
    print("summary")
    print(f"  {'log':<20} {'findings':>8}  verdict")
    for log, findings, verdict, code in rows:
        print(f"  {log:<20} {findings:>8}  {verdict} (exit {code})")
    print(f"\nJSON and SARIF reports: {OUT.relative_to(ROOT)}/")
    if not ok:
        print("demo: unexpected verdicts (leaky must exit 1, clean must exit 0)", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
