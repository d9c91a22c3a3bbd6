"""Hypothesis strategies for hostile secrets, for property tests in users' suites.

    from hypothesis import given
    from leakcheck.strategies import hostile_secrets

    @given(hostile_secrets(kinds=["bearer", "api_key"]))
    def test_gateway_never_echoes(secret): ...

Each strategy is a small composable function; shrinking works on the seed, so a failing
example is replayed exactly.
"""

from __future__ import annotations

from collections.abc import Iterable

from hypothesis import strategies as st

from .canaries import KINDS, CanaryFactory, Secret, announce, unknown_kind
from .forms import FORMS, FormFn

__all__ = [
    "secret_kinds",
    "hostile_secrets",
    "hostile_values",
    "encoded_forms",
    "benign_text",
    "text_with_leak",
]


def secret_kinds(kinds: Iterable[str] | None = None) -> st.SearchStrategy[str]:
    """A kind name, from ``kinds`` or from every kind leakcheck knows."""
    names = sorted(KINDS) if kinds is None else list(kinds)
    unknown = [k for k in names if k not in KINDS]
    if unknown:
        raise unknown_kind(unknown)
    return st.sampled_from(names)


@st.composite
def hostile_secrets(draw: st.DrawFn, kinds: Iterable[str] | None = None) -> Secret:
    """A fresh hostile canary (a ``Secret``) of one of ``kinds``."""
    kind = draw(secret_kinds(kinds))
    seed = draw(st.integers(min_value=0, max_value=2**64 - 1))
    return CanaryFactory(seed, namespace="hypothesis").secret(kind)


def hostile_values(kinds: Iterable[str] | None = None) -> st.SearchStrategy[str]:
    """The value (str) of a hostile canary: what a test plants in a gateway."""
    return hostile_secrets(kinds).map(lambda secret: secret.value)


@st.composite
def encoded_forms(
    draw: st.DrawFn, secret: Secret, forms: Iterable[FormFn] = FORMS
) -> tuple[str, bytes]:
    """One ``(form name, encoded bytes)`` of ``secret``: what careless code would print.
    ``secret`` is announced (``canaries.watch_secrets``): in a pytest session the plugin
    masks it in everything pytest prints, a user's own secret given here included."""
    announce(secret)
    candidates = [pair for form in forms for pair in form(secret)]
    return draw(st.sampled_from(candidates))


def benign_text(max_size: int = 400) -> st.SearchStrategy[bytes]:
    """Log-like text: printable ASCII and whitespace, with some non-UTF-8 bytes."""
    printable = st.binary(max_size=max_size).map(
        lambda raw: bytes(b if 32 <= b < 127 or b in (9, 10) else 32 for b in raw)
    )
    return st.one_of(printable, st.binary(max_size=max_size))


@st.composite
def text_with_leak(
    draw: st.DrawFn, secret: Secret, forms: Iterable[FormFn] = FORMS
) -> tuple[bytes, str]:
    """``(haystack, form)``: benign text with one encoded form of ``secret`` inside,
    separated from its neighbours by a space."""
    form, needle = draw(encoded_forms(secret, forms))
    before, after = draw(benign_text()), draw(benign_text())
    return before + b" " + needle + b" " + after, form
