"""What ``leakcheck scan`` prints, masked: ``Output`` masks every string of the report and
of what standard error says with every form and every short piece of every secret."""

from __future__ import annotations

import functools
import sys
from array import array
from collections.abc import Callable, Iterable, Iterator

from .._lazy import lazy_compile
from ..canaries import Secret
from ..decode import decode_runs, masking_decoders
from ..detect import HEAD_BYTES, JOIN_SEPARATOR, Scanner
from ..engine import KEY_CODE, add_substring_keys, available_backends
from ..extensions import detection_forms, masking_forms
from ..findings import MASK_LABEL, Finding
from ..forms import MASK_ONLY_FORMS, FormFn, needle_table, upper_mask_bits
from ..serialize import map_strings
from .budget import batches_of

TYPE_CHECKING = False  # not typing's: its import was a twentieth of a scan's start-up
if TYPE_CHECKING:
    from typing import Any

__all__ = ["GRAM", "GRAM_SET_LIMIT", "Output", "mask_only_forms", "strings_of"]


@functools.cache
def mask_only_forms() -> tuple[FormFn, ...]:
    """The forms a masker searches for (``extensions.masking_forms``) that the detection
    scanner does not: the short masking windows."""
    detection = detection_forms()
    return tuple(f for f in masking_forms() if f not in detection)


#: Decoding layers of the masker (the plugin's masker decodes as deep).
_MASK_DEPTH = 2
#: Masking-only needles are looked up by their first GRAM bytes (a window is 6 characters,
#: 6 bytes or more); GRAM_SET_LIMIT bounds the set of the printed text's GRAM-byte pieces.
GRAM = 6
GRAM_SET_LIMIT = 1 << 21
#: The printed text's HEAD_BYTES-byte pieces are looked up this many at a time (see
#: Output.learn): a set of some 40 bytes each.
HEAD_SET_BYTES = 1 << 19


_BYTE_ORDER = sys.byteorder  # how an array reads its items' bytes
#: What Output.learn keeps of a batch: the index of its first secret, and its scanner's
#: pattern heads, tails, their secrets and its short patterns (Scanner.pattern_heads)
_Learned = tuple[int, "array[int]", "array[int]", "array[int]", list[tuple[bytes, int]]]

#: Splits a text at the mask labels it holds (kept, at the odd indexes).
_LABELS = lazy_compile(f"({MASK_LABEL.pattern})")


def _small_texts_backend() -> str:
    """For the texts we print: the automaton builds at once where hyperscan compiles (and
    hyperscan cannot compile the needles of a very long secret)."""
    return "ahocorasick" if "ahocorasick" in available_backends() else "auto"


def _same(text: str) -> str:
    return text


class Output:
    """Masks what ``leakcheck scan`` prints with every form of every secret it knows and
    every 6-character piece of each (a log holding part of a secret shows the rest of it
    next to the masked match), as the pytest plugin masks its reports (``MASKING_FORMS``,
    decoding on).

    A scanner over every masking needle of every secret would multiply the needles (a
    secret has about 100 windows besides its 100 forms), so the masker is built only for
    the texts to print and only over the secrets that can occur in them: those the
    detection scanner (every form, every secret) finds in a text or its decoded layers,
    and those with a masking window whose first bytes occur there (a superset of what the
    masker finds, which then masks exactly). Nothing is built while nothing that could
    hold a secret is printed (a clean scan)."""

    def __init__(self) -> None:
        self.secrets: list[Secret] = []
        self._detection: Scanner | None = None
        self._windows: list[bytes] | None = None
        self._short: list[tuple[bytes, int]] = []
        # what the scan's scanners said (see learn): per batch, (the index of its first
        # secret, its pattern heads, their secrets, its short patterns); None once a
        # scanner did not fit
        self._learned: list[_Learned] | None
        self._learned, self._learned_upto = [], 0

    def use(self, secrets: list[Secret], detection: Scanner | None = None) -> None:
        """Mask ``secrets`` from now on; ``detection``, a scanner over exactly them."""
        if [id(s) for s in secrets] != [id(s) for s in self.secrets]:
            self._windows, self._short = None, []
            self._learned, self._learned_upto = [], 0
        self.secrets = list(secrets)
        self._detection = detection

    def learn(self, scanner: Scanner) -> None:
        """What a scan's scanner over the next batch of ``secrets`` (in their order, every
        detection form) tells the masker: the first HEAD_BYTES bytes of each of its
        needles. A printed text can hold a needle only where it holds its head, so once
        every batch is learned, the secrets that can occur in the texts to print are told
        from the heads there (each then searched for with its own needles) instead of a
        scanner built again for each batch (two thirds of a 10,000-secret scan's time
        went to the masker, most of it to those scanners)."""
        if self._learned is None:
            return
        start, batch = self._learned_upto, scanner.secrets
        mine = self.secrets[start : start + len(batch)]
        if (
            array("Q").itemsize != HEAD_BYTES
            or not KEY_CODE
            or scanner.forms != detection_forms()
            or [id(s) for s in batch] != [id(s) for s in mine]
        ):
            self._learned = None
            return
        self._learned.append((start, *scanner.pattern_heads()))
        self._learned_upto = start + len(batch)

    def masker(self, texts: Iterable[str]) -> Callable[[str], str]:
        """A function masking each of ``texts`` (and any text made of their pieces only:
        use it on the texts it was made for)."""
        # What lies between the mask labels already in a text (an excerpt's): a label is
        # none of a secret, and masking over it would widen into it and break it.
        pieces = [piece for text in texts for piece in _LABELS.split(text)[::2] if piece]
        if not self.secrets or not pieces:
            return _same
        chosen = self._candidates(pieces)
        if not chosen:
            return _same
        scanner = Scanner(
            [self.secrets[i] for i in sorted(chosen)],
            forms=masking_forms(),
            decode=True,
            decode_depth=_MASK_DEPTH,
            backend=_small_texts_backend(),
        )
        done: dict[str, str] = {}

        def mask(text: str) -> str:
            masked = done.get(text)
            if masked is None:
                parts = _LABELS.split(text)
                parts[::2] = [scanner.mask(piece) if piece else piece for piece in parts[::2]]
                masked = done[text] = "".join(parts)
            return masked

        return mask

    def mask_one(self, text: str) -> str:
        return self.masker([text])(text)

    def _candidates(self, texts: list[str]) -> set[int]:
        decoders = masking_decoders()
        segments: list[bytes] = []
        for text in texts:  # each text and its decoded layers, as the masker decodes them
            layer = text.encode("utf-8", "surrogatepass")
            segments.append(layer)
            for _ in range(_MASK_DEPTH):
                runs = [decoded for *_, decoded in decode_runs(layer, decoders)]
                if not runs:
                    break
                layer = JOIN_SEPARATOR.join(runs)
                segments.append(layer)
        joined = JOIN_SEPARATOR.join(segments)  # no needle spans the separator
        chosen: set[int] = set()
        by_id: dict[str, list[int]] = {}
        for index, secret in enumerate(self.secrets):
            by_id.setdefault(secret.id, []).append(index)
        if self._detection is None and self._learned and self._learned_upto == len(self.secrets):
            for index in self._found_by_heads(joined):
                chosen.update(by_id[self.secrets[index].id])
        else:
            for finding in self._detections(joined):
                chosen.update(by_id.get(finding.secret_id, ()))
        windows = self._window_heads()
        for grams in _gram_sets(segments):
            for index, heads in enumerate(windows):
                if index not in chosen and any(
                    heads[k : k + GRAM] in grams for k in range(0, len(heads), GRAM)
                ):
                    chosen.add(index)
        for needle, index in self._short:
            if index not in chosen and needle in joined:
                chosen.add(index)
        return chosen

    def _detections(self, joined: bytes) -> Iterator[Finding]:
        """What the detection scanner finds in ``joined``: the scan's own, or (an error
        before it was built, or a scan of many secrets, which has one scanner per batch)
        one batch of secrets at a time."""
        if self._detection is not None:
            yield from self._detection.scan(joined)
            return
        for batch in batches_of(self.secrets):
            yield from Scanner(batch, backend=_small_texts_backend()).scan(joined)

    def _found_by_heads(self, joined: bytes) -> set[int]:
        """The secrets (their indexes) that a detection scanner over all of them finds in
        ``joined``: those with a needle there (a masking window aside), looked for among
        those with a needle whose head is there (see learn)."""
        learned = self._learned or []
        maybe: set[int] = set()
        # per batch, which needles have their head there, and which their last 4 bytes
        # (a byte each, 1 or 0, as the bytes of an int): a head that every secret's
        # needles share ("ending i") made every secret a candidate
        head_seen = [0] * len(learned)
        tail_seen = [0] * len(learned)
        for present in _head_sets(joined):
            for n, (_, heads, _, _, _) in enumerate(learned):
                if not present.isdisjoint(heads):
                    seen = bytes(map(present.__contains__, heads))
                    head_seen[n] |= int.from_bytes(seen, "little")
        # the needles shorter than a head (a masked tail such as "...abcd") by their first
        # 4 bytes (each searched for in the whole text, 16,000 of them were 2.6 s), the
        # shortest searched for
        shorter = [(start + i, needle) for start, *_, short in learned for needle, i in short]
        keyed: dict[int, list[tuple[int, bytes]]] = {}
        for index, needle in shorter:
            if len(needle) < 4:
                if needle in joined:
                    maybe.add(index)
            else:
                keyed.setdefault(int.from_bytes(needle[:4], _BYTE_ORDER), []).append(
                    (index, needle)
                )
        for present in _head_sets(joined, 4, KEY_CODE):
            for key in present.intersection(keyed):
                maybe.update(index for index, needle in keyed[key] if needle in joined)
            for n, (_, _, tails, _, _) in enumerate(learned):
                if head_seen[n] and not present.isdisjoint(tails):
                    seen = bytes(map(present.__contains__, tails))
                    tail_seen[n] |= int.from_bytes(seen, "little")
        for n, (start, _, _, owners, _) in enumerate(learned):
            both = (head_seen[n] & tail_seen[n]).to_bytes(len(owners), "little")
            at = both.find(1)
            while at >= 0:
                maybe.add(start + owners[at])
                at = both.find(1, at + 1)
        forms = detection_forms()
        return {
            index
            for index in maybe
            if any(
                form not in MASK_ONLY_FORMS and needle in joined
                for needle, form in needle_table(self.secrets[index], forms).items()
            )
        }

    def _window_heads(self) -> list[bytes]:
        """Per secret, the first GRAM bytes of each of its masking-only needles, packed."""
        if self._windows is None:
            extra = mask_only_forms()
            heads: list[bytes] = []
            short: list[tuple[bytes, int]] = []
            # (a superset of the windows that the masker over the secrets found makes:
            # without the full estimate of each user secret)
            with upper_mask_bits():
                for index, secret in enumerate(self.secrets):
                    mine = []
                    for form in extra:
                        for _name, needle in form(secret):
                            if len(needle) >= GRAM:
                                mine.append(needle[:GRAM])
                            elif needle:
                                short.append((needle, index))
                    heads.append(b"".join(mine))
            self._windows, self._short = heads, short
        return self._windows


def _gram_sets(segments: list[bytes]) -> Iterator[set[bytes]]:
    """Every GRAM-byte piece of ``segments``, in sets of at most about GRAM_SET_LIMIT."""
    grams: set[bytes] = set()
    for segment in segments:
        for start in range(0, max(len(segment) - GRAM + 1, 0), GRAM_SET_LIMIT):
            stop = min(start + GRAM_SET_LIMIT, len(segment) - GRAM + 1)
            grams.update(segment[i : i + GRAM] for i in range(start, stop))
            if len(grams) >= GRAM_SET_LIMIT:
                yield grams
                grams = set()
    if grams:
        yield grams


def _head_sets(joined: bytes, size: int = HEAD_BYTES, code: str = "Q") -> Iterator[set[int]]:
    """Every ``size``-byte piece of ``joined``, read as an int as ``Scanner.pattern_heads``
    reads a needle's head (an array of type ``code``, items of ``size`` bytes), in sets of
    the pieces starting in HEAD_SET_BYTES of it."""
    for start in range(0, max(len(joined) - size + 1, 0), HEAD_SET_BYTES):
        piece = joined[start : start + HEAD_SET_BYTES + size - 1]
        present: set[int] = set()
        add_substring_keys(piece, present, size, code)
        yield present


def strings_of(value: Any) -> list[str]:
    found: list[str] = []

    def keep(text: str) -> str:
        found.append(text)
        return text

    map_strings(value, keep)
    return found
