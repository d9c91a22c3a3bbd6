"""One masker for everything a process prints: every secret registered so far, any test.

A test's own reports are masked with its own secrets, but a session prints much that no
test owns: a later test's output holding an earlier test's token, a module fixture's
teardown error, a warning raised by a ``__del__`` after the test ended, the short summary,
an exit banner. ``SessionMasker`` masks all of it with every secret the process has seen.

Secrets arrive a few at a time, thousands in a session, and nearly every text to mask
holds none of them. A scanner over all of them would have to be rebuilt at each arrival
(an automaton costs ~6 us per needle, ~160 needles per secret: quadratic over a session).
The masker keeps instead an index of a head of every needle of every secret it knows
(HEAD_BYTES of its bytes, the last ones where no other secret has them; for put-off
needles, of the anchor run each of them holds),
by batch of secrets (a test's); UTF-16-LE needles and their ``repr`` are indexed narrowed
(``_narrowed``). A text is looked up in C first (the set of its 4-byte
substrings meets the set of the heads' first four bytes: usually not at all), then at each
place where a head's first four bytes occur, by its whole head; a text that holds a head is
masked by a scanner over just the batches that own it. A clean text costs two set operations in C;
six bytes keep chance matches rare even for the lowercase alphabet of a host name canary
(four bytes of English text meet one of a thousand such canaries' heads in most lines).

The same index proves a text clean of given secrets (``proves_absent``): no head of their
batches in it or in what the decoding pass decodes in it. The pytest plugin adds a test's
secrets before its verdict and asks that first: a test that leaks nothing then needs no
scanner of its own, and its reports none to be masked with.
"""

from __future__ import annotations

import functools
import sys
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Sequence
from itertools import chain, compress
from operator import itemgetter
from typing import Any

from .canaries import Secret
from .decode import decode_runs, masking_decoders
from .detect import JOIN_SEPARATOR, Scanner
from .engine import (
    KEY_CODE,
    KeptKeys,
    KeySet,
    available_backends,
    key_positions,
    substring_key_set,
    substring_keys_in,
)
from .extensions import masking_forms
from .findings import MASK_LABEL, mask_label
from .forms import (
    WINDOW,
    WINDOW_CHARS,
    FormFn,
    fragment_forms,
    index_fragment_forms,
    index_utf16_forms,
    index_window_forms,
    json_spelling,
    needle_material,
    utf16_forms,
    window_forms,
)
from .serialize import map_strings
from .serialize.objects import key_text_of

__all__ = ["SessionMasker", "mask_strings", "masked_for_json", "masking_scanner"]

#: Texts to mask are small (a report, a warning): the automaton builds in well under a
#: millisecond, where a hyperscan database takes ~20 ms to compile.
_BACKEND = "ahocorasick" if "ahocorasick" in available_backends() else "auto"
#: Bytes of a needle's head (the shortest needle, a masking window, has at least these).
HEAD_BYTES = WINDOW_CHARS
_TAIL = itemgetter(slice(-HEAD_BYTES, None))
#: The owner of a head that several batches own (``SessionMasker._shared`` names them).
SHARED = -1


def _spare_head(needle: bytes, owners: dict[bytes, int], index: int) -> bytes:
    """A head of ``needle`` that no other batch than ``index`` owns: its middle HEAD_BYTES
    if free, else the nearest free run on either side of it; its middle when every run of
    it is taken (a needle of fixed text alone). A needle whose tail is fixed text (a kind's
    suffix) often has a fixed middle too (``\\xe2\\x`` in the repr of a canary's "€"):
    owned by every batch of the kind, it made a text holding that escape mask with a
    scanner over all of them."""
    middle = (len(needle) - HEAD_BYTES) // 2
    for distance in range(middle + 1):
        for start in {middle - distance, middle + distance}:
            if 0 <= start <= len(needle) - HEAD_BYTES:
                head = needle[start : start + HEAD_BYTES]
                if owners.get(head, index) == index:
                    return head
    return needle[middle : middle + HEAD_BYTES]


def _first_fours(heads: Collection[bytes]) -> bytes:
    """The first four bytes of each of ``heads`` (HEAD_BYTES each), joined: taken from
    their join by strided slices, in C (a slice a head was a tenth of indexing them)."""
    joined = b"".join(heads)
    count = len(heads)
    if len(joined) != HEAD_BYTES * count:  # (never, as heads are made: then one by one)
        return b"".join(head[:4] for head in heads)
    fours = bytearray(4 * count)
    for k in range(4):
        fours[k::4] = joined[k::HEAD_BYTES]
    return bytes(fours)


# UTF-16-LE text and its bytes ``repr`` (a ``-l`` local holding ``token.encode("utf-16-le")``)
# spell each ASCII character with a NUL or a ``\x00`` after it: any six bytes of such a
# needle hold two or three of the secret's characters, the same in every batch of a kind,
# so their heads crowded the index (a third of a test's needles, most of ``add``'s cost).
# They are indexed narrowed instead, and a text holding either is looked up narrowed too:
# a needle in a text is, narrowed, in the narrowed text.
_NUL, _NUL_ESCAPE = b"\x00", b"\\x00"


def _narrowed(data: bytes) -> bytes:
    """``data`` without its NULs and ``\\x00`` escapes."""
    if _NUL in data:
        data = data.replace(_NUL, b"")
    if _NUL_ESCAPE in data:
        data = data.replace(_NUL_ESCAPE, b"")
    return data


#: Joins a batch's needles for narrowing them in one pass (split again after).
_NEEDLE_SEPARATOR = b"\n\xff\xfe\xff\n"


def _narrowing_changes(data: bytes) -> bool:
    """Whether ``data`` holds a NUL or a ``\\x00`` escape other than the NULs of the
    separators that join a test's short texts for one look-up (``detect.JOIN_SEPARATOR``,
    ``verdict.proven_clean``): narrowed, a text of short texts joined was searched twice
    over, its copy differing only in the separators (issue 13: a test's absence proof
    read 1.7 times the bytes of its texts)."""
    if _NUL_ESCAPE in data:
        return True
    return data.count(_NUL) > _SEPARATOR_NULS * data.count(JOIN_SEPARATOR)


_SEPARATOR_NULS = JOIN_SEPARATOR.count(_NUL)


def _remembered(hashes: OrderedDict[int, None], digest: int) -> bool:
    """Whether ``digest`` is among the last _SEEN_TEXTS ``hashes``; it is from now on."""
    if digest in hashes:
        hashes.move_to_end(digest)
        return True
    hashes[digest] = None
    if len(hashes) > _SEEN_TEXTS:
        hashes.popitem(last=False)
    return False


def _joined(layers: Sequence[bytes]) -> tuple[bytes]:
    """``layers`` as one buffer, for finding heads in all of them with one ``find`` loop a
    key (a text's layers are a few dozen: a loop for each was most of a look-up at every
    key). A head across a separator is a candidate no layer holds: the scanner over its
    batch, which masks or searches next, finds nothing there."""
    return (layers[0] if len(layers) == 1 else _LAYER_SEPARATOR.join(layers),)


def _head_material(needles: list[bytes]) -> list[bytes]:
    """What ``needles`` are indexed by: each narrowed, or itself where that would leave
    less than a head (narrowed together, in C: a test adds a few hundred needles)."""
    joined = _NEEDLE_SEPARATOR.join(needles)
    if _NUL not in joined and _NUL_ESCAPE not in joined:
        return needles
    narrowed = _narrowed(joined).split(_NEEDLE_SEPARATOR)
    if len(narrowed) != len(needles):  # a needle holding the separator: one at a time
        narrowed = [_narrowed(needle) for needle in needles]
    if min(map(len, narrowed), default=HEAD_BYTES) >= HEAD_BYTES:  # (as a rule: told in C)
        return narrowed
    return [
        n if len(n) >= HEAD_BYTES else needle for n, needle in zip(narrowed, needles, strict=True)
    ]


#: Scanners over the batches of recent texts, kept for the texts that follow (a failing
#: test's report is masked field by field).
_CACHED_SCANNERS = 32
#: Batches whose heads ``proves_absent`` keeps at hand (a test's own, the session's).
_RECENT_BATCHES = 64
#: Texts whose keys held ``_held_at_every_key`` keeps (a test's texts, by sink class), up
#: to this many bytes each.
_HELD_KEPT, _HELD_KEPT_UP_TO = 8, 64 * 1024
#: Texts from this many bytes up to the next are kept with their layers' keys (a 16 KiB
#: text of random hex cost 6.4 MiB kept with its decoded layer; a 6 KB traceback, 60 KiB).
_KEPT_FROM, _KEPT_UP_TO = 1024, 16 * 1024
#: Long texts whose hashes are remembered, so that one coming again is kept.
_SEEN_TEXTS = 256
#: Short texts (under _KEPT_FROM bytes) that came again, kept with their layers, their
#: 4-byte substrings and the keys they held at the batches looked at (``_Again``), up to
#: this many (some 64 KiB each at most).
_AGAIN_TEXTS = 64
#: Joins a text's layers for one lookup of their keys (see ``_held``).
_LAYER_SEPARATOR = b"\n"
#: Up to this many key-bytes (keys held x a text's bytes), a text's heads are found with a
#: ``find`` loop a key; past it, with one pass over the text (``engine.key_positions``).
_FIND_LOOP_UP_TO = 1 << 20
#: Decoding layers looked into: as many as a masking scanner decodes.
_DECODE_DEPTH = 2


@functools.cache
def _index_forms(forms: tuple[FormFn, ...]) -> tuple[FormFn, ...]:
    """``forms`` as the index makes their needles: the masking windows without those that
    narrowed are another of them (``forms.index_window_forms``), the masked heads and
    tails without those that hold a window (``forms.index_fragment_forms``), no UTF-16-LE
    needles of a value they narrow to (``forms.index_utf16_forms``). Every needle
    of ``forms`` holds one the index has, narrowed: a text holding it holds that one."""
    lean: dict[FormFn, FormFn] = {
        window_forms: index_window_forms,
        fragment_forms: index_fragment_forms,
        utf16_forms: index_utf16_forms,
    }
    return tuple(lean.get(form, form) for form in forms)


def masking_scanner(secrets: Iterable[Secret]) -> Scanner:
    """A scanner that masks every form and every short piece of ``secrets``."""
    return Scanner(secrets, decode=True, forms=masking_forms(), backend=_BACKEND)


def _common(present: KeySet, keys: frozenset[int] | KeySet) -> set[int]:
    """The keys in both (the smaller side iterated, in C)."""
    return present.keys() & (keys.keys() if isinstance(keys, dict) else keys)


class _Again:
    """A short text that came again: its layers, every 4-byte substring of them
    (``present``), the keys of the first ``upto`` batches among those (``held``)."""

    __slots__ = ("layers", "present", "held", "upto")

    def __init__(self, layers: Sequence[bytes], present: KeySet, held: set[int], upto: int):
        self.layers, self.present, self.held, self.upto = layers, present, held, upto


class SessionMasker:
    """Masks a text with every secret ``add``-ed so far (thread-safe: log handlers mask
    from the threads that log)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: each batch's secrets, by index (a tuple, not an object holding one: what every
        #: test leaves for the garbage collector's full collections to walk, twice a test)
        self._batches: list[tuple[Secret, ...]] = []
        #: who added each batch, by index (a test's id; "" for the session's)
        self._added_by: list[str] = []
        #: the index of the first batch a test added (``tests_added_before``)
        self._first_by_a_test: int | None = None
        self._values: set[str] = set()
        #: each secret added, by the batch that indexed it (``proves_absent``)
        self._batch_of: dict[Secret, int] = {}
        #: a head -> the batch owning it, or SHARED when several do (``_shared``). Ints
        #: only: a dict holding nothing but bytes and ints is never tracked by the garbage
        #: collector; with a tuple of owners in it, it was, and each full collection
        #: walked its 166,000 heads (1,000 tests of three canaries: issue 13)
        self._heads: dict[bytes, int] = {}
        #: the owners of each head several batches own (rare: fixed text alone)
        self._shared: dict[bytes, tuple[int, ...]] = {}
        #: heads that are another batch's tail too: fixed text (``earlier_secrets_in``)
        self._fixed_heads: set[bytes] = set()
        #: the first four bytes of every head, as the ints ``add_substring_keys`` makes
        self._keys: KeySet = {}
        #: batches with a needle shorter than a head: candidates for every text
        self._always: list[int] = []
        self._scanners: OrderedDict[tuple[int, ...], Scanner] = OrderedDict()
        #: the keys of the heads of the batches added last and of those asked about since
        #: (``proves_absent``: a test's texts are looked up for its own batches only)
        self._recent: OrderedDict[int, KeySet] = OrderedDict()
        #: long texts looked up lately: their layers and keys (``_keyed_layers``)
        self._kept = KeptKeys(texts=32, layer_bytes=2 * 1024 * 1024, keys=100_000)
        #: the hashes of long texts looked up lately: the second sighting keeps one
        self._seen: OrderedDict[int, None] = OrderedDict()
        #: the hashes of short texts looked up at every key lately, and those that came
        #: again (a test's texts are alike in test after test: its log lines, its tool's
        #: error envelope), each looked up since only at the batches added since
        self._seen_short: OrderedDict[int, None] = OrderedDict()
        self._again: OrderedDict[bytes, _Again] = OrderedDict()
        self._seen_lock = threading.Lock()
        #: the hashes of long texts looked up for earlier secrets lately
        self._looked_up: OrderedDict[int, None] = OrderedDict()
        self._decoders = masking_decoders()
        #: ``_held`` at every key, of the texts looked up since the last ``add``: a test's
        #: verdict looks its texts up for its own secrets and for earlier tests' ones
        self._held_everywhere: OrderedDict[bytes, tuple[Sequence[bytes], set[int]]]
        self._held_everywhere = OrderedDict()

    def __len__(self) -> int:
        return len(self._values)

    def holds(self, secrets: Iterable[Secret]) -> bool:
        """Whether every one of ``secrets`` is masked here (its value added)."""
        return all(secret.value in self._values for secret in secrets)

    def add(
        self, secrets: Iterable[Secret], scanner: Scanner | None = None, *, by: str = ""
    ) -> None:
        """Mask ``secrets`` from now on (a value already known is kept once). ``scanner``,
        a masking scanner over them that exists already (a test's own), saves making their
        needles again. ``by``: who adds them (a test's id), for ``earlier_secrets_in``."""
        fresh = tuple({s.value: s for s in secrets if s.value not in self._values}.values())
        if not fresh:
            return
        if (
            scanner is not None
            and scanner.forms == masking_forms()
            and set(fresh) <= set(scanner.secrets)
        ):
            # (its needles of secrets already known too: their heads only add candidates)
            needles = scanner.needles_so_far()
        else:
            forms = _index_forms(masking_forms())
            needles = [n for secret in fresh for n in needle_material(secret, forms, cached=False)]
        short = min(map(len, needles), default=HEAD_BYTES) < HEAD_BYTES
        long_needles = [n for n in needles if len(n) >= HEAD_BYTES] if short else needles
        long_needles = _head_material(long_needles)
        with self._lock:
            index = len(self._batches)
            self._batches.append(fresh)
            self._added_by.append(by)
            if by and self._first_by_a_test is None:
                self._first_by_a_test = index
            self._held_everywhere.clear()  # (held at the keys known before)
            self._values.update(secret.value for secret in fresh)
            self._batch_of.update(dict.fromkeys(fresh, index))
            heads = self._index(long_needles, index)
            # (the ints made once, in a KeySet: the session's keys take them from it with
            # their hashes, a dict merged into a dict, not from the array again)
            keys = dict.fromkeys(array(KEY_CODE, _first_fours(heads)))
            self._keys.update(keys)
            self._recent[index] = keys
            while len(self._recent) > _RECENT_BATCHES:
                self._recent.popitem(last=False)
            if short:
                self._always.append(index)

    def _index(self, needles: list[bytes], index: int) -> set[bytes]:
        """Index each of ``needles`` (of batch ``index``) by its tail or, where another
        batch has that tail already (a kind's fixed suffix: ``corp.internal``), by a run
        of it that no other batch owns (``_spare_head``): fixed text is then owned by the
        batch that came first, and a text holding it (any line saying "internal") costs
        one small scanner, not one over every batch of the kind. The heads used."""
        owners = self._heads
        tail_of = list(map(_TAIL, needles))
        tails = set(tail_of)
        # (a keys view and a set: each tail looked up in C, with the hash the set has)
        taken = owners.keys() & tails
        heads = tails - taken
        owners.update(dict.fromkeys(heads, index))
        if not taken:
            return heads
        # another batch's head that is this one's tail too: fixed text (a kind's suffix)
        self._fixed_heads |= taken
        for needle in compress(needles, map(taken.__contains__, tail_of)):
            # its middle, as _spare_head tries first (free for most: the tail taken is a
            # kind's fixed text, such as a host name's domain in its base64)
            middle = (len(needle) - HEAD_BYTES) // 2
            head = needle[middle : middle + HEAD_BYTES]
            if owners.get(head, index) != index:
                head = _spare_head(needle, owners, index)
            heads.add(head)
            owner = owners.setdefault(head, index)
            if owner == index:
                continue
            # every six bytes of it are another batch's too (rare: fixed text alone)
            if owner != SHARED:
                owners[head] = SHARED
                self._shared[head] = (owner, index)
            elif self._shared[head][-1] != index:
                self._shared[head] += (index,)
        return heads

    def _layers(self, buf: bytes) -> list[bytes]:
        """``buf`` and what the decoding pass decodes in it (as a masking scanner does, to
        _DECODE_DEPTH), and those holding UTF-16 narrowed too."""
        layers = [buf]
        layer = [buf]
        for _ in range(_DECODE_DEPTH):
            layer = [decoded for data in layer for *_, decoded in decode_runs(data, self._decoders)]
            layers += layer
        layers += [_narrowed(data) for data in layers if _narrowing_changes(data)]
        return layers

    def _candidates(self, buf: bytes) -> tuple[int, ...]:
        """The batches owning a head that ``buf`` holds (in it or decoded)."""
        with self._lock:
            layers, held = self._held_at_every_key(buf)
            found = set(self._always)
            found |= self._owners_in(_joined(layers), held)
        return tuple(sorted(found))

    def _held_at_every_key(self, text: bytes) -> tuple[Sequence[bytes], set[int]]:
        """``_held(text, self._keys)``, kept until the next ``add`` for the last few texts
        (a test's texts are looked up for earlier tests' secrets, then for its own, then
        masked), and for a short text that comes again after an ``add`` (in the next test:
        ``_again_at_every_key``) (under the lock)."""
        if len(text) > _HELD_KEPT_UP_TO:  # (kept, its layers would outweigh a second look)
            return self._held(text, self._keys)
        kept = self._held_everywhere
        found = kept.get(text)
        if found is not None:
            return found
        if len(text) < _KEPT_FROM:
            again = self._again_at_every_key(text)
            if again is not None:
                return again.layers, again.held
        found = kept[text] = self._held(text, self._keys)
        if len(kept) > _HELD_KEPT:
            kept.popitem(last=False)
        return found

    def _again_at_every_key(self, text: bytes) -> _Again | None:
        """``text`` (a short one) as ``_held_at_every_key`` looks it up, if it came
        before the last ``add`` (a text of an earlier test: one a test looks up again
        before the next ``add`` is kept apart, in ``_held_everywhere``; a text holding a
        test's canary comes in that test alone, and keeping its substrings would cost
        more than it saves): looked up at every key with every 4-byte substring of its
        layers kept, since then at the keys of the batches added since only (under the
        lock). None the first time, or when more batches came since than ``_recent``
        keeps the keys of (then looked up at every key again)."""
        again = self._again.get(text)
        count = len(self._batches)
        if again is None:
            if not _remembered(self._seen_short, hash(text)):
                return None
            layers = self._layers(text)
            present = substring_key_set(_joined(layers))
            again = _Again(layers, present, _common(present, self._keys), count)
            self._again[text] = again
            if len(self._again) > _AGAIN_TEXTS:
                self._again.popitem(last=False)
            return again
        self._again.move_to_end(text)
        if again.upto < count:
            since = [self._recent.get(index) for index in range(again.upto, count)]
            if any(keys is None for keys in since):
                held = _common(again.present, self._keys)
            else:
                held = again.held.union(*(_common(again.present, keys) for keys in since))  # type: ignore[arg-type]  # (None ruled out above)
            # (a new set: a caller may still hold the one handed out before)
            again.held, again.upto = held, count
        return again

    def proves_absent(self, secrets: Iterable[Secret], texts: Iterable[bytes]) -> bool:
        """Whether no text of ``texts`` holds any needle of ``secrets`` (of the masking
        forms, the detection forms among them), in it or in what a scanner's decoding pass
        decodes in it, told from the index alone: no head of their batches is in any of
        them. False when it cannot tell (a secret not added as itself, a needle shorter
        than a head): a scanner must search then. For the pytest plugin, which adds a
        test's secrets here before its verdict: a test whose texts hold none of them needs
        no scanner of its own (issue 13)."""
        if not KEY_CODE:
            return False
        with self._lock:
            batches = {self._batch_of.get(secret, -1) for secret in secrets}
            if -1 in batches or not batches.isdisjoint(self._always):
                return False
            if not batches:
                return True
            own: list[KeySet] = []
            for batch in batches:
                keys = self._recent.get(batch)
                if keys is None:  # (long gone from the recent ones: a scanner searches)
                    return False
                self._recent.move_to_end(batch)
                own.append(keys)
        # (a text is looked up only at its batches' keys: a few hundred, not the session's
        # hundreds of thousands; or taken from a look-up at every key made since the last
        # ``add``: the plugin looks its short texts up for earlier tests' secrets first)
        keys = own[0] if len(own) == 1 else dict.fromkeys(chain.from_iterable(own))
        for text in texts:
            with self._lock:
                looked_up = self._held_everywhere.get(text)
                again = self._again.get(text) if looked_up is None else None
            if looked_up is not None:
                layers, held = looked_up[0], keys.keys() & looked_up[1]
            elif again is not None:
                layers, held = again.layers, _common(again.present, keys)
            else:
                layers, held = self._held(text, keys)
            if held:
                with self._lock:
                    if not batches.isdisjoint(self._owners_in(layers, held)):
                        return False
        return True

    def batch_count(self) -> int:
        """How many batches were added so far (a test's verdict asks about those added
        before it began: ``earlier_secrets_in``)."""
        return len(self._batches)

    def tests_added_before(self, before: int) -> bool:
        """Whether a test (``by``) added one of the first ``before`` batches: whether
        ``earlier_secrets_in`` can find anything for a test that began then."""
        first = self._first_by_a_test
        return first is not None and first < before

    def earlier_secrets_in(
        self, texts: Iterable[bytes], *, before: int, leaving_out: Iterable[Secret]
    ) -> tuple[Scanner, dict[str, str]] | None:
        """The secrets of the first ``before`` batches that someone added (``by``: an
        earlier test), less the values of ``leaving_out``, whose batches own a head one of
        ``texts`` holds (in it or decoded): a masking scanner over those batches (it
        detects too) and who added each of them, by id; None when there are none, nearly
        always: a text is looked up in C at the session's keys, as ``mask`` looks it up."""
        found: set[int] = set(self._always)
        for text in texts:
            if len(text) >= _KEPT_FROM and self._looked_up_before(text):
                continue
            with self._lock:
                layers, held = self._held_at_every_key(text)
                # (not by a head of fixed text: the first batch of a kind owns its suffix,
                # and every text saying "internal" held the first test's host name's head)
                found |= self._owners_in(_joined(layers), held, leaving_out=self._fixed_heads)
        own = {secret.value for secret in leaving_out}
        with self._lock:
            # (a test's: a secret made apart, announced, is only masked; a unit test's
            # Secret("password") is not a leak in a later test's "Trying password auth")
            found = {index for index in found if index < before and self._added_by[index]}
            if not found:
                return None
            indexes = tuple(
                i for i in sorted(found) if any(s.value not in own for s in self._batches[i])
            )
            added_by = {
                s.id: self._added_by[i]
                for i in indexes
                for s in self._batches[i]
                if s.value not in own
            }
        if not indexes:
            return None
        return self._scanner(indexes), added_by

    def _looked_up_before(self, text: bytes) -> bool:
        """Whether a long text equal to ``text`` was looked up for earlier secrets lately
        (by its hash). Such a text comes in test after test (a traceback, a span's stack
        trace): it was looked up then at every batch there was, and no canary made since
        can be in it (it is the same text); a value registered since could (README)."""
        with self._seen_lock:
            return _remembered(self._looked_up, hash(text))

    def _held(self, text: bytes, keys: frozenset[int] | KeySet) -> tuple[Sequence[bytes], set[int]]:
        """``_layers(text)`` and the keys of ``keys`` (heads' first four bytes) among their
        4-byte substrings. A text of _KEPT_FROM to _KEPT_UP_TO bytes seen a second time is
        kept with the set of its substrings (a recorded span's stacktrace, a traceback:
        it comes again in test after test); any other is looked up at ``keys`` alone
        (``substring_keys_in``): the set of a log record's substrings, made for every
        record of every test and used once, was most of the absence proof's cost."""
        if len(text) >= _KEPT_FROM:
            kept = self._kept.get(text)
            if kept is not None:
                return kept[0], _common(kept[1], keys)
            if len(text) <= _KEPT_UP_TO and self._seen_before(text):
                kept_layers, present = self._kept.keyed(text, self._layers(text))
                return kept_layers, _common(present, keys)
        layers = self._layers(text)
        # (one lookup for every layer: a 4-byte piece across a separator holds a newline,
        # and a key found only there names no head in any layer: ``_owners_in`` reads them)
        joined = layers[0] if len(layers) == 1 else _LAYER_SEPARATOR.join(layers)
        return layers, substring_keys_in(joined, keys)

    def _seen_before(self, text: bytes) -> bool:
        """Whether a text equal to ``text`` was looked up lately (by its hash: a collision
        only keeps a text that comes once)."""
        with self._seen_lock:
            return _remembered(self._seen, hash(text))

    def _owners_in(
        self, layers: Iterable[bytes], keys: Iterable[int], leaving_out: Collection[bytes] = ()
    ) -> set[int]:
        """The owners of the heads (other than ``leaving_out``) at each place in ``layers``
        where one of ``keys`` (a head's first four bytes) occurs (under the lock)."""
        found: set[int] = set()
        keys = keys if isinstance(keys, Collection) else list(keys)
        for data in layers:
            if len(keys) * len(data) > _FIND_LOOP_UP_TO:
                # (a long text holding many keys: one pass over it, not one a key)
                for position in key_positions(data, keys):
                    self._owner_of(data[position : position + HEAD_BYTES], found, leaving_out)
                continue
            for key in keys:
                self._owners_at(data, key.to_bytes(4, sys.byteorder), found, leaving_out)
        return found

    def _owners_at(
        self, data: bytes, start: bytes, found: set[int], leaving_out: Collection[bytes] = ()
    ) -> None:
        """Add to ``found`` the owners of the heads at each place ``start`` occurs."""
        position = data.find(start)
        while position >= 0:
            self._owner_of(data[position : position + HEAD_BYTES], found, leaving_out)
            position = data.find(start, position + 1)

    def _owner_of(self, head: bytes, found: set[int], leaving_out: Collection[bytes]) -> None:
        """Add to ``found`` the owners of ``head``, if any batch has it (and it is not one
        of ``leaving_out``)."""
        owner = self._heads.get(head)
        if owner is None or head in leaving_out:
            return
        if owner == SHARED:
            found.update(self._shared[head])
        else:
            found.add(owner)

    def _scanner(self, indexes: tuple[int, ...]) -> Scanner:
        with self._lock:
            scanner = self._scanners.get(indexes)
            if scanner is not None:
                self._scanners.move_to_end(indexes)
                return scanner
            secrets = [s for i in indexes for s in self._batches[i]]
        scanner = masking_scanner(secrets)
        with self._lock:
            self._scanners[indexes] = scanner
            while len(self._scanners) > _CACHED_SCANNERS:
                self._scanners.popitem(last=False)
        return scanner

    def mask(self, text: str) -> str:
        """``text`` with every form and every piece of every known secret masked."""
        if not self._batches or not text:
            return text
        indexes = self._candidates(str.encode(text, "utf-8", "surrogatepass"))
        if not indexes:
            return text
        return self._scanner(indexes).mask(text)


#: Joins the strings of a document for one masking pass; no needle spans it.
_STRING_SEPARATOR = "\n\x00\x00\n"


def mask_strings(value: Any, mask: Callable[[str], str]) -> Any:
    """JSON data ``value`` with every string masked by ``mask`` (keys included), the data
    itself when none needs it: one pass over all of them first, since nearly always none
    does (a report record holds a few dozen short strings). Where one does, the items of
    a list (and the values of a mapping) are each looked at that way in turn: the
    session's records are masked once, at its end, and one record showing a secret must
    not make every string of a thousand others be masked one by one."""
    if _clean(value, mask):
        return value
    return _masked(value, mask)


def _clean(value: Any, mask: Callable[[str], str]) -> bool:
    strings: list[str] = []
    _strings(value, strings)
    if isinstance(mask, _JsonMask):  # (as JSON will spell them too)
        return mask.is_clean(strings)
    joined = _STRING_SEPARATOR.join(strings)
    return mask(joined) == joined


def _masked(value: Any, mask: Callable[[str], str]) -> Any:
    """``map_strings(value, mask)`` for ``value`` that needs masking somewhere; its parts
    that need none kept as they are."""
    if isinstance(value, list) and len(value) > 1:
        return [item if _clean(item, mask) else _masked(item, mask) for item in list.copy(value)]
    if isinstance(value, dict) and len(value) > 1:
        return {
            mask(key_text_of(key)): item if _clean(item, mask) else _masked(item, mask)
            for key, item in dict.items(value)
        }
    return map_strings(value, mask)


def _strings(value: Any, into: list[str]) -> None:
    if isinstance(value, str):
        into.append(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            into.append(str(key))
            _strings(item, into)
    elif isinstance(value, list):
        for item in value:
            _strings(item, into)


# --- strings written as JSON ------------------------------------------------------------


def masked_for_json(mask: Callable[[str], str]) -> Callable[[str], str]:
    """``mask`` for strings that are then written as JSON (a report masks its strings
    before it dumps them: masking the dumped text could cut an escape in two). ``mask``
    judges a text as it is, and JSON spells a quote or a backslash with two characters, a
    control character with up to six: a few of a secret's characters between its hostile
    ones, too few to be a piece as they are, can make one as JSON spells them (a masking
    window of an escaped spelling counts its characters' bits, ``ESCAPED_WINDOW_BITS``,
    and the pytest plugin's masker masks exactly that in a repr). Those characters are
    masked too, with the label ``mask`` gives their spelling. ``mask_strings`` asks it
    whether a whole document is clean in two calls of ``mask``."""
    return _JsonMask(mask)


class _JsonMask:
    __slots__ = ("mask",)

    def __init__(self, mask: Callable[[str], str]) -> None:
        self.mask = mask

    def is_clean(self, strings: list[str]) -> bool:
        """Whether ``strings`` need no masking, as they are nor as JSON spells each. The
        spellings are joined, not the strings spelled joined: JSON spells the separator's
        NULs ``\\u0000``, and the masking window ``00\\u00`` of a canary holding "00é" (its
        ASCII JSON spelling) matched that, so each record of a matrix session's report was
        then judged string by string (a third of the session's time). The raw separator
        between spellings is safe: JSON writes no raw control character."""
        joined = _STRING_SEPARATOR.join(strings)
        if self.mask(joined) != joined:
            return False
        spelled = _STRING_SEPARATOR.join(map(json_spelling, strings))
        return spelled == joined or self.mask(spelled) == spelled

    def __call__(self, text: str) -> str:
        out = self.mask(text)
        if not _masks(self.mask, out):
            return out
        parts = MASK_LABEL.split(out)
        labels = MASK_LABEL.findall(out)
        kept: list[str] = []
        for n, part in enumerate(parts):
            if part and _masks(self.mask, part):
                part = _masked_runs(part, self.mask)
            kept.append(part)
            if n < len(labels):
                kept.append(labels[n])
        return "".join(kept)


def _masks(mask: Callable[[str], str], text: str) -> bool:
    """Whether ``mask`` masks something of ``text`` as JSON spells it (False for a text
    JSON spells as it is: that is ``mask(text)``'s to say)."""
    spelled = json_spelling(text)
    return spelled != text and mask(spelled) != spelled


#: What marks a character masked without a label of its own (never expected: a piece
#: lies within WINDOW_CHARS characters, and each is found by the halves below).
_PIECE_LABEL = mask_label("secret", WINDOW.name())


def _masked_runs(part: str, mask: Callable[[str], str]) -> str:
    """``part`` (no label in it) with each shortest run of characters whose JSON spelling
    ``mask`` masks replaced by the label it gives. The runs are looked for in halves (a
    masking window is WINDOW_CHARS characters of the spelling: it lies in the spelling of
    the WINDOW_CHARS characters from the one it starts in, so within one of two halves
    that overlap by fewer): a long text with one piece costs some twenty calls."""
    marked = [""] * len(part)  # the label over each character, if any
    _mark(part, 0, len(part), mask, marked)
    out: list[str] = []
    for k, char in enumerate(part):
        if not marked[k]:
            out.append(char)
        elif k == 0 or marked[k - 1] != marked[k]:
            out.append(marked[k])
    result = "".join(out)
    if any(_masks(mask, piece) for piece in MASK_LABEL.split(result) if piece):
        return _PIECE_LABEL  # (a piece longer than a window, across both halves)
    return result


def _mark(part: str, low: int, high: int, mask: Callable[[str], str], marked: list[str]) -> None:
    if high - low > 4 * WINDOW_CHARS:
        middle = (low + high) // 2
        halves = ((low, min(high, middle + WINDOW_CHARS - 1)), (middle, high))
        for start, end in halves:
            if _masks(mask, part[start:end]):
                _mark(part, start, end, mask, marked)
        return
    for start in range(low, high):
        if not _masks(mask, part[start : min(high, start + WINDOW_CHARS)]):
            continue
        for end in range(start + 1, min(start + WINDOW_CHARS, high) + 1):
            probe = json_spelling(part[start:end])
            shown = mask(probe)
            if shown != probe:
                label = MASK_LABEL.search(shown)
                first = start  # the shortest run: a masker widens a match to its token
                while first + 1 < end and _masks(mask, part[first + 1 : end]):
                    first += 1
                for k in range(first, end):
                    marked[k] = label.group() if label else _PIECE_LABEL
                break
