"""leakcheck never prints a secret, by any route pytest offers.

An inner suite leaks in every way we know (``-vv`` diffs, ``-l`` locals, ``-rA`` sections of
passing tests, JUnit XML with captured output and properties, exception messages, the
warnings summary, skip and xfail reasons, teardown errors, live logging, ``--log-file``,
the JSON report). It runs with a fixed seed, so every canary can be rebuilt here from
``CanaryFactory(SEED, namespace=nodeid)`` in call order, and every stream and file the run
wrote is scanned with a masking-strength scanner. Failure messages name secret ids, forms
and places only.
"""

from __future__ import annotations

import base64
import json

import pytest
from conftest import assert_inner_run_safe, self_scan

import leakcheck
from leakcheck import CanaryFactory, Scanner, Secret

pytest_plugins = ["pytester"]


SEED = "no-echo-7"
MODULE = "test_noecho.py"
#: A user-supplied secret written in the inner test's source: tracebacks show source lines.
LITERAL = "ghp_Zq7Rk2Vw9Lm4Xt8Pb3Hn6Jc1Fd5Gs0Ya"

INNER = """
import base64, json, logging, sys, threading, urllib.parse, warnings
import pytest

LITERAL = "ghp_Zq7Rk2Vw9Lm4Xt8Pb3Hn6Jc1Fd5Gs0Ya"

def test_assert_eq(leakcheck):
    token = leakcheck.secret("bearer")
    assert token == "lcb.expected"

def test_assert_dict(leakcheck):
    password = leakcheck.secret("password")
    assert {"auth": password, "n": 1, "url": f"https://u:{password}@db"} == {"n": 2}

def test_showlocals(leakcheck):
    key = leakcheck.secret("api_key")
    cookie = leakcheck.secret("cookie")
    url = f"https://api.example/v1?api_key={key}"
    headers = {"Cookie": f"session={cookie}", "X-Url": urllib.parse.quote(url)}
    raise RuntimeError("upstream failed")

def test_exception_message(leakcheck):
    password = leakcheck.secret("ssh_password")
    raise ConnectionError(f"ssh deploy@build-host failed with password {password!r}")

def test_exception_group(leakcheck):
    sig = leakcheck.secret("signature")
    if sys.version_info < (3, 11):
        raise RuntimeError(f"https://cdn.example/f?sig={sig}")
    raise ExceptionGroup("calls failed", [ValueError(f"https://cdn.example/f?sig={sig}")])

@pytest.mark.leakcheck(allow={"context": ["caller"]})
def test_passing_with_output(leakcheck):
    host = leakcheck.secret("hostname")
    user = leakcheck.secret("user_name")
    print("connected to", host, "as", user)
    print("stderr:", host, file=sys.stderr)
    logging.getLogger("gateway").warning("host %s user %s", host, user)

def test_warning(leakcheck):
    sig = leakcheck.secret("signature")
    warnings.warn(f"deprecated: https://cdn.example/f?sig={sig}")

def test_thread(leakcheck):
    token = leakcheck.secret("bearer")
    def worker():
        raise RuntimeError(f"refresh failed for {token}")
    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()

def test_pem(leakcheck):
    pem = leakcheck.secret("pem_private_key")
    assert pem.splitlines()[1:3] == ["MII"]

def test_literal_in_source(leakcheck):
    leakcheck.register(LITERAL, kind="bearer")
    assert LITERAL.lower() == "ghp_"  # ghp_Zq7Rk2Vw9Lm4Xt8Pb3Hn6Jc1Fd5Gs0Ya

def test_record_property(leakcheck, record_property):
    key = leakcheck.secret("api_key")
    record_property("upstream", f"https://api.example/v1?api_key={key}")
    record_property("headers", {"X-Api-Key": key})

def test_skip_reason(leakcheck):
    key = leakcheck.secret("api_key")
    pytest.skip(f"no upstream for {key}")

@pytest.mark.xfail(reason="known bug")
def test_xfail(leakcheck):
    cookie = leakcheck.secret("cookie")
    raise RuntimeError(f"cookie {cookie} rejected")

def test_xfail_imperative(leakcheck):
    cookie = leakcheck.secret("cookie")
    pytest.xfail(f"cookie {cookie} rejected")

@pytest.fixture
def session_token(leakcheck):
    token = leakcheck.secret("bearer")
    yield token
    raise RuntimeError(f"logout failed for {token}")

def test_teardown_error(session_token):
    assert session_token

def test_fragments_and_encodings(leakcheck):
    token = leakcheck.secret("api_key")
    encoded = base64.b64encode(f"svc:{token}".encode())
    assert (token[5:21], token.encode(), json.dumps({"k": token}), encoded) == ()

def test_prose(leakcheck):
    prose = leakcheck.secret("prose")
    assert prose.endswith("please")

def test_live_log(leakcheck):
    host = leakcheck.secret("hostname")
    logging.getLogger("gateway.live").warning("resolved %s", host)

def test_pytest_fail(leakcheck):
    key = leakcheck.secret("api_key")
    pytest.fail(f"gateway returned {key}")
"""

#: Secret kinds each inner test draws, in call order.
KINDS = {
    "test_assert_eq": ["bearer"],
    "test_assert_dict": ["password"],
    "test_showlocals": ["api_key", "cookie"],
    "test_exception_message": ["ssh_password"],
    "test_exception_group": ["signature"],
    "test_passing_with_output": ["hostname", "user_name"],
    "test_warning": ["signature"],
    "test_thread": ["bearer"],
    "test_pem": ["pem_private_key"],
    "test_literal_in_source": [],
    "test_record_property": ["api_key"],
    "test_skip_reason": ["api_key"],
    "test_xfail": ["cookie"],
    "test_xfail_imperative": ["cookie"],
    "test_teardown_error": ["bearer"],
    "test_fragments_and_encodings": ["api_key"],
    "test_prose": ["prose"],
    "test_live_log": ["hostname"],
    "test_pytest_fail": ["api_key"],
}


def canaries() -> list[Secret]:
    secrets = [Secret.from_user(LITERAL, kind="bearer", id="literal")]
    for test, kinds in KINDS.items():
        factory = CanaryFactory(SEED, namespace=f"{MODULE}::{test}")
        secrets += [factory.secret(kind) for kind in kinds]
    return secrets


SECRETS = canaries()
STRICT = Scanner(SECRETS, decode=True, forms=leakcheck.forms.MASKING_FORMS, strict=True)


def assert_no_echo(name: str, text: str | bytes) -> None:
    """No form, nor any masking-size piece, of any canary in ``text``."""
    # pytest prints a failing frame's arguments: the text under test, unmasked
    __tracebackhide__ = True
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    # Plain strings of ids, forms and places: asserting on the findings themselves would
    # print their excerpts.
    raw = ", ".join(s.id for s in SECRETS if s.value.encode("utf-8", "surrogatepass") in data)
    assert not raw, f"{name} holds the raw value of {raw}"
    found = "; ".join(
        f"{f.secret_id} as {f.form} at {f.location}" for f in STRICT.scan(data, source=name)
    )
    assert not found, f"{name} echoes: {found}"


def run_and_collect(
    pytester: pytest.Pytester, *args: str, subprocess: bool = False
) -> tuple[pytest.RunResult, dict[str, str | bytes]]:
    pytester.makepyfile(**{MODULE[:-3]: INNER})
    junit = pytester.path / "junit.xml"
    report = pytester.path / "leakcheck.json"
    log_file = pytester.path / "pytest.log"
    run = pytester.runpytest_subprocess if subprocess else pytester.runpytest
    result = run(
        "-p",
        "no:randomly",
        "-p",
        "no:hypothesispytest",
        f"--leakcheck-seed={SEED}",
        f"--leakcheck-report={report}",
        "-vv",
        "-l",
        "-rA",
        f"--junitxml={junit}",
        "-o",
        "junit_logging=all",
        "-o",
        "junit_log_passing_tests=true",
        "-o",
        "log_cli=true",
        "-o",
        "log_cli_level=DEBUG",
        f"--log-file={log_file}",
        "--log-file-level=DEBUG",
        "-W",
        "always",
        *args,
    )
    outputs: dict[str, str | bytes] = {
        "stdout": "\n".join(result.outlines),
        "stderr": "\n".join(result.errlines),
    }
    for path in (junit, report, log_file):
        outputs[path.name] = path.read_bytes()
    return result, outputs


def test_rebuilt_canaries_match_the_run(pytester: pytest.Pytester) -> None:
    """Without the plugin's masking the scan must see every canary: a conftest prints each
    planted value, base64-encoded, to a file; the rebuilt list must equal it."""
    pytester.makepyfile(**{MODULE[:-3]: INNER})
    pytester.makeconftest("""
        import base64, pathlib, pytest
        from leakcheck.pytest_plugin import CHECK
        def pytest_runtest_makereport(item, call):
            check = item.stash.get(CHECK, None)
            if check is not None and call.when == "teardown":
                with open(pathlib.Path(__file__).parent / "planted.txt", "a") as out:
                    for secret in check.secrets:
                        out.write(base64.b64encode(secret.value.encode()).decode() + "\\n")
    """)
    pytester.runpytest("-p", "no:randomly", "-p", "no:hypothesispytest", f"--leakcheck-seed={SEED}")
    planted = {
        base64.b64decode(line).decode()
        for line in (pytester.path / "planted.txt").read_text().split()
    }
    rebuilt = {s.value for s in SECRETS}
    # counts only: a set comparison would print the values in its diff
    not_rebuilt, not_planted = len(planted - rebuilt), len(rebuilt - planted)
    assert (not_rebuilt, not_planted) == (0, 0)


@pytest.mark.parametrize("tb", ["long", "native", "short"])
def test_no_stream_or_file_echoes_a_secret(pytester: pytest.Pytester, tb: str) -> None:
    result, outputs = run_and_collect(pytester, f"--tb={tb}")
    text = outputs["stdout"]
    # the run did exercise the routes it is meant to
    assert "INTERNALERROR" not in text + str(outputs["stderr"])
    for route in (
        "warnings summary",
        "PASSES",
        "live log call",
        "Captured stdout call",
        "SKIPPED",
        "test_teardown_error",
        "leakcheck",
    ):
        assert route in text, f"the run shows no {route!r}"
    assert b"<properties>" in outputs["junit.xml"]
    assert b"gateway.live" in outputs["pytest.log"]
    report = json.loads(outputs["leakcheck.json"])
    assert report["tests"], "no records in the JSON report"
    for name, content in outputs.items():
        assert_no_echo(name, content)


def test_leaky_xfail_fails(pytester: pytest.Pytester) -> None:
    """A leak is a failure even in an xfail test, and the run's exit status says so."""
    result, _ = run_and_collect(pytester, "-k", "test_xfail and not imperative")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["FAILED test_noecho.py::test_xfail - leakcheck:*"])


def test_no_echo_under_xdist(pytester: pytest.Pytester) -> None:
    """Worker reports travel to the controller already masked."""
    result, outputs = run_and_collect(pytester, "-n", "2", "--tb=long", subprocess=True)
    assert "gw0" in outputs["stdout"] or "gw1" in outputs["stdout"]
    for name, content in outputs.items():
        if name != "pytest.log":  # written by the controller only
            assert_no_echo(name, content)


def test_scanner_sees_unmasked_output() -> None:
    """The check has teeth: the same scan flags each raw value and its masking pieces."""
    for secret in SECRETS:
        with pytest.raises(AssertionError):
            assert_no_echo("probe", f"prefix {secret.value} suffix")
        # (never assert on a call that takes a value: pytest would print its arguments)
        half = len(secret.value) // 2
        if sum(secret.bits[half - 4 : half + 4]) >= 20:
            piece_found = bool(STRICT.scan(f"x'{secret.value[half - 4 : half + 4]}'x"))
            assert piece_found, secret.id
    json_found = bool(STRICT.scan(json.dumps({"k": SECRETS[1].value}, ensure_ascii=True)))
    assert json_found


def test_record_xml_attribute_is_masked(pytester: pytest.Pytester) -> None:
    """``record_xml_attribute`` writes into the JUnit node directly (xunit1), past any
    report: its values are masked before junitxml freezes the node."""
    pytester.makepyfile(
        test_attr="""
        def test_attr(leakcheck, record_xml_attribute):
            token = leakcheck.secret("bearer")
            record_xml_attribute("upstream_auth", f"Bearer {token}")
        """
    )
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest(
        "-p", "no:randomly", "--leakcheck-seed=attr-1", f"--junitxml={junit}",
        "-o", "junit_family=xunit1",
    )  # fmt: skip
    result.assert_outcomes(passed=1)
    xml = junit.read_text()
    # named booleans: a failing ``in`` would have pytest print the unmasked XML
    recorded = 'upstream_auth="Bearer' in xml
    masked = "\u00abcanary:bearer:" in xml
    assert recorded, "the attribute is missing"
    assert masked, "the attribute was not masked"
    token = CanaryFactory("attr-1", namespace="test_attr.py::test_attr").secret("bearer")
    assert_inner_run_safe(pytester, result, [token])
    self_scan(xml, [token], "junit.xml")
