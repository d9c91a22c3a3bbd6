"""A secret's needle tables: made once per secret and set of forms, a table of forms that
begin with those of another one built from it, and always what building it alone gives."""

from __future__ import annotations

import random

import pytest

from leakcheck import CanaryFactory
from leakcheck import forms as forms_module
from leakcheck.forms import FORMS, MASKING_FORMS, RUN_KEEPING_FORMS, FormFn, needle_table

EAGER = tuple(f for f in FORMS if f not in RUN_KEEPING_FORMS)
MASKING_EAGER = tuple(f for f in MASKING_FORMS if f not in RUN_KEEPING_FORMS)
ASKED = [FORMS, MASKING_FORMS, EAGER, MASKING_EAGER, EAGER[:2], MASKING_FORMS[:5], (), FORMS[3:]]


def made_alone(secret: object, forms: tuple[FormFn, ...]) -> list[tuple[bytes, str]]:
    seen: dict[bytes, str] = {}
    for form in forms:
        for name, pattern in form(secret):  # type: ignore[arg-type]
            if pattern and pattern not in seen:
                seen[pattern] = name
    return list(seen.items())


@pytest.mark.parametrize("seed", range(6))
def test_every_table_is_what_building_it_alone_gives_in_any_order_asked(seed: int) -> None:
    rng = random.Random(seed)
    factory = CanaryFactory(seed=f"tables-{seed}", namespace="t")
    secrets = [factory.secret(kind) for kind in ("bearer", "api_key", "hostname", "password")]
    for _ in range(60):
        secret, forms = rng.choice(secrets), rng.choice(ASKED)
        assert list(needle_table(secret, forms).items()) == made_alone(secret, forms)


def test_the_masking_table_goes_on_from_the_detection_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = CanaryFactory(seed="tables", namespace="t").secret("bearer")
    calls: list[str] = []

    def counted(form: FormFn) -> FormFn:
        def made(s: object) -> object:
            calls.append(form.__name__)
            return form(s)  # type: ignore[arg-type]

        made.__name__ = form.__name__
        return made  # type: ignore[return-value]

    detect = tuple(counted(f) for f in EAGER)
    window = counted(forms_module.window_forms)
    table = needle_table(secret, detect)
    assert len(calls) == len(EAGER)
    masking = needle_table(secret, (*detect, window))
    assert calls[len(EAGER) :] == ["window_forms"]  # only the windows made anew
    assert list(masking.items())[: len(table)] == list(table.items())
    # and a table of the first forms only is cut from it, nothing made
    assert list(needle_table(secret, detect[:3]).items()) == made_alone(secret, EAGER[:3])
    assert calls[len(EAGER) + 1 :] == []


def test_the_tables_kept_are_bounded() -> None:
    factory = CanaryFactory(seed="bounded", namespace="t")
    for _ in range(forms_module._TABLES_KEPT + 20):
        needle_table(factory.secret("bearer"), EAGER[:1])
    assert len(forms_module._tables) <= forms_module._TABLES_KEPT


def test_head_bits_are_made_once_per_value_and_bits_and_are_what_they_were() -> None:
    from leakcheck import Secret
    from leakcheck._values import replace
    from leakcheck.forms import _head_bits, head_bits

    token = Secret.from_user("ghp_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6", id="t")
    first = head_bits(token)
    assert first[:4] == (0.0,) * 4 and min(first[4:]) > 0  # the public head counts for nothing
    _head_bits.cache_clear()
    assert head_bits(token) == first and head_bits(token) == first
    assert _head_bits.cache_info().hits == 1
    # the same value with other bits is measured on its own bits
    weaker = replace(token, bits=tuple(b / 2 for b in token.bits))
    assert head_bits(weaker) == tuple(b / 2 for b in first)
    canary = CanaryFactory(seed="head", namespace="t").secret("bearer")
    assert head_bits(canary) == canary.bits  # a generated canary's bits are exact
