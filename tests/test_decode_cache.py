"""The decoded runs of a text are kept and given back as they were made: same runs, same
findings, memory bounded, and a decoder that cannot be hashed still decodes."""

from __future__ import annotations

import base64
import traceback
from collections.abc import Iterator

import pytest

from leakcheck import CanaryFactory, Scanner
from leakcheck import decode as decode_module
from leakcheck.decode import DECODERS, decode_runs


def _traceback_text() -> str:
    try:
        {}["missing"]
    except KeyError as exc:
        return "".join(traceback.format_exception(exc))
    raise AssertionError("unreachable")


TEXTS = [
    b"",
    b"plain text without anything to decode\n",
    _traceback_text().encode(),
    b"token=%41%42%43%44%45%46%47%48 and " + base64.b64encode(b"x" * 40),
    b"  \xe2\x94\x82 folded line with a long token abcdefghijklmnopqrstuvwxyz \xe2\x94\x82\n"
    b"  \xe2\x94\x82 0123456789abcdefghij \xe2\x94\x82\n",
]


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_kept_runs_are_the_runs(text: bytes) -> None:
    made = list(decode_module._runs(text, DECODERS))
    first = list(decode_runs(text))
    again = list(decode_runs(bytes(bytearray(text))))  # an equal text, another object
    assert first == made and again == made


def test_a_text_seen_before_is_still_searched_for_new_secrets() -> None:
    """The runs are the text's; the secrets searched in them are each scanner's own."""
    factory = CanaryFactory(seed=3, namespace="decode-cache")
    first, second = factory.secret("bearer"), factory.secret("bearer")
    text = f"auth={base64.b64encode(base64.b64encode(second.value.encode())).decode()}\n"
    assert not Scanner([first], decode=True).scan(text)
    found = Scanner([second], decode=True).scan(text)  # the same text, its runs kept
    assert [f.secret_id for f in found] == [second.id]
    assert found[0].form.startswith("base64>base64")


def test_the_kept_runs_stay_within_their_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(decode_module, "_cache", type(decode_module._cache)())
    monkeypatch.setattr(decode_module, "_cache_size", 0)
    monkeypatch.setattr(decode_module, "_CACHE_BYTES", 4096)
    for n in range(200):
        decode_runs(b"%d " % n + base64.b64encode(b"%06d" % n * 8))
    assert 0 < decode_module._cache_size <= 4096
    assert len(decode_module._cache) < 200
    kept = sum(
        len(text) + sum(len(run[3]) for run in runs) + 64
        for (text, _), runs in decode_module._cache.items()
    )
    assert kept == decode_module._cache_size


def test_large_texts_and_unhashable_decoders_are_decoded_without_keeping() -> None:
    class Decoder:  # a plugin's callable object that defines __eq__ and so cannot be hashed
        def __eq__(self, other: object) -> bool:
            return isinstance(other, Decoder)

        def __call__(self, buf: bytes) -> Iterator[tuple[int, int, bytes]]:
            yield 0, 3, b"xyz"

    decoders = {**DECODERS, "odd": Decoder()}
    assert list(decode_runs(b"abc def", decoders)) == [("odd", 0, 3, b"xyz")]
    big = b"A" * (decode_module._CACHED_TEXT_BYTES + 1)
    before = len(decode_module._cache)
    list(decode_runs(big))
    assert len(decode_module._cache) == before


def test_the_keys_share_one_tuple_of_decoders() -> None:
    """Every kept text's key names its decoders through one shared tuple: one of its own
    per key was ten more objects for the garbage collector to walk, thousands of keys in
    a session."""
    decoders = dict(DECODERS)  # another dict, equal to the built-in one
    texts = [b"shared decoders %d %%41%%42" % n for n in range(3)]
    for text in texts:
        decode_runs(text, decoders)
        decode_runs(text, dict(DECODERS))
    kept = [key[1] for key in decode_module._cache if key[0] in texts]
    assert len(kept) == len(texts)
    assert all(sets is kept[0] for sets in kept)
