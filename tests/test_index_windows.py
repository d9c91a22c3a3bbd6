"""The session masker's index is made from fewer windows, the same heads.

``forms.index_window_forms`` leaves out the UTF-16-LE windows (raw and ``repr``) of runs of
printable ASCII characters: narrowed (``masking._narrowed``), each is the value's own
window at the same place. The index must hold exactly the heads it held with every
window. Assertions compare booleans and counts, never a value.
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


def test_the_lean_windows_narrow_to_the_same_needles() -> None:
    fewer = 0
    for secret in secrets():
        full, lean = narrowed(secret, False), narrowed(secret, True)
        assert lean == full, secret.id
        made = len(needle_material(secret, _index_forms(masking_forms())))
        fewer += made < len(needle_material(secret, masking_forms()))
    assert fewer >= 100  # (most secrets have runs of plain characters)


def test_a_masker_indexes_the_same_heads(monkeypatch: pytest.MonkeyPatch) -> None:
    batches = [[secret] for secret in secrets()]
    lean = SessionMasker()
    for batch in batches:
        lean.add(batch)
    monkeypatch.setattr("leakcheck.masking._index_forms", lambda forms: forms)
    full = SessionMasker()
    for batch in batches:
        full.add(batch)
    assert lean._heads == full._heads
    assert lean._keys == full._keys
