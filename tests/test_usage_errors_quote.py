"""A usage error quotes a misspelt name, never a token given where a name goes.

A CI script that expands ``$TOKEN`` in the wrong place, a token pasted as a marker's key,
an id or an ini value: leakcheck learns no secret there, so nothing masks it, and the
error printed it (``unknown stage 'tok_...'``, ``'tok_...' has no level; write
LOGGER=LEVEL (e.g. tok_...=INFO``). Each message now describes a value that looks like a
key (``errors.quoted``: «opaque», its length) and still quotes an ordinary misspelling.
The token is random per run; assertions compare booleans, never show it.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

import pytest

from leakcheck import LeakCheck, Secret
from leakcheck.findings import OPAQUE_LABEL

pytest_plugins = ["pytester"]

TOKEN = "tok_" + secrets.token_urlsafe(24)


def _shown(text: str) -> bool:
    """Whether ``text`` shows any 8 characters of TOKEN's random part."""
    body = TOKEN[4:]
    return any(body[i : i + 8] in text for i in range(len(body) - 7))


def _message(call: Callable[[], Any]) -> str:
    with pytest.raises(Exception) as caught:  # noqa: PT011 - each site raises its own
        call()
    return str(caught.value)


def _check(**options: Any) -> LeakCheck:
    return LeakCheck(sinks=[], **options)


def _policy(**rules: Any) -> Any:
    from leakcheck.policy import DEFAULT_POLICY

    return DEFAULT_POLICY.with_rules(**rules)


def _levels(spec: Any) -> Any:
    from leakcheck.policy import parse_log_levels

    return parse_log_levels(spec, "log_levels")


def _expectations(code: str, action: str) -> Any:
    from leakcheck.contract.expectations import Expectations

    return Expectations({("deploy", "http_401"): (code, action)})


def _operation(name: str, transport: str = "http") -> Any:
    from leakcheck.matrix import Operation

    return Operation(name, transport, False)


#: (site, the call with a value in the wrong place: ``value`` is TOKEN or a misspelling)
SITES: dict[str, Callable[[str], Any]] = {
    "force(stage)": lambda v: _check().force(v, via="respx"),
    "force(via=)": lambda v: _check().force("http_401", via=v),
    "force(placement=)": lambda v: _check().force("http_401", via="respx", placement=v),
    "place()": lambda v: _check().place(v),
    "force(**option)": lambda v: _check().force("http_401", via="respx", **{v: 1}),
    "loopback scheme": lambda v: _check().force("http_401", via="loopback", scheme=v),
    "loopback timeout": lambda v: _check().force("http_401", via="loopback", timeout=v),
    "respx url=": lambda v: _check().force("http_401", via="respx", url=v),
    "register(id=)": lambda v: _check().register(secrets.token_urlsafe(30), id=v),
    "Secret.from_user(id=)": lambda v: Secret.from_user("github_token", id=v),
    "Expectations code": lambda v: _expectations(v, "stop_and_report"),
    "Expectations action": lambda v: _expectations("AUTH_FAILED", v),
    "allow rule": lambda v: _policy(allow=[v]),
    "allow secret class": lambda v: _policy(allow={v: ["caller"]}),
    "allow sink class": lambda v: _policy(allow={"context": [v]}),
    "log_levels without a level": lambda v: _levels([v]),
    "log_levels level": lambda v: _levels({"httpcore": v}),
    "Operation name": lambda v: _operation(v),
    "Operation transport": lambda v: _operation("deploy", v),
}


@pytest.mark.parametrize("site", list(SITES))
def test_a_token_given_where_a_name_goes_is_described(site: str) -> None:
    said = _message(lambda: SITES[site](TOKEN))
    assert not _shown(said)
    if site != "respx url=":  # (a URL is never quoted: it says what a URL must be)
        assert OPAQUE_LABEL in said or "looks like a key" in said


@pytest.mark.parametrize(
    "site", [s for s in SITES if s not in ("respx url=", "register(id=)", "Secret.from_user(id=)")]
)
def test_a_misspelt_name_is_still_quoted(site: str) -> None:
    """(The twin: a value with no key's shape is quoted as before.)"""
    misspelt = "Deploy-App" if site == "Operation name" else "xhttp_401x"
    said = _message(lambda: SITES[site](misspelt))
    assert misspelt in said


def test_a_respx_url_that_is_none_fails_at_the_callers_line(pytester: pytest.Pytester) -> None:
    """``url=`` with a token in its query raised a plain ValueError: pytest printed the
    arguments of leakcheck's frames (``url = '...?api_key=tok_...'``)."""
    pytester.makepyfile(
        f"""
        def test_url(leakcheck):
            leakcheck.force("http_401", via="respx", url="https://h.test/v1?api_key={TOKEN}")
        """
    )
    result = pytester.runpytest("-p", "no:randomly", "-l", "--tb=long")
    result.assert_outcomes(failed=1)
    text = "\n".join(result.outlines)
    assert "no query or fragment" in text
    assert "httpfaults.py" not in text  # (leakcheck's frames, their arguments, left out)


@pytest.mark.parametrize(
    "ini",
    [
        "leakcheck_log_levels = {token}",
        "leakcheck_log_levels = httpcore={token}",
        "leakcheck_strict_latent = {token}",
        "leakcheck_snapshots = {token}",
        "leakcheck_allow = context: {token}",
    ],
)
def test_an_ini_value_is_described(pytester: pytest.Pytester, ini: str) -> None:
    pytester.makeini("[pytest]\n" + ini.format(token=TOKEN) + "\n")
    pytester.makepyfile("def test_nothing(leakcheck):\n    pass\n")
    result = pytester.runpytest("-p", "no:randomly")
    text = "\n".join(result.outlines + result.errlines)
    assert result.ret != 0 and "leakcheck" in text
    assert not _shown(text)


def test_a_marker_key_and_an_opted_out_sink_are_described(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        f"""
        import pytest

        @pytest.mark.leakcheck(**{{{TOKEN!r}: 1}})
        def test_key(leakcheck):
            pass
        """
    )
    result = pytester.runpytest("-p", "no:randomly")
    text = "\n".join(result.outlines + result.errlines)
    assert "unknown option(s)" in text and not _shown(text)


def test_an_opted_out_sink_named_by_a_token_is_described(pytester: pytest.Pytester) -> None:
    """(An unknown sink passes when a sink plugin is skipped, and is listed as opted out in
    the summary and the JSON report; else it is a usage error: neither shows it.)"""
    pytester.makepyfile(
        f"""
        import pytest

        @pytest.mark.leakcheck(skip_sinks={{{TOKEN!r}: "reason"}})
        def test_skip(leakcheck):
            pass
        """
    )
    report = pytester.path / "report.json"
    result = pytester.runpytest_subprocess("-p", "no:randomly", f"--leakcheck-report={report}")
    text = "\n".join(result.outlines + result.errlines)
    assert "opted out" in text or "unknown sink" in text
    assert not _shown(text)
    assert not report.exists() or not _shown(report.read_text())


def test_the_mcp_command_line_and_env_name_are_described(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from leakcheck.audit.model import ServerSpec
    from leakcheck.cli import main

    spec = ServerSpec(command="/bin/sh", args=("-c", "exit 3", "-k", TOKEN))
    assert not _shown(spec.describe()) and OPAQUE_LABEL in spec.describe()
    assert main(["mcp", "--env", TOKEN, "--", "true"]) == 2
    assert main(["mcp", "--stages", TOKEN, "--", "true"]) == 2
    assert main(["schema", "--version", TOKEN]) == 2
    err = capsys.readouterr().err
    assert err.count("leakcheck: error:") == 3
    assert not _shown(err)


@pytest.mark.parametrize("before", ["", "x" * 22 + " "], ids=["whole", "after-22-chars"])
def test_a_reports_canary_id_that_is_a_token_is_described(
    tmp_path: Any, capsys: pytest.CaptureFixture[str], before: str
) -> None:
    """(after-22-chars: the id was cut to 40 characters before it was judged, and the
    token's first 9 characters no longer looked like a key: shown raw, found by a hunting
    helper)"""
    import json

    from leakcheck.cli import main

    report = tmp_path / "r.json"
    secret = {"id": before + TOKEN, "kind": "bearer", "generated": True}
    tests = [{"test": "t.py::t", "secrets": [secret]}]
    report.write_text(
        json.dumps({"tool": "leakcheck", "seed": "1", "canary_generation": 2, "tests": tests})
    )
    (tmp_path / "a.log").write_text("nothing\n")
    assert main(["scan", "--canaries-from", str(report), str(tmp_path / "a.log")]) == 2
    err = capsys.readouterr().err
    assert "is not a canary id" in err and not _shown(err)


@pytest.mark.parametrize(
    "name",
    ["OAuth2TokenRefresher", "MyCompanyInternalHttpTransport2", "HttpUnauthorizedResponse401"],
)
def test_a_name_of_words_is_quoted_whatever_its_case_and_digits(name: str) -> None:
    """(A class or logger name in CamelCase with a digit is no key: quoted, as before.)"""
    assert name in _message(lambda: _levels({name: "LOUD"}))
    assert name in _message(lambda: _check().force(name, via="respx"))


def test_a_described_value_says_its_own_length() -> None:
    from leakcheck.errors import quoted

    assert f"a value of {len(TOKEN)} characters" in quoted(TOKEN)


def test_an_unknown_seam_that_is_a_token_is_described() -> None:
    """A target's ``seams`` naming an unknown seam: quoted as any refused name is, a
    token described (the list went out raw: found by a hunting helper)."""
    from leakcheck.matrix.model import Target, TargetError, seams_of

    class Bad(Target):
        seams = frozenset({TOKEN})

    with pytest.raises(TargetError) as refused:
        seams_of(Bad())
    assert "unknown seam(s)" in str(refused.value) and not _shown(str(refused.value))
    Bad.seams = frozenset({"vaults"})
    with pytest.raises(TargetError, match=r"unknown seam\(s\) 'vaults'"):
        seams_of(Bad())
