"""The session masker's index proves a test's texts clean without a scanner of the test's
own (``SessionMasker.proves_absent``, issue 13): sound for every needle of every kind, in a
text and in what the decoding pass decodes, and it says "cannot tell" where it cannot."""

from __future__ import annotations

import base64
import json
import textwrap

import pytest
from conftest import QUIET_INNER_ARGS

from leakcheck import Secret
from leakcheck.canaries import KINDS, CanaryFactory, SecretClass
from leakcheck.capture import Captured
from leakcheck.detect import Scanner
from leakcheck.extensions import masking_forms
from leakcheck.forms import needle_table
from leakcheck.masking import SessionMasker
from leakcheck.policy import DEFAULT_POLICY, SinkClass
from leakcheck.verdict import judge, proven_clean

pytest_plugins = ["pytester"]

CLEAN = b"2026-12-02 INFO gateway: upstream answered 401 for create_deployment (retry 0)"


def _masker_with(secrets: list[Secret], others: int = 3) -> SessionMasker:
    """A masker that knows ``secrets`` among earlier tests' canaries."""
    masker = SessionMasker()
    for n in range(others):
        earlier = CanaryFactory(seed=n, namespace=f"earlier{n}")
        masker.add([earlier.secret("bearer"), earlier.secret("hostname")])
    masker.add(secrets)
    return masker


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_needle_of_every_kind_is_seen(kind: str) -> None:
    secret = CanaryFactory(seed=11, namespace=f"proof::{kind}").secret(kind)
    masker = _masker_with([secret])
    assert masker.proves_absent([secret], [CLEAN])
    for needle in needle_table(secret, masking_forms()):
        text = b"before " + needle + b" after"
        assert not masker.proves_absent([secret], [CLEAN, text]), "a needle went unseen"


def test_a_secret_in_a_decoded_layer_is_seen() -> None:
    secret = CanaryFactory(seed=3, namespace="layers").secret("bearer")
    masker = _masker_with([secret])
    payload = json.dumps({"auth": {"token": secret.value}}).encode()
    chained = base64.b64encode(base64.b64encode(payload))
    assert not masker.proves_absent([secret], [b"blob=" + base64.b64encode(payload)])
    assert not masker.proves_absent([secret], [b"blob=" + chained])
    assert masker.proves_absent([secret], [b"blob=" + base64.b64encode(CLEAN)])


def test_the_earlier_tests_secrets_do_not_count_against_this_one() -> None:
    earlier = CanaryFactory(seed=0, namespace="earlier0").secret("bearer")
    mine = CanaryFactory(seed=5, namespace="mine").secret("bearer")
    masker = _masker_with([mine])
    text = b"an old token " + earlier.value.encode()
    assert masker.proves_absent([mine], [text])  # not this test's: its own scan says
    assert not masker.proves_absent([earlier], [text])


def test_it_cannot_tell_for_a_secret_it_does_not_hold_as_itself() -> None:
    mine = CanaryFactory(seed=6, namespace="unknown").secret("api_key")
    masker = _masker_with([])
    assert not masker.proves_absent([mine], [CLEAN])  # never added
    same_value = Secret.from_user(mine.value, id="another-id")
    masker.add([mine])
    assert masker.proves_absent([mine], [CLEAN])
    assert not masker.proves_absent([same_value], [CLEAN])  # its needles may differ


def test_it_cannot_tell_for_a_needle_shorter_than_a_head() -> None:
    # (no user secret is this short: made directly, as a codec plugin's form could make one)
    short = Secret(value="Zq7#", kind="secret", id="short", secret_class=SecretClass.DIRECT)
    masker = SessionMasker()
    masker.add([short])
    assert not masker.proves_absent([short], [CLEAN])


def test_no_secret_is_clean() -> None:
    assert SessionMasker().proves_absent([], [CLEAN])


def _captured(host: str, caller: str) -> list[Captured]:
    return [
        Captured("log record", SinkClass.OPERATOR, "message", f"DEBUG connecting to {host}"),
        Captured("log record", SinkClass.OPERATOR, "message", "x" * 2000 + " retrying"),
        Captured("tool response", SinkClass.CALLER, "$.error", caller),
    ]


def test_a_host_allowed_in_an_operator_log_leaves_only_the_forbidden_to_prove() -> None:
    factory = CanaryFactory(seed=8, namespace="policy")
    token, host = factory.secret("bearer"), factory.secret("hostname")
    masker = SessionMasker()
    masker.add([token])  # a batch per class, as the plugin adds them
    masker.add([host])
    items = _captured(host.value, "upstream refused the call")
    scanner = Scanner([token, host], decode=True)
    # the host name is there, allowed: the verdict without details finds nothing either
    assert proven_clean(masker, [token, host], items, DEFAULT_POLICY, forbidden_only=True)
    assert not list(judge(scanner, items, DEFAULT_POLICY, allowed_details=False))
    # with details, its allowed finding must be written up: not proven
    assert not proven_clean(masker, [token, host], items, DEFAULT_POLICY)
    assert [leak.allowed for leak in judge(scanner, items, DEFAULT_POLICY)] == [True]
    # in what the caller sees, the host name is forbidden
    shown = _captured(host.value, f"cannot reach {host.value}")
    assert not proven_clean(masker, [token, host], shown, DEFAULT_POLICY, forbidden_only=True)
    # and the token in the operator's log, as ever
    logged = _captured(f"{host.value} with {token.value}", "upstream refused the call")
    assert not proven_clean(masker, [token, host], logged, DEFAULT_POLICY, forbidden_only=True)


def test_too_much_text_is_searched_not_proven() -> None:
    token = CanaryFactory(seed=9, namespace="long").secret("bearer")
    masker = SessionMasker()
    masker.add([token])
    huge = [Captured("stdout", SinkClass.CALLER, "", "y" * (1 << 20))]
    assert not proven_clean(masker, [token], huge, DEFAULT_POLICY)
    assert proven_clean(masker, [token], huge[:0], DEFAULT_POLICY)


def test_a_long_text_kept_between_lookups_is_still_judged_for_each_secret() -> None:
    first = CanaryFactory(seed=10, namespace="kept1").secret("bearer")
    second = CanaryFactory(seed=10, namespace="kept2").secret("bearer")
    masker = _masker_with([first])
    masker.add([second])
    trace = b"Traceback (most recent call last):\n" + b"  frame\n" * 300
    assert masker.proves_absent([first], [trace])
    leaky = trace + second.value.encode()
    assert masker.proves_absent([first], [leaky])
    assert not masker.proves_absent([second], [leaky])
    assert masker.proves_absent([second], [trace])  # the kept one, still clean


PLUGIN_SUITE = textwrap.dedent(
    """
    import logging

    log = logging.getLogger("gateway")
    BUILT = []

    def test_clean(leakcheck):
        token = leakcheck.secret("bearer")
        log.warning("auth failed for create_deployment")
        leakcheck.expose({"ok": False, "code": "AUTH_FAILED"})
        BUILT.append(leakcheck)

    def test_leaky(leakcheck):
        token = leakcheck.secret("bearer")
        log.warning("auth failed for token ending %s", token[-8:])

    def test_zz_the_clean_one_built_no_scanner():
        (check,) = BUILT
        assert check.built_masker() is None
    """
)


def test_a_clean_test_builds_no_scanner_and_a_leaky_one_still_fails(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_suite=PLUGIN_SUITE)
    result = pytester.runpytest(*QUIET_INNER_ARGS)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*test_leaky*", "*masked-tail-8*"])


def test_the_texts_kept_between_lookups_stay_small() -> None:
    """Distinct long texts of random characters (many keys each) are not kept without end:
    the kept keys are bounded, and a repeated traceback is still kept."""
    import random
    import string
    import tracemalloc

    token = CanaryFactory(seed=12, namespace="bounded").secret("bearer")
    masker = _masker_with([token])
    rng = random.Random(12)
    trace = b"Traceback (most recent call last):\n" + b'  File "app.py", line 1\n' * 200
    tracemalloc.start()
    try:
        for _ in range(36):  # (more than the texts kept)
            words = ("".join(rng.choices(string.ascii_letters, k=8)) for _ in range(1_300))
            noise = " ".join(words)  # (no run long enough to decode: many keys, no layers)
            for _ in range(2):  # (a text is kept when it comes again)
                assert masker.proves_absent([token], [noise.encode(), trace])
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert held < 12 * 2**20, f"{held / 2**20:.0f} MiB held"  # (unbounded: 27 MiB)
    assert masker.proves_absent([token], [trace])


def test_a_long_text_is_kept_when_it_comes_again_and_judged_alike() -> None:
    """A long text looked up once is looked up at the batches' keys alone; the second time
    it is kept with its keys (``SessionMasker._held``). Either way the same answer."""
    token = CanaryFactory(seed=13, namespace="again").secret("bearer")
    masker = _masker_with([token])
    trace = b"Traceback (most recent call last):\n" + b'  File "app.py", line 7\n' * 100
    leaky = trace + b"token=" + base64.b64encode(token.value.encode())
    for sighting in range(3):
        # (as in a later test: the texts held since the last ``add`` are kept apart)
        masker._held_everywhere.clear()  # noqa: SLF001
        assert masker.proves_absent([token], [trace])
        assert not masker.proves_absent([token], [leaky]), f"unseen at sighting {sighting}"
        assert len(masker._kept) == min(sighting, 1) * 2  # noqa: SLF001 - the cache itself
