"""The wheel: built offline, installed in a fresh venv, imported from there (not the tree)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
# What the wheel is built from: the top-level files (pyproject.toml, README.md...) and the
# three package directories; copied, so the build writes nothing into the work tree.
PACKAGE_DIRS = ("leakcheck", "plugins", "corpora")
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", "dist")

PROBE = r"""
import importlib.metadata as md, importlib.resources as res, importlib.util as iu
import json, sys, sysconfig
import leakcheck, leakcheck.corpora, leakcheck.plugins

def walk(node, prefix=""):
    for child in node.iterdir():
        if child.name == "__pycache__":
            continue
        if child.is_dir():
            yield from walk(child, prefix + child.name + "/")
        else:
            yield prefix + child.name

plugins = sorted(
    (e.name, e.value)
    for group in ("leakcheck.plugins", "leakcheck.codecs")
    for e in md.entry_points(group=group)
)
# found, not imported: an integration's own library is not installed here (--no-deps)
specs = {name: iu.find_spec(value.split(":")[0]) for name, value in plugins}
modules = {name: spec and spec.origin for name, spec in specs.items()}
print(json.dumps({
    "purelib": sysconfig.get_paths()["purelib"],
    "leakcheck": leakcheck.__file__,
    "plugins": leakcheck.plugins.__file__,
    "corpora": leakcheck.corpora.__file__,
    "plugin_modules": modules,
    "corpora_files": sorted(walk(res.files("leakcheck.corpora"))),
    "py_typed": res.files("leakcheck").joinpath("py.typed").is_file(),
    "early_tables": res.files("leakcheck").joinpath("zxcvbn_bound.bin").is_file(),
    "version": md.version("pytest-leakcheck"),
    "path": sys.path,
}))
"""


def run(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_"))}
    env["PIP_NO_INDEX"] = "1"  # offline: nothing is fetched
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def check(done: subprocess.CompletedProcess[str], what: str) -> str:
    assert done.returncode == 0, f"{what} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def source_files(directory: Path) -> set[str]:
    return {
        p.relative_to(directory).as_posix()
        for p in directory.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("wheel")
    src = root / "src"
    src.mkdir()
    for item in REPO.iterdir():
        if item.is_file():
            shutil.copy2(item, src / item.name)
    for name in PACKAGE_DIRS:
        shutil.copytree(REPO / name, src / name, ignore=IGNORED)
    dist = root / "dist"
    # --no-isolation: the build backend comes from this (dev) environment, not the network
    check(
        run(
            sys.executable,
            "-m",
            "build",
            "--wheel",
            "--no-isolation",
            "--outdir",
            dist,
            src,
            cwd=root,
        ),
        "python -m build --wheel --no-isolation (needs setuptools from pyproject's "
        "[build-system] in the dev environment)",
    )
    [built] = dist.glob("pytest_leakcheck-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("venv")
    venv = root / "venv"
    check(run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=root), "python -m venv")
    python = venv / "bin" / "python"
    cfg = (venv / "pyvenv.cfg").read_text()
    assert "include-system-site-packages = false" in cfg
    # this environment's pip installs into the new venv: offline, and no dependencies
    check(
        run(
            sys.executable,
            "-m",
            "pip",
            "--python",
            python,
            "install",
            "--no-deps",
            "--no-index",
            wheel,
            cwd=root,
        ),
        "pip install of the wheel",
    )
    # -I: isolated mode, neither the current directory nor PYTHON* variables on sys.path
    probe = json.loads(check(run(python, "-I", "-c", PROBE, cwd=root), "import from the venv"))
    probe["venv"] = venv
    return probe


def test_wheel_contents(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "leakcheck/py.typed" in names
    assert "leakcheck/zxcvbn_bound.bin" in names  # the early accept's tables (package data)
    assert "leakcheck/plugins/__init__.py" in names
    assert "leakcheck/corpora/__init__.py" in names
    top = {name.split("/")[0] for name in names}
    assert top == {"leakcheck", f"{wheel.name.split('-py')[0]}.dist-info"}  # no tests, bench
    entry_points = (
        zipfile.ZipFile(wheel)
        .read(f"{wheel.name.split('-py')[0]}.dist-info/entry_points.txt")
        .decode()
    )
    assert "leakcheck = leakcheck.cli:main" in entry_points
    assert "[leakcheck.plugins]" in entry_points


def test_the_extras_that_run_tls_stages_bring_trustme(wheel: Path) -> None:
    """The loopback transport's HTTPS and TLS stages need trustme: ``leakcheck mcp`` runs
    them (its extra, ``mcp``), and a pytest suite over ``http_via="loopback"`` or a
    ``StdioMcpTarget`` does (``loopback``). The message of a missing trustme names both;
    it named the ``dev`` extra, which no user installs."""
    from email.parser import Parser

    meta = zipfile.ZipFile(wheel).read(f"{wheel.name.split('-py')[0]}.dist-info/METADATA")
    requires = Parser().parsestr(meta.decode()).get_all("Requires-Dist") or []
    with_trustme = {r.split("extra ==")[1].strip(" '\"") for r in requires if "trustme" in r}
    assert {"mcp", "loopback"} <= with_trustme

    from leakcheck.plugins.loopback_tls import TRUSTME_MISSING

    assert "pytest-leakcheck[loopback]" in TRUSTME_MISSING
    assert "pytest-leakcheck[mcp]" in TRUSTME_MISSING and "[dev]" not in TRUSTME_MISSING


def test_modules_import_from_the_venv(installed: dict) -> None:
    purelib = Path(installed["purelib"]).resolve()
    assert purelib.is_relative_to(Path(installed["venv"]).resolve())
    for name in ("leakcheck", "plugins", "corpora"):
        module_file = Path(installed[name]).resolve()
        assert module_file.is_relative_to(purelib), name
        assert not module_file.is_relative_to(REPO), name
    assert Path(installed["plugins"]).parent == purelib / "leakcheck" / "plugins"
    assert Path(installed["corpora"]).parent == purelib / "leakcheck" / "corpora"
    assert not any(Path(p).resolve() == REPO for p in installed["path"] if p)


def test_plugin_entry_points_resolve_in_the_venv(installed: dict) -> None:
    modules = installed["plugin_modules"]
    assert modules, "no leakcheck.plugins/leakcheck.codecs entry point in the installed wheel"
    purelib = Path(installed["purelib"]).resolve()
    assert "gzip" in modules
    for name, module_file in modules.items():
        assert module_file, f"entry point {name}: its module is not in the wheel"
        assert Path(module_file).resolve().is_relative_to(purelib / "leakcheck" / "plugins"), name


def test_py_typed_and_corpora_data_ship(installed: dict) -> None:
    assert installed["py_typed"]
    assert installed["early_tables"]
    expected = source_files(REPO / "corpora")
    data = {f for f in expected if not f.endswith(".py")}
    assert data, "corpora/ holds no data file to ship"
    # every file of corpora/ is installed: a new kind of data file needs package-data
    assert expected <= set(installed["corpora_files"])


def test_the_scan_command_imports_no_module_it_does_not_use(installed: dict) -> None:
    # the installed wheel, where no editable finder brings pathlib in: what the start-up
    # of ``leakcheck scan`` left out (typing, dataclasses, pathlib, urllib.parse with
    # ipaddress: a fifth of it) stays out
    python = Path(installed["venv"]) / "bin" / "python"
    unused = ("typing", "dataclasses", "inspect", "pathlib", "urllib.parse", "ipaddress")
    code = f"import sys, leakcheck.cli; print([m for m in {unused!r} if m in sys.modules])"
    imported = check(run(python, "-I", "-c", code, cwd=Path(installed["venv"])), "import")
    assert imported.strip() == "[]"


def test_version_and_console_script(installed: dict) -> None:
    assert installed["version"] == "0.1.0"
    script = Path(installed["venv"]) / "bin" / "leakcheck"
    done = run(script, "--version", cwd=Path(installed["venv"]))
    assert check(done, "leakcheck --version").strip() == "leakcheck 0.1.0"


def test_editable_install_maps_packages_into_the_repo() -> None:
    import leakcheck.corpora
    import leakcheck.plugins

    import leakcheck

    assert Path(leakcheck.__file__).resolve().parent == REPO / "leakcheck"
    assert Path(leakcheck.plugins.__file__).resolve().parent == REPO / "plugins"
    assert Path(leakcheck.corpora.__file__).resolve().parent == REPO / "corpora"
