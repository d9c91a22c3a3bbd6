"""What the PATH arguments of ``leakcheck scan`` name: the files to read, each once, the
directories walked, what is deliberately not read, and the bytes to scan."""

from __future__ import annotations

import os
import stat

from .._lazy import lazy_compile
from .console import credential_argument, display, named

TYPE_CHECKING = False  # not typing's: its import was a twentieth of a scan's start-up
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["Inputs", "total_size"]


class Inputs:
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
            if None not in self.targets:  # (standard input can be read once)
                self.targets.append(None)
            return
        try:
            status = os.stat(arg)
        except FileNotFoundError:
            # (a credential given as a PATH is described, not quoted; so is the value of an
            # option this command does not know, "--tokn=<a passphrase>", taken for a PATH)
            if arg.startswith("--") and "=" in arg:
                name, _, value = arg.partition("=")
                self.errors.append(
                    f"no such file or directory, nor an option of this command: {display(name)}="
                    f" (a value of {len(value)} characters, not shown)"
                )
                return
            shown = named(arg) if credential_argument(arg) else display(arg)
            self.errors.append(f"no such file or directory: {shown}")
            return
        except OSError as exc:
            self.errors.append(f"cannot read {display(arg)}: {exc.strerror}")
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
                self.errors.append(f"cannot list {display(path)}: {exc.strerror}")
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
                        self.not_read.append((display(entry.path), self.LOOP))
                    elif entry_key not in self._dirs:  # else: read under another name
                        self._dirs.add(entry_key)
                        below.append((entry.path, (*ancestors, entry_key)))
                elif stat.S_ISREG(entry_status.st_mode):
                    self._file(entry.path, entry_status)
                else:
                    self.not_read.append((display(entry.path), self.FIFO_ETC))
            stack.extend(reversed(below))


def total_size(targets: list[str | None]) -> int | None:
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


#: How a leakcheck report (pytest's ``--leakcheck-report``, ``leakcheck mcp --format json``)
#: begins.
REPORT_HEAD = lazy_compile(
    rb'\A(?:\xef\xbb\xbf)?\s*\{\s*(?:"tool"\s*:\s*"leakcheck"|"leakcheck_mcp"\s*:)'
)


def file_key(path: str) -> tuple[int, int] | None:
    try:
        status = os.stat(path)
    except OSError:
        return None  # reading it says why
    return (status.st_dev, status.st_ino) if stat.S_ISREG(status.st_mode) else None


def looks_like_report(path: str, reports: Sequence[str]) -> bool:
    """Whether the regular file ``path`` begins as a leakcheck report does and is none of
    ``reports``: named as a PATH after ``--canaries-from``, it is a shell glob's second
    match (``--canaries-from build/leakcheck-*.json`` gives the option the first file
    only), whose canaries would silently not be searched for."""
    key = file_key(path)
    if key is None or key in {file_key(r) for r in reports}:
        return False
    try:
        with open(path, "rb") as stream:
            head = stream.read(256)
    except OSError:
        return False  # reading it as a PATH says why
    return REPORT_HEAD.match(head) is not None


def distinct_files(paths: Sequence[str]) -> list[str]:
    """``paths`` with each regular file once, under the first name it was given by (a
    report or a secrets file named twice, or through a link, would count every canary,
    request id or secret twice)."""
    seen: set[tuple[int, int]] = set()
    kept = []
    for path in paths:
        key = file_key(path)
        if key is not None:
            if key in seen:
                continue
            seen.add(key)
        kept.append(path)
    return kept
