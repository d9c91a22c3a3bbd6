"""The session masker's index is made from fewer needles, each left out held by one kept.

``forms.index_window_forms`` leaves out the UTF-16-LE windows (raw and ``repr``) of runs of
printable ASCII characters: narrowed (``masking._narrowed``), each is the value's own
window at the same place. ``forms.index_fragment_forms`` leaves out the masked heads and
tails of six characters or more that hold one of the value's windows. A text holding a
needle left out holds the one that holds it: the index must see every needle it saw.
Assertions compare booleans and counts, never a value.
"""

from __future__ import annotations

import random

import pytest

from leakcheck import KINDS, CanaryFactory, Secret, SecretClass
from leakcheck.extensions import masking_forms
from leakcheck.forms import needle_material
from leakcheck.masking import SessionMasker, _head_material, _index_forms

#: characters a user's secret may hold: quotes, a backslash, a tab, non-ASCII, astral
USER_ALPHABET = "abcXYZ0189'\"\\\t%+/=_-.:@ é€𝄞"


def user_secrets(count: int) -> list[Secret]:
    rng = random.Random(14)
    made: list[Secret] = []
    while len(made) < count:
        value = "".join(rng.choice(USER_ALPHABET) for _ in range(rng.randint(20, 48)))
        bits = tuple(6.0 if c.isalnum() and c.isascii() else 0.0 for c in value)
        if sum(bits) >= 96:
            made.append(Secret(value, "secret", f"S{len(made)}", SecretClass.DIRECT, bits))
    return made


def secrets() -> list[Secret]:
    canaries = [CanaryFactory(n, namespace="index").secret(k) for n in range(8) for k in KINDS]
    return canaries + user_secrets(40)


def narrowed(secret: Secret, lean: bool) -> set[bytes]:
    forms = _index_forms(masking_forms()) if lean else masking_forms()
    return set(_head_material(needle_material(secret, forms)))


def test_every_needle_holds_one_the_index_is_made_of() -> None:
    fewer = 0
    for secret in secrets():
        full, lean = narrowed(secret, False), narrowed(secret, True)
        assert lean <= full, secret.id
        uncovered = [n for n in full if not any(kept in n for kept in lean)]
        assert not uncovered, (secret.id, len(uncovered))
        fewer += len(lean) < len(full)
    assert fewer >= 100  # (most secrets have runs of plain characters and masked tails)


def test_a_masker_sees_every_needle_it_saw_with_all_of_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    chosen = secrets()[::4]
    lean = SessionMasker()
    for secret in chosen:
        lean.add([secret])
    monkeypatch.setattr("leakcheck.masking._index_forms", lambda forms: forms)
    full = SessionMasker()
    for secret in chosen:
        full.add([secret])
    for secret in chosen:
        for needle in needle_material(secret, masking_forms()):
            text = b"log line: " + needle + b" (end)"
            assert not lean.proves_absent([secret], [text]), secret.id
            assert lean._candidates(text) == full._candidates(text), secret.id
            try:
                shown = text.decode("utf-8", "surrogatepass")
            except UnicodeDecodeError:  # (raw UTF-16-LE: looked up as bytes above)
                continue
            assert lean.mask(shown) == full.mask(shown), secret.id
    assert len(lean._heads) < len(full._heads)


def plain_user_secret(value: str) -> Secret:
    return Secret(value, "secret", "P1", SecretClass.DIRECT, (6.0,) * len(value))


@pytest.mark.parametrize(
    "secret",
    [
        CanaryFactory(3, namespace="index").secret("bearer"),
        CanaryFactory(3, namespace="index").secret("hostname"),
        plain_user_secret("tok-ABCdef0123456789-xyz.QRS~tuv+w/z=%"),
    ],
    ids=["bearer", "hostname", "plain-user"],
)
def test_the_utf16_needles_of_a_plain_value_narrow_to_needles_it_has(secret: Secret) -> None:
    from leakcheck.forms import index_utf16_forms, utf16_forms

    assert not list(index_utf16_forms(secret))
    spelled = [needle for _, needle in utf16_forms(secret)]
    lean = narrowed(secret, True)
    assert len(spelled) >= 3
    assert all(n in lean for n in _head_material(spelled))


@pytest.mark.parametrize("char", ["'", '"', "\\", "\t", "é", "\x7f"])
def test_a_value_with_a_quote_or_an_escape_keeps_its_utf16_needles(char: str) -> None:
    from leakcheck.forms import index_utf16_forms, utf16_forms

    secret = plain_user_secret(f"tokABCdef0123{char}456789xyzQRStuv")
    assert list(index_utf16_forms(secret)) == list(utf16_forms(secret))


@pytest.mark.parametrize("index", [False, True], ids=["masking forms", "index forms"])
def test_the_index_takes_the_needles_a_scanner_makes_unnamed(index: bool) -> None:
    """``needle_material(..., cached=False)`` (the session masker's) makes the same needles,
    in the same order, as a scanner's named table, the masking windows taken unnamed."""
    forms = _index_forms(masking_forms()) if index else masking_forms()
    for secret in secrets():
        unnamed = needle_material(secret, forms, cached=False)
        named = needle_material(secret, forms)
        assert (unnamed == named) is True, secret.id
