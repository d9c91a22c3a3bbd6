"""Start-up of ``leakcheck scan``: a plainly random user secret is accepted without zxcvbn
(the early accept: a proven lower bound of the full estimate), a weak one is refused
exactly as before, and a plain scan imports nothing heavy."""

from __future__ import annotations

import contextlib
import json
import random
import string
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import leakcheck.canaries as canaries_module
from leakcheck import Secret, WeakSecretError
from leakcheck.canaries import MIN_SECRET_BITS, CanaryFactory, early_bound, estimate_bits

ALNUM = string.ascii_letters + string.digits
PREFIXES = ("", "ghp_", "sk_live_", "xoxb-", "glpat-", "AKIA", "sk-proj-")


def _token(rng: random.Random, length: int, alphabet: str = ALNUM) -> str:
    return "".join(rng.choice(alphabet) for _ in range(length))


def _values(seed: int, count: int) -> list[str]:
    """Random tokens, and values made of words, l33t, keyboard runs, dates and repeats."""
    from zxcvbn.matching import RANKED_DICTIONARIES

    rng = random.Random(seed)
    words = "qwerty asdfgh 1q2w3e zxcvbn 123456 abcdef 2019 1987-05-12 12/31/99 hunter2".split()
    words += "P@ssw0rd Tr0ub4dor aaaa abab xyzxyz 9876 correct horse battery staple".split()
    for name, ranked in sorted(RANKED_DICTIONARIES.items()):
        if name == "user_inputs":  # set (empty) by any earlier zxcvbn() call in this process
            continue
        by_rank = sorted(ranked, key=ranked.__getitem__)
        words += by_rank[:10] + rng.sample(by_rank, 25)
    alphabets = [ALNUM, "0123456789abcdef", ALNUM + "-_/+=!@$%", string.digits + "-./ "]
    values = []
    for _ in range(count):
        alphabet, roll = rng.choice(alphabets), rng.random()
        if roll < 0.4:
            values.append(rng.choice(PREFIXES) + _token(rng, rng.randint(12, 64), alphabet))
            continue
        parts = [
            rng.choice(words) if rng.random() < 0.6 else _token(rng, rng.randint(1, 10), alphabet)
            for _ in range(rng.randint(2, 6))
        ]
        value = "".join(c.upper() if rng.random() < 0.2 else c for c in "".join(parts))
        if roll < 0.6:
            value = value.translate(str.maketrans("aeiost", "4310$7"))
        values.append(value)
    return values


def test_the_bound_never_exceeds_the_full_estimate_at_any_character() -> None:
    """The early accept's proof, checked: each character's bound is at most the bits the
    full estimate gives it, so a value the full estimate rejects is never accepted early."""
    bounded = 0
    for value in _values(1, 200):
        bound = early_bound(value)
        if bound is None:
            continue
        bounded += 1
        full = estimate_bits(value)
        assert all(b <= f + 1e-9 for b, f in zip(bound[1], full, strict=True)), len(value)
        # what an early-accepted value keeps lies between the bound and its class bits
        assert all(k >= b - 1e-9 for k, b in zip(bound[0], bound[1], strict=True))
    assert bounded > 70


@pytest.mark.parametrize(
    "value",
    [
        "password1234password",
        "correcthorsebatterystaple",
        "Tr0ub4dor&3Tr0ub4dor&3",
        "qwertyuiopasdfghjkl",
        "1q2w3e4r5t6y7u8i9o0p",
        "abcdefghijklmnopqrstuvwxyz",
        "aaaaaaaaaaaaaaaaaaaaaaaa",
        "ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "sk_live_1234567890123456",
        "2019-05-12 2020-01-01 1999",
        "P@ssw0rdP@ssw0rd!!",
        "hunter2hunter2hunter2",
        "ilovemydogilovemydog",
        "abcabcabcabcabcabcabc",
        "Summer2024!Summer2024!",
    ],
)
def test_a_weak_secret_is_refused_as_strictly_as_by_the_full_estimate(value: str) -> None:
    assert sum(estimate_bits(value)) < MIN_SECRET_BITS  # refused by the full estimate
    assert canaries_module._early_bits(value, MIN_SECRET_BITS) is None  # never early
    with pytest.raises(WeakSecretError) as info:
        Secret.from_user(value, id="weak")
    assert value not in str(info.value)


def test_plainly_random_tokens_are_accepted_early_with_their_class_bits() -> None:
    """Accepted early: masking counts the class bits (every piece the full estimate would
    mask is masked), detection the lower bound (no fragment weaker than the full estimate
    would make it)."""
    rng = random.Random(3)
    early = 0
    for n in range(200):
        value = PREFIXES[n % len(PREFIXES)] + _token(rng, 36)
        pair = canaries_module._early_bits(value, MIN_SECRET_BITS)
        if pair is None:
            continue
        early += 1
        mask_bits, bits = pair
        secret = Secret.from_user(value, id=f"t{n}")
        assert secret.bits == bits and secret.mask_bits == mask_bits
        assert secret.total_bits >= MIN_SECRET_BITS
        full = estimate_bits(value)
        assert all(b <= f + 1e-9 <= m + 2e-9 for b, f, m in zip(bits, full, mask_bits, strict=True))
        if n % 10 == 0:
            assert sum(estimate_bits(value)) >= MIN_SECRET_BITS  # and by the full estimate
    assert early >= 190  # 36 random characters: practically always


def test_values_full_of_punctuation_are_bounded_and_accepted_early() -> None:
    """Symbols that zxcvbn may read as letters (l33t: ``@$!|(+<``...) multiply a piece's
    spellings: a header value or a password of random printable ASCII is still accepted
    early (it took zxcvbn's full estimate, 30 to 70 ms, when more than 64 spellings made a
    piece a possible word), and the bound stays below the full estimate at every
    character, l33t words hidden among the symbols included."""
    rng = random.Random(5)
    printable = string.ascii_letters + string.digits + string.punctuation
    symbols = "@$!|(+<{[10345'\"~^`%&*"
    early = 0
    values = [_token(rng, 40, printable) for _ in range(60)]
    values += [_token(rng, 24, symbols) for _ in range(40)]
    values += [
        _token(rng, 6, symbols) + word + _token(rng, 8, printable)
        for word in ("p@$$w0rd", "4dm1n!str4t0r", "l0ck3d0ut", "$up3rm4n", "|3|3|3|3")
        for _ in range(4)
    ]
    # the hostile canaries of a header value and a cookie, given back as a user's secrets
    # (a report's canaries in a secrets file): every URL-hostile character in a row
    factory = CanaryFactory(seed=5, namespace="punctuation")
    hostile = [factory.secret(kind).value for _ in range(10) for kind in ("header_key", "cookie")]
    for value in values + hostile:
        bound = early_bound(value)
        if bound is None:
            continue
        full = estimate_bits(value)
        assert all(b <= f + 1e-9 for b, f in zip(bound[1], full, strict=True)), len(value)
        if value in hostile and sum(bound[1]) >= MIN_SECRET_BITS:
            early += 1
    planted = len(hostile)  # (pytest would show the list, canaries and all)
    assert early == planted


def test_a_higher_bar_still_takes_the_full_estimate() -> None:
    value = "ghp_" + _token(random.Random(4), 36)
    assert canaries_module._early_bits(value, MIN_SECRET_BITS) is not None
    assert canaries_module._early_bits(value, 1000.0) is None
    with pytest.raises(WeakSecretError):
        Secret.from_user(value, min_bits=1000.0)


@contextlib.contextmanager
def early_data_read_again(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The early accept's data read anew under ``monkeypatch``'s changes, and read anew
    without them afterwards (both are cached for the process)."""
    canaries_module._early_data.cache_clear()
    canaries_module._early.cache_clear()
    try:
        yield
    finally:
        monkeypatch.undo()
        canaries_module._early_data.cache_clear()
        canaries_module._early.cache_clear()


def test_another_zxcvbn_than_the_data_was_made_from_disables_the_early_accept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from leakcheck import zxcvbn_bound

    monkeypatch.setattr(zxcvbn_bound, "FILES", {**zxcvbn_bound.FILES, "matching.py": 1})
    with early_data_read_again(monkeypatch):
        assert early_bound("ghp_" + _token(random.Random(5), 36)) is None


@pytest.mark.parametrize("broken", ["missing", "short"])
def test_tables_missing_or_cut_short_disable_the_early_accept(
    monkeypatch: pytest.MonkeyPatch, broken: str
) -> None:
    from leakcheck import zxcvbn_bound

    if broken == "missing":
        monkeypatch.setattr(canaries_module, "EARLY_TABLES", "no-such-tables.bin")
    else:  # the file holds fewer bytes than the module says
        monkeypatch.setattr(zxcvbn_bound, "WORD_BYTES", zxcvbn_bound.WORD_BYTES + 1)
    with early_data_read_again(monkeypatch):
        assert early_bound("ghp_" + _token(random.Random(5), 36)) is None
    assert early_bound("ghp_" + _token(random.Random(5), 36)) is not None


def test_the_shipped_data_is_made_from_the_installed_zxcvbn() -> None:
    path = Path(canaries_module.__file__).with_name("zxcvbn_bound.py")
    assert path.read_text(encoding="utf-8") == canaries_module.early_data_source()
    tables = path.with_name(canaries_module.EARLY_TABLES)
    assert tables.read_bytes() == canaries_module.early_data_tables()
    from zxcvbn.matching import RANKED_DICTIONARIES

    longest = max(len(w) for ranked in RANKED_DICTIONARIES.values() for w in ranked)
    assert longest <= canaries_module._LONGEST_WORD


_PROBE = """
import json, sys
from leakcheck.cli import main
code = main(sys.argv[1:])
heavy = ("zxcvbn", "jsonschema", "hypothesis", "pytest", "leakcheck.matrix",
         "leakcheck.harness", "leakcheck.capture", "leakcheck.contract", "leakcheck.audit",
         "httpx", "mcp", "sentry_sdk", "opentelemetry",
         # for type checkers only, and what leakcheck's values replace (_values): typing and
         # dataclasses (with inspect) were an eighth of the start-up
         "typing", "dataclasses", "inspect")
print(json.dumps({"code": code, "heavy": sorted(m for m in heavy if m in sys.modules)}),
      file=sys.stderr)
"""


def test_a_plain_scan_of_twenty_user_secrets_imports_nothing_heavy(tmp_path: Path) -> None:
    rng = random.Random(6)
    secrets_file = tmp_path / "secrets.txt"
    tokens = [PREFIXES[n % len(PREFIXES)] + _token(rng, 36) for n in range(20)]
    secrets_file.write_text("\n".join(tokens) + "\n")
    log = tmp_path / "app.log"
    log.write_text("GET /health 200\n" * 100 + f"token={tokens[3]}\n")
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, "scan", "--secrets-file", str(secrets_file), str(log)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    probe = json.loads(done.stderr.strip().splitlines()[-1])
    assert probe == {"code": 1, "heavy": []}, done.stderr
    assert not any(token in done.stdout + done.stderr for token in tokens)


def test_an_early_accepted_host_name_makes_no_fragment_of_its_fixed_words() -> None:
    """The false positives a class-bit estimate made: a user-supplied host name's
    ``internal`` counted as random, so ``XXXXinternal`` and ``...internal`` in ordinary
    text were masked tails of it. Its masked tails are searched with the class bits now,
    but each hit is verified with the full estimate, which counts the word for little:
    neither reported nor masked."""
    from leakcheck import CanaryFactory, Scanner
    from leakcheck.forms import fragment_forms, unsure_pieces

    for seed in range(5):
        value = CanaryFactory(seed=seed).secret("hostname").value
        secret = Secret.from_user(value, kind="hostname", id="host")
        assert canaries_module._early_bits(value, MIN_SECRET_BITS) is not None  # early
        tails = [name for name, _ in fragment_forms(secret) if name.startswith("masked-tail")]
        assert set(tails) <= unsure_pieces(secret), tails  # each verified on a hit
        full = Secret.from_user(value, kind="hostname", id="host", early=False)
        assert [n for n, _ in fragment_forms(full) if n.startswith("masked-tail")] == []
        benign = "see XXXXinternal, ...internal, ****ternal and a key ending in rnal\n"
        scanner = Scanner([secret], decode=True)
        assert scanner.scan(benign) == []
        assert scanner.mask(benign) == benign


def _subcommands(parser: Any) -> list[str]:
    [action] = [a for a in parser._actions if a.dest == "command"]
    return list(action.choices)


def test_a_command_line_naming_its_command_builds_that_parser_only() -> None:
    from leakcheck.cli import _build_parser

    every = ["scan", "request-ids", "kinds", "schema", "review", "mcp"]
    assert _subcommands(_build_parser(["scan", "--secrets-file", "s.txt", "x.log"])) == ["scan"]
    assert _subcommands(_build_parser(["mcp", "--", "server"])) == ["mcp"]
    for argv in ([], ["--help"], ["--version"], ["scna"], ["--", "scan"]):
        assert _subcommands(_build_parser(argv)) == every, argv
    alone = _build_parser(["scan"])._subparsers._group_actions[0].choices["scan"]  # type: ignore[union-attr]
    among = _build_parser([])._subparsers._group_actions[0].choices["scan"]  # type: ignore[union-attr]
    assert alone.format_help() == among.format_help()


@pytest.mark.parametrize("report_format", ["json", "text", "sarif"])
def test_only_a_sarif_report_computes_the_uris_of_its_sources(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    report_format: str,
) -> None:
    # a URI needs pathlib and urllib.parse (with ipaddress): 2 ms of the start-up, for SARIF
    import leakcheck.cli.scan as scan_module
    from leakcheck.cli import main

    made: list[str] = []
    real = scan_module.path_uri
    monkeypatch.setattr(scan_module, "path_uri", lambda path: made.append(path) or real(path))
    secrets_file = tmp_path / "secrets.txt"
    secrets_file.write_text("ghp_" + _token(random.Random(8), 36) + "\n")
    log = tmp_path / "app.log"
    log.write_text("GET /health 200\n")
    assert (
        main(["scan", "--secrets-file", str(secrets_file), "--format", report_format, str(log)])
        == 0
    )
    assert made == ([str(log)] if report_format == "sarif" else [])
    capsys.readouterr()
