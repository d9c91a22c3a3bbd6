"""Find every registered secret, in every form, in str, bytes, files and streams."""

from __future__ import annotations

import _thread
import bisect
import codecs
import functools
import os
import stat
import sys
from array import array
from collections.abc import Container, Iterable, Iterator, Sequence
from operator import itemgetter

from . import engine as engine_module
from ._lazy import lazy_compile
from .canaries import Secret
from .decode import (
    DENSE_ESCAPES,
    Run,
    all_decoders,
    decode_pieces,
    decode_runs,
    masking_decoders,
    wrap_extent,
)
from .engine import Engine, build_engine, resolve_backend
from .findings import (
    CONTEXT_BYTES,
    WIDEN_BYTES,
    Finding,
    SecretPieces,
    Span,
    mask_all,
    mask_windows,
    masked_excerpt,
)
from .forms import (
    MASK_ONLY_FORMS,
    RUN_KEEPING_FORMS,
    RUN_KEEPING_MAX_NEEDLES,
    TAIL_BITS,
    UTF16_FORM,
    UTF16_PREFIX,
    UTF16_SUFFIX,
    FormFn,
    Needle,
    anchor_run,
    decode_keys,
    eager_forms,
    is_piece,
    needle_table,
    unsure_pieces,
    verify_piece,
    weak_masks,
    window_forms,
)

TYPE_CHECKING = False  # not typing's: its import was a twentieth of a scan's start-up
if TYPE_CHECKING:
    from typing import BinaryIO

__all__ = ["HEAD_BYTES", "Scanner"]

#: a buffer's hits to report, sorted, with the buffer (as bytes) and the spans for masking
_Prepared = tuple[bytes, list["_Hit"], list[Span]]
#: (patterns, form of each, owning secret of each, {pattern index: other (secret, form)})
_Index = tuple[list[bytes], list[str], list[int], dict[int, list[tuple[int, str]]]]

#: Bytes read per chunk when streaming: memory stays bounded by a few of these.
CHUNK_BYTES = 8 * 1024 * 1024
# Decoded runs are joined with this between them, so one search covers them all; no needle
# can span it (base64, hex and percent runs all stop at a newline or NUL).
JOIN_SEPARATOR = b"\n\x00\x00\n"
#: A scanner that decodes switches to keyed decoding (see "keyed decoding" below) when it is
#: made for an input this large or first searches a buffer this large.
KEYED_FROM_BYTES = 256 * 1024
#: A token decoded around a key reaches at most this far on each side of it.
REGION_BYTES = 4096
#: ``Scanner.pattern_heads``: a pattern's first this many bytes, read as one int
HEAD_BYTES = 8
_HEAD_CODE = "Q"  # an array type code of 8-byte items (checked where heads are read)
_HEAD_OF = itemgetter(slice(0, HEAD_BYTES))
_TAIL_CODE = "I" if array("I").itemsize == 4 else "L"  # (checked where tails are read)
_TAIL_OF = itemgetter(slice(-4, None))
_BYTE_ORDER = sys.byteorder  # how an array reads its items' bytes


#: The decoders whose run is the encoded bytes themselves, not a whole token around them.
_POSITIONAL_LAYERS = ("base64>", "hex>")


class _Hit:
    """A needle's occurrence (a plain class: a frozen dataclass cost start-up 0.9 ms to
    define, and each of the thousands of hits of a decoding pass an attribute set through
    ``object.__setattr__``)."""

    __slots__ = ("start", "end", "needle", "chain")

    def __init__(self, start: int, end: int, needle: Needle, chain: str = "") -> None:
        self.start, self.end, self.needle, self.chain = start, end, needle, chain

    def __repr__(self) -> str:
        return f"_Hit({self.start}, {self.end}, {self.needle!r}, {self.chain!r})"

    @property
    def form(self) -> str:
        return self.chain + self.needle.form

    @property
    def secret(self) -> Secret:
        return self.needle.secret

    def span(self, rank: int = 0) -> Span:
        return Span(self.start, self.end, self.secret.kind, self.form, rank)


def check_scanner_arguments(secrets: object, backend: object) -> None:
    """Refuse what a ``Scanner`` cannot take, as a usage error that describes the value: a
    str for the secrets (an iterable of characters), anything but ``Secret``s in them, an
    unknown engine name (a plain ``ValueError``, an ``AttributeError`` and the engine
    name quoted raw before: found by a hunting helper)."""
    from .engine import BACKENDS
    from .errors import LeakcheckUsageError, NotASecretError, quoted, with_article

    if backend not in ("auto", *BACKENDS):
        raise LeakcheckUsageError(
            f"unknown engine {quoted(backend)}; choose auto, hyperscan or ahocorasick"
        )
    if isinstance(secrets, str | bytes) or not hasattr(secrets, "__iter__"):
        raise NotASecretError(
            "secrets is an iterable of leakcheck Secrets (Secret.from_user(value), a canary "
            f"factory's), not {with_article(type(secrets).__name__)}"
        )
    if isinstance(secrets, list | tuple):
        wrong = next((s for s in secrets if not isinstance(s, Secret)), None)
        if wrong is not None:
            raise NotASecretError(
                "secrets holds leakcheck Secrets (Secret.from_user(value)), not "
                f"{with_article(type(wrong).__name__)}"
            )


@functools.lru_cache(maxsize=256)
def _raw_windows(secret: Secret) -> tuple[str, ...]:
    """The canary's own masking windows (``forms.window_forms``: runs of its value, and of
    its ``repr`` and JSON spellings, that carry the bits a masked piece must), as text."""
    from .forms import window_forms

    texts = (window.decode("utf-8", "ignore") for _, window in window_forms(secret))
    return tuple(dict.fromkeys(text for text in texts if len(text) >= 4))


class Scanner:
    """Searches for every form of every secret in one pass over the input.

    ``decode`` adds the decoding second pass (percent, base64, hex runs, ``decode_depth``
    layers deep) for chains such as base64-of-JSON.

    On the ``ahocorasick`` backend (what the pytest plugin uses for a test's small texts)
    the URL, JSON, repr and HTML spellings of a secret are made only once a text to search
    holds the secret's anchor run, which each of them contains (see "needles put off"
    below): same findings, a fraction of the cost for a test that leaks nothing.
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
        input_bytes: int | None = None,
        masked_bits: float = TAIL_BITS,
    ) -> None:
        check_scanner_arguments(secrets, backend)
        self.secrets: list[Secret] = list(secrets)
        # what a masked head or tail must carry to be reported (forms.masked_bits_for: a
        # search for many secrets at once); a weaker one is still masked
        self._masked_bits = masked_bits
        #: masked heads and tails found with fewer bits than ``masked_bits`` (masked, not
        #: reported): a scan that found only those is not called clean
        self.unreported_pieces = 0
        self.decode = decode
        self.decode_depth = decode_depth
        # strict: report mask-only windows too (for scanning our own output, where a
        # 6-character piece of a secret is already too much)
        self._mask_only = frozenset() if strict else MASK_ONLY_FORMS
        if forms is None:
            from .extensions import detection_forms

            forms = detection_forms()
        # (a masker, one with the masking windows, decodes base64 pieces at every shift)
        masking = window_forms in forms
        self._decoders = (masking_decoders() if masking else all_decoders()) if decode else {}
        self._all_forms = tuple(forms)
        self._backend = backend
        # a masker may be called from a logging thread (``_thread``: importing threading
        # cost a scan 0.5 ms of its start-up)
        self._lock = _thread.allocate_lock()
        #: the secrets' pieces that an excerpt may show in no case nor as hex (made at the
        #: first finding: a clean scan makes none)
        self._pieces: SecretPieces | None = None
        self._eager_forms = eager_forms(self._all_forms)
        # secret index -> its anchor run, for the secrets whose RUN_KEEPING_FORMS needles
        # are put off (see _search)
        self._deferred: dict[int, bytes] = {}
        self._defers = _defers(backend, self._all_forms, self.secrets)
        if self._defers:
            for i, secret in enumerate(self.secrets):
                run = anchor_run(secret)
                if run is not None:
                    self._deferred[i] = run
            # Below ANCHOR_FROM_PATTERNS the engine finds hits in an order that does not
            # depend on the pattern list (which of two equally long overlapping needles
            # names a mask follows it): put off only what keeps every needle below it.
            # (counted only until it reaches that: a table made here for each of a
            # batch's 5,000 secrets was made again for the index, the tables' cache
            # keeping a few hundred secrets)
            most = len(self._deferred) * RUN_KEEPING_MAX_NEEDLES
            for i, s in enumerate(self.secrets):
                if most >= engine_module.ANCHOR_FROM_PATTERNS:
                    break
                most += len(
                    needle_table(s, self._eager_forms if i in self._deferred else self._all_forms)
                )
            if most >= engine_module.ANCHOR_FROM_PATTERNS:
                self._deferred.clear()
                self._defers = False
        (self._patterns, self._forms, self._owner, self._shared) = self._index(self._deferred)
        self._needles: dict[int, tuple[Needle, ...]] = {}
        self._longest = (0, 1)  # (patterns counted, longest of them): see max_needle
        self._backend = backend = resolve_backend(backend, len(self._patterns), input_bytes)
        # keyed decoding: the keys and shapes searched in the needles' pass (after them)
        self._keys: list[bytes] = []
        self._key_owner: list[int] = []
        self._keyed = False
        #: keyed decoding for every text, however small (the caller's input is large: a
        #: scan's files), not only for those of KEYED_FROM_BYTES or more (``_keyed_for``)
        self._keyed_always = False
        if decode and input_bytes is not None and input_bytes >= KEYED_FROM_BYTES:
            self._keyed = self._keyed_always = self._key_up()
        # the engine and the number of needle patterns it was built with, swapped together
        # (an index from the engine at or past that number is a key's)
        self._compiled: tuple[Engine, int] = (self._build(), len(self._patterns))

    @property
    def engine(self) -> Engine:
        return self._compiled[0]

    def _build(self) -> Engine:
        if not self._keyed:
            return build_engine(self._patterns, self._backend)
        # the secret of each pattern: hyperscan searches for some through a run that
        # several of one secret's patterns share (engine._factor); only beside the keys,
        # where that costs its search nothing (the needles alone searched that way were
        # searched at about 0.6 of their speed, 20 secrets' on the bench corpus)
        families = [*self._owner, *self._key_owner]
        patterns = [*self._patterns, *self._keys]
        # and what a decoder says its runs start with where they hold no key (a plugin's:
        # base64 of gzip)
        shapes = [
            shape
            for decoder in self._decoders.values()
            for shape in getattr(decoder, "keyed_shapes", ())
        ]
        return build_engine(patterns, self._backend, (*DENSE_ESCAPES, *shapes), families)

    def _key_up(self) -> bool:
        """Make the keys of every secret; False (decode every run) when a secret has none."""
        keys: dict[bytes, int] = {}  # key -> the first secret that has it
        for i, secret in enumerate(self.secrets):
            own = decode_keys(secret)
            if own is None:
                return False
            for key in own:
                keys.setdefault(key, i)
        self._keys = list(keys)
        self._key_owner = list(keys.values())
        return True

    def _index(self, deferred: Container[int]) -> _Index:
        """Every distinct pattern, with the form it is found under and the secret that
        owns it, and the other (secret, form) pairs of a pattern that several secrets
        share (rare: equal or overlapping values); ``deferred`` secrets without their
        put-off forms.

        Kept as flat lists of bytes, str and int (``Needle`` objects are made only for
        hits): the plugin builds a scanner per test, and pytest keeps each test's harness,
        so every object here would be walked by the garbage collector until the session
        ends. Equal secrets (same value and id) own their needles through the first of
        them, as they did when needles were shared objects.
        """
        first_equal: dict[Secret, int] = {}
        owner_of = [first_equal.setdefault(s, i) for i, s in enumerate(self.secrets)]
        tables = [
            needle_table(secret, self._eager_forms if i in deferred else self._all_forms)
            for i, secret in enumerate(self.secrets)
        ]
        patterns: list[bytes] = []
        form_names: list[str] = []
        owners: list[int] = []
        for owner, table in zip(owner_of, tables, strict=True):
            patterns += table
            form_names += table.values()
            owners += [owner] * len(table)
        shared: dict[int, list[tuple[int, str]]] = {}
        if len(tables) > 1 and len(set(patterns)) != len(patterns):
            first: dict[bytes, int] = {}
            merged: list[int] = []
            for position, pattern in enumerate(patterns):
                index = first.setdefault(pattern, len(merged))
                if index == len(merged):
                    merged.append(position)
                else:
                    shared.setdefault(index, []).append((owners[position], form_names[position]))
            patterns = [patterns[i] for i in merged]
            form_names = [form_names[i] for i in merged]
            owners = [owners[i] for i in merged]
        return patterns, form_names, owners, shared

    def _owners(self, index: int) -> tuple[Needle, ...]:
        """The needles that pattern ``index`` stands for (made on first use)."""
        needles = self._needles.get(index)
        if needles is None:
            pattern = self._patterns[index]
            pairs = [(self._owner[index], self._forms[index]), *self._shared.get(index, ())]
            needles = tuple(Needle(pattern, self.secrets[i], form) for i, form in pairs)
            self._needles[index] = needles
        return needles

    # --- needles put off -------------------------------------------------------------------
    #
    # A pytest test registers a few secrets and searches a kilobyte or so of captured text
    # that holds none of them: making the URL, JSON, repr and HTML spellings of each (a
    # third of the needles, most of the cost of building a scanner) would be wasted. Every
    # one of those needles holds the secret's anchor run, so they are made for a secret
    # only when a text to be searched holds the run; until then the scanner searches for
    # the rest. Findings are the same: a needle that is not yet made cannot be in the text.
    #
    # Pattern indexes handed out by an engine stay valid (patterns are only appended, or
    # renamed), and a secret leaves ``_deferred`` only once the engine that searches for
    # its needles is in place: a masker may be called from a logging thread mid-search.

    def _search(
        self, buf: bytes | memoryview
    ) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        """The engine's hits in ``buf``, once every needle that could occur in it is made:
        (needle hits, key hits)."""
        if self._deferred:
            text = buf if isinstance(buf, bytes) else bytes(buf)
            due = [i for i, run in list(self._deferred.items()) if run in text]
            if due:
                self._make_deferred(due)
        if self.decode and not self._keyed and len(buf) >= KEYED_FROM_BYTES:
            self._make_keyed()
        engine, split = self._compiled
        hits = engine.scan(buf)
        if not self._keyed or not hits:
            return hits, []
        return [h for h in hits if h[0] < split], [h for h in hits if h[0] >= split]

    def _keyed_for(self, buf: bytes | memoryview) -> bool:
        """Whether ``buf`` is decoded around its keys only, not whole: a text of
        KEYED_FROM_BYTES or more, or any text of a scanner made for a large input. A
        masker keyed by one large text decoded every small text after it that way (a
        piece of a base64 or the hex of part of a token, masked by a fresh masker, then
        showed: found by a fuzzing helper)."""
        return self._keyed and (self._keyed_always or len(buf) >= KEYED_FROM_BYTES)

    def _make_keyed(self) -> None:
        with self._lock:
            if not self._keyed and self._key_up():
                self._keyed = True
                self._compiled = (self._build(), len(self._patterns))

    def _make_deferred(self, due: Iterable[int]) -> None:
        """Add the put-off needles of the secrets ``due``. A put-off form that names bytes
        another form of the secret also makes (it comes earlier in the form order) renames
        that pattern."""
        with self._lock:
            due = [i for i in due if i in self._deferred]
            if not due:
                return
            index_of = {pattern: i for i, pattern in enumerate(self._patterns)}
            for owner in due:
                for pattern, form in needle_table(self.secrets[owner], self._all_forms).items():
                    index = index_of.get(pattern)
                    if index is None:
                        index_of[pattern] = len(self._patterns)
                        self._patterns.append(pattern)
                        self._forms.append(form)
                        self._owner.append(owner)
                    elif self._owner[index] == owner:
                        if self._forms[index] != form:
                            self._forms[index] = form
                            self._needles.pop(index, None)
                    else:
                        pairs = self._shared.setdefault(index, [])
                        mine = [k for k, (i, _) in enumerate(pairs) if i == owner]
                        if not mine:
                            pairs.append((owner, form))
                        elif pairs[mine[0]][1] != form:
                            pairs[mine[0]] = (owner, form)
                        self._needles.pop(index, None)
            self._compiled = (self._build(), len(self._patterns))
            for owner in due:
                del self._deferred[owner]

    def _make_all(self) -> None:
        if self._deferred:
            self._make_deferred(list(self._deferred))

    def pattern_heads(
        self,
    ) -> tuple[array[int], array[int], array[int], list[tuple[bytes, int]]]:
        """Every needle pattern by its first HEAD_BYTES and its last 4 bytes, to tell which
        secrets can occur in a text without this scanner: (those first bytes of each
        pattern that long or longer, read as one int; its last 4, read so; the index in
        ``secrets`` of its secret; the shorter patterns, each with its secret's index), a
        pattern that several secrets share once for each. About 14 bytes a pattern."""
        self._make_all()
        with self._lock:
            patterns, owners, shared = self._patterns, self._owner, self._shared
            size = HEAD_BYTES
            if min(map(len, patterns), default=size) >= size:
                long: Sequence[int] = range(len(patterns))
                kept: Sequence[bytes] = patterns
                mine: Sequence[int] = owners
            else:
                long = [i for i, p in enumerate(patterns) if len(p) >= size]
                kept = [patterns[i] for i in long]
                mine = [owners[i] for i in long]
            heads = array(_HEAD_CODE, b"".join(map(_HEAD_OF, kept)))
            tails = array(_TAIL_CODE, b"".join(map(_TAIL_OF, kept)))
            who = array("H" if len(self.secrets) <= 0xFFFF else "I", mine)
            short = [(p, owners[i]) for i, p in enumerate(patterns) if len(p) < size]
            for index, pairs in shared.items():
                pattern = patterns[index]
                for owner, _form in pairs:
                    if len(pattern) < size:
                        short.append((pattern, owner))
                    else:
                        heads.append(int.from_bytes(pattern[:size], _BYTE_ORDER))
                        tails.append(int.from_bytes(pattern[-4:], _BYTE_ORDER))
                        who.append(owner)
        return heads, tails, who, short

    @property
    def needle_count(self) -> int:
        self._make_all()
        return len(self._patterns)

    @property
    def needles(self) -> list[Needle]:
        """Every needle, grouped by pattern in form order (as a scanner that puts nothing
        off indexes them)."""
        if self._defers:  # indexed afresh: put-off needles were appended out of order
            patterns, forms, owners, shared = self._index(())
        else:
            patterns, forms, owners, shared = self._patterns, self._forms, self._owner, self._shared
        return [
            Needle(pattern, self.secrets[i], form)
            for index, pattern in enumerate(patterns)
            for i, form in [(owners[index], forms[index]), *shared.get(index, ())]
        ]

    @property
    def forms(self) -> tuple[FormFn, ...]:
        return self._all_forms

    def needles_so_far(self) -> list[bytes]:
        """The needles made so far and, in place of the needles still put off, each
        secret's anchor run (which every one of them holds): what a text must hold for
        this scanner to find anything in it."""
        with self._lock:
            return [*self._patterns, *self._deferred.values()]

    @property
    def max_needle(self) -> int:
        self._make_all()
        # patterns are only ever appended: the count says whether the cached value holds
        counted, longest = self._longest
        if counted != len(self._patterns):
            longest = max(map(len, self._patterns[counted:]), default=1)
            self._longest = (len(self._patterns), max(longest, self._longest[1]))
        return self._longest[1]

    # --- hits within one buffer ----------------------------------------------------------

    def _first_pass(self, buf: bytes, first: list[tuple[int, int]] | None = None) -> list[_Hit]:
        hits = []
        unsure: list[_Hit] = []
        for index, end in self._search(buf)[0] if first is None else first:
            pattern = self._patterns[index]
            for needle in self._owners(index):
                hit = _Hit(end - len(pattern), end, needle)
                # (a user secret accepted early: its pieces are sized from its class bits,
                # a superset of the full estimate's; one the lower bound would not make is
                # verified, zxcvbn then run for that secret once: forms.unsure_pieces)
                if needle.secret.mask_bits and needle.form in unsure_pieces(needle.secret):
                    unsure.append(hit)
                else:
                    hits.append(hit)
        if unsure:
            hits += _verified(buf, unsure, hits)
        return hits

    def _decoded(self, buf: bytes, depth: int) -> list[_Hit]:
        runs = list(decode_runs(buf, self._decoders))
        if not runs:
            return []
        joined = JOIN_SEPARATOR.join(decoded for *_, decoded in runs)
        inner = self._first_pass(joined)
        if depth > 1:
            inner += self._decoded(joined, depth - 1)
        return _in_runs(runs, inner, buf)

    def _decoded_many(self, texts: list[bytes], depth: int) -> list[list[_Hit]]:
        """``_decoded`` of each of ``texts``, with one decoding pass and one engine pass
        for all of them at each depth (the same hits, in the same order)."""
        runs_of = decode_pieces(texts, self._decoders)
        joined = [JOIN_SEPARATOR.join(decoded for *_, decoded in runs) for runs in runs_of]
        inner_of = self._first_pass_many(joined)
        if depth > 1:
            for inner, deeper in zip(inner_of, self._decoded_many(joined, depth - 1), strict=True):
                inner += deeper
        return [
            _in_runs(runs, inner, text)
            for runs, inner, text in zip(runs_of, inner_of, texts, strict=True)
        ]

    def _first_pass_many(self, texts: list[bytes]) -> list[list[_Hit]]:
        """``_first_pass`` of each of ``texts``, in one engine pass over all of them
        joined (a hit across a separator, in no one text, left out)."""
        per: list[list[_Hit]] = [[] for _ in texts]
        starts, position = [], 0
        for text in texts:
            starts.append(position)
            position += len(text) + len(JOIN_SEPARATOR)
        for hit in self._first_pass(JOIN_SEPARATOR.join(texts)):
            i = bisect.bisect_right(starts, hit.start) - 1
            base = starts[i]
            if hit.end - base <= len(texts[i]):
                per[i].append(_Hit(hit.start - base, hit.end - base, hit.needle, hit.chain))
        return per

    # --- keyed decoding --------------------------------------------------------------------
    #
    # Decoding every encoded-looking run of a large input costs far more than searching it:
    # log-like text holds a base64, hex or UUID run every hundred bytes, and decoding them
    # one by one in Python ran at 8 MiB/s. A chain of a secret's encodings always holds one
    # of the secret's keys (``leakcheck.forms.decode_keys``: a run of letters and digits
    # that every needle holds, or what one base64 or hex layer makes of it; escaping layers
    # leave letters and digits alone), or a run of escapes dense enough to hide letters and
    # digits (``DENSE_ESCAPES``). So past KEYED_FROM_BYTES the keys and shapes are searched in
    # the needles' own engine pass, and only the tokens around their hits are decoded (to
    # the same depth, with every decoder): a clean text pays for a few more literals in one
    # pass, nothing else. A chain whose outer layer is neither an escaping layer nor one
    # base64 or hex layer over a needle (base64 of base64 of JSON) is found in a small text,
    # which is decoded whole, and not past KEYED_FROM_BYTES.

    def _decoded_keyed(
        self, buf: bytes, keys: list[tuple[int, int]], needles: list[tuple[int, int]]
    ) -> list[_Hit]:
        """Hits in the decoded tokens around each key hit, and around each needle hit
        (a fragment in one piece of a wrapped line, a form inside an encoded run)."""
        keys = keys + needles
        if not keys:
            return []
        lows: list[int] = []
        texts: list[bytes] = []
        high = -1
        for _index, end in sorted(keys, key=lambda k: k[1]):
            if end <= high:  # inside the token just decoded
                continue
            low, high = _region(buf, end)
            lows.append(low)
            texts.append(bytes(buf[low:high]))
        # each token decoded as if alone, all of them in one pass (some 6,000 per GiB of
        # log-like text: a decoding and an engine pass per token cost more in calls)
        return [
            _Hit(hit.start + low, hit.end + low, hit.needle, hit.chain)
            for low, found in zip(lows, self._decoded_many(texts, self.decode_depth), strict=True)
            for hit in found
        ]

    def _hits(
        self, buf: bytes, first: tuple[list[tuple[int, int]], list[tuple[int, int]]] | None = None
    ) -> tuple[list[_Hit], list[_Hit]]:
        """(hits to report, every hit for masking) in ``buf``; ``first`` is the engine's
        answer for ``buf`` when the caller already has it."""
        needles, keys = self._search(buf) if first is None else first
        hits = self._first_pass(buf, needles)
        masking = hits
        if self.decode:
            # A decoded hit adds nothing to report where the first pass already saw the
            # whole secret; where it saw only a fragment (a base64 piece), the decoded
            # chain is the fuller account and wins (it spans the fragment). A base64 or
            # hex one masks all the same: such a run glued to the token's tail (the token,
            # then its base64 on the next line) reaches past the token, and that part
            # showed. (An escaping layer's run is a whole token, a URL holding a key: the
            # key's own hit masks what it must.)
            whole = [h for h in hits if not is_piece(h.needle.form)]
            decoded = (
                self._decoded_keyed(buf, keys, needles)
                if self._keyed_for(buf)
                else self._decoded(buf, self.decode_depth)
            )
            masking = list(hits)
            for hit in decoded:
                if not any(
                    d.secret is hit.secret and d.start < hit.end and hit.start < d.end
                    for d in whole
                ):
                    hits.append(hit)
                    masking.append(hit)
                elif hit.chain.startswith(_POSITIONAL_LAYERS):
                    masking.append(hit)
        # masking windows (MASKING_FORMS) mask our own output but are too short to report
        reportable = [h for h in hits if h.needle.form not in self._mask_only]
        if self._masked_bits > TAIL_BITS:  # (still masked: only not reported)
            strong = [h for h in reportable if not self._too_weak(h.needle)]
            self.unreported_pieces += len(reportable) - len(strong)
            reportable = strong
        return _outermost(reportable, buf), masking

    def _too_weak(self, needle: Needle) -> bool:
        """A masked head or tail whose characters carry less than this search needs."""
        piece = needle.form.rpartition(">")[2]  # (the piece of a decoded chain)
        return piece in weak_masks(needle.secret, self._masked_bits)

    # --- public API -----------------------------------------------------------------------

    def scan(self, data: str | bytes, source: str = "<text>") -> list[Finding]:
        """Every finding in ``data`` (str is searched as its UTF-8 bytes)."""
        data = _as_bytes(data)
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
        only once there is a finding: on the fly for a stream that cannot be re-read; for a
        seekable one, from its first finding on, in the pass (each chunk is still in cache:
        about 0.4 s of CPU per GiB of log-like text, where re-reading it cost 0.8), and
        before it by re-reading the stream up to it at the end.
        """
        # Hits must be settled (every overlapping hit and the whole excerpt window visible)
        # before they are reported: the margin depends on the longest needle.
        margin = self.max_needle + CONTEXT_BYTES + WIDEN_BYTES
        seekable = _seekable(stream)
        origin = stream.tell() if seekable else 0
        # a small file gets a small buffer (a directory of small logs would otherwise
        # allocate a chunk per file); one that grows while read is read in such chunks
        chunk_bytes = min(chunk_bytes, _size_hint(stream, origin) + 1)
        chunk_bytes = max(chunk_bytes, 4 * margin)
        keep_max = 3 * margin
        memory = bytearray(chunk_bytes + keep_max)
        view = memoryview(memory)
        carry = 0  # bytes carried at the front of memory
        base = 0  # absolute offset of memory[0]
        reported_upto = 0
        pending: list[Finding] = []  # seekable: every finding, given its line at the end
        # where the pass located each of them: (newlines from ``counted_from`` to it, its
        # column), or None (found before counting began, or on a line that began before)
        in_pass: list[tuple[int, int] | None] = []
        counted_from = -1 if seekable else 0  # newlines are counted from here on (-1: not yet)
        newlines = 0  # newlines from counted_from to memory[0]
        # the code points of the line before memory[0] (None: the line began before
        # counted_from, where nothing was counted; a seekable stream counts from its first
        # finding on, its line then unknown: none made for it, a codec's decoder each)
        line: _CodePoints | None = None if seekable else _CodePoints()
        # the hits of a buffer carried whole (a file shorter than the carry: the next read
        # finds the end of the stream, and the same buffer is searched again for the hits
        # it could not settle): (its length, its hits), searched and decoded once
        kept_whole: tuple[int, _Prepared | None] | None = None
        # a big regular file's newlines are counted beside the search, by a child process,
        # from its first finding on (_NewlineCounter); otherwise counted here, as above
        beside = seekable and _NewlineCounter.worth_it(stream, origin)
        counter: _NewlineCounter | None = None
        try:
            while True:
                size = _read_into(stream, view[carry : carry + chunk_bytes])
                at_end = size == 0
                length = carry + size
                if at_end and length == 0:
                    break
                data = view[:length]
                limit = base + length if at_end else base + length - margin
                if kept_whole is not None and size == 0 and kept_whole[0] == length:
                    prepared = kept_whole[1]
                else:
                    prepared = self._prepared(data)
                kept_whole = None
                for hit, buf, spans in self._reported(prepared, base, reported_upto, limit):
                    finding = self._finding(buf, hit, spans, base, source)
                    where = None if counted_from < 0 else _where(buf, hit, newlines, line)
                    if seekable:
                        pending.append(finding)
                        in_pass.append(where)
                    else:
                        assert where is not None  # (counted from the start, the line known)
                        yield _located(finding, where[0] + 1, where[1])
                reported_upto = max(reported_upto, limit)
                if at_end:
                    break
                keep = min(length, keep_max)
                cut = length - keep
                if counted_from >= 0:
                    newlines += memory.count(b"\n", 0, cut)
                    j = memory.rfind(b"\n", 0, cut)
                    if j >= 0:
                        line = _CodePoints(after_newline=True)
                    if line is not None:
                        line.feed(view[j + 1 : cut])
                elif pending and beside:
                    counter = counter or _NewlineCounter(stream.fileno(), origin)
                elif pending:  # a seekable stream's first findings: count from here on
                    counted_from, line = base + cut, None
                if not cut:  # (its hits read from a copy: _readable copies a part of memory)
                    kept_whole = (length, prepared)
                memory[:keep] = memory[cut:length]
                carry, base = keep, base + cut
        except BaseException:  # (a read that failed, an interrupt: no child left counting)
            if counter is not None:
                counter.close()
            raise
        del view
        located = counter.locate(pending, stream.fileno()) if counter is not None else None
        if located is not None:
            yield from located
        elif pending:  # (and where the counter could not: the file shrank, a read failed)
            stream.seek(origin)
            yield from _lines_of(pending, in_pass, counted_from, _reread(stream))

    def _settled(
        self, data: bytes | memoryview, base: int, after: int, limit: int
    ) -> Iterator[tuple[_Hit, bytes, list[Span]]]:
        """Hits of ``data`` whose absolute end lies in ``(after, limit]``, with the buffer
        (as bytes) and every span near them for masking."""
        return self._reported(self._prepared(data), base, after, limit)

    def _prepared(self, data: bytes | memoryview) -> _Prepared | None:
        """Every hit of ``data`` to report, sorted, with the buffer (as bytes) and the
        spans for masking; None when there is none."""
        first = self._search(data)
        if not first[0] and (not self.decode or (self._keyed_for(data) and not first[1])):
            return None
        buf = _readable(data)
        report, every = self._hits(buf, first)
        spans = sorted(
            [*(h.span() for h in every), *(h.span(rank=1) for h in report)],
            key=lambda s: s.start,
        )
        return buf, sorted(report, key=lambda h: (h.start, h.end)), spans

    def _reported(
        self, prepared: _Prepared | None, base: int, after: int, limit: int
    ) -> Iterator[tuple[_Hit, bytes, list[Span]]]:
        """The hits of ``prepared`` whose absolute end lies in ``(after, limit]``."""
        if prepared is None:
            return
        buf, report, spans = prepared
        starts = [s.start for s in spans]
        longest = max((s.end - s.start for s in spans), default=0)
        # A span matters to an excerpt when its widened extent reaches the excerpt's window;
        # masking with only those keeps one excerpt linear, not quadratic, in the hits.
        reach = CONTEXT_BYTES + WIDEN_BYTES
        for hit in report:
            if after < base + hit.end <= limit:
                low = bisect.bisect_left(starts, hit.start - reach - longest)
                high = bisect.bisect_right(starts, hit.end + reach)
                near = [s for s in spans[low:high] if s.end > hit.start - reach]
                yield hit, buf, near

    def _finding(self, buf: bytes, hit: _Hit, spans: list[Span], base: int, source: str) -> Finding:
        excerpt = masked_excerpt(buf, hit.start, hit.end, spans, utf16=_is_utf16(hit.form))
        # (a canary's: its hostile symbols break the runs that an excerpt shows «opaque»; a
        # user's token is one such run, and its windows would cost a scan its full
        # strength estimate, zxcvbn, at start-up)
        if hit.secret.generated and window_forms not in self._all_forms:
            # (a detection scanner finds a form whole, and masks that; the rest of the secret
            # around it, a hostile canary's symbols that no detection needle holds, was shown:
            # 31 of an api_key's 50 characters beside its "prefix-15", found by a hunting
            # helper. Masked with the pieces a masker looks for, the excerpt is safe to print)
            windows = _raw_windows(hit.secret)
            excerpt = mask_windows(excerpt, hit.secret.kind, windows)
            # (and the source the caller named: a log file named after a session, a URL
            # with its token, went raw into ``location`` and the finding's repr)
            source = mask_windows(source, hit.secret.kind, windows)
        # (masking is by matched span, raw and case-sensitive: an app's log line that
        # upper-cased a token, or a key id spelled in hex, showed a piece of a secret next
        # to its masked hit; looked for in these short texts only)
        pieces = self._pieces
        if pieces is None:
            pieces = self._pieces = SecretPieces(self.secrets)
        excerpt, source = pieces.mask(excerpt), pieces.mask(source)
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
            excerpt=excerpt,
        )

    @property
    def decodes_whole_texts(self) -> bool:
        """Whether the decoding pass (if on) decodes every run of a text, as ``layers``
        says: not once the scanner has searched a text of KEYED_FROM_BYTES or more (it
        then decodes only around its keys)."""
        return not self._keyed

    def layers(self, text: bytes) -> tuple[bytes, ...] | None:
        """``text`` and each layer the decoding pass searches in it, as a scanner that
        decodes whole texts does: the runs decoded from ``text``, joined; the runs decoded
        from those, joined; to ``decode_depth`` layers (``text`` alone without decoding).
        A text that holds no needle in any of its layers has no hit. None where searching
        a layer would key the scanner (KEYED_FROM_BYTES)."""
        layers = [text]
        layer = text
        for _ in range(self.decode_depth if self.decode else 0):
            runs = list(decode_runs(layer, self._decoders))
            if not runs:
                break
            layer = JOIN_SEPARATOR.join(decoded for *_, decoded in runs)
            if len(layer) >= KEYED_FROM_BYTES:
                return None
            layers.append(layer)
        return tuple(layers)

    @property
    def layering(self) -> tuple[object, ...]:
        """What ``layers`` of a text depend on besides the text (the depth searched and
        the decoders): a key for keeping them."""
        return (self.decode_depth if self.decode else 0, tuple(self._decoders.items()))

    def hit_starts(self, data: bytes) -> list[int]:
        """Start offsets of every reportable hit in ``data`` (first pass and decoded), for
        triage: which parts of a joined buffer need a full scan."""
        report, _ = self._hits(data)
        return sorted(h.start for h in report)

    def mask(self, text: str) -> str:
        """``text`` with every form of every secret masked: for messages we print ourselves.
        Always a plain ``str``."""
        text = text if type(text) is str else str.__str__(text)
        buf = text.encode("utf-8", "surrogatepass")
        _, every = self._hits(buf)
        if not every:
            return text
        return mask_all(buf, [h.span() for h in every])


def _verified(buf: bytes, unsure: list[_Hit], hits: list[_Hit]) -> list[_Hit]:
    """The hits the full estimate makes of the ``unsure`` ones in ``buf`` (an
    early-accepted secret's pieces that its class bits make: ``forms.verify_piece``): the
    longer bare piece that ``buf`` holds there, the same masked head or tail, or none. One
    inside a hit of the whole secret among ``hits`` is left out unverified (that hit holds
    and masks it, and a leaked token costs no zxcvbn). A piece left out is neither reported
    nor masked, as with ``--full-estimate``, which makes no such needle: masking a piece of
    our own text that the full estimate does not count (a word after ``...``) would tell
    that the secret holds it."""
    wholes = [h for h in hits if not is_piece(h.needle.form)]
    verified = []
    for hit in unsure:
        needle = hit.needle
        if any(
            w.needle.secret is needle.secret and w.start <= hit.start and hit.end <= w.end
            for w in wholes
        ):
            continue
        found = verify_piece(needle.secret, needle.form, buf, hit.start, hit.end)
        if found is None:
            continue
        name, pattern, low, high = found
        if pattern != needle.pattern or name != needle.form:
            needle = Needle(pattern, needle.secret, name)
        verified.append(_Hit(low, high, needle))
    return verified


def _in_runs(runs: Sequence[Run], inner: list[_Hit], source: bytes) -> list[_Hit]:
    """The hits ``inner`` of the decoded ``runs`` joined by JOIN_SEPARATOR, each as a hit
    on its run's span in ``source``, the text the runs were decoded from (once per span,
    secret and form; a hit past its run's end left out, and one that decoding did not
    make: ``_made_by_decoding``)."""
    starts, position = [], 0
    for _name, _start, _end, decoded in runs:
        starts.append(position)
        position += len(decoded) + len(JOIN_SEPARATOR)
    hits, seen = [], set()
    for hit in inner:
        i = bisect.bisect_right(starts, hit.start) - 1
        name, start, end, decoded = runs[i]
        if hit.end > starts[i] + len(decoded):
            continue
        key = (start, end, hit.secret.id, hit.form)
        if key in seen:
            continue
        # (a form names many needles, the masking windows all one: a needle the run held
        # as it is must not stand for another of the form that decoding made)
        if hit.chain or _made_by_decoding(name, hit.needle.pattern, decoded, source[start:end]):
            seen.add(key)
            hits.append(_Hit(start, end, hit.needle, f"{name}>{hit.chain}"))
    return hits


#: Decoders that leave every byte alone but the escapes they decode, each starting with
#: one of these bytes (``pct`` also reads "+" as a space; ``esc`` also joins the UTF-8 of a
#: surrogate pair, lead byte 0xED, into the character it spells).
_ESCAPES_START_WITH: dict[str, bytes] = {
    "qp": b"=",
    "pct": b"%+",
    "esc": b"\\\xed",
    "html": b"&",
    "ansi": b"\x1b\xe2\xef\xc2",
    "regex": b"\\",
}


def _made_by_decoding(decoder: str, needle: bytes, decoded: bytes, raw: bytes) -> bool:
    """Whether the run ``raw`` decoded into ``decoded`` holds an occurrence of ``needle``
    that ``raw`` does not hold as it is. Where it holds none, the decoded hit would only
    repeat the first pass's own hits there, and mask the whole run for them: a quoted-
    printable run is a whole line (any two ``=XX`` make one: ``column=39, offset=38`` in
    a repr), and a masked tail in it hid the line, pytest's assertion explanation with it.
    Told by counting, for the decoders that leave every byte but their escapes alone and
    a needle holding none of the bytes an escape starts with: each raw occurrence is then
    in ``decoded`` too, so as many there means no other."""
    marks = _ESCAPES_START_WITH.get(decoder)
    if marks is None or any(mark in needle for mark in marks):
        return True
    return _occurrences(decoded, needle) > _occurrences(raw, needle)


def _occurrences(data: bytes, needle: bytes) -> int:
    """How many times ``needle`` occurs in ``data``, overlapping ones counted."""
    count, at = 0, data.find(needle)
    while at >= 0:
        count += 1
        at = data.find(needle, at + 1)
    return count


_BASE64_CHAR = rb"[A-Za-z0-9+/=_-]"
#: the token after a key, and the lines of a wrapped base64 blob after it
_AFTER = lazy_compile(
    rb"[^\s\"'<>]*(?:(?<=" + _BASE64_CHAR + rb"{16})\r?\n(?=" + _BASE64_CHAR + rb"{4})[^\s\"'<>]*)*"
)
#: the same before it, read backwards
_BEFORE = lazy_compile(
    rb"[^\s\"'<>]*(?:(?<=" + _BASE64_CHAR + rb"{4})\n\r?(?=" + _BASE64_CHAR + rb"{16})[^\s\"'<>]*)*"
)


def _soft_break_before(buf: bytes, newline: int) -> bool:
    """Whether the line break at ``newline`` is a quoted-printable soft break."""
    return (
        buf[max(0, newline - 2) : newline] in (b"=\r", b"=") or buf[newline - 1 : newline] == b"="
    )


def _readable(data: bytes | memoryview) -> bytes:
    """``data`` as bytes to read hits from: a stream's whole read buffer is its bytearray
    itself, read and not changed while its hits are settled (a copy of each 8 MiB chunk
    that a key or a needle hit was 0.13 s per GiB of log-like text)."""
    if isinstance(data, bytes):
        return data
    whole = data.obj
    if isinstance(whole, bytearray) and data.contiguous and data.nbytes == len(whole):
        return whole  # type: ignore[return-value]  # read only: as bytes, as mypy sees it
    return bytes(data)


def _region(buf: bytes, end: int) -> tuple[int, int]:
    """The token around a key that ends at ``end`` (and the other lines of a wrapped
    base64 blob it is in), at most REGION_BYTES beyond it on each side."""
    reach = 256  # most tokens are short: read a longer stretch backwards only when needed
    while True:
        low = max(0, end - reach)
        before = _BEFORE.match(buf[low:end][::-1])
        back = before.end() if before else 0
        if back < end - low or reach >= REGION_BYTES:
            break
        reach = REGION_BYTES
    after = _AFTER.match(buf, end, min(len(buf), end + REGION_BYTES))
    low, high = end - back, after.end() if after else end
    # and the lines joined by quoted-printable soft breaks ("=" ending a line)
    floor, ceiling = max(0, low - REGION_BYTES), min(len(buf), high + REGION_BYTES)
    while True:
        eol = buf.find(b"\n", high, ceiling)
        if eol < 0 or not _soft_break_before(buf, eol):
            break
        nxt = buf.find(b"\n", eol + 1, ceiling)
        high = ceiling if nxt < 0 else nxt
    if buf.find(b"=\n", low, high) >= 0 or buf.find(b"=\r\n", low, high) >= 0:
        # from its line's start: a line folded with no escape on it is told by its width
        # (``decode._folds_a_full_line``)
        low = max(floor, buf.rfind(b"\n", floor, low) + 1)
    while True:
        bol = buf.rfind(b"\n", floor, low)
        if bol <= floor or not _soft_break_before(buf, bol):
            break
        low = max(floor, buf.rfind(b"\n", floor, bol) + 1)
    # and the lines of a wrapped line it is a piece of
    low, high = wrap_extent(buf, low, high, REGION_BYTES)
    return _coloured_lines(buf, low, high)


def _coloured_lines(buf: bytes, low: int, high: int) -> tuple[int, int]:
    """``[low, high)`` widened over whole lines, and the adjacent lines, where its line
    holds an escape sequence: rich folds a coloured line with the colours on each piece,
    and a token's pieces are rejoined only with the lines around them (``decode.
    invisible_runs``; found by a hunting helper). At most REGION_BYTES each way."""
    floor, ceiling = max(0, low - REGION_BYTES), min(len(buf), high + REGION_BYTES)
    bol = max(floor, buf.rfind(b"\n", floor, low) + 1)
    eol = buf.find(b"\n", high, ceiling)
    eol = ceiling if eol < 0 else eol
    if buf.find(b"\x1b", bol, eol) < 0:
        return low, high
    low, high = bol, eol
    while high < ceiling:
        nxt = buf.find(b"\n", high + 1, ceiling)
        nxt = ceiling if nxt < 0 else nxt
        if buf.find(b"\x1b", high + 1, nxt) < 0:
            break
        high = nxt
    while low > floor:
        previous = max(floor, buf.rfind(b"\n", floor, low - 1) + 1)
        if buf.find(b"\x1b", previous, low - 1) < 0:
            break
        low = previous
    return low, high


def _as_bytes(data: str | bytes) -> bytes:
    """``data`` as the bytes to search: a ``str`` (or a subclass, read through ``str``
    itself: its own ``encode`` may raise or lie) as UTF-8 with surrogates passed through, a
    ``bytes`` subclass as plain ``bytes``."""
    kind = type(data)
    if issubclass(kind, str):
        return str.encode(data, "utf-8", "surrogatepass")  # type: ignore[arg-type]  # a str
    if kind is not bytes and issubclass(kind, bytes):
        return bytes.__getitem__(data, slice(None))  # type: ignore[index]  # a bytes subclass
    return data  # type: ignore[return-value]  # bytes (mypy narrows not by kind)


def _defers(backend: str, forms: tuple[FormFn, ...], secrets: list[Secret]) -> bool:
    """Whether a scanner puts needles off: only on the engine that builds on demand (a
    hyperscan database costs milliseconds to compile again), when there is something to
    put off, and not when two secrets share a value (and so every needle: the order in
    which they own them is kept simple)."""
    return (
        backend == "ahocorasick"
        and not RUN_KEEPING_FORMS.isdisjoint(forms)
        and len({s.value for s in secrets}) == len(secrets)
    )


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


_JOINABLE = lazy_compile(rb"[A-Za-z0-9+/_=-]*(?:(?:\r?\n|\\n)[A-Za-z0-9+/_=-]*)?")


def _size_hint(stream: BinaryIO, origin: int) -> int:
    """Bytes left in a regular file from ``origin``; a large number when unknown."""
    try:
        status = os.fstat(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return CHUNK_BYTES
    if not stat.S_ISREG(status.st_mode):
        return CHUNK_BYTES
    return max(status.st_size - origin, 0)


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


#: The line-number pass re-reads a stream in pieces this large, into one buffer: the
#: newlines are counted while the piece is in the CPU's cache (1 GiB of log-like text:
#: 0.56 s of CPU time, against 0.63 in 8 MiB pieces of their own).
REREAD_BYTES = 1 << 20


def _reread(stream: BinaryIO) -> Iterator[bytearray]:
    """The rest of ``stream``, read into one buffer, handed out again and again (each
    piece is read before the next is asked for)."""
    piece = bytearray(REREAD_BYTES)
    view = memoryview(piece)
    while True:
        size = _read_into(stream, view)
        if size == len(piece):
            yield piece
            continue
        view.release()  # (a buffer with a view cannot be resized)
        del piece[size:]
        if size:
            yield piece
        return


#: A regular file of this many bytes or more (from where the scan starts) has its newlines
#: counted beside the search by a child process once it has a finding, when the process
#: may run on two CPUs or more: the count, 0.4 s of CPU per GiB of log-like text, was a
#: third of a scan of 1 GiB with findings (issue 14). A smaller file's count is not worth
#: a process (8.5 ms from its start to the count of a small file, measured).
COUNT_BESIDE_FROM = 4 * CHUNK_BYTES


class _NewlineCounter:
    """Counts the newlines of a regular file in a child process, REREAD_BYTES at a time
    from ``origin`` to its end, through the scan's descriptor (``os.pread``: the scan's own
    reads are left where they are): ``marks[k]``, the newlines before ``origin + k *
    REREAD_BYTES``. ``locate`` then gives a scan's findings their lines. A process, not a
    thread: the scan holds the GIL for most of its pass (the callbacks of the keys' hits,
    the decoding pass), and a thread's count gained a tenth of its time."""

    @staticmethod
    def worth_it(stream: BinaryIO, origin: int) -> bool:
        """Whether ``stream`` is a regular file of COUNT_BESIDE_FROM bytes or more past
        ``origin``, this process may run on two CPUs (on one, counted in the pass) and it
        can start a Python child (``sys.executable``)."""
        try:
            cpus = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cpus = os.cpu_count() or 1
        if cpus < 2 or not hasattr(os, "pread") or not sys.executable:
            return False
        if getattr(sys, "frozen", False):  # (an app bundle's executable is not a Python)
            return False
        hint = _size_hint(stream, origin)
        return hint != CHUNK_BYTES and hint >= COUNT_BESIDE_FROM

    def __init__(self, fd: int, origin: int) -> None:
        import subprocess  # (only a big file with a finding: not in the scan's start-up)

        self._origin = origin
        self.marks: list[int] = []
        self._reached = 0
        try:
            self._child: subprocess.Popen[bytes] | None = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _COUNT_NEWLINES, str(fd), str(origin)],
                pass_fds=(fd,),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env={"LEAKCHECK_PIECE": str(REREAD_BYTES)},
            )
        except (OSError, ValueError):  # (no such interpreter; pass_fds where unsupported)
            self._child = None

    def _counted_past(self, offset: int) -> bool:
        """Wait for the child's count; whether it counted the newlines before ``offset``
        (False: the file is shorter now, a read failed, the child could not start)."""
        if self._child is None:
            return False
        out, _ = self._child.communicate()
        if self._child.returncode != 0 or len(out) < 16 or len(out) % 8:
            return False
        numbers = [int.from_bytes(out[i : i + 8], "little") for i in range(0, len(out), 8)]
        self._reached = numbers[0]  # (bytes from origin, as findings' offsets count)
        self.marks = numbers[1:]
        return self._reached > offset and len(self.marks) > offset // REREAD_BYTES

    def locate(self, findings: list[Finding], fd: int) -> list[Finding] | None:
        """``findings`` (of the file, in any order) with their lines and columns, as
        ``_with_lines`` gives them, read through ``fd`` (``os.pread``); None where the
        count could not (then the file is re-read)."""
        try:
            if not findings or not self._counted_past(max(f.offset for f in findings)):
                return None
            return self._located(findings, fd)
        except OSError:
            return None
        finally:
            self.close()

    def close(self) -> None:
        """Stop the child if it still counts (done with, or the scan failed)."""
        if self._child is not None and self._child.poll() is None:
            self._child.kill()
            self._child.wait()

    def _located(self, findings: list[Finding], fd: int) -> list[Finding]:
        located: list[Finding] = list(findings)
        block, data = -1, b""
        for i in sorted(range(len(findings)), key=lambda i: findings[i].offset):
            finding = findings[i]
            local = finding.offset  # (from origin, where the scan began)
            if local // REREAD_BYTES != block:
                block = local // REREAD_BYTES
                data = os.pread(fd, REREAD_BYTES, self._origin + block * REREAD_BYTES)
            cut = local - block * REREAD_BYTES
            newlines = self.marks[block] + data.count(b"\n", 0, cut)
            line = self._line_before(fd, block, data, cut)
            column = line.utf16_column() if _is_utf16(finding.form) else line.column()
            located[i] = _located(finding, newlines + 1, column)
        return located

    def _line_before(self, fd: int, block: int, data: bytes, cut: int) -> _CodePoints:
        """The code points of the line up to ``data[cut]`` (``data``: block ``block``),
        its start looked for back to the file's: a long line is read again in pieces."""
        j = data.rfind(b"\n", 0, cut)
        if j >= 0:
            line = _CodePoints(after_newline=True)
            line.feed(memoryview(data)[j + 1 : cut])
            return line
        start, after_newline = block, False
        while start > 0:
            start -= 1
            earlier = os.pread(fd, REREAD_BYTES, self._origin + start * REREAD_BYTES)
            j = earlier.rfind(b"\n")
            if j >= 0:
                after_newline = True
                break
        line = _CodePoints(after_newline=after_newline)
        if start < block:
            line.feed(memoryview(earlier)[j + 1 :])
            for middle in range(start + 1, block):
                line.feed(os.pread(fd, REREAD_BYTES, self._origin + middle * REREAD_BYTES))
        line.feed(memoryview(data)[:cut])
        return line


#: The child of _NewlineCounter: reads its file descriptor from an offset in pieces and
#: writes, as 8-byte little-endian numbers, the bytes it read, then the newlines before
#: each piece (the first: 0) and after the last full one.
_COUNT_NEWLINES = """
import os, sys
fd, position = int(sys.argv[1]), int(sys.argv[2])
piece = bytearray(int(os.environ["LEAKCHECK_PIECE"]))
view = memoryview(piece)
read, newlines, marks = 0, 0, [0]
def fill(at, into):
    if hasattr(os, "preadv"):
        return os.preadv(fd, [into], at)
    got = os.pread(fd, len(into), at)
    into[: len(got)] = got
    return len(got)
while True:
    size = 0
    while size < len(piece):
        got = fill(position + read + size, view[size:])
        if not got:
            break
        size += got
    newlines += piece.count(b"\\n", 0, size)
    read += size
    if size < len(piece):
        break
    marks.append(newlines)
sys.stdout.buffer.write(b"".join(n.to_bytes(8, "little") for n in [read, *marks]))
"""


def _where(
    buf: bytes, hit: _Hit, newlines: int, line: _CodePoints | None
) -> tuple[int, int] | None:
    """(newlines before ``hit``, its column) from the ``newlines`` before ``buf`` and the
    code points of the line before it (None when its line began before them: unknown)."""
    j = buf.rfind(b"\n", 0, hit.start)
    if j >= 0:
        head = _CodePoints(after_newline=True)
    elif line is None:
        return None
    else:
        head = line.copy()
    head.feed(buf[j + 1 : hit.start])
    column = head.utf16_column() if _is_utf16(hit.form) else head.column()
    return newlines + buf.count(b"\n", 0, hit.start), column


def _lines_of(
    findings: list[Finding],
    in_pass: list[tuple[int, int] | None],
    counted_from: int,
    chunks: Iterable[bytes | bytearray],
) -> Iterator[Finding]:
    """``findings`` located, in order: those the pass located (``in_pass``: newlines from
    ``counted_from``, column) once the newlines before ``counted_from`` are known, the
    others from ``chunks`` (the stream read again from its start, up to the last of them
    or to ``counted_from``)."""
    again = [f for f, where in zip(findings, in_pass, strict=True) if where is None]
    counted = len(again) < len(findings)
    if counted:  # the newlines before counted_from: a finding's line there, less one
        again.append(_moved(findings[0], offset=counted_from))
    located = _with_lines(again, chunks)
    prefix = located.pop().line - 1 if counted else 0
    rest = iter(located)
    for finding, where in zip(findings, in_pass, strict=True):
        yield next(rest) if where is None else _located(finding, prefix + where[0] + 1, where[1])


def _located(finding: Finding, line: int, column: int) -> Finding:
    return _moved(finding, line=line, column=column)


def _moved(finding: Finding, **where: int) -> Finding:
    """``finding`` at another place (``dataclasses.replace`` without importing dataclasses:
    its import, with inspect's, was a sixth of a scan's start-up)."""
    return Finding(**{**vars(finding), **where})


def _is_utf16(form: str) -> bool:
    """A finding in UTF-16-LE text as written (the whole secret or a fragment of it): its
    column and excerpt are read as such."""
    return form == UTF16_FORM or form.startswith((UTF16_PREFIX.prefix, UTF16_SUFFIX.prefix))


def _with_lines(findings: list[Finding], chunks: Iterable[bytes | bytearray]) -> list[Finding]:
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
                line, cursor = _CodePoints(after_newline=True), j + 1
            line.feed(chunk[cursor:local])
            cursor = local
            column = line.utf16_column() if _is_utf16(finding.form) else line.column()
            located[order[k]] = _located(finding, newlines + 1, column)
            k += 1
        if k == len(order):
            break
        newlines += chunk.count(b"\n", cursor)
        j = chunk.rfind(b"\n", cursor)
        if j >= 0:
            line, cursor = _CodePoints(after_newline=True), j + 1
        line.feed(chunk[cursor:])
        position += len(chunk)
    return located


class _CodePoints:
    """Counts the code points of one line fed in pieces, exactly as decoding the whole line
    with ``errors="replace"`` would: a piece may end inside a character."""

    _PIECE = 1 << 20  # decoded a MiB at a time, so a long line costs no large string

    def __init__(self, after_newline: bool = False) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._count = 0
        self._bytes = 0
        self._after_newline = after_newline

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        self._bytes += len(data)
        for i in range(0, len(data), self._PIECE):
            self._count += len(self._decoder.decode(data[i : i + self._PIECE]))

    def copy(self) -> _CodePoints:
        other = _CodePoints(self._after_newline)
        other._decoder.setstate(self._decoder.getstate())
        other._count, other._bytes = self._count, self._bytes
        return other

    def column(self) -> int:
        """1-based column of the next byte: an unfinished character counts as one."""
        pending, _ = self._decoder.getstate()
        return self._count + len(pending.decode("utf-8", "replace")) + 1

    def utf16_column(self) -> int:
        """1-based column of the next byte in UTF-16-LE text: two bytes a character, the
        line starting after the newline's second byte."""
        return (self._bytes - self._after_newline) // 2 + 1
