"""Regular expressions that a scan of a clean file never uses are compiled on first use
(``_lazy.lazy_compile``, issue 14's start-up): they act as the compiled pattern, and the
start-up of ``leakcheck scan`` compiles none of them."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from leakcheck._lazy import lazy_compile


def test_a_lazy_pattern_acts_as_the_compiled_one_and_compiles_on_first_use(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    compiled: list[object] = []
    real = re.compile
    monkeypatch.setattr(re, "compile", lambda *a: compiled.append(a) or real(*a))
    pattern = lazy_compile(rb"(?P<key>[a-z]+)=(\d+)")
    assert compiled == []
    assert pattern.search(b"  id=42 ")[2] == b"42"  # type: ignore[index]  # a match
    assert pattern.sub(rb"\g<key>=*", b"a=1 b=22") == b"a=* b=*"
    assert [m.group("key") for m in pattern.finditer(b"x=1,y=2")] == [b"x", b"y"]
    assert pattern.pattern == rb"(?P<key>[a-z]+)=(\d+)" and pattern.groups == 2
    assert len(compiled) == 5  # once per attribute read, then the pattern's own (re caches)
    pattern.search(b"z=3")
    assert len(compiled) == 5
    assert lazy_compile("A.C", re.IGNORECASE | re.DOTALL).fullmatch("a\nc")


def test_a_clean_scan_compiles_none_of_them(tmp_path: Path) -> None:
    (tmp_path / "app.log").write_text("INFO all good\n" * 50, encoding="utf-8")
    (tmp_path / "secrets.txt").write_text("ghp_Zq7xK2mPvR9sT4wY8bN3cL6dF1gH5jA0\n")
    script = """
import sys
from leakcheck import cli, canaries, decode, detect, findings
from leakcheck.cli import output, secrets_file
from leakcheck.serialize import json_data
try:
    cli.main(["scan", "--secrets-file", "secrets.txt", "--format", "json", "app.log"])
except SystemExit:
    pass
lazy = [findings._TOKEN_RUN, findings._TOKEN_RUN_UTF16, detect._AFTER, detect._JOINABLE,
        decode._ONE_ESCAPE, *canaries._LOOKALIKES.values(), json_data._SURROGATE_ESCAPE,
        output._LABELS]
print("COMPILED", sum(len(vars(p)) - 1 for p in lazy), file=sys.stderr)
"""
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True
    )
    assert "COMPILED 0" in result.stderr, result.stderr[-2000:]
