"""A passing test's reports are masked once by the session masker (issue 13's plugin cost):
a test whose secrets the session masker took over at its verdict masks nothing the session
masker does not, so its own masking is not asked again, and the teardown report's copy of
the call's captured log comes from the masked texts kept. Masking each section with the
test's own secrets and again with the session's, then the teardown's copy anew, was
0.045 ms a test with three canaries.

Assertions never show a secret's value: a membership test is reduced to a bool first.
"""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

ARGS = ("-p", "no:randomly", "-p", "no:cacheprovider")

CONFTEST = """
import leakcheck.harness as harness
import leakcheck.masking as masking

CALLS = {"own": 0, "session": 0}
_OWN, _SESSION = harness.LeakCheck.mask, masking.SessionMasker.mask


def own(self, text):
    CALLS["own"] += 1
    return _OWN(self, text)


def session(self, text):
    if "auth failed for create_deployment" in text:
        CALLS["session"] += 1
    return _SESSION(self, text)


harness.LeakCheck.mask = own
masking.SessionMasker.mask = session


def pytest_unconfigure(config):
    harness.LeakCheck.mask, masking.SessionMasker.mask = _OWN, _SESSION
"""

SUITE = """
import logging

import conftest

log = logging.getLogger("gateway.http")


def test_passing(leakcheck):
    leakcheck.secret("bearer")
    leakcheck.secret("api_key")
    log.warning("auth failed for create_deployment")


def test_after():
    print("MASKED WITH ITS OWN SECRETS", conftest.CALLS["own"])
    print("LOG LINE MASKED BY THE SESSION", conftest.CALLS["session"])
"""

SHOWN_SUITE = """
import pytest


@pytest.mark.leakcheck(skip_sinks={"stdout": "shown masked, not judged"})
def test_passing_with_its_token_in_its_output(leakcheck):
    token = leakcheck.secret("bearer")
    with open("token.txt", "w") as f:
        f.write(token)
    print("sent", token)
"""


def test_a_passing_tests_sections_are_masked_once_by_the_session(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_masked_once=SUITE)
    result = pytester.runpytest_subprocess(*ARGS, "-rA")
    result.assert_outcomes(passed=2)
    # (its call report's section, then its teardown report's copy of it: kept)
    result.stdout.fnmatch_lines(
        ["*MASKED WITH ITS OWN SECRETS 0*", "*LOG LINE MASKED BY THE SESSION 1*"]
    )


def test_a_passing_tests_own_token_in_its_sections_is_still_masked(
    pytester: pytest.Pytester,
) -> None:
    """``-rA`` prints the passing test's captured output, its token in it: masked by the
    session masker alone."""
    pytester.makepyfile(test_shown=SHOWN_SUITE)
    _assert_shown_masked(pytester, {"passed": 1}, "-rA")


def _assert_shown_masked(
    pytester: pytest.Pytester, outcomes: dict[str, int], *options: str
) -> None:
    """The suite's one test writes its token to token.txt and shows it with "sent": the
    output says it masked, never as it is."""
    result = pytester.runpytest_subprocess(*ARGS, *options)
    result.assert_outcomes(**outcomes)
    token = (pytester.path / "token.txt").read_text(encoding="utf-8")
    output = result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["*sent «canary:bearer*"])
    assert (token in output) is False


LIVE_SUITE = """
import logging

log = logging.getLogger("gateway.http")


def test_logging_its_token_live(leakcheck):
    token = leakcheck.secret("bearer")
    with open("token.txt", "w") as f:
        f.write(token)
    log.warning("sent %s", token)
"""


def test_a_line_written_while_the_test_runs_is_masked_with_its_own_secrets(
    pytester: pytest.Pytester,
) -> None:
    """Live logging writes the line before the verdict hands the test's secrets to the
    session masker: the test's own masking is still asked then."""
    pytester.makepyfile(test_live=LIVE_SUITE)
    _assert_shown_masked(pytester, {"failed": 1}, "--log-cli-level=WARNING")


LATE_SUITE = """
import logging

import pytest

log = logging.getLogger("gateway.http")


@pytest.fixture
def late(leakcheck):
    yield
    token = leakcheck.secret("api_key")  # after the verdict: the session masker lacks it
    with open("token.txt", "w") as f:
        f.write(token)
    log.warning("sent %s", token)


def test_one_secret_then_another(late, leakcheck):
    leakcheck.secret("bearer")
"""


def test_a_secret_made_after_the_verdict_is_masked_with_the_tests_own(
    pytester: pytest.Pytester,
) -> None:
    """The session masker holds the test's secrets of its verdict, not one a fixture makes
    in its teardown: the test's own masking is asked for as long as one is missing."""
    pytester.makepyfile(test_late=LATE_SUITE)
    result = pytester.runpytest_subprocess(*ARGS, "--log-cli-level=WARNING")
    token = (pytester.path / "token.txt").read_text(encoding="utf-8")
    output = result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["*sent «canary:api_key*"])
    assert (token in output) is False
