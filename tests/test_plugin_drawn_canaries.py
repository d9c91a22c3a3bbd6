"""Canaries made outside a test's check are masked in all that pytest prints.

A canary drawn by a Hypothesis strategy (``leakcheck.strategies``) or made by a
``CanaryFactory`` of the test's own is a test argument, a local, an assertion's operand:
pytest printed it in full in a failure (the assertion's operands, ``-l``, Hypothesis's
falsifying example, ``-rA``'s captured output), in a session whose plugin masks every
canary of its own checks. The plugin now watches every factory that announces its
canaries (``canaries.watch_secrets``) and masks them too, and so every secret a check
of the test's own registers.

The inner suite's conftest writes where each canary came from (seed, namespace, kind,
number: never a value) to a file; this test rebuilds them and searches every output with
the independent oracle (``leak_oracle``) and a strict masking scanner. The same run with
the watch stopped must show them: the check has teeth.
"""

from __future__ import annotations

import json
import secrets

import pytest
from leak_oracle import hits

import leakcheck.forms
from leakcheck import CanaryFactory, LeakCheck, Scanner, Secret

pytest_plugins = ["pytester"]

INNER = """
import os

from hypothesis import Phase, given, settings
from leakcheck import CanaryFactory, LeakCheck, Secret
from leakcheck.strategies import encoded_forms, hostile_secrets, hostile_values, text_with_leak

# (no shrinking: each step draws a canary more, and the failing example prints the same way)
FEW = settings(max_examples=4, database=None, deadline=None, phases=[Phase.generate])


@FEW
@given(hostile_values(kinds=["bearer"]))
def test_a_drawn_value_in_an_assertion(token):
    assert len(token) < 5


@FEW
@given(hostile_secrets(kinds=["api_key"]))
def test_a_piece_of_a_drawn_secret(secret):
    shown = "token=" + secret.value[:20]
    assert secret.value not in shown and len(shown) < 10


@FEW
@given(hostile_secrets(kinds=["password"]).flatmap(encoded_forms))
def test_a_drawn_encoded_form(form):
    name, encoded = form
    assert not encoded


@FEW
@given(hostile_values(kinds=["hostname"]))
def test_a_drawn_value_printed_by_a_passing_test(host):
    print("connecting to", host)


def test_a_factory_of_the_tests_own():
    cookie = CanaryFactory().secret("cookie").value
    print("session cookie", cookie)
    assert cookie == ""


def test_a_check_of_the_tests_own():
    with LeakCheck(sinks=[]) as check:
        signature = check.secret("signature")
    assert signature == ""


@FEW
@given(text_with_leak(Secret.from_user(os.environ["LEAKCHECK_TEST_GIVEN_TOKEN"], id="given")))
def test_a_users_secret_given_to_a_strategy(drawn):
    haystack, form = drawn
    assert not haystack


def test_a_secret_registered_with_a_check_of_the_tests_own():
    with LeakCheck(sinks=[]) as check:
        token = check.register(os.environ["LEAKCHECK_TEST_OWN_TOKEN"], kind="bearer")
    assert token == ""
"""

CONFTEST = """
import json, pathlib
from leakcheck import canaries

_nth = canaries.CanaryFactory.nth
MADE = pathlib.Path(__file__).parent / "made.jsonl"


def nth(self, kind, n, spec=None):
    with MADE.open("a") as out:  # where it came from: never its value
        out.write(json.dumps([str(self.seed), self.namespace, kind, n, self.announce]) + "\\n")
    return _nth(self, kind, n, spec)


canaries.CanaryFactory.nth = nth
"""

#: the kinds the inner tests make, one test each ("secret": the registered one's)
KINDS = {"bearer", "api_key", "password", "hostname", "cookie", "signature"}

UNWATCHED = """

def pytest_sessionstart(session):
    from leakcheck.pytest_plugin.session import SESSION

    session.config.stash[SESSION].unwatch_secrets()
"""


def _made(pytester: pytest.Pytester) -> list[Secret]:
    made = []
    for line in (pytester.path / "made.jsonl").read_text().splitlines():
        seed, namespace, kind, n, announced = json.loads(line)
        assert announced, "a strategy, or a test's own factory or check, made one unannounced"
        seed = int(seed) if seed.isdigit() else seed
        made.append(CanaryFactory(seed, namespace=namespace, announce=False).nth(kind, n))
    return made


def _run(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    *args: str,
    watched: bool = True,
    subprocess: bool = False,
) -> tuple[dict[str, bytes], list[Secret]]:
    """The inner suite's outputs, and every secret it made: the canaries, rebuilt, and the
    one its own check registers (a user's secret, given in the environment)."""
    own = Secret.from_user("own-" + secrets.token_urlsafe(24), kind="bearer", id="own")
    given = Secret.from_user("given-" + secrets.token_urlsafe(24), id="given")
    monkeypatch.setenv("LEAKCHECK_TEST_OWN_TOKEN", own.value)
    monkeypatch.setenv("LEAKCHECK_TEST_GIVEN_TOKEN", given.value)
    pytester.makepyfile(test_drawn=INNER)
    pytester.makeconftest(CONFTEST if watched else CONFTEST + UNWATCHED)
    junit = pytester.path / "junit.xml"
    report = pytester.path / "leakcheck.json"
    run = pytester.runpytest_subprocess if subprocess else pytester.runpytest
    result = run(
        "-p", "no:randomly", "-p", "no:cacheprovider", "-l", "-rA", "-vv", "--tb=long",
        f"--junitxml={junit}", "-o", "junit_logging=all", "-o", "junit_log_passing_tests=true",
        f"--leakcheck-report={report}", *args,
    )  # fmt: skip
    outputs = {
        "stdout": "\n".join(result.outlines).encode("utf-8", "surrogatepass"),
        "stderr": "\n".join(result.errlines).encode("utf-8", "surrogatepass"),
        "junit.xml": junit.read_bytes(),
        "leakcheck.json": report.read_bytes(),
    }
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    return outputs, [*_made(pytester), own, given]


def _echoes(outputs: dict[str, bytes], made: list[Secret]) -> list[str]:
    """Where any form or masking piece of ``made`` shows: output names and secret ids,
    never a value."""
    strict = Scanner(made, decode=True, forms=leakcheck.forms.MASKING_FORMS, strict=True)
    found = []
    for name, data in outputs.items():
        found += [f"{name}: {hit}" for hit in hits(data, made)]
        found += [f"{name}: {f.secret_id} as {f.form}" for f in strict.scan(data, source=name)]
    return found


def _routes(outputs: dict[str, bytes]) -> None:
    """The run printed each route the drawn canaries take (failure, locals, falsifying
    example, a passing test's captured output)."""
    text = outputs["stdout"].decode("utf-8", "replace")
    for route in ("Failing test case", "AssertionError", "Captured stdout call", "PASSED"):
        assert route in text, f"the run shows no {route!r}"


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_drawn_and_own_canaries_are_masked(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: tuple[str, ...]
) -> None:
    outputs, made = _run(pytester, monkeypatch, *workers, subprocess=bool(workers))
    _routes(outputs)
    assert {s.kind for s in made} >= KINDS
    # (the list apart: an assertion on the call would print its arguments, the outputs)
    echoes = _echoes(outputs, made)
    assert not echoes


def test_without_the_watch_pytest_prints_them(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    outputs, made = _run(pytester, monkeypatch, watched=False)
    _routes(outputs)
    shown = {hit.split(": ")[1].split(" as ")[0] for hit in _echoes(outputs, made)}
    # every test's canary shows: the argument, the operand, the local, the print; but
    # those shown here only in an assertion's operands and explanation, which are masked
    # whole with what the session's masking knows even without the watch (``shortened``)
    kinds = {secret.id.split("#")[0] for secret in made if secret.id in shown}
    assert kinds >= KINDS - {"signature", "api_key"}
    assert "given" in shown  # the one given to a strategy (the one registered: as above)


def test_a_watcher_is_told_until_it_stops() -> None:
    from leakcheck.canaries import watch_secrets

    told: list[str] = []
    unwatch = watch_secrets(lambda secret: told.append(secret.id))
    value = "own-" + secrets.token_urlsafe(24)
    try:
        CanaryFactory(1).secret("bearer")
        CanaryFactory(1, announce=False).secret("api_key")
        LeakCheck(sinks=[]).register(value, id="mine")
        LeakCheck(sinks=[], announce=False).register(value, id="fixture's")
        fixtures = LeakCheck(sinks=[], announce=False)
        fixtures.secret("password")
        fixtures.register_secret(Secret.from_user(value, id="session's"))
    finally:
        unwatch()
    CanaryFactory(1).secret("cookie")
    LeakCheck(sinks=[]).register(value, id="after")
    assert told == ["bearer#1", "mine"]
    unwatch()  # (twice: a no-op)
