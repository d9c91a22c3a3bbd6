"""allure-pytest's results directory is masked as it is written.

allure-pytest writes a test's status message from the live exception, a step's
parameters from the ``repr`` of its arguments and an attachment as it is given: none of
it comes from pytest's (masked) reports, and each went raw into ``allure-results``, a
directory CI keeps (found by a hunting helper). ``pytest_plugin.allure_results`` wraps
its file writer.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import self_scan

from leakcheck import Secret

pytest.importorskip("allure_commons")

pytest_plugins = ["pytester"]

TOKEN = "ghp_Wd4Kx9Qm2Vt7Lp3Rz8Hn5Jc1Fb6Gs0Ya"
SECRETS = [Secret.from_user(TOKEN, kind="secret", id="s0")]

SUITE = """
import os

import allure, pytest

TOKEN = os.environ["STAGING_TOKEN"]


@allure.step("call the gateway with {token}")
def call(token, region):
    return region


@pytest.fixture
def broken_client():
    raise RuntimeError(f"could not log in with {TOKEN}")


def test_step(leakcheck):
    leakcheck.expose({"ok": True})
    call(TOKEN, "eu-west-plain-region")


def test_fails(leakcheck):
    leakcheck.expose({"ok": True})
    pytest.fail(f"rejected {TOKEN}")


def test_attaches(leakcheck):
    leakcheck.expose({"ok": True})
    allure.attach(f"text {TOKEN}", name="as text")
    allure.attach(f"bytes {TOKEN}".encode(), name="as bytes")
    allure.attach(b"\\xff not utf-8 " + TOKEN.encode(), name="latin-1")
    with open("attached.log", "w", encoding="utf-8") as written:
        written.write(f"file {TOKEN}\\n")
    allure.attach.file("attached.log", name="a file")


def test_fixture_error(leakcheck, broken_client):
    pass
"""


def _written(directory: Path) -> bytes:
    return b"\n".join(path.read_bytes() for path in sorted(directory.iterdir()))


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_allure_results_hold_no_secret(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: tuple[str, ...]
) -> None:
    monkeypatch.setenv("STAGING_TOKEN", TOKEN)
    pytester.makeini("[pytest]\nleakcheck_secret_env = STAGING_TOKEN\n")
    pytester.makepyfile(test_allure=SUITE)
    result = pytester.runpytest("-p", "no:randomly", "--alluredir=results", *workers)
    result.assert_outcomes(passed=2, failed=1, errors=1)
    written = _written(pytester.path / "results")
    # (what allure wrote of each: the step, the status message, the attachments)
    assert b"call the gateway" in written and b"rejected" in written
    assert b"text " in written and b"bytes " in written and b"not utf-8" in written
    assert b"file " in written  # (the attached file's copy)
    assert b"could not log in" in written
    # what holds no secret is written as it was
    assert b"eu-west-plain-region" in written
    self_scan(written, SECRETS, "allure-results")
