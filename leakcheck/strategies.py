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
from .errors import LeakcheckUsageError, NotASecretError, with_article
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
    if isinstance(kinds, str | bytes):
        # (a str is an iterable of letters, each quoted as an unknown kind: a token given
        # as ``kinds`` was spelled out letter by letter, found by a hunting helper)
        raise LeakcheckUsageError(
            f"kinds is a list of kind names, such as ['bearer', 'api_key'], not "
            f"{with_article(type(kinds).__name__)} of {len(kinds)} characters"
        )
    names = sorted(KINDS) if kinds is None else list(kinds)
    unknown = [k for k in names if k not in KINDS]
    if unknown:
        raise unknown_kind(unknown)
    return st.sampled_from(names)


def hostile_secrets(kinds: Iterable[str] | None = None) -> st.SearchStrategy[Secret]:
    """A fresh hostile canary (a ``Secret``) of one of ``kinds``. (Its arguments are
    checked here, not when Hypothesis draws: its note on an error raised then quotes the
    arguments as given.)"""
    return _hostile_secrets(secret_kinds(kinds))


@st.composite
def _hostile_secrets(draw: st.DrawFn, kinds: st.SearchStrategy[str]) -> Secret:
    kind = draw(kinds)
    seed = draw(st.integers(min_value=0, max_value=2**64 - 1))
    return CanaryFactory(seed, namespace="hypothesis").secret(kind)


def _checked(secret: object, forms: Iterable[FormFn], call: str) -> tuple[FormFn, ...]:
    """``forms`` as a tuple, once ``secret`` is a ``Secret`` and each form callable: a str
    given as the secret (``LeakCheck.secret()`` returns one) failed inside Hypothesis, whose
    note quoted it raw (found by a hunting helper); described, never quoted."""
    if not isinstance(secret, Secret):
        given = with_article(type(secret).__name__)
        size = f" of {len(secret)} characters" if isinstance(secret, str) else ""
        raise NotASecretError(
            f"{call}: secret is a leakcheck Secret (Secret.from_user(value), a canary "
            f"factory's), not {given}{size}"
        )
    checked = tuple(forms) if not isinstance(forms, str | bytes) else ()
    if not checked or not all(callable(form) for form in checked):
        raise LeakcheckUsageError(f"{call}: forms is a sequence of form functions (FORMS)")
    return checked


def hostile_values(kinds: Iterable[str] | None = None) -> st.SearchStrategy[str]:
    """The value (str) of a hostile canary: what a test plants in a gateway."""
    return hostile_secrets(kinds).map(lambda secret: secret.value)


def encoded_forms(
    secret: Secret, forms: Iterable[FormFn] = FORMS
) -> st.SearchStrategy[tuple[str, bytes]]:
    """One ``(form name, encoded bytes)`` of ``secret``: what careless code would print.
    ``secret`` is announced (``canaries.watch_secrets``): in a pytest session the plugin
    masks it in everything pytest prints, a user's own secret given here included."""
    return _encoded_forms(secret, _checked(secret, forms, "encoded_forms"))


@st.composite
def _encoded_forms(draw: st.DrawFn, secret: Secret, forms: tuple[FormFn, ...]) -> tuple[str, bytes]:
    announce(secret)
    candidates = [pair for form in forms for pair in form(secret)]
    return draw(st.sampled_from(candidates))


def benign_text(max_size: int = 400) -> st.SearchStrategy[bytes]:
    """Log-like text: printable ASCII and whitespace, with some non-UTF-8 bytes."""
    printable = st.binary(max_size=max_size).map(
        lambda raw: bytes(b if 32 <= b < 127 or b in (9, 10) else 32 for b in raw)
    )
    return st.one_of(printable, st.binary(max_size=max_size))


def text_with_leak(
    secret: Secret, forms: Iterable[FormFn] = FORMS
) -> st.SearchStrategy[tuple[bytes, str]]:
    """``(haystack, form)``: benign text with one encoded form of ``secret`` inside,
    separated from its neighbours by a space."""
    return _text_with_leak(secret, _checked(secret, forms, "text_with_leak"))


@st.composite
def _text_with_leak(
    draw: st.DrawFn, secret: Secret, forms: tuple[FormFn, ...]
) -> tuple[bytes, str]:
    form, needle = draw(_encoded_forms(secret, forms))
    before, after = draw(benign_text()), draw(benign_text())
    return before + b" " + needle + b" " + after, form
