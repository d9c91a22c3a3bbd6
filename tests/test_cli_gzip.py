"""``leakcheck scan`` reads a gzip file's content (a rotated log, ``app.log.1.gz``): its
compressed bytes were searched as they are, and a token in it was called clean."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from conftest import self_scan

from leakcheck import Secret
from leakcheck.cli import main

TOKEN = "ghp_Wd4Kx9Qm2Vt7Lp3Rz8Hn5Jc1Fb6Gs0Ya"
LINE = b"2026-12-07 INFO request served in 12 ms path=/api/v1/items status=200\n"


def scan(capsys: pytest.CaptureFixture[str], tmp_path: Path, *paths: Path) -> tuple[int, str]:
    secrets = tmp_path / "secrets.txt"
    secrets.write_text(TOKEN + "\n")
    code = main(["scan", "--secrets-file", str(secrets), "--format", "json", *map(str, paths)])
    out, err = capsys.readouterr()
    self_scan(out + err, [Secret.from_user(TOKEN)], "scan output")
    assert "Traceback" not in err
    return code, out


def test_a_gzip_files_content_is_searched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # past the size whose newlines a regular file has counted beside the search
    lines = (33 << 20) // len(LINE)
    logs = tmp_path / "logs"
    logs.mkdir()
    leaky, clean = logs / "app.log.1.gz", logs / "app.log.2.gz"
    leaky.write_bytes(gzip.compress(LINE * lines + f"token={TOKEN}\n".encode(), 1))
    clean.write_bytes(gzip.compress(LINE * 100, 1))
    code, out = scan(capsys, tmp_path, leaky, clean)
    assert code == 1
    (finding,) = json.loads(out)["findings"]
    assert (finding["source"], finding["line"], finding["column"]) == (str(leaky), lines + 1, 7)
    code, out = scan(capsys, tmp_path, clean)
    assert code == 0 and json.loads(out)["findings"] == []
    # found below a directory too
    code, out = scan(capsys, tmp_path, logs)
    assert code == 1 and len(json.loads(out)["findings"]) == 1


def test_a_broken_gzip_file_is_an_error_not_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole = gzip.compress(LINE * 1000 + f"token={TOKEN}\n".encode())
    truncated, corrupt = tmp_path / "cut.gz", tmp_path / "bad.gz"
    truncated.write_bytes(whole[: len(whole) // 2])
    corrupt.write_bytes(b"\x1f\x8bnot gzip at all")
    for path, said in ((truncated, "ended before the end-of-stream"), (corrupt, "cannot read")):
        code, out = scan(capsys, tmp_path, path)
        assert code == 2
        assert any(said in error for error in json.loads(out)["errors"]), out
