"""A secret passed where its kind goes is refused, never printed.

Found trying the fixture as a newcomer: ``leakcheck.register("github_token", TOKEN)``
(the name first, as many APIs take it) made the token the secret's *kind*, which leakcheck
prints wherever the secret is reported: the refusal of "github_token" as too guessable
printed ``secret '<token>#user1' (kind <token>, 12 chars)``, every masked piece of evidence
read ``«canary:<token>:raw»``, and a strong first value was accepted and the JSON report
listed the token as its kind and id. A kind given to ``register`` or
``register_session_secret`` must now have a name's shape (``canaries.is_kind_name``);
anything else is refused, described by its length, and masked in all pytest prints.
"""

from __future__ import annotations

import json

import pytest
from conftest import failure_section, inner_outcomes

from leakcheck import LeakCheck
from leakcheck.canaries import (
    KINDS,
    CanaryFactory,
    KindNameError,
    UnknownKindError,
    is_kind_name,
    watch_secrets,
)

pytest_plugins = ["pytester"]

#: A GitHub token's shape (random, never a real one).
TOKEN = "ghp_Zq8rT2xLm4Vn7Ks9Pw3Yb6Hd1Jf5Gc0Ae"

INNER = """
import os

def test_name_then_token(leakcheck):
    leakcheck.register("github_token", os.environ["GH_TOKEN"])

def test_strong_value_then_token(leakcheck):
    token = os.environ["GH_TOKEN"]
    leakcheck.register("Xk9#mQ2$vL7@pR4!wN8&", token)
    leakcheck.expose({"ok": False})
"""

#: Apart: once registered as meant, the token is masked in all the session prints after,
#: the failures of the tests above included (they would hide a leak of theirs).
AS_MEANT = """
import os

def test_as_meant(leakcheck):
    leakcheck.register(os.environ["GH_TOKEN"], "github_token")
    leakcheck.expose({"ok": False})
"""


@pytest.mark.parametrize("flags", [["-l"], ["--full-trace"]], ids=["showlocals", "full"])
def test_a_token_given_as_the_kind_is_refused_and_never_printed(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, flags: list[str]
) -> None:
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    pytester.makepyfile(test_inner=INNER)
    junit, report = pytester.path / "junit.xml", pytester.path / "report.json"
    result = pytester.runpytest(
        "-p", "no:randomly", "-rA", f"--junitxml={junit}", f"--leakcheck-report={report}",
        *flags,
    )  # fmt: skip
    outcomes = inner_outcomes(result)
    assert (
        outcomes["test_name_then_token"] == outcomes["test_strong_value_then_token"] == ("FAILED")
    )
    section = failure_section(result, "test_name_then_token")
    assert "KindNameError" in section
    assert f"a str of {len(TOKEN)} characters" in section
    assert "register(value, kind=...)" in section
    for where, text in (
        ("output", result.stdout.str()),
        ("JUnit", junit.read_text()),
        ("JSON report", report.read_text()),
    ):
        assert TOKEN not in text, f"the token given as a kind is in the {where}"
        # nor a piece long enough to identify it (a masked label, an id)
        assert TOKEN[4:20] not in text, f"a piece of the token is in the {where}"


def test_a_token_given_as_meant_is_reported_under_its_kind(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    pytester.makepyfile(test_inner=AS_MEANT)
    report = pytester.path / "report.json"
    result = pytester.runpytest("-p", "no:randomly", "-rA", f"--leakcheck-report={report}")
    assert inner_outcomes(result) == {"test_as_meant": "PASSED"}
    (record,) = json.loads(report.read_text())["tests"]
    assert [s["kind"] for s in record["secrets"]] == ["github_token"]


def test_a_session_secret_with_a_token_as_its_kind_is_a_usage_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    pytester.makeconftest(
        """
import os
from leakcheck.pytest_plugin import register_session_secret

def pytest_configure(config):
    register_session_secret(config, "staging", os.environ["GH_TOKEN"])
"""
    )
    pytester.makepyfile(test_inner="def test_nothing():\n    pass\n")
    result = pytester.runpytest("-p", "no:randomly")
    text = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "register_session_secret: kind must be a name" in text
    assert "The value comes first: register_session_secret(config, value, kind=...)" in text
    assert TOKEN not in text and TOKEN[4:20] not in text


@pytest.mark.parametrize(
    "name",
    [
        *KINDS,
        "secret",
        "github_token",
        "GITHUB_TOKEN",
        "oauth2_token",
        "s3 key",
        "OpenAI key",
        "staging-db.password",
        "aws_secret_access_key",
    ],
)
def test_a_name_is_a_kind(name: str) -> None:
    assert is_kind_name(name)


@pytest.mark.parametrize(
    "value",
    [
        TOKEN,
        "sk_live_51HxQmT2eZvKYlo2C0",  # digits
        "0f3c9a7be1d24c6a8f0e5b7d9c1a3e6f",  # hex
        "Tr0ub4dor&3",  # a character no name has
        "aBcDeFgHiJkLmNoP",  # mixed case beyond a word's capitals
        "lowercaseletterswithoutanybreak",  # a word longer than any name's
        "AKIAIOSFODNN7EXAMPLE",  # all capitals, one digit: a long word holding a digit
        "a" * 41,
        "",
        "_leading",
        "trailing_",
    ],
)
def test_a_value_is_not_a_kind(value: str) -> None:
    assert not is_kind_name(value)


@pytest.mark.parametrize("given", [12, None, b"github_token"])
def test_a_kind_that_is_no_str_is_not_a_kind(given: object) -> None:
    assert not is_kind_name(given)


def test_no_generated_canary_passes_for_a_kind() -> None:
    for seed in range(50):
        factory = CanaryFactory(seed=seed, announce=False)
        for kind in KINDS:
            assert not is_kind_name(factory(kind).value), (kind, seed)


def test_the_refused_kind_reaches_the_watchers_and_the_error_is_an_unknown_kind() -> None:
    told: list[str] = []
    unwatch = watch_secrets(lambda secret: told.append(secret.value))
    try:
        check = LeakCheck(seed=1)
        with pytest.raises(KindNameError) as refused:
            check.register("github_token", TOKEN)
        with pytest.raises(KindNameError) as not_a_str:
            check.register(TOKEN, 42)  # type: ignore[arg-type]
    finally:
        unwatch()
    assert isinstance(refused.value, UnknownKindError) and isinstance(refused.value, ValueError)
    assert TOKEN not in str(refused.value)
    assert "it was given an int" in str(not_a_str.value)
    assert told == [TOKEN], "the token given as a kind is masked; a value given first is not"


def test_a_refusal_by_from_user_describes_a_kind_that_is_no_name() -> None:
    from leakcheck.canaries import KindNameError, Secret, WeakSecretError

    # (a kind with no name's shape is refused first, described: it names the secret in
    # every mask label)
    with pytest.raises(KindNameError) as refused:
        Secret.from_user("github_token", kind=TOKEN, id="staging")
    assert TOKEN not in str(refused.value) and TOKEN[4:20] not in str(refused.value)
    assert f"a str of {len(TOKEN)} characters" in str(refused.value)
    with pytest.raises(WeakSecretError) as named:
        Secret.from_user("github_token", kind="GitHub PAT", id="staging")
    assert "(kind GitHub PAT, 12 chars)" in str(named.value)


def test_an_unknown_kind_with_a_names_shape_is_named_with_a_guess() -> None:
    # (the same shape ``register`` prints as a kind: a name is safe to quote back)
    with pytest.raises(UnknownKindError) as unknown:
        CanaryFactory(seed=1, announce=False)("Bearer")
    assert "unknown secret kind 'Bearer' (did you mean 'bearer'?)" in str(unknown.value)
    with pytest.raises(UnknownKindError) as value:
        CanaryFactory(seed=1, announce=False)(TOKEN)
    assert TOKEN not in str(value.value)
    assert f"a str of {len(TOKEN)} characters, not a kind's name" in str(value.value)
