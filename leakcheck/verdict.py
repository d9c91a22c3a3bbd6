"""Judge captured texts: every hit located by sink and field, allowed or forbidden by policy."""

from __future__ import annotations

import bisect
import io
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from .capture import Captured
from .detect import JOIN_SEPARATOR, Scanner
from .findings import Finding
from .policy import Policy, SinkClass

__all__ = ["Leak", "NotInspected", "Verdict", "judge", "format_leaks", "STREAM_FROM"]

#: A captured text this long (characters or bytes) or longer is searched on its own, in
#: chunks of ``detect.CHUNK_BYTES``: never joined with the others, never encoded whole.
STREAM_FROM = 1 << 20


@dataclass(frozen=True)
class Leak:
    """A secret seen in a sink. ``allowed`` leaks (sensitive context in an operator log, by
    default) are listed in the report but do not fail the test."""

    finding: Finding
    sink: str
    sink_class: SinkClass
    path: str
    allowed: bool
    note: str = ""

    @property
    def where(self) -> str:
        return f"{self.sink} {self.path}"

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        data["sink_class"] = self.sink_class.value
        return data


@dataclass(frozen=True)
class NotInspected:
    """A part of a sink leakcheck could not inspect (a generator it must not consume, an
    object whose repr names only its type, what lay beyond the budget): not searched, so
    never taken as clean. Listed in the report; it does not fail the test."""

    sink: str
    sink_class: SinkClass
    path: str
    what: str  # "generator: an iterator: its items are not read (...)"

    @property
    def where(self) -> str:
        return f"{self.sink} {self.path}"

    def to_dict(self) -> dict[str, object]:
        return {
            "sink": self.sink,
            "sink_class": self.sink_class.value,
            "path": self.path,
            "what": self.what,
        }


class Verdict(list[Leak]):
    """The leaks ``judge`` found (a list), and ``not_inspected``: what it could not look
    at."""

    not_inspected: list[NotInspected]

    def __init__(self, leaks: Iterable[Leak] = (), not_inspected: Iterable[NotInspected] = ()):
        super().__init__(leaks)
        self.not_inspected = list(not_inspected)


def _encoded(text: str | bytes) -> bytes:
    if type(text) is bytes:
        return text
    return str.encode(text, "utf-8", "surrogatepass")  # type: ignore[arg-type]  # a str: Captured's


def _suspects(scanner: Scanner, items: list[Captured]) -> set[int]:
    """Indexes of the items that hold a hit, from one search over all of them joined: a
    test captures dozens of small texts, and most hold nothing."""
    texts = [_encoded(item.text) for item in items]
    starts, position = [], 0
    for text in texts:
        starts.append(position)
        position += len(text) + len(JOIN_SEPARATOR)
    return {
        bisect.bisect_right(starts, start) - 1
        for start in scanner.hit_starts(JOIN_SEPARATOR.join(texts))
    }


class _EncodedText(io.RawIOBase):
    """A ``str`` read as its UTF-8 bytes (surrogates passed through), a slice at a time:
    a long text is searched without a whole copy of it in bytes."""

    _PIECE = 1 << 20  # characters encoded at a time

    def __init__(self, text: str) -> None:
        self._text = text
        self._position = 0
        self._pending = bytearray()

    def readable(self) -> bool:
        return True

    def readinto(  # type: ignore[override]  # io and scan_stream pass a bytearray or memoryview
        self, target: bytearray | memoryview
    ) -> int:
        wanted = len(target)
        while len(self._pending) < wanted and self._position < len(self._text):
            piece = self._text[self._position : self._position + self._PIECE]
            self._position += len(piece)
            self._pending += str.encode(piece, "utf-8", "surrogatepass")
        size = min(wanted, len(self._pending))
        target[:size] = self._pending[:size]
        del self._pending[:size]
        return size


def _scan(scanner: Scanner, item: Captured) -> list[Finding]:
    """Every finding in one item; a long text in chunks (bounded memory, one pass)."""
    text = item.text
    if len(text) < STREAM_FROM:
        return scanner.scan(text, source=item.sink)
    if type(text) is bytes:
        return list(scanner.scan_stream(io.BytesIO(text), source=item.sink))
    stream = _EncodedText(text)  # type: ignore[arg-type]  # a str: Captured's text
    return list(scanner.scan_stream(stream, source=item.sink))  # type: ignore[arg-type]  # raw io


def judge(scanner: Scanner, captured: Iterable[Captured], policy: Policy) -> Verdict:
    """Every hit in ``captured``, located and judged by ``policy``; what could not be
    inspected, in ``not_inspected``. A text of ``STREAM_FROM`` or more is searched on its
    own, in chunks; the others in one joined search first (most hold nothing)."""
    leaks: list[Leak] = []
    pending_fallback: list[tuple[Captured, Finding]] = []
    shown: set[tuple[str, str]] = set()  # (group, secret id) seen at field level
    items = list(captured)
    not_inspected = [
        NotInspected(item.sink, item.sink_class, item.path, item.uninspected)
        for item in items
        if item.uninspected
    ]
    small = [i for i, item in enumerate(items) if len(item.text) < STREAM_FROM]
    suspects = {small[i] for i in _suspects(scanner, [items[i] for i in small])}
    for index, item in enumerate(items):
        if index not in suspects and len(item.text) < STREAM_FROM:
            continue
        for finding in _scan(scanner, item):
            if item.fallback:
                pending_fallback.append((item, finding))
                continue
            if item.group:
                shown.add((item.group, finding.secret_id))
            leaks.append(_leak(item, finding, policy))
    for item, finding in pending_fallback:
        if (item.group, finding.secret_id) not in shown:
            shown.add((item.group, finding.secret_id))
            leaks.append(_leak(item, finding, policy))
    return Verdict(leaks, not_inspected)


def _leak(item: Captured, finding: Finding, policy: Policy) -> Leak:
    return Leak(
        finding=finding,
        sink=item.sink,
        sink_class=item.sink_class,
        path=item.path,
        allowed=policy.allows(finding.secret_class, item.sink_class),
        note=item.note,
    )


def format_leaks(leaks: list[Leak], *, header: str = "") -> str:
    """A failure message a person can act on, grouped per secret; masked evidence only.
    A ``Verdict``'s ``not_inspected`` parts are listed after the leaks."""
    lines = [header] if header else []
    by_secret: dict[str, list[Leak]] = {}
    for leak in leaks:
        by_secret.setdefault(leak.finding.secret_id, []).append(leak)
    for secret_id, group in by_secret.items():
        first = group[0].finding
        lines.append(f"{secret_id} ({first.kind}, {first.secret_class} secret):")
        for leak in group:
            verdict = "allowed" if leak.allowed else "LEAK"
            lines.append(
                f"  [{verdict}] {leak.sink_class.value}: {leak.where}  form {leak.finding.form}"
                f"  line {leak.finding.line}"
            )
            lines.append(f"      {leak.finding.excerpt}")
            if leak.note:
                lines.append(f"      ({leak.note})")
    lines += format_not_inspected(getattr(leaks, "not_inspected", ()))
    return "\n".join(lines)


def format_not_inspected(parts: Iterable[NotInspected]) -> list[str]:
    """``could not inspect`` lines (none when everything was inspected)."""
    parts = list(parts)
    if not parts:
        return []
    lines = [f"could not inspect {len(parts)} part(s) (not searched; not a failure):"]
    lines += [f"  [not inspected] {p.sink_class.value}: {p.where}  {p.what}" for p in parts]
    return lines
