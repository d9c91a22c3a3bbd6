"""What a keyed region costs: ``decode.wrap_extent`` tells the common line that no wrapped
line continues without its regular expressions (``_may_continue``), with the same extent."""

from __future__ import annotations

import random
import re

import pytest

import leakcheck.decode as decode_module
from leakcheck.decode import _continues, _may_continue, wrap_extent

_PIECES = [b" ", b"  ", b"\t", b"|", "\u2502".encode(), "\u2551".encode(), b"\r", b"x", b"=", b"-"]


def _line(rng: random.Random) -> bytes:
    width = rng.choice([0, 3, 20, 34, 35, 40, 79, 80, 81, 99, 100, 120, 132, 160, 200, 201])
    body = bytes(rng.choice(b"abcXYZ0189+/= ") for _ in range(width))
    lead = b"".join(rng.choice(_PIECES) for _ in range(rng.randrange(0, 3)))
    tail = rng.choice([b"", b"\r", b" ", b"\r\r"])
    return lead + body + tail


@pytest.mark.parametrize("seed", range(10))
def test_may_continue_is_false_only_where_no_line_continues(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(3000):
        line, after = _line(rng), _line(rng)
        if not _may_continue(line, after[:1]):
            assert not _continues([(0, line), (0, after)], 1), (line, after)


@pytest.mark.parametrize("seed", range(10))
def test_wrap_extent_as_without_the_shortcut(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    buf = b"\n".join(_line(rng) for _ in range(300))
    spots = [(low, min(len(buf), low + rng.randrange(1, 40))) for low in range(0, len(buf), 97)]
    fast = [wrap_extent(buf, low, high, 4096) for low, high in spots]
    # a stream's buffer is a bytearray
    assert [wrap_extent(bytearray(buf), low, high, 4096) for low, high in spots] == fast
    monkeypatch.setattr(decode_module, "_may_continue", lambda line, first: True)
    assert [wrap_extent(buf, low, high, 4096) for low, high in spots] == fast


def test_a_log_line_between_log_lines_is_told_without_continues(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(*_args: object) -> bool:
        raise AssertionError("_continues called")

    monkeypatch.setattr(decode_module, "_continues", refuse)
    buf = (
        b"2026-12-02 00:12:01 INFO GET /cb?blob=o%C1C%1F%C2%6A%5F1%90%00%E9%3A%74a HTTP/1.1\n"
        b"2026-12-02 00:12:02 INFO 200 OK in 12 ms\n"
        b"2026-12-02 00:12:03 INFO done\n"
    )
    start = buf.index(b"o%C1")
    assert wrap_extent(buf, start, start + 40, 4096) == (start, start + 40)


def _joint_without_atomic_groups() -> re.Pattern[bytes]:
    """``_JOINT`` as Python 3.10 compiles it (its ``re`` has no atomic group)."""
    emulated = decode_module._REFERENCED_LONG_TOKEN_LINE
    assert decode_module._LONG_TOKEN_LINE != emulated  # (3.11+: the atomic group)
    pattern = decode_module._JOINT.pattern.replace(decode_module._LONG_TOKEN_LINE, emulated, 1)
    assert pattern != decode_module._JOINT.pattern
    return re.compile(pattern, re.MULTILINE)


@pytest.mark.parametrize("seed", range(5))
def test_the_joint_finds_the_same_lines_without_atomic_groups(seed: int) -> None:
    """The package declares Python 3.10, whose ``re`` has no ``(?>...)``: ``decode`` did not
    import there. The lookahead-and-reference form 3.10 gets finds the same places."""
    rng = random.Random(seed)
    emulated = _joint_without_atomic_groups()
    for _ in range(200):
        buf = b"\n".join(_line(rng) for _ in range(rng.randrange(1, 12)))
        for start in range(0, len(buf), 37):
            atomic = decode_module._JOINT.search(buf, start)
            other = emulated.search(buf, start)
            assert (atomic and atomic.span()) == (other and other.span()), buf
