"""Many secrets: ``leakcheck scan`` searches for them a batch at a time (memory of one
batch), finds what one scanner finds, in the same order, and its time grows linearly."""

from __future__ import annotations

import io
import json
import sys
import time
from pathlib import Path

import pytest
from conftest import random_tokens, scan_report

import leakcheck.cli.budget as budget
from leakcheck import Secret
from leakcheck.cli import main
from leakcheck.cli.budget import batches_of


def _tokens(count: int, seed: int) -> list[str]:
    return random_tokens(count, seed)


def _scan(tmp_path: Path, tokens: list[str], log: str, *extra: str) -> dict[str, object]:
    return dict(json.loads(scan_report(tmp_path, tokens, log, *extra)))


def test_batches_keep_every_secret_once_in_order() -> None:
    secrets = [Secret.from_user(t, id=f"S{n}") for n, t in enumerate(_tokens(25, 1))]
    for size, chars, expected in ((10, 10**6, [10, 10, 5]), (100, 100, [3] * 8 + [1])):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(budget, "BATCH_SECRETS", size)
            patch.setattr(budget, "BATCH_CHARS", chars)
            batches = batches_of(secrets)
        assert [len(b) for b in batches] == expected
        assert [s for b in batches for s in b] == secrets
    assert batches_of(secrets) == [secrets]


def test_a_scan_in_batches_finds_what_one_scanner_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tokens = _tokens(60, 2)
    lines = ["GET /health 200"] * 50
    for n in (3, 17, 31, 59):
        lines.insert(n, f"auth={tokens[n]} prefix={tokens[n - 1][:14]} tail=****{tokens[n][-4:]}")
    log = "\n".join(lines) + "\n"
    whole = _scan(tmp_path, tokens, log)
    monkeypatch.setattr(budget, "BATCH_SECRETS", 7)
    batched = _scan(tmp_path, tokens, log)
    assert batched["findings"] and batched["findings"] == whole["findings"]
    assert batched["needles"] == whole["needles"]
    assert not any(t in json.dumps(batched) for t in tokens)  # masked, as ever


def test_stdin_is_read_once_and_scanned_by_every_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tokens = _tokens(20, 3)
    secrets_file = tmp_path / "secrets.txt"
    secrets_file.write_text("\n".join(tokens) + "\n")
    data = f"x={tokens[2]}\ny={tokens[18]}\n".encode()
    monkeypatch.setattr(budget, "BATCH_SECRETS", 5)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    code = main(["scan", "--secrets-file", str(secrets_file), "--format", "json", "-"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    assert sorted(f["secret_id"] for f in report["findings"]) == ["S19", "S3"]
    assert report["sources"] == 1


def test_time_grows_linearly_with_the_secrets(tmp_path: Path) -> None:
    """400 and 1,600 secrets: the second takes less than 6x the CPU time of the first (4x
    is linear, 16x quadratic). Each the best of 3: one CI run measured 6.2x once, its
    other worker and a collection of its heap falling on the larger scan (3.8x alone)."""
    log = "GET /health 200 ok\n" * 200
    timings = []
    for count in (400, 1600):
        runs = []
        for run in range(3):
            tokens = _tokens(count, 10 * count + run)  # new ones: nothing judged before
            started = time.process_time()  # CPU: steady on a shared machine
            report = _scan(tmp_path, tokens, log)
            runs.append(time.process_time() - started)
            assert report["findings"] == []
        timings.append(min(runs))
    assert timings[1] < 6 * timings[0], timings
