"""Allowed findings left unwritten when nothing shows them (issue 13's plugin cost): a
group of texts (a log record, an object) that holds hits, but in which every secret the
policy forbids in its sink class is shown absent, is not searched again for findings
(``verdict.judge(..., allowed_details=False)``); the pytest plugin asks for that unless a
JSON report will show them, and judges again in full when a forbidden hit makes the
failure message list allowed findings beside it.

Each case compares the verdict left short with the full one: the forbidden leaks are the
same. Assertions compare paths, forms and counts, never a secret's value.
"""

from __future__ import annotations

import base64
import json

import pytest

from leakcheck import CanaryFactory, verdict
from leakcheck.capture import Captured
from leakcheck.detect import Scanner
from leakcheck.forms import MASKING_FORMS
from leakcheck.policy import DEFAULT_POLICY, SinkClass

pytest_plugins = ["pytester"]

OPERATOR, CALLER, LATENT = SinkClass.OPERATOR, SinkClass.CALLER, SinkClass.LATENT


def _secrets(seed: str) -> tuple[Scanner, str, str]:
    factory = CanaryFactory(seed)
    bearer, host = factory.secret("bearer"), factory.secret("hostname")
    scanner = Scanner([bearer, host], decode=True, forms=MASKING_FORMS, backend="ahocorasick")
    return scanner, bearer.value, host.value


def _record(text: str, args: str, sink_class: SinkClass = OPERATOR) -> list[Captured]:
    """A log record's message and the latent repr of its args (a fallback of it)."""
    return [
        Captured("log record", sink_class, "app DEBUG message", text, group="log record#0"),
        Captured("log record", LATENT, "app DEBUG args", args, group="log record#0", fallback=True),
    ]


def _leaks(verdict_: list[verdict.Leak]) -> list[tuple[str, str, str, bool]]:
    return sorted((v.path, v.finding.secret_id, v.finding.form, v.allowed) for v in verdict_)


def _both(scanner: Scanner, items: list[Captured]) -> tuple[verdict.Verdict, verdict.Verdict]:
    short = verdict.judge(scanner, items, DEFAULT_POLICY, allowed_details=False)
    full = verdict.judge(scanner, items, DEFAULT_POLICY)
    return short, full


def test_an_allowed_host_in_an_operator_log_is_not_written_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scanner, _, host = _secrets("allowed-only")
    items = [
        Captured("tool response", CALLER, "$.code", "AUTH_FAILED", group="tool response#0"),
        *_record(f"POST https://{host}/v1 answered 401", f"('POST', 'https://{host}/v1')"),
    ]
    scans: list[int] = []
    scan = Scanner.scan

    def counted(self: Scanner, *args: object, **kwargs: object) -> object:
        scans.append(1)
        return scan(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Scanner, "scan", counted)
    short = verdict.judge(scanner, items, DEFAULT_POLICY, allowed_details=False)
    assert (list(short), short.left_out, scans) == ([], 2, [])
    full = verdict.judge(scanner, items, DEFAULT_POLICY)
    assert full.left_out == 0
    assert [(leak.path, leak.allowed) for leak in full] == [("app DEBUG message", True)]


def _b64_json(value: str) -> str:
    """base64 of base64 of a JSON payload: only the decoding pass's layers show it."""
    payload = base64.b64encode(json.dumps({"authorization": value}).encode())
    return base64.b64encode(payload).decode()


CASES = {
    # the token beside the host in the same text: forbidden in an operator log
    "token beside the host": lambda token, host: _record(
        f"calling https://{host}/ with {token}", "('x',)"
    ),
    # the token only in a decoded layer (base64 of base64 of a JSON payload)
    "token decoded beside the host": lambda token, host: _record(
        f"calling https://{host}/ payload={_b64_json(token)}", "('x',)"
    ),
    # the host in an operator text (allowed) and in a caller-visible fallback of the same
    # group (forbidden there, and reported only if no text of the group showed it)
    "host in a caller fallback": lambda token, host: [
        Captured("report", OPERATOR, "$.url", f"https://{host}/", group="g#0"),
        Captured("report", CALLER, "repr", f"R(url='https://{host}/')", group="g#0", fallback=True),
    ],
    # the host allowed in the message, the token in the latent fallback (allowed there)
    "token in a latent fallback": lambda token, host: _record(
        f"calling https://{host}/", f"('{token}',)"
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_forbidden_leaks_are_those_of_the_full_verdict(case: str) -> None:
    scanner, token, host = _secrets(f"allowed-case-{case}")
    items = CASES[case](token, host)
    short, full = _both(scanner, items)
    forbidden = [leak for leak in _leaks(full) if not leak[3]]
    assert [leak for leak in _leaks(short) if not leak[3]] == forbidden
    if short.left_out:  # what was left out held nothing forbidden
        assert not forbidden
    else:
        assert _leaks(short) == _leaks(full)


def test_a_forbidden_finding_is_never_left_out_with_its_group() -> None:
    """Where the token is in the group, the group is searched (it is left out only where
    every text is shown free of every secret forbidden in it)."""
    scanner, token, host = _secrets("allowed-never")
    for case in ("token beside the host", "token decoded beside the host"):
        short, full = _both(scanner, CASES[case](token, host))
        assert short.left_out == 0, case
        assert any(not leak.allowed for leak in full), case
    # the caller fallback is searched with its group: the operator text showed the host
    short, full = _both(scanner, CASES["host in a caller fallback"](token, host))
    assert short.left_out == 0
    assert [(leak.path, leak.allowed) for leak in short] == [("$.url", True)]


SUITE = """
import logging

def test_leaky(leakcheck):
    token, host = leakcheck.secret("bearer"), leakcheck.secret("hostname")
    logging.getLogger("app.http").debug("POST https://%s/v1", host)
    leakcheck.expose({"auth": token})

def test_clean(leakcheck):
    host = leakcheck.secret("hostname")
    leakcheck.secret("bearer")
    logging.getLogger("app.http").debug("POST https://%s/v1", host)
"""


def test_a_failure_still_lists_the_allowed_findings(pytester: pytest.Pytester) -> None:
    """A forbidden hit elsewhere: the failure message lists the allowed host entry too,
    as a full verdict does (the test is judged again in full)."""
    pytester.makepyfile(test_allowed=SUITE)
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*[[]LEAK[]] caller: tool response*", "*[[]allowed[]]*"])
