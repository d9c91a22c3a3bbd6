"""A file shorter than the stream's carry is searched (and decoded) once: the read after it
finds the end of the stream, and the same buffer's hits are settled from what the first
search found, in the same order as two searches gave them."""

from __future__ import annotations

import base64
import io
import random

import pytest

from leakcheck import KINDS, CanaryFactory
from leakcheck.detect import Scanner
from leakcheck.engine import available_backends
from leakcheck.findings import CONTEXT_BYTES, WIDEN_BYTES


def _secrets() -> list:
    factory = CanaryFactory(seed="small-files", namespace="test")
    kinds = [k for k in KINDS if k not in ("pem_private_key", "client_cert")]
    return [factory.secret(kinds[n % len(kinds)]) for n in range(8)]


def _text(rng: random.Random, secrets: list, size: int) -> bytes:
    lines = [b"INFO request %d ok" % n for n in range(size // 20)]
    for secret in rng.sample(secrets, 3):
        value = secret.value.encode()
        form = rng.choice([value, base64.b64encode(b"u:" + value), value.hex().encode()])
        lines.insert(rng.randrange(len(lines) + 1), b"token=" + form)
    data = b"\n".join(lines)
    if rng.random() < 0.5:  # a hit in the buffer's last margin, the one settled at the end
        data += b"\nlast " + rng.choice(secrets).value.encode()
    return data


@pytest.mark.parametrize("backend", ["hyperscan", "ahocorasick"])
@pytest.mark.parametrize("seed", range(6))
def test_small_file_searched_once_same_findings(
    backend: str, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    if backend not in available_backends():
        pytest.skip(f"{backend} not importable")
    rng = random.Random(seed)
    secrets = _secrets()
    scanner = Scanner(secrets, decode=True, backend=backend)
    margin = scanner.max_needle + CONTEXT_BYTES + WIDEN_BYTES
    data = _text(rng, secrets, rng.randrange(margin // 2, 3 * margin))
    whole = scanner.scan(data)
    assert whole, "nothing planted: the test tests nothing"
    # two searches of the buffer gave first what ends before its last margin, then the rest
    limit = len(data) - margin
    expected = [f for f in whole if f.offset + f.length <= limit]
    expected += [f for f in whole if f.offset + f.length > limit]

    calls = []
    prepared = Scanner._prepared

    def counted(self: Scanner, buffer: object) -> object:
        calls.append(len(buffer))  # type: ignore[arg-type]
        return prepared(self, buffer)  # type: ignore[arg-type]

    monkeypatch.setattr(Scanner, "_prepared", counted)
    assert list(scanner.scan_stream(io.BytesIO(data), "<text>")) == expected
    assert calls == [len(data)], "the buffer searched more than once"


class _Growing(io.RawIOBase):
    """A stream that ends, then has more (a log written while it is read)."""

    def __init__(self, *parts: bytes) -> None:
        self._parts = [p for part in parts for p in (part, b"")]

    def readable(self) -> bool:
        return True

    def readinto(self, target: memoryview) -> int:  # type: ignore[override]
        if not self._parts:
            return 0
        part = self._parts.pop(0)
        target[: len(part)] = part
        return len(part)


def test_a_stream_that_grows_after_its_end_is_searched_again() -> None:
    secrets = _secrets()
    scanner = Scanner(secrets, decode=True)
    first = b"INFO ok\n" * 20
    later = b"token=" + secrets[0].value.encode() + b"\n"
    found = list(scanner.scan_stream(_Growing(first, later), "<text>"))  # type: ignore[arg-type]
    assert [f.secret_id for f in found] == [secrets[0].id]
    assert found[0].offset == len(first) + len(b"token=")


def test_a_clean_file_makes_no_line_counter(monkeypatch: pytest.MonkeyPatch) -> None:
    # a seekable stream counts its lines from its first finding on: a clean one needs no
    # code point counter (each made a codec's incremental decoder)
    import leakcheck.detect as detect_module

    made = []
    real = detect_module._CodePoints

    def counted(*args: object, **kwargs: object) -> object:
        made.append(args)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(detect_module, "_CodePoints", counted)
    scanner = Scanner(_secrets(), decode=True)
    assert list(scanner.scan_stream(io.BytesIO(b"INFO ok\n" * 300))) == []
    assert made == []
