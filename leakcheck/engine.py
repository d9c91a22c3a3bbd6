"""One pass over the text for every needle of every secret.

Hyperscan when importable, pyahocorasick otherwise. Never a ``re`` alternation of literals:
it collapses to under 1 MB/s at a few hundred needles.
"""

from __future__ import annotations

import _thread
import math
import re
import sys
from array import array
from collections import Counter, OrderedDict
from collections.abc import Collection, Iterable, Iterator, Sequence
from itertools import chain, compress, count
from operator import itemgetter

TYPE_CHECKING = False  # not typing's: its import was a twentieth of a scan's start-up
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "BACKENDS",
    "KEY_CODE",
    "Engine",
    "KeptKeys",
    "KeySet",
    "add_substring_keys",
    "key_positions",
    "substring_key_set",
    "substring_keys_in",
    "available_backends",
    "build_engine",
    "resolve_backend",
]

BACKENDS = ("hyperscan", "ahocorasick")
#: pyahocorasick searches this many input bytes at a time (see AhoCorasickEngine.scan).
_SLICE_BYTES = 1 << 20


class Engine:
    """A backend: one pass over a text for every pattern (a base class, not a
    ``typing.Protocol``: the scan's start-up does not import typing)."""

    name: str

    def scan(self, data: bytes | memoryview) -> list[tuple[int, int]]:
        """Every occurrence of every pattern: ``(pattern index, end offset)``, any order;
        a match of the ``regexes`` given to ``build_engine`` has index ``len(patterns) + i``
        (for the i-th regex; hyperscan reports every end offset of a match, the fallback
        the end of each non-overlapping match)."""
        raise NotImplementedError


#: A run that several patterns share as their head or tail, searched for in their place, is
#: at least this long (see _factor).
SHARED_MIN_BYTES = 6
#: An anchor of digits alone (a hex or numeric-entity spelling) is at least this long.
DIGITS_ANCHOR_BYTES = 12
_DIGITS = b"0123456789"
_BY_END = itemgetter(1)
#: The patterns found through an anchor: (pattern index, bytes before the anchor in it,
#: pattern), each
_Kids = tuple[tuple[int, int, bytes], ...]


class _Factored:
    """What hyperscan compiles for a list of patterns (see _factor): ``plain``, the indexes
    of the patterns searched for as they are; ``anchors``, runs searched for in place of
    others, each ``(run, the pattern it is or -1, the patterns found through it)``;
    ``nested``, the patterns found through a pattern that is itself found through an
    anchor."""

    __slots__ = ("plain", "anchors", "nested")

    def __init__(
        self,
        plain: list[int],
        anchors: list[tuple[bytes, int, _Kids]],
        nested: dict[int, _Kids],
    ) -> None:
        self.plain, self.anchors, self.nested = plain, anchors, nested

    @property
    def compiled(self) -> int:
        return len(self.plain) + len(self.anchors)


def _factor(patterns: Sequence[bytes], families: Sequence[int] | None = None) -> _Factored:
    """Fewer patterns for hyperscan to compile: a pattern that ends or begins with a run
    that others share is found only where that run is, by comparing it there.

    Patterns are grouped by their last, then (those not grouped yet) their first
    SHARED_MIN_BYTES bytes; a group's anchor is the tail (head) all of its members share.
    Either it is one of them (a pattern that others end or begin with: its hits are needed
    anyway), or it is searched for without being reported, and then only when every pattern
    with that last (first) run is of one family (``families``: the secret each pattern is
    of; a run that several secrets' patterns end or begin with is fixed text, such as
    ``ending in ``) and it looks random (``_random_looking``: not one kind's fixed text,
    such as a hostname's domain). Hyperscan's compile time grows about linearly with the
    patterns: 20 secrets make some 2,500 (needles and keys), of which some 1,150 are
    compiled this way (a mask spelling is ``****`` or ``ending in`` and a secret's tail:
    one anchor for a dozen; the base64 and percent spellings that share a head; a fragment
    that is a needle's head or tail): 50 to 28 ms. Its search of the bench corpus beside
    the keys and dense-escape shapes is as fast (30.2 to 31.2 ms per 64 MiB either way,
    three sets of 20 secrets), of 20 secrets' needles alone 1.5 to 1.8 times slower (the
    literal matcher hyperscan chooses for the set): the scanner factors only the former.
    """
    size = SHARED_MIN_BYTES
    internal_ok = families is not None and len(set(families)) > 1
    parent: set[int] = set()  # patterns found through an anchor
    runs: list[tuple[bytes, int]] = []  # each anchor: (run, the pattern it is or -1)
    kids: list[list[tuple[int, int, bytes]]] = []  # each anchor's
    number_of: dict[int, int] = {}  # a pattern that is an anchor -> its number
    for tail in (True, False):
        # (a pattern shorter than ``size`` is its own key: no other pattern has it)
        keys = [p[-size:] for p in patterns] if tail else [p[:size] for p in patterns]
        counts = Counter(keys)  # (counted in C: most keys are a single pattern's)
        groups: dict[bytes, list[int]] = {}
        for i in [i for i, key in enumerate(keys) if counts[key] > 1]:
            groups.setdefault(keys[i], []).append(i)
        for members in groups.values():
            free = [i for i in members if i not in parent]
            if len(free) < 2:
                continue
            one_family = internal_ok and len({families[i] for i in members}) == 1  # type: ignore[index]
            if one_family or families is None:
                subgroups = [free]
            else:  # only a member can be the anchor: a family's own group
                by_family: dict[int, list[int]] = {}
                for i in free:
                    by_family.setdefault(families[i], []).append(i)
                subgroups = [group for group in by_family.values() if len(group) > 1]
            for group in subgroups:
                texts = [patterns[i][::-1] if tail else patterns[i] for i in group]
                low, high = min(texts), max(texts)
                common = _common_head(low, high)
                own = [i for i, text in zip(group, texts, strict=True) if len(text) == common]
                run = low[:common][::-1] if tail else low[:common]
                if own:
                    anchor_index = own[0]
                    number = number_of.setdefault(anchor_index, len(runs))
                elif one_family and _random_looking(run):
                    anchor_index, number = -1, len(runs)
                else:
                    continue
                if number == len(runs):
                    runs.append((run, anchor_index))
                    kids.append([])
                for i in group:
                    if i != anchor_index:
                        parent.add(i)
                        kids[number].append(
                            (i, len(patterns[i]) - common if tail else 0, patterns[i])
                        )
    anchors = [
        (run, anchor_index, tuple(found))
        for (run, anchor_index), found in zip(runs, kids, strict=True)
        if anchor_index not in parent  # (-1 never is)
    ]
    nested = {
        anchor_index: tuple(found)
        for (_, anchor_index), found in zip(runs, kids, strict=True)
        if anchor_index in parent
    }
    plain = [i for i in range(len(patterns)) if i not in parent and i not in number_of]
    return _Factored(plain, anchors, nested)


def _random_looking(run: bytes) -> bool:
    """Whether ``run`` holds two of: a lowercase letter, an uppercase letter, a digit, or is
    DIGITS_ANCHOR_BYTES digits (a secret's random characters do, nearly always; the fixed
    text of one kind of secret, such as a hostname's domain, a path's last directory or
    ``-----BEGIN``, does not)."""
    if run.isdigit():
        return len(run) >= DIGITS_ANCHOR_BYTES
    digit = len(run.translate(None, _DIGITS)) < len(run)
    return (run != run.upper()) + (run != run.lower()) + digit >= 2


def _common_head(low: bytes, high: bytes) -> int:
    """How many bytes ``low`` and ``high`` begin with alike (their first difference is the
    highest set bit of the two read as big-endian numbers and xored: a few steps in C)."""
    size = min(len(low), len(high))
    differ = int.from_bytes(low[:size], "big") ^ int.from_bytes(high[:size], "big")
    return size - 1 - (differ.bit_length() - 1) // 8 if differ else size


def _expression(pattern: bytes) -> bytes:
    """``pattern`` as a hyperscan expression, escaped byte by byte rather than compiled as
    a literal: the binding passes literals as C strings, so a NUL byte would end it (hex
    with a one-character separator, then the separator widened: all in C)."""
    return b"\\x" + pattern.hex("|").replace("|", "\\x").encode()


class HyperscanEngine(Engine):
    name = "hyperscan"

    def __init__(
        self,
        patterns: Sequence[bytes],
        regexes: Sequence[bytes] = (),
        families: Sequence[int] | None = None,
    ) -> None:
        import hyperscan

        self._hs = hyperscan
        self._db = None
        # ids: a plain pattern's is its index, a regex's follows the patterns', an anchor's
        # (see _factor) follows the regexes' (its hits are resolved after the scan)
        if families is None:
            factored = _Factored(list(range(len(patterns))), [], {})
        else:
            factored = _factor(patterns, families)
        self._first_anchor = len(patterns) + len(regexes)
        self._anchors = [(index, len(run), found) for run, index, found in factored.anchors]
        self._nested = factored.nested
        if patterns or regexes:
            expressions = [_expression(patterns[i]) for i in factored.plain]
            expressions += regexes  # in the same database: one pass finds both
            expressions += [_expression(run) for run, _, _ in factored.anchors]
            last = self._first_anchor + len(factored.anchors)
            ids = [*factored.plain, *range(len(patterns), last)]
            self._db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
            self._db.compile(expressions=expressions, ids=ids, elements=len(ids), flags=0)
            self._scratch = hyperscan.Scratch(self._db)

    def scan(self, data: bytes | memoryview) -> list[tuple[int, int]]:
        """The hits in the order of their ends (as hyperscan gives them)."""
        hits: list[tuple[int, int]] = []
        if self._db is None or not data:
            return hits
        anchored: list[tuple[int, int]] = []
        first_anchor = self._first_anchor

        def on_match(index: int, _start: int, end: int, _flags: int, _ctx: object) -> None:
            if index < first_anchor:
                hits.append((index, end))
            else:
                anchored.append((index, end))

        # the stubs say AnyStr; the binding reads any buffer (a memoryview is not copied)
        self._db.scan(data, match_event_handler=on_match, scratch=self._scratch)  # type: ignore[type-var]
        if anchored:
            self._resolve(data, anchored, hits)
        return hits

    def _resolve(
        self, data: bytes | memoryview, anchored: list[tuple[int, int]], hits: list[tuple[int, int]]
    ) -> None:
        """Add to ``hits`` the patterns found at the anchor hits ``anchored``."""
        count = len(hits)
        work: list[tuple[int, _Kids]] = []  # (where an anchor starts, the patterns it has)
        for index, end in anchored:
            pattern_index, length, found = self._anchors[index - self._first_anchor]
            if pattern_index >= 0:
                hits.append((pattern_index, end))
            work.append((end - length, found))
        nested = self._nested
        while work:
            start, found = work.pop()
            for kid, before, pattern in found:
                begin = start - before
                stop = begin + len(pattern)
                # (a slice that a negative start or the end of the data cuts is shorter
                # than the pattern: never equal to it)
                if data[begin:stop] == pattern:
                    hits.append((kid, stop))
                    if kid in nested:
                        work.append((begin, nested[kid]))
        if len(hits) > count:
            hits.sort(key=_BY_END)


#: 8 x log2(1 + count) of each byte value over 80 MiB of source code and gateway logs
#: (bench/corpus.py): how common a byte is in the text leakcheck searches.
_BYTE_WEIGHT = bytes.fromhex(
    "00000000000000000063a800007b000000000000000000000000000000000000c26ca58c67776a969c9c89"
    "83a19aa1909e9b9b96959694939393a1727899896d7394868f8c928a8b868f7d818d8a918b8d7d8f939586"
    "8489807e808f838f62a285ad9ba6a5b3a39d9dab8694a7a0abaaa38aacacaea195949599878473846100655"
    "857544d504c4a554b4c494d454648514b444963535b494b5046475057474e4c4956494a49514948"
    "4a48494a4947474a4b494c4b4a46464c4e4949524a4b430000444e433d2f2f323d392941314e47524a3131"
    "2d34333d575633370d080d1047536d5445504d4b494644373d2e08355c0000100000000000000000000000"
    "08"
)
#: Bytes in an anchor (see AhoCorasickEngine). Longer anchors match less often by chance
#: (fewer hits to verify in Python), shorter ones give each needle more places to start at
#: a pivot (fewer pivots): on the bench corpus with 1,908 needles, 4 bytes ran at 49 MiB/s,
#: 5 at 54, 6 at 67, 8 at 65, 10 at 54.
ANCHOR_BYTES = 6
#: What one more pivot costs, as a share of the input's bytes. pyahocorasick scans the
#: children of the automaton's root one by one for every input byte, so each pivot costs
#: every byte a comparison, however rare it is; a pivot's frequency costs a descent into the
#: automaton only where it occurs. Measured on the bench corpus, a root child costs about as
#: much as a pivot occurring at 30% of the bytes: 19 pivots (67 MiB/s) beat 32 rare ones (42).
PIVOT_COST = 0.3
#: Below this many patterns the automaton's fan-out costs little (45 MiB/s at 500) and
#: choosing anchors (a few ms) would cost more than it saves on a test's small texts.
ANCHOR_FROM_PATTERNS = 800
#: The automaton is built once this many input bytes per pattern have been searched
#: without it (see AhoCorasickEngine): building costs about 1.7 us per pattern, while a
#: search without it costs about 25 ns per input byte more than one with it.
AUTOMATON_AFTER_BYTES = 64
#: The search by keys is for a test's texts and small files: at most this many patterns
#: (20 secrets make about 1,600; a batch of many secrets, hundreds of thousands) and this
#: many bytes a text (the set of its 4-byte substrings: some 70 bytes each).
BY_KEYS_MAX_PATTERNS = 16_384
BY_KEYS_MAX_BYTES = 256 * 1024
#: An array type code of 4-byte items: a text's 4-byte substrings become ints in C ("" on
#: a platform without one: no search by keys there).
KEY_CODE = next((code for code in "IL" if array(code).itemsize == 4), "")


def _substring_runs(data: bytes, size: int, code: str) -> Iterator[array[int]]:
    """Every ``size``-byte substring of ``data`` as an int, as an array of type ``code``
    (items of ``size`` bytes) reads it: one array for each offset modulo ``size``, each
    read in C."""
    length = len(data)
    for shift in range(size):
        end = shift + (length - shift) // size * size
        if end > shift:
            yield array(code, data[shift:end])


def add_substring_keys(data: bytes, into: set[int], size: int = 4, code: str = KEY_CODE) -> None:
    """Add every ``size``-byte substring of ``data`` to ``into`` (``_substring_runs``)."""
    for run in _substring_runs(data, size, code):
        into.update(run)


#: A set of keys kept for long (a session's index, the kept texts' substrings) is a dict of
#: them: a dict holding only ints is never tracked by the garbage collector, where a set is
#: always, and each of its full collections walked every member (the session masker's
#: 143,000 keys after 1,000 tests of three canaries: some 17 ms a collection, issue 13).
KeySet = dict[int, None]


def substring_keys_in(
    data: bytes, keys: set[int] | frozenset[int] | KeySet, size: int = 4, code: str = KEY_CODE
) -> set[int]:
    """The keys of ``keys`` (a set, or a ``KeySet``) that are ``size``-byte substrings of
    ``data``, read as ``add_substring_keys`` reads them. Only the few keys asked about are
    hashed into a set: the text's own (thousands for a log record) are looked up and
    dropped, in C (half the time of making the set of them, for a text looked up once)."""
    # (a dict's keys view iterates the run, each key looked up in the dict)
    among = keys.keys().__and__ if isinstance(keys, dict) else keys.intersection
    found: set[int] = set()
    for run in _substring_runs(data, size, code):
        found |= among(run)
    return found


def key_positions(
    data: bytes, keys: Collection[int], size: int = 4, code: str = KEY_CODE
) -> list[int]:
    """Every position of ``data`` where a ``size``-byte substring that is one of ``keys``
    starts (read as ``add_substring_keys`` reads them), in order: one pass over each of
    the ``size`` runs, in C. (A ``find`` loop for each key read the whole text once per
    key: a MiB of random base64 holds some 2,000 of a session's keys by chance.)"""
    if len(keys) > _KEY_POSITIONS_BY_AUTOMATON:
        # (many keys: an automaton over their bytes, one C pass; a run's ints made one
        # by one and looked up were 0.3 us a byte, 0.73 s for a MiB of base64 decoded)
        import ahocorasick

        automaton = ahocorasick.Automaton()
        for key in keys:
            piece = key.to_bytes(size, sys.byteorder).decode("latin-1")
            automaton.add_word(piece, len(piece))
        automaton.make_automaton()
        return sorted(end - width + 1 for end, width in automaton.iter(data.decode("latin-1")))
    found: list[int] = []
    # (the runs come in the order of their offsets; only the last ones can be empty)
    for shift, run in enumerate(_substring_runs(data, size, code)):
        found += compress(count(shift, size), map(keys.__contains__, run))
    found.sort()
    return found


#: Past this many keys, ``key_positions`` finds them with an automaton.
_KEY_POSITIONS_BY_AUTOMATON = 64


def substring_key_set(layers: Iterable[bytes], size: int = 4, code: str = KEY_CODE) -> KeySet:
    """Every ``size``-byte substring of each of ``layers`` as a ``KeySet`` (in C)."""
    runs = (run for data in layers for run in _substring_runs(data, size, code))
    return dict.fromkeys(chain.from_iterable(runs))


class KeptKeys:
    """Texts' layers (a text and what a decoding pass decodes in it) and every 4-byte
    substring of them as an int (``substring_key_set``), kept by a key for the texts that
    come again in test after test (a recorded span's stacktrace, a traceback). Bounded by
    ``texts``, by ``layer_bytes`` in all and by ``keys`` in all (a key costs some 60 bytes
    kept: 40 distinct texts of 54 KB of random words held 146 MiB when only texts and bytes
    were bounded); a text whose keys pass a quarter of that is never kept. Thread-safe."""

    def __init__(self, texts: int, layer_bytes: int, keys: int) -> None:
        self.limits = (texts, layer_bytes, keys)
        self.sizes = [0, 0]  # the kept layers' bytes, their keys
        self._kept: OrderedDict[object, tuple[tuple[bytes, ...], KeySet, int]] = OrderedDict()
        self._lock = _thread.allocate_lock()

    def __len__(self) -> int:
        return len(self._kept)

    def __contains__(self, key: object) -> bool:
        return key in self._kept

    def get(self, key: object) -> tuple[tuple[bytes, ...], KeySet] | None:
        """The layers kept for ``key`` and their keys, or None."""
        with self._lock:
            kept = self._kept.get(key)
            if kept is None:
                return None
            self._kept.move_to_end(key)
            return kept[0], kept[1]

    def keyed(
        self, key: object, layers: Sequence[bytes], *, keep: bool = True
    ) -> tuple[tuple[bytes, ...], KeySet]:
        """``layers`` and their keys, kept for ``key`` (when ``keep`` and within bounds)."""
        present = substring_key_set(layers)
        found = (tuple(layers), present)
        texts, layer_bytes, keys = self.limits
        if not keep or len(present) > keys // 4:
            return found
        size = sum(map(len, layers))
        with self._lock:
            if key not in self._kept:
                self._kept[key] = (*found, size)
                self.sizes[0] += size
                self.sizes[1] += len(present)
            while len(self._kept) > texts or self.sizes[0] > layer_bytes or self.sizes[1] > keys:
                _, (_, dropped_keys, dropped_bytes) = self._kept.popitem(last=False)
                self.sizes[0] -= dropped_bytes
                self.sizes[1] -= len(dropped_keys)
        return found


_HEAD = itemgetter(slice(0, 4))
_TAIL = itemgetter(slice(-4, None))


def _anchor_starts(pattern: bytes) -> bytes:
    """The bytes of ``pattern`` an anchor may start at (a whole anchor must follow; a
    pattern shorter than an anchor is its own)."""
    return pattern[: max(len(pattern) - ANCHOR_BYTES + 1, 1)]


def _pivots(patterns: Sequence[bytes]) -> dict[int, float]:
    """A small set of rare bytes such that every pattern holds one where an anchor can
    start (greedy weighted set cover, a pivot costing PIVOT_COST plus its frequency);
    ``{byte: frequency}``."""
    # cover[byte]: the patterns that byte can anchor, as the bits of one int (set in a
    # bitmap first: or-ing bits into a growing int would copy it for every pattern)
    bitmaps = [bytearray((len(patterns) + 7) // 8) for _ in range(256)]
    for index, pattern in enumerate(patterns):
        where, bit = index >> 3, 1 << (index & 7)
        for byte in set(_anchor_starts(pattern)):
            bitmaps[byte][where] |= bit
    cover = [int.from_bytes(bitmap, "little") for bitmap in bitmaps]
    frequency = [2.0 ** (w / 8) for w in _BYTE_WEIGHT]
    total = sum(frequency)
    share = [f / total for f in frequency]
    uncovered = (1 << len(patterns)) - 1
    chosen: dict[int, float] = {}
    while uncovered:
        best, best_score = -1, math.inf
        for byte in range(256):
            count = (cover[byte] & uncovered).bit_count()
            if count and (PIVOT_COST + share[byte]) / count < best_score:
                best, best_score = byte, (PIVOT_COST + share[byte]) / count
        chosen[best] = frequency[best]
        uncovered &= ~cover[best]
    return chosen


def _anchors(
    patterns: Sequence[bytes], pivots: dict[int, float]
) -> dict[bytes, list[tuple[int, int]]]:
    """Each pattern's anchor: the ANCHOR_BYTES from the first place (where an anchor can
    start) of the rarest of ``pivots`` it holds, a tie of equally rare pivots going to the
    first; ``{anchor: [(pattern index, offset of the anchor in it)]}``.

    Each pattern is read in C: its bytes translated to their pivot's rank of rarity
    (equally rare pivots one rank, any other byte past every rank), the smallest rank
    where an anchor can start, and its first place (a set intersection and two ``min``
    over generators per pattern were 5 s of a 5,000-secret batch's build)."""
    ranks = sorted(set(pivots.values()))
    # (fewer ranks than 255: _BYTE_WEIGHT holds fewer distinct weights)
    table = bytearray([len(ranks)]) * 256
    for byte, frequency in pivots.items():
        table[byte] = ranks.index(frequency)
    anchors: dict[bytes, list[tuple[int, int]]] = {}
    for index, pattern in enumerate(patterns):
        limit = max(len(pattern) - ANCHOR_BYTES + 1, 1)
        ranked = pattern.translate(table)
        offset = ranked.find(min(ranked[:limit]), 0, limit)
        anchor = pattern[offset : offset + ANCHOR_BYTES]
        anchors.setdefault(anchor, []).append((index, offset))
    return anchors


class _KeyIndex:
    """The patterns by their first and their last 4 bytes, read as ints (see
    AhoCorasickEngine)."""

    __slots__ = ("long", "short", "keys", "tails", "key_set")

    def __init__(self, patterns: Sequence[bytes]) -> None:
        if min(map(len, patterns)) >= 4:
            self.long: Sequence[int] = range(len(patterns))
            self.short: list[int] = []
            longer: Sequence[bytes] = patterns
        else:
            self.long = [i for i, p in enumerate(patterns) if len(p) >= 4]
            self.short = [i for i, p in enumerate(patterns) if len(p) < 4]
            longer = [patterns[i] for i in self.long]
        self.keys = array(KEY_CODE, b"".join(map(_HEAD, longer)))
        self.tails = array(KEY_CODE, b"".join(map(_TAIL, longer)))
        self.key_set = set(self.keys)

    def candidates(self, present: set[int]) -> list[int]:
        """The patterns that can occur in a text whose 4-byte substrings are ``present``:
        those whose first and last 4 bytes are both there (a mask's fixed head, ``ending
        in `` or ``****``, or a token's prefix, ``ghp_``, is in many a text, its other end
        seldom: 20 user secrets, 16 KiB of logs, 483 candidates by the head alone, none
        so), and those shorter than 4 bytes."""
        found = list(self.short)
        if not present.isdisjoint(self.key_set):
            found += [
                i
                for i, key, tail in zip(self.long, self.keys, self.tails, strict=True)
                if key in present and tail in present
            ]
        return found


class AhoCorasickEngine(Engine):
    """pyahocorasick over short anchors, each match verified against its whole needle.

    pyahocorasick slows with the fan-out of its automaton (about 115 MiB/s at 10 needles,
    30 at 1,700). Each needle is represented by an ANCHOR_BYTES window starting at one of a
    few rare "pivot" bytes (chosen so that every needle holds one), so the root has few
    children and most text positions leave it at once; an anchor hit is confirmed by
    comparing the whole needle in place. Same hits, about 2.3x faster on 1,900 needles.

    The automaton is built on demand. A pytest test searches a few small texts (about a
    kilobyte in all) for a few hundred needles: building the automaton would cost more
    than the searches (with ANCHOR_FROM_PATTERNS patterns or more, choosing the pivots costs
    10 ms: a ``leakcheck scan`` of a small file with 20 secrets paid it). Until the input
    searched reaches AUTOMATON_AFTER_BYTES per pattern, a text is searched through the set of its
    4-byte substrings (made in C): a pattern can occur only where its first and its last 4
    bytes both do, so only the patterns whose two keys are in that set are searched for,
    with ``bytes.find``; in a clean text there is usually none. Patterns shorter than 4
    bytes are always searched for. The same hits either way, overlapping ones included, in
    the same order.
    """

    name = "ahocorasick"

    def __init__(self, patterns: Sequence[bytes], regexes: Sequence[bytes] = ()) -> None:
        import ahocorasick  # here, so that a missing package fails the build, not a scan

        self._ahocorasick = ahocorasick
        # regexes (the decoding pass's shapes) are run with ``re``: each has a literal first
        # byte, which ``re`` searches for in C
        self._regexes = [re.compile(r) for r in regexes]
        self._automaton: Any = None  # an ahocorasick.Automaton once built (no stubs)
        self._patterns = tuple(patterns)
        self._overlap = max(map(len, self._patterns), default=1) - 1
        # input bytes still to be searched before building the automaton pays
        self._budget = AUTOMATON_AFTER_BYTES * len(self._patterns)
        # Both searches give the hits in one order (by end, the longest first), on which
        # depends which of two equally long overlapping needles names a mask. Not for many
        # patterns: their index, and the set of a text's 4-byte substrings that the budget
        # would let grow with it, cost memory the automaton does not.
        self._by_keys = bool(KEY_CODE) and len(self._patterns) <= BY_KEYS_MAX_PATTERNS
        self._key_index: _KeyIndex | None = None  # made on the first search by keys
        self._anchored = len(self._patterns) >= ANCHOR_FROM_PATTERNS

    def _build(self) -> None:
        ahocorasick = self._ahocorasick
        if self._anchored:
            anchors = _anchors(self._patterns, _pivots(self._patterns))
        else:  # each pattern is its own anchor
            anchors = {}
            for index, pattern in enumerate(self._patterns):
                anchors.setdefault(pattern, []).append((index, 0))
        automaton = ahocorasick.Automaton()
        for anchor, entries in anchors.items():
            # latin-1 maps bytes to code points one to one, so a str automaton
            # searches bytes exactly, valid UTF-8 or not.
            automaton.add_word(anchor.decode("latin-1"), (len(anchor), tuple(entries)))
        automaton.make_automaton()
        self._automaton = automaton

    def scan(self, data: bytes | memoryview) -> list[tuple[int, int]]:
        if not data:
            return []
        hits = self._scan_patterns(data) if self._patterns else []
        if self._regexes:
            first = len(self._patterns)
            for i, regex in enumerate(self._regexes, start=first):
                hits += [(i, m.end()) for m in regex.finditer(data)]
        return hits

    def _scan_patterns(self, data: bytes | memoryview) -> list[tuple[int, int]]:
        if self._automaton is None:
            size = len(data)
            if size < self._budget and size <= BY_KEYS_MAX_BYTES and self._by_keys:
                self._budget -= size
                return self._scan_by_keys(bytes(data))
            self._build()
        return self._scan_automaton(data)

    def _scan_by_keys(self, data: bytes) -> list[tuple[int, int]]:
        patterns = self._patterns
        index = self._key_index
        if index is None:
            # one assignment, so that another thread never sees half an index
            index = self._key_index = _KeyIndex(patterns)
        present: set[int] = set()
        add_substring_keys(data, present)
        hits: list[tuple[int, int]] = []
        for i in index.candidates(present):
            pattern = patterns[i]
            start = data.find(pattern)
            while start >= 0:
                hits.append((i, start + len(pattern)))
                start = data.find(pattern, start + 1)
        if len(hits) > 1:  # in the automaton's order
            hits.sort(key=lambda hit: (hit[1], -len(patterns[hit[0]])))
        return hits

    def _scan_automaton(self, data: bytes | memoryview) -> list[tuple[int, int]]:
        # The automaton searches a UCS-4 copy of its str (4 bytes per input byte): slices
        # keep that copy small. A slice starts ``overlap`` bytes early and reports only the
        # anchors that end inside it, so each anchor occurrence is seen exactly once; the
        # needle around it is compared against the whole buffer.
        view = memoryview(data)
        size = len(view)
        patterns = self._patterns
        hits: list[tuple[int, int]] = []
        for start in range(0, size, _SLICE_BYTES):
            low = max(0, start - self._overlap)
            text = str(view[low : start + _SLICE_BYTES], "latin-1")
            for last, (length, entries) in self._automaton.iter(text):
                if low + last < start:
                    continue
                anchor_start = low + last - length + 1
                for index, offset in entries:
                    pattern = patterns[index]
                    begin = anchor_start - offset
                    end = begin + len(pattern)
                    if begin >= 0 and end <= size and view[begin:end] == pattern:
                        hits.append((index, end))
        if self._anchored and len(hits) > 1:  # anchors come in their own order
            hits.sort(key=lambda hit: (hit[1], -len(patterns[hit[0]])))
        return hits


def _importable(name: str) -> bool:
    """``importlib.util.find_spec(name) is not None`` for a top-level module, without
    importing ``importlib.util`` (and the ``contextlib`` it imports: 0.8 ms of a scan's
    start-up): a module already imported (or set to None) answers, else the finders."""
    if name in sys.modules:
        return sys.modules[name] is not None
    for finder in sys.meta_path:
        find_spec = getattr(finder, "find_spec", None)
        if find_spec is not None and find_spec(name, None) is not None:
            return True
    return False


def available_backends() -> list[str]:
    return [name for name in BACKENDS if _importable(name)]


#: ``auto`` takes pyahocorasick over hyperscan when the input is known to be under this many
#: bytes per needle: hyperscan compiles about 35 us per needle at 150,000 needles, which the
#: automaton (7 us per needle to build, 16 MiB/s to search at that size) repays on inputs up
#: to about 400 bytes per needle (measured: 147,462 needles of a 423-case matrix's
#: canaries, 8 MiB scanned in 5.5 s by hyperscan, 2.1 s by the automaton; 64 MiB in 5.6 s
#: by both). With 20 secrets (some 1,400 to 1,700 needles, their keys and shapes compiled
#: in 27 ms, see _factor) ``leakcheck scan`` of log text takes as long on either engine at
#: about 1,000 KB (bench canaries: 590 bytes per needle) to 1,200 KB (user tokens: 870);
#: at 600 KB the automaton was 4.5 and 6.4 ms faster (best of 5).
AUTOMATON_BELOW_BYTES_PER_NEEDLE = 512


#: ``auto`` never compiles more needles than this with hyperscan, whatever the input: its
#: compile grows faster than linearly (147,462 needles: 5.2 s and 458 MiB; about 930,000:
#: 128 s and 3.0 GB), while the automaton builds in ~7 us per needle.
HYPERSCAN_MAX_NEEDLES = 200_000
#: Hyperscan refuses a needle longer than this (its expression, four characters per byte,
#: passes its length limit): a PEM key of some 1,500 characters makes such needles.
HYPERSCAN_MAX_NEEDLE_BYTES = 4_000


def resolve_backend(backend: str, needles: int, input_bytes: int | None) -> str:
    """``backend``, or for ``auto``, the engine that finishes first: the automaton when
    compiling hyperscan would cost more than its speed saves (a known input size of fewer
    than AUTOMATON_BELOW_BYTES_PER_NEEDLE bytes per needle, or more than
    HYPERSCAN_MAX_NEEDLES needles whatever the input)."""
    if backend != "auto" or available_backends() != ["hyperscan", "ahocorasick"]:
        return backend
    if needles > HYPERSCAN_MAX_NEEDLES:
        return "ahocorasick"
    if input_bytes is not None and input_bytes < needles * AUTOMATON_BELOW_BYTES_PER_NEEDLE:
        return "ahocorasick"
    return backend


def build_engine(
    patterns: Sequence[bytes],
    backend: str = "auto",
    regexes: Sequence[bytes] = (),
    families: Sequence[int] | None = None,
) -> Engine:
    """Compile ``patterns`` (distinct, non-empty byte strings) for one-pass search, with
    ``regexes`` (each starting with a literal byte; indexes after the patterns').
    ``families``: a number for each pattern, the same for patterns of one secret: hyperscan
    then searches for some through a run they share (see ``_factor``), which makes its
    compile cheaper and, depending on the patterns, its search slower (not beside the
    decoding keys, measured: see ``Scanner._build``); None, every pattern as it is."""
    if backend not in ("auto", *BACKENDS):
        raise ValueError(f"unknown engine {backend!r}; choose auto, hyperscan or ahocorasick")
    too_long = max(map(len, patterns), default=0) > HYPERSCAN_MAX_NEEDLE_BYTES
    if backend == "hyperscan" and too_long:
        raise RuntimeError(
            f"engine 'hyperscan' cannot search for needles over {HYPERSCAN_MAX_NEEDLE_BYTES} "
            "bytes (a secret of some 1,500 characters or more): use --engine auto or "
            "--engine ahocorasick"
        )
    if backend == "hyperscan" or (backend == "auto" and not too_long):
        try:
            return HyperscanEngine(patterns, regexes, families)
        except ImportError:
            if backend == "hyperscan":
                raise RuntimeError(
                    "engine 'hyperscan' requested but the hyperscan package is not importable"
                ) from None
    try:
        return AhoCorasickEngine(patterns, regexes)
    except ImportError:
        raise RuntimeError(
            "no search engine available: install hyperscan or pyahocorasick"
        ) from None
