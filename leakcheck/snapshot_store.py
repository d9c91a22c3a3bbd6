"""Error-text snapshots without pytest: entries, their files, the secret guard, the diff,
and ``leakcheck review``.

The pytest side (options, the session that compares and writes at the end, xdist) is
``leakcheck.snapshots``; this module is what it and ``leakcheck review`` share, and it
imports no pytest (a test proves it). See ``leakcheck.snapshots`` for what an entry holds,
how it is normalized and where it is stored.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
import os
import re
import shutil
import tempfile
import textwrap
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from .canaries import Secret, canary_lookalikes
from .findings import MASK_LABEL, without_random_tokens
from .serialize import map_strings, read_json_file, to_jsonable

__all__ = [
    "DEFAULT_DIR",
    "FIELDS",
    "FORMAT",
    "PENDING_DIR",
    "SnapshotError",
    "allowlist_files",
    "differing_fields",
    "drift_line",
    "dump",
    "normalize",
    "pending_path",
    "read_document",
    "read_entries",
    "refusal",
    "render_drift",
    "render_snapshot_file",
    "review",
    "side_by_side",
    "snapshot_entry",
    "version_changes",
    "write_atomic",
]

FORMAT = 1
DEFAULT_DIR = "__leakcheck_snapshots__"
PENDING_DIR = ".leakcheck/pending"
#: the fields a drift is judged on (``versions`` explains a drift, it is not one)
FIELDS = ("response", "exception", "exception_type")


class SnapshotError(Exception):
    """A snapshot or pending file that cannot be read or written (the message is safe)."""


# --- normalization ----------------------------------------------------------------------------

_LOOPBACK = r"(?:127\.0\.0\.1|localhost|\[::1\]|::1)"
_PORTS = [
    (re.compile(rf"({_LOOPBACK}\s*:\s*)\d{{1,5}}(?!\d)"), r"\1PORT"),
    (re.compile(rf"(\(\s*['\"]{_LOOPBACK}['\"]\s*,\s*)\d{{1,5}}(?!\d)"), r"\1PORT"),
    (re.compile(r"\b([Pp]ort\s*[=:]?\s*)\d{1,5}(?!\d)"), r"\1PORT"),
]
_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{4,}\b")
_SSL_LINE = re.compile(r"\((_ssl\.c):\d+\)")
_FINGERPRINTS = [
    re.compile(r"SHA256:[A-Za-z0-9+/=]{20,}"),
    re.compile(r"MD5:(?:[0-9a-f]{2}:){15}[0-9a-f]{2}"),
    re.compile(r"AAAA[A-Za-z0-9+/]{20,}={0,2}"),
]
_LABEL_LENGTH = re.compile(r"\b(prefix|suffix)-\d+\b")
_PATH_END = r"[^\s'\"`),;\]}>\u00bb]*"


def _tmp_pattern(extra: Iterable[str]) -> re.Pattern[str]:
    roots = {"/tmp", "/var/tmp", "/private/tmp", "/var/folders", tempfile.gettempdir()}
    roots |= {os.path.realpath(r) for r in roots}
    roots |= {str(p).rstrip("/") for p in extra if str(p).strip("/")}
    alternatives = "|".join(re.escape(r) for r in sorted(roots, key=len, reverse=True))
    return re.compile(rf"(?<![\w.~-])(?:{alternatives})(?:/{_PATH_END})?(?![\w.-])")


def normalize(
    text: str,
    *,
    request_ids: Iterable[str] = (),
    ports: Iterable[int] = (),
    paths: Iterable[str] = (),
) -> str:
    """``text`` with its run-to-run parts replaced by stable placeholders (see the module
    docstring). Mask before normalizing: a placeholder must never cut a canary in two."""
    for rid in request_ids:
        if rid:
            text = text.replace(rid, "<request-id>")
    text = _tmp_pattern(paths).sub("<tmp>", text)
    for pattern, repl in _PORTS:
        text = pattern.sub(repl, text)
    for port in ports:
        if isinstance(port, int) and port >= 1024:
            text = re.sub(rf"(?<!\d){port}(?!\d)", "PORT", text)
    text = _ADDRESS.sub("0xADDR", text)
    text = _SSL_LINE.sub(r"(\1:LINE)", text)
    for pattern in _FINGERPRINTS:
        text = pattern.sub("FINGERPRINT", text)
    return MASK_LABEL.sub(lambda m: _LABEL_LENGTH.sub(r"\1", m.group(0)), text)


def _type_name(exc: BaseException) -> str:
    cls = type(exc)
    return f"{cls.__module__}.{cls.__qualname__}"


def request_id_of(envelope: Any) -> str | None:
    """The request id a gateway returned: an envelope's ``request_id``, a mapping's key or,
    as a Target's result object may carry it, an attribute (None when it has no non-empty
    string one). The matrix checks it; a snapshot normalizes it (a new id every run: left
    in, every case drifted every run)."""
    if isinstance(envelope, Mapping):
        value = envelope.get("request_id")
    else:
        try:
            value = getattr(envelope, "request_id", None)
        except Exception:  # noqa: BLE001 - an app's property may raise: no id
            return None
    return value if isinstance(value, str) and value else None


def snapshot_entry(
    envelope: Any,
    exception: BaseException | None,
    versions: Mapping[str, str] | None = None,
    mask: Callable[[str], str] | None = None,
    *,
    key: str = "",
    ports: Iterable[int] = (),
    paths: Iterable[str] = (),
) -> dict[str, Any]:
    """One snapshot entry: the envelope the caller saw and the library exception behind it
    (``format_exception_only``), each string masked with ``mask`` (pass ``LeakCheck.mask``)
    and then normalized; ``versions`` from ``libtrace.library_versions`` (None: the snapshot
    session fills them in). ``ports`` and ``paths`` name extra run-specific values (a fault's
    port, a temporary directory) to replace wherever they appear."""
    masked = mask or (lambda text: text)
    response = map_strings(to_jsonable(envelope), masked)
    rid = request_id_of(envelope)
    ids = [masked(rid)] if isinstance(rid, str) and len(rid) >= 4 else []
    ports, paths = list(ports), list(paths)

    def norm(text: str) -> str:
        return normalize(text, request_ids=ids, ports=ports, paths=paths)

    text = type_name = None
    if exception is not None:
        try:
            raw = "".join(traceback.format_exception_only(type(exception), exception))
        except Exception as exc:  # noqa: BLE001 - a broken __str__ must not break the run
            raw = f"{_type_name(exception)}: <str() raised {type(exc).__name__}>\n"
        text = norm(masked(raw))
        type_name = _type_name(exception)
    return {
        "key": key,
        "response": map_strings(response, norm),
        "exception": text,
        "exception_type": type_name,
        "versions": dict(sorted((versions or {}).items())),
    }


# --- storage ---------------------------------------------------------------------------------


def dump(document: Any) -> str:
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


#: What a broken snapshot or pending file's error adds: how to get a sound one back.
_REPAIR = (
    "; resolve its merge conflict, or delete it and write it anew "
    "(pytest --leakcheck-snapshot-create; a pending file: run the suite again)"
)


def read_document(path: Path, what: str) -> dict[str, Any] | None:
    if not path.exists():
        return None
    # (a pending file is named after a snapshot's id, which a test may have made of a
    # token: a run that looks like a key is opaque, with or without --secrets-file)
    shown = os.sep.join(without_random_tokens(part) for part in str(path).split(os.sep))
    try:
        document = read_json_file(path, f"{what} {shown}", SnapshotError)
    except SnapshotError as exc:
        raise SnapshotError(f"{exc}{_REPAIR}") from None
    if (
        not isinstance(document, dict)
        or document.get("format") != FORMAT
        or not isinstance(document.get("entries"), dict)
    ):
        raise SnapshotError(
            f"{what} {shown} is not a leakcheck file of format {FORMAT} "
            f'({{"format": 1, "entries": {{...}}}}){_REPAIR}'
        )
    return document


def read_entries(path: Path) -> dict[str, dict[str, Any]]:
    """The entries of a snapshot file ({} when it does not exist)."""
    document = read_document(path, "snapshot file")
    return {} if document is None else dict(document["entries"])


class Writer(Protocol):
    """Where the review writes (standard output, or the CLI's writer of it)."""

    def write(self, text: str, /) -> object: ...


def render_snapshot_file(entries: Mapping[str, Any]) -> str:
    return dump({"format": FORMAT, "entries": dict(entries)})


def write_atomic(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        raise SnapshotError(f"cannot write {path}: {exc.strerror}") from None


_GITLEAKS = """\
# Written by leakcheck next to its snapshot files; yours to edit, meant to be committed.
# The snapshots hold masked canary labels such as \u00abcanary:bearer:raw\u00bb and error texts
# of test fixtures, never a real secret: leakcheck scans every entry for every form of every
# canary before it writes one. gitleaks reads .gitleaks.toml from the repository root only:
# extend your root config with this file,
#   [extend]
#   path = "{rel}/.gitleaks.toml"
# or run gitleaks with --config {rel}/.gitleaks.toml. For trufflehog, the file next to this
# one lists the same paths (no comments: every line is a regex):
#   trufflehog filesystem . --exclude-paths={rel}/trufflehog-exclude.txt
title = "leakcheck snapshots"

[extend]
useDefault = true

[allowlist]
description = "leakcheck snapshot files: masked canaries and fixture error texts only"
paths = ['''(^|/){dirname}/[^/]+\\.json$''']
regexes = ['''\u00abcanary:[a-z_0-9]+:[^\u00bb]+\u00bb''']
"""

_TRUFFLEHOG = """\
(^|/){dirname}/[^/]+\\.json$
"""


def allowlist_files(directory: Path, root: Path) -> dict[Path, str]:
    try:
        rel = directory.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        rel = directory.as_posix()
    dirname = re.escape(directory.name)
    return {
        directory / ".gitleaks.toml": _GITLEAKS.format(rel=rel, dirname=dirname),
        directory / "trufflehog-exclude.txt": _TRUFFLEHOG.format(rel=rel, dirname=dirname),
    }


# --- secrets: the scanner, and canary look-alikes as a backstop ------------------------------


def _withhold_lookalikes(text: str) -> str:
    """``text`` with every line that shows a canary shape withheld whole (a shape marks
    where a canary starts, not where it ends), PEM blocks from BEGIN to END."""
    out, in_pem = [], False
    for line in text.split("\n"):
        kinds = canary_lookalikes(line)
        if "pem" in kinds:
            in_pem = "-----END " not in line.split("-----BEGIN ", 1)[-1]
        elif in_pem:
            kinds, in_pem = ["pem"], "-----END " not in line
        out.append(f"\u00abcanary?:{','.join(kinds)}: line withheld\u00bb" if kinds else line)
    return "\n".join(out)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _secret_hits(text: str, scanner: Any) -> list[str]:
    if scanner is None:
        return []
    return sorted({f"{f.secret_id} ({f.form})" for f in scanner.scan(text)})


def _is_pending_entry(entry: Any) -> bool:
    """Whether ``entry`` has a pending entry's shape: ``new`` (and ``old``) an object or
    null."""
    return isinstance(entry, dict) and all(
        entry.get(side) is None or isinstance(entry.get(side), dict) for side in ("old", "new")
    )


def refusal(text: str, value: Any, scanner: Any = None) -> list[str]:
    """Why ``text`` (what would be written: ``value`` as JSON) must not be written: the
    secret ids and forms ``scanner`` finds in it or in ``value``'s strings raw, and the
    canary shapes it shows (a backstop where no secret is known: the xdist controller,
    ``leakcheck review``). Names and forms only, never a value; [] when it is safe."""
    seen = text + "\n" + "\n".join(_strings(value))
    hits = _secret_hits(seen, scanner)
    return hits + [f"text shaped like a {kind} canary" for kind in canary_lookalikes(seen)]


def pending_path(root: Path, module: str) -> Path:
    """The pending-differences file of test module ``module`` under rootdir ``root`` (a
    module whose stem another one's file already holds gets a suffixed name)."""
    directory = root / PENDING_DIR
    path = directory / f"{Path(module).stem}.json"
    try:
        document = read_document(path, "pending file")
    except SnapshotError:
        document = None
    if document is not None and document.get("module") not in (None, module):
        digest = hashlib.sha256(module.encode()).hexdigest()[:8]
        path = directory / f"{Path(module).stem}-{digest}.json"
    return path


# --- comparing and showing -------------------------------------------------------------------


def _field_text(entry: Mapping[str, Any] | None, name: str) -> str:
    if entry is None:
        return ""
    value = entry.get(name)
    if value is None:
        return "(none)"
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


def differing_fields(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    return [name for name in FIELDS if old.get(name) != new.get(name)]


def version_changes(
    old: Mapping[str, str] | None, new: Mapping[str, str] | None
) -> list[tuple[str, str, str]]:
    """``(name, old, new)`` for each tracked dependency whose version differs (as shown:
    a name or a version that looks like a key, in a snapshot edited by hand, is opaque)."""
    old, new = old or {}, new or {}
    names = sorted(set(old) | set(new), key=str)
    missing = "not recorded"
    return [
        (_shown(n), _shown(old.get(n, missing)), _shown(new.get(n, missing)))
        for n in names
        if old.get(n) != new.get(n)
    ]


def _shown(text: Any) -> str:
    return without_random_tokens(str(text))


def _versions_line(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> str:
    changes = version_changes((old or {}).get("versions"), new.get("versions"))
    if not changes:
        return "no tracked dependency changed version"
    return "dependencies that changed version: " + ", ".join(
        f"{name} {a} -> {b}" for name, a, b in changes
    )


def render_drift(key: str, old: Mapping[str, Any], new: Mapping[str, Any], where: str = "") -> str:
    """The failure text of a drifted case: the dependencies that changed version, then a
    unified diff per field that differs."""
    shown = without_random_tokens(key)
    lines = [f"leakcheck snapshot drift: {shown}" + (f" (snapshot {where})" if where else "")]
    lines.append(_versions_line(old, new))
    for name in differing_fields(old, new):
        diff = difflib.unified_diff(
            _field_text(old, name).splitlines(),
            _field_text(new, name).splitlines(),
            "snapshot",
            "this run",
            lineterm="",
        )
        lines.append(f"{name}:")
        lines += ["    " + line for line in diff]
    lines.append(
        "review it with `leakcheck review`, or accept every change with --leakcheck-snapshot-update"
    )
    return "\n".join(lines)


def _wrap(text: str, width: int) -> list[str]:
    return textwrap.wrap(
        text, width, replace_whitespace=False, drop_whitespace=False, break_on_hyphens=False
    ) or [""]


def side_by_side(old: str, new: str, width: int = 100) -> list[str]:
    """``old | new`` rows, aligned by a line diff (``|`` changed, ``<`` only old, ``>`` only
    new); long lines wrap inside their column."""
    col = max(20, (width - 3) // 2)
    a, b = old.splitlines(), new.splitlines()
    rows = [f"{'snapshot':<{col}}   this run", f"{'-' * col}   {'-' * col}"]
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        left, right = a[i1:i2], b[j1:j2]
        for n in range(max(len(left), len(right))):
            lt = left[n] if n < len(left) else None
            rt = right[n] if n < len(right) else None
            mark = " " if tag == "equal" else "|" if lt is not None and rt is not None else "<"
            if lt is None:
                mark = ">"
            lw, rw = _wrap(lt or "", col), _wrap(rt or "", col)
            for k in range(max(len(lw), len(rw))):
                piece_l = lw[k] if k < len(lw) else ""
                piece_r = rw[k] if k < len(rw) else ""
                rows.append(f"{piece_l:<{col}} {mark if k == 0 else ' '} {piece_r}".rstrip())
    return rows


def drift_line(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    changes = version_changes(old.get("versions"), new.get("versions"))
    fields = ", ".join(differing_fields(old, new))
    deps = "; ".join(f"{n} {a} -> {b}" for n, a, b in changes) or "no dependency changed version"
    return f"{fields} changed ({deps})"


def review(
    root: Path,
    *,
    decision: str | None = None,
    interactive: bool = False,
    out: Writer | None = None,
    ask: Callable[[str], str] | None = None,
    secrets: Sequence[Secret] = (),
    width: int | None = None,
) -> int:
    """Show every pending difference under ``root`` side by side and accept or reject it
    (``decision`` "accept"/"reject" for all, else ask per entry when ``interactive``).
    Accepting writes the new entry into its snapshot file. 0 when nothing remains pending."""
    import builtins
    import sys

    out = out or sys.stdout
    ask = ask or builtins.input  # looked up now: tests and wrappers replace it
    width = width or shutil.get_terminal_size((100, 24)).columns
    guard: Callable[[str], str] = _withhold_lookalikes
    detector: Any = None
    if secrets:
        from .detect import Scanner
        from .extensions import masking_forms

        # masking windows too: a piece of a secret cut by the side-by-side rows is hidden
        scanner = Scanner(list(secrets), decode=True, forms=masking_forms())
        detector = Scanner(list(secrets), decode=True)  # what it would write: real hits

        def guard(text: str) -> str:
            return _withhold_lookalikes(scanner.mask(text))

    def say(text: str = "") -> None:
        out.write(guard(text) + "\n")

    directory = root / PENDING_DIR
    files = sorted(directory.glob("*.json")) if directory.is_dir() else []
    documents = [(path, read_document(path, "pending file")) for path in files]
    total = sum(len(doc["entries"]) for _, doc in documents if doc)
    if not total:
        say("leakcheck review: nothing pending")
        return 0
    accepted = rejected = shown = 0
    stop = False
    inside = root.resolve()
    for path, document in documents:
        if not document or stop:
            continue
        snapshot = root / str(document.get("snapshot_file", ""))
        if snapshot.suffix != ".json" or not snapshot.resolve().is_relative_to(inside):
            # (a pending file is input: one fetched from a CI run of a fork's change named
            # a file anywhere, and accepting wrote it there)
            say(
                f"refusing {_shown(path.name)}: the snapshot file it names is not a .json file "
                f"below {root} (a pending file written by pytest names one there)"
            )
            total -= len(document["entries"])
            continue
        entries: dict[str, Any] = document["entries"]
        malformed = [k for k, e in entries.items() if not _is_pending_entry(e)]
        if malformed:
            # (a pending file is input: a hand-edited one was a traceback here)
            say(
                f"refusing {_shown(path.name)}: {len(malformed)} of its entries are not pending "
                'snapshots ({"old": ..., "new": {...}}); delete it and rerun pytest'
            )
            total -= len(entries)
            continue
        # (an id or a module name is input too: one that looks like a key is shown opaque)
        module = without_random_tokens(guard(str(document.get("module", path.stem))))
        for key in sorted(entries):
            old, new = entries[key].get("old"), entries[key].get("new") or {}
            shown += 1
            named = without_random_tokens(guard(key))
            say(f"=== [{shown}/{total}] {module}: {named}")
            say(_versions_line(old, new) if old else "new case: no snapshot yet")
            for name in FIELDS:
                if old is not None and old.get(name) == new.get(name):
                    continue
                say(f"--- {name}")
                # guarded whole, before wrapping can cut a secret across two rows
                before, after = guard(_field_text(old, name)), guard(_field_text(new, name))
                for row in side_by_side(before, after, width):
                    say(row)
            reasons = refusal(dump(new), new, detector)
            if named != key or without_random_tokens(str(document.get("snapshot_file"))) != str(
                document.get("snapshot_file")
            ):
                reasons.append("text shaped like a key in its id or file name")
            unsafe = [reason for reason in reasons if reason.startswith("text shaped like")]
            if len(unsafe) < len(reasons):
                unsafe.append("a secret of --secrets-file")
            choice = decision
            if choice is None and interactive and not stop:
                choice = _ask(ask)
            if choice == "quit":
                stop = True
                break
            if choice == "accept":
                if unsafe:
                    say(f"refusing to accept {named}: it holds {', '.join(unsafe)}")
                    continue
                current = read_entries(snapshot)
                current[key] = new
                write_atomic(snapshot, render_snapshot_file(current))
                for extra, content in allowlist_files(snapshot.parent, root).items():
                    if not extra.exists():
                        write_atomic(extra, content)
                del entries[key]
                accepted += 1
                say(f"accepted: {named} written to {document.get('snapshot_file')}")
            elif choice == "reject":
                del entries[key]
                rejected += 1
                say(f"rejected: {named} (the snapshot is unchanged; the next run fails again)")
        if entries:
            write_atomic(path, dump(document))
        else:
            with contextlib.suppress(OSError):
                path.unlink()
    remaining = total - accepted - rejected
    say(f"leakcheck review: {accepted} accepted, {rejected} rejected, {remaining} pending")
    return 0 if remaining == 0 else 1


def _ask(ask: Callable[[str], str]) -> str:
    choices = {"a": "accept", "r": "reject", "s": "skip", "q": "quit"}
    while True:
        try:
            answer = ask("accept [a], reject [r], skip [s], quit [q]? ").strip().lower()
        except EOFError:
            return "quit"
        if answer[:1] in choices:
            return choices[answer[:1]]
