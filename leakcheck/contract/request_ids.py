"""``check_request_ids``: a run's request ids are opaque handles."""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from ..canaries import Secret, SecretClass
from .vocabulary import Violation

if TYPE_CHECKING:  # pragma: no cover
    pass


# --- request ids --------------------------------------------------------------------------

#: the most a counter may step between two ids and still be taken for a counter
_MAX_STEP = 10**6
_DIGITS = frozenset("0123456789")
_HEX_LOWER = frozenset("0123456789abcdef")
_HEX_UPPER = frozenset("0123456789ABCDEF")
_NAMESPACE = re.compile(r"^[A-Za-z]{1,10}[_-]")
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_ULID = re.compile(r"(?<![0-9A-Za-z])[0-7][0-9A-HJKMNP-TV-Z]{25}(?![0-9A-Za-z])", re.IGNORECASE)
_UUID = re.compile(
    r"(?<![0-9a-fA-F])([0-9a-fA-F]{8})-([0-9a-fA-F]{4})-([0-9a-fA-F])([0-9a-fA-F]{3})-"
    r"[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}(?![0-9a-fA-F])"
)
_DIGIT_RUN = re.compile(r"(?<![0-9A-Za-z])([0-9]+)(?:(?![0-9A-Za-z])|([TZ]))")
_ISO_DATE = re.compile(r"(?<![0-9])([0-9]{4})-([0-9]{2})-([0-9]{2})(?![0-9])")
# 100-ns intervals between the Gregorian epoch of UUID v1/v6 and the Unix epoch
_UUID_EPOCH = 0x01B21DD213814000


def _alphabet_size(chars: set[str]) -> int:
    """The alphabet a random id over these characters would be drawn from."""
    if not chars:
        return 1
    if chars <= _DIGITS:
        return 10
    if chars <= _HEX_LOWER or chars <= _HEX_UPPER:
        return 16
    size = 0
    size += 26 if any("a" <= c <= "z" for c in chars) else 0
    size += 26 if any("A" <= c <= "Z" for c in chars) else 0
    size += 10 if chars & _DIGITS else 0
    size += 2 if chars & {"-", "_"} else 0
    size += 30 if any(c.isascii() and not c.isalnum() and c not in "-_" for c in chars) else 0
    size += 100 if any(not c.isascii() for c in chars) else 0
    return max(size, 2)


def _estimate_bits(ids: list[str]) -> list[float]:
    """Estimated random bits per id, from the run as a whole.

    Ids of equal length are compared position by position: a position where every id has
    the same character (a prefix such as ``act_``, a constant host part, the high digits of
    a clock or counter) carries nothing; a position with far fewer distinct characters than
    uniform draws would give (the UUID variant nibble) carries log2(distinct); any other
    position carries log2(alphabet), the alphabet being that of the characters seen at the
    varying positions (hex 16, digits 10, URL-safe base64 64...). An id alone of its length
    is judged by its characters after a leading ``word_`` or ``word-`` namespace. This is an
    upper bound on what an id holds: it exposes constants and counters, not a weak PRNG.
    """
    groups: dict[int, list[int]] = {}
    for i, value in enumerate(ids):
        groups.setdefault(len(value), []).append(i)
    varying: set[str] = set()
    columns: dict[int, list[set[str]]] = {}
    for length, members in groups.items():
        if len(members) == 1:
            body = _NAMESPACE.sub("", ids[members[0]])
            varying |= set(body)
            continue
        columns[length] = [{ids[i][p] for i in members} for p in range(length)]
        for distinct in columns[length]:
            if len(distinct) > 1:
                varying |= distinct
    alphabet = _alphabet_size(varying)
    full = math.log2(alphabet)
    bits = [0.0] * len(ids)
    for length, members in groups.items():
        if len(members) == 1:
            bits[members[0]] = len(_NAMESPACE.sub("", ids[members[0]])) * full
            continue
        n = len(members)
        expected_distinct = alphabet * (1 - (1 - 1 / alphabet) ** n)
        total = 0.0
        for distinct in columns[length]:
            if len(distinct) == 1:
                continue
            total += math.log2(len(distinct)) if len(distinct) < expected_distinct / 2 else full
        for i in members:
            bits[i] = total
    return bits


def _counter_step(a: str, b: str) -> tuple[int, int] | None:
    """(step, base) when ``b`` is ``a`` with one number changed by a small step."""
    if a == b:
        return None
    shortest = min(len(a), len(b))
    prefix = 0
    while prefix < shortest and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < shortest - prefix and a[-1 - suffix] == b[-1 - suffix]:
        suffix += 1
    for base, chars in ((10, _DIGITS), (16, _HEX_LOWER), (16, _HEX_UPPER)):
        start, tail = prefix, suffix
        # widen over the number's common leading and trailing digits (099 -> 100)
        while start > 0 and a[start - 1] in chars:
            start -= 1
        while tail > 0 and a[len(a) - tail] in chars:
            tail -= 1
        middle_a, middle_b = a[start : len(a) - tail], b[start : len(b) - tail]
        if middle_a and middle_b and set(middle_a) <= chars and set(middle_b) <= chars:
            step = int(middle_b, base) - int(middle_a, base)
            if 0 < abs(step) <= _MAX_STEP:
                return step, base
    return None


@dataclass(frozen=True)
class _Clock:
    """The times an id could carry. ``low``..``high`` is the current decade, give or take,
    for numbers, dates and UUIDs; ``recent_low``..``high`` is the last 400 days, for ULIDs,
    whose 26-character shape random base32 ids share (one in four reads as a time)."""

    low: float
    high: float
    recent_low: float
    years: range

    @classmethod
    def now(cls) -> _Clock:
        now = time.time()
        low, high = now - 12 * 365.25 * 86400, now + 2 * 365.25 * 86400
        years = range(
            datetime.fromtimestamp(low, timezone.utc).year,
            datetime.fromtimestamp(high, timezone.utc).year + 1,
        )
        return cls(low, high, now - 400 * 86400, years)


def _valid_date(year: str, month: str, day: str, years: range) -> bool:
    try:
        datetime(int(year), int(month), int(day))
    except ValueError:
        return False
    return int(year) in years


def _timestamp_kind(value: str, clock: _Clock) -> str | None:
    """What time ``value`` holds, if any: a time-based UUID (v1, v6, v7) with its clock in
    range, a ULID, unix seconds/ms/us/ns, a YYYYMMDD or ISO date. Numbers count only
    standing apart (between separators or at an end, a date also before ``T``/``Z``) and
    UUIDs only with their dashes: digit runs inside hex or base64 text are random digits
    (one 32-hex-digit id in twenty has a 10-digit run), and one random hex id in 64 has a
    UUID's version and variant digits. A run of dashless time-based UUIDs still fails the
    entropy estimate (their clock's high digits, clock sequence and node are constant)."""
    for match in _UUID.finditer(value):
        low_bits, mid, version, high_bits = match.groups()
        if version in "16":
            ticks = (
                int(high_bits + mid + low_bits, 16)
                if version == "1"
                else int(low_bits + mid + high_bits, 16)
            )
            if clock.low <= (ticks - _UUID_EPOCH) / 1e7 <= clock.high:
                return f"a time-based UUID (version {version})"
        elif version == "7" and clock.low <= int(low_bits + mid, 16) / 1000 <= clock.high:
            return "a time-ordered UUID (version 7: unix milliseconds)"
    # a UUID's groups are random hex digits, not numbers: one uuid4 in 40 has a first group
    # of eight decimal digits, and some of those read as a date
    value = _UUID.sub("-", value)
    for match in _ULID.finditer(value):
        millis = 0
        for c in match.group(0)[:10].upper():
            millis = millis * 32 + _CROCKFORD.index(c)
        if clock.recent_low <= millis / 1000 <= clock.high:
            return "a ULID (unix milliseconds)"
    for match in _DIGIT_RUN.finditer(value):
        run, after = match.group(1), match.group(2)
        scale = {10: 1, 13: 10**3, 16: 10**6, 19: 10**9}.get(len(run))
        if scale is not None and not after and clock.low <= int(run) / scale <= clock.high:
            unit = {1: "seconds", 10**3: "milliseconds", 10**6: "microseconds"}.get(
                scale, "nanoseconds"
            )
            return f"a unix time in {unit}"
        if len(run) in (8, 12, 14, 17) and _valid_date(run[:4], run[4:6], run[6:8], clock.years):
            return "a date (YYYYMMDD)"
    for match in _ISO_DATE.finditer(value):
        year, month, day = match.groups()  # the pattern's three groups
        if _valid_date(year, month, day, clock.years):
            return "an ISO date"
    return None


def _word_variants(word: str) -> set[str]:
    lowered = word.lower()
    variants = {lowered}
    for sep in ("-", "_", ""):
        variants.add(re.sub(r"[.:/@ ]", sep, lowered))
    label = lowered.split(".")[0]
    if len(label) >= 4:
        variants.add(label)  # a hostname's first label (db-primary of db-primary.corp)
    return {v for v in variants if len(v) >= 4}


def _indices(offenders: list[int]) -> str:
    shown = ", ".join(f"ids[{i}]" for i in offenders[:5])
    more = len(offenders) - 5
    return shown + (f" and {more} more" if more > 0 else "")


def check_request_ids(
    ids: Iterable[Any],
    *,
    secrets: Iterable[str | Secret] = (),
    forbidden_words: Iterable[str] = (),
    min_bits: float = 64.0,
) -> list[Violation]:
    """Every way the request ids of a run fail to be opaque handles: repeats; counters
    (two ids that differ only in one decimal or hex number, stepped by at most a million,
    in the given or the sorted order); fewer than ``min_bits`` estimated random bits (see
    ``_estimate_bits``: constant positions count for nothing, so pass the ids of a whole
    run, not one); a time inside (see ``_timestamp_kind``); a secret or a forbidden word.

    ``secrets`` (values or ``Secret`` objects) are searched in every encoded form;
    ``forbidden_words`` (hostnames, user names) case-insensitively, with ``.`` ``:`` ``/``
    ``@`` also read as ``-``, ``_`` or nothing, and a hostname's first label alone.
    Violations give the index of an id (``ids[3]``), never the id.
    """
    ids = list(ids)
    found: list[Violation] = []
    words = []
    for n, word in enumerate(forbidden_words):
        if not isinstance(word, str) or len(word) < 4:
            raise ValueError(
                f"forbidden_words[{n}]: a word of at least 4 characters (a shorter one would "
                "match random ids by chance)"
            )
        words.append(_word_variants(word))
    secret_objects = []
    for n, secret in enumerate(secrets):
        if isinstance(secret, Secret):
            secret_objects.append(secret)
        elif isinstance(secret, str) and len(secret) >= 8:
            secret_objects.append(Secret(secret, "secret", f"secrets[{n}]", SecretClass.DIRECT))
        else:
            raise ValueError(f"secrets[{n}]: a string of at least 8 characters or a Secret")

    typed = [i for i, v in enumerate(ids) if not isinstance(v, str) or not v]
    if typed:
        found.append(
            Violation(
                "request-id-type", f"ids[{typed[0]}]", f"not a non-empty string: {_indices(typed)}"
            )
        )
    strings = [(i, v) for i, v in enumerate(ids) if isinstance(v, str) and v]

    first_seen: dict[str, int] = {}
    repeats: list[int] = []
    for i, value in strings:
        if value in first_seen:
            repeats.append(i)
        else:
            first_seen.setdefault(value, i)
    if repeats:
        found.append(
            Violation(
                "request-id-unique",
                f"ids[{repeats[0]}]",
                f"repeats an earlier id: {_indices(repeats)}",
            )
        )

    unique = [(i, v) for v, i in first_seen.items()]
    # A counter steps between most neighbours, in the order given or (ids handed out
    # concurrently) in sorted order. One close pair alone is chance: 30 random 32-bit ids
    # have two within a million of each other one time in five (and fail on entropy).
    pairs: list[tuple[int, int, int, int]] = []
    for order in (unique, sorted(unique, key=lambda iv: iv[1])):
        found_here = []
        for (i, a), (j, b) in zip(order, order[1:], strict=False):
            stepped = _counter_step(a, b)
            if stepped is not None:
                found_here.append((i, j, *stepped))
        if len(found_here) > len(pairs):
            pairs = found_here
    if pairs and 2 * len(pairs) >= len(unique) - 1:
        i, j, step, base = pairs[0]
        found.append(
            Violation(
                "request-id-sequential",
                f"ids[{j}]",
                f"ids[{j}] is ids[{i}] with a {'decimal' if base == 10 else 'hex'} number "
                f"stepped by {abs(step)}: a counter, not an opaque id ({len(pairs)} of "
                f"{len(unique) - 1} neighbouring pairs)",
            )
        )

    if len(unique) > 0:
        bits = _estimate_bits([v for _, v in unique])
        weak = [(b, i) for b, (i, _) in zip(bits, unique, strict=True) if b < min_bits]
        if weak:
            lowest, index = min(weak)
            found.append(
                Violation(
                    "request-id-entropy",
                    f"ids[{index}]",
                    f"{len(weak)} of {len(unique)} ids carry fewer than {min_bits:.0f} "
                    f"estimated random bits (the weakest about {lowest:.0f}): "
                    f"{_indices(sorted(i for _, i in weak))}",
                )
            )

    clock = _Clock.now()
    per_kind: dict[str, list[int]] = {}
    for i, value in strings:
        kind = _timestamp_kind(value, clock)
        if kind is not None:
            per_kind.setdefault(kind, []).append(i)
    for kind, offenders in per_kind.items():
        found.append(
            Violation(
                "request-id-timestamp",
                f"ids[{offenders[0]}]",
                f"holds {kind}: {_indices(offenders)}",
            )
        )

    if secret_objects:
        from ..detect import Scanner
        from ..engine import available_backends

        backend = "ahocorasick" if "ahocorasick" in available_backends() else "auto"
        scanner = Scanner(secret_objects, decode=True, backend=backend)
        per_secret: dict[str, list[int]] = {}
        for i, value in strings:
            for finding in scanner.scan(value):
                offenders = per_secret.setdefault(finding.secret_id, [])
                if i not in offenders:
                    offenders.append(i)
        for secret_id, offenders in per_secret.items():
            found.append(
                Violation(
                    "request-id-secret",
                    f"ids[{offenders[0]}]",
                    f"holds a form of secret {secret_id}: {_indices(offenders)}",
                )
            )

    for n, variants in enumerate(words):
        offenders = [i for i, v in strings if any(w in v.lower() for w in variants)]
        if offenders:
            found.append(
                Violation(
                    "request-id-forbidden-word",
                    f"ids[{offenders[0]}]",
                    f"holds forbidden_words[{n}]: {_indices(offenders)}",
                )
            )
    return found


# --- a run's verdict, from its report records ---------------------------------------------


@dataclass(frozen=True)
class RequestIdVerdict:
    """The end-of-session request-id verdict over a run's report records (the plugin's, or
    the union of several shards' reports): how many matrix cases, how many returned an id,
    and the violations of ``check_request_ids`` over those ids (none checked below two)."""

    cases: int
    returned: int
    violations: tuple[Violation, ...]

    @property
    def word(self) -> str:
        """``FAILED``, ``ok``, or what was not checked: none returned, or one (nothing to
        compare it with), is never "ok"."""
        if self.violations:
            return "FAILED"
        if self.returned < 2:
            return "no ids returned" if not self.returned else "1 id returned, too few to check"
        return "ok"

    def lines(self) -> list[str]:
        """The verdict as the pytest plugin prints it in its session summary."""
        return [
            f"request ids across {self.cases} case(s): {self.word}",
            *(f"  - {v.rule}: {v.message}" for v in self.violations),
        ]


def matrix_request_ids(records: Iterable[Any]) -> tuple[int, list[Any]]:
    """(how many of the report records are matrix cases, the request ids they returned in
    the order given): a record's ``matrix.request_id``, when it has one, as the plugin
    gathers them at the end of a session (xdist workers merged)."""
    cases, ids = 0, []
    for record in records:
        if "matrix" not in record:
            continue
        cases += 1
        request_id = (record.get("matrix") or {}).get("request_id")
        if request_id:
            ids.append(request_id)
    return cases, ids


def request_id_verdict(records: Iterable[Any]) -> RequestIdVerdict:
    """The across-matrix request-id rules (unique, not sequential, random enough) over the
    report records' ids; violations index the ids in the order given (``ids[3]``)."""
    cases, ids = matrix_request_ids(records)
    violations = tuple(check_request_ids(ids)) if len(ids) >= 2 else ()
    return RequestIdVerdict(cases, len(ids), violations)
