"""What the engine module costs a scan's start-up: finding which backends are installed
imports no more than it needs."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from leakcheck import engine as engine_module

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    "name", ["hyperscan", "ahocorasick", "json", "sqlite3", "no_such_module_leakcheck"]
)
def test_importable_agrees_with_find_spec(name: str) -> None:
    assert engine_module._importable(name) == (importlib.util.find_spec(name) is not None)


def test_a_module_set_to_none_is_not_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "hyperscan", None)
    assert not engine_module._importable("hyperscan")
    assert "hyperscan" not in engine_module.available_backends()


def test_available_backends_imports_no_importlib_util() -> None:
    # without site (whose editable-install finder imports importlib.util itself)
    paths = [str(ROOT), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    code = (
        f"import sys; sys.path[:0] = {paths!r}\n"
        "import leakcheck.engine as engine\n"
        "before = 'importlib.util' in sys.modules\n"
        "found = engine.available_backends()\n"
        "print(before, 'importlib.util' in sys.modules, found)\n"
    )
    result = subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, check=True
    )
    before, after, found = result.stdout.split(" ", 2)
    assert (before, after) == ("False", "False"), result.stdout
    assert eval(found) == engine_module.available_backends()  # noqa: S307 - our own output


def test_auto_takes_the_automaton_for_a_file_under_a_megabyte() -> None:
    # 20 secrets make some 1,400 to 1,700 needles: below about 1,000 KB of input the
    # automaton finishes first (its build is cheaper than hyperscan's compile)
    if engine_module.available_backends() != ["hyperscan", "ahocorasick"]:
        pytest.skip("needs both engines")
    assert engine_module.resolve_backend("auto", 1_700, 600 * 1024) == "ahocorasick"
    assert engine_module.resolve_backend("auto", 1_700, 4 << 20) == "auto"
