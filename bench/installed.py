"""leakcheck installed as a user installs it, for the start-up row of ``bench/run.py``.

The repository's ``.venv`` holds leakcheck as an editable install, whose finder (a ``.pth``
file read at every interpreter start) imports pathlib, urllib.parse and more before
leakcheck runs: about 8 ms that no user of the wheel pays. This builds the wheel, installs
it (no dependencies, nothing fetched) into a new venv in the bench's temporary directory,
and lets that venv see this one's dependencies (hyperscan, pyahocorasick, zxcvbn) through a
``.pth`` line naming this venv's site-packages: a path line adds the directory to
``sys.path`` without reading the ``.pth`` files inside it, so the editable finder stays out.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _quiet(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_NO_INDEX"] = "1"  # offline: nothing is fetched
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def installed_leakcheck(work: Path) -> tuple[str | None, str]:
    """(the ``leakcheck`` command of a venv holding the wheel, or None, what was done or
    why not)."""
    wheels = work / "wheel"
    built = _quiet(
        sys.executable, "-m", "build", "--wheel", "--no-isolation", "-o", wheels, ROOT, cwd=work
    )
    found = sorted(wheels.glob("pytest_leakcheck-*.whl"))
    if built.returncode != 0 or not found:
        return None, f"the wheel was not built: {built.stderr.strip()[-200:]}"
    venv = work / "wheel-venv"
    made = _quiet(sys.executable, "-m", "venv", "--without-pip", venv, cwd=work)
    if made.returncode != 0:
        return None, f"no venv: {made.stderr.strip()[-200:]}"
    python = venv / "bin" / "python"
    pip = _quiet(
        sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", found[0], cwd=work
    )
    if pip.returncode != 0:
        return None, f"the wheel was not installed: {pip.stderr.strip()[-200:]}"
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = _quiet(python, "-c", purelib, cwd=work)
    target = Path(site.stdout.strip())
    (target / "bench-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    command = venv / "bin" / "leakcheck"
    return (str(command) if command.exists() else None), f"wheel {found[0].name} in a new venv"
