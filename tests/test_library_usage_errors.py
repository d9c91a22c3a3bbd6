"""Mistakes in calling the library are usage errors that describe the value given, never
quote or spell it (found by a hunting helper using leakcheck without pytest).

A secret given as a ``Secret``'s kind was spelled out in every mask label; an id made of a
piece of the value showed that piece in every ``repr``; a str given as ``kinds`` was
quoted letter by letter; a str given to ``encoded_forms`` failed inside Hypothesis, whose
note quoted it; an unknown engine name was a plain ``ValueError`` quoting it raw.
"""

from __future__ import annotations

import secrets

import pytest

from leakcheck import LeakCheck, Scanner, Secret
from leakcheck.errors import LeakcheckUsageError

VALUE = "tok_" + secrets.token_urlsafe(24)


def _shown(text: str) -> bool:
    """Whether ``text`` shows any 6 characters of VALUE's random part."""
    body = VALUE[4:]
    return any(body[i : i + 6] in text for i in range(len(body) - 5))


@pytest.mark.parametrize(
    "call",
    [
        lambda: Secret.from_user(VALUE, kind=VALUE, id="staging"),
        lambda: Secret.from_user(VALUE, kind="staging", id=VALUE[:12]),
        lambda: Secret.from_user(VALUE, kind=f"token {VALUE[4:14]}", id="staging"),
        lambda: Secret.from_user(VALUE, secret_class=VALUE),
        lambda: Secret.from_user(VALUE, secret_class="Direct"),
        lambda: Scanner([Secret.from_user(VALUE)], backend=VALUE),
        lambda: Scanner(VALUE),  # type: ignore[arg-type]
        lambda: Scanner([VALUE]),  # type: ignore[list-item]
        lambda: LeakCheck(backend=VALUE),
    ],
    ids=[
        "kind-is-value",
        "id-is-a-piece",
        "kind-holds-a-piece",
        "class-is-value",
        "class-typo",
        "engine-is-value",
        "scanner-of-str",
        "scanner-of-strs",
        "check-engine",
    ],  # fmt: skip
)
def test_a_mistake_is_a_usage_error_that_describes_the_value(call) -> None:
    with pytest.raises(LeakcheckUsageError) as refused:
        call()
    assert not _shown(str(refused.value))


def test_a_name_of_words_is_still_a_kind_and_an_id() -> None:
    secret = Secret.from_user(VALUE, kind="github_token", id="deploy_token")
    assert (secret.kind, secret.id) == ("github_token", "deploy_token")
    assert Scanner([secret], backend="ahocorasick").scan(f"x {VALUE} y")


def test_the_strategies_check_their_arguments_when_made() -> None:
    """Checked when the strategy is made, before Hypothesis draws (its note on an error
    raised while drawing quotes the arguments as given)."""
    pytest.importorskip("hypothesis")
    from leakcheck.strategies import encoded_forms, hostile_secrets, secret_kinds, text_with_leak

    for call in (
        lambda: secret_kinds(VALUE),
        lambda: hostile_secrets(kinds=VALUE),
        lambda: hostile_secrets(kinds=[VALUE]),
        lambda: encoded_forms(VALUE),  # type: ignore[arg-type]
        lambda: text_with_leak(VALUE),  # type: ignore[arg-type]
        lambda: encoded_forms(Secret.from_user(VALUE), forms=[VALUE]),  # type: ignore[list-item]
    ):
        with pytest.raises(LeakcheckUsageError) as refused:
            call()
        assert not _shown(str(refused.value)), str(refused.value)[:0]
    # the right arguments still make strategies
    assert hostile_secrets(kinds=["bearer"]) is not None
    assert encoded_forms(Secret.from_user(VALUE)) is not None


def test_checks_stopped_out_of_order_put_every_hook_back() -> None:
    """``a.start(); b.start(); a.stop(); b.stop()``: each sink puts back the hook it found,
    so ``b`` put ``a``'s hooks back for good, and the stopped ``a`` went on capturing
    every DEBUG record (found by a hunting helper). Stopping ``a`` stops ``b`` first."""
    import logging
    import sys
    import threading

    before = (sys.excepthook, threading.excepthook, sys.unraisablehook,
              logging.Logger.handle, logging.Logger.isEnabledFor)  # fmt: skip
    first, second = LeakCheck(), LeakCheck()
    first.start()
    second.start()
    first.stop()
    second.stop()  # (stopped already: nothing more)
    after = (sys.excepthook, threading.excepthook, sys.unraisablehook,
             logging.Logger.handle, logging.Logger.isEnabledFor)  # fmt: skip
    assert all(a is b for a, b in zip(after, before, strict=True)), after
    quiet = logging.getLogger("leakcheck.tests.quiet")
    quiet.setLevel(logging.ERROR)
    assert not quiet.isEnabledFor(logging.DEBUG)


def test_an_id_holding_a_piece_of_the_value_in_another_case_is_refused() -> None:
    """The id names the secret in every finding, unmasked: a lower-cased piece of the value
    there was accepted (found by a reviewing helper)."""
    from leakcheck.canaries import Secret, SecretIdError

    value = "Xq7vL2pZ9rT4mK8wB3nY6cH1"
    with pytest.raises(SecretIdError) as refused:
        Secret.from_user(value, id=value[1:11].lower())
    assert value[1:9].lower() not in str(refused.value).lower()
    assert Secret.from_user(value, id="deploy_token").id == "deploy_token"
