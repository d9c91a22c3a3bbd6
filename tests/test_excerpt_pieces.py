"""An excerpt never shows a piece of a secret in another case, escaped, or as hex.

Masking is by matched span, and its masking windows are raw and case-sensitive: an app
that logs a token and, beside it, the token upper-cased ("normalized: ...") or a key id
spelled in hex showed 38 of the token's 40 characters, or the hex of 11 of them, in the
excerpt's context (text, JSON and SARIF reports; found by a tester). A finding's excerpt
and source now mask every run of ``findings.PIECE_CHARS`` characters of a secret in any
case, written with ``\\uXXXX``/``%XX`` escapes, or as hex digits.
Tokens are random per seed; assertions compare booleans, never show a value.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from conftest import random_tokens

import leakcheck.cli.budget as budget
from leakcheck import CanaryFactory, Scanner, Secret
from leakcheck.cli import main
from leakcheck.findings import PIECE_CHARS, mask_label


def _folded_piece_in(text: str, value: str) -> bool:
    """Whether ``text`` shows PIECE_CHARS characters of ``value`` in any case."""
    shown, folded = text.lower(), value.lower()
    return any(folded[i : i + PIECE_CHARS] in shown for i in range(len(folded) - PIECE_CHARS + 1))


def _hex_piece_in(text: str, value: str) -> bool:
    """Whether ``text`` shows the hex of PIECE_CHARS characters of ``value`` (either case)."""
    spelled, shown = value.encode().hex(), text.lower()
    return any(
        spelled[2 * i : 2 * (i + PIECE_CHARS)] in shown for i in range(len(value) - PIECE_CHARS + 1)
    )


def _shows(text: str, value: str) -> bool:
    return _folded_piece_in(text, value) or _hex_piece_in(text, value)


@pytest.fixture
def tokens() -> list[str]:
    return random_tokens(3, 94, length=40)


def test_an_upper_or_lower_cased_or_hex_piece_beside_a_hit_is_masked(
    tokens: list[str],
) -> None:
    token, other, _ = tokens
    scanner = Scanner([Secret.from_user(token, id="T"), Secret.from_user(other, id="O")])
    lines = [
        f"Authorization: Bearer {token} (normalized: {token[2:].upper()})",
        f"retrying with key-id {token[5:16].encode().hex()} token {token}",
        f"token {token} lowercase={token[1:-1].lower()} HEX={token[9:19].encode().hex().upper()}",
        # another secret's pieces beside the hit: the scanner knows it too
        f"token {token} and {other[3:].upper()} and {other[20:31].encode().hex()}",
    ]
    for n, line in enumerate(lines):
        findings = list(scanner.scan(line.encode(), source="ctx.log"))
        assert findings, n
        excerpts = [f.excerpt for f in findings]
        shows = any(_shows(e, token) or _shows(e, other) for e in excerpts)
        assert not shows, n
        labelled = any(mask_label("secret", form) in excerpts[0] for form in ("piece", "hex>piece"))
        assert labelled, n


def test_a_source_named_after_a_piece_is_masked(tokens: list[str]) -> None:
    token = tokens[0]
    scanner = Scanner([Secret.from_user(token, id="T")])
    for name in (f"d/{token[4:30].upper()}.log", f"d/{token[3:14].encode().hex()}.log"):
        findings = list(scanner.scan(f"Bearer {token}\n".encode(), source=name))
        count = len(findings)
        assert count == 1
        shows = _shows(findings[0].source + findings[0].location, token)
        assert not shows


def test_an_escaped_piece_is_masked_and_never_cut_by_the_window(tokens: list[str]) -> None:
    """A run of ``\\uXXXX`` escapes spelling a piece of the secret: masked whole, and the
    excerpt's window, which is widened so as not to cut a token, is not cut inside it
    either (it stopped at a backslash, and showed the escapes of the 5 or 6 characters
    after the cut, too few to be a piece)."""
    token = tokens[0]
    scanner = Scanner([Secret.from_user(token, id="T")], decode=True)
    escaped = "".join(f"\\u{ord(c):04x}" for c in token[10:20])
    text = f"umid={escaped} | LEAK {token}\n"
    findings = list(scanner.scan(text.encode(), source="log"))
    assert findings
    escapes = any("\\u00" in f.excerpt for f in findings)
    shows = any(_shows(f.excerpt, token) for f in findings)
    assert not escapes
    assert not shows


def test_a_canarys_fixed_text_stays_readable() -> None:
    """The pieces masked carry TAIL_BITS, as a masking window must: a host name canary's
    fixed ``.corp.internal`` is no piece, and "internal" near its hit stays shown."""
    canary = CanaryFactory(7, namespace="pieces", announce=False).secret("hostname")
    scanner = Scanner([canary])
    upper = canary.value[:20].upper()
    line = f"GET https://{canary.value}/ failed; see INTERNAL-DOCS, host {upper}"
    (finding, *_) = list(scanner.scan(line.encode(), source="log"))
    shows = _folded_piece_in(finding.excerpt.replace("INTERNAL", ""), canary.value)
    kept = "INTERNAL-DOCS" in finding.excerpt
    assert not shows
    assert kept


def test_a_scan_in_batches_masks_the_pieces_of_another_batchs_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each batch's scanner masks its own secrets' pieces; a piece of a secret of another
    batch in the same line is masked by the scan once every batch is read."""
    tokens = random_tokens(12, 95, length=40)
    secrets_file = tmp_path / "secrets.txt"
    secrets_file.write_text("\n".join(tokens) + "\n")
    log = tmp_path / "app.log"
    rng = random.Random(3)
    far = tokens[rng.randrange(6, 12)]
    # (words of one case and a short hex run: no «opaque» token, which would hide them)
    log.write_text(f"id {far[5:16].encode().hex()} auth={tokens[0]} other: {far[2:].upper()}\n")
    monkeypatch.setattr(budget, "BATCH_SECRETS", 4)
    code = main(["scan", "--secrets-file", str(secrets_file), "--format", "json", str(log)])
    out = capsys.readouterr().out
    assert code == 1
    excerpts = [f["excerpt"] for f in json.loads(out)["findings"]]
    assert excerpts
    shows = any(_shows(e, t) for e in excerpts for t in tokens)
    assert not shows
