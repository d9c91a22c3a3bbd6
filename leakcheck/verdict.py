"""Judge captured texts: every hit located by sink and field, allowed or forbidden by policy."""

from __future__ import annotations

import bisect
import io
import re
from array import array
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace

from .canaries import Secret
from .capture import Captured
from .detect import JOIN_SEPARATOR, Scanner
from .engine import KEY_CODE, KeptKeys, KeySet
from .findings import Finding
from .forms import PIECES, needle_material
from .policy import Policy, SinkClass

TYPE_CHECKING = False
if TYPE_CHECKING:  # (typing is not imported at run time: a scan's start-up)
    from typing import Protocol

    class AbsenceIndex(Protocol):
        """Tells, without a scanner, that texts hold no needle of some secrets (True),
        or cannot tell (False): ``masking.SessionMasker``."""

        def proves_absent(self, secrets: Iterable[Secret], texts: Iterable[bytes]) -> bool: ...

    from .masking import SessionMasker


__all__ = [
    "Leak",
    "NotInspected",
    "Verdict",
    "judge",
    "format_leaks",
    "leaks_header",
    "form_family",
    "root_causes",
    "sink_label",
    "STREAM_FROM",
    "clean_verdict",
    "proven_clean",
    "lookup_texts",
    "earlier_leaks",
]

#: A captured text this long (characters or bytes) or longer is searched on its own, in
#: chunks of ``detect.CHUNK_BYTES``: never joined with the others, never encoded whole.
STREAM_FROM = 1 << 20
#: A captured text this long or longer is triaged on its own, not in the joined search (see
#: ``_suspects``).
APART_FROM = 1024
#: The 4-byte keys of the texts triaged apart are kept for the tests that capture them
#: again (see ``_clean_by_keys``): up to this many texts, of their layers' bytes and keys.
_KEPT = KeptKeys(texts=64, layer_bytes=4 * 1024 * 1024, keys=200_000)
#: A text longer than this is searched, never shown clean by keys: its layers would cost
#: as much to make as the search (its decoding is not kept: ``decode._CACHED_TEXT_BYTES``)
#: and, kept, would crowd out the texts that come again.
_PROVEN_UP_TO = 64 * 1024


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
    at. ``left_out``: how many texts holding hits were not searched again for their
    findings (``judge(..., allowed_details=False)``): every finding they hold is allowed."""

    not_inspected: list[NotInspected]
    left_out: int

    def __init__(
        self,
        leaks: Iterable[Leak] = (),
        not_inspected: Iterable[NotInspected] = (),
        left_out: int = 0,
    ):
        super().__init__(leaks)
        self.not_inspected = list(not_inspected)
        self.left_out = left_out


def _encoded(text: str | bytes) -> bytes:
    if type(text) is bytes:
        return text
    return str.encode(text, "utf-8", "surrogatepass")  # type: ignore[arg-type]  # a str: Captured's


def _suspects(scanner: Scanner, items: list[Captured]) -> set[int]:
    """Indexes of the items that hold a hit. A test captures dozens of small texts, and
    most hold nothing: those are searched in one joined search. A text of ``APART_FROM``
    bytes or more is searched on its own: the decoding pass keeps the runs of each text it
    has decoded (``decode.decode_runs``), and a long text is usually one seen in test after
    test (a recorded span's ``exception.stacktrace``, a traceback), while the joined text
    holds this test's ids and secrets and is decoded afresh every time. Measured on the
    example MCP suite (issue 13): a 5.9 KB stacktrace among 9.5 KB of texts, 4.4 ms a test
    joined, 2.5 ms apart. The findings are the same either way: each suspect is searched
    again on its own, and only what it holds alone is reported.

    A long text captured again (the same bytes in a later test) is not searched at all
    when its kept layers show none of this scanner's needles (``_clean_by_keys``): the
    stacktrace above, 0.4 to 0.6 ms a test of the MCP suite."""
    texts = [_encoded(item.text) for item in items]
    found: set[int] = set()
    joined: list[int] = []
    needles: _Needles | None = None
    for index, text in enumerate(texts):
        if len(text) < APART_FROM:
            joined.append(index)
            continue
        if needles is None:
            needles = _Needles(scanner)
        if _clean_by_keys(scanner, text, needles):
            continue
        needles = None  # (a search may make needles put off: those needles then)
        if scanner.hit_starts(text):
            found.add(index)
    if not joined:
        return found
    starts, position = [], 0
    for index in joined:
        starts.append(position)
        position += len(texts[index]) + len(JOIN_SEPARATOR)
    buf = JOIN_SEPARATOR.join([texts[index] for index in joined])
    found.update(
        joined[bisect.bisect_right(starts, start) - 1] for start in scanner.hit_starts(buf)
    )
    return found


class _Needles:
    """Needles, with the first four bytes of each as an int: by default the needles a
    scanner has made so far and the anchor runs of those it puts off
    (``Scanner.needles_so_far``)."""

    __slots__ = ("needles", "heads", "head_set")

    def __init__(self, scanner: Scanner | None, needles: list[bytes] | None = None) -> None:
        if needles is None:
            assert scanner is not None
            needles = scanner.needles_so_far()
        self.needles = needles
        if not KEY_CODE or min(map(len, self.needles), default=0) < 4:
            self.heads = array(KEY_CODE or "I")  # a needle shorter than a key: no proof
            self.head_set: frozenset[int] = frozenset()
            return
        self.heads = array(KEY_CODE, b"".join([n[:4] for n in self.needles]))
        self.head_set = frozenset(self.heads)

    def none_in(self, layers: tuple[bytes, ...], keys: KeySet) -> bool:
        """Whether no needle occurs in any of ``layers`` (``keys``: their 4-byte
        substrings): those whose head is among the keys are looked for in full."""
        if not self.head_set:
            return False
        if keys.keys().isdisjoint(self.head_set):  # (the smaller side iterated)
            return True
        for needle, head in zip(self.needles, self.heads, strict=True):
            if head in keys and any(needle in layer for layer in layers):
                return False
        return True


def _layers(scanner: Scanner, text: bytes) -> tuple[tuple[bytes, ...], KeySet] | None:
    """``text`` and each layer the scanner's decoding pass searches in it
    (``Scanner.layers``), and every 4-byte substring of them as an int; kept for the next
    test that captures the same text. None where the scanner cannot tell its layers."""
    key = (text, scanner.layering)
    kept = _KEPT.get(key)
    if kept is not None:
        return kept
    layers = scanner.layers(text)
    return None if layers is None else _KEPT.keyed(key, layers)


def _clean_by_keys(scanner: Scanner, text: bytes, needles: _Needles) -> bool:
    """Whether ``text`` holds no hit of ``scanner``, told without searching it: no needle
    occurs in it nor in any layer its decoding pass searches. Only for a scanner that
    decodes every run (not keyed: one that has searched a text of ``KEYED_FROM_BYTES``
    decodes around keys), and a text of at most ``_PROVEN_UP_TO`` bytes."""
    if len(text) > _PROVEN_UP_TO or not scanner.decodes_whole_texts:
        return False
    found = _layers(scanner, text)
    return found is not None and needles.none_in(*found)


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


def judge(
    scanner: Scanner,
    captured: Iterable[Captured],
    policy: Policy,
    *,
    allowed_details: bool = True,
) -> Verdict:
    """Every hit in ``captured``, located and judged by ``policy``; what could not be
    inspected, in ``not_inspected``. A text of ``STREAM_FROM`` or more is searched on its
    own, in chunks; the others in one joined search first (most hold nothing).

    ``allowed_details=False``: the texts of a group (an object, a log record) that holds
    hits but in which ``policy`` allows every secret of ``scanner`` are not searched again
    for their findings (their excerpts): none of them could be forbidden, and the
    fallback rule acts within a group only. They are counted in ``left_out``, and the
    leaks are the others. For a caller that shows allowed findings only beside a
    forbidden one (the pytest plugin without a JSON report): it judges again in full
    then."""
    leaks: list[Leak] = []
    pending_fallback: list[tuple[Captured, Finding]] = []
    shown: set[tuple[str, str]] = set()  # (group, secret id) seen at field level
    items = list(captured)
    not_inspected = _not_inspected(items)
    small = [i for i, item in enumerate(items) if len(item.text) < STREAM_FROM]
    suspects = {small[i] for i in _suspects(scanner, [items[i] for i in small])}
    suspects.update(i for i, item in enumerate(items) if len(item.text) >= STREAM_FROM)
    left_out = 0 if allowed_details else _allowed_only(scanner, items, suspects, policy)
    for index, item in enumerate(items):
        if index not in suspects:
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
    return Verdict(leaks, not_inspected, left_out)


def _not_inspected(items: Iterable[Captured]) -> list[NotInspected]:
    return [
        NotInspected(item.sink, item.sink_class, item.path, item.uninspected)
        for item in items
        if item.uninspected
    ]


def clean_verdict(captured: Iterable[Captured]) -> Verdict:
    """The verdict on ``captured`` shown to hold no secret (no search made): no leak, and
    what could not be inspected."""
    return Verdict([], _not_inspected(captured), 0)


#: Captured texts up to this many bytes in all may be shown clean by an index
#: (``proven_clean``); more are searched, a long one in chunks.
PROOF_UP_TO = STREAM_FROM


def proven_clean(
    index: AbsenceIndex,
    secrets: list[Secret],
    captured: Iterable[Captured],
    policy: Policy,
    *,
    forbidden_only: bool = False,
    groups: dict[SinkClass, list[bytes]] | None = None,
) -> bool:
    """Whether ``index`` shows that ``captured`` holds none of ``secrets`` (then ``judge``
    would find nothing), or with ``forbidden_only`` none that ``policy`` forbids in each
    text's sink class (then ``judge`` with ``allowed_details=False`` would find nothing:
    every group holding hits would be allowed only, left out). The texts of a sink class
    are looked up together, the short ones joined; False when they are too long.
    ``groups``: ``lookup_texts(captured)``, if made already (a test's verdict looks its
    texts up for earlier tests' secrets first)."""
    items = list(captured)
    if sum(len(item.text) for item in items) >= PROOF_UP_TO:
        return False
    for sink_class, texts in (lookup_texts(items) if groups is None else groups).items():
        wanted = secrets
        if forbidden_only:
            wanted = [s for s in secrets if not policy.allows(s.secret_class, sink_class)]
        if wanted and not index.proves_absent(wanted, texts):
            return False
    return True


def lookup_texts(items: Iterable[Captured]) -> dict[SinkClass, list[bytes]]:
    """The texts of ``items`` as an index looks them up, by sink class: each long one
    alone, the short ones joined (``JOIN_SEPARATOR``: no needle spans it)."""
    by_class: dict[SinkClass, list[Captured]] = {}
    for item in items:
        by_class.setdefault(item.sink_class, []).append(item)
    return {sink_class: _joined(members) for sink_class, members in by_class.items()}


def _joined(items: list[Captured]) -> list[bytes]:
    texts = [_encoded(item.text) for item in items]
    short = [text for text in texts if len(text) < APART_FROM]
    looked_up = [text for text in texts if len(text) >= APART_FROM]
    if short:
        looked_up.append(JOIN_SEPARATOR.join(short))
    return looked_up


def _allowed_only(
    scanner: Scanner, items: list[Captured], suspects: set[int], policy: Policy
) -> int:
    """Take out of ``suspects`` each group's whole set of them when none of them can hold
    a forbidden finding: each secret that ``policy`` forbids in a text's sink class is
    shown absent from it (``_absent``; a text without a group is a group of its own);
    how many were taken out. Measured on the example MCP suite (issue 13): the upstream's
    host name in three DEBUG and INFO texts, searched again for findings nothing
    showed."""
    groups: dict[tuple[str, int], list[int]] = {}
    for index in suspects:
        group = items[index].group
        groups.setdefault((group, -1) if group else ("", index), []).append(index)
    material: dict[int, _Needles] = {}
    taken = 0
    for members in groups.values():
        if all(_only_allowed(scanner, items[i], policy, material) for i in members):
            suspects.difference_update(members)
            taken += len(members)
    return taken


def _only_allowed(
    scanner: Scanner, item: Captured, policy: Policy, material: dict[int, _Needles]
) -> bool:
    """Whether every secret of ``scanner`` that ``policy`` forbids in ``item``'s sink class
    is shown absent from its text (and from each layer of it the decoding pass searches):
    whatever the text holds is allowed."""
    forbidden = [
        (n, secret)
        for n, secret in enumerate(scanner.secrets)
        if not policy.allows(secret.secret_class, item.sink_class)
    ]
    if not forbidden:
        return True
    text = _encoded(item.text)
    if len(text) > _PROVEN_UP_TO or getattr(scanner, "_keyed", True):
        return False
    found = _layers(scanner, text)
    if found is None:
        return False
    for n, secret in forbidden:
        needles = material.get(n)
        if needles is None:
            needles = material[n] = _Needles(None, needle_material(secret, scanner.forms))
        if not needles.none_in(*found):
            return False
    return True


def _leak(item: Captured, finding: Finding, policy: Policy) -> Leak:
    return Leak(
        finding=finding,
        sink=item.sink,
        sink_class=item.sink_class,
        path=item.path,
        allowed=policy.allows(finding.secret_class, item.sink_class),
        note=item.note,
    )


#: An "also in" line names at most this many other places, then says "+N more".
ALSO_IN_SHOWN = 4

#: Most caller-visible first: what the agent (and so the model) sees, then what an
#: operator sees, then what sits unemitted on an object.
_CLASS_RANK = {SinkClass.CALLER: 0, SinkClass.OPERATOR: 1, SinkClass.LATENT: 2}

#: What pytest calls the phases of a test, as a person reads them.
_PHASES = {
    "setup": "during fixture setup",
    "call": "while the test ran",
    "teardown": "during fixture teardown",
}
_LOG_CAPTURE = re.compile(r"pytest log capture \((\w+)\)")
_READ_BY = re.compile(r"read by (cap\w+)")
_CRASH_HOOKS = {
    "sys.excepthook": "uncaught exception (sys.excepthook)",
    "threading.excepthook": "uncaught exception in a thread (threading.excepthook)",
    "sys.unraisablehook": "unraisable exception (sys.unraisablehook)",
}


def sink_label(sink: str, path: str) -> str:
    """Where a text was seen, as the text report names it: ``sink path``, with the names
    that only mean something to a reader of pytest's internals spelled out (``stdout
    call`` is stdout written while the test ran; ``stderr pytest log capture (call)`` the
    log lines pytest captured then). The JSON report keeps ``sink`` and ``path`` as they
    are."""
    if sink in ("stdout", "stderr"):
        if path in _PHASES:
            return f"{sink}, {_PHASES[path]}"
        capture = _LOG_CAPTURE.fullmatch(path)
        if capture and capture[1] in _PHASES:
            return f"log lines pytest captured {_PHASES[capture[1]]}"
        read = _READ_BY.fullmatch(path)
        if read:
            return f"{sink} the test read back itself ({read[1]})"
        if path.startswith("subtest "):  # (pytest's ``subtests``: captured apart)
            return f"{sink} of {path}"
    elif sink == "crash hook" and path in _CRASH_HOOKS:
        return _CRASH_HOOKS[path]
    elif sink == "exception":
        return f"exception that reached the test {path}"
    return f"{sink} {path}"


def form_family(form: str) -> str:
    """The family of a form name: ``whole`` for every spelling of the whole secret (raw,
    percent-encoded, base64, JSON-escaped, ``repr``... and chains of them): one value
    reaches each sink in the encoding that sink writes, so those are one root cause. A
    piece of the secret (``masked-tail``, ``prefix``, ``line``...) is another mistake
    (a masked tail in an error message, a truncated log line): its own family."""
    last = form.rpartition(">")[2]
    for piece in PIECES:
        if last.startswith(piece.prefix):
            return piece.prefix.rstrip("-@")
    return "whole"


#: Sinks that mostly show again what another sink saw where it was made: a log record
#: pytest captured or ``logging.lastResort`` printed, a traceback on stderr.
_ECHOES = frozenset({"stdout", "stderr"})


def _severity(leak: Leak) -> tuple[bool, int]:
    """Sorts the most severe first: forbidden before allowed, then the most visible."""
    return (leak.allowed, _CLASS_RANK.get(leak.sink_class, len(_CLASS_RANK)))


#: How the log sinks' notes begin for a record production would not emit (below its
#: logger's level, a disabled logger): the same text emitted elsewhere is more severe.
NOT_EMITTED = "not emitted in production"


def _shown_first(leak: Leak) -> tuple[bool, int, bool, bool]:
    """The order within a root cause: the most severe; then what production emits before
    what it would not (a record below its logger's level); then a sink that names where
    the text was made (a log record's field, an exported span) before stdout and stderr,
    which mostly echo it (pytest's log capture, ``logging.lastResort``)."""
    return (*_severity(leak), NOT_EMITTED in leak.note, leak.sink in _ECHOES)


def root_causes(leaks: Iterable[Leak]) -> list[list[Leak]]:
    """``leaks`` grouped by root cause, the secret and the form family, each group most
    severe first (the one the text report prints in full); groups in the order their
    secrets were first seen, a secret's groups most severe first. Every leak is in one."""
    groups: dict[tuple[str, str], list[Leak]] = {}
    for leak in leaks:
        key = (leak.finding.secret_id, form_family(leak.finding.form))
        groups.setdefault(key, []).append(leak)
    ordered = [sorted(group, key=_shown_first) for group in groups.values()]
    first_seen = {key[0]: n for n, key in reversed(list(enumerate(groups)))}
    ordered.sort(key=lambda g: (first_seen[g[0].finding.secret_id], _severity(g[0])))
    return ordered


def _also_in(head: Leak, others: list[Leak]) -> str:
    """``also in: <place>, ...`` for the rest of a group: each place once, with what sets
    it apart from the one shown (its sink class, allowed, its form), at most
    ``ALSO_IN_SHOWN`` of them, then ``+N more``."""
    places: list[str] = []
    head_place = sink_label(head.sink, head.path)
    for leak in others:
        tags = []
        if leak.sink_class is not head.sink_class:
            tags.append(leak.sink_class.value)
        if leak.allowed and not head.allowed:
            tags.append("allowed")
        if leak.finding.form != head.finding.form:
            tags.append(f"form {leak.finding.form}")
        label = sink_label(leak.sink, leak.path)
        if label == head_place and not tags:
            label, tags = "the same text", ["another occurrence"]
        place = label + (f" ({', '.join(tags)})" if tags else "")
        if place not in places:
            places.append(place)
    shown = places[:ALSO_IN_SHOWN]
    more = len(places) - len(shown)
    return "also in: " + ", ".join(shown) + (f", +{more} more" if more else "")


def leaks_header(leaks: list[Leak], seed: int | str | None) -> str:
    """The first line of a leak report: forbidden hits, secrets, root causes, the seed
    (None: no canary of this seed is among the secrets, and it would replay nothing)."""
    forbidden = [leak for leak in leaks if not leak.allowed]
    causes = sum(1 for _ in root_causes(forbidden))
    secrets = len({leak.finding.secret_id for leak in forbidden})
    hits = f"{len(forbidden)} forbidden hit{'s' if len(forbidden) != 1 else ''}"
    grouped = (
        f", {causes} root cause{'s' if causes != 1 else ''}" if causes < len(forbidden) else ""
    )
    replay = "" if seed is None else f" (canary seed {seed})"
    return f"leakcheck: {hits} of {secrets} secret(s){grouped}{replay}"


def format_leaks(leaks: list[Leak], *, header: str = "") -> str:
    """A failure message a person can act on: one entry per root cause (a secret and a
    form family, ``root_causes``), its most severe, most caller-visible occurrence in
    full and the others on one ``also in:`` line; masked evidence only. A ``Verdict``'s
    ``not_inspected`` parts are listed after the leaks. Every occurrence stays in the
    JSON report."""
    lines = [header] if header else []
    seen_secrets: set[str] = set()
    for group in root_causes(leaks):
        head = group[0]
        finding = head.finding
        if finding.secret_id not in seen_secrets:
            seen_secrets.add(finding.secret_id)
            lines.append(f"{finding.secret_id} ({finding.kind}, {finding.secret_class} secret):")
        where = f"{sink_label(head.sink, head.path)}  form {finding.form}  line {finding.line}"
        if not head.allowed:
            lines.append(f"  [LEAK] {head.sink_class.value}: {where}")
        elif head.sink_class is SinkClass.LATENT:  # present on an object, emitted by nothing
            lines.append(f"  [latent] {where}")
        else:
            lines.append(f"  [allowed] {head.sink_class.value}: {where}")
        lines.append(f"      {finding.excerpt}")
        if head.note:
            lines.append(f"      ({head.note})")
        if len(group) > 1:
            lines.append(f"      {_also_in(head, group[1:])}")
    lines += format_not_inspected(getattr(leaks, "not_inspected", ()))
    return "\n".join(lines)


def format_not_inspected(parts: Iterable[NotInspected]) -> list[str]:
    """``could not inspect`` lines (none when everything was inspected)."""
    parts = list(parts)
    if not parts:
        return []
    lines = [f"could not inspect {len(parts)} part(s) (not searched; not a failure):"]
    lines += [
        f"  [not inspected] {p.sink_class.value}: {sink_label(p.sink, p.path)}  {p.what}"
        for p in parts
    ]
    return lines


def earlier_leaks(
    masker: SessionMasker,
    items: list[Captured],
    policy: Policy,
    *,
    before: int,
    leaving_out: Iterable[Secret],
    note: str,
    groups: dict[SinkClass, list[bytes]] | None = None,
) -> list[Leak]:
    """The forbidden hits in ``items`` of the secrets of ``masker``'s first ``before``
    batches (an earlier test's, an earlier audit case's) other than ``leaving_out``: none,
    nearly always, told from the masker's index. Each names its secret ``ID@OWNER`` (a
    ``bearer#1`` of this test too must not make one root cause with it) and carries
    ``note`` with ``{owner}`` filled in: who added the secret."""
    if not before:
        return []
    texts = [text for group in (groups or lookup_texts(items)).values() for text in group]
    found = masker.earlier_secrets_in(texts, before=before, leaving_out=leaving_out)
    if found is None:
        return []
    scanner, added_by = found
    leaks = []
    for leak in judge(scanner, items, policy):
        owner = added_by.get(leak.finding.secret_id)
        if leak.allowed or owner is None:
            continue
        secret_id = f"{leak.finding.secret_id}@{owner}"
        finding = Finding(**{**vars(leak.finding), "secret_id": secret_id})
        leaks.append(replace(leak, finding=finding, note=note.format(owner=owner)))
    return leaks
