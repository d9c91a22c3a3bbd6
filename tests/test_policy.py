"""Policy: which class of secret may appear in which class of sink.

Unit tests of ``leakcheck.policy`` and, through the plugin, the default verdicts, the ini
options ``leakcheck_allow``/``leakcheck_forbid``, the marker's ``allow``/``forbid`` and the
usage errors for values written wrong. Latent material (``SinkClass.LATENT``): allowed by
default, judged as an operator sink under ``strict_latent``; declared production levels.
"""

from __future__ import annotations

import pytest
from conftest import inner_outcomes, run_with_report

from leakcheck import SecretClass
from leakcheck.policy import DEFAULT_POLICY, Policy, PolicyError, SinkClass, parse_log_levels

pytest_plugins = ["pytester"]


D, C, P = SecretClass.DIRECT, SecretClass.CONTEXT, SecretClass.PROSE
CALLER, OPERATOR, LATENT = SinkClass.CALLER, SinkClass.OPERATOR, SinkClass.LATENT

# --- unit -----------------------------------------------------------------------------------


def test_default_policy_matches_the_design() -> None:
    assert DEFAULT_POLICY.allowed == frozenset({(C, OPERATOR), (P, OPERATOR)})
    for sink in (CALLER, OPERATOR):
        assert not DEFAULT_POLICY.allows(D, sink)
    assert not DEFAULT_POLICY.allows(C, CALLER)
    assert not DEFAULT_POLICY.allows(P, CALLER)
    assert DEFAULT_POLICY.allows("context", "operator")  # plain strings too
    with pytest.raises(ValueError):
        DEFAULT_POLICY.allows("contxt", "operator")


@pytest.mark.parametrize(
    "rules",
    [
        {"context": ["caller"]},
        {"context": "caller"},
        {"context": ("caller",)},
        ["context: caller"],
        ["  context :  caller  "],
        "context: caller",
    ],
)
def test_allow_in_every_spelling(rules: object) -> None:
    policy = DEFAULT_POLICY.with_rules(allow=rules)  # type: ignore[arg-type]
    assert policy.allowed == DEFAULT_POLICY.allowed | {(C, CALLER)}


def test_several_sinks_in_one_rule() -> None:
    policy = DEFAULT_POLICY.with_rules(allow=["direct: caller, operator"])
    assert policy.allows(D, CALLER) and policy.allows(D, OPERATOR)
    policy = DEFAULT_POLICY.with_rules(allow=["direct: caller operator"])
    assert policy.allows(D, CALLER) and policy.allows(D, OPERATOR)


def test_forbid_removes_and_wins_over_allow() -> None:
    policy = DEFAULT_POLICY.with_rules(forbid={"context": ["operator"]})
    assert not policy.allows(C, OPERATOR)
    assert policy.allows(P, OPERATOR)
    policy = DEFAULT_POLICY.with_rules(allow=["context: caller"], forbid=["context: caller"])
    assert not policy.allows(C, CALLER)


def test_with_rules_returns_a_copy() -> None:
    before = set(DEFAULT_POLICY.allowed)
    DEFAULT_POLICY.with_rules(allow=["direct: caller"], forbid=["context: operator"])
    assert set(DEFAULT_POLICY.allowed) == before
    assert Policy() == DEFAULT_POLICY


def test_no_rules_is_the_same_policy() -> None:
    assert DEFAULT_POLICY.with_rules() == DEFAULT_POLICY
    assert DEFAULT_POLICY.with_rules(allow={}, forbid=[]) == DEFAULT_POLICY


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        (["context caller"], "expected 'SECRET_CLASS: SINK_CLASS"),
        (["contxt: caller"], "unknown secret class 'contxt'; use direct, context, prose"),
        (["context: agent"], "unknown sink class 'agent'; use caller, operator"),
        (["direct: latent"], "unknown sink class 'latent'; use caller, operator (latent is"),
        (["context:"], "no sink class for 'context'"),
        ({"contxt": ["caller"]}, "unknown secret class 'contxt'"),
        ({"context": ["caller", "agent"]}, "unknown sink class 'agent'"),
        ({"context": 5}, "expected {'SECRET_CLASS'"),
        ({"context": [5]}, "expected {'SECRET_CLASS'"),
        ({5: ["caller"]}, "expected {'SECRET_CLASS'"),
        ([5], "expected {'SECRET_CLASS'"),
        (5, "expected {'SECRET_CLASS'"),
    ],
)
@pytest.mark.parametrize("what", ["allow", "forbid"])
def test_bad_rules_are_policy_errors(rules: object, message: str, what: str) -> None:
    with pytest.raises(PolicyError) as info:
        DEFAULT_POLICY.with_rules(**{what: rules})  # type: ignore[arg-type]
    assert str(info.value).startswith(what)
    assert message in str(info.value)


def test_policy_error_is_a_value_error() -> None:
    assert issubclass(PolicyError, ValueError)


# --- latent material ------------------------------------------------------------------------


def test_latent_is_reported_not_failed_by_default() -> None:
    """Default, and why: latent material is on an object no handler renders; failing on it
    is what made teams switch the log sink off (issue 13). Every secret class passes."""
    assert not DEFAULT_POLICY.strict_latent
    for secret in SecretClass:
        assert DEFAULT_POLICY.allows(secret, LATENT)
        assert DEFAULT_POLICY.allows(secret.value, "latent")


def test_strict_latent_judges_it_as_an_operator_sink() -> None:
    strict = DEFAULT_POLICY.with_latent(strict=True)
    assert strict.strict_latent
    assert not strict.allows(D, LATENT)  # a direct secret fails, as in any operator sink
    assert strict.allows(C, LATENT) and strict.allows(P, LATENT)
    # and follows the operator rules the policy has
    assert not strict.with_rules(forbid=["context: operator"]).allows(C, LATENT)
    assert strict.with_rules(allow=["direct: operator"]).allows(D, LATENT)
    # None keeps what the policy has; False turns it off again
    assert strict.with_latent().strict_latent
    assert not strict.with_latent(strict=False).strict_latent
    # rules keep it, and it keeps the rules
    assert strict.with_rules(allow=["context: caller"]).strict_latent
    assert (
        DEFAULT_POLICY.with_rules(allow=["context: caller"])
        .with_latent(strict=True)
        .allows(C, CALLER)
    )


def test_no_declared_level_means_every_level_counts() -> None:
    """Default, and why: tokens logged at DEBUG were fixed as security bugs
    (requests-oauthlib, wlc): a DEBUG record fails unless its level is declared."""
    assert DEFAULT_POLICY.log_levels == ()
    assert DEFAULT_POLICY.production_level("httpcore.http11") is None


@pytest.mark.parametrize(
    "spec",
    [
        {"httpcore": "INFO", "root": "WARNING"},
        {"httpcore": 20, "root": "warning"},
        ["httpcore=INFO", "root=WARNING"],
        ["httpcore=INFO root=WARNING"],
        "httpcore=INFO root=WARNING",
        "httpcore=info, root=30",
    ],
)
def test_log_levels_in_every_spelling(spec: object) -> None:
    assert parse_log_levels(spec) == {"httpcore": 20, "root": 30}  # type: ignore[arg-type]


def test_declared_levels_follow_the_logger_tree() -> None:
    policy = DEFAULT_POLICY.with_latent(
        log_levels={"httpcore": "INFO", "httpcore.http2": "DEBUG", "root": "WARNING"}
    )
    assert policy.production_level("httpcore") == ("httpcore", 20)
    assert policy.production_level("httpcore.http11") == ("httpcore", 20)
    assert policy.production_level("httpcore.http2.frames") == ("httpcore.http2", 10)
    assert policy.production_level("httpcorex") == ("root", 30)  # a prefix is no parent
    assert policy.production_level("gateway") == ("root", 30)
    assert policy.production_level("root") == ("root", 30)
    only = DEFAULT_POLICY.with_latent(log_levels="httpcore=INFO")
    assert only.production_level("gateway") is None  # no root declared: every level counts
    # declared again: the new level for that logger, the others kept
    again = policy.with_latent(log_levels={"httpcore": "ERROR"})
    assert dict(again.log_levels) == {"httpcore": 40, "httpcore.http2": 10, "root": 30}


def test_loguru_level_names_and_notset() -> None:
    assert parse_log_levels("a=TRACE b=SUCCESS c=NOTSET") == {"a": 5, "b": 25, "c": 0}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("httpcore", "'httpcore' has no level; write LOGGER=LEVEL (e.g. httpcore=INFO"),
        ("INFO", "'INFO' has no level; write LOGGER=LEVEL (e.g. root=INFO"),
        ("httpx:INFO", "'httpx:INFO' has no level; write LOGGER=LEVEL (e.g. httpx=INFO;"),
        ("httpcore=VERBOSE", "unknown level 'VERBOSE' for 'httpcore'; use DEBUG, INFO"),
        ({"httpcore": True}, "unknown level True for 'httpcore'"),
        ({"httpcore": -1}, "unknown level -1 for 'httpcore'"),
        ({"": "INFO"}, "a logger name must be a non-empty string"),
        ({5: "INFO"}, "a logger name must be a non-empty string"),
        (5, "expected {'LOGGER': 'LEVEL'}"),
        ([5], "expected {'LOGGER': 'LEVEL'}"),
    ],
)
def test_bad_log_levels_are_policy_errors(spec: object, message: str) -> None:
    with pytest.raises(PolicyError) as info:
        DEFAULT_POLICY.with_latent(log_levels=spec)  # type: ignore[arg-type]
    assert str(info.value).startswith("log_levels: ")
    assert message in str(info.value)


# --- through the plugin ----------------------------------------------------------------------

SEED = "policy-3"

CONTEXT_TESTS = """
import logging
import pytest

def test_context_in_log(leakcheck):
    host = leakcheck.secret("hostname")
    logging.getLogger("gateway.dns").warning("resolving %s", host)

def test_context_in_response(leakcheck):
    host = leakcheck.secret("hostname")
    leakcheck.expose({"error": {"detail": f"cannot reach {host}"}})

@pytest.mark.leakcheck(allow={"context": ["caller"]})
def test_context_in_response_allowed(leakcheck):
    host = leakcheck.secret("hostname")
    leakcheck.expose({"error": {"detail": f"cannot reach {host}"}})

@pytest.mark.leakcheck(forbid={"context": "operator"})
def test_context_in_log_forbidden(leakcheck):
    host = leakcheck.secret("hostname")
    logging.getLogger("gateway.dns").warning("resolving %s", host)

@pytest.mark.leakcheck(allow=["prose: caller"])
def test_direct_still_forbidden(leakcheck):
    token = leakcheck.secret("bearer")
    leakcheck.expose({"error": {"detail": f"bad token {token}"}})
"""


def run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, dict]]:
    pytester.makepyfile(test_context=CONTEXT_TESTS)
    result, data = run_with_report(pytester, SEED, *args, report="policy-report.json")
    return result, {r["test"].split("::")[-1]: r for r in data["tests"]}


def test_default_policy_through_the_plugin(pytester: pytest.Pytester) -> None:
    result, records = run(pytester)
    got = inner_outcomes(result)
    assert got == {
        "test_context_in_log": "PASSED",
        "test_context_in_response": "FAILED",
        "test_context_in_response_allowed": "PASSED",
        "test_context_in_log_forbidden": "FAILED",
        "test_direct_still_forbidden": "FAILED",
    }, got
    # allowed: listed in the JSON report, as allowed, with its place
    log = records["test_context_in_log"]
    assert log["forbidden"] == 0
    assert log["findings"], "an allowed hit is still reported"
    assert all(f["allowed"] for f in log["findings"])
    assert {
        (f["sink"], f["path"], f["sink_class"], f["finding"]["secret_class"])
        for f in log["findings"]
    } >= {("log record", "gateway.dns WARNING message", "operator", "context")}
    caller = records["test_context_in_response"]
    assert caller["forbidden"] == 1
    assert [(f["sink"], f["path"], f["allowed"]) for f in caller["findings"]] == [
        ("tool response", "$.error.detail", False)
    ]
    assert all(f["allowed"] for f in records["test_context_in_response_allowed"]["findings"])
    assert not any(f["allowed"] for f in records["test_context_in_log_forbidden"]["findings"])
    # the failure text says which hit is a leak
    result.stdout.fnmatch_lines(
        [
            "*test_context_in_response _*",
            "hostname#1 (hostname, context secret):",
            "  ?LEAK? caller: tool response $.error.detail  form raw  line 1",
        ]
    )


@pytest.mark.parametrize("config", ["pytest.ini", "pyproject.toml", "command line"])
def test_ini_forbid_makes_the_log_case_fail(pytester: pytest.Pytester, config: str) -> None:
    args: tuple[str, ...] = ()
    if config == "pytest.ini":
        pytester.makeini("[pytest]\nleakcheck_forbid =\n    context: operator\n")
    elif config == "pyproject.toml":
        pytester.makepyprojecttoml(
            '[tool.pytest.ini_options]\nleakcheck_forbid = ["context: operator"]\n'
        )
    else:
        args = ("-o", "leakcheck_forbid=context: operator")
    result, records = run(pytester, *args)
    got = inner_outcomes(result)
    assert got["test_context_in_log"] == "FAILED", got
    assert records["test_context_in_log"]["forbidden"] >= 1
    result.stdout.fnmatch_lines(["  ?LEAK? operator: log record gateway.dns WARNING message *"])
    # the marker still widens the ini policy for its own test
    assert got["test_context_in_response_allowed"] == "PASSED", got


def test_ini_allow(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nleakcheck_allow = context: caller\n")
    result, _ = run(pytester)
    got = inner_outcomes(result)
    assert got["test_context_in_response"] == "PASSED", got
    assert got["test_direct_still_forbidden"] == "FAILED", got


@pytest.mark.parametrize(
    ("ini", "message"),
    [
        ("leakcheck_forbid = context operator", "forbid rule 'context operator': expected"),
        ("leakcheck_allow = contxt: caller", "allow: unknown secret class 'contxt'"),
        ("leakcheck_allow = context: agent", "allow: unknown sink class 'agent'"),
    ],
)
def test_bad_ini_is_a_usage_error(pytester: pytest.Pytester, ini: str, message: str) -> None:
    pytester.makeini(f"[pytest]\n{ini}\n")
    pytester.makepyfile(test_one="def test_one(leakcheck):\n    pass\n")
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:hypothesispytest")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: leakcheck ini: {message}*"])
    assert "Traceback" not in "\n".join(result.outlines + result.errlines)


BAD_MARKERS = [
    ('allow={"contxt": ["caller"]}', "allow: unknown secret class 'contxt'"),
    ('forbid={"context": ["agent"]}', "forbid: unknown sink class 'agent'"),
    ('allow="context caller"', "allow rule 'context caller': expected"),
    ("allow=5", "takes {secret class"),
    ('allow={"context": 5}', "allow: expected {'SECRET_CLASS'"),
    (
        'alow={"context": ["caller"]}',
        "unknown option(s) alow (did you mean 'allow'?); known: allow, decode, forbid",
    ),
    ('"context"', "takes keyword arguments only"),
    ('skip_sinks={"log record": ""}', "every opt-out states its reason"),
    ('skip_sinks=["log record"]', "takes {sink name: reason}"),
    ('skip_sinks={"log records": "typo"}', "unknown sink 'log records' (did you mean 'log record'"),
    ('decode="no"', "decode=...) takes True or False, not str"),
    ('strict_latent="yes"', "strict_latent=...) takes True or False, not str"),
    ('log_levels={"httpcore": "LOUD"}', "(log_levels=...): unknown level 'LOUD' for 'httpcore'"),
    ('log_levels="httpcore"', "(log_levels=...): 'httpcore' has no level; write LOGGER=LEVEL"),
]


@pytest.mark.parametrize(
    ("marker", "message"), BAD_MARKERS, ids=[m.split("=")[0].strip('"') for m, _ in BAD_MARKERS]
)
def test_bad_marker_is_a_usage_error(pytester: pytest.Pytester, marker: str, message: str) -> None:
    pytester.makepyfile(
        test_marked=f"""
        import pytest

        def test_fine(leakcheck):
            pass

        @pytest.mark.leakcheck({marker})
        def test_bad(leakcheck):
            pass
    """
    )
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:hypothesispytest")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.errlines if line.startswith("ERROR: ")]
    assert len(errors) == 1, result.errlines
    assert message in errors[0], errors[0]
    assert "test_marked.py::test_bad" in errors[0]
    assert "Traceback" not in "\n".join(result.outlines + result.errlines)


def test_marker_added_after_collection_fails_its_test_cleanly(pytester: pytest.Pytester) -> None:
    """Where collection cannot stop the session (a marker added later, an xdist worker),
    the fixture fails the test with the same message and no traceback."""
    pytester.makeconftest("""
        import pytest

        def pytest_runtest_setup(item):
            if item.name == "test_bad":
                item.add_marker(pytest.mark.leakcheck(allow={"contxt": ["caller"]}))
    """)
    pytester.makepyfile(
        test_late="""
        def test_fine(leakcheck):
            pass

        def test_bad(leakcheck):
            pass
    """
    )
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:hypothesispytest")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of test_bad*",
            "usage error: @pytest.mark.leakcheck on test_late.py::test_bad: allow: unknown secret "
            "class 'contxt'; use direct, context, prose",
        ]
    )
    assert "Traceback" not in result.stdout.str()
    assert "plugin.py" not in result.stdout.str()


MARKERS_AT_EVERY_LEVEL = """
import pytest

pytestmark = pytest.mark.leakcheck(
    allow={"context": ["caller"]},
    skip_sinks={"stdout": "the vendored CLI prints its own headers"},
)

def test_module_marker_applies(leakcheck):
    leakcheck.expose({"detail": f"cannot reach {leakcheck.secret('hostname')}"})
    print("Bearer", leakcheck.secret("bearer"))

@pytest.mark.leakcheck(allow=[])
def test_closer_key_overrides(leakcheck):
    leakcheck.expose({"detail": f"cannot reach {leakcheck.secret('hostname')}"})

@pytest.mark.leakcheck(allow=[])
def test_other_keys_still_inherited(leakcheck):
    print("Bearer", leakcheck.secret("bearer"))

class TestClassLevel:
    pytestmark = pytest.mark.leakcheck(skip_sinks={"tool response": "class says so"})

    def test_class_overrides_module_skip(self, leakcheck):
        leakcheck.expose({"detail": leakcheck.secret("bearer")})
        print("Bearer", leakcheck.secret("bearer"))
"""


def test_markers_combine_by_key_the_closest_winning(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_levels=MARKERS_AT_EVERY_LEVEL)
    result, data = run_with_report(pytester, SEED, report="levels.json")
    got = inner_outcomes(result)
    assert got == {
        "test_module_marker_applies": "PASSED",
        "test_closer_key_overrides": "FAILED",
        "test_other_keys_still_inherited": "PASSED",
        # the class's skip_sinks replaces the module's: stdout is checked again
        "test_class_overrides_module_skip": "FAILED",
    }, got
    sinks = {
        r["test"].split("::")[-1]: {f["sink"] for f in r["findings"] if not f["allowed"]}
        for r in data["tests"]
    }
    assert sinks["test_class_overrides_module_skip"] == {"stdout"}, sinks
    assert sinks["test_closer_key_overrides"] == {"tool response"}, sinks
