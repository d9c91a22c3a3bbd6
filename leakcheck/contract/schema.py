"""The envelope's JSON Schema, and its errors as fields and rules (never values)."""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Iterable, Mapping
from importlib import resources
from typing import TYPE_CHECKING, Any, cast

from ..serialize import read_json_file
from .vocabulary import Violation

if TYPE_CHECKING:  # pragma: no cover
    from jsonschema.protocols import Validator


# --- schema ------------------------------------------------------------------------------

_SCHEMA_FILE = "agent-error-{version}.json"


def _schema_dir() -> Any:
    return resources.files("leakcheck").joinpath("schemas")


def _known_versions() -> tuple[str, ...]:
    found = []
    for entry in _schema_dir().iterdir():
        match = re.fullmatch(r"agent-error-(v[0-9]+)\.json", entry.name)
        if match:
            found.append(match.group(1))
    return tuple(sorted(found, key=lambda v: int(v[1:])))


#: the schema versions shipped with this release, oldest first
SCHEMA_VERSIONS: tuple[str, ...] = _known_versions()


def load_schema(version: str = "v1") -> dict[str, Any]:
    """The shipped ``agent-error`` schema of ``version`` (a fresh copy: edit it freely)."""
    if version not in SCHEMA_VERSIONS:
        known = ", ".join(SCHEMA_VERSIONS)
        raise ValueError(f"unknown agent-error schema version {version!r}; known versions: {known}")
    text = _schema_dir().joinpath(_SCHEMA_FILE.format(version=version)).read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


#: the default envelope schema (``agent-error`` v1)
DEFAULT_SCHEMA: dict[str, Any] = load_schema("v1")
# validation uses a private copy: a caller editing DEFAULT_SCHEMA must not change the contract
_PRISTINE_DEFAULT = copy.deepcopy(DEFAULT_SCHEMA)
_default_validator: Validator | None = None

SchemaArg = str | os.PathLike[str] | Mapping[str, Any] | None


def _jsonschema() -> Any:
    try:
        import jsonschema
    except ImportError:  # pragma: no cover - jsonschema is in the dev extra
        raise ImportError(
            "leakcheck.contract needs the 'jsonschema' package to validate envelopes "
            "(pip install 'jsonschema>=4.20')"
        ) from None
    return jsonschema


def schema_validator(schema: SchemaArg) -> tuple[Validator, Mapping[str, Any]]:
    global _default_validator
    jsonschema = _jsonschema()
    if schema is None:
        if _default_validator is None:
            _default_validator = jsonschema.Draft202012Validator(_PRISTINE_DEFAULT)
        return _default_validator, _PRISTINE_DEFAULT
    if isinstance(schema, (str, os.PathLike)):
        schema = read_json_file(schema, f"schema file {os.fspath(schema)!r}")
    if not isinstance(schema, Mapping):
        raise ValueError(f"a schema is a JSON object, a path or None, not {type(schema).__name__}")
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ValueError(
            f"not a valid JSON Schema: {pointer(exc.absolute_path) or '/'} breaks the "
            f"metaschema's {exc.validator!r} rule"
        ) from None
    return cls(schema), schema


# --- pointers and messages ----------------------------------------------------------------

_SAFE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def _safe_key(key: str) -> bool:
    """A key short and plain enough to be a field name rather than a value used as a key.
    (A canary used as a key is long or random: it shows as ``*`` instead.)"""
    if not (_SAFE_KEY.fullmatch(key) and len(key) <= 24 and sum(c.isdigit() for c in key) <= 2):
        return False
    from ..findings import without_random_tokens  # (on a failure's path only)

    return without_random_tokens(key) == key  # (a real key's shape: ``sk_`` + random letters)


def declared(schema: Any) -> frozenset[str]:
    """Every property name a schema declares: shown in pointers whatever they look like."""
    names: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            properties = node.get("properties")
            if isinstance(properties, Mapping):
                names.update(k for k in properties if isinstance(k, str))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return frozenset(names)


def pointer(path: Iterable[Any], declared: frozenset[str] = frozenset()) -> str:
    """A JSON pointer; a key that is neither declared nor plainly a name shows as ``*``."""
    parts = []
    for part in path:
        if isinstance(part, int):
            parts.append(str(part))
        elif isinstance(part, str) and (part in declared or _safe_key(part)):
            parts.append(part.replace("~", "~0").replace("/", "~1"))
        else:
            parts.append("*")
    return "".join("/" + p for p in parts)


def _constraint(keyword: str, value: Any) -> str:
    """The rule a schema keyword states, in words, from the schema's side only."""
    if keyword == "type":
        types = [value] if isinstance(value, str) else list(value)
        return "must be of type " + " or ".join(types)
    if keyword == "const":
        return f"must be {json.dumps(value)}"
    if keyword == "enum":
        return "must be one of: " + ", ".join(json.dumps(v) for v in value)
    templates = {
        "maxLength": "must be at most {} characters long",
        "minLength": "must be at least {} characters long",
        "pattern": "must match the pattern {}",
        "minimum": "must be >= {}",
        "maximum": "must be <= {}",
        "exclusiveMinimum": "must be > {}",
        "exclusiveMaximum": "must be < {}",
        "multipleOf": "must be a multiple of {}",
        "minItems": "must hold at least {} items",
        "maxItems": "must hold at most {} items",
        "minProperties": "must hold at least {} properties",
        "maxProperties": "must hold at most {} properties",
        "format": "must be a valid {}",
    }
    if keyword in templates:
        return templates[keyword].format(value)
    if keyword == "uniqueItems":
        return "must not repeat an item"
    return f"breaks the schema's {keyword!r} rule"


def schema_violations(
    validator: Validator, declared: frozenset[str], instance: Any
) -> tuple[list[Violation], set[str]]:
    """Violations of the schema, and the top-level fields they concern (semantic rules on
    those fields are skipped: one broken field, one report)."""
    found: list[Violation] = []
    bad: set[str] = set()
    errors = sorted(
        validator.iter_errors(instance),
        key=lambda e: ([str(p) for p in e.absolute_path], str(e.validator)),
    )
    for error in errors:
        keyword = str(error.validator)
        path = list(error.absolute_path)
        rule = f"schema.{keyword}"
        if path and isinstance(path[0], str):
            bad.add(path[0])
        where = error.instance
        if keyword == "required" and isinstance(where, Mapping):
            # the stubs allow Unset, which no error of iter_errors has
            for name in cast("list[str]", error.validator_value):
                if name not in where:
                    if not path:
                        bad.add(name)
                    found.append(Violation(rule, pointer([*path, name], declared), "is required"))
        elif keyword in ("additionalProperties", "unevaluatedProperties") and isinstance(
            where, Mapping
        ):
            schema = cast("Mapping[str, Any]", error.schema)  # the object with the keyword
            properties = schema.get("properties", {})  # the object's own, not all
            patterns = list(schema.get("patternProperties", {}))
            for key in where:
                if key in properties or any(re.search(p, str(key)) for p in patterns):
                    continue
                if keyword == "additionalProperties" and error.validator_value is not False:
                    continue  # a sub-schema for extras: its own errors carry the path
                shown = pointer([*path, key], declared)
                found.append(
                    Violation(rule, shown, "is not a field of the schema (unknown fields fail)")
                )
        else:
            found.append(
                Violation(
                    rule, pointer(path, declared), _constraint(keyword, error.validator_value)
                )
            )
    unique = list(dict.fromkeys(found))
    return unique, bad
