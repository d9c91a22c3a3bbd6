"""Keyed decoding finds a token that a transformation split, not only escaped.

Past 256 KiB of input (``detect.KEYED_FROM_BYTES``: one large file, or every file of a
scan whose inputs add up to that) only the tokens around a secret's keys are decoded. The
only key of a token was its whole run of letters and digits, so a token coloured in a few
pieces, hard-wrapped at 80 columns, folded in a box or a log column, or a blob wrapped in
lines, held no key, and a scan found it in a small file and not beside a large clean one
(found by a hunting helper: ``leakcheck scan`` of a directory with a 9 MB clean log).
Each form here is found in a small text and inside 320 KiB of benign log text, which stays
clean alone.

Nothing here prints a secret: assertions name forms, ids and form names only.
"""

from __future__ import annotations

import base64
import json
import random
import string
import urllib.parse
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import bench_module

from leakcheck import Scanner, Secret
from leakcheck.detect import KEYED_FROM_BYTES

_ALNUM = string.ascii_letters + string.digits


def _tokens() -> dict[str, str]:
    """Random user tokens (fixed seed): a GitHub token, an AWS access key id."""
    rng = random.Random(94)
    return {
        "ghp": "ghp_" + "".join(rng.choices(_ALNUM, k=36)),
        "akia": "AKIA" + "".join(rng.choices(string.ascii_uppercase + string.digits, k=16)),
    }


def _secret(name: str) -> Secret:
    return Secret.from_user(_tokens()[name], kind="token", id=f"user-{name}")


def _coloured(value: str, pieces: int) -> str:
    """``value`` in ``pieces`` coloured pieces, each closed by a reset (a log formatter
    highlighting a token)."""
    size = -(-len(value) // pieces)
    return "".join(
        f"\x1b[{31 + n % 6}m{value[i : i + size]}\x1b[0m"
        for n, i in enumerate(range(0, len(value), size))
    )


def _hard_wrapped(value: str, width: int = 80) -> str:
    line = f"2024-01-01 12:00:00 ERROR gateway: upstream said: invalid token {value} for bob."
    return "\n".join(line[i : i + width] for i in range(0, len(line), width))


def _boxed(text: str, width: int) -> str:
    """``text`` in a box drawn as rich draws a panel, folded at ``width``."""
    rows = [text[i : i + width].ljust(width) for i in range(0, len(text), width)]
    rule = "─" * (width + 2)
    return "\n".join([f"╭{rule}╮", *(f"│ {row} │" for row in rows), f"╰{rule}╯"])


def _cut_at_60(value: str) -> str:
    """A message whose token an AWS key's 20 characters, starts at its 45th column: a fold
    at 60 leaves 16 of them on the first line, 4 on the next."""
    return f"{'ERROR upstream rejected token':<43} {value} for acme in region eu"


def _log_column(value: str, width: int = 60) -> str:
    """A message folded at a log handler's message column (rich's ``RichHandler``)."""
    message = _cut_at_60(value)
    pieces = [message[i : i + width] for i in range(0, len(message), width)]
    first = f"[12:00:00] ERROR    {pieces[0]}   app.py:12"
    return "\n".join([first, *(" " * 20 + piece for piece in pieces[1:])])


def _wrapped(text: str, width: int) -> str:
    return "\n".join(text[i : i + width] for i in range(0, len(text), width))


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _u_escaped(value: str) -> str:
    return "".join(f"\\u{ord(c):04x}" for c in value)


#: form name -> (the token it is made for, what makes the text)
FORMS: dict[str, tuple[str, Callable[[str], str]]] = {
    "colour, 3 pieces": ("ghp", lambda v: "token=" + _coloured(v, 3)),
    "colour, 3 pieces of an AWS key": ("akia", lambda v: "key " + _coloured(v, 3)),
    "colour, 2 pieces": ("akia", lambda v: "key " + _coloured(v, 2)),
    "colour, pieces of 4 with resets": ("ghp", lambda v: "token=" + _coloured(v, 10)),
    "colour in JSON": ("ghp", lambda v: json.dumps({"line": _coloured(v, 3)})),
    "colour every character in JSON": ("ghp", lambda v: json.dumps({"line": _coloured(v, len(v))})),
    "hard wrap at 80": ("akia", _hard_wrapped),
    "rich box": ("akia", lambda v: _boxed(_cut_at_60(v), 60)),
    "log column at 60": ("akia", _log_column),
    "hex wrapped at 32": ("ghp", lambda v: _wrapped(v.encode().hex(), 32)),
    "base64 in a box": ("ghp", lambda v: _boxed(_b64(("x" * 10 + v + "y" * 10).encode()), 30)),
    "base64 of UTF-16 wrapped at 76": (
        "ghp",
        lambda v: _wrapped(_b64(("x" * 30 + v + "y" * 80).encode("utf-16-le")), 76),
    ),
    "percent-encoded UTF-16": (
        "ghp",
        lambda v: "q=" + urllib.parse.quote(v.encode("utf-16-le"), safe=""),
    ),
    r"\u-escaped JSON in JSON": (
        "ghp",
        lambda v: json.dumps({"body": '{"t": "' + _u_escaped(v) + '"}'}),
    ),
    r"\x-escaped text in JSON": (
        "ghp",
        lambda v: json.dumps({"repr": "".join(f"\\x{b:02x}" for b in v.encode())}),
    ),
    "percent of percent-escaped characters": (
        "ghp",
        lambda v: "u=" + urllib.parse.quote("".join(f"%{b:02x}" for b in v.encode()), safe=""),
    ),
}


@pytest.fixture(scope="module")
def filler() -> bytes:
    """320 KiB of the benchmark's benign log text (ends with a line break)."""
    corpus = bench_module("corpus")
    text: bytes = corpus._log_block(random.Random(7), {"t": 0.0}, 320 * 1024)
    assert len(text) > KEYED_FROM_BYTES and text.endswith(b"\n")
    return text


def _inside(filler: bytes, text: bytes) -> bytes:
    """``text`` on lines of its own in the middle of ``filler``."""
    middle = filler.index(b"\n", len(filler) // 2) + 1
    return filler[:middle] + text + b"\n" + filler[middle:]


@pytest.mark.parametrize("form", FORMS)
def test_a_split_token_is_found_beside_a_large_text(filler: bytes, form: str) -> None:
    name, make = FORMS[form]
    secret = _secret(name)
    text = make(secret.value).encode()
    whole = secret.value.encode() in text
    assert not whole  # (split or encoded: no operand whole)
    small = Scanner([secret], decode=True).scan(text)
    assert {f.secret_id for f in small} == {secret.id}, [f.form for f in small]
    big = _inside(filler, text)
    keyed = Scanner([secret], decode=True, input_bytes=len(big))
    assert keyed._keyed
    found = keyed.scan(big)
    assert {f.secret_id for f in found} == {secret.id}, [f.form for f in found]
    # the small text alone, read as one file of a large scan (keyed too)
    alone = Scanner([secret], decode=True, input_bytes=len(big)).scan(text)
    assert {f.secret_id for f in alone} == {secret.id}, [f.form for f in alone]


def test_the_filler_and_other_tokens_stay_clean(filler: bytes) -> None:
    """The same forms of other tokens, in the same text: nothing for these secrets."""
    secrets = [_secret(name) for name in _tokens()]
    rng = random.Random(5)
    others = {
        "ghp": "ghp_" + "".join(rng.choices(_ALNUM, k=36)),
        "akia": "AKIA" + "".join(rng.choices(string.ascii_uppercase + string.digits, k=16)),
    }
    texts = b"\n".join(make(others[name]).encode() for name, make in FORMS.values())
    big = _inside(filler, texts)
    for data in (filler, big):
        scanner = Scanner(secrets, decode=True, input_bytes=len(data))
        assert scanner._keyed
        assert not scanner.scan(data)


def test_a_directory_scan_finds_what_each_file_holds(tmp_path: Path, filler: bytes) -> None:
    """Every file of a directory is keyed when the files add up past KEYED_FROM_BYTES: a
    coloured token and a wrapped AWS key, each in a small file beside a large clean log,
    were found alone and not in the directory."""
    from leakcheck.cli import main

    tokens = _tokens()
    secrets = tmp_path / "secrets.txt"
    secrets.write_text("".join(f"{value}\n" for value in tokens.values()))
    secrets.chmod(0o600)
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "other.log").write_bytes(filler * 2)
    (logs / "ansi.log").write_text("INFO token=" + _coloured(tokens["ghp"], 3) + "\n")
    (logs / "wrapped.log").write_text(_hard_wrapped(tokens["akia"]) + "\n")
    report = tmp_path / "report.json"
    code = main(
        ["scan", "--secrets-file", str(secrets), "--format", "json", "-o", str(report), str(logs)]
    )
    assert code == 1
    found = json.loads(report.read_text())
    sources = sorted(Path(f["source"]).name for f in found["findings"])
    assert sources == ["ansi.log", "wrapped.log"], sources
