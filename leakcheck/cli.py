"""``leakcheck scan``: search logs, cassettes, traces and crash dumps for known secrets.

Exit status: 0 clean, 1 findings, 2 usage or I/O error. Secrets come from a file, never from
argv (where shell history, ``ps`` and CI logs would keep them); nothing printed carries one:
every string the command prints (report, notes, errors; stdout, stderr, ``--output``) is
masked with every form and every short piece of every secret (see ``_Output``).
"""

from __future__ import annotations

import argparse
import codecs
import dataclasses
import functools
import json
import os
import re
import stat
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .canaries import KINDS, CanaryFactory, Secret, WeakSecretError
from .decode import all_decoders, decode_runs
from .detect import JOIN_SEPARATOR, Scanner
from .engine import BACKENDS, available_backends
from .extensions import plugin_forms
from .findings import MASK_LABEL, Finding
from .forms import FORMS, MASKING_FORMS, FormFn
from .report import RENDERERS, ScanSummary, document, dump, path_uri
from .serialize import map_strings, parse_json, read_json_file
from .version import __version__

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2

#: The most secrets one scan searches for: the secrets file's and the rebuilt canaries
#: together, duplicates included. Past it the run is refused before any work on them (a
#: user's secret costs ~2 ms of zxcvbn, every secret ~100 needles; see README, "Scale").
MAX_SECRETS = 10_000
#: The most characters those secrets may hold together: needles, and the masking windows
#: of what is printed, grow with the length of each secret.
MAX_SECRET_CHARS = 500_000
#: The most secrets ``--engine hyperscan`` is accepted for: compiling takes ~3 KB of memory
#: and ~0.1 ms per needle (2,000 secrets: ~190,000 needles, 0.6 GB, 20 s; 10,000: 3 GB, 2
#: minutes, where the automaton takes 0.45 GB). ``auto`` takes the automaton there by
#: itself (``engine.HYPERSCAN_MAX_NEEDLES``).
HYPERSCAN_MAX_SECRETS = 2_000


class UsageError(Exception):
    """A user mistake: reported as one line, exit 2, never a traceback."""


class _StdoutError(Exception):
    """Standard output cannot be written (``> /dev/full``, a closed pipe)."""


# --- secrets -----------------------------------------------------------------------------

#: Control characters that a line of a secrets file cannot mean (tab excepted): a lone
#: carriage return (a file with old Mac line endings would be one long secret), NUL, ESC,
#: form feed, the C1 controls and the Unicode line separators.
_LINE_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")
#: What an id or a kind may not hold: control characters, and the guillemets of a mask
#: label (``«canary:KIND:FORM»``), which a kind is printed inside.
_LABEL_FORBIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u00ab\u00bb]")
#: The ids ``S<line or item number>`` are ours; up to 5 characters they cannot hold a
#: 6-character piece of a secret.
_OWN_ID = re.compile(r"S[0-9]{1,4}")
_OWN_KINDS = frozenset({"secret", *KINDS})
#: A canary id in a report: KIND#N, N from 1 (ASCII digits: "²".isdigit() is true)
_CANARY_ID = re.compile(r"([a-z_]{1,32})#([1-9][0-9]{0,8})")


@dataclass
class _SecretsFile:
    secrets: list[Secret]
    #: (item number, "id" or "kind", text) of every id and kind the file spells out:
    #: printed in every report (a kind inside every mask label), so checked once loaded
    named: list[tuple[int, str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def load_secrets(path: str) -> list[Secret]:
    """One secret per line (UTF-8, blank lines ignored), or a ``.json`` list of strings or of
    ``{"value", "kind", "id"}`` objects for multi-line secrets such as PEM keys. A leading
    BOM and a line's ``\\r`` are removed; spaces and tabs around a line's secret are
    removed with a warning (on stderr, naming the line, never the value)."""
    loaded = _read_secrets(path)
    for warning in loaded.warnings:
        _stderr(warning)
    return loaded.secrets


@dataclass
class _Budget:
    """How many secrets (and characters of them) a scan may take, and has taken."""

    secrets: int
    chars: int
    #: why the limit is what it is, when it is not the general one
    why: str = ""
    used: int = 0
    used_chars: int = 0

    def check(self, count: int, chars: int, label: str) -> None:
        """Refuse, before any work on them, more secrets than a scan is made for."""
        total, total_chars = self.used + count, self.used_chars + chars
        if total > self.secrets:
            raise UsageError(
                f"{label} brings the secrets to search for to {total:,}; one scan searches "
                f"for at most {self.secrets:,}{self.why} (split them over several scans; see "
                "README, Scale)"
            )
        if total_chars > self.chars:
            raise UsageError(
                f"{label} brings the secrets to search for to {total_chars:,} characters; one "
                f"scan searches for at most {self.chars:,} (split them over several scans; "
                "see README, Scale)"
            )

    def take(self, secrets: list[Secret]) -> _Budget:
        """This budget once ``secrets`` are in."""
        return dataclasses.replace(
            self,
            used=self.used + len(secrets),
            used_chars=self.used_chars + sum(len(s.value) for s in secrets),
        )


def _budget(engine: str = "auto") -> _Budget:
    if engine == "hyperscan":
        return _Budget(
            secrets=HYPERSCAN_MAX_SECRETS,
            chars=MAX_SECRET_CHARS,
            why=" with --engine hyperscan (it compiles ~3 KB per needle; the default engine "
            "takes more)",
        )
    return _Budget(secrets=MAX_SECRETS, chars=MAX_SECRET_CHARS)


def _read_secrets(path: str, budget: _Budget | None = None) -> _SecretsFile:
    budget = _budget() if budget is None else budget
    label = f"secrets file {path!r}"
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {label}: {exc.strerror}") from None
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        lineno = data.count(b"\n", 0, exc.start) + 1
        raise UsageError(f"{label} is not valid UTF-8 (line {lineno})") from None
    loaded = _SecretsFile([])
    entries: list[tuple[str, str, str]] = []  # (value, kind, id)
    if path.endswith(".json"):
        listed = parse_json(text, label, UsageError, surrogates=False)
        if not isinstance(listed, list):
            raise UsageError(f"{label}: expected a JSON list")
        budget.check(len(listed), 0, label)
        ids: dict[str, int] = {}
        for n, item in enumerate(listed, start=1):
            if isinstance(item, str):
                item = {"value": item}
            if not isinstance(item, dict) or not isinstance(item.get("value"), str):
                raise UsageError(
                    f"{label} item {n}: expected a string or an object with a string 'value'"
                )
            kind = _label_field(item, "kind", "secret", label, n, loaded)
            secret_id = _label_field(item, "id", f"S{n}", label, n, loaded)
            if secret_id in ids:
                raise UsageError(
                    f"{label} item {n}: the same id as item {ids[secret_id]} (an id names "
                    "one secret)"
                )
            ids[secret_id] = n
            entries.append((item["value"], kind, secret_id))
    else:
        stripped: list[int] = []
        for n, line in enumerate(text.split("\n"), start=1):
            if line.endswith("\r"):
                line = line[:-1]
            value = line.strip(" \t")
            if not value:
                continue
            if _LINE_CONTROL.search(value):
                raise UsageError(
                    f"{label} line {n}: a control character (a carriage return inside the "
                    "line, NUL, ESC...) that a secret as written here can never mean; a "
                    "secret that really holds one goes in a .json secrets file"
                )
            if value != line:
                stripped.append(n)
            entries.append((value, "secret", f"S{n}"))
        if stripped:
            shown = ", ".join(map(str, stripped[:5]))
            more = f" and {len(stripped) - 5:,} more" if len(stripped) > 5 else ""
            loaded.warnings.append(
                f"leakcheck: warning: secrets file line {shown}{more}: spaces or tabs around "
                "the secret were removed (a secret that really has them goes in a .json "
                "secrets file)"
            )
    if not entries:
        raise UsageError(f"{label} holds no secret")
    budget.check(len(entries), sum(len(v) for v, _, _ in entries), label)
    judged: dict[str, Secret] = {}
    for value, kind, secret_id in entries:
        if value in judged:  # given twice: judged once (zxcvbn), searched for once
            loaded.secrets.append(dataclasses.replace(judged[value], id=secret_id))
            continue
        try:
            judged[value] = Secret.from_user(value, kind=kind, id=secret_id)
        except WeakSecretError as exc:
            raise UsageError(f"{label}: {exc}") from None
        loaded.secrets.append(judged[value])
    return loaded


def _label_field(
    item: dict[str, Any], name: str, default: str, label: str, n: int, loaded: _SecretsFile
) -> str:
    """An item's ``id`` or ``kind``: a string (an id may be a number), printable, never
    quoted back in a message (it may be the secret itself)."""
    if name not in item:
        return default
    value = item[name]
    if name == "id" and isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value or _LABEL_FORBIDDEN.search(value):
        raise UsageError(
            f"{label} item {n}: its {name!r} must be a non-empty string without control "
            "characters or \u00ab\u00bb"
        )
    loaded.named.append((n, name, value))
    return value


def load_canaries(path: str, budget: _Budget | None = None) -> tuple[list[Secret], int, int]:
    """The canaries a pytest run planted, rebuilt from its ``--leakcheck-report`` (the
    report holds their seed, tests and ids, never a value); how many secrets its tests
    registered themselves (those come with ``--secrets-file``); and how many canaries
    cannot be rebuilt, their test's id having held a secret (masked in the report).
    ``budget``: how many more secrets the scan may take."""
    document = read_json_file(path, f"report {path!r}", UsageError, surrogates=False)
    return canaries_from_report(document, path, budget)


def canaries_from_report(
    document: Any, path: str = "<report>", budget: _Budget | None = None
) -> tuple[list[Secret], int, int]:
    """``load_canaries`` of a report already read (``path`` names it in messages)."""
    budget = _budget() if budget is None else budget
    if not (
        isinstance(document, dict)
        and document.get("tool") == "leakcheck"
        and isinstance(document.get("seed"), str)
        and isinstance(document.get("tests"), list)
    ):
        raise UsageError(
            f"{path!r} is not a leakcheck report (pytest --leakcheck-report=PATH writes one)"
        )
    seed, registered, lost = document["seed"], 0, 0
    planned: list[tuple[str, str, int]] = []  # (test, kind, n): checked and counted first
    for n, record in enumerate(document["tests"], start=1):
        listed = record.get("secrets") if isinstance(record, dict) else None
        test = record.get("test") if isinstance(record, dict) else None
        if not isinstance(listed, list) or not isinstance(test, str):
            raise UsageError(
                f"report {path!r} test {n}: no list of its secrets (written by an older "
                "leakcheck? run pytest again)"
            )
        # a test id that held a secret was masked in the report: its canaries were made
        # from the id as it was, which the report no longer has
        masked_id = MASK_LABEL.search(test) is not None
        for entry in listed:
            if not isinstance(entry, dict) or not entry.get("generated"):
                registered += 1
                continue
            if masked_id:
                lost += 1
                continue
            canary_id = entry.get("id")
            match = _CANARY_ID.fullmatch(canary_id) if isinstance(canary_id, str) else None
            if match is None or match.group(1) not in KINDS:
                shown = canary_id[:40] if isinstance(canary_id, str) else type(canary_id).__name__
                raise UsageError(f"report {path!r} test {n}: {shown!r} is not a canary id (KIND#N)")
            planned.append((test, match.group(1), int(match.group(2))))
    budget.check(len(planned), 0, f"report {path!r}")
    canaries: list[Secret] = []
    factories: dict[str, CanaryFactory] = {}
    for test, kind, number in planned:
        factory = factories.get(test)
        if factory is None:
            factory = factories[test] = CanaryFactory(seed, namespace=test)
        canary = factory.nth(kind, number)
        canaries.append(dataclasses.replace(canary, id=f"{canary.id}@{_display(test)}"))
    budget.check(len(canaries), sum(len(c.value) for c in canaries), f"report {path!r}")
    return canaries, registered, lost


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def _distinct(secrets: list[Secret]) -> tuple[list[Secret], list[list[str]]]:
    """Each value once, under its first id; the ids of each value given more than once."""
    first: dict[str, int] = {}
    kept: list[Secret] = []
    ids: dict[int, list[str]] = {}
    for secret in secrets:
        index = first.setdefault(secret.value, len(kept))
        if index == len(kept):
            kept.append(secret)
        else:
            ids.setdefault(index, [kept[index].id]).append(secret.id)
    return kept, list(ids.values())


# --- what to read ------------------------------------------------------------------------

_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    code = ord(ch)
    return _ESCAPES.get(ch) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def _display(name: str) -> str:
    """A path (or a test id) as printable text: bytes that are not UTF-8 (a file name
    arrives surrogate-escaped) as ``\\xff``, control characters escaped."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        try:
            raw = name.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            raw = name.encode("utf-8", "backslashreplace")
        name = raw.decode("utf-8", "backslashreplace")
    return _UNPRINTABLE.sub(_escape, name)


class _Inputs:
    """What the PATH arguments name: the files to read (None: stdin), the errors, and the
    entries deliberately not read. Symbolic links are followed; each real directory and
    regular file is read once, under the first name it was met by; a link back to a
    directory being read (a loop) is not followed, and is named."""

    FIFO_ETC = "a FIFO, socket or device"
    LOOP = "a symlink loop"

    def __init__(self) -> None:
        self.targets: list[str | None] = []
        self.errors: list[str] = []
        self.not_read: list[tuple[str, str]] = []
        self._files: set[tuple[int, int]] = set()
        self._dirs: set[tuple[int, int]] = set()

    def add(self, arg: str) -> None:
        if arg == "-":
            self.targets.append(None)
            return
        try:
            status = os.stat(arg)
        except FileNotFoundError:
            self.errors.append(f"no such file or directory: {_display(arg)}")
            return
        except OSError as exc:
            self.errors.append(f"cannot read {_display(arg)}: {exc.strerror}")
            return
        if stat.S_ISDIR(status.st_mode):
            self._walk(arg, status)
        else:  # a file, or a FIFO or device the user named (``<(kubectl logs ...)``)
            self._file(arg, status)

    def _file(self, path: str, status: os.stat_result) -> None:
        if stat.S_ISREG(status.st_mode):
            key = (status.st_dev, status.st_ino)
            if key in self._files:
                return
            self._files.add(key)
        self.targets.append(path)

    def _walk(self, root: str, status: os.stat_result) -> None:
        """Every regular file below ``root``, in sorted order, depth first (as ``os.walk``
        lists them). Below a directory a FIFO, socket or device is not opened (a FIFO
        nobody writes to would block forever): it is listed as not read. A directory that
        cannot be listed is an error, never silently left out."""
        key = (status.st_dev, status.st_ino)
        if key in self._dirs:
            return
        self._dirs.add(key)
        stack: list[tuple[str, tuple[tuple[int, int], ...]]] = [(root, (key,))]
        while stack:
            path, ancestors = stack.pop()
            try:
                with os.scandir(path) as listing:
                    entries = sorted(listing, key=lambda entry: entry.name)
            except OSError as exc:
                self.errors.append(f"cannot list {_display(path)}: {exc.strerror}")
                continue
            below: list[tuple[str, tuple[tuple[int, int], ...]]] = []
            for entry in entries:
                try:
                    entry_status = os.stat(entry.path)  # through symbolic links
                except OSError:
                    self.targets.append(entry.path)  # dangling: reading it says why
                    continue
                if stat.S_ISDIR(entry_status.st_mode):
                    entry_key = (entry_status.st_dev, entry_status.st_ino)
                    if entry_key in ancestors:
                        self.not_read.append((_display(entry.path), self.LOOP))
                    elif entry_key not in self._dirs:  # else: read under another name
                        self._dirs.add(entry_key)
                        below.append((entry.path, (*ancestors, entry_key)))
                elif stat.S_ISREG(entry_status.st_mode):
                    self._file(entry.path, entry_status)
                else:
                    self.not_read.append((_display(entry.path), self.FIFO_ETC))
            stack.extend(reversed(below))


def _total_size(targets: list[str | None]) -> int | None:
    """Bytes to scan, or None when unknown: stdin, or a FIFO or device named on the
    command line (``<(kubectl logs ...)`` may stream gigabytes)."""
    total = 0
    for path in targets:
        if path is None:
            return None
        try:
            status = os.stat(path)
        except OSError:
            continue  # reported when it is read
        if not stat.S_ISREG(status.st_mode):
            return None
        total += status.st_size
    return total


# --- what is printed ---------------------------------------------------------------------


@functools.cache
def _masking_forms() -> tuple[tuple[FormFn, ...], tuple[FormFn, ...]]:
    """(the forms a masker searches for, those of them the detection scanner does not):
    every detection form (the codec plugins' too), and the short masking windows."""
    detection = (*FORMS, *plugin_forms())
    masking = (*MASKING_FORMS, *(f for f in detection if f not in MASKING_FORMS))
    return masking, tuple(f for f in masking if f not in detection)


#: Decoding layers of the masker (the plugin's masker decodes as deep).
_MASK_DEPTH = 2
#: Masking-only needles are looked up by their first GRAM bytes (a window is 6 characters,
#: 6 bytes or more); GRAM_SET_LIMIT bounds the set of the printed text's GRAM-byte pieces.
GRAM = 6
GRAM_SET_LIMIT = 1 << 21


#: Splits a text at the mask labels it holds (kept, at the odd indexes).
_LABELS = re.compile(f"({MASK_LABEL.pattern})")


def _small_texts_backend() -> str:
    """For the texts we print: the automaton builds at once where hyperscan compiles (and
    hyperscan cannot compile the needles of a very long secret)."""
    return "ahocorasick" if "ahocorasick" in available_backends() else "auto"


def _same(text: str) -> str:
    return text


class _Output:
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

    def use(self, secrets: list[Secret], detection: Scanner | None = None) -> None:
        """Mask ``secrets`` from now on; ``detection``, a scanner over exactly them."""
        if [id(s) for s in secrets] != [id(s) for s in self.secrets]:
            self._windows, self._short = None, []
        self.secrets = list(secrets)
        self._detection = detection

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
            forms=_masking_forms()[0],
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
        decoders = all_decoders()
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
        for finding in self._detector().scan(joined):
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

    def _detector(self) -> Scanner:
        if self._detection is None:  # an error before the scan's own scanner was built
            self._detection = Scanner(self.secrets, backend=_small_texts_backend())
        return self._detection

    def _window_heads(self) -> list[bytes]:
        """Per secret, the first GRAM bytes of each of its masking-only needles, packed."""
        if self._windows is None:
            extra = _masking_forms()[1]
            heads: list[bytes] = []
            short: list[tuple[bytes, int]] = []
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


def _strings(value: Any) -> list[str]:
    found: list[str] = []

    def keep(text: str) -> str:
        found.append(text)
        return text

    map_strings(value, keep)
    return found


def _stderr(line: str) -> None:
    try:
        print(line, file=sys.stderr)
    except (OSError, ValueError, AttributeError):
        pass  # nowhere left to say it


def _write_stdout(text: str) -> None:
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except (OSError, ValueError) as exc:
        raise _StdoutError(getattr(exc, "strerror", None) or str(exc)) from None


def _silence_stdout() -> None:
    """Point fd 1 at /dev/null, so that the interpreter's last flush of what could not be
    written succeeds (as the Python docs advise for BrokenPipeError)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass  # not a real file descriptor (captured in tests): nothing is left to flush


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="leakcheck",
        description="Prove that secrets do not leak from AI-agent tool gateways.",
    )
    parser.add_argument("--version", action="version", version=f"leakcheck {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    scan = commands.add_parser(
        "scan",
        help="search files for every form of known secrets",
        description="Search files, directories (recursively) or stdin ('-') for every "
        "encoded or partial form of the secrets in --secrets-file. Exit 0 when clean, "
        "1 on findings, 2 on usage or I/O errors.",
    )
    scan.add_argument(
        "--secrets-file",
        metavar="FILE",
        help="one secret per line (UTF-8), or a .json list; secrets are never taken from argv",
    )
    scan.add_argument(
        "--canaries-from",
        metavar="REPORT",
        help="also search for every canary a pytest run planted, rebuilt from its "
        "--leakcheck-report JSON (which holds the seed and canary ids, never a value)",
    )
    scan.add_argument("--format", choices=sorted(RENDERERS), default="text")
    scan.add_argument("--output", "-o", metavar="FILE", help="write the report here")
    scan.add_argument(
        "--decode",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="also decode percent, base64 and hex runs (2 layers) to find chains such as "
        "base64-of-JSON; off by default (see README for the cost)",
    )
    scan.add_argument("--engine", choices=("auto", *BACKENDS), default="auto")
    scan.add_argument("paths", nargs="+", metavar="PATH", help="file, directory or '-'")
    commands.add_parser("kinds", help="list the kinds of canary leakcheck generates")
    schema = commands.add_parser(
        "schema",
        help="print the agent error envelope's JSON Schema",
        description="Print the default agent error envelope schema (JSON Schema 2020-12) "
        "that the contract checks validate against, for a gateway's own tests or docs.",
    )
    schema.add_argument(
        "--version",
        default="v1",
        metavar="VERSION",
        help="schema version (default: v1)",
    )
    review = commands.add_parser(
        "review",
        help="review error-text snapshot differences and accept or reject them",
        description="Show each pending snapshot difference (written by a pytest run that "
        "saw drift) side by side and accept it (written into the snapshot file) or reject "
        "it. Asks per entry on a terminal. Exit 0 when nothing is left pending, 1 otherwise, "
        "2 on usage or I/O errors.",
    )
    review.add_argument(
        "--dir",
        default=".",
        metavar="ROOT",
        help="the pytest rootdir holding .leakcheck/pending (default: the current directory)",
    )
    decide = review.add_mutually_exclusive_group()
    decide.add_argument("--accept-all", action="store_true", help="accept every pending difference")
    decide.add_argument("--reject-all", action="store_true", help="reject every pending difference")
    review.add_argument(
        "--secrets-file",
        metavar="FILE",
        help="also mask these secrets in what is shown (one per line, or a .json list)",
    )
    return parser


def _review(args: argparse.Namespace) -> int:
    # imported here: the snapshot machinery only for this command (it imports no pytest)
    from .snapshot_store import SnapshotError, review

    root = Path(args.dir)
    if not root.is_dir():
        raise UsageError(f"--dir {args.dir!r} is not a directory")
    secrets = load_secrets(args.secrets_file) if args.secrets_file else []
    decision = "accept" if args.accept_all else "reject" if args.reject_all else None
    try:
        interactive = decision is None and sys.stdin.isatty()
    except (AttributeError, ValueError):
        interactive = False
    try:
        return review(root, decision=decision, interactive=interactive, secrets=secrets)
    except SnapshotError as exc:
        raise UsageError(str(exc)) from None


def _schema(version: str) -> int:
    # imported here: the scanner commands need none of the contract module
    from .contract import SCHEMA_VERSIONS, load_schema

    if version not in SCHEMA_VERSIONS:
        raise UsageError(
            f"unknown schema version {version!r}; known versions: {', '.join(SCHEMA_VERSIONS)}"
        )
    _write_stdout(json.dumps(load_schema(version), indent=2, ensure_ascii=False) + "\n")
    return EXIT_CLEAN


def _scan(args: argparse.Namespace, out: Path | None, output: _Output) -> int:
    if not args.secrets_file and not args.canaries_from:
        raise UsageError("give --secrets-file FILE, --canaries-from REPORT, or both")
    secrets: list[Secret] = []
    named: list[tuple[int, str, str]] = []
    notes: list[str] = []  # stderr lines that name nothing of the user's
    budget = _budget(args.engine)
    if args.secrets_file:
        loaded = _read_secrets(args.secrets_file, budget)
        secrets, named = loaded.secrets, loaded.named
        notes += loaded.warnings
        output.use(secrets)
    if args.canaries_from:
        canaries, registered, lost = load_canaries(args.canaries_from, budget.take(secrets))
        if registered and not args.secrets_file:
            notes.append(
                f"leakcheck: note: {registered} secret(s) that tests registered themselves "
                "cannot be rebuilt from the report: pass them with --secrets-file"
            )
        if lost:
            notes.append(
                f"leakcheck: warning: {lost} canary(ies) cannot be rebuilt: their test's id "
                "holds a secret and is masked in the report (keep secrets out of test ids)"
            )
        if not canaries and not secrets:
            raise UsageError(f"report {args.canaries_from!r} lists no canary to search for")
        secrets += canaries
    # a value given twice is searched for once and reported under its first id
    secrets, duplicates = _distinct(secrets)
    given_twice = [
        f"the same secret is given as {_and(ids)}: searched for once, reported as {ids[0]}"
        for ids in duplicates
    ]
    said = [f"leakcheck: note: {note}" for note in given_twice]  # names ids, paths: masked
    output.use(secrets)
    # what to read, first: its size lets "auto" pick the engine that finishes first
    inputs = _Inputs()
    for arg in args.paths:
        inputs.add(arg)
    scanner = _scanner(secrets, args.decode, args.engine, _total_size(inputs.targets))
    output.use(secrets, scanner)
    trusted = _check_named(named, args.secrets_file, output)
    if out is not None or args.format != "text":  # else the report on stdout lists them
        said += [f"leakcheck: note: not read ({why}): {path}" for path, why in inputs.not_read]
    findings: list[Finding] = []
    sources = 0
    uris: dict[str, str] = {}
    for target in inputs.targets:
        if target is None:
            if sys.stdin is None:
                inputs.errors.append("cannot read <stdin>: it is closed")
                continue
            sources += 1
            findings += scanner.scan_stream(sys.stdin.buffer, "<stdin>")
            continue
        name = _display(target)
        uris[name] = path_uri(target)
        try:
            with open(target, "rb") as stream:
                sources += 1
                findings += scanner.scan_stream(stream, name)
        except OSError as exc:
            inputs.errors.append(f"cannot read {name}: {exc.strerror}")
    summary = ScanSummary(
        findings=findings,
        sources=sources,
        secrets=[(s.id, s.kind) for s in secrets],
        needles=scanner.needle_count,
        engine=scanner.engine.name,
        decode=args.decode,
        errors=inputs.errors,
        not_read=inputs.not_read,
        notes=given_twice,
        uris=uris,
    )
    code = EXIT_ERROR if inputs.errors else EXIT_FINDINGS if findings else EXIT_CLEAN
    if out is not None:
        said.append(f"leakcheck: {len(findings)} findings, report written to {_display(str(out))}")
    if inputs.errors and (out is not None or args.format != "text"):
        said += [f"leakcheck: error: {error}" for error in inputs.errors]
    report = document(summary, args.format)
    # Mask every string of the report and of what stderr says, then dump (masking dumped
    # JSON could cut an escape in two). Nothing to mask, nothing built: a clean report
    # shows only our own words, numbers and ids (a JSON report lists the secrets' ids and
    # kinds: those a file spells out were checked above, a canary's names its test).
    ids_printed = args.format == "json" and not all(
        (s.id in trusted or _OWN_ID.fullmatch(s.id)) and (s.kind in trusted or s.kind in _OWN_KINDS)
        for s in secrets
    )
    if findings or inputs.errors or inputs.not_read or said or ids_printed:
        mask = output.masker([*_strings(report), *said])
        report = map_strings(report, mask)
        said = [mask(line) for line in said]
    text = dump(report, args.format)
    if out is not None:
        try:
            out.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError(
                f"cannot write report {_display(str(out))!r}: {exc.strerror}"
            ) from None
    else:
        _write_stdout(text)
    for line in notes + said:
        _stderr(line)
    return code


def _scanner(secrets: list[Secret], decode: bool, engine: str, size: int | None) -> Scanner:
    """The scan's scanner. ``auto`` is the engine's choice (``engine.resolve_backend``: the
    automaton past HYPERSCAN_MAX_NEEDLES or for a needle hyperscan cannot compile), and the
    automaton if hyperscan still fails to compile."""
    try:
        return Scanner(secrets, decode=decode, backend=engine, input_bytes=size)
    except RuntimeError as exc:
        raise UsageError(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - only hyperscan's own error is handled
        hyperscan = sys.modules.get("hyperscan")
        if hyperscan is None or not isinstance(exc, getattr(hyperscan, "error", ())):
            raise
        if engine != "auto":
            raise UsageError(
                f"hyperscan cannot compile these needles ({exc}): a secret this long needs "
                "--engine ahocorasick"
            ) from None
    return Scanner(secrets, decode=decode, backend="ahocorasick", input_bytes=size)


def _check_named(named: list[tuple[int, str, str]], path: str | None, output: _Output) -> set[str]:
    """The ids and kinds a secrets file spells out, once none holds a piece of a secret:
    they are printed in every report, and a kind inside every mask label."""
    if not named:
        return set()
    texts = [text for _, _, text in named]
    mask = output.masker(texts)
    for n, what, text in named:
        if mask(text) != text:
            raise UsageError(
                f"secrets file {path!r} item {n}: its {what} holds a piece of a secret (ids "
                "and kinds are printed in every report: keep secrets out of them)"
            )
    return set(texts)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _build_parser()
    args = parser.parse_args(argv)
    output = _Output()
    try:
        if args.command == "scan":
            code = _scan(args, Path(args.output) if args.output else None, output)
        elif args.command == "kinds":
            lines = [
                f"{kind.name:<16} {kind.secret_class.value:<8} {kind.description}"
                for kind in KINDS.values()
            ]
            _write_stdout("\n".join(lines) + "\n")
            code = EXIT_CLEAN
        elif args.command == "schema":
            code = _schema(args.version)
        elif args.command == "review":
            code = _review(args)
        else:
            parser.print_help()
            code = EXIT_ERROR
        _write_stdout("")  # flushed here, where a failure can still be reported
    except UsageError as exc:
        # the message may name a path or an id: masked with the secrets known so far
        _stderr(output.mask_one(f"leakcheck: error: {exc}"))
        return EXIT_ERROR
    except _StdoutError as exc:
        _stderr(f"leakcheck: error: cannot write to standard output: {exc}")
        _silence_stdout()
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
