"""The SSH clients (asyncssh, paramiko) driven against leakcheck's in-process SSH server,
and the corpus of the exception text each produces at each SSH stage on this machine.

Not installed with leakcheck: corpus tooling. ``scripts/record_ssh_exceptions.py`` writes it
to ``corpora/exceptions/ssh.json``; ``tests/test_faults_ssh.py`` checks it still matches.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import traceback
from collections.abc import Iterator
from typing import Any, cast

import asyncssh
from leakcheck.plugins.ssh_server import SSHFault

from leakcheck.faults import HarnessError
from leakcheck.libtrace import library_versions
from leakcheck.snapshot_store import normalize as normalize_text
from leakcheck.stages import SSH, stages_for

# --- recorded exception texts (the upgrade snapshot) ----------------------------------------------

CLIENTS = ("asyncssh", "paramiko")
#: one placement for every recording: canaries in the command line, the user name and the
#: password (the latter two are fresh canaries whatever the placement)
RECORD_PLACEMENT = "ssh-command-args"
RECORD_SEED = "ssh-exception-corpus-1"
GENERATED_BY = "scripts/record_ssh_exceptions.py"


def _exception_text(exc: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(exc), exc))


def _asyncssh_outcome(fault: SSHFault) -> str:
    async def call() -> str:
        try:
            async with asyncssh.connect(**fault.asyncssh_options()) as conn:
                await conn.run(fault.command, env=fault.env, check=True, timeout=fault.timeout)
        except asyncssh.ProcessError as exc:
            text = _exception_text(exc)
            # attributes an exception sink reads: the command line and env ride along
            text += f"command attribute: {exc.command}\n"
            text += f"env attribute: {exc.env!r}\n"
            if exc.exit_status is not None:
                text += f"exit status: {exc.exit_status}\n"
            stderr = cast(str, exc.stderr)  # run() decodes (utf-8 by default): never bytes
            if stderr:
                text += f"stderr:\n{stderr}"
            return text
        except (OSError, asyncssh.Error) as exc:
            return _exception_text(exc)
        return "no exception\n"

    return asyncio.run(call())


def _paramiko_outcome(fault: SSHFault) -> str:
    import paramiko

    client = fault.paramiko_client()
    try:
        client.connect(**fault.paramiko_options())
        _stdin, stdout, stderr = client.exec_command(
            fault.command, timeout=fault.timeout, environment=fault.env
        )
        out = stdout.read()
        status = stdout.channel.recv_exit_status()
        err = stderr.read().decode("utf-8", "replace")
        text = "no exception\n" + f"exit status: {status}\n"
        return text + (f"stderr:\n{err}" if err else "") + (f"stdout: {len(out)} bytes\n")
    except (OSError, paramiko.SSHException) as exc:
        return _exception_text(exc)
    finally:
        client.close()


@contextlib.contextmanager
def _quiet_libraries() -> Iterator[None]:
    """The client libraries' records (which carry the canaries) stay off the terminal:
    with no handler configured, ``logging.lastResort`` would print warnings and errors."""
    loggers = [logging.getLogger(name) for name in ("asyncssh", "paramiko")]
    saved = [lg.propagate for lg in loggers]
    null = logging.NullHandler()
    for lg in loggers:
        lg.addHandler(null)
        lg.propagate = False
    try:
        yield
    finally:
        for lg, propagate in zip(loggers, saved, strict=True):
            lg.removeHandler(null)
            lg.propagate = propagate


def _normalize(text: str, fault: SSHFault, directory: str | None) -> str:
    """The snapshots' normalization (``leakcheck.snapshot_store.normalize``): the port,
    temporary paths, addresses, host keys and fingerprints."""
    return normalize_text(text, ports=[fault.port], paths=[directory] if directory else [])


def record() -> tuple[dict[str, Any], list[Any]]:
    """The corpus data, and the canaries it was recorded with (for the no-canary check)."""
    from leakcheck.harness import LeakCheck

    texts: dict[str, dict[str, str]] = {client: {} for client in CLIENTS}
    secrets: list[Any] = []
    drivers = {"asyncssh": _asyncssh_outcome, "paramiko": _paramiko_outcome}
    stages = [s.name for s in stages_for(SSH) if s.transport == SSH]
    with _quiet_libraries():
        for client in CLIENTS:
            for stage in stages:
                check = LeakCheck(seed=RECORD_SEED, namespace=f"{client}/{stage}", sinks=[])
                try:
                    fault = check.force(stage, via="ssh", placement=RECORD_PLACEMENT)
                    assert isinstance(fault, SSHFault)
                    directory = fault.directory
                    outcome = drivers[client](fault)
                    if not fault.fired:  # the snapshot would record a harness failure
                        raise HarnessError(fault.not_reached_reason())
                    texts[client][stage] = _normalize(check.mask(outcome), fault, directory)
                finally:
                    check.stop()
                secrets.extend(check.secrets)
    versions = library_versions(["asyncssh", "cryptography", "paramiko", "python"])
    return {"generated_by": GENERATED_BY, "versions": versions, "texts": texts}, secrets


def record_exception_texts() -> dict[str, Any]:
    """For each client (asyncssh, paramiko) and SSH stage, the text a gateway would catch
    (``traceback.format_exception_only``; exit status and stderr for a failed command),
    masked with ``LeakCheck.mask`` and normalized (``PORT``, ``<tmp>``, ``0xADDR``,
    ``FINGERPRINT``), with the library versions it was recorded under."""
    return record()[0]
