"""README's property-test pattern: one ``LeakCheck`` per Hypothesis example."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from leakcheck.canaries import Secret
from leakcheck.harness import LeakCheck, LeakError
from leakcheck.strategies import hostile_secrets

SEEN: list[Secret] = []


def careless_error(token: str) -> dict[str, object]:
    return {"ok": False, "error": f"401 for token ...{token[-6:]}"}


def careful_error(token: str) -> dict[str, object]:
    return {"ok": False, "code": "AUTH_FAILED", "message": "the upstream refused it"}


def _property(make_error):  # type: ignore[no-untyped-def]
    @settings(max_examples=10, database=None, deadline=None)
    @given(secret=hostile_secrets(kinds=["bearer", "api_key"]))
    def test_errors_never_echo_the_key(secret: Secret) -> None:
        SEEN.append(secret)
        with LeakCheck() as check:
            check.register_secret(secret)
            check.expose(make_error(secret.value))
        check.check()

    return test_errors_never_echo_the_key


def test_a_careful_gateway_passes_every_example() -> None:
    SEEN.clear()
    _property(careful_error)()
    assert len(SEEN) == 10


def test_a_careless_gateway_fails_with_the_form_masked() -> None:
    SEEN.clear()
    with pytest.raises(LeakError) as raised:
        _property(careless_error)()
    message = str(raised.value)
    assert "form masked-tail-6" in message
    assert not any(secret.value[-6:] in message for secret in SEEN)


def test_a_check_of_secrets_made_elsewhere_prints_no_seed_of_its_own() -> None:
    """Its own seed replays none of them (the example's seed does: Hypothesis shrinks it)."""
    SEEN.clear()
    with pytest.raises(LeakError) as raised:
        _property(careless_error)()
    assert "canary seed" not in str(raised.value).partition("\n")[0]
    with LeakCheck() as check:
        check.expose(careless_error(check.secret("bearer")))
    assert f"(canary seed {check.seed})" in check.report().partition("\n")[0]
