"""Turn an exposed object into the texts an agent would see, with field paths.

A gateway serializes its tool response as JSON; the agent may also see its ``repr``. Both are
produced, and every string leaf is kept with its JSON path so that a finding names the field
(``$.error.detail``). Never raises: dataclasses, pydantic models, exceptions, bytes, cycles
and objects whose ``repr`` raises all have a fallback, and the text of a ``str`` (``bytes``,
``int``...) subclass is read through the base type, whatever its methods say. Each object is
serialized once (a shared sub-object is written at its first path), within a budget.

One module per role: ``json_data`` (walking JSON data, reading a user's JSON file),
``budget`` (what one object may produce), ``text`` (text through the base types),
``reprs`` (``repr`` as leakcheck writes it), ``objects`` (an object as JSON, with each
field's path), ``exceptions`` (an exception's texts); every name importable from
``leakcheck.serialize`` as before.
"""

from __future__ import annotations

from .._lazy import lazy_names

TYPE_CHECKING = False  # not typing's: its import was a twentieth of a scan's start-up
if TYPE_CHECKING:
    from .budget import BUDGET_CHARS, FIELD_BUDGET, INLINE_MAX, TEXT_ATTRIBUTES
    from .exceptions import exception_texts
    from .json_data import map_strings, parse_json, read_json_file
    from .objects import Serialized, leaves, to_jsonable
    from .reprs import ReprWriter
    from .text import (
        bytes_of,
        exception_args,
        exception_message,
        repr_and_str,
        safe_repr,
        safe_str,
        text_of,
        type_name,
    )

__all__ = [
    "map_strings",
    "parse_json",
    "read_json_file",
    "to_jsonable",
    "ReprWriter",
    "Serialized",
    "leaves",
    "safe_repr",
    "safe_str",
    "text_of",
    "bytes_of",
    "type_name",
    "exception_message",
    "exception_texts",
    "exception_args",
    "repr_and_str",
    "TEXT_ATTRIBUTES",
    "INLINE_MAX",
    "BUDGET_CHARS",
    "FIELD_BUDGET",
]

#: name -> the submodule that defines it, imported on first use: ``leakcheck scan`` needs
#: ``json_data`` only, and the others cost it traceback, textwrap and a few ms of start-up
_LAZY = {
    **dict.fromkeys(("BUDGET_CHARS", "FIELD_BUDGET", "INLINE_MAX", "TEXT_ATTRIBUTES"), "budget"),
    "exception_texts": "exceptions",
    **dict.fromkeys(("map_strings", "parse_json", "read_json_file"), "json_data"),
    **dict.fromkeys(("Serialized", "leaves", "to_jsonable"), "objects"),
    "ReprWriter": "reprs",
    **dict.fromkeys(
        (
            "bytes_of",
            "exception_args",
            "exception_message",
            "repr_and_str",
            "safe_repr",
            "safe_str",
            "text_of",
            "type_name",
        ),
        "text",
    ),
}


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
