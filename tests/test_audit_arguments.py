"""``leakcheck.audit.arguments``: one small, valid, deterministic argument set per input
schema; pinned arguments from a file; an invalid schema is one clear error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from leakcheck.audit import AuditError
from leakcheck.audit.arguments import (
    ArgumentError,
    SchemaProblem,
    arguments_for,
    check_input_schema,
    load_pinned,
    resolve_refs,
)

SCHEMAS: list[dict[str, Any]] = [
    {"type": "object", "properties": {}},
    {"type": "object", "properties": {"q": {"type": "string"}}},  # nothing required
    {
        "type": "object",
        "properties": {
            "issue_key": {"type": "string", "pattern": "^[A-Z]+-[0-9]+$"},
            "limit": {"type": "integer", "minimum": 5, "maximum": 50, "default": 10},
            "fields": {"type": "array", "items": {"type": "string"}, "minItems": 2},
            "mode": {"enum": ["fast", "full"]},
            "since": {"type": "string", "format": "date-time"},
            "owner": {"type": "string", "format": "email"},
            "page": {"anyOf": [{"type": "null"}, {"type": "integer", "exclusiveMinimum": 0}]},
            "ratio": {"type": "number", "exclusiveMaximum": 1, "minimum": 0},
            "flag": {"type": "boolean"},
            "name": {"type": "string", "minLength": 12, "maxLength": 12},
        },
        "required": [
            "issue_key",
            "limit",
            "fields",
            "mode",
            "since",
            "owner",
            "page",
            "ratio",
            "flag",
            "name",
        ],
        "additionalProperties": False,
    },  # fmt: skip
    {  # pydantic's shape: $defs and $ref, Optional as anyOf with null
        "type": "object",
        "$defs": {
            "Filter": {
                "type": "object",
                "properties": {"tag": {"type": "string"}},
                "required": ["tag"],
            }
        },
        "properties": {
            "filter": {"$ref": "#/$defs/Filter"},
            "after": {"anyOf": [{"$ref": "#/$defs/Filter"}, {"type": "null"}]},
        },
        "required": ["filter", "after"],
    },  # fmt: skip
]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_generated_arguments_are_valid_and_deterministic(schema: dict[str, Any]) -> None:
    check_input_schema("tool", schema)
    arguments = arguments_for(schema)
    jsonschema.validate(arguments, schema, format_checker=jsonschema.FormatChecker())
    assert arguments_for(schema) == arguments
    assert set(arguments) == set(schema.get("required", []))  # only what is required


def test_plain_values_first() -> None:
    arguments = arguments_for(SCHEMAS[2])
    assert arguments["limit"] == 10 and arguments["mode"] == "fast"
    assert arguments["owner"] == "audit@example.com" and arguments["flag"] is False
    assert len(arguments["fields"]) == 2 and arguments["page"] == 1


def test_refs_resolved_and_recursion_bounded() -> None:
    recursive = {"$defs": {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}}}},
                 "type": "object", "properties": {"n": {"$ref": "#/$defs/N"}}}  # fmt: skip
    assert resolve_refs(recursive)["properties"]["n"]["type"] == "object"
    with pytest.raises(ArgumentError, match="outside the schema"):
        arguments_for({"type": "object", "properties": {"x": {"$ref": "http://x/y"}},
                       "required": ["x"]})  # fmt: skip


def test_unsatisfiable_schema_is_said() -> None:
    impossible = {"type": "object", "properties": {"x": {"type": "integer", "minimum": 5,
                  "maximum": 1}}, "required": ["x"]}  # fmt: skip
    with pytest.raises(ArgumentError, match="pin them with --arguments FILE"):
        arguments_for(impossible)


@pytest.mark.parametrize(
    ("schema", "fragment"),
    [
        ({"type": "object", "properties": {"x": {"type": 12}}}, "not a valid JSON Schema"),
        ({"type": "string"}, "MCP tool arguments are an object"),
        (["not", "a", "schema"], "not a JSON object"),
    ],
)
def test_invalid_schema_is_one_error(schema: Any, fragment: str) -> None:
    with pytest.raises(SchemaProblem, match=fragment) as raised:
        check_input_schema("get_thing", schema)
    assert str(raised.value).startswith("tool get_thing: ")
    assert "\n" not in str(raised.value)


def test_pinned_file(tmp_path: Path) -> None:
    path = tmp_path / "pinned.json"
    path.write_text(json.dumps({"get_issue": {"issue_key": "PROJ-1"}}))
    assert load_pinned(path) == {"get_issue": {"issue_key": "PROJ-1"}}
    for text, fragment in (("[1]", "a JSON object mapping"), ("{", "not JSON"),
                           ('{"t": 3}', "a JSON object mapping")):  # fmt: skip
        path.write_text(text)
        with pytest.raises(AuditError, match=fragment):
            load_pinned(path)
    with pytest.raises(AuditError, match="cannot read it"):
        load_pinned(tmp_path / "missing.json")
