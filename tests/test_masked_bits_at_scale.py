"""A masked head or tail ("credential ending in 7KQ2") in a scan for many secrets: it is
some secret's by chance n times as often for n secrets, so past 20 secrets the pieces
reported must carry log2(n / 20) more bits (``forms.masked_bits_for``); still masked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import random_tokens, scan_report

from leakcheck import Secret
from leakcheck.cli import main
from leakcheck.detect import Scanner
from leakcheck.engine import available_backends
from leakcheck.forms import TAIL_BITS, masked_bits_for


def test_the_bits_needed_grow_with_the_log_of_the_secrets() -> None:
    assert masked_bits_for(1) == masked_bits_for(20) == TAIL_BITS
    assert masked_bits_for(40) == pytest.approx(TAIL_BITS + 1)
    assert masked_bits_for(100_000) == pytest.approx(TAIL_BITS + 12.29, abs=0.01)


def _strong_tailed(seed: int) -> Secret:
    """A user token whose last 4 characters carry TAIL_BITS and last 6 what 100,000
    secrets need (the strength estimate gives a few tokens' tails less)."""
    return next(
        secret
        for token in random_tokens(100, seed)
        for secret in [Secret.from_user(token, id="S1")]
        if sum(secret.bits[-4:]) >= TAIL_BITS and sum(secret.bits[-6:]) >= masked_bits_for(100_000)
    )


@pytest.mark.parametrize("backend", available_backends())
def test_a_four_character_tail_is_not_reported_among_100000_secrets(backend: str) -> None:
    secret = _strong_tailed(1)
    four = f"credential ending in {secret.value[-4:]} was rejected"
    six = f"credential ending in {secret.value[-6:]} was rejected"
    default = Scanner([secret], backend=backend)
    assert [f.form for f in default.scan(four)] == ["masked-tail-4"]
    many = Scanner([secret], masked_bits=masked_bits_for(100_000), backend=backend)
    assert many.scan(four) == []
    # six mixed-case alphanumerics carry 35.7 bits: still reported
    assert [f.form for f in many.scan(six)] == ["masked-tail-6"]
    # the rest of the secret's forms are what they were (on the automaton the URL and
    # JSON spellings are made once the value's run is seen: made here)
    assert [f.form for f in many.scan(f"token={secret.value}")] == ["raw"]
    assert many.scan(four) == []
    # our own output masks the weak piece all the same: leakcheck prints none of it
    assert secret.value[-4:] not in many.mask(four)
    assert "\u00abcanary:secret:masked-tail-4\u00bb" in many.mask(four)


def test_the_scan_raises_the_bits_for_the_secrets_it_is_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tokens = random_tokens(2_000, 7)  # log2(100) = 6.6 bits more: 29.6
    log = f"auth failed: credential ending in {tokens[0][-4:]}\n"

    def forms_found(secrets: list[str]) -> list[str]:
        report = json.loads(scan_report(tmp_path, secrets, log))
        notes = [n for n in report.get("notes", []) if "secrets are searched at once" in n]
        said = [line for line in capsys.readouterr().err.splitlines() if "at once" in line]
        assert said == [f"leakcheck: note: {note}" for note in notes]  # never silently
        if len(secrets) > 20:
            assert notes and "reported only when its characters carry 29.6 bits" in notes[0]
        else:
            assert notes == []
        return [f["form"] for f in report["findings"]]

    assert forms_found(tokens[:20]) == ["masked-tail-4"]
    report = json.loads(scan_report(tmp_path, tokens[:20], log))
    assert "unreported_masked_pieces" not in report
    assert forms_found(tokens) == []
    # not reported, and not called clean either: said, counted (a CI scan of a matrix
    # run's 612 canaries called a log of masked tokens "clean")
    report = json.loads(scan_report(tmp_path, tokens, log))
    assert report["unreported_masked_pieces"] == 1
    code = main(
        ["scan", "--secrets-file", str(tmp_path / "secrets.txt"), str(tmp_path / "app.log")]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "1 masked piece of a secret (a head or tail beside a mask" in out
    assert "no finding reported, and not clean" in out and "clean: no form" not in out
    # the report prints nothing of it: the log line is not an excerpt (no finding)
    assert tokens[0][-4:] not in (tmp_path / "report.json").read_text()
