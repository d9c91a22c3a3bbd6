"""Find every registered secret, in every form, in str, bytes, files and streams."""

from __future__ import annotations

import bisect
import codecs
import dataclasses
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import BinaryIO

from .canaries import Secret
from .decode import all_decoders, decode_runs
from .engine import Engine, build_engine
from .findings import CONTEXT_BYTES, WIDEN_BYTES, Finding, Span, mask_all, masked_excerpt
from .forms import FORMS, MASK_ONLY_FORMS, FormFn, Needle, needles_for

__all__ = ["Scanner"]

#: Bytes read per chunk when streaming: memory stays bounded by a few of these.
CHUNK_BYTES = 8 * 1024 * 1024
# Decoded runs are joined with this between them, so one search covers them all; no needle
# can span it (base64, hex and percent runs all stop at a newline or NUL).
JOIN_SEPARATOR = b"\n\x00\x00\n"


@dataclass(frozen=True)
class _Hit:
    start: int
    end: int
    needle: Needle
    chain: str = ""

    @property
    def form(self) -> str:
        return self.chain + self.needle.form

    @property
    def secret(self) -> Secret:
        return self.needle.secret

    def span(self, rank: int = 0) -> Span:
        return Span(self.start, self.end, self.secret.kind, self.form, rank)


class Scanner:
    """Searches for every form of every secret in one pass over the input.

    ``decode`` adds the decoding second pass (percent, base64, hex runs, ``decode_depth``
    layers deep) for chains such as base64-of-JSON.
    """

    def __init__(
        self,
        secrets: Iterable[Secret],
        *,
        decode: bool = False,
        decode_depth: int = 2,
        backend: str = "auto",
        forms: Sequence[FormFn] | None = None,
        strict: bool = False,
    ) -> None:
        self.secrets: list[Secret] = list(secrets)
        self.decode = decode
        self.decode_depth = decode_depth
        # strict: report mask-only windows too (for scanning our own output, where a
        # 6-character piece of a secret is already too much)
        self._mask_only = frozenset() if strict else MASK_ONLY_FORMS
        self._decoders = all_decoders() if decode else {}
        if forms is None:
            from .extensions import plugin_forms

            forms = (*FORMS, *plugin_forms())
        owners: dict[bytes, list[Needle]] = {}
        for secret in self.secrets:
            for needle in needles_for(secret, forms):
                owners.setdefault(needle.pattern, []).append(needle)
        self._patterns = list(owners)
        self._owners = [owners[p] for p in self._patterns]
        self.engine: Engine = build_engine(self._patterns, backend)
        self.max_needle = max((len(p) for p in self._patterns), default=1)
        # Hits must be settled (every overlapping hit and the whole excerpt window visible)
        # before they are reported; see scan_stream.
        self._margin = self.max_needle + CONTEXT_BYTES + WIDEN_BYTES

    @property
    def needle_count(self) -> int:
        return len(self._patterns)

    @property
    def needles(self) -> list[Needle]:
        return [n for owners in self._owners for n in owners]

    # --- hits within one buffer ----------------------------------------------------------

    def _first_pass(self, buf: bytes, first: list[tuple[int, int]] | None = None) -> list[_Hit]:
        hits = []
        for index, end in self.engine.scan(buf) if first is None else first:
            pattern = self._patterns[index]
            for needle in self._owners[index]:
                hits.append(_Hit(end - len(pattern), end, needle))
        return hits

    def _decoded(self, buf: bytes, depth: int) -> list[_Hit]:
        runs = list(decode_runs(buf, self._decoders))
        if not runs:
            return []
        starts, position = [], 0
        for _name, _start, _end, decoded in runs:
            starts.append(position)
            position += len(decoded) + len(JOIN_SEPARATOR)
        joined = JOIN_SEPARATOR.join(decoded for *_, decoded in runs)
        inner = self._first_pass(joined)
        if depth > 1:
            inner += self._decoded(joined, depth - 1)
        hits, seen = [], set()
        for hit in inner:
            i = bisect.bisect_right(starts, hit.start) - 1
            name, start, end, decoded = runs[i]
            if hit.end > starts[i] + len(decoded):
                continue
            key = (start, end, hit.secret.id, hit.form)
            if key not in seen:
                seen.add(key)
                hits.append(_Hit(start, end, hit.needle, f"{name}>{hit.chain}"))
        return hits

    def _hits(
        self, buf: bytes, first: list[tuple[int, int]] | None = None
    ) -> tuple[list[_Hit], list[_Hit]]:
        """(hits to report, every hit for masking) in ``buf``; ``first`` is the engine's
        answer for ``buf`` when the caller already has it."""
        hits = self._first_pass(buf, first)
        if self.decode:
            # A decoded hit adds nothing where the first pass already saw the whole secret;
            # where it saw only a fragment (a base64 piece), the decoded chain is the
            # fuller account and wins (it spans the fragment).
            whole = [h for h in hits if not _is_fragment(h.needle.form)]
            for hit in self._decoded(buf, self.decode_depth):
                if not any(
                    d.secret is hit.secret and d.start < hit.end and hit.start < d.end
                    for d in whole
                ):
                    hits.append(hit)
        # masking windows (MASKING_FORMS) mask our own output but are too short to report
        reportable = [h for h in hits if h.needle.form not in self._mask_only]
        return _outermost(reportable, buf), hits

    # --- public API -----------------------------------------------------------------------

    def scan(self, data: str | bytes, source: str = "<text>") -> list[Finding]:
        """Every finding in ``data`` (str is searched as its UTF-8 bytes)."""
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogatepass")
        findings = [
            finding
            for hit, buf, spans in self._settled(data, 0, 0, len(data))
            for finding in [self._finding(buf, hit, spans, 0, source)]
        ]
        return _with_lines(findings, [data])

    def scan_path(self, path: str | os.PathLike[str], source: str | None = None) -> list[Finding]:
        with open(path, "rb") as stream:
            return list(self.scan_stream(stream, os.fspath(path) if source is None else source))

    def scan_stream(
        self, stream: BinaryIO, source: str = "<stream>", chunk_bytes: int = CHUNK_BYTES
    ) -> Iterator[Finding]:
        """Stream ``stream`` in chunks with bounded memory; a hit across a chunk edge is found.

        Each buffer is the carried tail of the previous one plus a new chunk, read into one
        preallocated buffer. A hit is reported in the buffer where it is *settled*: its end
        lies at least ``margin`` bytes before the buffer's end, so every hit overlapping it
        and its whole excerpt are inside the buffer, and the carried tail (3 margins) covers
        the hits it overlaps. Line numbers cost a pass over the data, so they are counted
        only when there is a finding: by re-reading a seekable stream, on the fly otherwise.
        """
        chunk_bytes = max(chunk_bytes, 4 * self._margin)
        keep_max = 3 * self._margin
        seekable = _seekable(stream)
        origin = stream.tell() if seekable else 0
        memory = bytearray(chunk_bytes + keep_max)
        view = memoryview(memory)
        carry = 0  # bytes carried at the front of memory
        base = 0  # absolute offset of memory[0]
        reported_upto = 0
        pending: list[Finding] = []
        newlines = 0
        line = _CodePoints()  # non-seekable: the current line's code points before memory[0]
        while True:
            size = _read_into(stream, view[carry : carry + chunk_bytes])
            at_end = size == 0
            length = carry + size
            if at_end and length == 0:
                break
            data = view[:length]
            limit = base + length if at_end else base + length - self._margin
            for hit, buf, spans in self._settled(data, base, reported_upto, limit):
                finding = self._finding(buf, hit, spans, base, source)
                if seekable:
                    pending.append(finding)
                else:
                    j = buf.rfind(b"\n", 0, hit.start)
                    head = line.copy() if j < 0 else _CodePoints()
                    head.feed(buf[j + 1 : hit.start])
                    number = newlines + buf.count(b"\n", 0, hit.start) + 1
                    yield _located(finding, number, head.column())
            reported_upto = max(reported_upto, limit)
            if at_end:
                break
            keep = min(length, keep_max)
            cut = length - keep
            if not seekable:
                newlines += memory.count(b"\n", 0, cut)
                j = memory.rfind(b"\n", 0, cut)
                if j >= 0:
                    line = _CodePoints()
                line.feed(view[j + 1 : cut])
            memory[:keep] = memory[cut:length]
            carry, base = keep, base + cut
        del view
        if pending:
            stream.seek(origin)
            yield from _with_lines(pending, iter(lambda: stream.read(CHUNK_BYTES), b""))

    def _settled(
        self, data: bytes | memoryview, base: int, after: int, limit: int
    ) -> Iterator[tuple[_Hit, bytes, list[Span]]]:
        """Hits of ``data`` whose absolute end lies in ``(after, limit]``, with the buffer
        (as bytes) and every span near them for masking."""
        first = self.engine.scan(data)
        if not first and not self.decode:
            return
        buf = bytes(data)
        report, every = self._hits(buf, first)
        spans = sorted(
            [*(h.span() for h in every), *(h.span(rank=1) for h in report)],
            key=lambda s: s.start,
        )
        starts = [s.start for s in spans]
        longest = max((s.end - s.start for s in spans), default=0)
        # A span matters to an excerpt when its widened extent reaches the excerpt's window;
        # masking with only those keeps one excerpt linear, not quadratic, in the hits.
        reach = CONTEXT_BYTES + WIDEN_BYTES
        for hit in sorted(report, key=lambda h: (h.start, h.end)):
            if after < base + hit.end <= limit:
                low = bisect.bisect_left(starts, hit.start - reach - longest)
                high = bisect.bisect_right(starts, hit.end + reach)
                near = [s for s in spans[low:high] if s.end > hit.start - reach]
                yield hit, buf, near

    def _finding(self, buf: bytes, hit: _Hit, spans: list[Span], base: int, source: str) -> Finding:
        return Finding(
            secret_id=hit.secret.id,
            kind=hit.secret.kind,
            secret_class=hit.secret.secret_class.value,
            form=hit.form,
            source=source,
            line=0,
            column=0,
            offset=base + hit.start,
            length=hit.end - hit.start,
            excerpt=masked_excerpt(buf, hit.start, hit.end, spans),
        )

    def hit_starts(self, data: bytes) -> list[int]:
        """Start offsets of every reportable hit in ``data`` (first pass and decoded), for
        triage: which parts of a joined buffer need a full scan."""
        report, _ = self._hits(data)
        return sorted(h.start for h in report)

    def contains_any(self, data: str | bytes) -> bool:
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogatepass")
        if self.engine.scan(data):
            return True
        return bool(self.decode and self._decoded(data, self.decode_depth))

    def mask(self, text: str) -> str:
        """``text`` with every form of every secret masked: for messages we print ourselves."""
        buf = text.encode("utf-8", "surrogatepass")
        _, every = self._hits(buf)
        if not every:
            return text
        return mask_all(buf, [h.span() for h in every])


_FRAGMENT_FORMS = ("base64-wrapped", "prefix-", "suffix-", "masked-", "line-", "fragment")


def _is_fragment(form: str) -> bool:
    return form.startswith(_FRAGMENT_FORMS)


def _outermost(hits: list[_Hit], buf: bytes) -> list[_Hit]:
    """One hit per occurrence: drop hits inside a longer hit of the same secret (a prefix
    inside the raw value) and join pieces of one occurrence (the lines of a wrapped base64
    blob) that only base64 characters and line breaks separate."""
    by_secret: dict[int, list[_Hit]] = {}
    for hit in hits:
        by_secret.setdefault(id(hit.secret), []).append(hit)
    kept: list[_Hit] = []
    for group in by_secret.values():
        # the longest needle wins a tie (decoded hits share their run's span)
        group.sort(key=lambda h: (h.start, -h.end, -len(h.needle.pattern)))
        current: _Hit | None = None
        for hit in group:
            if current is not None and hit.end <= current.end:
                continue
            if (
                current is not None
                and hit.form == current.form
                and _JOINABLE.fullmatch(buf, current.end, max(current.end, hit.start))
            ):
                current = _Hit(current.start, hit.end, current.needle, current.chain)
                kept[-1] = current
                continue
            current = hit
            kept.append(hit)
    return kept


_JOINABLE = re.compile(rb"[A-Za-z0-9+/_=-]*(?:(?:\r?\n|\\n)[A-Za-z0-9+/_=-]*)?")


def _seekable(stream: BinaryIO) -> bool:
    try:
        return stream.seekable() and stream.tell() >= 0
    except (AttributeError, OSError, ValueError):
        return False


def _read_into(stream: BinaryIO, target: memoryview) -> int:
    """Fill ``target`` as far as the stream allows; 0 only at end of stream."""
    readinto = getattr(stream, "readinto", None)
    filled = 0
    while filled < len(target):
        if readinto is not None:
            n = readinto(target[filled:])
        else:
            piece = stream.read(len(target) - filled)
            n = len(piece)
            target[filled : filled + n] = piece
        if not n:
            break
        filled += n
    return filled


def _located(finding: Finding, line: int, column: int) -> Finding:
    return dataclasses.replace(finding, line=line, column=column)


def _with_lines(findings: list[Finding], chunks: Iterable[bytes]) -> list[Finding]:
    """Line and column (in code points) of each finding, from one read of the data up to
    the last finding."""
    if not findings:
        return findings
    order = sorted(range(len(findings)), key=lambda i: findings[i].offset)
    located: list[Finding] = list(findings)
    newlines, position, k = 0, 0, 0
    line = _CodePoints()  # the current line's code points up to position + cursor
    for chunk in chunks:
        cursor = 0
        while k < len(order) and findings[order[k]].offset < position + len(chunk):
            finding = findings[order[k]]
            local = finding.offset - position
            newlines += chunk.count(b"\n", cursor, local)
            j = chunk.rfind(b"\n", cursor, local)
            if j >= 0:
                line, cursor = _CodePoints(), j + 1
            line.feed(chunk[cursor:local])
            cursor = local
            located[order[k]] = _located(finding, newlines + 1, line.column())
            k += 1
        if k == len(order):
            break
        newlines += chunk.count(b"\n", cursor)
        j = chunk.rfind(b"\n", cursor)
        if j >= 0:
            line, cursor = _CodePoints(), j + 1
        line.feed(chunk[cursor:])
        position += len(chunk)
    return located


class _CodePoints:
    """Counts the code points of one line fed in pieces, exactly as decoding the whole line
    with ``errors="replace"`` would: a piece may end inside a character."""

    _PIECE = 1 << 20  # decoded a MiB at a time, so a long line costs no large string

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._count = 0

    def feed(self, data: bytes | memoryview) -> None:
        for i in range(0, len(data), self._PIECE):
            self._count += len(self._decoder.decode(data[i : i + self._PIECE]))

    def copy(self) -> _CodePoints:
        other = _CodePoints()
        other._decoder.setstate(self._decoder.getstate())
        other._count = self._count
        return other

    def column(self) -> int:
        """1-based column of the next byte: an unfinished character counts as one."""
        pending, _ = self._decoder.getstate()
        return self._count + len(pending.decode("utf-8", "replace")) + 1
