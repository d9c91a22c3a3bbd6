"""A long text holding many of the session's 4-byte keys by chance (a MiB of random
base64: a screenshot attached to a pytest-html report, a blob in a log) was looked up with
a ``find`` loop a key over the whole text: 14 s to mask one MiB in a session of 300 tests
of three canaries (found masking pytest-html's ``extras``). Past ``_FIND_LOOP_UP_TO`` the
heads are found in one pass (``engine.key_positions``: an automaton over the keys' bytes,
or one pass over each run of ints for a few keys): 1.1 s. Both ways find the same heads;
the canary in the middle of the noise is masked either way."""

from __future__ import annotations

import base64
import random
import sys

import pytest

from leakcheck import CanaryFactory, masking
from leakcheck.engine import key_positions
from leakcheck.masking import SessionMasker


def _brute_force(data: bytes, keys: set[int]) -> list[int]:
    return [
        at
        for at in range(len(data) - 3)
        if int.from_bytes(data[at : at + 4], sys.byteorder) in keys
    ]


@pytest.mark.parametrize("count", [5, 300])  # (a run of ints; past 64 keys, an automaton)
def test_key_positions_finds_every_place_a_key_starts(count: int) -> None:
    rng = random.Random(count)
    data = bytes(rng.choice(b"abcd") for _ in range(5000))  # (keys that overlap and repeat)
    keys = {
        int.from_bytes(data[at : at + 4], sys.byteorder) for at in rng.sample(range(4996), count)
    }
    keys.add(int.from_bytes(b"zzzz", sys.byteorder))  # (a key the text never holds)
    assert key_positions(data, keys) == _brute_force(data, keys)
    assert key_positions(data[:3], keys) == [] and key_positions(b"", keys) == []


@pytest.mark.parametrize("one_pass", [True, False])
def test_a_canary_in_a_long_noisy_text_is_masked_either_way(
    monkeypatch: pytest.MonkeyPatch, one_pass: bool
) -> None:
    if not one_pass:
        monkeypatch.setattr(masking, "_FIND_LOOP_UP_TO", 1 << 62)
    masker = SessionMasker()
    factories = [CanaryFactory(seed=n, namespace="long-texts") for n in range(40)]
    for factory in factories:
        masker.add([factory.secret("bearer")], by=f"test_{factory.seed}")
        masker.add([factory.secret("api_key"), factory.secret("hostname")])
    noise = base64.b64encode(random.Random(1).randbytes(96 * 1024)).decode()
    token = factories[17].nth("bearer", 1)
    text = f"{noise[:60000]} Authorization: Bearer {token.value} {noise[60000:]}"
    masked = masker.mask(text)
    assert token.value not in masked and "Bearer «canary:bearer:raw»" in masked
    assert masked.startswith(noise[:1000]) and masked.endswith(noise[-1000:])
    found = masker.earlier_secrets_in([text.encode()], before=len(factories) * 2, leaving_out=[])
    assert found is not None and set(found[1].values()) == {"test_17"}
