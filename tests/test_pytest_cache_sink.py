"""What a test sets in pytest's cache (``config.cache.set``) is judged as an operator sink
of that test, ``pytest cache``: a test that kept a login token between sessions wrote it to
``.pytest_cache``, which CI keeps, and passed (found by a hunting helper)."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

SUITE = """
def test_caches_token(leakcheck, request):
    token = leakcheck.secret("bearer")
    leakcheck.expose({"ok": True})
    request.config.cache.set("gateway/session", {"headers": {"Authorization": f"Bearer {token}"}})

import pytest

@pytest.fixture(scope="session")
def logged_in(request):
    # a session's login kept between sessions, set before any test's check exists
    import os
    request.config.cache.set("auth/session", {"token": os.environ["STAGING_TOKEN"]})

def test_caches_in_a_session_fixture(logged_in, leakcheck):
    leakcheck.expose({"ok": True})

def test_caches_under_a_token_key(leakcheck, request):
    # (the key names a file under .pytest_cache/v/)
    token = leakcheck.secret("bearer")
    leakcheck.expose({"ok": True})
    request.config.cache.set(f"gateway/seen/{token}", True)

def test_caches_from_a_thread(leakcheck, request):
    # (a client persisting its login from its own executor: a set no test's thread made)
    from concurrent.futures import ThreadPoolExecutor

    token = leakcheck.secret("bearer")
    with ThreadPoolExecutor(1) as pool:
        pool.submit(request.config.cache.set, "gateway/login", {"token": token}).result()
    leakcheck.expose({"ok": True})

def test_caches_plain(leakcheck, request):
    leakcheck.secret("bearer")
    leakcheck.expose({"ok": True})
    request.config.cache.set("gateway/region", "eu-west-1")
"""


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_a_token_set_in_the_cache_fails_its_test(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: tuple[str, ...]
) -> None:
    """Set in the test, or in a session-scoped fixture set up before the test's check
    existed (a hunting helper found that one passing), or under a key that names the
    token (a file's name under .pytest_cache), or from a thread of the test's (an
    executor's: a hunting helper found it passing): each fails its test."""
    monkeypatch.setenv("STAGING_TOKEN", "ghp_Wd4Kx9Qm2Vt7Lp3Rz8Hn5Jc1Fb6Gs0Ya")
    pytester.makeini("[pytest]\nleakcheck_secret_env = STAGING_TOKEN\n")
    pytester.makepyfile(test_cache=SUITE)
    result = pytester.runpytest("-p", "no:randomly", "-rA", *workers)
    result.assert_outcomes(failed=4, passed=1)
    result.stdout.fnmatch_lines(["FAILED test_cache.py::test_caches_from_a_thread - leakcheck:*"])
    result.stdout.fnmatch_lines(["FAILED test_cache.py::test_caches_token - leakcheck:*"])
    result.stdout.fnmatch_lines(
        ["FAILED test_cache.py::test_caches_in_a_session_fixture - leakcheck:*"]
    )
    result.stdout.fnmatch_lines(["*pytest cache*gateway/session*"])
    result.stdout.fnmatch_lines(
        ["FAILED test_cache.py::test_caches_under_a_token_key - leakcheck:*"]
    )


def test_the_cache_is_given_back_its_method(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_cache=SUITE)
    config = pytester.parseconfigure("-p", "no:randomly")
    assert "set" in config.cache.__dict__  # (wrapped on the instance for the session)
    config._ensure_unconfigure()
    assert "set" not in config.cache.__dict__
