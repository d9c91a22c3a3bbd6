"""The OpenTelemetry sink, end to end through inner pytest runs (subprocesses: the API's
providers are set once per process).

A tiny gateway traces its upstream call, counts errors and logs through the OTel logs API.
When the request URL (with the token in its query) lands in a span attribute, a span event
(``record_exception``), a status description, a metric data-point attribute or a log
record, the inner test fails naming ``opentelemetry <path>``; a gateway that records only
the route passes. Two processes: one where the app set no provider (leakcheck installs
its own), one where the app set its own SDK providers before the first test (leakcheck
adds its processor and reader to them, once; the app's exporter still gets every span)
and a no-op logger provider (the logs signal is reported inactive, not clean). Every inner
run's output is scanned for every form of every secret the inner tests planted.
"""

from __future__ import annotations

import hashlib
import re
import textwrap

import pytest
from conftest import QUIET_INNER_ARGS, self_scan
from leakcheck.plugins import otel_sink
from leakcheck.plugins.otel_sink import OpenTelemetrySink

from leakcheck import CanaryFactory, Secret

pytest_plugins = ["pytester"]

SEED = "leakcheck-plugin-otel"
INNER_ARGS = (
    *QUIET_INNER_ARGS,
    f"--leakcheck-seed={SEED}",
    "-v",
    "-rA",
)

# The app, as each inner module starts: SETUP is what the app configured, if anything.
APP = r"""
import hashlib
from pathlib import Path

import pytest
from opentelemetry import _logs, metrics, trace
from opentelemetry._logs import LogRecord, SeverityNumber
from opentelemetry.trace import Status, StatusCode

from leakcheck.plugins.otel_sink import pipeline_state

SIGNALS = ("traces", "metrics", "logs")

SETUP

# acquired at import, as an app does: proxies until a provider is set
tracer = trace.get_tracer("gateway")
meter = metrics.get_meter("gateway")
ERRORS = meter.create_counter("http.client.errors")
otel_log = _logs.get_logger("gateway")


def proof(request, secret):
    name = request.node.name.replace("[", "-").replace("]", "")
    Path(f"proof-{name}.txt").write_text(hashlib.sha256(secret.encode()).hexdigest())


def sink_of(leakcheck):
    return next(s for s in leakcheck.sinks if s.name == "opentelemetry")


class UpstreamError(Exception):
    pass


def deploy(token, careless):
    url = f"https://api.example/v1/deployments?access_token={token}"
    shown = url if careless else "/v1/deployments"
    with tracer.start_as_current_span("POST /deployments") as span:
        span.set_attribute("http.route", "/v1/deployments")
        if careless == "attribute":
            span.set_attribute("http.url", url)
        try:
            raise UpstreamError(f"401 from {shown if careless == 'event' else 'upstream'}")
        except UpstreamError as exc:
            span.record_exception(exc)
        reason = shown if careless == "status" else "upstream rejected credentials"
        span.set_status(Status(StatusCode.ERROR, f"401: {reason}"))
        ERRORS.add(1, {"route": "/v1/deployments",
                       **({"url": url} if careless == "metric" else {})})
        otel_log.emit(LogRecord(
            body=f"deploy failed: {shown if careless == 'log' else 'upstream said 401'}",
            severity_number=SeverityNumber.WARN,
            attributes={"http.route": "/v1/deployments"},
        ))
    return {"ok": False, "code": "AUTH_FAILED", "action": "stop_and_report"}


@pytest.mark.parametrize("where", LEAKY)
def test_leak(request, leakcheck, where):
    token = leakcheck.secret("bearer")
    proof(request, token)
    leakcheck.expose(deploy(token, careless=where))


def test_clean(request, leakcheck):
    token = leakcheck.secret("bearer")
    proof(request, token)
    leakcheck.expose(deploy(token, careless=""))
    # not vacuous: the sink read this test's span, metric and log record
    paths = {c.path for c in sink_of(leakcheck).collect()}
    assert 'span "POST /deployments" attributes.http.route' in paths
    assert 'span "POST /deployments" events[0].exception.stacktrace' in paths
    assert 'span "POST /deployments" status.description' in paths
    assert EXPECT_METRIC ('metric http.client.errors attributes.route' in paths)
    assert EXPECT_LOG ('log[0] body' in paths)
    assert sink_of(leakcheck).inactive_reason == INACTIVE
    CHECKS
"""

UNSET = dict(
    SETUP="",
    LEAKY='["attribute", "event", "status", "metric", "log"]',
    EXPECT_METRIC="",
    EXPECT_LOG="",
    INACTIVE='""',
    CHECKS='assert pipeline_state()["installed"] == dict.fromkeys(SIGNALS, "ours")',
)

OWN = dict(
    SETUP="""
from opentelemetry._logs import NoOpLoggerProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

APP_SPANS = InMemorySpanExporter()
PROVIDER = TracerProvider()
PROVIDER.add_span_processor(SimpleSpanProcessor(APP_SPANS))
trace.set_tracer_provider(PROVIDER)
APP_READER = InMemoryMetricReader()
metrics.set_meter_provider(MeterProvider(metric_readers=[APP_READER]))
_logs.set_logger_provider(NoOpLoggerProvider())
""",
    LEAKY='["attribute", "metric", "log"]',
    EXPECT_METRIC="",
    EXPECT_LOG="not",
    INACTIVE="LOGS_INACTIVE",
    CHECKS="""assert pipeline_state()["installed"] == {"traces": "added to the app's",
                                               "metrics": "added to the app's"}
    # the app's own pipeline still receives everything; ours was added once
    assert {s.name for s in APP_SPANS.get_finished_spans()} == {"POST /deployments"}
    assert len(PROVIDER._active_span_processor._span_processors) == 2
    names = [m.name for rm in APP_READER.get_metrics_data().resource_metrics
             for sm in rm.scope_metrics for m in sm.metrics]
    assert names == ["http.client.errors"]""",
)
LOGS_INACTIVE = (
    '"logs: the global LoggerProvider is a opentelemetry._logs._internal.NoOpLoggerProvider, '
    "not the OpenTelemetry SDK's: what it sends cannot be read\""
)


def _module(values: dict[str, str]) -> str:
    text = textwrap.dedent(APP)
    for key in ("SETUP", "LEAKY", "EXPECT_METRIC", "EXPECT_LOG", "CHECKS", "INACTIVE"):
        text = text.replace(key, values[key])
    return text.replace("LOGS_INACTIVE", LOGS_INACTIVE)


def _secret(nodeid: str) -> Secret:
    return CanaryFactory(SEED, namespace=nodeid).secret("bearer")


def _run(pytester: pytest.Pytester, module: str, values: dict[str, str]):
    pytester.makepyfile(**{module: _module(values)})
    result = pytester.runpytest_subprocess(*INNER_ARGS, timeout=60)
    leaky = re.findall(r'"(\w+)"', values["LEAKY"])
    names = [f"test_leak[{where}]" for where in leaky] + ["test_clean"]
    secrets = [_secret(f"{module}.py::{name}") for name in names]
    # every secret the inner tests planted, reconstructed: nothing of them in any output
    self_scan("\n".join(result.outlines + result.errlines), secrets, "inner pytest output")
    for name, secret in zip(names, secrets, strict=True):
        proof = pytester.path / f"proof-{name.replace('[', '-').replace(']', '')}.txt"
        expected = hashlib.sha256(secret.value.encode()).hexdigest()
        assert proof.read_text() == expected, f"canary reconstruction differs for {name}"
    return result, leaky


def _outcomes(module: str, lines: list[str]) -> dict[str, str]:
    found = {}
    for line in lines:
        match = re.match(rf"{module}\.py::(\S+) (PASSED|FAILED|ERROR)", line)
        if match:
            found[match.group(1)] = match.group(2)
    return found


def _leak_lines(lines: list[str]) -> dict[str, list[str]]:
    """``{test name: its [LEAK] lines}`` from the FAILURES section."""
    found: dict[str, list[str]] = {}
    current = None
    for line in lines:
        match = re.match(r"_{3,} (\S+) _{3,}$", line)
        if match:
            current = match.group(1)
            found[current] = []
        elif re.match(r"={3,} ", line):
            current = None
        elif current is not None and "[LEAK]" in line:
            found[current].append(line.strip())
    return found


EXPECTED = {
    "attribute": r'span "POST /deployments" attributes\.http\.url',
    "event": r'span "POST /deployments" events\[0\]\.exception\.message',
    "status": r'span "POST /deployments" status\.description',
    "metric": r"metric http\.client\.errors attributes\.url",
    "log": r"log\[0\] body",
}


def _check(result: pytest.RunResult, module: str, leaky: list[str], caught: list[str]) -> None:
    outcomes = _outcomes(module, result.outlines)
    expected = {f"test_leak[{w}]": "FAILED" if w in caught else "PASSED" for w in leaky}
    expected["test_clean"] = "PASSED"
    assert outcomes == expected, result.stdout.str()
    leaks = _leak_lines(result.outlines)
    for where in caught:
        lines = leaks[f"test_leak[{where}]"]
        pattern = rf"\[LEAK\] operator: opentelemetry {EXPECTED[where]}  form raw"
        assert any(re.match(pattern, line) for line in lines), lines
        # the gateway wrote the token nowhere else
        assert all(" opentelemetry " in line for line in lines), lines


def test_app_without_providers(pytester: pytest.Pytester) -> None:
    result, leaky = _run(pytester, "test_otel_unset", UNSET)
    _check(result, "test_otel_unset", leaky, caught=leaky)
    # the event's stacktrace holds the token too: the same root cause, on its "also in" line
    also = 'also in: opentelemetry span "POST /deployments" events[0].exception.stacktrace'
    assert any(line.strip() == also for line in result.outlines), result.stdout.str()


def test_app_with_its_own_providers(pytester: pytest.Pytester) -> None:
    result, leaky = _run(pytester, "test_otel_own", OWN)
    # the no-op logger provider sends nothing: that test passes, and says why
    _check(result, "test_otel_own", leaky, caught=["attribute", "metric"])


def test_values_and_paths() -> None:
    leaves = dict(otel_sink._values({"a": [b"x\x00", "y"], "odd key": {"k": "z"}}, "body"))
    assert leaves == {
        "body.a<key>": "a",
        "body.a[0]": b"x\x00",
        "body.a[1]": "y",
        'body["odd key"]<key>': "odd key",
        'body["odd key"].k<key>': "k",
        'body["odd key"].k': "z",
    }
    assert dict(otel_sink._attributes({"http.url": "u", "n": 3}, "attributes")) == {
        "attributes.http.url<key>": "http.url",
        "attributes.http.url": "u",
        "attributes.n<key>": "n",
    }


def test_nested_sinks_see_their_own_window() -> None:
    from opentelemetry import trace

    outer = OpenTelemetrySink()
    outer.start()
    inner = OpenTelemetrySink()
    try:
        if "traces" in outer.inactive_reason:  # pragma: no cover - a foreign provider
            pytest.skip(f"spans cannot be read here: {outer.inactive_reason}")
        tracer = trace.get_tracer("leakcheck-nested-test")
        with tracer.start_as_current_span("first"):
            pass
        inner.start()
        with tracer.start_as_current_span("second"):
            pass
        inner.stop()
    finally:
        outer.stop()
    with tracer.start_as_current_span("after"):  # after stop: part of no test
        pass

    def names(sink: OpenTelemetrySink) -> set[str | bytes]:
        return {c.text for c in sink.collect() if re.fullmatch(r'span "\w+" name', c.path)}

    assert names(outer) == {"first", "second"}
    assert names(inner) == {"second"}


def test_collect_without_start_is_empty() -> None:
    assert list(OpenTelemetrySink().collect()) == []


def test_sinks_entry() -> None:
    assert otel_sink.SINKS == [OpenTelemetrySink]
    assert OpenTelemetrySink.name == "opentelemetry"


def test_nothing_is_recorded_or_kept_outside_a_sink() -> None:
    """The providers stay set for the rest of the process: a span or log record of a test
    that does not use leakcheck is neither recorded by our provider (as with the plugin
    off, where the app has none) nor kept by our exporters until the next leakcheck test
    (they piled up to the end of the session)."""
    from opentelemetry import _logs, trace
    from opentelemetry._logs import LogRecord

    def emit(name: str) -> bool:
        with trace.get_tracer("leakcheck-outside-test").start_as_current_span(name) as span:
            recording = span.is_recording()
        _logs.get_logger("leakcheck-outside-test").emit(LogRecord(body=name))
        return recording

    first = OpenTelemetrySink()
    first.start()
    first.stop()
    if first.inactive_reason:  # pragma: no cover - a foreign provider
        pytest.skip(f"a signal cannot be read here: {first.inactive_reason}")
    pipeline = otel_sink._pipeline()
    assert otel_sink.pipeline_state()["installed"]["traces"] == "ours"
    assert pipeline.logs is not None
    logs = pipeline.logs

    def kept() -> tuple[int, int]:
        return len(pipeline.spans.get_finished_spans()), len(logs.get_finished_logs())

    before = kept()
    assert emit("outside") is False
    assert kept() == before

    inside = OpenTelemetrySink()
    inside.start()
    try:
        assert emit("inside") is True
    finally:
        inside.stop()
    texts = {c.text for c in inside.collect()}
    assert {"inside"} <= texts
    assert "outside" not in texts


def test_an_apps_own_providers_not_set_globally() -> None:
    """Dependency injection: the app builds its TracerProvider and MeterProvider and never
    sets them globally. Its spans passed unread (a token in a span attribute: green); now
    they are read, and its metrics, which cannot be, are said, never silently clean."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider

    from leakcheck.harness import LeakCheck

    tracer = TracerProvider().get_tracer("gateway")  # made before the test: at import
    counter = MeterProvider(metric_readers=[InMemoryMetricReader()]).get_meter("gw")
    calls = counter.create_counter("calls")
    sink = OpenTelemetrySink()
    with LeakCheck(seed="otel-di", sinks=[sink]) as check:
        if "traces" in sink.inactive_reason:  # pragma: no cover - a foreign global provider
            pytest.skip(f"spans cannot be read here: {sink.inactive_reason}")
        token = check.secret("bearer")
        with tracer.start_as_current_span("call") as span:
            span.set_attribute("url", f"https://api.example/?k={token}")
        assert "MeterProvider that is not the global one" not in sink.inactive_reason
        calls.add(1, {"cred": "x"})
    (leak,) = check.violations()
    assert leak.path == 'span "call" attributes.url'
    assert "metrics: a MeterProvider that is not the global one" in sink.inactive_reason
    # a test that uses no such provider is not told so
    clean = OpenTelemetrySink()
    with LeakCheck(seed="otel-di-2", sinks=[clean]):
        pass
    assert "MeterProvider" not in clean.inactive_reason
