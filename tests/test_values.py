"""leakcheck's value classes (``_values.Value``): what ``@dataclass`` gave them, kept, and the
scan's start-up free of the dataclasses import."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from typing import ClassVar

import pytest

from leakcheck import CanaryFactory, Secret
from leakcheck._values import FrozenInstanceError, Value, field, replace
from leakcheck.canaries import KINDS
from leakcheck.findings import Finding, Span
from leakcheck.forms import PREFIX, Piece
from leakcheck.report import ScanSummary


def a_finding(**changes: object) -> Finding:
    fields: dict[str, object] = {
        "secret_id": "bearer#1",
        "kind": "bearer",
        "secret_class": "direct",
        "form": "raw",
        "source": "out.log",
        "line": 3,
        "column": 7,
        "offset": 120,
        "length": 40,
        "excerpt": "Authorization: «canary:bearer:raw»",
    }
    return Finding(**{**fields, **changes})  # type: ignore[arg-type]


def test_dataclasses_sees_every_value_class_as_a_dataclass() -> None:
    finding = a_finding()
    for value in (finding, Span(1, 2, "bearer", "raw"), ScanSummary(findings=[]), PREFIX):
        assert dataclasses.is_dataclass(value)
    assert [f.name for f in dataclasses.fields(Span)] == ["start", "end", "kind", "form", "rank"]
    assert dataclasses.fields(Span)[-1].default == 0
    assert dataclasses.asdict(finding) == finding.to_dict()
    assert list(finding.to_dict()) == [f.name for f in dataclasses.fields(Finding)]
    moved = dataclasses.replace(finding, line=9)
    assert (moved.line, moved.column, type(moved)) == (9, 7, Finding)
    assert replace(finding, line=9) == moved
    summary = dataclasses.replace(ScanSummary(findings=[finding]), sources=2)
    assert (summary.findings, summary.sources) == ([finding], 2)


def test_a_secret_keeps_its_masked_repr_and_its_equality_by_value_and_id() -> None:
    secret = CanaryFactory(seed="values", namespace="t").secret("bearer")
    assert secret.value not in repr(secret) and secret.value not in str(secret)
    assert repr(secret) == f"Secret(id={secret.id!r}, kind='bearer', chars={len(secret.value)})"
    renamed = replace(secret, id="other")
    assert (renamed.value, renamed.id, renamed.bits) == (secret.value, "other", secret.bits)
    assert renamed != secret and replace(renamed, id=secret.id) == secret
    assert hash(replace(renamed, id=secret.id)) == hash(secret)
    # mask_bits is left out of the dataclass repr, as field(repr=False) said
    assert [f.name for f in dataclasses.fields(Secret) if not f.repr] == ["mask_bits"]
    assert Secret("v" * 12, "secret", "s", KINDS["bearer"].secret_class).bits == ()


def test_values_compare_hash_and_refuse_assignment_as_frozen_dataclasses_did() -> None:
    span = Span(1, 2, "bearer", "raw")
    assert span == Span(start=1, end=2, kind="bearer", form="raw", rank=0)
    assert span != Span(1, 2, "bearer", "raw", rank=1)
    assert hash(span) == hash(Span(1, 2, "bearer", "raw"))
    assert span != (1, 2, "bearer", "raw", 0)  # a value is no tuple
    assert repr(span) == "Span(start=1, end=2, kind='bearer', form='raw', rank=0)"
    with pytest.raises(FrozenInstanceError):
        span.start = 5  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del span.end  # type: ignore[misc]
    summary = ScanSummary(findings=[])
    summary.sources = 4  # not frozen, so assignable, and so unhashable
    assert summary.sources == 4
    assert ScanSummary.__hash__ is None  # as @dataclass(eq=True) left a mutable class


def test_keywords_in_any_order_make_the_same_value_and_the_same_hash() -> None:
    # hash and equality read the fields in their order: keywords are put in it
    shuffled = Span(kind="bearer", rank=0, start=1, form="raw", end=2)
    assert shuffled == Span(1, 2, "bearer", "raw") and hash(shuffled) == hash(
        Span(1, 2, "bearer", "raw")
    )
    assert list(vars(shuffled)) == ["start", "end", "kind", "form", "rank"]
    assert list(vars(Span(1, 2, "bearer", "raw"))) == ["start", "end", "kind", "form", "rank"]


def test_a_default_factory_gives_each_value_its_own_list() -> None:
    first, second = ScanSummary(findings=[]), ScanSummary(findings=[])
    first.errors.append("unreadable")
    assert second.errors == [] and first.errors == ["unreadable"]
    assert not hasattr(ScanSummary, "errors")  # as a dataclass: no class attribute


def test_a_value_is_built_from_positions_and_keywords_and_refuses_what_is_wrong() -> None:
    assert Piece("prefix-") == Piece(prefix="prefix-", mask_only=False)
    with pytest.raises(TypeError, match="missing required arguments: end, kind, form"):
        Span(1)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        Span(1, 2, "k", "f", colour=3)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="multiple values for argument 'start'"):
        Span(1, 2, "k", "f", start=3)  # type: ignore[misc]
    with pytest.raises(TypeError, match="takes 5 positional arguments but 6"):
        Span(1, 2, "k", "f", 0, 9)  # type: ignore[call-arg]


def test_a_field_without_a_default_after_one_with_is_refused() -> None:
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):

        class Bad(Value):
            a: int = 0
            b: int

    with pytest.raises(ValueError, match="both default and default_factory"):
        field(default=1, default_factory=list)


def test_a_subclass_adds_its_fields_after_its_bases_and_skips_class_variables() -> None:
    class Base(Value, frozen=True):
        a: int
        LIMIT: ClassVar[int] = 3

    class Child(Base, frozen=True):
        b: str = "x"

    assert [f.name for f in dataclasses.fields(Child)] == ["a", "b"]
    assert Child(1) == Child(a=1, b="x") and Child.LIMIT == 3
    assert Child.__match_args__ == ("a", "b")


def test_a_field_left_out_of_repr_is_not_shown() -> None:
    class Token(Value, frozen=True):
        name: str
        value: str = field(default="", repr=False)

    assert repr(Token("api", "hidden-material")).endswith(".Token(name='api')")


def test_a_value_class_signature_lists_its_fields_as_a_dataclass_one_does() -> None:
    @dataclasses.dataclass(frozen=True)
    class Twin:
        start: int
        end: int
        kind: str
        form: str
        rank: int = 0

    assert str(inspect.signature(Span)) == str(inspect.signature(Twin))
    summary = inspect.signature(ScanSummary).parameters
    assert list(summary)[:3] == ["findings", "sources", "secrets"]
    assert repr(summary["secrets"].default) == "<factory>" and summary["sources"].default == 0


def test_copy_and_pickle_round_trip_a_frozen_value() -> None:
    finding = a_finding()
    assert copy.copy(finding) == finding and copy.deepcopy(finding) == finding
    assert pickle.loads(pickle.dumps(finding)) == finding
    assert pickle.loads(pickle.dumps(ScanSummary(findings=[finding]))).findings == [finding]
