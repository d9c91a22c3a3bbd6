"""A mistake in calling leakcheck is shown at the caller's line, and a value refused as a
secret is never printed.

Found trying the fixture as a newcomer: ``leakcheck.register(os.environ["STAGING_TOKEN"])``
with a token too weak to search for raised ``WeakSecretError``, whose message is careful,
and pytest's traceback printed ``value = '...'`` in full, the arguments of our own frames
(``-l`` printed it three times). Every other usage error (an unknown stage, kind or
placement, a misspelt option) showed pages of our source under its one useful line, and
``register_secret`` given a ``str`` crashed the session with an INTERNALERROR.
"""

from __future__ import annotations

import pytest
from conftest import failure_section, inner_outcomes

from leakcheck import canaries
from leakcheck.canaries import KINDS, Secret, SecretClass, WeakSecretError
from leakcheck.errors import (
    LeakcheckUsageError,
    NotASecretError,
    UnknownOptionError,
    did_you_mean,
)
from leakcheck.faults import UnknownTransportError, make_fault
from leakcheck.matrix import TargetError
from leakcheck.placements import UnknownPlacementError, place
from leakcheck.policy import PolicyError
from leakcheck.stages import UnknownStageError, get_stage

pytest_plugins = ["pytester"]

#: Refused: a dictionary word and a year (too guessable), and 11 characters (too short).
GUESSABLE = "Summer2026!!"
SHORT = "Tr0ub4dor&3"

INNER = """
import os

def test_guessable(leakcheck):
    leakcheck.register(os.environ["GUESSABLE_TOKEN"], kind="bearer", id="staging")

def test_short(leakcheck):
    token = os.environ["SHORT_TOKEN"]
    leakcheck.register(token)

def test_unknown_stage(leakcheck):
    leakcheck.force("http_418", via="loopback")

def test_a_str_for_a_secret(leakcheck):
    leakcheck.register_secret(os.environ["SHORT_TOKEN"])

def test_after_them(leakcheck):
    leakcheck.secret("bearer")
"""


@pytest.fixture
def inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("GUESSABLE_TOKEN", GUESSABLE)
    monkeypatch.setenv("SHORT_TOKEN", SHORT)
    pytester.makepyfile(test_inner=INNER)
    return pytester


@pytest.mark.parametrize(
    "flags", [["-l"], ["--full-trace"], ["--tb=native"]], ids=["showlocals", "full", "native"]
)
def test_a_refused_value_is_never_printed(inner: pytest.Pytester, flags: list[str]) -> None:
    junit = inner.path / "junit.xml"
    result = inner.runpytest("-p", "no:randomly", "-rA", f"--junitxml={junit}", *flags)
    outcomes = inner_outcomes(result)
    assert outcomes["test_guessable"] == outcomes["test_short"] == "FAILED"
    assert "too guessable" in failure_section(result, "test_guessable")
    assert "too short" in failure_section(result, "test_short")
    for where, text in (("output", result.stdout.str()), ("JUnit", junit.read_text())):
        for name, value in (("guessable", GUESSABLE), ("short", SHORT)):
            assert value not in text, f"the {name} value is in the {where}"
    # a str given for a Secret: that test fails, the session goes on
    assert "INTERNALERROR>" not in result.stdout.str()
    assert outcomes["test_a_str_for_a_secret"] == "FAILED"
    assert outcomes["test_after_them"] == "PASSED"
    section = failure_section(result, "test_a_str_for_a_secret")
    assert "register_secret takes a leakcheck Secret" in section
    assert "not str" in section and "register(value, kind=...)" in section
    if flags == ["-l"]:
        _shown_at_the_callers_line(result)
    if flags == ["--full-trace"]:  # (what it asks for: every frame)
        assert "canaries.py" in failure_section(result, "test_guessable")
        assert "stages.py" in failure_section(result, "test_unknown_stage")


def _shown_at_the_callers_line(result: pytest.RunResult) -> None:
    for test, error in (
        ("test_guessable", "WeakSecretError"),
        ("test_unknown_stage", "UnknownStageError"),
        ("test_a_str_for_a_secret", "NotASecretError"),
    ):
        section = failure_section(result, test)
        assert f"test_inner.py:{_line_of(test)}: {error}" in section, section
        # none of our frames: neither their source nor their arguments
        for ours in ("harness.py", "canaries.py", "stages.py", "faults.py", "loopback_http.py"):
            assert ours not in section, section


def _line_of(test: str) -> int:
    """The line of ``test``'s last statement in INNER, as the inner file numbers it."""
    lines = INNER.strip("\n").split("\n")  # (makepyfile writes it stripped)
    last = next(n for n, line in enumerate(lines) if line.startswith(f"def {test}(")) + 1
    while last + 1 < len(lines) and lines[last + 1].startswith("    "):
        last += 1
    return last + 1


def test_a_refused_value_reaches_the_watchers_without_bits() -> None:
    told: list[Secret] = []
    unwatch = canaries.watch_secrets(told.append)
    try:
        for value in (GUESSABLE, SHORT, "12345"):
            with pytest.raises(WeakSecretError):
                Secret.from_user(value, kind="bearer", id="mine")
    finally:
        unwatch()
    # ("12345": shorter than REFUSED_MASKED_FROM, ordinary text: not masked)
    assert [secret.value for secret in told] == [GUESSABLE, SHORT]
    assert all(sum(secret.bits) == 0 and not secret.generated for secret in told)
    assert {secret.id for secret in told} == {"mine"}
    assert {secret.secret_class for secret in told} == {SecretClass.DIRECT}


def test_an_accepted_secret_is_not_told_as_refused() -> None:
    told: list[Secret] = []
    unwatch = canaries.watch_secrets(told.append)
    try:
        Secret.from_user("ghp_" + "x7Qa9Lm2Zr4Tb8Kc1Vn6Wd3Yf5Hj0Pe", kind="bearer")
    finally:
        unwatch()
    assert told == []


@pytest.mark.parametrize(
    ("error", "builtin"),
    [
        (UnknownStageError, ValueError),
        (UnknownTransportError, ValueError),
        (UnknownPlacementError, ValueError),
        (canaries.UnknownKindError, ValueError),
        (WeakSecretError, ValueError),
        (PolicyError, ValueError),
        (TargetError, ValueError),
        (NotASecretError, TypeError),
    ],
)
def test_each_usage_error_is_still_the_builtin_a_caller_catches(
    error: type[Exception], builtin: type[Exception]
) -> None:
    assert issubclass(error, LeakcheckUsageError)
    assert issubclass(error, builtin)


def test_an_unknown_kind_lists_the_known_ones() -> None:
    with pytest.raises(canaries.UnknownKindError) as raised:
        canaries.CanaryFactory(1).secret("github_token")
    assert all(kind in str(raised.value) for kind in KINDS)


def test_a_strategy_for_an_unknown_kind_lists_the_known_ones() -> None:
    from leakcheck.strategies import secret_kinds

    with pytest.raises(canaries.UnknownKindError) as raised:
        secret_kinds(["bearer", "github_token"])
    assert "github_token" in str(raised.value)
    assert all(kind in str(raised.value) for kind in KINDS)


def test_the_base_is_importable_from_the_package() -> None:
    import leakcheck

    assert leakcheck.LeakcheckUsageError is LeakcheckUsageError
    assert "LeakcheckUsageError" in leakcheck.__all__


@pytest.mark.parametrize(
    ("mistake", "suggested"),
    [
        (lambda: get_stage("http_4o1"), "'http_401'"),
        (lambda: canaries.CanaryFactory(1).secret("beare"), "'bearer'"),
        (lambda: place("query-apikey", canaries.CanaryFactory(1).secret), "'query-api-key'"),
        (lambda: make_fault("http_401", via="respz", secret=lambda kind: kind), "'respx'"),
    ],
    ids=["stage", "kind", "placement", "transport"],
)
def test_a_near_miss_names_what_was_meant(mistake: object, suggested: str) -> None:
    with pytest.raises(LeakcheckUsageError) as raised:
        mistake()  # type: ignore[operator]
    assert f"(did you mean {suggested}?)" in str(raised.value)


def test_a_far_miss_suggests_nothing() -> None:
    with pytest.raises(UnknownStageError) as raised:
        get_stage("teapot")
    assert "did you mean" not in str(raised.value)
    assert did_you_mean(5, ["five"]) == ""


def test_a_short_name_or_another_case_is_suggested() -> None:
    """``via="shh"`` and ``via="SSH"`` named no transport: a short name's one slip is a
    third of it, and case is no difference a user means."""
    known = ["loopback", "responses", "respx", "ssh"]
    assert did_you_mean("shh", known) == " (did you mean 'ssh'?)"
    assert did_you_mean("SSH", known) == " (did you mean 'ssh'?)"
    assert did_you_mean("xyz", known) == ""


def test_an_option_misspelt_is_named_for_every_transport() -> None:
    loopback = pytest.importorskip("leakcheck.plugins.loopback_http")
    with pytest.raises(UnknownOptionError) as raised:
        make_fault("http_401", via="loopback", secret=lambda kind: kind, timout=0.2)
    assert isinstance(raised.value, loopback.LoopbackOptionError)
    assert "(did you mean 'timeout'?)" in str(raised.value)
    # (the HTTP transports raised a ValueError, the SSH one a TypeError: it is both)
    assert issubclass(UnknownOptionError, ValueError) and issubclass(UnknownOptionError, TypeError)


@pytest.mark.parametrize(
    "given",
    ["sk_live_9fQ2xLm7Tb4Kc1Vn6Wd3Yf5Hj0PeRz", GUESSABLE, "hunter_two_" * 4],
    ids=["token", "password", "long-words"],
)
def test_a_value_given_as_a_kind_is_described_never_shown(given: str) -> None:
    """``secret(token)`` where ``register(token)`` was meant: the error named the token."""
    for mistake in (
        lambda: canaries.CanaryFactory(1).secret(given),
        lambda: __import__("leakcheck.strategies").strategies.secret_kinds(["bearer", given]),
    ):
        with pytest.raises(canaries.UnknownKindError) as raised:
            mistake()
        message = str(raised.value)
        assert given not in message
        assert given[:8] not in message
        assert f"a str of {len(given)} characters, not a kind's name" in message
        assert "register(value, kind=...)" in message
