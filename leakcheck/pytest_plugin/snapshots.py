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
before a file is written (under xdist: each worker's entries with every secret it knows, at
its end, and the controller's files with every worker's canaries, drawn again from the seed
and the records), and for canary-shaped text (the generated kinds' fixed prefixes) as a
backstop where no secret is known (``leakcheck review``). A hit
refuses the write and fails the session with a message that names secret ids, never values.
Next to the snapshot files go a gitleaks config and a trufflehog exclude list (written once,
yours to edit) so that repository scanners do not flag the masked labels.

This module is the pytest side (options, the session that compares, fails drifted cases,
merges xdist workers and writes at the end). What needs no pytest (entries and their
normalization, the files, the secret guard, the diff, ``leakcheck review``) is in
``leakcheck.snapshot_store``, which ``leakcheck review`` imports alone.

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
import json
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # pragma: no cover
    import pluggy

    from ..harness import LeakCheck

from ..canaries import Secret
from ..findings import without_random_tokens
from ..snapshot_store import (
    DEFAULT_DIR,
    FIELDS,
    FORMAT,
    PENDING_DIR,
    SnapshotError,
    allowlist_files,
    differing_fields,
    drift_line,
    dump,
    normalize,
    pending_path,
    read_document,
    read_entries,
    refusal,
    render_drift,
    render_snapshot_file,
    review,
    side_by_side,
    snapshot_entry,
    write_atomic,
)
from .reports import fail_report

__all__ = [
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
    "render_snapshot_file",
    "review",
    "side_by_side",
    "snapshot_entry",
]


def __getattr__(name: str) -> Any:
    # still importable from here (it was re-exported), imported on first use: a session
    # without a stage matrix never loads the placements (nor the faults around them)
    if name == "BASELINE_PLACEMENTS":
        from ..placements import BASELINE_PLACEMENTS

        return BASELINE_PLACEMENTS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: the parameter name ``stage_matrix`` gives its ``CaseSpec``
CASE_PARAM = "leakcheck_case"
#: a producer may store an entry here instead of on the ``leakcheck`` fixture's ``.snapshot``
SNAPSHOT_ENTRY = pytest.StashKey[dict[str, Any]]()

_SESSION = pytest.StashKey["SnapshotSession"]()
_HANDLED = pytest.StashKey[bool]()
_WORKER_KEY = "leakcheck_snapshots"


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
    from ..placements import BASELINE_PLACEMENTS  # (a matrix case: the matrix has it)

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


def install(
    config: pytest.Config, secrets_provider: Callable[[], list[Secret]] | None = None
) -> SnapshotSession:
    """The config's snapshot session, made and registered on first call (idempotent; a
    later ``secrets_provider`` replaces the first: the leakcheck plugin hands over every
    secret of the session, and without it only canary shapes are guarded against)."""
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
        self.secrets_provider = secrets_provider or (lambda: [])
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
            except (ValueError, pytest.UsageError) as exc:
                if "truth value" in str(exc):  # (pytest's message quotes the value)
                    raise pytest.UsageError(
                        "leakcheck ini: leakcheck_snapshots: not a truth value (write true "
                        "or false)"
                    ) from None
                # (options registered without our ini keys)
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
        #: under xdist, by module: why a worker found an entry it observed holding a secret
        #: it knows (another test's there: the controller knows only the canaries)
        self.tainted: dict[str, list[str]] = {}
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
            from ..libtrace import library_versions

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
    ) -> Generator[None, pluggy.Result[pytest.TestReport], None]:
        outcome = yield
        if call.when != "call":
            return
        report: pytest.TestReport = outcome.get_result()
        if not item.stash.get(_HANDLED, False):
            self.apply(item, report)
        if report.passed:
            self.passed.add(item.nodeid)

    def apply(
        self, item: pytest.Item, report: pytest.TestReport, check: LeakCheck | None = None
    ) -> str | None:
        """Observe the entry ``item`` produced (``item.stash[SNAPSHOT_ENTRY]`` or the
        ``leakcheck`` fixture's ``.snapshot``) and fail ``report`` on drift; the failure
        text, or None. Call it from a ``makereport`` hook of your own to act before that
        hook is done; otherwise this session's own hook does, after every other one."""
        item.stash[_HANDLED] = True
        if not self.enabled:
            return None
        if check is None:
            fixture = getattr(item, "funcargs", {}).get("leakcheck")
            check = None
            if fixture is not None:
                from ..harness import LeakCheck

                check = fixture if isinstance(fixture, LeakCheck) else None
        entry = item.stash.get(SNAPSHOT_ENTRY, None)
        if entry is None and check is not None:
            entry = check.snapshot
        if entry is None or report.skipped:
            return None
        if check is not None and check.unreached():
            return None  # a stage never reached: the entry shows something else
        secrets = check.secrets if check is not None else []
        scanner = check.scanner if check is not None and secrets else None
        text = self.observe(item, entry, secrets=secrets, scanner=scanner)
        if text:
            fail_report(report, tail=text)
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
        refused = self._refusal(document, list(secrets), scanner)
        if refused:
            self.problems.append(f"{item.nodeid}: {refused}")
            return f"leakcheck snapshot {key}: {refused}; the entry was not recorded"
        mine = self.observed.setdefault(module, {})
        other = mine.get(key)
        if other is not None and other["nodeid"] != item.nodeid:
            message = (
                f"leakcheck snapshot {key}: produced by two tests of {module} "
                f"({other['nodeid']} and {item.nodeid}); give their operations distinct names, or "
                "put each matrix in a module of its own (an MCP target's operations are its "
                "tools' names)"
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
        if secrets and scanner is None:
            from ..detect import Scanner

            scanner = Scanner(secrets, decode=True)
        found = refusal(dump(document), document, scanner if secrets else None)
        return "holds a form of a registered secret: " + ", ".join(found) if found else ""

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
            "tainted": self.tainted,
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
        for module, why in data.get("tainted", {}).items():
            self.tainted.setdefault(module, []).extend(why)

    # --- the end: compare, write, report ----------------------------------------------------

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.enabled:
            return
        if self.is_worker:
            self._taint_observed()
            self.config.workeroutput[_WORKER_KEY] = json.dumps(self._state())  # type: ignore[attr-defined]  # set by xdist on workers
            return
        write = not self.config.getoption("collectonly", False)
        try:
            self.finish(write=write)
        except SnapshotError as exc:
            self.problems.append(str(exc))
        if self.problems and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _taint_observed(self) -> None:
        """(An xdist worker, at its end.) Each entry observed here scanned for every
        secret this worker knows, as a serial session scans a file before writing it: a
        secret a test registered itself is known to its worker alone, and the controller
        would write another test's entry holding it."""
        if not any(self.observed.values()):
            return
        scanner = self._session_scanner()
        if scanner is None:
            return
        for module, entries in self.observed.items():
            for key, observation in entries.items():
                found = refusal(dump(observation["entry"]), observation["entry"], scanner)
                if found:
                    self.tainted.setdefault(module, []).append(f"{key} ({', '.join(found)})")

    def _session_scanner(self) -> Any:
        secrets = list(self.secrets_provider() or [])
        if not secrets:
            return None
        from ..detect import Scanner

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
                    summary["drifted"].append(f"{label}: {drift_line(old, new)}")
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
            if module in self.tainted:
                self.problems.append(
                    f"refused to write {self._rel(path)} and its pending differences: entries "
                    f"hold a form of a registered secret: {'; '.join(self.tainted[module])}"
                )
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
        if self._refused(path, text, entries, scanner, "; nothing was written to it"):
            return
        if not entries and path.exists():
            with contextlib.suppress(OSError):
                path.unlink()
            return
        write_atomic(path, text)
        for extra, content in allowlist_files(path.parent, self.rootdir).items():
            if not extra.exists():
                write_atomic(extra, content)
        self._stored[path] = entries

    def _pending_path(self, module: str) -> Path:
        return pending_path(self.rootdir, module)

    def _read_pending(self, module: str) -> dict[str, Any]:
        document = read_document(self._pending_path(module), "pending file")
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
        text = dump(document)
        # the session's secrets too, as for snapshot files: a drifted entry can hold
        # another test's secret, which that entry's own check does not know
        if self._refused(path, text, pending, scanner):
            return
        write_atomic(path, text)

    def _refused(self, path: Path, text: str, value: Any, scanner: Any, after: str = "") -> bool:
        """Whether ``text`` (``value`` as it would be written to ``path``) must not be
        written; if so, the session's problems say why (ids and forms, never a value)."""
        found = refusal(text, value, scanner)
        if found:
            self.problems.append(
                f"refused to write {self._rel(path)}: it would hold a form of a registered "
                f"secret ({', '.join(found)}){after}"
            )
        return bool(found)

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
                # (a key of a snapshot edited by hand may look like a key: opaque)
                terminalreporter.write_line(f"  {title}: {without_random_tokens(line)}")
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


def _by_stage(lines: list[str]) -> list[str]:
    """Summary lines in stage order (the matrix's), then by operation."""
    from ..stages import STAGES

    order = {name: n for n, name in enumerate(STAGES)}

    def sort_key(line: str) -> tuple[int, str]:
        key = line.split(": ", 2)[1] if line.count(": ") >= 1 else line
        stage = key.split("/", 1)[-1]
        return order.get(stage, len(order)), line

    return sorted(lines, key=sort_key)
