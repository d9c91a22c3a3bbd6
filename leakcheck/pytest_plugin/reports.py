"""What leakcheck does to pytest's reports: masks every one of them, in place, and marks one
failed. Every route by which a report reaches an output (the terminal, JUnit, xdist's
controller, the JSON report) passes through here.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import types
from pathlib import Path
from typing import Any, cast

import pytest

from ..errors import LeakcheckUsageError
from ..serialize import safe_repr, safe_str

__all__ = [
    "fail_report",
    "leakcheck_file",
    "mask_added_attributes",
    "mask_fields",
    "mask_junit",
    "mask_report",
    "mask_report_again",
    "mask_subtest_context",
    "mask_test_ids",
    "mask_warning",
    "shown_at_the_caller",
]


def fail_report(report: pytest.TestReport, lead: str = "", tail: str = "") -> None:
    """Mark ``report`` failed: ``lead`` before what it already said (if it failed), ``tail``
    after. A failure even in an xfail test: pytest counts a report that carries
    ``wasxfail`` as xfailed/xpassed, never as failed."""
    original = report.longreprtext if report.failed else ""
    report.outcome = "failed"
    report.longrepr = "\n\n".join(part for part in (lead, original, tail) if part)
    if hasattr(report, "wasxfail"):
        del report.wasxfail


def shown_at_the_caller(config: pytest.Config, call: pytest.CallInfo[Any]) -> None:
    """A leakcheck usage error (``LeakcheckUsageError``: an unknown stage, a misspelt
    option, a weak secret) is shown at the line that called leakcheck: its message says
    what to change, our frames' source says nothing more, and pytest prints each frame's
    arguments (a refused secret's value among them). ``--full-trace`` keeps them."""
    excinfo = call.excinfo
    if excinfo is None or not excinfo.errisinstance(LeakcheckUsageError):
        return
    if config.getoption("fulltrace", False):
        return
    frames: list[types.TracebackType] = []
    raw: types.TracebackType | None = excinfo.tb
    while raw is not None:
        frames.append(raw)
        raw = raw.tb_next
    kept = [tb for tb in frames if not leakcheck_file(tb.tb_frame.f_code.co_filename)]
    if not kept or len(kept) == len(frames):  # (a mistake inside leakcheck alone: as it is)
        return
    # a chain of the caller's frames alone: pytest cuts a traceback at the test's frame
    # by the raw chain from there, so the frames must be gone from the chain itself
    trimmed: types.TracebackType | None = None
    for tb in reversed(kept):
        trimmed = types.TracebackType(trimmed, tb.tb_frame, tb.tb_lasti, tb.tb_lineno)
    assert trimmed is not None  # (kept is not empty)
    call.excinfo = pytest.ExceptionInfo.from_exc_info((excinfo.type, excinfo.value, trimmed))


def leakcheck_file(path: str) -> bool:
    """Whether ``path`` (a code object's file) is one of leakcheck's own modules."""
    return path.startswith(_our_roots())


@functools.cache
def _our_roots() -> tuple[str, ...]:
    """The directories of leakcheck's modules, each ending in a separator: the package
    and its ``plugins`` (a directory of its own in a source checkout)."""
    import leakcheck.plugins

    roots = [Path(leakcheck.__file__ or "").parent, *map(Path, leakcheck.plugins.__path__)]
    # (as the code objects name them, and resolved: a checkout reached through a link)
    return tuple(
        {os.path.join(spelt, ""): None for root in roots for spelt in (root, root.resolve())}
    )


def mask_test_ids(items: list[pytest.Item], mask: Any) -> None:
    """Each test id with every session secret in it masked (a parametrize value), before
    any report, the terminal, JUnit, pytest's cache or the JSON report shows it; kept
    unique."""
    seen: set[str] = set()
    for item in items:
        masked = mask(item.nodeid)
        if masked != item.nodeid:
            unique, n = masked, 1
            while unique in seen:
                n += 1
                unique = f"{masked}#{n}"
            _rename(item, unique, mask)
        seen.add(item.nodeid)


def _rename(item: pytest.Item, nodeid: str, mask: Any) -> None:
    """Give ``item`` the id ``nodeid``, its name and location masked the same way."""
    if isinstance(getattr(item, "_nodeid", None), str):  # pytest < 9
        item._nodeid = nodeid  # type: ignore[attr-defined, unused-ignore]  # pytest < 9 has it
    else:  # pytest 9: a structured NodeId
        item._id = type(item._id).parse(nodeid)  # type: ignore[attr-defined, unused-ignore]  # 9+
    item.name = mask(item.name)
    path, line, domain = item.location  # a cached property: replaced as it is kept
    item.__dict__["location"] = (path, line, mask(domain))
    # Its keywords hold its name and its parameters' id as they were: every report copies
    # them (``report.keywords``), and the report log and pytest-json-report write them.
    own = getattr(item.keywords, "_markers", None)
    if isinstance(own, dict):
        renamed = {mask(key) if isinstance(key, str) else key: value for key, value in own.items()}
        own.clear()
        own.update(renamed)


def _named_after_a_secret(message: Any, mask: Any) -> bool:
    """Whether the class of ``message``'s warning or its category shows a secret."""
    for cls in (message.category, type(message.message)):
        if isinstance(cls, type):
            name = f"{getattr(cls, '__module__', '')}.{getattr(cls, '__qualname__', '')}"
            if mask(name) != name:
                return True
    return False


def mask_warning(message: Any, mask: Any) -> None:
    """``warnings.WarningMessage`` ``message`` masked in place: the text pytest prints
    (message and the source line it shows) and what xdist sends to the controller."""
    try:
        text = str(message.message)
    except Exception:  # noqa: BLE001 - a warning whose __str__ raises prints nothing of it
        text = f"<{type(message.message).__name__}: str() raised>"
    masked = mask(text)
    if _named_after_a_secret(message, mask):
        # a category made at run time and named after a token: pytest prints its name, and
        # xdist sends it to a controller that cannot import it (an INTERNALERROR quoting the
        # name: found writing a test of the warning sink)
        message.category = UserWarning
        message.message = UserWarning(masked)
    elif masked != text:
        category = message.category if isinstance(message.category, type) else UserWarning
        try:
            replacement: Any = category(masked)
            rebuilt = str(replacement) == masked
        except Exception:  # noqa: BLE001 - a warning class with its own signature
            rebuilt = False
        message.message = replacement if rebuilt else masked
    line = message.line
    if line is None and isinstance(message.filename, str) and isinstance(message.lineno, int):
        import linecache

        line = linecache.getline(message.filename, message.lineno)  # what pytest would show
    if isinstance(line, str) and mask(line) != line:
        message.line = mask(line)
    for name in ("filename", "source"):
        value = getattr(message, name, None)
        if isinstance(value, str):
            setattr(message, name, mask(value))
        elif value is not None and name == "source":
            message.source = None  # an object whose allocation trace pytest would print


def mask_junit(xml: Any, mask: Any) -> None:
    """Every test case junitxml is about to write (attributes, properties, failure texts,
    captured output) and the suite's properties, masked."""
    xml.global_properties = [(mask(str(k)), mask(str(v))) for k, v in xml.global_properties]
    for reporter in getattr(xml, "node_reporters_ordered", []):
        if "attrs" not in vars(reporter):  # finalized: it keeps only its element
            _mask_element(reporter.to_xml(), mask)
            continue
        reporter.attrs = {mask(str(k)): mask(str(v)) for k, v in reporter.attrs.items()}
        reporter.properties = [(mask(str(k)), mask(str(v))) for k, v in reporter.properties]
        for node in reporter.nodes:
            _mask_element(node, mask)


def _mask_element(root: Any, mask: Any) -> None:
    for element in root.iter():
        if element.text:
            element.text = mask(element.text)
        if element.tail:
            element.tail = mask(element.tail)
        for key, value in list(element.attrib.items()):
            masked_key = mask(key)
            if masked_key != key:
                del element.attrib[key]
            element.attrib[masked_key] = mask(value)


def mask_report(report: pytest.TestReport | pytest.CollectReport, mask: Any) -> None:
    """No route to pytest's output may carry a secret: failure text, locals, sections,
    skip and xfail reasons, ``record_property`` values (JUnit properties). Its parts as
    masked are kept for ``mask_report_again``."""
    _mask_report(report, mask)
    _MASKED[id(report)] = (report, _parts(report))


def mask_report_again(report: pytest.TestReport | pytest.CollectReport, mask: Any) -> None:
    """``mask_report`` where a part of ``report`` is not the object it masked (a hook
    wrapper outside ours appended a section or replaced the failure text), or where it
    was never masked; what was kept of it is dropped (it is being logged: its last use)."""
    entry = _MASKED.pop(id(report), None)
    if entry is not None and entry[0] is report:
        kept, now = entry[1], _parts(report)
        if len(now) == len(kept) and all(a is b for a, b in zip(now, kept, strict=True)):
            return
    mask_report(report, mask)  # (by its name: a test switches it off to see it is needed)
    _MASKED.pop(id(report), None)


def forget_masked(report: Any) -> None:
    """Drop what ``mask_report`` kept of ``report`` (one that is never logged)."""
    entry = _MASKED.get(id(report))
    if entry is not None and entry[0] is report:
        del _MASKED[id(report)]


#: Each report ``mask_report`` masked and not yet logged, with its parts as it left them
#: (``_parts``), by ``id`` (a subtest's report cannot be a key; a weak dictionary's look-up
#: cost more than the masking it saved)
_MASKED: dict[int, tuple[Any, tuple[object, ...]]] = {}


def _parts(report: Any) -> tuple[object, ...]:
    properties = getattr(report, "user_properties", None) or ()
    return (report.longrepr, getattr(report, "wasxfail", None), *report.sections, *properties)


def _mask_report(report: pytest.TestReport | pytest.CollectReport, mask: Any) -> None:
    properties = getattr(report, "user_properties", None)
    if (
        report.longrepr is None
        and not report.sections
        and not properties
        and not hasattr(report, "wasxfail")
    ):
        return
    if isinstance(report.longrepr, tuple):
        # A skip: (path, lineno, reason); pytest's terminal and JUnit writers need the tuple.
        report.longrepr = cast(
            "tuple[str, int, str]",
            tuple(mask(part) if isinstance(part, str) else part for part in report.longrepr),
        )
    elif report.longrepr is not None:
        text = report.longreprtext
        masked = mask(text)
        if masked != text:
            # masked where it lies, so that pytest lays it out as ever (indentation, the
            # crash line of the short summary); as one text if a piece still shows
            if isinstance(report.longrepr, str) or not mask_fields(report.longrepr, mask):
                report.longrepr = masked
            else:
                shown = report.longreprtext
                if mask(shown) != shown:
                    report.longrepr = masked
    wasxfail = getattr(report, "wasxfail", None)
    if isinstance(wasxfail, str):
        report.wasxfail = mask(wasxfail)  # type: ignore[union-attr]  # it has one: getattr above
    report.sections = [(title, mask(content)) for title, content in report.sections]
    if properties:
        report.user_properties = [  # type: ignore[union-attr]  # it has them: getattr above
            (_mask_value(name, mask), _mask_value(value, mask)) for name, value in properties
        ]


#: A report's own attributes (pytest's, and those ``mask_report`` masks); any other was set
#: by a plugin or a conftest (pytest-html's ``extras``, a hook's ``report.response``), and
#: pytest's report log, xdist and pytest-html write it as it is.
_REPORT_OWN_ATTRIBUTES = frozenset(
    {
        "nodeid",
        "location",
        "keywords",
        "outcome",
        "longrepr",
        "when",
        "user_properties",
        "sections",
        "duration",
        "start",
        "stop",
        "wasxfail",
        "result",
        "context",
        "_id",  # (pytest 9's node id object: test ids are masked as such, mask_test_ids)
    }
)


def mask_added_attributes(report: pytest.TestReport, mask: Any) -> None:
    """Mask, in place, the strings of every attribute a plugin or a conftest added to
    ``report`` (those of JSON data, in lists, tuples and dicts, keys too): pytest-html
    writes its ``extras`` (a text, a URL, a base64 image the test attached) into the
    HTML report, and ``--report-log`` and xdist every attribute of a report, all as they
    are. An object that is not such data is left as it is unless its ``str`` or ``repr``
    shows a secret: the report log writes the ``str`` of what JSON cannot hold (a hook's
    ``report.exception = call.excinfo.value``), so such an object is replaced by its
    masked ``str``."""
    for name in report.__dict__.keys() - _REPORT_OWN_ATTRIBUTES:
        value = report.__dict__[name]
        masked = _masked_data(value, mask)
        if masked is not value:
            setattr(report, name, masked)


def mask_dict_in_place(data: dict[Any, Any], mask: Any) -> None:
    """Every string of ``data`` (JSON data: keys too) masked, the dict itself kept (others
    hold it: pytest-metadata's table is handed to an xdist controller as it is)."""
    masked = _masked_data(data, mask)
    if masked is not data:
        data.clear()
        data.update(masked)


def _masked_data(value: Any, mask: Any) -> Any:
    """``value`` with every string of it masked; ``value`` itself when none changed (an
    object that is not JSON data: itself, or its masked text when that shows a secret).
    (Not ``masking.mask_strings``: that walks JSON data alone, and the report log writes
    the ``str`` of a container that holds an object, the object's ``repr`` in it.)"""
    if isinstance(value, str):
        masked = mask(value)
        return value if masked == value else masked
    if isinstance(value, (list, tuple)):
        items = [_masked_data(item, mask) for item in value]
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, dict):
        pairs = [(_masked_data(k, mask), _masked_data(v, mask)) for k, v in value.items()]
        if all(
            k is old_k and v is old_v
            for (k, v), (old_k, old_v) in zip(pairs, value.items(), strict=True)
        ):
            return value
        return dict(pairs)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    text = safe_str(value)
    masked = mask(text)
    if masked != text:
        return masked
    shown = safe_repr(value)
    masked = mask(shown)
    return value if masked == shown else masked


def mask_subtest_context(context: Any, mask: Any) -> None:
    """A subtest's ``msg`` and keyword arguments (the ``repr`` strings pytest keeps of
    them) masked in place: its report head shows them. (The context is frozen: it is set
    as pytest's own ``__post_init__`` sets it, its values strings already.)"""
    msg = getattr(context, "msg", None)
    if isinstance(msg, str) and mask(msg) != msg:
        object.__setattr__(context, "msg", mask(msg))
    kwargs = getattr(context, "kwargs", None)
    if isinstance(kwargs, dict):
        masked = {mask(str(key)): _mask_value(value, mask) for key, value in kwargs.items()}
        if masked != kwargs:
            object.__setattr__(context, "kwargs", masked)


def mask_fields(obj: object, mask: Any) -> bool:
    """Mask, in place, every string of pytest's failure representation ``obj`` (its
    dataclasses: entries, lines, locals, arguments, crash location, sections); False when
    it is not made of them."""
    if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
        return False
    for item in dataclasses.fields(obj):
        setattr(obj, item.name, _masked_field(getattr(obj, item.name), mask))
    return True


def _masked_field(value: Any, mask: Any) -> Any:
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        # lines: masked together, so that a secret over several of them (a PEM) is found;
        # a native traceback's lines keep their own line ends
        ended = all(line.endswith("\n") for line in value)
        joined = ("" if ended else "\n").join(value)
        masked = mask(joined)
        if masked == joined:
            return value
        if not ended:
            return masked.split("\n")
        return [line + "\n" for line in masked.removesuffix("\n").split("\n")]
    if isinstance(value, (list, tuple)):
        return type(value)(_masked_field(v, mask) for v in value)
    mask_fields(value, mask)
    return value


def _mask_value(value: object, mask: Any) -> object:
    """``value`` itself when it shows no secret and junitxml can print it; else its masked
    text (a ``str`` subclass by its characters, an object whose ``__str__`` raises by its
    safe repr: junitxml calls ``str()`` on what it gets)."""
    text = safe_str(value)
    masked = mask(text)
    if masked != text or (type(value) is not str and isinstance(value, str)):
        return masked
    if type(value) is not str:
        try:
            str(value)
        except Exception:  # noqa: BLE001 - an app's object: junitxml would crash on it
            return text
    return value
