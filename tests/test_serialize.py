"""``leakcheck.serialize``: exposed objects to JSON-shaped data, string leaves with their JSON
paths, and every text an exception carries. None of it may raise on hostile objects."""

from __future__ import annotations

import collections
import collections.abc
import dataclasses
import json
import subprocess
import sys
from typing import Any
from unittest import mock

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from leakcheck.serialize import exception_texts, leaves, safe_repr, to_jsonable

# --- to_jsonable ------------------------------------------------------------------------------


@dataclasses.dataclass
class Error:
    code: str
    detail: str


@dataclasses.dataclass
class Envelope:
    ok: bool
    error: Error
    tags: list[str] = dataclasses.field(default_factory=list)


class PydanticV2Like:
    def __init__(self, **fields: Any) -> None:
        self._fields = fields

    def model_dump(self) -> dict[str, Any]:
        return dict(self._fields)


class PydanticV1Like:
    def dict(self) -> dict[str, Any]:
        return {"detail": "v1"}


class ToDict:
    def to_dict(self) -> dict[str, Any]:
        return {"detail": "to_dict"}


class RaisingRepr:
    def __repr__(self) -> str:
        raise RuntimeError("repr exploded")

    __str__ = __repr__


class RaisingDump:
    def model_dump(self) -> dict[str, Any]:
        raise ValueError("cannot dump")

    def __repr__(self) -> str:
        return "RaisingDump()"


class RaisingGetattr:
    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(name)

    def __repr__(self) -> str:
        return "RaisingGetattr()"


class RaisingItems(dict):  # type: ignore[type-arg]
    def items(self) -> Any:
        raise RuntimeError("items")


class RaisingIter(list):  # type: ignore[type-arg]
    def __iter__(self) -> Any:
        raise RuntimeError("iter")


class RaisingArgs(Exception):
    @property  # type: ignore[override]
    def args(self) -> Any:
        raise RuntimeError("args")


class Unhashable:
    def __str__(self) -> str:
        raise RuntimeError("str")

    def __repr__(self) -> str:
        raise RuntimeError("repr")


@dataclasses.dataclass
class RaisingField:
    name: str

    def __getattribute__(self, attr: str) -> Any:
        if attr == "name":
            raise RuntimeError("no name")
        return object.__getattribute__(self, attr)


def test_plain_values_are_kept() -> None:
    for value in (None, True, 0, 1.5, "text"):
        assert to_jsonable(value) == value
    assert to_jsonable({"a": [1, "b", None], "c": {"d": 2.5}}) == {
        "a": [1, "b", None],
        "c": {"d": 2.5},
    }


def test_containers_and_keys() -> None:
    assert to_jsonable((1, 2)) == [1, 2]
    assert sorted(to_jsonable({3, 4})) == [3, 4]
    assert to_jsonable(frozenset()) == []
    assert to_jsonable({1: "a", None: "b", (1, 2): "c"}) == {"1": "a", "None": "b", "(1, 2)": "c"}
    assert to_jsonable(collections.OrderedDict(a=1)) == {"a": 1}
    point = collections.namedtuple("Point", "x y")(1, 2)
    assert to_jsonable(point) == [1, 2]


def test_bytes_are_decoded_losslessly() -> None:
    assert to_jsonable(b"plain") == "plain"
    assert to_jsonable(bytearray(b"caf\xc3\xa9")) == "caf\u00e9"
    assert to_jsonable(memoryview(b"x\xffy")) == "x\\xffy"


def test_dataclasses_and_models() -> None:
    envelope = Envelope(False, Error("AUTH_FAILED", "rejected"), ["a"])
    assert to_jsonable(envelope) == {
        "ok": False,
        "error": {"code": "AUTH_FAILED", "detail": "rejected"},
        "tags": ["a"],
    }
    assert to_jsonable(PydanticV2Like(ok=False, error={"detail": "x"})) == {
        "ok": False,
        "error": {"detail": "x"},
    }
    assert to_jsonable(PydanticV1Like()) == {"detail": "v1"}
    assert to_jsonable(ToDict()) == {"detail": "to_dict"}
    assert to_jsonable(Envelope) == safe_repr(Envelope)  # the class itself: its repr


def test_exceptions() -> None:
    exc = RuntimeError("cannot reach", 7)
    assert to_jsonable(exc) == {
        "type": "RuntimeError",
        "message": "('cannot reach', 7)",
        "args": ["cannot reach", 7],
    }
    assert to_jsonable(RaisingArgs("hidden"))["args"] == ["hidden"]


def test_cycles_and_depth() -> None:
    cyclic: dict[str, Any] = {"detail": "x"}
    cyclic["self"] = cyclic
    assert to_jsonable(cyclic) == {"detail": "x", "self": "<cycle dict>"}
    items: list[Any] = ["x"]
    items.append(items)
    assert to_jsonable(items) == ["x", "<cycle list>"]
    shared = {"detail": "y"}
    # not a cycle: written once, then referred to by its first path
    assert to_jsonable([shared, shared]) == [{"detail": "y"}, "<same dict as $[0]>"]
    deep: dict[str, Any] = {}
    current = deep
    for _ in range(200):
        current["next"] = current = {}
    out = json.dumps(to_jsonable(deep))
    assert "<nested too deep: dict>" in out


@pytest.mark.parametrize(
    "obj",
    [
        RaisingRepr(),
        RaisingDump(),
        RaisingGetattr(),
        RaisingItems(a="kept"),
        RaisingIter(["kept"]),
        RaisingArgs("kept"),
        {Unhashable(): "kept"},
        RaisingField("x"),
        mock.MagicMock(),
        mock.NonCallableMock(),
        [RaisingRepr(), {"nested": RaisingDump()}, "kept"],
    ],
    ids=lambda obj: type(obj).__name__,
)
def test_hostile_objects_never_raise(obj: Any) -> None:
    value = to_jsonable(obj)
    json.dumps(value)  # always serializable
    assert list(leaves(value)) is not None
    if isinstance(obj, (dict, list, RaisingArgs)):
        assert "kept" in json.dumps(value)  # one bad part does not hide the others


class ManyItems(collections.abc.Mapping):  # type: ignore[type-arg]
    """A mapping whose items() goes on and on (its len and iteration are no help)."""

    def __getitem__(self, key: Any) -> Any:
        raise KeyError(key)

    def __len__(self) -> int:
        raise RuntimeError("len")

    def __iter__(self) -> Any:
        raise RuntimeError("iter")

    def items(self) -> Any:
        return ((f"key{i}", i) for i in range(2_000_000))


def test_to_jsonable_stops_at_the_budget_and_says_so() -> None:
    value = to_jsonable(ManyItems())
    assert 100_000 < len(value) < 1_000_000, len(value)
    assert value["<not inspected>"] == "<not inspected: over budget>"
    rows = to_jsonable([f"row {i}" for i in range(2_000_000)])
    assert 100_000 < len(rows) < 1_500_000, len(rows)
    assert rows[-1] == "<not inspected: over budget>"


def test_a_raising_part_hides_only_itself() -> None:
    value = to_jsonable({"debug": RaisingRepr(), "error": {"detail": "kept"}})
    assert value["error"] == {"detail": "kept"}
    assert value["debug"] == "<RaisingRepr object; repr raised RuntimeError>"
    assert to_jsonable(RaisingDump()) == "RaisingDump()"
    assert to_jsonable(RaisingField("x")) == {"name": "<name: raised RuntimeError>"}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@given(json_values)
def test_json_data_round_trips(value: Any) -> None:
    assert to_jsonable(value) == value


@given(json_values)
def test_every_string_is_a_leaf(value: Any) -> None:
    texts = [text for _, text in leaves(to_jsonable(value))]

    def strings(v: Any) -> list[str]:
        if isinstance(v, str):
            return [v]
        if isinstance(v, list):
            return [s for item in v for s in strings(item)]
        if isinstance(v, dict):
            return [s for k, item in v.items() for s in [k, *strings(item)]]
        return []

    for s in strings(value):
        assert s in texts


# --- leaves --------------------------------------------------------------------------------


def test_leaves_paths() -> None:
    value = {
        "error": {"detail": "d", "codes": ["a", 2, None, True, 2.5]},
        "odd key": "o",
        "": "empty",
    }
    assert list(leaves(value)) == [
        ("$.error<key>", "error"),
        ("$.error.detail<key>", "detail"),
        ("$.error.detail", "d"),
        ("$.error.codes<key>", "codes"),
        ("$.error.codes[0]", "a"),
        ("$.error.codes[1]", "2"),
        ("$.error.codes[4]", "2.5"),
        ('$["odd key"]<key>', "odd key"),
        ('$["odd key"]', "o"),
        ('$[""]<key>', ""),
        ('$[""]', "empty"),
    ]
    assert list(leaves("top")) == [("$", "top")]
    assert list(leaves([["x"]])) == [("$[0][0]", "x")]
    assert list(leaves(None)) == []


def test_leaves_quote_keys_that_are_not_identifiers() -> None:
    paths = [path for path, _ in leaves({'a"b': {"1x": "v"}})]
    assert paths == ['$["a\\"b"]<key>', '$["a\\"b"]["1x"]<key>', '$["a\\"b"]["1x"]']


# --- exception_texts --------------------------------------------------------------------------


def fields(exc: BaseException) -> dict[str, str]:
    return dict(exception_texts(exc))


def raised(make: Any) -> BaseException:
    try:
        make()
    except BaseException as exc:  # noqa: BLE001
        return exc
    raise AssertionError("did not raise")


def test_cause_and_context_chains() -> None:
    def explicit() -> None:
        try:
            raise KeyError("inner-cause")
        except KeyError as exc:
            raise RuntimeError("outer") from exc

    texts = fields(raised(explicit))
    # ``from`` sets both __cause__ and __context__ to the same exception: named as the cause
    assert "inner-cause" in texts["__cause__.args"]
    assert "__context__.args" not in texts
    assert "inner-cause" in texts["traceback"] and "outer" in texts["traceback"]

    def implicit() -> None:
        try:
            raise ValueError("inner-context")
        except ValueError:
            raise RuntimeError("outer")  # noqa: B904

    texts = fields(raised(implicit))
    assert "inner-context" in texts["__context__.args"]
    assert "direct cause" not in texts["traceback"]
    assert "During handling" in texts["traceback"]


@pytest.mark.skipif(sys.version_info < (3, 11), reason="ExceptionGroup and add_note: 3.11+")
def test_groups_notes_and_nesting() -> None:
    inner = ExceptionGroup("inner", [OSError("deep-member")])  # noqa: F821
    group = ExceptionGroup("outer", [ValueError("member-0"), inner])  # noqa: F821
    group.add_note("note-0")
    inner.exceptions[0].add_note("deep-note")
    texts = fields(group)
    assert "member-0" in texts["exceptions[0].args"]
    assert "deep-member" in texts["exceptions[1].exceptions[0].args"]
    assert texts["__notes__[0]"] == "note-0"
    assert texts["exceptions[1].exceptions[0].__notes__[0]"] == "deep-note"
    for text in ("member-0", "deep-member", "note-0", "deep-note"):
        assert text in texts["traceback"]


def test_cyclic_chain_terminates() -> None:
    first, second = ValueError("first"), ValueError("second")
    first.__context__, second.__context__ = second, first
    texts = fields(first)
    assert "second" in texts["__context__.args"]


def test_text_attributes() -> None:
    called = subprocess.CalledProcessError(
        1, ["deploy", "--token", "cmd-secret"], output="out-text", stderr="err-text"
    )
    texts = fields(called)
    assert "cmd-secret" in texts["cmd"]
    assert "err-text" in texts["stderr"] and "out-text" in texts["output"]
    decode = raised(lambda: json.loads('{"doc-text": '))
    assert "doc-text" in fields(decode)["doc"]
    os_error = OSError(2, "No such file", "/srv/path-text")
    assert "/srv/path-text" in fields(os_error)["filename"]


def test_httpx_request_attribute() -> None:
    request = httpx.Request("GET", "https://api.example/v1?api_key=query-text")
    error = httpx.ConnectError("refused", request=request)
    assert "query-text" in fields(error)["request"]
    # .request raises RuntimeError when unset: skipped, not fatal
    assert "request" not in fields(httpx.ConnectError("refused"))


def test_hostile_exceptions_never_raise() -> None:
    class BadStr(Exception):
        def __str__(self) -> str:
            raise RuntimeError("str")

    class BadNotes(Exception):
        __notes__ = 5

    class BadGroupMembers(Exception):
        @property
        def exceptions(self) -> Any:
            raise RuntimeError("exceptions")

    for exc in (BadStr("x"), RaisingArgs("kept"), BadNotes(), BadGroupMembers()):
        texts = fields(exc)
        assert "traceback" in texts and "args" in texts
    assert "kept" in fields(RaisingArgs("kept"))["args"]


def test_safe_repr() -> None:
    assert safe_repr("x") == "'x'"
    assert safe_repr(RaisingRepr()) == "<RaisingRepr object; repr raised RuntimeError>"


def test_captured_repr_never_shows_its_text() -> None:
    """A ``Captured`` holds what leaked; ``-l`` or a traceback may print it."""
    from leakcheck.capture import Captured
    from leakcheck.policy import SinkClass

    item = Captured("log record", SinkClass.OPERATOR, "gw WARNING message", "tok=S3cr3t-V4lue")
    assert "S3cr3t" not in repr(item)
    assert "gw WARNING message" in repr(item)


def test_captured_takes_every_field_its_dataclass_names() -> None:
    """``Captured.__init__`` is written by hand (issue 13): it must take the fields the
    dataclass declares, in their order, with their defaults, and keep what it is given
    (``dataclasses.replace`` builds a copy through it)."""
    import inspect

    from leakcheck.capture import Captured, LogOrigin
    from leakcheck.policy import SinkClass

    none = (dataclasses.MISSING, inspect.Parameter.empty)
    declared = [
        (f.name, "required" if f.default in none else f.default)
        for f in dataclasses.fields(Captured)
    ]
    taken = [
        (name, "required" if parameter.default in none else parameter.default)
        for name, parameter in list(inspect.signature(Captured.__init__).parameters.items())[1:]
    ]
    assert taken == declared
    origin = LogOrigin("gw", 10, "DEBUG")
    item = Captured("s", SinkClass.LATENT, "p", b"t", "n", "g", True, "u", origin)
    assert dataclasses.astuple(item) == ("s", SinkClass.LATENT, "p", b"t", "n", "g", True, "u",
                                         dataclasses.astuple(origin))  # fmt: skip
    copy = dataclasses.replace(item, note="m")
    assert copy.note == "m" and copy.origin == origin and copy.fallback is True
    assert copy == dataclasses.replace(item, note="m") and hash(copy) == hash(
        dataclasses.replace(item, note="m")
    )


_SCALARS = st.one_of(
    st.text(),
    st.floats(allow_nan=True),
    st.integers(),
    st.integers(min_value=2**60, max_value=2**70),
    st.integers(min_value=10**5000, max_value=10**5000 + 5),  # past repr's digit limit
    st.booleans(),
    st.none(),
)


@given(st.lists(_SCALARS, max_size=6).map(tuple))
def test_a_tuple_of_scalars_is_written_as_the_writer_writes_it(args: tuple[Any, ...]) -> None:
    """``safe_repr`` writes a log record's args (a tuple of strings and numbers, nearly
    always) without the writer: the same text, a huge int included (the writer's
    placeholder, never Python's digit-limit error)."""
    from leakcheck.serialize.reprs import ReprWriter

    assert safe_repr(args) == ReprWriter().text(args)
