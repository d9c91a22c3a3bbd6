"""Strings written as JSON are masked as JSON spells them (``masking.masked_for_json``).

A report masks its strings before it dumps them (masking the dumped text could cut an
escape in two). A masker judges a text as it is; JSON spells ``"`` and ``\\`` with two
characters: a few random characters of a secret between its hostile ones, no piece as
they are, can be one as JSON spells them (a masking window of an escaped spelling counts
its characters' bits). Every canary below is found by a search over seeds, the same on
every run; assertions compare booleans and counts, never a value.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from leakcheck.canaries import CanaryFactory, Secret
from leakcheck.detect import Scanner
from leakcheck.findings import MASK_LABEL
from leakcheck.forms import MASKING_FORMS, json_spelling, window_forms
from leakcheck.masking import SessionMasker, mask_strings, masked_for_json

pytest_plugins = ["pytester"]

#: What makes a JSON spelling of a text hold a hostile character's escape.
ESCAPED = str.maketrans({'"': "q", "\\": "q"})


@functools.lru_cache(maxsize=64)
def strict(secret: Secret) -> Scanner:
    """Every form and every masking-size piece (the check the self-leak tests make)."""
    return Scanner([secret], decode=True, forms=MASKING_FORMS, strict=True)


def shows_piece(secret: Secret, text: str) -> bool:
    return bool(strict(secret).scan(text))


@functools.cache
def piece_case() -> tuple[Secret, str]:
    """A canary password and a cut of it that its masker leaves as it is, whose JSON
    spelling holds a piece of it."""
    for seed in range(300):
        secret = CanaryFactory(f"json{seed}", namespace="t").nth("password", 1)
        masker = SessionMasker()
        masker.add([secret])
        value = secret.value
        for start in range(len(value)):
            for end in range(start + 2, min(start + 9, len(value)) + 1):
                text = f"cut: {value[start:end]} (end)"
                if masker.mask(text) == text and shows_piece(secret, json_spelling(text)):
                    return secret, text
    raise AssertionError("no seed gives such a cut")


def masker_of(secret: Secret) -> SessionMasker:
    masker = SessionMasker()
    masker.add([secret])
    return masker


def test_a_piece_that_only_json_spells_is_masked() -> None:
    secret, text = piece_case()
    mask = masker_of(secret).mask
    assert mask(text) == text  # the case is real: as it is, nothing to mask
    assert shows_piece(secret, json.dumps(text, ensure_ascii=False))
    masked = masked_for_json(mask)(text)
    assert MASK_LABEL.search(masked) is not None
    assert not shows_piece(secret, json.dumps(masked, ensure_ascii=False))
    assert masked.startswith("cut: ") and masked.endswith(" (end)")  # the rest kept


def test_the_same_cut_without_escapes_is_left_as_it_is() -> None:
    secret, text = piece_case()
    mask = masker_of(secret).mask
    twin = text.translate(ESCAPED)  # nothing JSON escapes
    assert json_spelling(twin) == twin
    assert masked_for_json(mask)(twin) == mask(twin)
    other = 'a line with "quotes" and a back\\slash, no secret'
    assert masked_for_json(mask)(other) == other


def test_what_the_masker_masks_as_it_is_stays_masked() -> None:
    secret, _ = piece_case()
    mask = masker_of(secret).mask
    text = f"token={secret.value}"
    masked = masked_for_json(mask)(text)
    assert masked == mask(text) and MASK_LABEL.search(masked) is not None
    assert not shows_piece(secret, json.dumps(masked, ensure_ascii=False))


INNER = """
def test_cut(leakcheck):
    password = leakcheck.secret("password")
    leakcheck.expose({{"detail": "login failed for " + password[:{cut}]}})
"""


def _seed_and_cut(nodeid: str) -> tuple[str, int] | None:
    """A seed whose first password of ``nodeid``, cut after some characters, shows in a
    finding's excerpt a piece that only JSON spells (prefix masked, the rest raw)."""
    for n in range(400):
        seed = f"report{n}"
        secret = CanaryFactory(seed, namespace=nodeid).nth("password", 1)
        mask = masker_of(secret).mask
        for cut in range(14, 30):
            shown = mask("login failed for " + secret.value[:cut])
            if shows_piece(secret, json.dumps(shown, ensure_ascii=False)):
                return seed, cut
    return None


def test_the_plugins_json_report_shows_no_piece_that_json_spells(
    pytester: pytest.Pytester,
) -> None:
    found = _seed_and_cut("test_cut.py::test_cut")
    assert found is not None
    seed, cut = found
    pytester.makepyfile(test_cut=INNER.format(cut=cut))
    result = pytester.runpytest(
        f"--leakcheck-seed={seed}", "--leakcheck-report=report.json", "-p", "no:randomly"
    )
    assert result.ret == 1  # the prefix is a leak
    secret = CanaryFactory(seed, namespace="test_cut.py::test_cut").nth("password", 1)
    report = Path(pytester.path, "report.json").read_text(encoding="utf-8")
    assert '"findings"' in report
    assert not shows_piece(secret, report)
    assert not shows_piece(secret, "\n".join(result.outlines + result.errlines))


def test_a_clean_document_is_judged_in_two_lookups_whatever_the_canaries() -> None:
    """A report's strings are joined and judged at once; as JSON spells them, a record's
    strings are each spelled, never the separator that joins them: JSON spells it with
    ``\\u0000``, and the window ``00\\u00`` of a canary holding "00é" (its ASCII JSON
    spelling) matched it, so every record of a matrix session's report (one such canary in
    a few hundred) was judged string by string, a third of the session's time. The leaky
    twin: the same window in one string is still masked."""
    secret = Secret.from_user("Zq8Vw00\u00e9Kt3xLm9Rp", id="S1")
    assert any(window.startswith(b"00\\u00") for _, window in window_forms(secret))
    masker = SessionMasker()
    masker.add([secret])
    looked_up: list[int] = []

    def mask(text: str) -> str:
        looked_up.append(len(text))
        return masker.mask(text)

    document = {"tests": [{"test": f"t.py::test_{n}", "kind": "bearer"} for n in range(50)]}
    assert mask_strings(document, masked_for_json(mask)) is document
    assert len(looked_up) <= 2, len(looked_up)
    leaky = {"tests": [*document["tests"], {"excerpt": "\u2026w00\u00e9Kt\u2026"}]}
    masked = mask_strings(leaky, masked_for_json(mask))
    assert masked["tests"][:50] == document["tests"]
    masked_piece = MASK_LABEL.search(masked["tests"][50]["excerpt"]) is not None
    assert masked_piece  # (a boolean: a failure must not print the piece it left)
