"""A token split by what a terminal shows as nothing: ANSI colour sequences between its
pieces (a log formatter's or rich's highlighting, ``force_terminal``) or zero-width
characters (zero-width spaces, joiners, soft hyphens). Each piece between them was too short
to count: such a test passed and ``-rA`` showed the token whole on a terminal, and
``leakcheck scan`` called such a log clean (found by a hunting helper). The decoding pass
takes them out of each line holding one (``decode.invisible_runs``, chain ``ansi>``).

Nothing here prints a secret: assertions name forms and ids only.
"""

from __future__ import annotations

import re

import pytest
from conftest import inner_outcomes, self_scan

from leakcheck import CanaryFactory, Scanner, Secret
from leakcheck.decode import invisible_runs
from leakcheck.masking import SessionMasker, masking_scanner

pytest_plugins = ["pytester"]

#: what a terminal does not show (for comparing what a reader sees)
_SHOWN_AS_NOTHING = re.compile("\x1b\\[[0-9;]*m|\x1b\\]8;;[^\x07]*\x07|[\u200b-\u200f\u2060\u00ad]")


def coloured(value: str, every: int = 4) -> str:
    """``value`` with a colour change every ``every`` characters, reset at its end."""
    pieces = [value[i : i + every] for i in range(0, len(value), every)]
    return "".join(f"\x1b[3{n % 7 + 1};1m{piece}" for n, piece in enumerate(pieces)) + "\x1b[0m"


def zero_width(value: str, every: int = 3) -> str:
    marks = ["\u200b", "\u200d", "\u2060", "\u00ad"]
    pieces = [value[i : i + every] for i in range(0, len(value), every)]
    return "".join(piece + marks[n % len(marks)] for n, piece in enumerate(pieces))


def hyperlinked(value: str) -> str:
    """``value`` inside an OSC 8 hyperlink, split by a colour change in its middle."""
    half = len(value) // 2
    return f"\x1b]8;;https://example.test/\x07{value[:half]}\x1b[1m{value[half:]}\x1b]8;;\x07"


SPLITS = {"coloured": coloured, "zero width": zero_width, "hyperlinked": hyperlinked}
KINDS = ("bearer", "api_key", "password")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("split", SPLITS)
def test_a_split_token_is_found_and_masked(canaries: CanaryFactory, kind: str, split: str) -> None:
    secret = canaries(kind)
    text = f"2026-12-07 INFO gw calling with {SPLITS[split](secret.value)} now\nnext line\n"
    forms = [f.form for f in Scanner([secret], decode=True).scan(text)]
    assert "ansi>raw" in forms, forms
    session = SessionMasker()
    session.add([secret])
    for mask in (masking_scanner([secret]).mask, session.mask):
        shown = _SHOWN_AS_NOTHING.sub("", mask(text))
        assert not any(secret.value[i : i + 8] in shown for i in range(len(secret.value) - 7)), (
            f"a piece of {secret.id} shown"
        )
        assert shown.endswith("next line\n")  # (the line holding it masked, not the next)


@pytest.mark.parametrize("split", SPLITS)
def test_a_split_text_without_the_whole_token_is_no_finding(
    canaries: CanaryFactory, split: str
) -> None:
    """The clean twin: the same split with a piece of the token left out."""
    secret = canaries("bearer")
    cut = secret.value[:12] + secret.value[20:]
    text = f"calling with {SPLITS[split](cut)} now\n"
    assert not [
        f.form for f in Scanner([secret], decode=True).scan(text) if f.form.endswith(">raw")
    ]


def test_only_a_line_holding_an_escape_is_decoded() -> None:
    """No escape, no format character: nothing decoded; a coloured word alone: its line."""
    assert list(invisible_runs(b"plain log line \xe2\x80\x94 with a dash\n")) == []
    runs = list(invisible_runs(b"first\n\x1b[32mINFO\x1b[0m ok\nlast"))
    assert runs == [(6, 22, b"INFO ok")]


SEED = "invisible-1"

TESTS = """
def coloured(value, every=4):
    pieces = [value[i : i + every] for i in range(0, len(value), every)]
    return "".join(f"\\x1b[3{n % 7 + 1}m{p}" for n, p in enumerate(pieces)) + "\\x1b[0m"


def test_prints_a_coloured_token(leakcheck):
    print("calling with", coloured(leakcheck.secret("bearer")))


def test_prints_a_coloured_word(leakcheck):
    leakcheck.secret("bearer")
    print("calling with", coloured("a-plain-identifier-of-the-app"))
"""


def test_a_test_printing_a_coloured_token_fails_and_shows_no_piece(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_inner=TESTS)
    result = pytester.runpytest("-p", "no:randomly", "-rA", f"--leakcheck-seed={SEED}")
    assert inner_outcomes(result) == {
        "test_prints_a_coloured_token": "FAILED",
        "test_prints_a_coloured_word": "PASSED",
    }
    shown = "\n".join(result.outlines + result.errlines)
    assert "form ansi>raw" in shown, shown
    token: Secret = CanaryFactory(
        SEED, namespace="test_inner.py::test_prints_a_coloured_token"
    ).secret("bearer")
    self_scan(shown, [token], "inner output")
    self_scan(_SHOWN_AS_NOTHING.sub("", shown), [token], "inner output as a terminal shows it")


@pytest.mark.parametrize("split", SPLITS)
def test_a_split_token_in_a_large_text_is_found_by_its_shape(
    canaries: CanaryFactory, split: str
) -> None:
    """Past 256 KiB only the tokens around a key are decoded, and a token split every few
    characters holds no key: a coloured token in a large log was neither found nor masked
    (found by a hunting helper). The splits' shapes (``decode.DENSE_ESCAPES``) are looked
    for in the same engine pass."""
    from leakcheck.detect import KEYED_FROM_BYTES

    secret = canaries("bearer")
    filler = "2026-12-07 INFO gw request ok id=7f3a took 12ms \x1b[32mdone\x1b[0m\n" * 6000
    text = filler + f"calling with {SPLITS[split](secret.value)} now\n" + filler
    assert len(text) > KEYED_FROM_BYTES
    keyed = Scanner([secret], decode=True, input_bytes=len(text))
    assert keyed._keyed
    forms = [f.form for f in keyed.scan(text)]
    assert any(form.endswith(">raw") for form in forms), forms
    clean = Scanner([secret], decode=True, input_bytes=len(filler)).scan(filler + filler)
    assert not clean


def _rich_folded(value: str, *, colour: bool) -> str:
    """``value`` in a dict's repr as rich prints it at 80 columns, folded, coloured or not
    (``force_terminal``: what FORCE_COLOR makes it in CI)."""
    import io

    from rich.console import Console

    out = io.StringIO()
    console = Console(
        file=out, width=80, force_terminal=colour, color_system="truecolor" if colour else None
    )
    console.print("request=" + repr({"url": "https://api.example/v1/items", "token": value}))
    return out.getvalue()


def _folded_jwt() -> str:
    """A JWT rich folds into pieces of 79, 80 and 5 characters (printed at 80 columns in
    ``_rich_folded``): its header and claims count no bits, so its prefix fragment reaches
    past the first piece, and its last piece is shorter than its suffix fragment."""
    import base64
    import json
    import random

    def segment(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    rng = random.Random(4)
    header = segment(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    for pad in range(40):
        claims = {"sub": f"user-{rng.randint(10**5, 10**6)}", "scope": "repo" + "x" * pad}
        token = f"{header}.{segment(json.dumps(claims).encode())}." + segment(rng.randbytes(32))
        if len(token) == 79 + 80 + 5:
            return token
    raise AssertionError("no claims of the length wanted")


@pytest.mark.parametrize("mode", ["whole", "keyed"])
def test_a_token_rich_folded_in_colour_is_found(mode: str) -> None:
    """rich folds a coloured line at the terminal's width with the colour sequences on each
    piece: the lines were decoded one by one, and a token whose pieces were each shorter
    than its fragments passed, while the same text without colour was found (chain
    ``ansi>wrap``; found by a hunting helper)."""
    from leakcheck.detect import KEYED_FROM_BYTES

    value = _folded_jwt()
    secret = Secret.from_user(value, kind="secret", id="jwt")
    for colour in (False, True):
        text = _rich_folded(value, colour=colour)
        assert ("\x1b[" in text) is colour
        whole_token = value in text
        assert not whole_token  # (folded; no operand shown)
        if mode == "keyed":
            text = "2026-12-07 INFO gw ok\n" * 15000 + text
        size = KEYED_FROM_BYTES if mode == "keyed" else None
        found = {f.secret_id for f in Scanner([secret], decode=True, input_bytes=size).scan(text)}
        assert found == {"jwt"}, colour
    # the same layout, another token's signature: nothing
    other = Secret.from_user(value[:-43] + value[-43:][::-1], kind="secret", id="other")
    coloured_text = _rich_folded(value, colour=True)
    assert not Scanner([other], decode=True).scan(coloured_text)
