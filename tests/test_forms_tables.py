"""A secret's needle tables (cached per secret and forms) and head bits (cached per value
and bits): always what making them anew gives."""

from __future__ import annotations

import random

import pytest

from leakcheck import CanaryFactory
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
