"""``pytest --debug`` writes every hook call's arguments and results to its file (and
``PYTEST_DEBUG=1`` to stderr): masked.

The trace shows an assertion's operands (``pytest_assertrepr_compare``'s ``left`` and
``right``), a failing call's exception, and the collected items with their ids before the
plugin masks a session secret in them. Each message goes through the session's masker
(``PluginSession.mask_debug_trace``); the file is searched with the independent oracle
for the test's canary (rebuilt from the seed and the test id) and a session secret shown
in a parametrize id. With the masking switched off, the same search finds both.
"""

from __future__ import annotations

import secrets

import pytest
from leak_oracle import hits

from leakcheck import CanaryFactory, Secret

pytest_plugins = ["pytester"]

SEED = "debug-trace-1"

INNER = """
import os

import pytest


def test_compares(leakcheck):
    token = leakcheck.secret("bearer")
    assert token == "expected"


@pytest.mark.parametrize("staging", [os.environ["LEAKCHECK_TEST_STAGING"]])
def test_with_a_session_secret_in_its_id(staging):
    assert staging
"""

#: the masking of the trace switched off in the inner run (the check has teeth)
UNMASKED = """
from leakcheck.pytest_plugin.session import PluginSession

PluginSession.mask_debug_trace = lambda self: None
"""


def _traced(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    conftest: str = "",
    *,
    env: bool = False,
) -> tuple[bytes, list[Secret]]:
    """The trace (``--debug``'s file, or with ``env`` the stderr that ``PYTEST_DEBUG=1``
    traces to) and the secrets it may show."""
    staging = Secret.from_user("stg-" + secrets.token_urlsafe(24), kind="bearer", id="staging")
    monkeypatch.setenv("LEAKCHECK_TEST_STAGING", staging.value)
    pytester.makepyfile(test_traced=INNER)
    pytester.makeini("[pytest]\nleakcheck_secret_env = LEAKCHECK_TEST_STAGING\n")
    if conftest:
        pytester.makeconftest(conftest)
    trace = pytester.path / "trace.log"
    if env:
        monkeypatch.setenv("PYTEST_DEBUG", "1")
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "-p", "no:cacheprovider", f"--leakcheck-seed={SEED}",
        *(() if env else (f"--debug={trace}",)),
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    canary = CanaryFactory(SEED, namespace="test_traced.py::test_compares").secret("bearer")
    traced = "\n".join(result.errlines).encode("utf-8", "surrogatepass") if env else None
    return traced or trace.read_bytes(), [canary, staging]


@pytest.mark.parametrize("env", [False, True], ids=["--debug", "PYTEST_DEBUG"])
def test_the_debug_trace_is_masked(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, env: bool
) -> None:
    traced, made = _traced(pytester, monkeypatch, env=env)
    # the routes were taken: the operands, the failing call, the parametrized item (its
    # id masked); booleans only, never the trace in an assertion's message
    for route in (
        b"pytest_assertrepr_compare",
        b"excinfo=",
        b"test_with_a_session_secret_in_its_id[\xc2\xabcanary:secret:",
    ):
        taken = route in traced
        assert taken, route
    found = hits(traced, made)
    assert not found


def test_without_the_masking_the_trace_shows_them(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (PYTEST_DEBUG's trace goes through the same writer: one run shows the teeth of both)
    traced, made = _traced(pytester, monkeypatch, UNMASKED)
    shown = {hit.split(" as ")[0] for hit in hits(traced, made)}
    assert shown == {"bearer#1", "staging"}


@pytest.mark.parametrize("tracing", [True, False], ids=["tracing", "not tracing"])
def test_a_tracer_it_cannot_mask_is_said_in_the_header(
    monkeypatch: pytest.MonkeyPatch, tracing: bool
) -> None:
    # a pluggy whose tracer keeps its writer elsewhere: never a silent skip when tracing
    from types import SimpleNamespace

    from leakcheck.pytest_plugin.session import _TRACE_UNMASKED, PluginSession

    monkeypatch.delenv("PYTEST_DEBUG", raising=False)
    config = SimpleNamespace(
        trace=SimpleNamespace(root=object()),
        option=SimpleNamespace(debug="trace.log" if tracing else None),
    )
    session = SimpleNamespace(
        config=config, trace_unmasked=False, enabled=True, seed="1", capture_note="",
        session_secrets=[], missing_env=[], no_log_capture=False,
    )  # fmt: skip
    session.unseen_notes = lambda: PluginSession.unseen_notes(session)  # type: ignore[arg-type]
    PluginSession.mask_debug_trace(session)  # type: ignore[arg-type]
    header = PluginSession.pytest_report_header(session, config)  # type: ignore[arg-type]
    said = any(_TRACE_UNMASKED in line for line in header)
    assert said is tracing
