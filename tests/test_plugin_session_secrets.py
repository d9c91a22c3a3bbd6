"""Secrets for the whole session: registered before collection, masked from the first line.

A value a test registers itself is masked from then on; one that shows in a test id (a
parametrize value) was printed by ``-v`` before the test ran. So such values are
registered for the session (``leakcheck_secret_env``, ``register_session_secret``), and a
test that registers a secret its own id shows fails, saying how to register it in time.
"""

from __future__ import annotations

import pytest
from conftest import self_scan

from leakcheck import Secret

pytest_plugins = ["pytester"]

TOKEN = "ghp_Wd4Kx9Qm2Vt7Lp3Rz8Hn5Jc1Fb6Gs0Ya"
OTHER = "xoxb-58Hq2Zr9Lm4Vt8Pb3Nw6Jc1Fd5GsK"
SECRETS = [Secret.from_user(v, kind="secret", id=f"s{n}") for n, v in enumerate((TOKEN, OTHER))]

ARGS = ("-p", "no:randomly", "-p", "no:cacheprovider", "-v", "-rA")


def test_an_env_secret_is_masked_in_ids_and_searched_in_tests(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STAGING_TOKEN", TOKEN)
    pytester.makeini("[pytest]\nleakcheck_secret_env = STAGING_TOKEN\n")
    pytester.makepyfile(
        test_env="""
        import os, pytest
        TOKEN = os.environ["STAGING_TOKEN"]

        @pytest.mark.parametrize("token", [TOKEN])
        def test_param(token):
            pass

        def test_leaks(leakcheck):
            leakcheck.expose({"detail": f"rejected {TOKEN}"})
        """
    )
    result = pytester.runpytest(*ARGS)
    text = "\n".join(result.outlines + result.errlines)
    self_scan(text, SECRETS[:1], "inner output")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "leakcheck: 1 session secret(s) masked",
            "*test_param[[]\u00abcanary:secret:*\u00bb[]] PASSED*",
            "*$STAGING_TOKEN (secret, direct secret):*",
        ]
    )


def test_a_warning_of_a_fixture_set_up_before_the_check_is_judged(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fixture listed before ``leakcheck`` runs before the check exists: what it printed
    was judged, what it warned was not, and a session secret in it passed (found by a
    hunting helper). The test's own warnings recorded before the check are judged with
    the rest; a fixture that warns of nothing secret passes."""
    monkeypatch.setenv("STAGING_TOKEN", TOKEN)
    pytester.makeini("[pytest]\nleakcheck_secret_env = STAGING_TOKEN\n")
    pytester.makepyfile(
        test_env="""
        import os, warnings, pytest
        TOKEN = os.environ["STAGING_TOKEN"]

        @pytest.fixture
        def client():
            warnings.warn(f"insecure login {TOKEN}")

        @pytest.fixture
        def quiet_client():
            warnings.warn("insecure login")

        def test_warned_before(client, leakcheck):
            leakcheck.expose({"ok": True})

        def test_warned_clean(quiet_client, leakcheck):
            leakcheck.expose({"ok": True})
        """
    )
    result = pytester.runpytest(*ARGS)
    self_scan("\n".join(result.outlines + result.errlines), SECRETS[:1], "inner output")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*[[]LEAK[]] operator: warning UserWarning*"])
    result.stdout.fnmatch_lines(["*test_warned_clean PASSED*"])


def test_names_spaced_on_one_ini_line_are_each_a_variable(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``leakcheck_secret_env = A B`` on one line was one name, ``$A B`` not set: neither
    variable masked, and ``-v`` printed both tokens in the test ids."""
    monkeypatch.setenv("STAGING_TOKEN", TOKEN)
    monkeypatch.setenv("OTHER_TOKEN", OTHER)
    pytester.makeini("[pytest]\nleakcheck_secret_env = STAGING_TOKEN OTHER_TOKEN\n")
    pytester.makepyfile(
        test_env="""
        import os, pytest

        @pytest.mark.parametrize("token", [os.environ["STAGING_TOKEN"], os.environ["OTHER_TOKEN"]])
        def test_param(token):
            pass
        """
    )
    result = pytester.runpytest(*ARGS)
    self_scan("\n".join(result.outlines + result.errlines), SECRETS, "inner output")
    result.stdout.fnmatch_lines(["leakcheck: 2 session secret(s) masked"])
    assert "is not set" not in result.stdout.str()


def test_an_unset_env_secret_is_said_in_the_header(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nleakcheck_secret_env = LEAKCHECK_NOT_SET_ANYWHERE\n")
    pytester.makepyfile(test_x="def test_x(): pass")
    result = pytester.runpytest(*ARGS)
    result.stdout.fnmatch_lines(
        ["leakcheck: leakcheck_secret_env: $LEAKCHECK_NOT_SET_ANYWHERE is not set"]
    )


@pytest.mark.parametrize("quiet", ["-q", "--no-header"])
def test_an_unset_env_secret_is_said_in_the_summary_without_a_header(
    pytester: pytest.Pytester, quiet: str
) -> None:
    """``pytest -q``, the way CI runs, prints no header: a secret that is not masked
    because its variable is unset was said nowhere (found running a suite with -q)."""
    pytester.makeini("[pytest]\nleakcheck_secret_env = LEAKCHECK_NOT_SET_ANYWHERE\n")
    pytester.makepyfile(test_x="def test_x(): pass")
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider", quiet)
    said = [line for line in result.outlines if "LEAKCHECK_NOT_SET_ANYWHERE" in line]
    assert said == ["leakcheck_secret_env: $LEAKCHECK_NOT_SET_ANYWHERE is not set"], said


def test_a_conftest_registers_a_session_secret(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        f"""
        from leakcheck.plugin import register_session_secret

        def pytest_configure(config):
            register_session_secret(config, {OTHER!r}, kind="bearer", id="slack")
        """
    )
    pytester.makepyfile(
        test_api=f"""
        import pytest

        @pytest.mark.parametrize("token", [{OTHER!r}])
        def test_param(token):
            print("using", token)
            assert not token
        """
    )
    result = pytester.runpytest(*ARGS)
    text = "\n".join(result.outlines + result.errlines)
    self_scan(text, SECRETS[1:], "inner output")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*test_param[[]\u00abcanary:bearer:*\u00bb[]]*FAILED*"])


def test_a_weak_session_secret_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        from leakcheck.plugin import register_session_secret

        def pytest_configure(config):
            register_session_secret(config, "password", id="weak")
        """
    )
    pytester.makepyfile(test_x="def test_x(): pass")
    result = pytester.runpytest(*ARGS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.errlines if "leakcheck session secret" in line]
    assert len(errors) == 1 and "weak" in errors[0] and "password" not in errors[0]


def test_a_secret_registered_too_late_for_its_own_id_fails_the_test(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``-v`` printed the id before the test registered the value: never silently."""
    monkeypatch.setenv("LATE_TOKEN", TOKEN)
    pytester.makepyfile(
        test_late="""
        import os, pytest

        @pytest.mark.parametrize("token", [os.environ["LATE_TOKEN"], "plain-value"])
        def test_late(leakcheck, token):
            if token != "plain-value":
                leakcheck.register(token, kind="bearer")
        """
    )
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*leakcheck: secret(s) bearer#user1 show in this test's id, which pytest printed "
            "before the test registered them: register them for the session*",
            "PASSED test_late.py::test_late[[]plain-value[]]",
        ]
    )
    # after the registration, what pytest prints of the test's id is masked
    failure_lines = [line for line in result.outlines if line.startswith("FAILED")]
    self_scan("\n".join(failure_lines), SECRETS[:1], "short summary")


def test_only_a_value_the_test_brought_is_looked_for_in_its_id(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A canary is made after the id was printed, from the seed and the id; a session
    secret is masked from the first line: neither makes the test's scanner search its id
    (a clean test's scanner then searches nothing at all). A value the test brought does."""
    monkeypatch.setenv("LATE_TOKEN", TOKEN)
    pytester.makeconftest(
        """
        from leakcheck.detect import Scanner

        SCANNED = []
        SCAN = Scanner.scan

        def counting(self, data, *args, **kwargs):
            SCANNED.append(data)
            return SCAN(self, data, *args, **kwargs)

        Scanner.scan = counting

        def pytest_runtest_logreport(report):
            if report.when == "call":
                print(f"\\nids scanned for {report.nodeid}:",
                      sum(text == report.nodeid for text in SCANNED))
        """
    )
    pytester.makepyfile(
        test_ids="""
        import os, pytest

        @pytest.mark.parametrize("n", [1])
        def test_canaries(leakcheck, n):
            leakcheck.secret("bearer")

        @pytest.mark.parametrize("n", [1])
        def test_brought(leakcheck, n):
            leakcheck.register(os.environ["LATE_TOKEN"], kind="bearer")
        """
    )
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-s")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines_random(
        [
            "*ids scanned for test_ids.py::test_canaries[[]1[]]: 0",
            "*ids scanned for test_ids.py::test_brought[[]1[]]: 1",
        ]
    )


def test_a_text_masked_before_a_secret_arrived_is_masked_again_after(
    pytester: pytest.Pytester,
) -> None:
    """The session keeps the texts it masked for the reports that repeat them; a secret
    registered since (by the running test, or for the session) masks them anew."""
    pytester.makepyfile(
        test_cache=f"""
        from leakcheck import Secret
        from leakcheck.pytest_plugin.session import SESSION

        LINE = "a captured line, long enough to be kept for the reports after it: "

        def test_the_running_tests_secret(request, leakcheck):
            state = request.config.stash[SESSION]
            text = LINE + {TOKEN!r}
            assert state.mask(text) == text and state.mask(text) == text
            leakcheck.register({TOKEN!r}, "secret")
            assert {TOKEN!r} not in state.mask(text)

        def test_a_session_secret(request):
            state = request.config.stash[SESSION]
            text = LINE + {OTHER!r}
            assert state.mask(text) == text and state.mask(text) == text
            state.add_session_secret(Secret.from_user({OTHER!r}, kind="secret", id="late"))
            assert {OTHER!r} not in state.mask(text)
        """
    )
    result = pytester.runpytest(*ARGS)
    self_scan("\n".join(result.outlines + result.errlines), SECRETS, "inner output")
    result.assert_outcomes(passed=2)


_WHAT_PLUGINS_READ = """
import json, pytest

def pytest_collectreport(report):
    # pytest-json-report keeps its "collectors" section from here, before the collection ends
    with open("written.jsonl", "a", encoding="utf-8") as out:
        out.write(json.dumps([node.nodeid for node in report.result]) + "\\n")

def pytest_runtest_logreport(report):
    # --report-log and pytest-json-report write every report's keywords
    with open("written.jsonl", "a", encoding="utf-8") as out:
        out.write(json.dumps(sorted(report.keywords)) + "\\n")
"""


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_a_session_secret_in_an_id_is_masked_in_keywords_and_collect_reports(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: tuple[str, ...]
) -> None:
    """A parametrize value that is a session secret: the id was masked, but every report's
    ``keywords`` kept the test's name and its parameters' id as they were (written raw by
    ``--report-log`` and pytest-json-report, sent raw by an xdist worker), and the collect
    report handed the raw ids on before the collection ended (pytest-json-report's
    "collectors"). Found by a hunting helper."""
    monkeypatch.setenv("STAGING_TOKEN", TOKEN)
    pytester.makeini("[pytest]\nleakcheck_secret_env = STAGING_TOKEN\n")
    pytester.makeconftest(_WHAT_PLUGINS_READ)
    pytester.makepyfile(
        test_env="""
        import os, pytest

        @pytest.mark.parametrize("token", [os.environ["STAGING_TOKEN"]])
        def test_param(token):
            pass
        """
    )
    result = pytester.runpytest(*ARGS, *workers)
    result.assert_outcomes(passed=1)
    written = (pytester.path / "written.jsonl").read_text(encoding="utf-8")
    assert "test_param[" in written  # (the hooks ran)
    self_scan(written, SECRETS[:1], "what plugins read of reports")


def test_pytest_metadata_table_is_masked_before_pytest_html_reads_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest-metadata keeps the CI's variables (Jenkins sets ``GIT_URL`` with the
    credential in it) in ``config.stash``; pytest-html wrote them into its "Environment"
    table as they were (trylast at session start). Masked in place before: here with a
    stand-in for pytest-metadata, whose module and key the plugin looks up."""
    monkeypatch.setenv("STAGING_TOKEN", TOKEN)
    pytester.makeini("[pytest]\nleakcheck_secret_env = STAGING_TOKEN\n")
    pytester.mkpydir("pytest_metadata")
    pytester.path.joinpath("pytest_metadata", "plugin.py").write_text(
        "import pytest\nmetadata_key = pytest.StashKey()\n"
    )
    pytester.makeconftest(
        """
        import json, os, pytest
        from pytest_metadata.plugin import metadata_key

        @pytest.hookimpl(tryfirst=True)
        def pytest_configure(config):
            url = f"https://ci-bot:{os.environ['STAGING_TOKEN']}@git.example/org/repo.git"
            config.stash[metadata_key] = {"Python": "3", "CI": {"GIT_URL": url}}

        @pytest.hookimpl(trylast=True)
        def pytest_sessionstart(session):  # as pytest-html's report does
            table = session.config.stash[metadata_key]
            with open("environment.json", "w", encoding="utf-8") as out:
                json.dump(table, out)
        """
    )
    pytester.makepyfile(test_x="def test_x(): pass")
    pytester.syspathinsert()
    result = pytester.runpytest(*ARGS)
    result.assert_outcomes(passed=1)
    written = (pytester.path / "environment.json").read_text(encoding="utf-8")
    assert "git.example/org/repo.git" in written
    self_scan(written, SECRETS[:1], "pytest-metadata's table")


def test_a_usage_error_raised_while_the_session_runs_is_masked(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A conftest that checks a session secret's shape when the session starts and quotes
    it in a ``pytest.UsageError``: pytest prints that after leakcheck gave its streams
    back, and it went out raw (found by a hunting helper); ``pytest.exit`` was masked."""
    monkeypatch.setenv("STAGING_TOKEN", OTHER)
    pytester.makeini("[pytest]\nleakcheck_secret_env = STAGING_TOKEN\n")
    pytester.makeconftest(
        """
        import os, pytest

        def pytest_sessionstart(session):
            token = os.environ["STAGING_TOKEN"]
            if not token.startswith("ghp_"):
                raise pytest.UsageError(f"not a GitHub token: {token!r}")
        """
    )
    pytester.makepyfile(test_u="def test_u():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    text = "\n".join(result.outlines + result.errlines)
    self_scan(text, SECRETS[1:], "the usage error")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "ERROR: not a GitHub token: '\u00abcanary:secret:raw\u00bb'" in result.errlines
