"""The openai-agents tracing sink (``agents trace``).

A real ``Runner.run`` of an ``Agent`` with a real ``@function_tool``, its model an
``OpenAIChatCompletionsModel`` over a scripted chat-completions double (an ``httpx2``
mock transport: the first reply calls the tool, the second answers), so every span is made
by the SDK itself: the task, turn and agent spans, a generation span per model call and the
tool's function span. The tool's body raises with the bearer token in its message:

* with a custom ``failure_error_function`` returning a fixed message, the model sees
  nothing, but the SDK keeps the exception text in the function span's
  ``error.data.error`` (sensitive data on, the default): caught;
* the same run under ``RunConfig(trace_include_sensitive_data=False)``, a tool whose error
  is generic, and the SDK's default formatter pass, each proving the span was read;
* a formatter that hands the error to the model puts it in the function span's output and
  in the next generation span's input: both caught.

Also: trace metadata, the processor list restored exactly (the app's processors kept and
still fed), the provider the sink created put back when unused, and the reasons the sink
gives when it cannot read (tracing disabled, processors replaced, the SDK imported
mid-test). An inner pytest run checks the path through the fixture. Every report and
inner output is scanned for every form of the test's secrets.
"""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from typing import Any

import pytest

agents = pytest.importorskip("agents")

import httpx2  # noqa: E402 - after the skip: openai-agents brings openai and httpx2
from agents import (  # noqa: E402
    Agent,
    OpenAIChatCompletionsModel,
    RunConfig,
    Runner,
    function_tool,
)
from agents.tracing import custom_span, setup, trace  # noqa: E402
from agents.tracing import processors as sdk_processors  # noqa: E402
from agents.tracing.provider import DefaultTraceProvider  # noqa: E402
from agents.util._tool_errors import REDACTED_TOOL_ERROR_MESSAGE  # noqa: E402
from conftest import QUIET_INNER_ARGS, assert_inner_run_safe, self_scan  # noqa: E402
from leakcheck.plugins import agents_tracing_sink  # noqa: E402
from leakcheck.plugins.agents_tracing_sink import AgentsTracingSink  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

from leakcheck import CanaryFactory, Secret  # noqa: E402
from leakcheck.harness import LeakCheck  # noqa: E402

pytest_plugins = ["pytester"]

SEED = "leakcheck-plugin-agents"
MODEL = "fake-model"
FUNCTION_ERROR = 'span function "deploy" error.data.error'
FUNCTION_OUTPUT = 'span function "deploy" output'
SECOND_GENERATION_TOOL_MESSAGE = f'span generation "{MODEL}" input[2].content'


@pytest.fixture(autouse=True)
def provider(monkeypatch: pytest.MonkeyPatch) -> DefaultTraceProvider:
    """A fresh SDK provider with no processor for each test: nothing goes to the OpenAI
    exporter, and the process's own provider (if any) is put back after."""
    fresh = DefaultTraceProvider()
    fresh.set_processors([])
    monkeypatch.setattr(setup, "GLOBAL_TRACE_PROVIDER", fresh)
    return fresh


def _chat_completions(request: httpx2.Request) -> httpx2.Response:
    """The model: call ``deploy`` first; once the tool's output is in, answer."""
    messages = json.loads(request.content)["messages"]
    if any(m.get("role") == "tool" for m in messages):
        message: dict[str, Any] = {"role": "assistant", "content": "The deploy failed."}
    else:
        call = {"name": "deploy", "arguments": json.dumps({"service": "web"})}
        tool_call = {"id": "call_1", "type": "function", "function": call}
        message = {"role": "assistant", "content": None, "tool_calls": [tool_call]}
    body = {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": MODEL,
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}  # fmt: skip
    return httpx2.Response(200, json=body)


def _model() -> OpenAIChatCompletionsModel:
    client = AsyncOpenAI(
        api_key="sk-test-not-a-key",
        base_url="http://model.invalid/v1",
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(_chat_completions)),
    )
    return OpenAIChatCompletionsModel(model=MODEL, openai_client=client)


def _deploy_tool(token: str, *, message: str, formatter: Any = "fixed") -> Any:
    """The gateway's tool: its upstream call fails with ``message`` (``{token}`` in it
    becomes the token the gateway holds)."""
    options: dict[str, Any] = {}
    if formatter == "fixed":
        options["failure_error_function"] = lambda ctx, error: "deploy failed"
    elif formatter == "echo":
        options["failure_error_function"] = lambda ctx, error: f"deploy failed: {error}"

    @function_tool(**options)
    def deploy(service: str) -> str:
        """Deploy a service."""
        raise RuntimeError(message.format(token=token))

    return deploy


def _run_agent(tool: Any, config: RunConfig | None = None) -> str:
    agent = Agent(name="gateway", tools=[tool], model=_model())
    result = asyncio.run(Runner.run(agent, "deploy web", run_config=config))
    return str(result.final_output)


def _check(nodeid: str, body: Any) -> LeakCheck:
    check = LeakCheck(seed=SEED, namespace=nodeid, sinks=[AgentsTracingSink()])
    with check:
        body(check.secret("bearer"))
    self_scan(check.report(), check.secrets, "the report")
    return check


def _forbidden(check: LeakCheck) -> set[str]:
    return {leak.path for leak in check.violations() if leak.sink == "agents trace"}


def _texts(check: LeakCheck) -> dict[str, str | bytes]:
    return {c.path: c.text for c in check.captured() if c.sink == "agents trace"}


LEAKY_MESSAGE = "upstream said 401 for token {token}"
GENERIC_MESSAGE = "upstream said 401: credentials rejected"


# --- a function tool's exception in its span ---------------------------------------------------


def test_tool_exception_text_in_the_function_span_fails(request: pytest.FixtureRequest) -> None:
    answers = []

    def body(token: str) -> None:
        answers.append(_run_agent(_deploy_tool(token, message=LEAKY_MESSAGE)))

    check = _check(request.node.nodeid, body)
    assert answers == ["The deploy failed."]  # the model saw only the fixed message
    assert _forbidden(check) == {FUNCTION_ERROR}
    assert {leak.finding.form for leak in check.violations()} == {"raw"}
    assert _texts(check)[FUNCTION_OUTPUT] == "deploy failed"


def test_sensitive_data_off_passes(request: pytest.FixtureRequest) -> None:
    def body(token: str) -> None:
        tool = _deploy_tool(token, message=LEAKY_MESSAGE)
        _run_agent(tool, RunConfig(trace_include_sensitive_data=False))

    check = _check(request.node.nodeid, body)
    assert check.violations() == []
    # not vacuous: the function span was read, its error redacted by the SDK
    assert _texts(check)[FUNCTION_ERROR] == REDACTED_TOOL_ERROR_MESSAGE


def test_generic_tool_error_passes(request: pytest.FixtureRequest) -> None:
    def body(token: str) -> None:
        _run_agent(_deploy_tool(token, message=GENERIC_MESSAGE))

    check = _check(request.node.nodeid, body)
    assert check.violations() == []
    texts = _texts(check)
    assert texts[FUNCTION_ERROR] == GENERIC_MESSAGE
    assert SECOND_GENERATION_TOOL_MESSAGE in texts  # the generation spans were read too


def test_default_formatter_passes(request: pytest.FixtureRequest) -> None:
    """With the SDK's own formatter the span's error is redacted, sensitive data or not."""

    def body(token: str) -> None:
        _run_agent(_deploy_tool(token, message=LEAKY_MESSAGE, formatter=None))

    check = _check(request.node.nodeid, body)
    assert check.violations() == []
    assert _texts(check)[FUNCTION_ERROR] == REDACTED_TOOL_ERROR_MESSAGE


def test_error_handed_to_the_model_is_in_the_generation_span(
    request: pytest.FixtureRequest,
) -> None:
    def body(token: str) -> None:
        _run_agent(_deploy_tool(token, message=LEAKY_MESSAGE, formatter="echo"))

    check = _check(request.node.nodeid, body)
    assert {FUNCTION_ERROR, FUNCTION_OUTPUT, SECOND_GENERATION_TOOL_MESSAGE} <= _forbidden(check)


def test_trace_metadata(request: pytest.FixtureRequest) -> None:
    def body(token: str) -> None:
        with trace("Gateway run", metadata={"upstream": f"https://api.example/?key={token}"}):
            with custom_span("lookup", data={"status": 401}):
                pass

    check = _check(request.node.nodeid, body)
    assert _forbidden(check) == {'trace "Gateway run" metadata.upstream'}
    assert _texts(check)['span custom "lookup" data.status'] == "401"


# --- the SDK's globals ---------------------------------------------------------------------------


class AppProcessor:
    """The app's own processor (an exporter of its own)."""

    def __init__(self) -> None:
        self.spans: list[Any] = []

    def on_trace_start(self, trace: Any) -> None:
        return None

    def on_trace_end(self, trace: Any) -> None:
        return None

    def on_span_start(self, span: Any) -> None:
        return None

    def on_span_end(self, span: Any) -> None:
        self.spans.append(span)

    def shutdown(self) -> None:
        return None

    def force_flush(self) -> None:
        return None


def test_processor_list_restored_exactly(provider: DefaultTraceProvider) -> None:
    app = AppProcessor()
    provider.set_processors([app])
    before = provider._multi_processor._processors
    sink = AgentsTracingSink()
    sink.start()
    try:
        assert provider._multi_processor._processors[:1] == before
        assert len(provider._multi_processor._processors) == 2
        with trace("t"), custom_span("inside"):
            pass
    finally:
        sink.stop()
    assert provider._multi_processor._processors == before
    assert [s.span_data.name for s in app.spans] == ["inside"]  # the app's still fed
    with trace("after"), custom_span("after"):  # part of no test
        pass
    names = {c.text for c in sink.collect() if c.path.endswith(" name")}
    assert names == {"inside"}
    assert sink.inactive_reason == ""


def test_a_provider_the_sink_set_is_put_back_unless_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(setup, "GLOBAL_TRACE_PROVIDER", None)
    monkeypatch.setattr(setup, "_SHUTDOWN_HANDLER_REGISTERED", True)  # no atexit from here
    exporter = AppProcessor()  # stands for the SDK's default (OpenAI) processor
    made: list[AppProcessor] = []
    monkeypatch.setattr(
        sdk_processors, "default_processor", lambda: made.append(exporter) or exporter
    )

    sink = AgentsTracingSink()
    sink.start()
    created = setup.GLOBAL_TRACE_PROVIDER
    assert isinstance(created, DefaultTraceProvider)  # as the SDK creates it on first use
    assert len(created._multi_processor._processors) == 2  # its default one, and ours
    sink.stop()  # no trace made: unset again, and the default processor never made
    assert setup.GLOBAL_TRACE_PROVIDER is None and made == []

    sink = AgentsTracingSink()
    sink.start()
    with trace("t"), custom_span("s"):
        pass
    provider = setup.GLOBAL_TRACE_PROVIDER
    sink.stop()  # traced: the provider stays, as the SDK would have left it
    assert setup.GLOBAL_TRACE_PROVIDER is provider
    assert provider._multi_processor._processors == (exporter,)
    assert [s.span_data.name for s in exporter.spans] == ["s"] and made == [exporter]


def test_nested_sinks_see_their_own_window() -> None:
    outer, inner = AgentsTracingSink(), AgentsTracingSink()
    outer.start()
    with trace("t"):
        with custom_span("first"):
            pass
        inner.start()
        with custom_span("second"):
            pass
        inner.stop()
    outer.stop()

    def names(sink: AgentsTracingSink) -> set[str | bytes]:
        return {c.text for c in sink.collect() if c.path.startswith("span custom ")
                and c.path.endswith(" name")}  # fmt: skip

    assert names(outer) == {"first", "second"}
    assert names(inner) == {"second"}


def test_a_span_not_ended_is_read_at_stop() -> None:
    sink = AgentsTracingSink()
    sink.start()
    with trace("t"):
        span = custom_span("open", data={"k": "v"})
        span.start()
        sink.stop()
        span.finish()
    item = next(c for c in sink.collect() if c.path == 'span custom "open" data.k')
    assert item.text == "v" and item.note == "not ended when the test ended"


def test_why_it_could_not_read(
    provider: DefaultTraceProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider.set_disabled(True)
    sink = AgentsTracingSink()
    sink.start()
    with trace("t"), custom_span("s"):
        pass
    sink.stop()
    assert "tracing is disabled (set_tracing_disabled(True))" in sink.inactive_reason
    provider.set_disabled(False)

    sink = AgentsTracingSink()
    sink.start()
    agents.set_trace_processors([])  # the app replaces the list mid-test
    sink.stop()
    assert "processors were replaced during the test" in sink.inactive_reason

    sink = AgentsTracingSink()
    saved = sys.modules.pop("agents.tracing.setup")
    try:
        sink.start()  # as if the SDK were not imported yet
    finally:
        sys.modules["agents.tracing.setup"] = saved
    sink.stop()
    assert "first imported during the test" in sink.inactive_reason

    sink = AgentsTracingSink()
    sink.start()
    sink.stop()
    assert sink.inactive_reason == ""


def test_sinks_entry() -> None:
    assert agents_tracing_sink.SINKS == [AgentsTracingSink]
    assert AgentsTracingSink.name == "agents trace"


# --- end to end through the fixture ------------------------------------------------------------

# the outer module (imported already) holds the gateway, its tool and the model double
INNER = """
from agents import RunConfig
from test_plugin_agents_tracing import LEAKY_MESSAGE, _deploy_tool, _run_agent


def test_leaky(leakcheck):
    _run_agent(_deploy_tool(leakcheck.secret("bearer"), message=LEAKY_MESSAGE))


def test_sensitive_data_off(leakcheck):
    tool = _deploy_tool(leakcheck.secret("bearer"), message=LEAKY_MESSAGE)
    _run_agent(tool, RunConfig(trace_include_sensitive_data=False))
"""


def test_through_the_fixture(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner_agents=textwrap.dedent(INNER))
    result = pytester.runpytest(*QUIET_INNER_ARGS, f"--leakcheck-seed={SEED}", "-rA")
    secrets: list[Secret] = [
        CanaryFactory(SEED, namespace=f"test_inner_agents.py::{name}").secret("bearer")
        for name in ("test_leaky", "test_sensitive_data_off")
    ]
    assert_inner_run_safe(pytester, result, secrets)
    result.assert_outcomes(failed=1, passed=1)
    out = result.stdout.str()
    assert "PASSED test_inner_agents.py::test_sensitive_data_off" in out
    assert f"[LEAK] operator: agents trace {FUNCTION_ERROR}  form raw" in out
    leak_lines = [line for line in result.outlines if "[LEAK]" in line]
    assert leak_lines and all(" agents trace " in line for line in leak_lines), leak_lines
