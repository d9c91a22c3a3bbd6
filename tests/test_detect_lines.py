"""Line numbers of a seekable stream's findings: counted after the scan, by re-reading the
stream in small pieces into one buffer, up to the last finding only."""

from __future__ import annotations

import io
import random

import pytest

import leakcheck.detect as detect_module
from leakcheck import CanaryFactory, Scanner

WORDS = ["alpha", "é", "中文", "🙂", "42", "\t", "ok,"]
FACTORY = CanaryFactory(seed=7, namespace="detect-lines")
SECRETS = [FACTORY.secret("bearer"), FACTORY.secret("cookie")]


def _filler(rng: random.Random, size: int) -> bytes:
    """Words (multi-byte characters among them) and newlines, cut at ``size``: possibly
    inside a character."""
    out = bytearray()
    while len(out) < size:
        out += b"\n" if rng.random() < 0.05 else (rng.choice(WORDS) + " ").encode()
    return bytes(out[:size])


def _location(data: bytes, offset: int) -> tuple[int, int]:
    """(line, column in code points of the line decoded whole), both from 1."""
    start = data.rfind(b"\n", 0, offset) + 1
    return data.count(b"\n", 0, offset) + 1, len(data[start:offset].decode("utf-8", "replace")) + 1


@pytest.mark.parametrize("piece", [1, 7, 4096])
def test_findings_are_located_whatever_the_pieces(
    monkeypatch: pytest.MonkeyPatch, piece: int
) -> None:
    monkeypatch.setattr(detect_module, "REREAD_BYTES", piece)
    scanner = Scanner(SECRETS)
    rng = random.Random(piece)
    parts, position, starts = [], 0, []
    for _ in range(25):
        gap = _filler(rng, rng.randint(0, 700)) + b" "
        value = rng.choice(SECRETS).value.encode()
        parts += [gap, value]
        starts.append(position + len(gap))
        position += len(gap) + len(value)
    data = b"".join([*parts, b"\n", _filler(rng, 3000)])
    found = list(scanner.scan_stream(io.BytesIO(data), chunk_bytes=512))
    assert sorted(f.offset for f in found) == starts
    for finding in found:
        assert (finding.line, finding.column) == _location(data, finding.offset)


def test_the_pass_reads_no_further_than_the_last_finding_s_piece(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(detect_module, "REREAD_BYTES", 100)
    value = SECRETS[0].value.encode()
    data = b"x y\n" * 500 + value + b"\n" + b"z\n" * 5000
    scanner = Scanner(SECRETS)
    stream = io.BytesIO(data)
    [finding] = list(scanner.scan_stream(stream))
    assert (finding.line, finding.column) == (501, 1)
    ends: list[int] = []
    stream.seek(0)
    real = stream.readinto

    def recording(target):  # type: ignore[no-untyped-def]
        ends.append(stream.tell() + len(target))
        return real(target)

    stream.readinto = recording  # type: ignore[method-assign]
    [again] = detect_module._with_lines([finding], detect_module._reread(stream))
    assert again == finding
    assert max(ends) <= 2000 + 100  # the piece holding the finding, none after it


def test_a_short_last_piece_and_an_empty_stream() -> None:
    assert [bytes(p) for p in detect_module._reread(io.BytesIO(b""))] == []
    pieces = [bytes(p) for p in detect_module._reread(io.BytesIO(b"a" * 5))]
    assert pieces == [b"a" * 5]
