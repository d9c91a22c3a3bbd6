"""The example gateways under the whole stage matrix (3 operations x every stage x every
placement that can show there: 429 cases each over respx, 415 over loopback, which cannot
chain an injected cause), run as a user runs them.

The careful gateway passes every case. The leaky one fails exactly the cases that carry
one of its mistakes, each located where it shows (assertion, sink), and no other: the
table below is the list of expected failures, one predicate per mistake."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from conftest import cases_of, run_example_matrix, self_scan, wrong_cases

from leakcheck.stages import HTTP_RAISED

ROOT = Path(__file__).resolve().parent.parent
CASES = 429
#: the loopback transport cannot chain a cause under a real failure: no exception-chain cases
LOOPBACK_CASES = 415
SEED = "examples-1"

URL_CREDENTIALS = {"query-api-key", "url-userinfo"}  # what an httpx URL carries


#: loaded into the example runs: the sha256 of every canary each test registered, so the
#: test can prove it rebuilt the very canaries it scans for (never the values themselves)
PLANTED = """
import hashlib, os
from leakcheck.pytest_plugin import CHECK

def pytest_runtest_makereport(item, call):
    check = item.stash.get(CHECK, None)
    if check is not None and call.when == "teardown":
        with open(os.environ["LEAKCHECK_PLANTED"], "a") as out:
            for secret in check.secrets:
                if secret.generated:  # (an ssh identity key is made afresh in each process)
                    out.write(hashlib.sha256(secret.value.encode()).hexdigest() + "\\n")
"""


@cache
def _run(module: str, tmp: str) -> tuple[int, str, dict[str, Any]]:
    (Path(tmp) / "planted_hashes.py").write_text(PLANTED)
    return run_example_matrix(
        module, tmp, seed=SEED, extra_args=("-p", "planted_hashes"), timeout=240,
        env={
            "PYTHONPATH": os.pathsep.join([tmp, str(ROOT)]),
            "LEAKCHECK_PLANTED": str(Path(tmp) / f"{module}.planted"),
        },
    )  # fmt: skip


@pytest.fixture(scope="module")
def tmp_reports(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("example-reports"))


@pytest.mark.parametrize("module", ["test_careful_matrix", "test_careful_loopback_matrix"])
def test_careful_gateway_passes_every_case(module: str, tmp_reports: str) -> None:
    # respx, then real sockets (loopback HTTP(S) server): real library texts and log records
    code, out, report = _run(module, tmp_reports)
    cases = cases_of(report)
    expected = LOOPBACK_CASES if "loopback" in module else CASES
    assert len(cases) == expected
    failing = sorted("-".join(k) for k, r in cases.items() if r["matrix"]["failed"])
    assert failing == [], failing[:10]
    assert code == 0, out[-2000:]
    assert f"{expected} passed" in out
    assert report["request_ids"] == []


# --- the leaky gateway: one predicate per mistake ----------------------------------------------


@dataclass(frozen=True)
class Mistake:
    name: str
    shows_as: frozenset[str]  # failed assertions and leak sinks ("response", "log:NAME")
    applies: Callable[[str, str, str], bool]  # (operation, stage, placement)


def _ssh(op: str) -> bool:
    return op == "run_command"


MISTAKES = [
    Mistake(
        "request headers logged at DEBUG (examples.leaky)",
        frozenset({"leaks", "log:examples.leaky"}),
        lambda op, stage, p: (
            not _ssh(op)
            and stage.startswith(
                (
                    "http_",
                    "dns",
                    "connection",
                    "tls",
                    "timeout",
                    "reset",
                    "truncated",
                    "malformed",
                    "html",
                    "redirect",
                )
            )
        ),
    ),  # fmt: skip
    Mistake(
        "credential carried on the httpx.Request: httpx's INFO line shows the URL",
        frozenset({"leaks", "log:httpx"}),
        lambda op, stage, p: (
            not _ssh(op)
            and stage.startswith(("http_", "truncated", "malformed", "html", "redirect"))
            and p in URL_CREDENTIALS
        ),
    ),
    Mistake(
        "asyncssh's own log records (command at INFO, env at DEBUG) not redacted",
        frozenset({"leaks", "log:asyncssh"}),
        lambda op, stage, p: (
            stage in ("ssh_command_failed", "ssh_hang_after_command")
            and p in ("ssh-command-args", "ssh-env")
        ),
    ),
    Mistake(
        "raw exception string with the request URL in the message",
        frozenset({"leaks", "response"}),
        lambda op, stage, p: (
            not _ssh(op)
            and (
                stage in HTTP_RAISED
                or stage in ("malformed_json", "html_login_page", "truncated_body")
            )
            and p in URL_CREDENTIALS
        ),
    ),
    Mistake(
        "the gateway's own exception text returned to the agent",
        frozenset({"leaks", "response", "hygiene"}),
        lambda op, stage, p: stage == "gateway_exception",
    ),
    Mistake(
        "echoed agent input in INVALID_INPUT",
        frozenset({"leaks", "response"}),
        # the stage plants a canary in the rejected value itself: every placement shows it
        lambda op, stage, p: stage == "invalid_input",
    ),
    Mistake(
        "token tail on 401 ('credential ending in ...')",
        frozenset({"leaks", "response"}),
        lambda op, stage, p: stage == "http_401",
    ),
    Mistake(
        "upstream text passed through on 403/429/5xx",
        frozenset({"hygiene"}),
        lambda op, stage, p: stage in ("http_403", "http_429", "http_5xx"),
    ),
    Mistake(
        "upstream text passed through: the prose marker reaches the agent",
        frozenset({"leaks", "response"}),
        lambda op, stage, p: (
            stage in ("http_403", "http_429", "http_5xx") and p == "upstream-prose"
        ),
    ),
    Mistake(
        "timeouts after send flattened into a retryable error",
        frozenset({"contract"}),
        lambda op, stage, p: (
            (op == "create_deployment" and stage in ("timeout_after_send", "reset_after_send"))
            or stage == "ssh_hang_after_command"
        ),
    ),
    Mistake(
        "a token read with its trailing newline sent as it is: the client refuses the header "
        "and its error (quoting the token) is returned; the stage is never reached, so its "
        "code and the record's boundary states are wrong too",
        frozenset({"leaks", "response", "contract", "record"}),
        lambda op, stage, p: not _ssh(op) and p.startswith("credential-trailing-"),
    ),
    Mistake(
        "httpcore's DEBUG header traces not dropped: the upstream's Set-Cookie and signed "
        "Location (the redirect's too), and h11's refusal quoting the token",
        frozenset({"leaks", "log:httpcore.http11"}),
        lambda op, stage, p: (
            not _ssh(op)
            and (
                stage == "redirect_signed_url"
                or p.startswith("credential-trailing-")
                or (
                    stage.startswith(("http_", "html", "malformed", "truncated"))
                    and p in ("upstream-set-cookie", "upstream-signed-location")
                )
            )
        ),
    ),
    Mistake(
        "approval denial mapped to AUTH_FAILED",
        frozenset({"contract"}),
        lambda op, stage, p: stage == "approval_declined",
    ),
    Mistake(
        "SSH failure message carries stderr, the command line and user@host:port",
        frozenset({"leaks", "response", "hygiene"}),
        lambda op, stage, p: stage.startswith("ssh_"),
    ),
]


def _observed(record: dict[str, Any]) -> set[str]:
    shows = set(record["matrix"]["failed"])
    for leak in record["findings"]:
        if leak["allowed"]:
            continue
        if leak["sink"] == "tool response":
            shows.add("response")
        elif leak["sink"] == "log record":
            shows.add("log:" + leak["path"].split(" ")[0])
        else:
            shows.add(leak["sink"])
    return shows


def test_leaky_gateway_fails_exactly_where_its_mistakes_are(tmp_reports: str) -> None:
    code, out, report = _run("test_leaky_matrix", tmp_reports)
    cases = cases_of(report)
    assert len(cases) == CASES

    def expected(op: str, stage: str, placement: str) -> set[str]:
        shows: set[str] = set()
        for mistake in MISTAKES:
            if mistake.applies(op, stage, placement):
                shows |= mistake.shows_as
        return shows

    wrong = wrong_cases(cases, expected, _observed)
    assert wrong == [], "\n".join(wrong[:20])
    # every mistake is seen somewhere, and a few cases carry none
    for mistake in MISTAKES:
        assert any(mistake.applies(*case) for case in cases), mistake.name
    assert any(r["outcome"] == "passed" for r in cases.values())
    assert code == 1
    # sequential ids are a matrix-level mistake: reported once, at the end of the session
    rules = {p["rule"] for p in report["request_ids"]}
    assert {"request-id-sequential", "request-id-entropy"} <= rules
    assert f"request ids across {CASES} case(s): FAILED" in out
    _assert_reads_like_a_bug_report(out)
    planted = (Path(tmp_reports) / "test_leaky_matrix.planted").read_text().split()
    _assert_no_canary_in(out, report, planted)


def _assert_reads_like_a_bug_report(out: str) -> None:
    # the operation, stage and placement; which assertion; masked evidence; a rerun line
    assert "leakcheck matrix: operation create_deployment, stage approval_declined" in out
    assert "[contract] expected code and permitted action" in out
    assert "masked-tail" in out and "\u00abcanary:bearer:" in out
    assert "rerun: pytest 'examples/test_leaky_matrix.py::test_leaky_gateway[" in out
    assert f"--leakcheck-seed={SEED}" in out


def _assert_no_canary_in(out: str, report: dict[str, Any], planted: list[str]) -> None:
    """Every canary of every case, rebuilt by arming the case again (same seed, same node
    id, same order), in no form in the pytest output, the JSON report or the snapshots."""
    from examples.targets import LeakyTarget
    from leakcheck.harness import LeakCheck
    from leakcheck.matrix import build_case, cases_for

    secrets = []
    target = LeakyTarget()
    for spec in cases_for(target):
        nodeid = f"examples/test_leaky_matrix.py::test_leaky_gateway[{spec.id}]"
        with LeakCheck(seed=SEED, namespace=nodeid, sinks=[]) as check:
            case = build_case(check, target, spec)
            with contextlib.suppress(Exception):
                case.boom()  # the gateway_exception double makes its canaries when it fires
        secrets += [secret for secret in check.secrets if secret.generated]
    rebuilt = sorted(hashlib.sha256(s.value.encode()).hexdigest() for s in secrets)
    assert rebuilt == sorted(planted), "the rebuilt canaries are not the ones the run planted"
    # and `leakcheck scan --canaries-from` rebuilds the same ones from the report alone
    from leakcheck.cli import canaries_from_report

    from_report, registered, lost = canaries_from_report(report)
    # (registered: the ssh-paths cases' identity keys, made afresh in each process, never
    # written to a report: not rebuilt, and counted so)
    own = [s["id"] for t in report["tests"] for s in t["secrets"] if not s["generated"]]
    assert own and all(name.startswith("ssh_identity_key_") for name in own)
    assert (registered, lost) == (len(own), 0)
    assert sorted(hashlib.sha256(s.value.encode()).hexdigest() for s in from_report) == rebuilt
    snapshots = (ROOT / "examples/__leakcheck_snapshots__/test_leaky_matrix.json").read_text()
    for name, text in (("output", out), ("report", json.dumps(report)), ("snapshot", snapshots)):
        self_scan(text, secrets, f"leaky matrix {name}")
