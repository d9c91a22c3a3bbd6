"""A scan of several batches masks what it prints with what its scanners learned
(``Output.learn``: their needles' heads) instead of building each batch's scanner again: it
chooses the same secrets for the masker as those scanners do, and prints the same bytes."""

from __future__ import annotations

import base64
import json
import random
import string
from pathlib import Path

import pytest
from conftest import random_tokens, scan_report

import leakcheck.cli.budget as budget
import leakcheck.cli.output as output_module
from leakcheck import Secret
from leakcheck.cli.budget import batches_of
from leakcheck.cli.output import Output
from leakcheck.detect import Scanner
from leakcheck.forms import needle_table


def _tokens(count: int, seed: int) -> list[str]:
    prefixes = ("ghp_", "sk_live_", "xoxb-", "glpat-", "AKIA", "")
    return random_tokens(count, seed, length=30, prefixes=prefixes)


def _secrets(tokens: list[str]) -> list[Secret]:
    return [Secret.from_user(t, id=f"S{n}") for n, t in enumerate(tokens, start=1)]


def _learned(secrets: list[Secret]) -> Output:
    """An Output that learned from the scanners of a scan's batches."""
    output = Output()
    output.use(secrets)
    for batch in batches_of(secrets):
        output.learn(Scanner(batch, decode=True))
    return output


def _rebuilt(secrets: list[Secret]) -> Output:
    """An Output that builds each batch's scanner again (what the masker did)."""
    output = Output()
    output.use(secrets)
    return output


def _texts(tokens: list[str]) -> list[str]:
    """Texts holding pieces of some of ``tokens``, in several forms, at every alignment."""
    texts = [f"S{n}" for n in range(1, len(tokens) + 1)] + ["secret", "raw", "base64@0"]
    for shift in range(9):  # a needle starting at each offset modulo a head's 8 bytes
        pad = "~" * shift
        texts += [
            pad + tokens[3],
            pad + base64.b64encode(tokens[40].encode()).decode(),
            pad + tokens[77].encode().hex(),
            pad + "credential ending in " + tokens[101][-8:],
            pad + "..." + tokens[130][-4:] + " rejected",
            pad + tokens[150][:16],
            pad + "tok=" + tokens[199][-14:],
        ]
    return texts


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(budget, "BATCH_SECRETS", 37)


@pytest.mark.usefixtures("small_batches")
def test_the_learned_heads_choose_what_the_batch_scanners_choose(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tokens = _tokens(240, 1)
    secrets = _secrets(tokens)
    texts = _texts(tokens)
    expected = _rebuilt(secrets)._candidates(texts)  # noqa: SLF001
    assert {3, 40, 77, 101, 130, 150, 199} <= expected  # (indexes: S4, S41, ...)
    learned = _learned(secrets)
    # (the heads looked up a few at a time: a piece across two sets is found too)
    monkeypatch.setattr(output_module, "HEAD_SET_BYTES", 61)
    assert learned._candidates(texts) == expected  # noqa: SLF001
    # and alone, texts holding a single needle of a secret: at each offset modulo 8, and
    # across two sets of heads
    # (a masked tail of 4 characters: no masking window of the secret is in it)
    forms = output_module.detection_forms()
    index = next(
        i
        for i in range(160, 240)
        if f"ending in {tokens[i][-4:]}".encode() in needle_table(secrets[i], forms)
    )
    tail = f"ending in {tokens[index][-4:]}"
    assert _rebuilt(secrets)._candidates(["~" * 58 + tail]) == {index}  # noqa: SLF001
    for pad in (0, 1, 7, 15, 58, 60):
        assert learned._candidates(["~" * pad + tail]) == {index}  # noqa: SLF001
    # a needle shorter than a head (7 bytes)
    short = ["..." + tokens[130][-4:] + " rejected"]
    assert _rebuilt(secrets)._candidates(short) == {130}  # noqa: SLF001
    assert learned._candidates(short) == {130}  # noqa: SLF001


@pytest.mark.usefixtures("small_batches")
def test_a_needle_two_secrets_share_chooses_both() -> None:
    # the lower-case spelling of one is the other's raw value: one pattern, two secrets
    rng = random.Random(2)
    low = "ghp_" + "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(30))
    mixed = low[:4] + "".join(c.upper() if i % 2 else c for i, c in enumerate(low[4:]))
    tokens = _tokens(60, 3)
    tokens[10], tokens[11] = low, mixed
    secrets = _secrets(tokens)
    text = [f"got {low} once"]
    expected = _rebuilt(secrets)._candidates(text)  # noqa: SLF001
    assert {10, 11} <= expected
    assert _learned(secrets)._candidates(text) == expected  # noqa: SLF001


@pytest.mark.usefixtures("small_batches")
def test_what_is_not_learned_is_rebuilt() -> None:
    tokens = _tokens(100, 4)
    secrets = _secrets(tokens)
    texts = [tokens[5], tokens[90]]
    output = Output()
    output.use(secrets)
    first, *_ = batches_of(secrets)
    output.learn(Scanner(first))  # one batch of three: the others' scanners built again
    assert output._candidates(texts) == {5, 90}  # noqa: SLF001
    output.learn(Scanner(secrets[10:20]))  # not the next batch: nothing learned is used
    assert output._learned is None  # noqa: SLF001
    assert output._candidates(texts) == {5, 90}  # noqa: SLF001


@pytest.mark.usefixtures("small_batches")
def test_a_scan_in_batches_prints_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tokens = _tokens(200, 5)
    lines = ["GET /health 200"] * 40
    for n in (3, 50, 120, 199):
        lines.insert(
            n % 40,
            f"auth={tokens[n]} next={tokens[n - 1][:14]} "
            f"b64={base64.b64encode(tokens[n - 2].encode()).decode()} "
            f"tail=****{tokens[n - 3][-4:]}",
        )
    log = "\n".join(lines) + "\n"
    learned = scan_report(tmp_path, tokens, log)
    monkeypatch.setattr(Output, "learn", lambda self, scanner: None)
    assert scan_report(tmp_path, tokens, log) == learned
    report = json.loads(learned)
    assert report["findings"]
    assert not any(t in learned for t in tokens)


def test_a_scanner_puts_needles_off_exactly_when_the_count_stays_low() -> None:
    # the count of what putting off would reach stops once it reaches the threshold: the
    # same decision as the whole sum
    from leakcheck import engine
    from leakcheck.forms import RUN_KEEPING_MAX_NEEDLES, anchor_run

    tokens = _tokens(16, 6)
    for count in range(1, 16):
        secrets = _secrets(tokens[:count])
        scanner = Scanner(secrets, backend="ahocorasick")
        eager = scanner._eager_forms  # noqa: SLF001
        deferred = [s for s in secrets if anchor_run(s) is not None]
        most = len(deferred) * RUN_KEEPING_MAX_NEEDLES + sum(
            len(needle_table(s, eager if s in deferred else scanner.forms)) for s in secrets
        )
        assert bool(scanner._deferred) == (most < engine.ANCHOR_FROM_PATTERNS)  # noqa: SLF001


@pytest.mark.usefixtures("small_batches")
def test_a_head_every_secret_has_makes_no_candidate_of_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # every secret has needles "ending in " + its tail: their head is in this text, their
    # last 4 bytes are not, and no secret's needles are searched for
    tokens = _tokens(120, 7)
    secrets = _secrets(tokens)
    learned = _learned(secrets)
    made: list[Secret] = []

    def counted(secret: Secret, forms: tuple[object, ...]) -> dict[bytes, str]:
        made.append(secret)
        return needle_table(secret, forms)  # type: ignore[arg-type]

    monkeypatch.setattr(output_module, "needle_table", counted)
    texts = ["card ending in ~~~~ was declined", "ending in ...."]
    assert learned._candidates(texts) == set()  # noqa: SLF001
    assert len(made) <= 2
