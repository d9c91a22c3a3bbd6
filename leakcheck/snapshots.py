"""Snapshots of the error texts a gateway produces, to review what a dependency upgrade changed.

Libraries change their exception formatting without asking. For one baseline placement of
each operation and stage (``authorization-header`` for HTTP operations, ``ssh-password`` for
SSH ones), the stage matrix records a snapshot entry:

    {"key": "create_deployment/connection_refused",
     "response": {...the envelope the caller saw, masked and normalized...},
     "exception": "httpx.ConnectError: [Errno 111] Connection refused\\n",
     "exception_type": "httpx.ConnectError",
     "versions": {"httpx": "0.28.1", ...}}

``snapshot_entry`` builds it: every string is masked (every form of every canary of the
test becomes a stable ``«canary:KIND:FORM»`` label) and then normalized, so that a rerun
gives the same text: the request id becomes ``<request-id>``, loopback ports ``PORT``,
temporary paths ``<tmp>``, memory addresses ``0xADDR``, host-key fingerprints
``FINGERPRINT``, the ssl module's C line numbers ``LINE``, and the length in a masked
``prefix-N``/``suffix-N`` label (it depends on where a canary's random body put its first
hostile character) is dropped. Durations are kept as they are: the texts that carry one
("read timeout=0.3") print the harness's fixed timeout, never a measured time; a gateway
that prints measured times should not, and its snapshot will show it.

Storage: one JSON file per test module, ``__leakcheck_snapshots__/<module stem>.json`` next
to the module (``--leakcheck-snapshot-dir`` or the ``leakcheck_snapshot_dir`` ini option put
them all in one directory), ``{"format": 1, "entries": {key: entry}}``, sorted keys, meant
to be committed. A normal run compares and fails a case whose response or exception text
differs, with a unified diff per field and the dependencies that changed version; the
difference is kept in ``.leakcheck/pending/<module stem>.json`` under the rootdir for
``leakcheck review``. ``--leakcheck-snapshot-create`` writes entries for new keys only;
``--leakcheck-snapshot-update`` writes every observed entry and deletes unused ones;
``--no-leakcheck-snapshots`` (ini ``leakcheck_snapshots = false``) neither compares nor writes.
A case without a snapshot fails a normal run: a new case must be reviewed like a changed one.

Unused detection honours selection: a stored key is unused when its case was selected,
passed and produced no entry, or when no test of the module, selected or deselected, maps to
it and the module was collected whole (not narrowed by ``path::name``). A module that was not
collected, failed to collect, or whose case was deselected (``-k``, ``-m``, ``--deselect``)
keeps its keys.

Under xdist, workers send their observations, collected and selected keys and passed tests
to the controller through ``workeroutput``; the controller does every file write.

Nothing written or printed holds a secret: every entry is scanned, by the scanner, for
every form of the test's own canaries when it is observed and of every canary of the session
before a file is written, and for canary-shaped text (the generated kinds' fixed prefixes)
as a backstop where no secret is known (the xdist controller, ``leakcheck review``). A hit
refuses the write and fails the session with a message that names secret ids, never values.
Next to the snapshot files go a gitleaks config and a trufflehog exclude list (written once,
yours to edit) so that repository scanners do not flag the masked labels.

Why not syrupy: its snapshots are asserted from a ``snapshot`` fixture inside the test body,
while these entries are produced by the matrix and judged in the report hook (the test's
outcome must carry the drift, masked, next to the leak verdict); syrupy's unused detection
and its storage are tied to that fixture's assertions, and the review flow (pending
differences accepted later, dependency versions named) has no counterpart there. What we
keep from it: writes only under an explicit flag, selection-aware unused detection, xdist
merged through ``workeroutput``, one file per test module.
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
from typing import Any, TextIO

import pytest

from .canaries import Secret, canary_lookalikes
from .findings import MASK_LABEL
from .placements import BASELINE_PLACEMENTS
from .serialize import map_strings, read_json_file, to_jsonable

__all__ = [
    "BASELINE_PLACEMENTS",
    "CASE_PARAM",
    "DEFAULT_DIR",
    "FIELDS",
    "FORMAT",
    "PENDING_DIR",
    "SNAPSHOT_ENTRY",
    "SnapshotError",
    "SnapshotSession",
    "addoption",
    "install",
    "item_key",
    "normalize",
    "render_drift",
    "review",
    "side_by_side",
    "snapshot_entry",
]

FORMAT = 1
DEFAULT_DIR = "__leakcheck_snapshots__"
PENDING_DIR = ".leakcheck/pending"
#: the parameter name ``stage_matrix`` gives its ``CaseSpec``
CASE_PARAM = "leakcheck_case"
#: the fields a drift is judged on (``versions`` explains a drift, it is not one)
FIELDS = ("response", "exception", "exception_type")
#: a producer may store an entry here instead of on the ``leakcheck`` fixture's ``.snapshot``
SNAPSHOT_ENTRY = pytest.StashKey[dict[str, Any]]()

_SESSION = pytest.StashKey["SnapshotSession"]()
_HANDLED = pytest.StashKey[bool]()
_WORKER_KEY = "leakcheck_snapshots"


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
    rid = envelope.get("request_id") if isinstance(envelope, Mapping) else None
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


def _dump(document: Any) -> str:
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _read_json(path: Path, what: str) -> dict[str, Any] | None:
    if not path.exists():
        return None
    document = read_json_file(path, f"{what} {path}", SnapshotError)
    if (
        not isinstance(document, dict)
        or document.get("format") != FORMAT
        or not isinstance(document.get("entries"), dict)
    ):
        raise SnapshotError(
            f"{what} {path} is not a leakcheck file of format {FORMAT} "
            '({"format": 1, "entries": {...}})'
        )
    return document


def read_entries(path: Path) -> dict[str, dict[str, Any]]:
    """The entries of a snapshot file ({} when it does not exist)."""
    document = _read_json(path, "snapshot file")
    return {} if document is None else dict(document["entries"])


def render_snapshot_file(entries: Mapping[str, Any]) -> str:
    return _dump({"format": FORMAT, "entries": dict(entries)})


def _write_atomic(path: Path, text: str) -> None:
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


def _allowlists(directory: Path, root: Path) -> dict[Path, str]:
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


def _scan_text(value: Any) -> str:
    """What a scan of ``value`` must see: its JSON as written, and every string raw."""
    return _dump(value) + "\n".join(_strings(value))


def _secret_hits(text: str, scanner: Any) -> list[str]:
    if scanner is None:
        return []
    return sorted({f"{f.secret_id} ({f.form})" for f in scanner.scan(text)})


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
    """``(name, old, new)`` for each tracked dependency whose version differs."""
    old, new = old or {}, new or {}
    names = sorted(set(old) | set(new))
    missing = "not recorded"
    return [
        (n, old.get(n, missing), new.get(n, missing)) for n in names if old.get(n) != new.get(n)
    ]


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
    lines = [f"leakcheck snapshot drift: {key}" + (f" (snapshot {where})" if where else "")]
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


# --- which test maps to which key ---------------------------------------------------------


def _case_of(item: Any) -> Any:
    callspec = getattr(item, "callspec", None)
    return callspec.params.get(CASE_PARAM) if callspec is not None else None


def item_key(item: Any) -> str | None:
    """``operation/stage`` of a stage-matrix item whose placement is a baseline (None for
    other items)."""
    spec = _case_of(item)
    if spec is None:
        return None
    operation, stage = getattr(spec, "operation", None), getattr(spec, "stage", None)
    if getattr(spec, "placement", None) not in BASELINE_PLACEMENTS.values():
        return None
    if not isinstance(operation, str) or not isinstance(stage, str):
        return None
    return f"{operation}/{stage}"


def _module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


# --- the pytest side -----------------------------------------------------------------------


def addoption(parser: pytest.Parser) -> None:
    """Register the snapshot options (safe to call twice)."""
    group = parser.getgroup("leakcheck", "secret leak checking")
    if any("--leakcheck-snapshot-update" in opt.names() for opt in group.options):
        return
    group.addoption(
        "--leakcheck-snapshot-update",
        action="store_true",
        default=False,
        help="write every observed error-text snapshot and delete unused ones",
    )
    group.addoption(
        "--leakcheck-snapshot-create",
        action="store_true",
        default=False,
        help="write snapshots for new cases only; never change an existing one",
    )
    group.addoption(
        "--no-leakcheck-snapshots",
        action="store_true",
        default=False,
        help="neither compare nor write error-text snapshots in this run",
    )
    group.addoption(
        "--leakcheck-snapshot-dir",
        metavar="DIR",
        default=None,
        help=f"one directory for every snapshot file (default: {DEFAULT_DIR} next to each "
        "test module)",
    )
    parser.addini(
        "leakcheck_snapshot_dir",
        default="",
        help="directory for every snapshot file, relative to the ini file",
    )
    parser.addini(
        "leakcheck_snapshots",
        type="bool",
        default=True,
        help="compare error-text snapshots (false: neither compare nor write them)",
    )
    parser.addini(
        "leakcheck_snapshot_libraries",
        type="linelist",
        default=[],
        help="extra distributions whose versions are recorded with each snapshot",
    )


def _default_secrets(config: pytest.Config) -> Callable[[], list[Secret]]:
    def provider() -> list[Secret]:
        from . import plugin

        state = config.stash.get(plugin._STATE, None)
        return list(state.secrets) if state is not None else []

    return provider


def install(
    config: pytest.Config, secrets_provider: Callable[[], list[Secret]] | None = None
) -> SnapshotSession:
    """The config's snapshot session, made and registered on first call (idempotent; a
    later ``secrets_provider`` replaces the default one)."""
    session = config.stash.get(_SESSION, None)
    if session is None:
        session = SnapshotSession(config, secrets_provider)
        config.stash[_SESSION] = session
        config.pluginmanager.register(session, "leakcheck-snapshots")
    elif secrets_provider is not None:
        session.secrets_provider = secrets_provider
    return session


def session_of(config: pytest.Config) -> SnapshotSession | None:
    return config.stash.get(_SESSION, None)


# Loaded as a plugin module (``pytest_plugins = ["leakcheck.snapshots"]``), these install it.
def pytest_addoption(parser: pytest.Parser) -> None:
    addoption(parser)


def pytest_configure(config: pytest.Config) -> None:
    install(config)


class SnapshotSession:
    """The session's snapshots: collects observations and selection, compares, fails
    drifted tests, and (on the controller) writes snapshot and pending files at the end."""

    def __init__(
        self,
        config: pytest.Config,
        secrets_provider: Callable[[], list[Secret]] | None = None,
    ) -> None:
        self.config = config
        self.secrets_provider = secrets_provider or _default_secrets(config)
        update = bool(config.getoption("--leakcheck-snapshot-update", False))
        create = bool(config.getoption("--leakcheck-snapshot-create", False))
        if update and create:
            raise pytest.UsageError(
                "--leakcheck-snapshot-update already creates new snapshots: "
                "give one of --leakcheck-snapshot-update and --leakcheck-snapshot-create"
            )
        self.enabled = not config.getoption("--no-leakcheck-snapshots", False)
        if self.enabled:
            try:
                self.enabled = bool(config.getini("leakcheck_snapshots"))
            except ValueError:  # options registered without our ini keys
                pass
        if not self.enabled and (update or create):
            raise pytest.UsageError(
                "snapshots are off (--no-leakcheck-snapshots or leakcheck_snapshots = false): "
                "--leakcheck-snapshot-update and --leakcheck-snapshot-create need them on"
            )
        self.mode = "update" if update else "create" if create else "check"
        self.rootdir = Path(config.rootpath)
        self.directory = self._directory()
        self.is_worker = hasattr(config, "workerinput")
        # module (rootdir-relative path, as in node ids) -> key -> ...
        self.observed: dict[str, dict[str, dict[str, Any]]] = {}
        self.collected: dict[str, dict[str, str]] = {}
        self.selected: dict[str, dict[str, str]] = {}
        self.modules: set[str] = set()
        self.broken: set[str] = set()
        self.passed: set[str] = set()
        self.problems: list[str] = []
        self.summary: dict[str, list[str]] = {}
        self._stored: dict[Path, dict[str, dict[str, Any]] | SnapshotError] = {}
        self._versions: dict[str, str] | None = None

    def _directory(self) -> Path | None:
        option = self.config.getoption("--leakcheck-snapshot-dir", None)
        if option:
            return Path(self.config.invocation_params.dir, option)
        ini = self.config.getini("leakcheck_snapshot_dir")
        if ini:
            inipath = self.config.inipath
            return Path(inipath.parent if inipath else self.rootdir, str(ini))
        return None

    # --- where things live ---------------------------------------------------------------

    def snapshot_path(self, module: str) -> Path:
        source = self.rootdir / module
        base = self.directory or source.parent / DEFAULT_DIR
        return base / f"{Path(module).stem}.json"

    def _stored_entries(self, path: Path) -> dict[str, dict[str, Any]]:
        if path not in self._stored:
            try:
                self._stored[path] = read_entries(path)
            except SnapshotError as exc:
                self._stored[path] = exc
        stored = self._stored[path]
        if isinstance(stored, SnapshotError):
            raise stored
        return stored

    def _rel(self, path: Path) -> str:
        try:
            return path.resolve().relative_to(self.rootdir.resolve()).as_posix()
        except ValueError:
            return str(path)

    @property
    def versions(self) -> dict[str, str]:
        if self._versions is None:
            from .libtrace import library_versions

            extra = self.config.getini("leakcheck_snapshot_libraries")
            self._versions = library_versions(extra=extra)
        return self._versions

    # --- collection: which keys exist, which were selected ----------------------------------

    def _note_items(self, items: Iterable[pytest.Item], selected: bool) -> None:
        for item in items:
            module = _module_of(item.nodeid)
            self.modules.add(module)
            key = item_key(item)
            if key is None:
                continue
            self.collected.setdefault(module, {})[key] = item.nodeid
            if selected:
                self.selected.setdefault(module, {})[key] = item.nodeid

    def pytest_deselected(self, items: Sequence[pytest.Item]) -> None:
        self._note_items(items, selected=False)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self._note_items(session.items, selected=True)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.broken.add(_module_of(report.nodeid))

    def _narrowed(self) -> set[str]:
        """Modules named with ``path::name`` on the command line: only part was collected."""
        out = set()
        for arg in self.config.args:
            if "::" not in str(arg):
                continue
            path = Path(self.config.invocation_params.dir, str(arg).split("::", 1)[0])
            try:
                out.add(path.resolve().relative_to(self.rootdir.resolve()).as_posix())
            except ValueError:
                out.add(str(arg).split("::", 1)[0])
        return out

    # --- one test --------------------------------------------------------------------------

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Iterator[None]:
        outcome = yield
        if call.when != "call":
            return
        report: pytest.TestReport = outcome.get_result()
        if not item.stash.get(_HANDLED, False):
            self.apply(item, report)
        if report.passed:
            self.passed.add(item.nodeid)

    def apply(self, item: pytest.Item, report: pytest.TestReport, check: Any = None) -> str | None:
        """Observe the entry ``item`` produced (``item.stash[SNAPSHOT_ENTRY]`` or the
        ``leakcheck`` fixture's ``.snapshot``) and fail ``report`` on drift; the failure
        text, or None. Call it from a ``makereport`` hook of your own to act before that
        hook is done; otherwise this session's own hook does, after every other one."""
        item.stash[_HANDLED] = True
        if not self.enabled:
            return None
        if check is None:
            check = getattr(item, "funcargs", {}).get("leakcheck")
        entry = item.stash.get(SNAPSHOT_ENTRY, None)
        if entry is None:
            entry = getattr(check, "snapshot", None)
        if entry is None or report.skipped:
            return None
        unreached = getattr(check, "unreached", None)
        if callable(unreached) and unreached():
            return None  # a stage never reached: the entry shows something else
        secrets = list(getattr(check, "secrets", ()) or ())
        scanner = getattr(check, "scanner", None) if secrets else None
        text = self.observe(item, entry, secrets=secrets, scanner=scanner)
        if text:
            original = report.longreprtext if report.failed else ""
            report.outcome = "failed"
            report.longrepr = "\n\n".join(p for p in (original, text) if p)
            if hasattr(report, "wasxfail"):
                del report.wasxfail
        return text

    def observe(
        self,
        item: pytest.Item,
        entry: Mapping[str, Any],
        secrets: Iterable[Secret] = (),
        scanner: Any = None,
    ) -> str | None:
        """Record ``entry`` (already masked) for ``item``; the failure text for the test
        (drift, missing snapshot, an entry that holds a secret), or None. ``secrets`` are the
        test's own; ``scanner`` may be a ready scanner for them. (The session's secrets are
        checked once, at the end, before a snapshot or pending file is written.)"""
        module = _module_of(item.nodeid)
        key = item_key(item)
        if key is None and _case_of(item) is not None:
            return None  # a matrix case of another placement: only baselines are kept
        key = key or str(entry.get("key") or "")
        if not key:
            return "leakcheck snapshot: the entry has no key and the test is no matrix case"
        try:
            document = json.loads(json.dumps(dict(entry), ensure_ascii=False))
        except (TypeError, ValueError):
            return f"leakcheck snapshot {key}: the entry is not JSON data"
        document["key"] = key
        versions = {**self.versions, **(entry.get("versions") or {})}
        document["versions"] = dict(sorted(versions.items()))
        refusal = self._refusal(document, list(secrets), scanner)
        if refusal:
            self.problems.append(f"{item.nodeid}: {refusal}")
            return f"leakcheck snapshot {key}: {refusal}; the entry was not recorded"
        mine = self.observed.setdefault(module, {})
        other = mine.get(key)
        if other is not None and other["nodeid"] != item.nodeid:
            message = (
                f"leakcheck snapshot {key}: produced by two tests of {module} "
                f"({other['nodeid']} and {item.nodeid}); give their operations distinct names"
            )
            self.problems.append(message)
            return message
        mine[key] = {"nodeid": item.nodeid, "entry": document}
        path = self.snapshot_path(module)
        try:
            stored = self._stored_entries(path).get(key)
        except SnapshotError as exc:
            return f"leakcheck snapshot {key}: {exc}"
        where = self._rel(path)
        if stored is None:
            if self.mode != "check":
                return None
            return (
                f"no snapshot for {key}; run with --leakcheck-snapshot-create "
                f"(snapshot file {where})"
            )
        if self.mode == "update" or not differing_fields(stored, document):
            return None
        return render_drift(key, stored, document, where)

    def _refusal(self, document: Any, secrets: list[Secret], scanner: Any = None) -> str:
        """Why ``document`` must not be written (secret ids and forms, never values)."""
        text = _scan_text(document)
        hits: list[str] = []
        if secrets:
            if scanner is None:
                from .detect import Scanner

                scanner = Scanner(secrets, decode=True)
            hits = _secret_hits(text, scanner)
        shapes = canary_lookalikes(text)
        if not hits and not shapes:
            return ""
        found = hits + [f"text shaped like a {kind} canary" for kind in shapes]
        return "holds a form of a registered secret: " + ", ".join(found)

    # --- xdist -------------------------------------------------------------------------------

    def _state(self) -> dict[str, Any]:
        return {
            "observed": self.observed,
            "collected": self.collected,
            "selected": self.selected,
            "modules": sorted(self.modules),
            "broken": sorted(self.broken),
            "passed": sorted(self.passed),
            "problems": self.problems,
        }

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", {}).get(_WORKER_KEY)
        if not output:
            return
        data = json.loads(output)
        for module, entries in data["observed"].items():
            mine = self.observed.setdefault(module, {})
            for key, observation in entries.items():
                other = mine.get(key)
                if other is not None and other["nodeid"] != observation["nodeid"]:
                    self.problems.append(
                        f"snapshot {key}: produced by two tests of {module} "
                        f"({other['nodeid']} and {observation['nodeid']})"
                    )
                mine[key] = observation
        for name in ("collected", "selected"):
            merged = getattr(self, name)
            for module, keys in data[name].items():
                merged.setdefault(module, {}).update(keys)
        self.modules.update(data["modules"])
        self.broken.update(data["broken"])
        self.passed.update(data["passed"])
        self.problems.extend(data["problems"])

    # --- the end: compare, write, report ----------------------------------------------------

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.enabled:
            return
        if self.is_worker:
            self.config.workeroutput[_WORKER_KEY] = json.dumps(self._state())  # type: ignore[attr-defined]
            return
        write = not self.config.getoption("collectonly", False)
        try:
            self.finish(write=write)
        except SnapshotError as exc:
            self.problems.append(str(exc))
        if self.problems and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _session_scanner(self) -> Any:
        secrets = list(self.secrets_provider() or [])
        if not secrets:
            return None
        from .detect import Scanner

        return Scanner(secrets, decode=True)

    def finish(self, write: bool = True) -> None:
        """Compare every observation with its snapshot file, then write snapshot files (by
        mode) and pending differences; fills ``summary`` and ``problems``."""
        summary: dict[str, list[str]] = {
            k: [] for k in ("matched", "drifted", "new", "written", "deleted", "unused")
        }
        self.summary = summary
        scanner: Any = False  # built on first write
        narrowed = self._narrowed()
        files: dict[Path, str] = {}
        for module in sorted(set(self.observed) | self.modules):
            path = self.snapshot_path(module)
            owner = files.setdefault(path, module)
            if owner != module:
                self.problems.append(
                    f"modules {owner} and {module} share the snapshot file {self._rel(path)}; "
                    "rename one or drop --leakcheck-snapshot-dir"
                )
                continue
            observed = self.observed.get(module, {})
            if module in self.broken or (not observed and not path.exists()):
                continue
            try:
                stored = self._stored_entries(path)
            except SnapshotError as exc:
                self.problems.append(str(exc))
                continue
            entries = dict(stored)
            pending = self._read_pending(module)
            for key, observation in sorted(observed.items()):
                new, old = observation["entry"], stored.get(key)
                label = f"{module}: {key}"
                if old is None:
                    if self.mode == "check":
                        pending[key] = {"old": None, "new": new}
                        summary["new"].append(label)
                        continue
                    entries[key] = new
                    summary["written"].append(label)
                elif not differing_fields(old, new):
                    summary["matched"].append(label)
                    if self.mode == "update" and old != new:
                        entries[key] = new  # same texts, newer versions recorded
                elif self.mode == "update":
                    entries[key] = new
                    summary["written"].append(label)
                else:
                    pending[key] = {"old": old, "new": new}
                    summary["drifted"].append(f"{label}: {_drift_line(old, new)}")
                    continue
                pending.pop(key, None)
            for key in self._unused(module, stored, observed, narrowed):
                summary["unused"].append(f"{module}: {key}")
                if self.mode == "update":
                    entries.pop(key)
                    pending.pop(key, None)
                    summary["deleted"].append(f"{module}: {key}")
            if not write:
                continue
            if (entries != stored or pending) and scanner is False:
                scanner = self._session_scanner()
            if entries != stored:
                self._write_snapshots(path, entries, scanner)
            self._write_pending(module, path, pending, scanner)

    def _unused(
        self,
        module: str,
        stored: Mapping[str, Any],
        observed: Mapping[str, Any],
        narrowed: set[str],
    ) -> list[str]:
        collected = self.collected.get(module, {})
        selected = self.selected.get(module, {})
        whole = module in self.modules and module not in narrowed
        out = []
        for key in sorted(stored):
            if key in observed:
                continue
            if key in selected:
                # ran and passed without producing an entry: the case no longer makes one
                if selected[key] in self.passed:
                    out.append(key)
            elif key not in collected and whole:
                out.append(key)  # no test maps to it any more
        return out

    def _write_snapshots(self, path: Path, entries: dict[str, Any], scanner: Any) -> None:
        text = render_snapshot_file(entries)
        hits = _secret_hits(text + "\n".join(_strings(entries)), scanner)
        shapes = canary_lookalikes(text)
        if hits or shapes:
            found = hits + [f"text shaped like a {kind} canary" for kind in shapes]
            self.problems.append(
                f"refused to write {self._rel(path)}: it would hold a form of a registered "
                f"secret ({', '.join(found)}); nothing was written to it"
            )
            return
        if not entries and path.exists():
            with contextlib.suppress(OSError):
                path.unlink()
            return
        _write_atomic(path, text)
        for extra, content in _allowlists(path.parent, self.rootdir).items():
            if not extra.exists():
                _write_atomic(extra, content)
        self._stored[path] = entries

    def _pending_path(self, module: str) -> Path:
        directory = self.rootdir / PENDING_DIR
        path = directory / f"{Path(module).stem}.json"
        try:
            document = _read_json(path, "pending file")
        except SnapshotError:
            document = None
        if document is not None and document.get("module") not in (None, module):
            digest = hashlib.sha256(module.encode()).hexdigest()[:8]
            path = directory / f"{Path(module).stem}-{digest}.json"
        return path

    def _read_pending(self, module: str) -> dict[str, Any]:
        document = _read_json(self._pending_path(module), "pending file")
        return dict(document["entries"]) if document else {}

    def _write_pending(
        self, module: str, snapshot: Path, pending: dict[str, Any], scanner: Any = None
    ) -> None:
        path = self._pending_path(module)
        if not pending:
            if path.exists():
                with contextlib.suppress(OSError):
                    path.unlink()
            return
        document = {
            "format": FORMAT,
            "module": module,
            "snapshot_file": self._rel(snapshot),
            "entries": pending,
        }
        text = _dump(document)
        # the session's secrets too, as for snapshot files: a drifted entry can hold
        # another test's secret, which that entry's own check does not know
        hits = _secret_hits(text + "\n".join(_strings(pending)), scanner)
        shapes = canary_lookalikes(text)
        if hits or shapes:
            found = hits + [f"text shaped like a {kind} canary" for kind in shapes]
            self.problems.append(
                f"refused to write {self._rel(path)}: it would hold a form of a registered "
                f"secret ({', '.join(found)})"
            )
            return
        _write_atomic(path, text)

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.is_worker:
            return
        s = self.summary
        if not any(s.values()) and not self.problems:
            return
        terminalreporter.section("leakcheck snapshots")
        counts = ", ".join(f"{len(v)} {k}" for k, v in s.items() if v)
        terminalreporter.write_line(f"mode {self.mode}: {counts or 'nothing observed'}")
        for title in ("drifted", "new", "unused", "deleted"):
            for line in _by_stage(s.get(title, [])):
                terminalreporter.write_line(f"  {title}: {line}")
        if s.get("new") and self.mode == "check":
            terminalreporter.write_line(
                "new cases have no snapshot: run with --leakcheck-snapshot-create"
            )
        if s.get("unused") and self.mode != "update":
            terminalreporter.write_line(
                "unused snapshots are deleted by --leakcheck-snapshot-update"
            )
        if s.get("drifted") or (s.get("new") and self.mode == "check"):
            terminalreporter.write_line(
                f"pending differences in {PENDING_DIR}/: review them with `leakcheck review`"
            )
        for problem in self.problems:
            terminalreporter.write_line(f"ERROR {problem}")


def _drift_line(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    changes = version_changes(old.get("versions"), new.get("versions"))
    fields = ", ".join(differing_fields(old, new))
    deps = "; ".join(f"{n} {a} -> {b}" for n, a, b in changes) or "no dependency changed version"
    return f"{fields} changed ({deps})"


def _by_stage(lines: list[str]) -> list[str]:
    """Summary lines in stage order (the matrix's), then by operation."""
    from .stages import STAGES

    order = {name: n for n, name in enumerate(STAGES)}

    def sort_key(line: str) -> tuple[int, str]:
        key = line.split(": ", 2)[1] if line.count(": ") >= 1 else line
        stage = key.split("/", 1)[-1]
        return order.get(stage, len(order)), line

    return sorted(lines, key=sort_key)


# --- leakcheck review -----------------------------------------------------------------------


def review(
    root: Path,
    *,
    decision: str | None = None,
    interactive: bool = False,
    out: TextIO | None = None,
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
        from .forms import MASKING_FORMS

        # masking windows too: a piece of a secret cut by the side-by-side rows is hidden
        scanner = Scanner(list(secrets), decode=True, forms=MASKING_FORMS)
        detector = Scanner(list(secrets), decode=True)  # what it would write: real hits

        def guard(text: str) -> str:
            return _withhold_lookalikes(scanner.mask(text))

    def say(text: str = "") -> None:
        out.write(guard(text) + "\n")

    directory = root / PENDING_DIR
    files = sorted(directory.glob("*.json")) if directory.is_dir() else []
    documents = [(path, _read_json(path, "pending file")) for path in files]
    total = sum(len(doc["entries"]) for _, doc in documents if doc)
    if not total:
        say("leakcheck review: nothing pending")
        return 0
    accepted = rejected = shown = 0
    stop = False
    for path, document in documents:
        if not document or stop:
            continue
        snapshot = root / str(document.get("snapshot_file", ""))
        entries: dict[str, Any] = document["entries"]
        for key in sorted(entries):
            old, new = entries[key].get("old"), entries[key].get("new") or {}
            shown += 1
            say(f"=== [{shown}/{total}] {document.get('module', path.stem)}: {key}")
            say(_versions_line(old, new) if old else "new case: no snapshot yet")
            for name in FIELDS:
                if old is not None and old.get(name) == new.get(name):
                    continue
                say(f"--- {name}")
                # guarded whole, before wrapping can cut a secret across two rows
                before, after = guard(_field_text(old, name)), guard(_field_text(new, name))
                for row in side_by_side(before, after, width):
                    say(row)
            unsafe = [
                f"text shaped like a {kind} canary" for kind in canary_lookalikes(_scan_text(new))
            ]
            if secrets and _secret_hits(_scan_text(new), detector):
                unsafe.append("a secret of --secrets-file")
            choice = decision
            if choice is None and interactive and not stop:
                choice = _ask(ask)
            if choice == "quit":
                stop = True
                break
            if choice == "accept":
                if unsafe:
                    say(f"refusing to accept {key}: it holds {', '.join(unsafe)}")
                    continue
                current = read_entries(snapshot)
                current[key] = new
                _write_atomic(snapshot, render_snapshot_file(current))
                for extra, content in _allowlists(snapshot.parent, root).items():
                    if not extra.exists():
                        _write_atomic(extra, content)
                del entries[key]
                accepted += 1
                say(f"accepted: {key} written to {document.get('snapshot_file')}")
            elif choice == "reject":
                del entries[key]
                rejected += 1
                say(f"rejected: {key} (the snapshot is unchanged; the next run fails again)")
        if entries:
            _write_atomic(path, _dump(document))
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
