"""The ``gzip`` decoder plugin (``plugins/gzip_base64.py``): base64 of gzip (``H4sI...``), as
crash dumps, Helm releases and session-state blobs carry, in a small text (decoded whole)
and past KEYED_FROM_BYTES (keyed decoding: compressed data holds none of a secret's keys,
so the run's start is searched for instead; a blob in a large log was missed, and a small
file scanned beside a large one too: found by a hunting helper)."""

from __future__ import annotations

import base64
import gzip
import json
import random
import string

import pytest

from leakcheck import Scanner, Secret
from leakcheck.detect import KEYED_FROM_BYTES

MODES = ("whole", "keyed")


def _token(seed: int) -> Secret:
    rng = random.Random(seed)
    body = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(36))
    return Secret.from_user("ghp_" + body, kind="secret", id=f"g{seed}")


def _blob(value: str, history: str = "") -> str:
    state = {"config": {"github_token": value}, "history": history}
    return base64.b64encode(gzip.compress(json.dumps(state).encode(), mtime=0)).decode()


def _found(secret: Secret, text: str, mode: str) -> list[str]:
    size = KEYED_FROM_BYTES if mode == "keyed" else None
    scanner = Scanner([secret], decode=True, backend="ahocorasick", input_bytes=size)
    assert scanner._keyed is (mode == "keyed")
    return [f.form for f in scanner.scan(text) if f.secret_id == secret.id]


@pytest.mark.parametrize("mode", MODES)
def test_a_token_in_base64_of_gzip_is_found(mode: str) -> None:
    secret, other = _token(1), _token(2)
    line = f"2026-12-07 DEBUG restored state={_blob(secret.value)}\n"
    assert any(form.startswith("gzip>") for form in _found(secret, line, mode))
    assert not _found(other, line, mode)  # (another token's blob: nothing)


@pytest.mark.parametrize("mode", MODES)
def test_a_long_blob_is_decoded_from_its_start(mode: str) -> None:
    """Keyed decoding reads a few KiB around the run's start: a blob longer than that is
    decoded as far as it reads (the token near its start is found)."""
    secret = _token(3)
    rng = random.Random(3)
    history = "".join(rng.choice(string.ascii_letters) for _ in range(20000))
    line = f"state={_blob(secret.value, history)}\n"
    assert len(line) > 15000
    assert any(form.startswith("gzip>") for form in _found(secret, line, mode))


@pytest.mark.parametrize("cut", [4000, 4001, 4002, 4003])
def test_a_blob_cut_short_anywhere_is_decoded_as_far_as_it_goes(cut: int) -> None:
    from leakcheck.plugins.gzip_base64 import gzip_base64_runs

    secret = _token(4)
    rng = random.Random(4)
    blob = _blob(secret.value, "".join(rng.choice(string.ascii_letters) for _ in range(9000)))
    runs = list(gzip_base64_runs(f"state={blob[:cut]}".encode()))
    assert len(runs) == 1 and secret.value.encode() in runs[0][2]
