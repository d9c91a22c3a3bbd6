"""Every source file of the package compiles on each Python it declares (3.10 and later).

Python 3.13 strips the indentation of docstrings when it compiles them, and that step
encodes each docstring as UTF-8: one holding a lone surrogate (``"\\ud83d"`` written
unescaped in a plain string) made ``import leakcheck.decode`` fail on 3.13 with
``UnicodeEncodeError: ... surrogates not allowed``, and with it the fixture, the scanner
and every command, while 3.10 to 3.12 compiled it. Found by installing the wheel in a 3.13
venv; this suite runs on one interpreter, so the rule is checked on the parsed docstrings.
"""

from __future__ import annotations

import ast
from pathlib import Path

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
