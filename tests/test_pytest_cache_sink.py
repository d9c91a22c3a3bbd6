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


TOKEN = "ghp_R7wKq2ZxP9mLt4VbN8cJd3HsY6fGa1EuQ0iO"  # (not a real token: made for this test)

IDS = """
import os
import pytest

@pytest.mark.parametrize("token", [os.environ["STAGING_TOKEN"]])
def test_registers_its_id(leakcheck, token):
    leakcheck.register(token, kind="github_token")
    leakcheck.expose({"ok": False})
    assert False, "the upstream refused"
"""


def test_pytests_own_cache_writes_mask_what_the_session_saw(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest writes the failed tests' ids (``cache/lastfailed``), every id
    (``cache/nodeids``) and ``--sw``'s position (``cache/stepwise``) at the end of the
    session: an id holding the value its test registered went there raw, though every
    report masked it (found by a hunting helper)."""
    monkeypatch.setenv("STAGING_TOKEN", TOKEN)
    pytester.makepyfile(test_ids=IDS)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--sw", "-q")
    result.assert_outcomes(failed=1)
    written = {
        path.relative_to(pytester.path).as_posix(): path.read_text(encoding="utf-8")
        for path in (pytester.path / ".pytest_cache").rglob("*")
        if path.is_file()
    }
    assert {"lastfailed", "nodeids", "stepwise"} <= {p.rsplit("/", 1)[-1] for p in written}
    raw = sorted(path for path, text in written.items() if TOKEN[4:20] in text)
    assert raw == []
    assert "\u00abcanary:github_token" in written[".pytest_cache/v/cache/lastfailed"]
