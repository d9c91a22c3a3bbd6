"""The public surface: the facade names the main objects, every module's ``__all__`` holds
only names it has, ``leakcheck scan`` never imports the harness or the matrix, and no
module of leakcheck imports a private name of another."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import leakcheck

PACKAGE = Path(leakcheck.__file__).parent
MODULES = sorted(info.name for info in pkgutil.walk_packages([str(PACKAGE)], prefix="leakcheck."))


def test_the_facade_names_the_main_objects() -> None:
    for name in (
        "LeakCheck",
        "stage_matrix",
        "Target",
        "Operation",
        "Case",
        "Expectations",
        "Policy",
        "Captured",
        "Scanner",
        "Secret",
        "CanaryFactory",
        "Finding",
    ):
        assert name in leakcheck.__all__, name
        assert getattr(leakcheck, name) is not None
    assert leakcheck.__version__ == importlib.import_module("leakcheck.version").__version__


def test_internals_stay_importable_from_the_facade() -> None:
    from leakcheck import FORMS, Needle, needles_for  # old import paths keep working

    assert FORMS and Needle and needles_for


@pytest.mark.parametrize("module", MODULES)
def test_every_name_in_all_exists(module: str) -> None:
    loaded = importlib.import_module(module)
    missing = [name for name in getattr(loaded, "__all__", []) if not hasattr(loaded, name)]
    assert not missing, f"{module}.__all__ names what it does not have: {missing}"


def test_importing_leakcheck_loads_no_harness_matrix_or_pytest() -> None:
    """What ``leakcheck scan`` imports: the scanner, never the harness, the matrix (and its
    jsonschema), nor pytest."""
    code = (
        "import sys, leakcheck, leakcheck.cli\n"
        "heavy = ('leakcheck.harness', 'leakcheck.matrix', 'leakcheck.contract', 'pytest',"
        " 'jsonschema')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


def test_a_submodule_reads_as_an_attribute_of_the_package_loaded_alone() -> None:
    """``import leakcheck`` loads none of its modules (each name on first use); a submodule
    read as an attribute (``leakcheck.detect``) is still there, as when the package
    imported its modules eagerly, and a name that is neither stays an AttributeError, as
    does a submodule whose optional library is missing (``hasattr`` says False, never
    raises: ``leakcheck.audit`` without mcp). In a fresh process: this one imported every
    module long ago."""
    code = (
        "import sys, leakcheck\n"
        "sys.modules['mcp'] = None  # as if the mcp extra were not installed\n"
        "print(sorted(m for m in ('leakcheck.detect', 'leakcheck.canaries') if m in sys.modules))\n"
        "print(leakcheck.detect.Scanner is leakcheck.Scanner)\n"
        "print(leakcheck.canaries.KINDS is leakcheck.KINDS)\n"
        "print(hasattr(leakcheck, 'no_such_name'), hasattr(leakcheck.serialize, 'no_such_name'))\n"
        "print(hasattr(leakcheck, 'audit'))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.split("\n")[:5] == ["[]", "True", "True", "False False", "False"], (
        done.stdout + done.stderr
    )


def test_no_module_imports_a_private_name_of_another() -> None:
    crossings = []
    plugins = importlib.import_module("leakcheck.plugins")
    sources = [*PACKAGE.rglob("*.py"), *Path(plugins.__file__).parent.glob("*.py")]
    for path in sorted(sources):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (
                node.level or "leakcheck" in (node.module or "")
            ):
                crossings += [
                    f"{path.name}: {alias.name} from {node.module}"
                    for alias in node.names
                    if alias.name.startswith("_") and alias.name not in ("__version__", "__all__")
                ]
    assert not crossings, crossings


def _module_level_imports(path: Path, module: str) -> set[str]:
    """The leakcheck modules ``module`` imports when it is imported (imports inside
    functions and under TYPE_CHECKING are not: they run later, or never)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test):
            continue
        if isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(max(node.level - 1, 0)):
                base = base.rpartition(".")[0]
            target = f"{base}.{node.module}" if node.level and node.module else node.module or base
            if not target.startswith("leakcheck"):
                continue
            for alias in node.names:  # ``from . import masking`` names a module
                candidate = f"{target}.{alias.name}"
                found.add(candidate if candidate in _ALL_MODULES else target)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("leakcheck")}
    return {name for name in found if name in _ALL_MODULES and name != module}


_ALL_MODULES = {"leakcheck", *MODULES}


def test_no_import_loop() -> None:
    """No module of leakcheck needs, while it is imported, a module that needs it back
    (a loop hidden in function-level imports is allowed to run later, never at import)."""
    graph = {}
    for module in _ALL_MODULES:
        loaded = importlib.import_module(module)
        graph[module] = _module_level_imports(Path(loaded.__file__), module)

    def loop_from(start: str) -> list[str] | None:
        stack = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for nxt in graph.get(node, ()):
                if nxt == start:
                    return [*path, start]
                if nxt not in path and len(path) < 12:
                    stack.append((nxt, [*path, nxt]))
        return None

    loops = [loop for module in sorted(graph) if (loop := loop_from(module))]
    assert not loops, " -> ".join(loops[0])
