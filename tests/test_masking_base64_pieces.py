"""A piece of a secret's base64 that begins off the 4-character grid is masked wherever it
is: one the app cut from a longer base64 (``b64[9:45]`` printed after a word), one glued
to the line before it (the token, then its base64 on the next line), one without a digit,
``+`` or ``/`` (24 characters lack all three 1 time in 140). Each showed in full in a
``-rA`` section or a finding's excerpt (found by a fuzzing helper). Maskers decode every
base64 run at every shift; detection keeps one shift mid-text (a whole secret's base64 is
a needle at every offset; the shifts took its decoding pass over small texts from 7.0 to
4.2 MiB/s). Nothing here prints a secret: assertions count pieces."""

from __future__ import annotations

import base64
import re

import pytest

from leakcheck import LeakCheck, Scanner
from leakcheck.canaries import CanaryFactory, Secret
from leakcheck.decode import (
    _one_case_mostly,
    all_decoders,
    base64_runs,
    masking_base64_runs,
    masking_decoders,
)
from leakcheck.extensions import masking_forms
from leakcheck.masking import SessionMasker

PIECE = 10


def _shown(text: str, encoded: str) -> int:
    """How many PIECE-character pieces of ``encoded`` ``text`` holds."""
    return sum(encoded[i : i + PIECE] in text for i in range(len(encoded) - PIECE + 1))


def _maskers(secret: Secret) -> list:
    """The session's masker and a test's (``LeakCheck.mask``'s scanner)."""
    session = SessionMasker()
    session.add([secret])
    return [session.mask, Scanner([secret], decode=True, forms=masking_forms()).mask]


@pytest.mark.parametrize("kind", ["ssh_password", "bearer", "api_key"])
@pytest.mark.parametrize("offset", range(8))
def test_a_piece_cut_off_the_grid_after_a_word_is_masked(kind: str, offset: int) -> None:
    secret = CanaryFactory(seed=120, namespace="b64", announce=False).secret(kind)
    encoded = base64.b64encode(secret.value.encode()).decode()
    text = "hello\n" + encoded[offset : offset + 36] + "\n"
    for mask in _maskers(secret):
        shown = _shown(mask(text), encoded)
        assert not shown, f"{shown} pieces of the base64 shown"


def test_a_piece_glued_to_the_line_before_it_is_masked() -> None:
    factory = CanaryFactory(seed=7, namespace="glued", announce=False)
    for _ in range(20):
        secret = factory.secret("bearer")
        encoded = base64.b64encode(secret.value.encode()).decode()
        text = secret.value + "\n" + encoded[:24] + "\n"
        for mask in _maskers(secret):
            shown = _shown(mask(text), encoded)
            assert not shown, f"{shown} pieces of the base64 shown"


def test_a_piece_without_a_digit_plus_or_slash_is_masked() -> None:
    factory = CanaryFactory(seed=1, namespace="letters", announce=False)
    for _ in range(5000):  # (about 1 in 140 canaries: found within the first few hundred)
        secret = factory.secret("ssh_password")
        encoded = base64.b64encode(secret.value.encode()).decode()
        if not re.search(r"[0-9+/]", encoded[:24]):
            break
    else:
        pytest.fail("no canary whose base64 begins with 24 letters")
    for mask in _maskers(secret):
        shown = _shown(mask("x\n" + encoded[:24] + "\n"), encoded)
        assert not shown, f"{shown} pieces of the base64 shown"


def test_identifiers_are_still_not_decoded() -> None:
    for word in (b"test_a_stream_kept_from_a_suspended", b"SessionMaskerAddBatchIndex",
                 b"CONSTANT_CASE_NAME_HERE"):  # fmt: skip
        assert _one_case_mostly(word)
        assert not list(base64_runs(b"x " + word))
    assert not _one_case_mostly(b"SWhFdVZjMWFHckhCIyQvKyYn")  # (random letters: both cases)


def test_maskers_decode_every_shift_and_detection_one() -> None:
    assert masking_decoders()["base64"] is masking_base64_runs
    assert all_decoders()["base64"] is base64_runs
    secret = Secret.from_user("Zx8vQ2pL7mN4rT6wY1uI3oP5aS9dF0gH", id="t")
    detection = Scanner([secret], decode=True)
    masker = Scanner([secret], decode=True, forms=masking_forms())
    assert detection._decoders["base64"] is base64_runs
    assert masker._decoders["base64"] is masking_base64_runs
    assert LeakCheck(seed=1)._build_masker()._decoders["base64"] is masking_base64_runs
    blob = base64.b64encode(b"..." + secret.value.encode()).decode()
    # mid-text, off the grid: decoded at every shift by a masker's decoder only
    assert len(list(masking_base64_runs(b"w " + blob[1:].encode()))) == 4
    assert len(list(base64_runs(b"w " + blob[1:].encode()))) == 1
