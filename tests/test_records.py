"""The typed records of the JSON report read back what they write, key order included."""

from __future__ import annotations

import json

from leakcheck.records import Assertion, CaseResult, SecretRef, TestRecord


def test_a_record_round_trips_byte_for_byte() -> None:
    record = TestRecord(
        test="t.py::test_gateway[create_deployment-http_401-cookie]",
        forbidden=1,
        findings=[{"finding": {"secret_id": "bearer#1"}, "sink": "tool response"}],
        secrets=[SecretRef("bearer#1", "bearer", True), SecretRef("staging", "secret", False)],
        inactive_sinks={"sentry event": "no client"},
        matrix=CaseResult(
            "create_deployment",
            "http_401",
            "cookie",
            "req_x",
            {Assertion.LEAKS, Assertion.CONTRACT},
        ),
        outcome="failed",
    )
    text = json.dumps(record.to_json())
    assert list(record.to_json()) == [
        "test", "forbidden", "findings", "secrets", "inactive_sinks", "not_inspected",
        "matrix", "outcome",
    ]  # fmt: skip
    assert record.to_json()["matrix"]["failed"] == ["contract", "leaks"]  # sorted, as ever
    again = TestRecord.from_json(json.loads(text))
    assert again == record and json.dumps(again.to_json()) == text


def test_a_record_without_a_matrix_case_has_no_matrix_key() -> None:
    record = TestRecord(test="t.py::test_a", forbidden=0)
    assert "matrix" not in record.to_json() and "outcome" not in record.to_json()
    assert TestRecord.from_json(record.to_json()) == record


def test_an_assertion_reads_as_its_name() -> None:
    assert f"[{Assertion.CONTRACT}]" == "[contract]" and Assertion("leaks") is Assertion.LEAKS
