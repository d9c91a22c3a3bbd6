"""An earlier test's secret that a later test's output shows is a leak of the later test.

Found trying the fixture as a newcomer: a gateway's refresh thread (a client kept at module
scope) logged the token of the test that started it while the next test ran. The session
masker masked it in the report, no test's verdict looked for it (each test searches its own
secrets), and every test passed. Each test's verdict now also looks its texts up in the
session masker's index for the secrets of the tests before it, and a forbidden hit of one
fails it, naming the test the secret came from.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import failure_section, inner_outcomes, run_with_report, self_scan

from leakcheck.canaries import CanaryFactory

pytest_plugins = ["pytester"]

SEED = "earlier-1"

INNER = """
import logging
from leakcheck import LeakCheck

log = logging.getLogger("gw.refresh")
KEPT = {}

def test_a_keeps_its_token(leakcheck):
    KEPT["token"] = leakcheck.secret("bearer")
    KEPT["host"] = leakcheck.secret("hostname")
    leakcheck.expose({"ok": True})

def test_b_logs_the_kept_token(leakcheck):
    leakcheck.secret("bearer")
    log.warning("refresh failed for %s", KEPT["token"])
    leakcheck.expose({"ok": True})

def test_b2_logs_a_long_text_with_the_kept_token(leakcheck):
    leakcheck.secret("bearer")
    frames = "".join(f"  File gw.py, line {n}, in refresh; " for n in range(60))
    log.warning("refresh failed: %s%s", frames, KEPT["token"])
    leakcheck.expose({"ok": True})

def test_b3_no_secret_of_its_own_logs_the_kept_token(leakcheck):
    log.warning("refresh failed for %s", KEPT["token"])
    leakcheck.expose({"ok": True})

def test_c_logs_the_kept_host(leakcheck):
    leakcheck.secret("bearer")
    log.warning("refresh failed at %s", KEPT["host"])
    leakcheck.expose({"ok": True})

def test_d_registers_the_same_token(leakcheck):
    token = leakcheck.register(KEPT["token"], kind="bearer")
    log.warning("refresh failed for %s", token)
    leakcheck.expose({"ok": True})

def test_e_a_harness_of_its_own(leakcheck):
    leakcheck.secret("bearer")
    own = LeakCheck(seed=1).secret("bearer")
    KEPT["apart"] = own
    log.warning("a canary this test made apart: %s", own)
    leakcheck.expose({"ok": True})

def test_e2_logs_what_an_earlier_test_made_apart(leakcheck):
    leakcheck.secret("bearer")
    log.warning("made apart, announced, only masked: %s", KEPT["apart"])
    leakcheck.expose({"ok": True})

def test_f_clean(leakcheck):
    leakcheck.secret("bearer")
    log.warning("refresh failed")
    leakcheck.expose({"ok": True})

def test_g_clean_no_secret_of_its_own(leakcheck):
    log.warning("refresh failed")
    leakcheck.expose({"ok": True})
"""


def test_an_earlier_tests_secret_in_a_later_tests_output_fails_it(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_inner=INNER)
    result, data = run_with_report(pytester, SEED)
    assert inner_outcomes(result) == {
        "test_a_keeps_its_token": "PASSED",
        "test_b_logs_the_kept_token": "FAILED",
        "test_b2_logs_a_long_text_with_the_kept_token": "FAILED",
        # no secret of its own: judged for the earlier tests' all the same (it passed,
        # unjudged; found by a hunting helper)
        "test_b3_no_secret_of_its_own_logs_the_kept_token": "FAILED",
        # a host name is allowed in an operator's log, whoever's it is
        "test_c_logs_the_kept_host": "PASSED",
        # registered by this test too: its own secret, judged as such
        "test_d_registers_the_same_token": "FAILED",
        # made apart by this test itself (masked only), not an earlier test's
        "test_e_a_harness_of_its_own": "PASSED",
        # a secret made apart is announced to the session (masked), no test's to judge
        "test_e2_logs_what_an_earlier_test_made_apart": "PASSED",
        "test_f_clean": "PASSED",
        "test_g_clean_no_secret_of_its_own": "PASSED",
    }
    earlier = "bearer#1@test_inner.py::test_a_keeps_its_token"
    failure = failure_section(result, "test_b_logs_the_kept_token")
    assert f"{earlier} (bearer, direct secret):" in failure, failure
    assert "[LEAK] operator: log record gw.refresh WARNING message" in failure, failure
    assert "a secret of the earlier test test_inner.py::test_a_keeps_its_token" in failure
    bare = failure_section(result, "test_b3_no_secret_of_its_own_logs_the_kept_token")
    assert f"{earlier} (bearer, direct secret):" in bare, bare
    own = failure_section(result, "test_d_registers_the_same_token")
    assert "earlier test" not in own and "bearer#user1 (bearer, direct secret):" in own, own
    records = {r["test"].split("::")[-1]: r for r in data["tests"]}
    forbidden = [f for f in records["test_b_logs_the_kept_token"]["findings"] if not f["allowed"]]
    assert forbidden and {f["finding"]["secret_id"] for f in forbidden} == {earlier}, forbidden
    # an earlier test's secret where the policy allows it is not this test's to report
    host = records["test_c_logs_the_kept_host"]["findings"]
    assert not [f for f in host if "@" in f["finding"]["secret_id"]], host
    secrets = [
        CanaryFactory(SEED, namespace=f"test_inner.py::{test}").secret(kind)
        for test in ("test_a_keeps_its_token", "test_b_logs_the_kept_token")
        for kind in ("bearer", "hostname")
    ]
    self_scan("\n".join(result.outlines + result.errlines), secrets, "inner output")
    report = pytester.path / "leakcheck-report.json"  # (as written, not as read back)
    self_scan(report.read_text(encoding="utf-8"), secrets, "JSON report")


def test_what_a_look_up_keeps_is_dropped_when_secrets_are_added() -> None:
    """The masker keeps a text's look-up at every key for the next look-up of the same
    text (a test's earlier secrets, then its own absence proof); a batch added since has
    keys that look-up never asked about."""
    from leakcheck.masking import SessionMasker

    factory = CanaryFactory("kept-look-up")
    first, later = factory.secret("bearer"), factory.secret("bearer")
    masker = SessionMasker()
    masker.add([first], by="test_first")
    text = f"refresh failed for {later.value}".encode()
    assert masker.earlier_secrets_in([text], before=1, leaving_out=[]) is None
    masker.add([later], by="test_later")
    assert not masker.proves_absent([later], [text])
    found = masker.earlier_secrets_in([text], before=2, leaving_out=[])
    assert found is not None and found[1] == {later.id: "test_later"}


ALLOWED = """
import logging

def test_logs_its_host(leakcheck):
    host = leakcheck.secret("hostname")
    logging.getLogger("gw").warning("upstream %s refused", host)
    leakcheck.expose({"ok": False})
"""


def test_a_passing_tests_output_with_an_allowed_secret_is_masked_in_its_sections(
    pytester: pytest.Pytester,
) -> None:
    """A passing test's output holding a secret the policy allows there (a host name in a
    log) is shown masked by ``-rA``: the look-ups at every key its verdict makes (kept by
    the session masker until its next ``add``) leave what its reports are masked with as
    it was."""
    pytester.makepyfile(test_inner=ALLOWED)
    result = pytester.runpytest("-p", "no:randomly", "-rA", f"--leakcheck-seed={SEED}")
    assert inner_outcomes(result) == {"test_logs_its_host": "PASSED"}
    shown = result.stdout.str()
    assert "upstream «canary:hostname:raw» refused" in shown, shown
    host = CanaryFactory(SEED, namespace="test_inner.py::test_logs_its_host").secret("hostname")
    self_scan("\n".join(result.outlines + result.errlines), [host], "inner output")


def test_a_text_holding_a_kinds_fixed_text_names_no_earlier_test() -> None:
    """The first batch of a kind owns the head of its fixed suffix (a host name canary's
    ``.corp.internal``): every text saying "internal" held it, and each later test's
    verdict searched all its texts with a scanner over that batch (7 M instructions a test
    of the MCP suite). Fixed text is no sign of an earlier test's secret."""
    from leakcheck.masking import SessionMasker

    factory = CanaryFactory("fixed-text")
    hosts = [factory.secret("hostname") for _ in range(3)]
    masker = SessionMasker()
    for n, host in enumerate(hosts):
        masker.add([host], by=f"test_{n}")
    suffix = hosts[0].value[-8:]
    assert all(host.value.endswith(suffix) for host in hosts)  # (the kind's fixed text)
    text = f"upstream error: service{suffix} unavailable".encode()
    assert masker.earlier_secrets_in([text], before=3, leaving_out=[]) is None
    leaked = f"upstream error: {hosts[1].value} unavailable".encode()
    found = masker.earlier_secrets_in([leaked], before=3, leaving_out=[])
    assert found is not None and set(found[1].values()) == {"test_1"}


def _looked_up_again(masker: Any, text: bytes, times: int) -> None:
    """Look ``text`` up at every key ``times`` times, a test's secrets added after each
    (as the verdicts of tests whose texts are alike do: the look-up after an ``add`` keeps
    it, the ones after that read what it kept)."""
    for n in range(times):
        masker.earlier_secrets_in([text], before=0, leaving_out=[])
        masker.add([CanaryFactory("again-between").nth("bearer", n + 1)], by=f"between_{n}")


@pytest.mark.parametrize("between", [1, 70])
def test_a_short_text_that_comes_again_is_looked_up_at_the_batches_added_since(
    between: int,
) -> None:
    """A short text that comes test after test (a log line, a tool's error envelope) is
    kept with its 4-byte substrings after its second look-up, and each look-up after it
    asks only the batches added since (issue 13: the same three texts were looked up at
    every key of the session in each of 1,000 tests). A batch added since whose secret the
    text holds is found, whether its keys are at hand (the last batch added) or long gone
    from the recent ones (69 batches added after it: looked up at every key again). The
    mask and, for a recent batch, the test's own absence proof read the kept text too."""
    from leakcheck.masking import _AGAIN_TEXTS, SessionMasker

    factory = CanaryFactory("again")
    masker = SessionMasker()
    masker.add([factory.secret("bearer")], by="test_0")
    registered = factory.secret("api_key")
    text = f"tool error: upstream refused {registered.value} (401)".encode()
    # a text looked up again before the next add (a test's own, holding its canary) is
    # not kept: the look-up at every key is kept until that add
    unique = b"tool error for the one test that made it"
    for _ in range(3):
        masker.earlier_secrets_in([unique], before=0, leaving_out=[])
    assert unique not in masker._again
    _looked_up_again(masker, text, 3)
    assert text in masker._again and len(masker._again) <= _AGAIN_TEXTS  # (kept)
    assert masker.earlier_secrets_in([text], before=1, leaving_out=[]) is None
    masker.add([registered], by="test_registered")
    for n in range(1, between):
        masker.add([factory.secret("bearer")], by=f"test_{n}")
    found = masker.earlier_secrets_in([text], before=masker.batch_count(), leaving_out=[])
    assert found is not None and found[1] == {registered.id: "test_registered"}
    masked = masker.mask(text.decode())
    assert registered.value not in masked and "tool error" in masked
    clean = b"tool error: upstream refused the call (401)"
    _looked_up_again(masker, clean, 3)
    if between == 1:  # (an absence proof asks about recent batches only)
        assert not masker.proves_absent([registered], [text])
        assert masker.proves_absent([registered], [clean])
    assert masker.earlier_secrets_in([clean], before=masker.batch_count(), leaving_out=[]) is None
