"""Masking never makes leakcheck's own words an oracle.

A user secret accepted early (``canaries.early_bound``) carries its class bits for
masking, an upper bound of the full estimate. Masked with those, a dictionary word inside
the secret was a masking window wherever it appeared: in leakcheck's and pytest's own
fixed text too. ``leakcheck scan`` printed "93 «canary:secret:fragment»" for "93 needles"
(so the secret holds "needles"), renamed the JSON report's ``needles`` key, masked the
SARIF tool name for a secret holding "leakcheck", and pytest's header read "test
«canary:secret:fragment» starts" for a session secret holding "session". Masking windows
now count the full estimate wherever the two bounds would make other windows
(``forms._exact_mask_bits``), as a secret judged in full always did.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import self_scan

from leakcheck import Secret
from leakcheck.canaries import estimate_bits
from leakcheck.cli import main
from leakcheck.forms import upper_mask_bits, window_forms

pytest_plugins = ["pytester"]

#: Random but for a dictionary word that leakcheck's own output holds.
NEEDLES = "Mx4@needles^Vb7pQ9sK2"
TOOL = "Qz7#leakcheck$Xk9pLw2mR4"
SESSION = "Zq8#session$Xk9pLw2mR4v"


def _windows(secret: Secret) -> set[bytes]:
    return {needle for _, needle in window_forms(secret)}


def test_a_dictionary_word_in_an_early_secret_makes_no_masking_window() -> None:
    secret = Secret.from_user(NEEDLES)
    assert len(secret.mask_bits) == len(NEEDLES), "the value is no longer accepted early"
    windows = _windows(secret)
    assert not {b"needle", b"eedles"} & windows
    # its random runs are still masked, each window of the full estimate is there
    assert {b"Vb7pQ9", b"Mx4@ne"} <= windows
    with upper_mask_bits():  # the scan's superset: the class bits' windows
        upper = _windows(secret)
    assert {b"needle", b"eedles"} <= upper and windows <= upper


def test_the_windows_are_those_of_the_full_estimate() -> None:
    """An early secret masks as the same secret judged in full (no lower bound: zxcvbn)."""
    for value in (NEEDLES, TOOL, SESSION, "ghp_Wd4Kx9Qm2Vt7Lp3Rz8Hn5Jc1Fb6Gs0Ya"):
        early = Secret.from_user(value)
        full = Secret(value, early.kind, early.id, early.secret_class, tuple(estimate_bits(value)))
        assert _windows(early) == _windows(full), value


def _scan(tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str, *args: str) -> str:
    secrets = tmp_path / "secrets.txt"
    secrets.write_text(value + "\n", encoding="utf-8")
    log = tmp_path / "app.log"
    log.write_text(f"hello {value} bye\n", encoding="utf-8")
    code = main(["scan", "--secrets-file", str(secrets), *args, str(log)])
    out, err = capsys.readouterr()
    assert code == 1, err
    self_scan(out + err, [Secret.from_user(value)], "leakcheck scan's output")
    assert value not in out + err
    return out


def test_the_scans_own_words_stay_whole(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = _scan(tmp_path, capsys, NEEDLES)
    assert " needles, engine " in text and "«canary:secret:raw»" in text
    report = json.loads(_scan(tmp_path, capsys, NEEDLES, "--format", "json"))
    assert isinstance(report["needles"], int)
    sarif = json.loads(_scan(tmp_path, capsys, TOOL, "--format", "sarif"))
    driver = sarif["runs"][0]["tool"]["driver"]
    assert driver["name"] == "leakcheck" and "leakcheck" in driver["informationUri"]


def test_pytests_own_words_stay_whole(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STAGING_TOKEN", SESSION)
    pytester.makeini("[pytest]\nleakcheck_secret_env = STAGING_TOKEN\n")
    pytester.makepyfile(
        test_env="""
        import os

        def test_leaks(leakcheck):
            leakcheck.expose({"detail": "rejected " + os.environ["STAGING_TOKEN"]})
        """
    )
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider")
    text = "\n".join(result.outlines + result.errlines)
    self_scan(text, [Secret.from_user(SESSION)], "pytest's output")
    result.assert_outcomes(failed=1)
    assert "test session starts" in text and "short test summary" in text


def test_the_scans_superset_of_windows_asks_no_full_estimate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The scan's masker looks for the secrets whose windows can be in what it prints over
    every secret (100,000 at scale): with the class bits, no zxcvbn for each of them."""
    from leakcheck import forms
    from leakcheck.cli.output import Output

    secrets = [Secret.from_user(f"{NEEDLES}{n:04d}", id=f"S{n}") for n in range(50)]
    asked: list[str] = []
    monkeypatch.setattr(forms, "estimate_bits", lambda value: asked.append(value) or [])
    output = Output()
    output.use(secrets)
    heads = output._window_heads()
    assert not asked and len(heads) == len(secrets)
    assert all(b"needle" in head for head in heads)  # the class bits' windows, a superset
