"""The prometheus_client sink, end to end through an inner pytest run.

A tiny gateway counts its upstream errors; when it puts the request URL (with the token in
its query) into a label, the inner test fails naming ``prometheus http_errors_total{url=...}``.
Safe labels, and labels that were there before the test started, pass. Every inner run's
output is scanned for every form of every secret the inner tests planted.
"""

from __future__ import annotations

import hashlib
import textwrap

import prometheus_client
import pytest
from conftest import QUIET_INNER_ARGS, assert_inner_run_safe
from leakcheck.plugins import prometheus_sink
from leakcheck.plugins.prometheus_sink import PrometheusSink

from leakcheck import CanaryFactory, Secret

pytest_plugins = ["pytester"]

SEED = "leakcheck-plugin-prometheus"
# A user-supplied secret (not a canary) that a label held before the test started.
STATIC = "pk_9fQ2xLr7TzW4mVb8KcN3hY6dJs1"
INNER_ARGS = (
    *QUIET_INNER_ARGS,
    "--assert=plain",
    f"--leakcheck-seed={SEED}",
)

APP = """
import hashlib
from pathlib import Path

import pytest
from prometheus_client import REGISTRY, CollectorRegistry, Counter

from leakcheck.plugins.prometheus_sink import register_registry

METRICS = register_registry(CollectorRegistry(), name="gateway")
HTTP_ERRORS = Counter("http_errors", "Upstream HTTP errors", ["url", "status"],
                      registry=METRICS)
# present before any test: part of every test's baseline
HTTP_ERRORS.labels(url="https://api.example/v1/health", status="503").inc()
HTTP_ERRORS.labels(url="https://api.example/v1/items?k=STATIC", status="401").inc()


def proof(request, secret):
    name = request.node.name
    Path(f"proof-{name}.txt").write_text(hashlib.sha256(secret.encode()).hexdigest())


class Gateway:
    def __init__(self, token, counter=HTTP_ERRORS, careless=False):
        self._token = token
        self._counter = counter
        self._careless = careless

    def __repr__(self):
        return "Gateway(token=<hidden>)"

    def call(self, item):
        url = f"https://api.example/v1/items/{item}?access_token={self._token}"
        label = url if self._careless else "/v1/items/{id}"
        self._counter.labels(url=label, status="401").inc()
        return {"ok": False, "code": "AUTH_FAILED", "action": "stop_and_report"}


@pytest.fixture
def global_counter():
    counter = Counter("lc_inner_requests", "requests", ["url", "status"])
    counter.labels(url="/v1/health", status="200").inc()
    yield counter
    REGISTRY.unregister(counter)
""".replace("STATIC", STATIC)

LEAKY = """
def test_label_leak(request, leakcheck):
    token = leakcheck.secret("bearer")
    proof(request, token)
    leakcheck.expose(Gateway(token, careless=True).call("42"))


def test_global_registry_leak(request, global_counter, leakcheck):
    token = leakcheck.secret("bearer")
    proof(request, token)
    leakcheck.expose(Gateway(token, counter=global_counter, careless=True).call("7"))
"""

CLEAN = """
def test_safe_labels(request, leakcheck):
    token = leakcheck.secret("bearer")
    proof(request, token)
    leakcheck.expose(Gateway(token).call("42"))


def test_safe_labels_global(request, global_counter, leakcheck):
    token = leakcheck.secret("bearer")
    proof(request, token)
    leakcheck.expose(Gateway(token, counter=global_counter).call("7"))


def test_label_from_before_the_test(request, leakcheck):
    # a label holding this value existed before the test started: not added by it
    leakcheck.register("STATIC", kind="api_key")
    leakcheck.expose(Gateway(leakcheck.secret("bearer")).call("1"))
""".replace("STATIC", STATIC)


def _secrets(nodeid: str, *kinds: str) -> list[Secret]:
    factory = CanaryFactory(SEED, namespace=nodeid)
    return [factory.secret(kind) for kind in kinds]


def _digest(secret: Secret) -> str:
    return hashlib.sha256(secret.value.encode()).hexdigest()


def _run(pytester: pytest.Pytester, name: str, tests: str, secrets: list[Secret]):
    pytester.makepyfile(**{name: textwrap.dedent(APP) + textwrap.dedent(tests)})
    result = pytester.runpytest(*INNER_ARGS, "-rA")
    # every secret the inner tests planted, reconstructed: nothing of them in any output
    assert_inner_run_safe(pytester, result, secrets)
    return result


@pytest.fixture
def watched():
    """The watch list and the global registry, as they were: nothing of the inner runs
    may stay (and the sink itself must register nothing)."""
    before_watch = prometheus_sink.registries()
    before_global = dict(prometheus_client.REGISTRY._collector_to_names)
    yield
    for _, registry in prometheus_sink.registries():
        if all(registry is not r for _, r in before_watch):
            prometheus_sink.unregister_registry(registry)
    assert dict(prometheus_client.REGISTRY._collector_to_names) == before_global


def test_leaky_label_fails_with_sink_path_and_form(pytester: pytest.Pytester, watched) -> None:
    ids = ["test_prom_leaky.py::test_label_leak", "test_prom_leaky.py::test_global_registry_leak"]
    secrets = [s for nodeid in ids for s in _secrets(nodeid, "bearer")]
    result = _run(pytester, "test_prom_leaky", LEAKY, secrets)
    result.assert_outcomes(failed=2)
    for secret, nodeid in zip(secrets, ids, strict=True):
        proof = pytester.path / f"proof-{nodeid.split('::')[1]}.txt"
        assert proof.read_text() == _digest(secret), "canary reconstruction differs"
    out = result.stdout.str()
    assert "[LEAK] operator: prometheus http_errors_total{url=...}  form raw" in out
    assert "(in registry 'gateway')" in out
    assert "[LEAK] operator: prometheus lc_inner_requests_total{url=...}  form raw" in out
    leak_lines = [line for line in result.outlines if "[LEAK]" in line]
    assert leak_lines and all(" prometheus " in line for line in leak_lines)


def test_safe_labels_pass(pytester: pytest.Pytester, watched) -> None:
    ids = [
        "test_prom_clean.py::test_safe_labels",
        "test_prom_clean.py::test_safe_labels_global",
        "test_prom_clean.py::test_label_from_before_the_test",
    ]
    secrets = [s for nodeid in ids for s in _secrets(nodeid, "bearer")]
    secrets.append(Secret.from_user(STATIC, kind="api_key", id="api_key#user1"))
    result = _run(pytester, "test_prom_clean", CLEAN, secrets)
    result.assert_outcomes(passed=3)
    for secret, nodeid in zip(secrets, ids[:2], strict=False):
        proof = pytester.path / f"proof-{nodeid.split('::')[1]}.txt"
        assert proof.read_text() == _digest(secret), "canary reconstruction differs"


def test_collect_after_stop_and_nested_sinks() -> None:
    registry = prometheus_client.CollectorRegistry()
    counter = prometheus_client.Counter("jobs", "jobs", ["queue"], registry=registry)
    counter.labels(queue="old").inc()
    prometheus_sink.register_registry(registry, name="jobs")
    try:
        outer, inner = PrometheusSink(), PrometheusSink()
        outer.start()
        counter.labels(queue="first").inc()
        inner.start()
        counter.labels(queue="second").inc()
        inner.stop()
        outer.stop()
        counter.labels(queue="after").inc()  # after stop: not part of the test
        texts = {c.text for c in outer.collect() if c.path == "jobs_total{queue=...}"}
        assert texts == {"first", "second"}
        assert {c.text for c in inner.collect() if c.path == "jobs_total{queue=...}"} == {"second"}
        assert all(c.note == "in registry 'jobs'" for c in outer.collect())
    finally:
        prometheus_sink.unregister_registry(registry)
    assert all(r is not registry for _, r in prometheus_sink.registries())


def test_registry_registered_mid_test_and_broken_collector() -> None:
    class Broken:
        def collect(self):
            yield from ()
            raise RuntimeError("scrape failed")

    sink = PrometheusSink()
    sink.start()
    registry = prometheus_client.CollectorRegistry()
    gauge = prometheus_client.Gauge("temp", "Temperature", ["room"], registry=registry)
    gauge.labels(room="lab").set(1)
    prometheus_sink.register_registry(registry)
    broken = prometheus_sink.register_registry(Broken(), name="broken")
    try:
        with pytest.warns(RuntimeWarning, match="registry 'broken'"):
            items = list(sink.collect())
        by_path = {c.path: c for c in items}
        assert by_path["temp{room=...}"].text == "lab"
        assert "registered during the test" in by_path["temp{room=...}"].note
        assert by_path["temp HELP"].text == "Temperature"
    finally:
        sink.stop()
        prometheus_sink.unregister_registry(registry)
        prometheus_sink.unregister_registry(broken)
    with pytest.raises(TypeError, match="collect"):
        prometheus_sink.register_registry(object())


def test_sinks_entry() -> None:
    assert prometheus_sink.SINKS == [PrometheusSink]
    assert PrometheusSink.name == "prometheus"


def test_an_apps_own_registry_is_watched_unnamed() -> None:
    """A metric in a registry of the app's own that nobody passed to ``register_registry``
    took a token as a label value, and the test passed: every CollectorRegistry of the
    process is watched now, those made before the sink first started too."""
    import subprocess
    import sys

    script = """
import prometheus_client
from leakcheck.harness import LeakCheck
APP = prometheus_client.CollectorRegistry()  # made before the plugin: found by the collector
EARLY = prometheus_client.Counter("gw_early", "calls", ["key"], registry=APP)
from leakcheck.plugins.prometheus_sink import PrometheusSink
with LeakCheck(seed="prom-own", sinks=[PrometheusSink()]) as check:
    late = prometheus_client.CollectorRegistry()  # made after: its __init__
    LATE = prometheus_client.Counter("gw_late", "calls", ["key"], registry=late)
    token = check.secret("bearer")
    EARLY.labels(key=token).inc()
    LATE.labels(key=token).inc()
print(sorted(leak.path for leak in check.violations()))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['gw_early_total{key=...}', 'gw_late_total{key=...}']"


AGAIN = """
from prometheus_client import CollectorRegistry, Counter

from leakcheck.plugins.prometheus_sink import register_registry

METRICS = register_registry(CollectorRegistry(), name="again")
ERRORS = Counter("upstream_errors", "errors", ["url"], registry=METRICS)
TOKEN = "STATIC"


def count_error():
    # the careless gateway: the URL with the session's key as a label, on every failure
    ERRORS.labels(url=f"https://api.example/v1?key={TOKEN}").inc()


def test_first_to_count(leakcheck):
    leakcheck.register(TOKEN, kind="api_key")
    count_error()
    leakcheck.expose({"ok": False})


def test_counts_again_under_the_same_label(leakcheck):
    leakcheck.register(TOKEN, kind="api_key")
    count_error()
    leakcheck.expose({"ok": False})


def test_counts_nothing(leakcheck):
    leakcheck.register(TOKEN, kind="api_key")
    leakcheck.expose({"ok": False})
""".replace("STATIC", STATIC)


def test_a_label_an_earlier_test_made_is_judged_in_each_test_that_counts_under_it(
    pytester: pytest.Pytester, watched
) -> None:
    """A session secret (the same key in every test) counted under the same label: the
    sample is the earlier test's, and each later test that increments it emits it again.
    Serially the second test passed, and under xdist or ``-k`` it failed."""
    secrets = [Secret.from_user(STATIC, kind="api_key", id="api_key#user1")]
    pytester.makepyfile(test_prom_again=textwrap.dedent(AGAIN))
    result = pytester.runpytest(*INNER_ARGS, "-rA", "-p", "no:randomly")
    assert_inner_run_safe(pytester, result, secrets)
    outcomes = {
        name: outcome
        for outcome in ("PASSED", "FAILED")
        for name in (
            "test_first_to_count",
            "test_counts_again_under_the_same_label",
            "test_counts_nothing",
        )  # fmt: skip
        if f"{outcome} test_prom_again.py::{name}" in result.stdout.str()
    }
    assert outcomes == {
        "test_first_to_count": "FAILED",
        "test_counts_again_under_the_same_label": "FAILED",
        "test_counts_nothing": "PASSED",
    }
    assert "[LEAK] operator: prometheus upstream_errors_total{url=...}" in result.stdout.str()
