"""The package compiles and imports on each Python it declares (3.10 and later).

This suite runs on 3.11 (the pins' Python), and two breaks went unseen there. Python 3.13
strips the indentation of docstrings when it compiles them, through UTF-8: one holding a
lone surrogate (``"\\ud83d"`` written unescaped in a plain string) made ``import
leakcheck.decode`` fail on 3.13 with ``UnicodeEncodeError: ... surrogates not allowed``,
and with it the fixture, the scanner and every command. And 3.10's ``re`` has no atomic
group: ``decode`` did not import there either. Both found by installing the wheel in a
venv of each. The docstring rule is checked here on the parsed sources; the rest by
running each other interpreter this machine has on the tree.
"""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ("leakcheck", "plugins", "recorders")


def _sources() -> list[Path]:
    return sorted(p for package in SHIPPED for p in (ROOT / package).rglob("*.py"))


def _surrogates_in_docstrings(source: str) -> list[int]:
    """The lines of docstrings holding a lone surrogate."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc and any(0xD800 <= ord(char) <= 0xDFFF for char in doc):
                first = node.body[0]
                found.append(first.lineno)
    return found


def test_no_docstring_holds_a_lone_surrogate() -> None:
    sources = _sources()
    assert len(sources) > 50
    offending = {
        str(path.relative_to(ROOT)): lines
        for path in sources
        if (lines := _surrogates_in_docstrings(path.read_text(encoding="utf-8")))
    }
    assert offending == {}


def test_the_rule_catches_the_docstring_that_broke_3_13() -> None:
    broken = 'def f():\n    """lone surrogates (``\\ud83d\\udd11``)"""\n'
    fine = 'def f():\n    """lone surrogates (``\\\\ud83d\\\\udd11``)"""\n'
    assert _surrogates_in_docstrings(broken) == [2]
    assert _surrogates_in_docstrings(fine) == []


# --- on each Python the package declares --------------------------------------------------

#: The Pythons ``requires-python`` admits besides the one this suite runs on (3.11: the
#: pins'). 3.10's ``re`` had no atomic group, and ``leakcheck.decode`` did not import there;
#: 3.13 compiles docstrings through UTF-8. Each is looked for on this machine (pyenv's, or
#: ``pythonX.Y`` on the PATH): one that is missing is a skip that says so.
OTHER_PYTHONS = ("3.10", "3.12", "3.13")


def _python(version: str) -> str | None:
    for candidate in sorted(Path.home().glob(f".pyenv/versions/{version}.*/bin/python")):
        return str(candidate)
    found = shutil.which(f"python{version}")
    if found and subprocess.run([found, "-c", ""], capture_output=True).returncode == 0:
        return found
    return None


_CHECK = """
import importlib, json, pathlib, pkgutil, re, sys
root, *paths = sys.argv[1:]
sys.path.insert(0, root)
failed, imported, not_checked = [], [], []
for path in paths:
    try:
        compile(pathlib.Path(path).read_text(encoding="utf-8"), path, "exec")
    except Exception as exc:
        failed.append([path, type(exc).__name__ + ": " + str(exc)[:200]])
import importlib.util
import leakcheck
from leakcheck._lazy import _LazyPattern
# what an install maps from other folders of the tree (pyproject's package-dir)
mapped = {"leakcheck.plugins": "plugins", "leakcheck.corpora": "corpora"}
for name, folder in mapped.items():
    init = pathlib.Path(root, folder, "__init__.py")
    spec = importlib.util.spec_from_file_location(
        name, init, submodule_search_locations=[str(init.parent)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
infos = list(pkgutil.walk_packages(leakcheck.__path__, "leakcheck."))
infos += pkgutil.walk_packages([str(pathlib.Path(root, "plugins"))], "leakcheck.plugins.")
for info in infos:
    try:
        module = importlib.import_module(info.name)
    except ModuleNotFoundError as exc:  # a library of this interpreter's absent: said
        if exc.name and exc.name.split(".")[0] != "leakcheck":
            not_checked.append(info.name)
            continue
        failed.append([info.name, "ModuleNotFoundError: " + str(exc)[:200]])
        continue
    except Exception as exc:
        failed.append([info.name, type(exc).__name__ + ": " + str(exc)[:200]])
        continue
    imported.append(info.name)
    for name, value in list(vars(module).items()):
        if isinstance(value, _LazyPattern):  # compiled on first use: compiled here
            try:
                re.compile(*object.__getattribute__(value, "_source"))
            except Exception as exc:
                failed.append([info.name + "." + name, type(exc).__name__ + ": " + str(exc)[:200]])
print(json.dumps({"failed": failed, "imported": imported, "not_checked": not_checked}))
"""


@pytest.mark.parametrize("version", OTHER_PYTHONS)
def test_the_package_imports_on_each_declared_python(version: str) -> None:
    """Every shipped source compiles, and every module of the package that needs no library
    the interpreter lacks imports (its patterns compiled, those put off until first use
    too), on each Python the package declares, run as that interpreter is (no site)."""
    python = _python(version)
    if python is None:
        pytest.skip(f"no Python {version} on this machine to import the package with")
    result = subprocess.run(
        [python, "-I", "-c", _CHECK, str(ROOT), *map(str, _sources())],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    checked = json.loads(result.stdout)
    assert checked["failed"] == []
    # (not a pass for nothing: the scanner, its decoding pass and the CLI import there)
    assert {"leakcheck.decode", "leakcheck.detect", "leakcheck.cli"} <= set(checked["imported"])
    assert len(checked["imported"]) > 40
