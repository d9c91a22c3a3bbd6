"""Nothing an application hands leakcheck may crash the session or pass silently.

* ``str`` subclasses whose ``encode``, ``__str__``, ``__repr__``, ``__len__``, ``__iter__``,
  ``__eq__`` or ``__hash__`` raise or lie, exposed, logged (message, args, ``extra``),
  raised (args, text attributes), warned, or handed to structlog and loguru: each inner
  test fails on its leak, no INTERNALERROR, nothing printed unmasked.
* A graph with shared sub-objects is serialized once: one finding, "also at" the others.
* A size budget per exposed object; beyond it, "not inspected: over budget".
* A generator, an object whose repr names only its type: "could not inspect", never a
  silent pass, and the generator is not consumed.
* A long text is searched once, in chunks, never copied whole into JSON, repr or bytes.

Assertions compare paths, forms, counts and booleans, never a secret's value.
"""

from __future__ import annotations

import gc
import json
import tracemalloc
from typing import Any

import pytest
from conftest import run_with_report, self_scan

from leakcheck import CanaryFactory
from leakcheck.capture import Captured, ExposedSink, describe
from leakcheck.harness import LeakCheck
from leakcheck.policy import SinkClass
from leakcheck.serialize import leaves, safe_repr, safe_str, to_jsonable

pytest_plugins = ["pytester"]

SEED = "hostile-objects-1"

# --- hostile str subclasses ---------------------------------------------------------------

HOSTILE = '''
class EncodeRaises(str):
    def encode(self, *args, **kwargs):
        raise RuntimeError("encode")


class StrRaises(str):
    def __str__(self):
        raise RuntimeError("str")

    def __repr__(self):
        raise RuntimeError("repr")

    def __format__(self, spec):
        raise RuntimeError("format")


class Liar(str):
    """Says it is empty and masked; equal to everything."""

    def __str__(self):
        return "***"

    def __repr__(self):
        return "'***'"

    def __len__(self):
        return 0

    def __iter__(self):
        return iter(())

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __hash__(self):
        return 0

    def encode(self, *args, **kwargs):
        return b"***"

    def __getattr__(self, name):
        raise RuntimeError(name)


class LenRaises(str):
    def __len__(self):
        raise RuntimeError("len")

    def __iter__(self):
        raise RuntimeError("iter")

    def __getitem__(self, index):
        raise RuntimeError("getitem")

    def __contains__(self, item):
        raise RuntimeError("contains")

    def __mod__(self, other):
        raise RuntimeError("mod")

    def startswith(self, *args):
        raise RuntimeError("startswith")

    def isidentifier(self):
        raise RuntimeError("isidentifier")

    def replace(self, *args):
        raise RuntimeError("replace")


class PoseAsStr:
    """Not a str, but isinstance(obj, str) says it is (as a mock with spec=str does)."""

    def __init__(self, text):
        self._text = text

    @property
    def __class__(self):
        return str

    def __repr__(self):
        return f"PoseAsStr({self._text})"


class BadInt(int):
    def __str__(self):
        raise RuntimeError("str")

    __repr__ = __str__


KINDS = {"EncodeRaises": EncodeRaises, "StrRaises": StrRaises, "Liar": Liar,
         "LenRaises": LenRaises}
'''

ROUTES = """
import logging, subprocess, warnings
import pytest
from hostile import KINDS, BadInt, PoseAsStr

ALL = sorted(KINDS)
# what the app's own libraries accept (warnings.warn, structlog and loguru call str() on
# their messages themselves: a StrRaises breaks the app's call before leakcheck sees it)
PRINTABLE = [k for k in ALL if k != "StrRaises"]


@pytest.mark.parametrize("kind", ALL)
def test_exposed(leakcheck, kind):
    make = KINDS[kind]
    token = leakcheck.secret("bearer")
    leakcheck.expose({"detail": make(f"tok {token}"), "tags": [make("a"), (make("b"),)],
                      make("key"): BadInt(7), "n": BadInt(3)})


@pytest.mark.parametrize("kind", ALL)
def test_exposed_alone(leakcheck, kind):
    token = leakcheck.secret("bearer")
    leakcheck.expose(KINDS[kind](f"tok {token}"))


def test_exposed_pose(leakcheck):
    token = leakcheck.secret("bearer")
    leakcheck.expose({"detail": PoseAsStr(f"tok {token}")})


@pytest.mark.parametrize("kind", ALL)
def test_log_message(leakcheck, kind):
    token = leakcheck.secret("bearer")
    logging.getLogger("gateway").debug(KINDS[kind](f"tok {token}"))


@pytest.mark.leakcheck(strict_latent=True)  # a repr that lies: the args' own repr is latent
@pytest.mark.parametrize("kind", ALL)
def test_log_args(leakcheck, kind):
    token = leakcheck.secret("bearer")
    logging.getLogger("gateway").debug("sent %r", KINDS[kind](f"tok {token}"))


@pytest.mark.parametrize("kind", ALL)
def test_log_extra(leakcheck, kind):
    token = leakcheck.secret("bearer")
    logging.getLogger("gateway").debug("sent", extra={"auth": KINDS[kind](f"tok {token}")})


@pytest.mark.parametrize("kind", ALL)
def test_exception_args(leakcheck, kind):
    token = leakcheck.secret("bearer")
    raise RuntimeError(KINDS[kind](f"tok {token}"))


@pytest.mark.parametrize("kind", ALL)
def test_exception_attributes(leakcheck, kind):
    make = KINDS[kind]
    token = leakcheck.secret("bearer")
    raise subprocess.CalledProcessError(1, make(f"deploy {token}"), stderr=make(f"e {token}"))


@pytest.mark.parametrize("kind", PRINTABLE)
def test_warning(leakcheck, kind):
    token = leakcheck.secret("bearer")
    warnings.warn(UserWarning(KINDS[kind](f"tok {token}")))


@pytest.mark.parametrize("kind", ["EncodeRaises", "Liar"])
def test_structlog(leakcheck, kind):
    import structlog
    make = KINDS[kind]
    token = leakcheck.secret("bearer")
    structlog.get_logger().warning(make("event"), token=make(f"tok {token}"),
                                   nested={"a": make(f"x {token}")})


@pytest.mark.parametrize("kind", PRINTABLE)
def test_loguru(leakcheck, kind):
    import io
    from loguru import logger
    make = KINDS[kind]
    token = leakcheck.secret("bearer")
    # the app writes its records as JSON, extra included (under loguru's default handler
    # alone the extra is written nowhere: latent)
    handler = logger.add(io.StringIO(), serialize=True)
    try:
        logger.bind(auth=make(f"tok {token}")).warning("sent {}", make(f"a {token}"))
    finally:
        logger.remove(handler)
"""


def _inner_secrets(report: dict[str, Any]) -> list[Any]:
    """Each inner test drew one bearer canary: rebuilt from the seed and its node id."""
    return [CanaryFactory(SEED, namespace=r["test"]).secret("bearer") for r in report["tests"]]


def test_hostile_str_subclasses_on_every_route(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(hostile=HOSTILE, test_inner=ROUTES)
    result, report = run_with_report(pytester, SEED, "-p", "no:cacheprovider")
    text = "\n".join(result.outlines + result.errlines)
    crashed = "INTERNALERROR" in text
    assert not crashed
    records = {r["test"].split("::")[-1]: r for r in report["tests"]}
    expected = 4 * 7 + 1 + 3 + 2 + 3  # kinds x routes for every kind, pose, then the rest
    assert len(records) == expected, sorted(records)
    silent = sorted(name for name, r in records.items() if r["forbidden"] == 0)
    assert not silent, f"passed silently: {silent}"
    not_failed = sorted(name for name, r in records.items() if r["outcome"] != "failed")
    assert not not_failed, not_failed
    # the field that holds the secret is named, not only the repr or the whole JSON
    for kind in ("EncodeRaises", "StrRaises", "Liar", "LenRaises"):
        paths = {f["path"] for f in records[f"test_exposed[{kind}]"]["findings"]}
        assert paths == {"$.detail"}, (kind, paths)
        paths = {f["path"] for f in records[f"test_log_extra[{kind}]"]["findings"]}
        assert "gateway DEBUG extra.auth" in paths, (kind, paths)
    self_scan(text, _inner_secrets(report), "inner pytest output")
    self_scan(json.dumps(report), _inner_secrets(report), "inner JSON report")


def test_hostile_record_property(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        hostile=HOSTILE,
        test_inner="""
from hostile import KINDS

def test_property(leakcheck, record_property):
    token = leakcheck.secret("bearer")
    for name, make in KINDS.items():
        record_property(name, make(f"tok {token}"))
""",
    )
    result, report = run_with_report(pytester, SEED, "--junitxml=junit.xml")
    (record,) = report["tests"]
    assert record["outcome"] == "passed"
    secrets = _inner_secrets(report)
    self_scan("\n".join(result.outlines + result.errlines), secrets, "inner pytest output")
    self_scan((pytester.path / "junit.xml").read_bytes(), secrets, "inner JUnit XML")


def test_a_hostile_sink_text_cannot_reach_the_verdict() -> None:
    """A plugin sink may hand over a str subclass, or no str at all: Captured keeps the
    characters, as plain str or bytes."""

    class EncodeRaises(str):
        def encode(self, *args: Any, **kwargs: Any) -> bytes:
            raise RuntimeError("encode")

    class BytesLie(bytes):
        def __bytes__(self) -> bytes:
            return b"***"

    check = LeakCheck(seed=SEED, namespace="captured", sinks=[])
    token = check.secret("bearer")
    items = [
        Captured("plugin", SinkClass.OPERATOR, EncodeRaises("p"), EncodeRaises(f"t {token}")),
        Captured("plugin", SinkClass.OPERATOR, "b", BytesLie(f"t {token}".encode())),
        Captured("plugin", SinkClass.OPERATOR, "n", 12345),  # type: ignore[arg-type]
    ]
    assert [type(item.text) for item in items] == [str, bytes, str]
    assert type(items[0].path) is str
    from leakcheck.verdict import judge

    found = judge(check.scanner, items, check.policy)
    assert [leak.path for leak in found] == ["p", "b"]
    same = check.mask(EncodeRaises(f"t {token}")) == check.mask(f"t {token}")
    assert same
    assert type(check.mask(EncodeRaises("nothing here"))) is str


def test_text_is_read_through_the_base_type() -> None:
    class Liar(str):
        def __str__(self) -> str:
            return "***"

        def __repr__(self) -> str:
            return "'***'"

        def __iter__(self) -> Any:
            return iter(())

    class Raises(str):
        def __str__(self) -> str:
            raise RuntimeError("str")

        __repr__ = __str__

    assert safe_str(Liar("shown")) == "shown" and type(safe_str(Liar("x"))) is str
    assert safe_repr([Liar("a"), (Raises("b"),), {Raises("k"): 1}]) == "['a', ('b',), {'k': 1}]"
    assert to_jsonable({Raises("k"): [Liar("v")]}) == {"k": ["v"]}
    assert safe_str(RuntimeError(Raises("message"))) == "message"
    assert list(leaves({Liar("k"): Liar("v")})) == [("$.k<key>", "k"), ("$.k", "v")]


# --- shared sub-objects -------------------------------------------------------------------


def _shared(depth: int, leaf: Any) -> Any:
    node = leaf
    for _ in range(depth):
        node = {"a": node, "b": node}
    return node


def test_a_shared_sub_object_is_one_finding_also_at_the_others() -> None:
    check = LeakCheck(seed=SEED, namespace="shared", sinks=[])
    token = check.secret("bearer")
    check.expose(_shared(20, {"detail": f"tok {token}"}))  # 2**20 paths to the secret
    found = check.findings()
    assert len(found) == 1
    (leak,) = found
    assert leak.path == "$" + ".a" * 20 + ".detail"
    assert leak.note.startswith("also at 1,048,575 other path(s), e.g. $.a"), leak.note
    assert leak.note.endswith(".b.detail"), leak.note
    captured = check.captured()
    assert len(captured) < 100, len(captured)  # each object's fields once
    assert sum(len(item.text) for item in captured) < 10_000


def test_shared_objects_in_lists_and_the_json_written_once() -> None:
    shared = {"detail": "x"}
    value = to_jsonable({"first": [shared, shared], "second": shared})
    assert value == {
        "first": [{"detail": "x"}, "<same dict as $.first[0]>"],
        "second": "<same dict as $.first[0]>",
    }
    assert [path for path, _ in leaves(value)] == [
        "$.first<key>",
        "$.first[0].detail<key>",
        "$.first[0].detail",
        "$.second<key>",
    ]
    cyclic: dict[str, Any] = {"detail": "x"}
    cyclic["self"] = cyclic
    assert to_jsonable({"a": cyclic, "b": cyclic})["b"] == "<same dict as $.a>"
    # the repr too: written once, "<same dict as earlier>" after (repr() writes 2**16 copies)
    graph = _shared(16, {"detail": "x"})
    size = len(safe_repr(graph))
    assert size < 5_000, size
    assert safe_repr([shared, shared]) == "[{'detail': 'x'}, {'detail': 'x'}]"  # small: as is
    texts = {
        item.path: item.note
        for item in describe(
            {"a": shared, "b": [shared]}, "tool response", SinkClass.CALLER, "r", "g"
        )
    }
    assert texts["r $.a.detail"] == "also at 1 other path(s), e.g. $.b[0].detail"
    assert "r $.b[0].detail" not in texts


def test_shared_graph_through_the_plugin(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_inner="""
def test_shared(leakcheck):
    token = leakcheck.secret("bearer")
    node = {"detail": f"tok {token}"}
    for _ in range(12):
        node = {"a": node, "b": node}
    leakcheck.expose(node)
"""
    )
    result, report = run_with_report(pytester, SEED)
    (record,) = report["tests"]
    assert record["forbidden"] == 1 and record["outcome"] == "failed"
    (finding,) = record["findings"]
    assert finding["note"].startswith("also at 4,095 other path(s)"), finding["note"]
    section = "\n".join(result.outlines)
    shown = "(also at 4,095 other path(s), e.g. $.a" in section
    assert shown, "the note is not in the failure report"
    self_scan(section, _inner_secrets(report), "inner pytest output")


# --- the budget ---------------------------------------------------------------------------


def test_beyond_the_budget_is_reported_never_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    import leakcheck.capture as capture

    monkeypatch.setattr(capture, "BUDGET_CHARS", 50_000)
    check = LeakCheck(seed=SEED, namespace="budget", sinks=[])
    token = check.secret("bearer")
    inside = {"detail": f"tok {token}"}
    check.expose({"early": inside, "rows": [f"row {i:06d}" for i in range(20_000)]})
    found = check.findings()
    assert [leak.path for leak in found] == ["$.early.detail"]
    over = sorted((p.path, p.what) for p in found.not_inspected if "over budget" in p.what)
    assert len(over) == 2, over
    (json_path, json_what), (repr_path, repr_what) = over
    assert json_path.startswith("$.rows[") and "part(s) from here on" in json_what, over
    assert repr_path == "repr" and "the repr beyond 50,000 characters" in repr_what, over
    report = check.report(found)
    said = "could not inspect" in report and "over budget" in report
    assert said
    json_size = len(next(i.text for i in check.captured() if i.path == "json"))
    assert json_size < 60_000


def test_fields_beyond_the_field_budget_are_searched_in_the_json(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import leakcheck.capture as capture

    monkeypatch.setattr(capture, "FIELD_BUDGET", 1_000)
    check = LeakCheck(seed=SEED, namespace="fields", sinks=[])
    token = check.secret("bearer")
    rows = [f"row {i}" for i in range(5_000)]
    rows[4_000] = f"tok {token}"
    check.expose(rows)
    found = check.findings()
    assert [leak.path for leak in found] == ["json"]
    assert found[0].note == "fields after the first 1,000 are searched here only"
    fields = [i for i in check.captured() if i.path.startswith("$")]
    assert len(fields) == 1_000


def test_the_real_budget_holds_for_a_large_response() -> None:
    """Defaults: a response of ~12 MB of JSON is cut near 8 MiB, and reported."""
    check = LeakCheck(seed=SEED, namespace="large", sinks=[])
    check.secret("bearer")
    check.expose([{"row": "x" * 1_000, "n": i} for i in range(12_000)])
    items = check.captured()
    size = len(next(i.text for i in items if i.path == "json"))
    assert 7 * 2**20 < size < 8 * 2**20 + 20_000, size
    assert any(i.uninspected.startswith("over budget") for i in items)


# --- could not inspect --------------------------------------------------------------------


class DefaultRepr:
    def __init__(self, value: str) -> None:
        self.value = value


class Slotted:
    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value


class ReprRaises:
    def __repr__(self) -> str:
        raise RuntimeError("repr")


def test_what_cannot_be_inspected_is_said_and_never_consumed() -> None:
    check = LeakCheck(seed=SEED, namespace="opaque", sinks=[])
    token = check.secret("bearer")
    items = (part for part in [f"tok {token}", "more"])
    check.expose(
        {
            "items": items,
            "cursor": iter([f"tok {token}"]),
            "plain": DefaultRepr(token),
            "slotted": Slotted(token),
            "broken": ReprRaises(),
        }
    )
    check.expose(object(), name="bare")
    found = check.findings()
    assert [leak.path for leak in found] == []  # nothing there to find, and no failure
    check.check()
    parts = {(p.sink, p.path, p.what.split(":")[0]) for p in found.not_inspected}
    assert parts == {
        ("tool response", "$.items", "generator"),
        ("tool response", "$.cursor", "list_iterator"),
        ("tool response", "$.plain", "DefaultRepr"),
        ("tool response", "$.slotted", "Slotted"),
        ("tool response", "$.broken", "ReprRaises"),
        ("tool response", "bare $", "object"),
    }
    reasons = {p.path: p.what for p in found.not_inspected}
    assert "reading would consume them" in reasons["$.items"]
    assert "repr names only its type" in reasons["$.slotted"]
    assert "repr raised RuntimeError" in reasons["$.broken"]
    unread = next(items).startswith("tok ")  # the generator was not consumed
    assert unread
    report = check.report(found)
    listed = [
        "could not inspect 6 part(s) (not searched; not a failure):" in report,
        "[not inspected] caller: tool response $.items  generator: an iterator" in report,
    ]
    assert listed == [True, True]
    assert [p.to_dict()["sink_class"] for p in found.not_inspected] == ["caller"] * 6


def test_an_object_with_its_own_str_is_inspected_through_it() -> None:
    class Shown:
        def __init__(self, value: str) -> None:
            self.value = value

        def __str__(self) -> str:  # json.dumps(default=str) writes this
            return f"Shown({self.value})"

    check = LeakCheck(seed=SEED, namespace="shown", sinks=[])
    token = check.secret("bearer")
    check.expose({"detail": Shown(token)})
    found = check.findings()
    assert [leak.path for leak in found] == ["$.detail"]
    assert found.not_inspected == []


def test_could_not_inspect_through_the_plugin(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_inner="""
class Handle:
    __slots__ = ("token",)
    def __init__(self, token):
        self.token = token

def test_generator_passes(leakcheck):
    token = leakcheck.secret("bearer")
    rows = (row for row in [token])
    leakcheck.expose({"rows": rows})
    assert next(rows) == token  # the app still has its rows

def test_generator_and_leak(leakcheck):
    token = leakcheck.secret("bearer")
    leakcheck.expose({"rows": (row for row in "ab"), "handle": Handle(token), "detail": token})
"""
    )
    result, report = run_with_report(pytester, SEED)
    outcomes = {r["test"].split("::")[-1]: r["outcome"] for r in report["tests"]}
    assert outcomes == {"test_generator_passes": "passed", "test_generator_and_leak": "failed"}
    section = "\n".join(result.outlines)
    listed = [
        "could not inspect 2 part(s)" in section,
        "[not inspected] caller: tool response $.rows  generator: an iterator" in section,
        "[not inspected] caller: tool response $.handle  Handle: no JSON form" in section,
    ]
    assert listed == [True, True, True]
    # a passing test's part that could not be inspected: in its record and the summary
    passing = next(r for r in report["tests"] if r["test"].endswith("test_generator_passes"))
    assert [(p["path"], p["sink_class"]) for p in passing["not_inspected"]] == [
        ("$.rows", "caller")
    ]
    assert (
        "could not inspect in test_inner.py::test_generator_passes: tool response $.rows" in section
    )
    self_scan(section, _inner_secrets(report), "inner pytest output")


# --- long texts ---------------------------------------------------------------------------

WORDS = "lorem ipsum dolor sit amet, consectetur \u00e9l\u00e8ve \U0001f600\n"


def test_a_long_text_is_searched_once_in_chunks() -> None:
    check = LeakCheck(seed=SEED, namespace="long", sinks=[])
    token = check.secret("bearer")
    # the secret straddles the first 1 Mi-character slice that is encoded at a time
    head = WORDS * (2**20 // len(WORDS))
    head += "x" * (2**20 - len(head) - 3)
    text = head + f"tok {token} " + WORDS * 30_000
    check.expose({"body": text})
    items = check.captured()
    long_items = [i.path for i in items if len(i.text) >= 64 * 1024]
    assert long_items == ["$.body"]  # not copied into the JSON or the repr
    found = check.findings()
    assert [(leak.path, leak.finding.form) for leak in found] == [("$.body", "raw")]
    direct = check.scanner.scan(text)
    assert [(f.offset, f.line, f.column) for f in direct] == [
        (f.finding.offset, f.finding.line, f.finding.column) for f in found
    ]


def test_long_text_memory_is_bounded() -> None:
    check = LeakCheck(seed=SEED, namespace="memory", sinks=[])
    token = check.secret("bearer")
    text = "lorem ipsum dolor sit amet " * (24 * 2**20 // 27) + f"tok {token}"
    check.expose(text)
    _ = check.scanner  # built outside the measurement
    gc.collect()
    tracemalloc.start()
    try:
        found = check.findings()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [leak.path for leak in found] == ["$"]
    # 24 MiB of text: searched in 8 MiB chunks (a chunk, its bytes copy and its decoding)
    # where it was copied raw, as JSON and as repr, then encoded and joined
    assert peak < 64 * 2**20, f"peak {peak / 2**20:.0f} MiB"


def test_long_exception_attribute_and_log_extra_are_one_text_each() -> None:
    check = LeakCheck(seed=SEED, namespace="attrs", sinks=[])
    token = check.secret("bearer")
    document = "{" + " " * (200 * 1024) + f'"auth": "{token}"'
    try:
        json.loads(document)
    except json.JSONDecodeError as exc:
        check.exception_reached_caller(exc)
    found = check.findings()
    paths = sorted({leak.path for leak in found})
    assert paths == ["JSONDecodeError.doc"], paths
    sizes = [len(i.text) for i in check.captured() if i.path == "JSONDecodeError.doc"]
    assert sizes == [len(document)]  # the text itself, once: no repr, no str copy


def test_a_released_memoryview_is_not_a_failure_to_serialize() -> None:
    view = memoryview(b"gone")
    view.release()
    items = list(describe(view, "tool response", SinkClass.CALLER, "tool response", "g"))
    assert [i.uninspected for i in items if i.uninspected] == []
    assert [i.path for i in items] == ["$", "json", "repr"]


def test_exposed_sink_names_its_label_safely() -> None:
    class Label(str):
        def __format__(self, spec: str) -> str:
            raise RuntimeError("format")

    sink = ExposedSink()
    sink.add({"a": "b"}, Label("reply"))  # type: ignore[arg-type]
    paths = [item.path for item in sink.collect()]
    assert "reply $.a" in paths


def test_a_sink_whose_collect_fails_is_said_not_a_crash() -> None:
    """A plugin sink's own bug: what it gave before the failure is judged, the rest is
    reported as not inspected, naming the sink."""

    class Broken:
        name = "broken sink"

        def start(self) -> None: ...

        def stop(self) -> None: ...

        def collect(self):  # type: ignore[no-untyped-def]
            yield Captured(self.name, SinkClass.CALLER, "first", f"token {token}")
            raise RuntimeError("the plugin's own bug")

    check = LeakCheck(seed=SEED, namespace="broken", sinks=[Broken()])
    token = check.secret("bearer")
    found = check.findings()
    assert [(leak.sink, leak.path) for leak in found] == [("broken sink", "first")]
    assert [(p.sink, p.path, p.what) for p in found.not_inspected] == [
        ("broken sink", "collect()", "the sink failed: Broken.collect() raised RuntimeError")
    ]
