"""The pieces of a user secret accepted early (no zxcvbn at start-up) are reported as the
full estimate makes them: its bare prefix and suffix and its masked heads and tails are
searched with its class bits (never fewer than zxcvbn's, so shorter pieces: a superset),
and a hit of one that its lower bound would make otherwise is verified with the full
estimate, zxcvbn then run for that secret once (``forms.unsure_pieces``,
``forms.verify_piece``). Counted with the lower bound they came out longer than zxcvbn's
wherever a character could begin a word: the last 16 characters of an ``sk-proj-`` key
were found with ``--full-estimate`` and not by default (found by a tester).

All tokens here are random test values, made by the tests; none is printed."""

from __future__ import annotations

import base64
import json
import random
import string
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import self_scan

import leakcheck.canaries as canaries_module
import leakcheck.forms as forms_module
from leakcheck import Scanner, Secret
from leakcheck.canaries import FRAGMENT_BITS
from leakcheck.cli import main
from leakcheck.forms import TAIL_BITS, head_bits, masked_bits_for

ALNUM = string.ascii_letters + string.digits


def _rnd(rng: random.Random, n: int, alphabet: str = ALNUM) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


#: token families as a secrets file holds them (what the tester measured)
FAMILIES: dict[str, Callable[[random.Random], str]] = {
    "ghp": lambda r: "ghp_" + _rnd(r, 36),
    "sk-proj": lambda r: "sk-proj-" + _rnd(r, 48, ALNUM + "-_"),
    "xoxb": lambda r: (
        f"xoxb-{_rnd(r, 12, string.digits)}-{_rnd(r, 13, string.digits)}-" + _rnd(r, 24)
    ),
    "glpat": lambda r: "glpat-" + _rnd(r, 20, ALNUM + "-_"),
    "plain": lambda r: _rnd(r, 32),
}


def token(family: str, seed: int) -> str:
    return FAMILIES[family](random.Random(f"early-fragments:{family}:{seed}"))


def _shortest(bits: tuple[float, ...] | list[float], need: float) -> int:
    total = 0.0
    for n, b in enumerate(bits, start=1):
        total += b
        if total >= need:
            return n
    return len(bits) + 1


def lower_and_full_lengths(value: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """(prefix, suffix) lengths carrying FRAGMENT_BITS counted with the early accept's lower
    bound and with the full estimate (the public head at none, as ``head_bits`` says)."""
    early = Secret.from_user(value, id="t")
    assert early.mask_bits, "the value is no longer accepted early"
    full = Secret.from_user(value, id="t", early=False)
    return (
        (_shortest(head_bits(early), FRAGMENT_BITS), _shortest(early.bits[::-1], FRAGMENT_BITS)),
        (_shortest(head_bits(full), FRAGMENT_BITS), _shortest(full.bits[::-1], FRAGMENT_BITS)),
    )


def scan(
    capsys: pytest.CaptureFixture[str], secrets: list[Secret], *args: str | Path
) -> tuple[int, list[str]]:
    code = main(["scan", *map(str, args), "--format", "json"])
    out, err = capsys.readouterr()
    self_scan(out + err, secrets, "scan output")
    return code, [f["form"] for f in json.loads(out)["findings"]]


@pytest.mark.parametrize(
    ("family", "seed", "cut"), [("sk-proj", 1, "suffix"), ("ghp", 0, "prefix")]
)
def test_an_sk_key_s_last_16_and_a_ghp_token_s_first_16_characters_are_found_by_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], family: str, seed: int, cut: str
) -> None:
    value = token(family, seed)
    lower, full = lower_and_full_lengths(value)
    at = 0 if cut == "prefix" else 1
    # the lower bound needed more than 16 characters (the piece went unreported), the
    # full estimate fewer
    assert full[at] <= 16 < lower[at]
    piece = value[:16] if cut == "prefix" else value[-16:]
    secrets_file, log = tmp_path / "secrets.txt", tmp_path / "app.log"
    secrets_file.write_text(value + "\n")
    log.write_text(f"2024-05-01 12:00:01 WARN retrying with credential {piece} (truncated)\n")
    # and base64 of the line: the piece found in a decoded layer is verified there
    encoded = tmp_path / "encoded.log"
    encoded.write_text("payload=" + base64.b64encode(log.read_bytes()).decode() + "\n")
    secrets = [Secret.from_user(value, id="s")]
    for options in ([], ["--full-estimate"]):
        code, forms = scan(capsys, secrets, "--secrets-file", secrets_file, *options, log)
        assert (code, forms) == (1, [f"{cut}-{full[at]}"]), options
        code, forms = scan(capsys, secrets, "--secrets-file", secrets_file, *options, encoded)
        assert (code, forms) == (1, [f"base64>{cut}-{full[at]}"]), options


def _reported(scanner: Scanner, text: str) -> list[tuple[str, int, int]]:
    return sorted((f.form, f.offset, f.length) for f in scanner.scan(text))


def _pieces_texts(value: str) -> list[str]:
    """Texts holding a bare prefix or suffix of every length, or a masked head or tail."""
    texts = []
    for k in range(6, len(value)):
        texts.append(f"user=bob key {value[:k]} expired\n")
        texts.append(f"user=bob key {value[-k:]} expired\n")
    for size in (4, 6, 8):
        texts.append(f"token {value[:size]}**** used\n")
        texts.append(f"token ****{value[-size:]} used\n")
        texts.append(f"the credential ending in {value[-size:]} was revoked\n")
    return texts


@pytest.mark.parametrize("masked_bits", [TAIL_BITS, masked_bits_for(100_000)])
def test_the_pieces_reported_by_default_are_those_of_the_full_estimate(masked_bits: float) -> None:
    """Every bare prefix and suffix length and masked head and tail: the findings (form,
    offset, length) of a secret accepted early are those of the same secret judged in full,
    also where a search for many secrets at once asks masked pieces for more bits."""
    differed = early_ones = 0
    for family in FAMILIES:
        for seed in range(6):
            value = token(family, seed)
            early = Secret.from_user(value, id="t")
            if not early.mask_bits:  # (a short glpat- token now and then: judged in full)
                continue
            early_ones += 1
            full = Secret.from_user(value, id="t", early=False)
            lower, by_full = lower_and_full_lengths(value)
            differed += lower != by_full
            scanners = [Scanner([s], masked_bits=masked_bits) for s in (early, full)]
            for text in _pieces_texts(value):
                found, expected = (_reported(scanner, text) for scanner in scanners)
                assert found == expected, (family, seed, text.replace(value, "<value>")[:12])
    assert early_ones >= 25
    assert differed >= 20  # (the lower bound made most of these pieces longer)


def test_a_class_bits_piece_that_the_full_estimate_rejects_is_neither_reported_nor_masked() -> None:
    """A token that begins and ends with a dictionary word: its class bits make a short
    prefix of the word and a few random characters, and a masked tail of the word; text
    holding only those is benign (zxcvbn counts the word for little), and reports and masks
    nothing, while the prefix the full estimate makes is reported."""
    rng = random.Random("early-fragments:words")
    value = "monkey" + _rnd(rng, 30) + "dragon"
    early = Secret.from_user(value, id="w")
    assert early.mask_bits  # accepted early
    full = Secret.from_user(value, id="w", early=False)
    upper_prefix = _shortest(early.mask_bits, FRAGMENT_BITS)
    full_prefix = _shortest(head_bits(full), FRAGMENT_BITS)
    lower_prefix = _shortest(head_bits(early), FRAGMENT_BITS)
    assert upper_prefix < full_prefix < lower_prefix
    assert sum(early.mask_bits[-4:]) >= TAIL_BITS > sum(full.bits[-4:])  # "agon"
    scanner = Scanner([early], decode=True)
    for benign in (
        f"see {value[:upper_prefix]}, {value[: full_prefix - 1]} and ****agon, ...agon\n",
        "note: the key ending in agon was rotated; the XXXXagon run passed\n",
    ):
        assert scanner.scan(benign) == []
        assert scanner.mask(benign) == benign
    leaked = f"see {value[:full_prefix]} in the log\n"
    assert [(f.form, f.length) for f in scanner.scan(leaked)] == [
        (f"prefix-{full_prefix}", full_prefix)
    ]


def test_a_clean_scan_runs_no_zxcvbn_and_a_piece_s_hit_runs_it_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """20 secrets accepted early: a clean text, and one holding a whole token (its pieces
    inside it are not verified), cost no zxcvbn; hits of one secret's pieces, its full
    estimate once."""
    values = [token(family, 100 + n) for n in range(4) for family in FAMILIES]
    secrets = [Secret.from_user(v, id=f"s{n}") for n, v in enumerate(values)]
    assert all(s.mask_bits for s in secrets)
    target = values[6]  # an sk-proj- key
    cut = lower_and_full_lengths(target)[1][1]  # (its full estimate, before counting)
    canaries_module._bits_of.cache_clear()
    judged: list[str] = []

    def counted(real: Callable[[str], object]) -> Callable[[str], object]:
        return lambda value: judged.append(value) or real(value)

    # (every way to zxcvbn: the detection's cached estimate, the masking windows' own)
    monkeypatch.setattr(canaries_module, "estimate_bits", counted(canaries_module.estimate_bits))
    monkeypatch.setattr(forms_module, "estimate_bits", counted(forms_module.estimate_bits))
    scanner = Scanner(secrets, decode=True)
    rng = random.Random("early-fragments:clean")
    clean = "".join(
        f"2024-05-01 12:00:{n % 60:02d} INFO GET /api/v1/items/{rng.randrange(10**6)} 200 "
        f"req={_rnd(rng, 16)} ua=curl/8.5\n"
        for n in range(300)
    )
    assert scanner.scan(clean) == []
    assert [f.secret_id for f in scanner.scan(f"auth {values[3]} denied\n")] == ["s3"]
    assert judged == []
    pieces = f"a {target[-cut:]} b {target[-cut - 3 :]} c ****{target[-8:]}\n"
    found = scanner.scan(pieces)
    assert {f.secret_id for f in found} == {"s6"} and len(found) == 3
    assert len(judged) == 1  # (the value itself is never shown)
    assert len(scanner.scan(pieces)) == 3
    assert len(judged) == 1


_PROBE = """
import json, sys
from leakcheck.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "zxcvbn": "zxcvbn" in sys.modules}), file=sys.stderr)
"""


def test_leakcheck_scan_imports_zxcvbn_only_for_a_piece_s_hit(tmp_path: Path) -> None:
    """The start-up of a clean ``leakcheck scan`` with 20 user secrets is unchanged: no
    zxcvbn; a truncated token in the log costs it once."""
    values = [token(family, 200 + n) for n in range(4) for family in FAMILIES]
    secrets_file = tmp_path / "secrets.txt"
    secrets_file.write_text("\n".join(values) + "\n")
    clean, leaky = tmp_path / "clean.log", tmp_path / "leaky.log"
    clean.write_text("GET /health 200\n" * 200)
    target = values[6]
    cut = lower_and_full_lengths(target)[1][1]
    leaky.write_text("GET /health 200\n" * 100 + f"key {target[-cut:]}\n")
    for log, expected in (
        (clean, {"code": 0, "zxcvbn": False}),
        (leaky, {"code": 1, "zxcvbn": True}),
    ):
        done = subprocess.run(
            [sys.executable, "-c", _PROBE, "scan", "--secrets-file", str(secrets_file), str(log)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert json.loads(done.stderr.strip().splitlines()[-1]) == expected, log.name
        assert not any(v[-8:] in done.stdout + done.stderr for v in values)
