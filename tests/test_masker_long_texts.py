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


#: Pieces a masker that decodes a small text whole masks (the token's own characters are
#: not among them: a base64 piece off the grid, the hex of part of it).
def _encoded_pieces(value: str) -> dict[str, str]:
    data = value.encode()
    return {
        "base64 piece": "said " + base64.b64encode(data).decode()[5:41] + " ok",
        "hex of a piece": "id=" + data[4:24].hex(),
        "urlsafe base64 of a piece": "t=" + base64.urlsafe_b64encode(data[4:30]).decode(),
    }


@pytest.mark.parametrize("masker", ["scanner", "session"])
def test_a_small_text_is_decoded_whole_after_a_long_one(masker: str) -> None:
    """A masker that had masked one text of 256 KiB or more (``detect.KEYED_FROM_BYTES``)
    decoded every text after it around its keys only, as a long text is: a base64 piece
    of a token or the hex of part of it, masked by a fresh masker, then showed (a test's
    long captured log first; found by a fuzzing helper)."""
    secret = CanaryFactory(seed=1, announce=False).secret("password")
    long_text = "lorem ipsum dolor sit amet " * 10_000 + secret.value  # (it holds the token)
    if masker == "scanner":
        mask = masking.masking_scanner([secret]).mask
    else:
        session = SessionMasker()
        session.add([secret], by="t")
        mask = session.mask
    assert secret.value not in mask(long_text)
    for name, text in _encoded_pieces(secret.value).items():
        piece = text.split(" ")[1] if text.startswith("said") else text.split("=", 1)[1]
        assert piece not in mask(text), f"{name} shown after a long text"
