"""Sink plugin: the command lines and environments of processes spawned during a test.

A secret on a command line leaks without a single log line: ``/proc/PID/cmdline`` is
readable by every local user, so ``ps`` shows ``mysql -pS3cret`` or ``sshpass -p S3cret``
to anyone on the host for as long as the child runs (and process accounting, audit logs,
``top`` and crash reports keep it). A secret in a child's environment is readable through
``/proc/PID/environ`` by the same user and root only, but it is inherited by every
descendant of that child and dumped wherever an environment is dumped.

Two sinks, both operator-visible (``SinkClass.OPERATOR``: direct secrets are forbidden,
sensitive context such as a host or user name on ``ssh user@host`` is allowed, as in any
operator sink), each opted out on its own (``skip_sinks``):

* ``process argv``: each argument of every spawned process, and the command line as
  ``ps`` joins it (a fallback: a secret split across arguments by ``shlex.split``);
* ``process environment``: the entries of a child's environment that differ from the
  parent's ``os.environ`` at that moment, when the environment is passed explicitly
  (``env=``, ``os.execve``, ``os.posix_spawn``). An inherited environment is the
  gateway's own configuration and is not judged here.

How: CPython audit hooks (``subprocess.Popen``, ``os.exec``, ``os.posix_spawn``,
``os.system``, ``os.spawn``), whatever started the process (``subprocess.run``,
``asyncio.create_subprocess_exec``, ``os.popen``, ``pty.spawn``, ``pexpect``). One hook is
installed per process, once (audit hooks cannot be removed); it returns at once when no
sink is running. ``subprocess``'s own ``os.posix_spawn`` call is the same process as its
``subprocess.Popen`` event and is counted once. A process that ``exec``\\ s in a child
forked from the test process (``os.fork`` then ``os.execv``, which is how ``os.spawn*``,
``pty.spawn`` and ``pexpect`` start programs on POSIX) raises its event in that child: at
the ``os.fork`` event the sink opens an unlinked temporary file, the child appends the
spawn there, and the sink reads it when it stops.

``provisioning()``: spawns made inside it are the harness starting the gateway under test
(an MCP server over stdio with ``env={"API_TOKEN": ...}``): their environment is the
gateway's configuration, handed to it as an operator would, and is not judged; their
command line still is (a credential on the gateway's own command line is visible to every
local user in production too).

Paths: ``#2 mysql argv[1]``, ``#2 mysql cmdline``, ``#3 psql env.PGPASSWORD``,
``#4 os.system command``; ``#N`` counts the processes spawned during the test, in order.

Not seen: processes started by a child that was not forked from the test process (a
subprocess's own children: they run another interpreter, or none), processes started by C
code that calls ``fork``/``exec`` itself, and a forked child that closed the sink's file.
"""

from __future__ import annotations

import contextlib
import contextvars
import marshal
import os
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from leakcheck.capture import Captured
from leakcheck.findings import cut_whole
from leakcheck.policy import SinkClass
from leakcheck.serialize import safe_str

__all__ = ["ProcessArgvSink", "ProcessEnvironmentSink", "SINKS", "provisioning"]

#: The audit events that start a program, and those that fork the interpreter.
_SPAWNS = frozenset({"subprocess.Popen", "os.exec", "os.posix_spawn", "os.system", "os.spawn"})
_FORKS = frozenset({"os.fork", "os.forkpty"})

ARGV_NOTE = "on the command line: readable by every local user (ps, /proc/PID/cmdline)"
ENV_NOTE = (
    "in the child's environment: readable by the same user and root (/proc/PID/environ, "
    "ps e) and inherited by every process it starts"
)

_PROVISIONING: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "leakcheck_process_provisioning", default=False
)

# the code object of subprocess's own os.posix_spawn call: its event repeats the Popen one
_SUBPROCESS_SPAWN = getattr(getattr(subprocess.Popen, "_posix_spawn", None), "__code__", None)

_lock = threading.Lock()
_running: tuple[_Recorder, ...] = ()  # replaced whole (read by the hook without the lock)
_hook_installed = False


@contextlib.contextmanager
def provisioning() -> Iterator[None]:
    """Spawns made inside (in this thread or task) are the harness starting the gateway
    under test: their environment is not judged, their command line is."""
    token = _PROVISIONING.set(True)
    try:
        yield
    finally:
        _PROVISIONING.reset(token)


@dataclass(frozen=True)
class _Spawn:
    """One spawned process: how, its program's name, argv, and the environment entries
    that differ from the parent's (``None``: inherited, or provisioned by the harness)."""

    event: str
    program: str
    argv: tuple[str | bytes, ...]
    env: tuple[tuple[str | bytes, str | bytes], ...] | None
    #: when (``time.monotonic_ns``, one clock for a process and the children it forks)
    at: int = 0

    def record(self) -> bytes:
        return marshal.dumps((self.event, self.program, list(self.argv), self.env, self.at))

    @classmethod
    def from_record(cls, data: bytes) -> _Spawn:
        event, program, argv, env, at = marshal.loads(data)
        pairs = None if env is None else tuple((k, v) for k, v in env)
        return cls(safe_str(event), safe_str(program), tuple(argv), pairs, int(at))


def _text(value: Any) -> str | bytes:
    """An argument as the child receives it: ``str`` or ``bytes`` (a path-like object as
    its path)."""
    if type(value) is str or type(value) is bytes:
        return value
    try:
        value = os.fspath(value)
    except TypeError:
        return safe_str(value)
    return value if type(value) in (str, bytes) else safe_str(value)


def _program(path: Any) -> str:
    try:
        name = os.path.basename(os.fsdecode(_text(path)))
    except Exception:  # noqa: BLE001 - an argument subprocess will refuse anyway
        name = ""
    return cut_whole(name, 60) or "?"


def _environment_changes(env: Any) -> tuple[tuple[str | bytes, str | bytes], ...] | None:
    """The entries of an explicitly passed environment that the parent's ``os.environ``
    does not hold with the same value."""
    if env is None or env is os.environ or not isinstance(env, Mapping):
        return None
    data = getattr(os.environ, "_data", None)  # the encoded environment os.environ wraps
    encode_key = getattr(os.environ, "encodekey", None)
    encode_value = getattr(os.environ, "encodevalue", None)
    changed = []
    for key, value in list(env.items()):
        key, value = _text(key), _text(value)
        try:
            if type(data) is dict and callable(encode_key) and callable(encode_value):
                known = data.get(key if type(key) is bytes else encode_key(key))
                same = known is not None and known == (
                    value if type(value) is bytes else encode_value(value)
                )
            else:
                same = os.environ.get(os.fsdecode(key)) == os.fsdecode(value)
        except Exception:  # noqa: BLE001 - a key os.environ cannot hold: not the parent's
            same = False
        if not same:
            changed.append((key, value))
    return tuple(changed)


def _called_by_subprocess() -> bool:
    """Whether the running ``os.posix_spawn`` was called by ``subprocess.Popen`` (frames:
    this function, ``_spawn_of``, ``_hook``, then the caller of ``os.posix_spawn``)."""
    try:
        return sys._getframe(3).f_code is _SUBPROCESS_SPAWN
    except ValueError:  # called from C with no Python frame above
        return False


def _spawn_of(event: str, args: tuple[Any, ...]) -> _Spawn | None:
    """The process an audit event starts, or None (subprocess's own ``os.posix_spawn``)."""
    if event == "subprocess.Popen":
        executable, argv, _cwd, env = args
        program = executable if executable is not None else (argv[0] if argv else "")
    elif event == "os.system":
        command = _text(args[0])
        return _Spawn(event, "os.system", (command,), None, time.monotonic_ns())
    elif event == "os.spawn":  # (mode, path, args, env): Windows
        _mode, program, argv, env = args
    else:  # os.exec, os.posix_spawn: (path, args, env)
        program, argv, env = args
        if event == "os.posix_spawn" and _called_by_subprocess():
            return None  # subprocess.Popen's own posix_spawn: already seen as its event
    if type(argv) in (str, bytes) or not hasattr(argv, "__iter__"):
        argv = [argv]
    texts = tuple(_text(a) for a in list(argv))
    changes = None if _PROVISIONING.get() else _environment_changes(env)
    return _Spawn(event, _program(program), texts, changes, time.monotonic_ns())


def _hook(event: str, args: tuple[Any, ...]) -> None:
    running = _running
    if not running:
        return
    if event in _SPAWNS:
        try:
            spawn = _spawn_of(event, args)
        except Exception:  # noqa: BLE001 - an audit hook that raises aborts the spawn
            return
        if spawn is None:
            return
        pid = os.getpid()
        for recorder in running:
            recorder.see(spawn, pid)
    elif event in _FORKS:
        pid = os.getpid()
        for recorder in running:
            recorder.before_fork(pid)


class _Spill:
    """An unlinked temporary file that children forked from the test process append their
    spawns to (length-prefixed ``marshal`` records, one ``write`` each, ``O_APPEND``)."""

    def __init__(self) -> None:
        fd, path = tempfile.mkstemp(prefix="leakcheck-spawns-")
        try:
            os.unlink(path)
            import fcntl  # POSIX, as is os.fork

            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)
            stat = os.fstat(fd)
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        self.identity = (stat.st_dev, stat.st_ino)

    def write(self, spawn: _Spawn) -> None:
        """In a forked child: append ``spawn``, if the file is still the one opened."""
        stat = os.fstat(self.fd)
        if (stat.st_dev, stat.st_ino) != self.identity:
            return  # the child closed it and the number now names another file
        data = spawn.record()
        os.write(self.fd, struct.pack("<I", len(data)) + data)

    def read(self) -> list[_Spawn]:
        size = os.fstat(self.fd).st_size
        data = os.pread(self.fd, size, 0) if size else b""
        spawns, at = [], 0
        while at + 4 <= len(data):
            (length,) = struct.unpack_from("<I", data, at)
            at += 4
            if at + length > len(data):
                break  # a record cut short: a child killed while writing it
            with contextlib.suppress(Exception):
                spawns.append(_Spawn.from_record(data[at : at + length]))
            at += length
        return spawns

    def close(self) -> None:
        os.close(self.fd)


class _Recorder:
    """What one running sink records: the spawns seen in this process, and the spill its
    forked children write to."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.spawns: list[_Spawn] = []
        self.spill: _Spill | None = None
        self.error = ""

    def see(self, spawn: _Spawn, pid: int) -> None:
        if pid == self.pid:
            self.spawns.append(spawn)
        elif self.spill is not None:
            with contextlib.suppress(Exception):  # never break the child's exec
                self.spill.write(spawn)

    def before_fork(self, pid: int) -> None:
        if pid != self.pid or self.spill is not None:
            return
        try:
            self.spill = _Spill()
        except Exception as exc:  # noqa: BLE001 - no temporary file: say what is not seen
            self.error = f"could not open a file for forked children ({type(exc).__name__})"

    def so_far(self) -> list[_Spawn]:
        """The spawns seen so far, a forked child's among them in their place: what a
        verdict given while the sink runs reads (the pytest plugin's, at the end of the
        call: a child forked and exec'd by the test was read only when the sink stopped,
        after it, and its command line passed; found by a hunting helper)."""
        spill = self.spill
        if spill is None:
            return list(self.spawns)
        try:
            children = spill.read()
        except Exception:  # noqa: BLE001 - said when the sink stops (``finish``)
            return list(self.spawns)
        return sorted([*self.spawns, *children], key=lambda spawn: spawn.at)

    def finish(self) -> None:
        spill, self.spill = self.spill, None
        if spill is None:
            return
        try:
            self.spawns.extend(spill.read())
            self.spawns.sort(key=lambda spawn: spawn.at)  # children's spawns in their place
        except Exception as exc:  # noqa: BLE001
            self.error = f"could not read what forked children spawned ({type(exc).__name__})"
        finally:
            spill.close()


def _install() -> None:
    global _hook_installed
    if not _hook_installed:
        sys.addaudithook(_hook)
        _hook_installed = True


class _ProcessSink:
    name = ""
    inactive_reason = ""

    def __init__(self) -> None:
        self._recorder: _Recorder | None = None
        self._spawns: list[_Spawn] = []
        self._error = ""

    def start(self) -> None:
        global _running
        if self._recorder is not None:
            return
        recorder = _Recorder()
        with _lock:
            _install()
            _running = (*_running, recorder)
        self._recorder = recorder
        self._spawns = recorder.spawns

    def stop(self) -> None:
        global _running
        recorder = self._recorder
        if recorder is None:
            return
        with _lock:
            _running = tuple(r for r in _running if r is not recorder)
        self._recorder = None
        recorder.finish()
        self._error = recorder.error

    def _numbered(self) -> Iterator[tuple[str, _Spawn]]:
        recorder = self._recorder
        spawns = recorder.so_far() if recorder is not None else list(self._spawns)
        for n, spawn in enumerate(spawns, start=1):
            yield f"#{n} {spawn.program}", spawn

    def _uninspected(self) -> Iterator[Captured]:
        if self._error:
            yield Captured(self.name, SinkClass.OPERATOR, "forked children", "",
                           uninspected=self._error)  # fmt: skip

    def collect(self) -> Iterator[Captured]:
        raise NotImplementedError


class ProcessArgvSink(_ProcessSink):
    """The arguments of every process spawned during the test (see the module docstring)."""

    name = "process argv"

    def collect(self) -> Iterator[Captured]:
        for n, (label, spawn) in enumerate(self._numbered()):
            group = f"{self.name}#{n}"
            note = f"{spawn.event}: {ARGV_NOTE}"
            if spawn.event == "os.system":
                yield Captured(self.name, SinkClass.OPERATOR, f"{label} command",
                               spawn.argv[0], note=note, group=group)  # fmt: skip
                continue
            for i, arg in enumerate(spawn.argv):
                yield Captured(self.name, SinkClass.OPERATOR, f"{label} argv[{i}]", arg,
                               note=note, group=group)  # fmt: skip
            if len(spawn.argv) > 1:
                yield Captured(self.name, SinkClass.OPERATOR, f"{label} cmdline",
                               _joined(spawn.argv), note=note, group=group,
                               fallback=True)  # fmt: skip
        yield from self._uninspected()


class ProcessEnvironmentSink(_ProcessSink):
    """The environment entries a spawned process was given explicitly that differ from the
    parent's (see the module docstring)."""

    name = "process environment"

    def collect(self) -> Iterator[Captured]:
        for n, (label, spawn) in enumerate(self._numbered()):
            note = f"{spawn.event}: {ENV_NOTE}"
            for key, value in spawn.env or ():
                name = os.fsdecode(key) if isinstance(key, bytes) else key
                yield Captured(self.name, SinkClass.OPERATOR, f"{label} env.{name}",
                               _entry(key, value), note=note,
                               group=f"{self.name}#{n}")  # fmt: skip
        yield from self._uninspected()


def _joined(argv: tuple[str | bytes, ...]) -> str | bytes:
    """The command line as ``ps`` shows it: the arguments joined by spaces."""
    if all(type(a) is str for a in argv):
        return " ".join(argv)  # type: ignore[arg-type]  # all str (checked)
    return b" ".join(a if type(a) is bytes else os.fsencode(a) for a in argv)


def _entry(key: str | bytes, value: str | bytes) -> str | bytes:
    """``KEY=value``, as ``/proc/PID/environ`` holds it."""
    if type(key) is str and type(value) is str:
        return f"{key}={value}"
    as_bytes = [x if type(x) is bytes else os.fsencode(x) for x in (key, value)]
    return as_bytes[0] + b"=" + as_bytes[1]


SINKS = [ProcessArgvSink, ProcessEnvironmentSink]
