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


class _Pipe(io.RawIOBase):
    """A stream that cannot be re-read (stdin, a FIFO)."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, target) -> int:  # type: ignore[no-untyped-def, override]
        return self._data.readinto(target)


def _text(rng: random.Random, utf16: bool) -> bytes:
    """Findings everywhere: on short lines, on lines far longer than a chunk (so that a
    line begins before the pass starts counting), some in UTF-16-LE text."""
    parts = []
    for _ in range(30):
        value = rng.choice(SECRETS).value
        roll = rng.random()
        if utf16 and roll < 0.3:
            parts.append(f"ps> $x\r\nline {rng.random()} {value} end\r\n".encode("utf-16-le"))
        elif roll < 0.5:
            parts.append(
                _filler(rng, rng.randint(0, 400)).replace(b"\n", b" ") + b" " + value.encode()
            )
        else:
            parts.append(_filler(rng, rng.randint(0, 2500)) + b" " + value.encode() + b" ")
    return b"".join(parts)


@pytest.mark.parametrize("utf16", [False, True])
def test_a_stream_s_findings_are_located_as_the_whole_text_s(utf16: bool) -> None:
    """Counted in the pass from the first finding on (a seekable stream) or from the start
    (a pipe), or by re-reading: every finding's line and column are those ``scan`` gives
    the whole text, UTF-16-LE columns included."""
    scanner = Scanner(SECRETS)
    rng = random.Random(int(utf16))
    data = _text(rng, utf16)
    want = [(f.offset, f.form, f.line, f.column) for f in scanner.scan(data)]
    assert len(want) >= 30 and (not utf16 or any(f[1].startswith("utf16") for f in want))
    for stream in (io.BytesIO(data), _Pipe(data)):
        found = list(scanner.scan_stream(stream, chunk_bytes=300))
        assert [(f.offset, f.form, f.line, f.column) for f in found] == want, type(stream)


def test_the_pass_counts_after_the_first_finding_and_re_reads_only_before_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(detect_module, "REREAD_BYTES", 100)
    value = SECRETS[0].value.encode()
    data = b"x\n" * 1000 + value + b"\n" + b"y\n" * 30_000 + value + b"\n" + b"z\n" * 10
    scanner = Scanner(SECRETS)
    stream = io.BytesIO(data)
    reads: list[tuple[int, int]] = []  # (start, end) of each read asked for
    real = stream.readinto

    def recording(target):  # type: ignore[no-untyped-def]
        reads.append((stream.tell(), stream.tell() + len(target)))
        return real(target)

    stream.readinto = recording  # type: ignore[method-assign]
    first, last = list(scanner.scan_stream(stream, chunk_bytes=4096))
    assert (first.line, first.column, last.line, last.column) == (1001, 1, 31002, 1)
    [again] = [n for n, (start, _) in enumerate(reads) if start == 0 and n > 0]
    # the re-read ends in the chunk after the first finding's, far before the second
    assert max(end for _, end in reads[again:]) < 2000 + 3 * 4096


# --- a big file's newlines counted by a child process beside the search (issue 14) ------


def _file_with_findings(tmp_path, utf16: bool, pieces: bool = False):  # type: ignore[no-untyped-def]
    """A file of findings on short lines and on lines longer than many pieces, one right
    after a newline, some in UTF-16-LE text (``pieces``: a whole number of 64-byte pieces
    long); and what ``scan`` gives the whole text."""
    rng = random.Random(31 + utf16)
    data = _text(rng, utf16) + b"\n" + SECRETS[1].value.encode() + b"\n" + _filler(rng, 999)
    if pieces:
        data += b"\n" * (-len(data) % 64)
    path = tmp_path / "big.log"
    path.write_bytes(data)
    want = [(f.offset, f.form, f.line, f.column) for f in Scanner(SECRETS).scan(data)]
    return path, want


def _count_beside(monkeypatch: pytest.MonkeyPatch, on: bool) -> list[int]:
    """Small pieces, the counter for any file when ``on`` (never otherwise); the number of
    scans it located, in the list returned."""
    monkeypatch.setattr(detect_module, "REREAD_BYTES", 64)
    monkeypatch.setattr(detect_module._NewlineCounter, "worth_it", staticmethod(lambda s, o: on))
    located: list[int] = []
    real = detect_module._NewlineCounter.locate

    def counting(self, findings, fd):  # type: ignore[no-untyped-def]
        result = real(self, findings, fd)
        located.append(result is not None)
        return result

    monkeypatch.setattr(detect_module._NewlineCounter, "locate", counting)
    return located


@pytest.mark.parametrize(("utf16", "pieces"), [(False, False), (True, False), (False, True)])
def test_a_file_s_lines_counted_beside_the_search_are_the_whole_text_s(
    monkeypatch: pytest.MonkeyPatch, tmp_path, utf16: bool, pieces: bool
) -> None:
    path, want = _file_with_findings(tmp_path, utf16, pieces)
    assert len(want) >= 30
    located = _count_beside(monkeypatch, True)
    with open(path, "rb") as stream:
        found = list(Scanner(SECRETS).scan_stream(stream, chunk_bytes=300))
    assert [(f.offset, f.form, f.line, f.column) for f in found] == want
    assert located == [True]  # (the counter located them: not the re-read after it)


def test_a_scan_with_the_counter_off_locates_the_same_and_starts_no_child(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    path, want = _file_with_findings(tmp_path, False)
    located = _count_beside(monkeypatch, False)
    started: list[int] = []
    monkeypatch.setattr(
        detect_module._NewlineCounter, "__init__", lambda self, fd, origin: started.append(fd)
    )
    with open(path, "rb") as stream:
        found = list(Scanner(SECRETS).scan_stream(stream, chunk_bytes=300))
    assert [(f.offset, f.form, f.line, f.column) for f in found] == want
    assert located == [] and started == []


def test_a_count_that_fails_falls_back_to_re_reading(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    path, want = _file_with_findings(tmp_path, False)
    located = _count_beside(monkeypatch, True)

    monkeypatch.setattr(detect_module, "_COUNT_NEWLINES", "raise SystemExit(3)")
    with open(path, "rb") as stream:
        found = list(Scanner(SECRETS).scan_stream(stream, chunk_bytes=300))
    assert [(f.offset, f.form, f.line, f.column) for f in found] == want
    assert located == [False]


def test_the_counter_is_used_only_for_a_big_regular_file_on_two_cpus(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    small = tmp_path / "small.log"
    small.write_bytes(b"x" * 100)
    big = tmp_path / "big.log"
    with open(big, "wb") as out:
        out.truncate(detect_module.COUNT_BESIDE_FROM)
    worth_it = detect_module._NewlineCounter.worth_it
    monkeypatch.setattr(detect_module.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    with open(small, "rb") as s, open(big, "rb") as b:
        assert not worth_it(s, 0) and worth_it(b, 0) and not worth_it(b, 1)
        assert not worth_it(io.BytesIO(b"x" * detect_module.COUNT_BESIDE_FROM), 0)
        monkeypatch.setattr(detect_module.sys, "frozen", True, raising=False)
        assert not worth_it(b, 0)  # (a frozen app's executable runs no -c program)
        monkeypatch.delattr(detect_module.sys, "frozen")
        monkeypatch.setattr(detect_module.os, "sched_getaffinity", lambda pid: {0})
        assert not worth_it(b, 0)


def test_a_file_scanned_from_an_offset_is_located_from_there_beside_the_search(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    path, _ = _file_with_findings(tmp_path, False)
    data = path.read_bytes()
    start = data.index(b"\n", len(data) // 3) + 1
    want = [(f.offset, f.form, f.line, f.column) for f in Scanner(SECRETS).scan(data[start:])]
    assert want
    located = _count_beside(monkeypatch, True)
    with open(path, "rb") as stream:
        stream.seek(start)
        found = list(Scanner(SECRETS).scan_stream(stream, chunk_bytes=300))
    assert [(f.offset, f.form, f.line, f.column) for f in found] == want
    assert located == [True]


@pytest.mark.parametrize("read_with", ["preadv", "pread"])
def test_the_counting_child_marks_the_newlines_before_each_piece(tmp_path, read_with: str) -> None:
    import subprocess
    import sys

    data = b"a\nbb\n\n" * 500 + b"tail without a newline"
    path = tmp_path / "counted.log"
    path.write_bytes(data)
    code = detect_module._COUNT_NEWLINES
    if read_with == "pread":  # (where os.preadv does not exist)
        code = "import os\ndel os.preadv\n" + code
    with open(path, "rb") as stream:
        fd = stream.fileno()
        out = subprocess.run(
            [sys.executable, "-I", "-S", "-c", code, str(fd), "7"],
            pass_fds=(fd,),
            env={"LEAKCHECK_PIECE": "64"},
            capture_output=True,
            check=True,
        ).stdout
    read, *marks = (int.from_bytes(out[i : i + 8], "little") for i in range(0, len(out), 8))
    counted = data[7:]
    assert read == len(counted)
    assert marks == [counted[: 64 * k].count(b"\n") for k in range(len(counted) // 64 + 1)]


def test_a_scan_that_fails_leaves_no_child_counting(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    """A read that fails after the counter started (or an interrupt): the child is
    stopped, not left to count a file nobody will ask about. Its program here waits until
    it is stopped, so that one left behind is still running when looked at."""
    path, _ = _file_with_findings(tmp_path, False)
    _count_beside(monkeypatch, True)
    monkeypatch.setattr(
        detect_module, "_COUNT_NEWLINES", "import select\nselect.select([], [], [])"
    )
    counters: list[detect_module._NewlineCounter] = []
    real_init = detect_module._NewlineCounter.__init__

    def recording(self, fd, origin):  # type: ignore[no-untyped-def]
        real_init(self, fd, origin)
        counters.append(self)

    monkeypatch.setattr(detect_module._NewlineCounter, "__init__", recording)
    real_read = detect_module._read_into

    def failing(stream, target):  # type: ignore[no-untyped-def]
        if counters:
            raise OSError("the disk went away")
        return real_read(stream, target)

    monkeypatch.setattr(detect_module, "_read_into", failing)
    try:
        with open(path, "rb") as stream, pytest.raises(OSError, match="went away"):
            list(Scanner(SECRETS).scan_stream(stream, chunk_bytes=300))
        assert len(counters) == 1
        child = counters[0]._child
        assert child is not None and child.poll() is not None
    finally:
        for counter in counters:
            if counter._child is not None and counter._child.poll() is None:
                counter._child.kill()
                counter._child.wait()
