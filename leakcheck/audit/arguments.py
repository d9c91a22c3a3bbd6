"""Valid arguments for each tool: pinned by the user (a JSON file, ``{"tool": {...}}``), or
generated from the tool's JSON input schema.

Generation aims at one small, plausible, valid argument set per tool, the same on every
run: only the required properties; per value its ``const``, a valid ``default`` or
``examples`` entry, its first ``enum`` value, a plain value of its type ("leakcheck", 1,
false, the smallest array) or a sample of its ``format``; and where constraints remain (a
``pattern``, lengths, bounds), the smallest value ``hypothesis-jsonschema`` finds for
that part of the schema, derandomized. The whole set is then validated against the whole
schema (local ``$ref``s resolved); a schema nothing valid comes out of is said, naming
the tool, never guessed at.

(hypothesis-jsonschema's own object strategy relies on Hypothesis internals that changed
in Hypothesis 6.1xx; objects are composed here, and the library draws the leaves.)
"""

from __future__ import annotations

import copy
import json
import math
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema

from ..findings import cut_whole
from .model import AuditError

__all__ = [
    "INVALID_FIELD",
    "ArgumentError",
    "SchemaProblem",
    "arguments_for",
    "check_input_schema",
    "invalid_input_for",
    "load_pinned",
    "resolve_refs",
]

_MAX_DEPTH = 12

#: a sample per string format, each valid for it
_FORMAT_SAMPLES = {
    "date-time": "2026-01-01T00:00:00Z",
    "date": "2026-01-01",
    "time": "00:00:00Z",
    "email": "audit@example.com",
    "idn-email": "audit@example.com",
    "hostname": "example.com",
    "idn-hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "uri": "https://example.com/leakcheck",
    "uri-reference": "https://example.com/leakcheck",
    "iri": "https://example.com/leakcheck",
    "url": "https://example.com/leakcheck",
    "uuid": "00000000-0000-4000-8000-000000000001",
    "duration": "P1D",
    "regex": "leakcheck",
    "json-pointer": "/leakcheck",
}


#: the field an invalid input adds when no property can be made invalid by its type but the
#: schema refuses other properties
INVALID_FIELD = "leakcheck_unknown_field"


def invalid_input_for(schema: Mapping[str, Any]) -> dict[str, Any] | None:
    """The fields that make a valid argument set invalid, as templates naming the
    ``bearer`` canary (the agent pasted the token where it does not belong), or None when
    the schema takes any string anywhere: the first property (required ones first) whose
    type, enum, pattern or format a token breaks; else, when the schema refuses other
    properties, an unknown one holding the token."""
    resolved = resolve_refs(schema)
    properties = resolved.get("properties") if isinstance(resolved, Mapping) else None
    properties = properties if isinstance(properties, Mapping) else {}
    required = resolved.get("required") if isinstance(resolved.get("required"), list) else []
    order = [n for n in required if n in properties] + [n for n in properties if n not in required]
    for name in order:
        prop = properties[name]
        if isinstance(prop, Mapping) and not _valid(prop, "leakcheck-invalid {bearer}"):
            return {str(name): "{bearer}"}
    if isinstance(resolved, Mapping) and resolved.get("additionalProperties") is False:
        return {INVALID_FIELD: "{bearer}"}
    return None


class ArgumentError(ValueError):
    """No valid argument set could be made from a schema (the message says why)."""


class SchemaProblem(AuditError):
    """A tool's input schema is not a valid JSON Schema (or not an object schema)."""


def load_pinned(path: str | Path) -> dict[str, dict[str, Any]]:
    """``{tool name: arguments}`` from a JSON file; a mistake in it is one clear error."""
    where = Path(path)
    try:
        text = where.read_text(encoding="utf-8")
    except OSError as exc:
        raise AuditError(f"--arguments {where}: cannot read it ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise AuditError(f"--arguments {where}: not UTF-8 text") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise AuditError(
            f"--arguments {where}: not JSON (line {getattr(exc, 'lineno', '?')}: "
            f"{getattr(exc, 'msg', 'invalid')})"
        ) from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise AuditError(
            f"--arguments {where}: a JSON object mapping each tool name to its arguments "
            'object, such as {"get_issue": {"issue_key": "PROJ-1"}}'
        )
    return {str(name): dict(args) for name, args in data.items()}


def resolve_refs(schema: Any, root: Any = None, depth: int = 0) -> Any:
    """``schema`` with every local ``$ref`` (``#/$defs/...``, ``#/definitions/...``)
    replaced by what it names; a recursive one stops at a depth (as ``{}``)."""
    root = schema if root is None else root
    if depth > _MAX_DEPTH:
        return {}
    if isinstance(schema, list):
        return [resolve_refs(item, root, depth + 1) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = _pointer(root, ref)
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        merged = {**target, **rest} if isinstance(target, Mapping) else target
        return resolve_refs(merged, root, depth + 1)
    return {
        key: (value if key in ("$defs", "definitions") else resolve_refs(value, root, depth + 1))
        for key, value in schema.items()
    }


def _pointer(root: Any, ref: str) -> Any:
    if not ref.startswith("#"):
        raise ArgumentError(f"a $ref outside the schema ({ref[:60]!r}) is not followed")
    node = root
    for part in ref[1:].lstrip("/").split("/") if ref != "#" else []:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise ArgumentError(f"$ref {ref[:60]!r} names nothing in the schema")
    return node


def check_input_schema(tool: str, schema: Any) -> None:
    """Raise ``SchemaProblem`` (one line) when ``schema`` is not a valid JSON Schema for
    a tool's arguments: not an object, not a schema of its draft, not of type object."""
    if not isinstance(schema, Mapping):
        raise SchemaProblem(
            f"tool {tool}: its input schema is {type(schema).__name__}, not a JSON object"
        )
    try:
        validator = _validator_class(schema)
        validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.path) or "the root"
        raise SchemaProblem(
            f"tool {tool}: its input schema is not a valid JSON Schema (at {where}: "
            f"{cut_whole(exc.message.splitlines()[0], 160)})"
        ) from None
    kind = schema.get("type", "object")
    if kind != "object" and not (isinstance(kind, list) and "object" in kind):
        raise SchemaProblem(
            f"tool {tool}: its input schema has type {kind!r}; MCP tool arguments are an "
            "object (type: object)"
        )


def arguments_for(schema: Mapping[str, Any]) -> dict[str, Any]:
    """One valid, small argument set for ``schema`` (deterministic), or ``ArgumentError``."""
    resolved = resolve_refs(schema)
    validator = _validator(schema)
    value = _value(resolved, 0)
    if not isinstance(value, dict):
        value = {}
    errors = sorted(validator.iter_errors(value), key=lambda e: list(e.path))
    if not errors:
        return value
    whole = _hypothesis_value(resolved)
    if isinstance(whole, dict) and validator.is_valid(whole):
        return whole
    first = errors[0]
    where = "/".join(str(p) for p in first.path) or "the arguments"
    raise ArgumentError(
        f"no valid arguments could be generated (at {where}: "
        f"{cut_whole(first.message.splitlines()[0], 120)}); pin them with --arguments FILE"
    )


def _validator_class(schema: Mapping[str, Any]) -> Any:
    return jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)


def _validator(schema: Mapping[str, Any]) -> Any:
    cls = _validator_class(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _valid(schema: Any, value: Any) -> bool:
    try:
        return bool(_validator(schema).is_valid(value)) if isinstance(schema, Mapping) else True
    except Exception:  # noqa: BLE001 - a schema part the validator cannot read
        return False


def _value(schema: Any, depth: int) -> Any:
    """A small valid value for one (resolved) schema part."""
    if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
        return "leakcheck"
    if "const" in schema:
        return schema["const"]
    for key in ("default", "examples"):
        if key in schema:
            candidates = (
                schema[key]
                if key == "examples" and isinstance(schema[key], list)
                else [schema[key]]
            )
            for candidate in candidates:
                if candidate is not None and _valid(schema, candidate):
                    return candidate
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return next((v for v in enum if v is not None), enum[0])
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            ordered = sorted(
                branches, key=lambda b: isinstance(b, Mapping) and b.get("type") == "null"
            )
            for branch in ordered:
                merged = (
                    {**{k: v for k, v in schema.items() if k != key}, **branch}
                    if isinstance(branch, Mapping)
                    else branch
                )
                candidate = _value(merged, depth + 1)
                if _valid(schema, candidate):
                    return candidate
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), kind[0] if kind else None)
    if kind is None:
        kind = "object" if "properties" in schema else "string"
    plain = _plain(schema, kind, depth)
    if _valid(schema, plain):
        return plain
    drawn = _hypothesis_value(schema)
    return plain if drawn is _NOTHING else drawn


def _is_null(branch: Any) -> bool:
    return isinstance(branch, Mapping) and branch.get("type") == "null"


def _plain(schema: Mapping[str, Any], kind: str, depth: int) -> Any:
    if kind == "object":
        found, listed = schema.get("properties"), schema.get("required")
        properties: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        required: list[Any] = listed if isinstance(listed, list) else []
        return {str(name): _value(properties.get(name, {}), depth + 1) for name in required}
    if kind == "array":
        items = schema.get("items", {})
        count = schema.get("minItems", 0)
        count = count if isinstance(count, int) and 0 <= count <= 16 else 0
        if isinstance(schema.get("prefixItems"), list):
            prefix = [_value(s, depth + 1) for s in schema["prefixItems"]]
            return prefix[: max(count, len(prefix))]
        return [_value(items, depth + 1) for _ in range(count)]
    if kind == "string":
        fmt = schema.get("format")
        if isinstance(fmt, str) and fmt in _FORMAT_SAMPLES:
            return _FORMAT_SAMPLES[fmt]
        return "leakcheck"
    if kind in ("integer", "number"):
        return _number(schema, kind)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return "leakcheck"


def _number(schema: Mapping[str, Any], kind: str) -> int | float:
    """1, or the nearest value the bounds allow (``_valid`` checks it afterwards)."""

    def bound(key: str) -> float | None:
        value = schema.get(key)
        return value if isinstance(value, int | float) and not isinstance(value, bool) else None

    value: float = 1
    low, high = bound("minimum"), bound("maximum")
    above, below = bound("exclusiveMinimum"), bound("exclusiveMaximum")
    if low is not None and value < low:
        value = low
    if above is not None and value <= above:
        value = above + (1 if kind == "integer" else 0.5)
    if high is not None and value > high:
        value = high
    if below is not None and value >= below:
        value = below - (1 if kind == "integer" else 0.5)
    step = bound("multipleOf")
    if step is not None and step > 0:
        value = math.ceil(value / step) * step
    return int(value) if kind == "integer" else value


_NOTHING = object()


def _hypothesis_value(schema: Mapping[str, Any]) -> Any:
    """The smallest value hypothesis-jsonschema finds for ``schema`` (derandomized), or
    ``_NOTHING`` when it finds none (or is not installed). Cached per schema text."""
    try:
        key = json.dumps(schema, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return _draw(schema)
    if key not in _DRAWN:
        _DRAWN[key] = _draw(schema)
    return copy.deepcopy(_DRAWN[key])


_DRAWN: dict[str, Any] = {}


def _draw(schema: Mapping[str, Any]) -> Any:
    try:
        from hypothesis import HealthCheck, Phase, find, settings
        from hypothesis_jsonschema import from_schema
    except ImportError:
        return _NOTHING
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            strategy = from_schema(dict(schema))
            return find(
                strategy,
                lambda _: True,
                settings=settings(
                    database=None,
                    derandomize=True,
                    max_examples=50,
                    deadline=None,
                    phases=(Phase.generate, Phase.shrink),  # not "explain": seconds
                    suppress_health_check=list(HealthCheck),
                ),
            )
    except Exception:  # noqa: BLE001 - an unsatisfiable schema, a library that cannot
        return _NOTHING
