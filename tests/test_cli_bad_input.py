"""``leakcheck scan`` on bad input: one line on stderr and exit 2 for a usage error, never a
traceback, never a false "clean", and no piece of any secret in anything it prints.

Every output of every run (stdout, stderr, report files) is checked twice: with
``conftest.self_scan`` (every form of every secret) and with a strict masking-strength
scanner (``MASKING_FORMS``, ``strict=True``), which flags any 6-character piece of a secret.
Assertions compare booleans and counts: a failure never prints a value.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import io
import json
import os
import random
import string
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import leak_oracle
import pytest
from conftest import self_scan

import leakcheck.canaries as canaries_module
import leakcheck.cli.budget as budget_module
import leakcheck.cli.output as output_module
import leakcheck.engine as engine_module
import leakcheck.forms as forms_module
from leakcheck.canaries import CANARY_GENERATION, Secret
from leakcheck.cli import main
from leakcheck.detect import Scanner
from leakcheck.engine import available_backends
from leakcheck.forms import MASKING_FORMS

_estimate_bits = functools.lru_cache(maxsize=1024)(canaries_module.estimate_bits)


@pytest.fixture(autouse=True)
def _cached_estimates(monkeypatch: pytest.MonkeyPatch) -> None:
    # zxcvbn takes milliseconds a secret and every run reloads the secrets file: same
    # answers, once
    monkeypatch.setattr(canaries_module, "estimate_bits", lambda v: list(_estimate_bits(v)))


#: The automaton: hyperscan cannot compile every needle of a very long secret.
_BACKEND = "ahocorasick"


@functools.lru_cache(maxsize=64)
def _strict(secrets: tuple[Secret, ...]) -> Scanner:
    return Scanner(secrets, decode=True, forms=MASKING_FORMS, strict=True, backend=_BACKEND)


@functools.lru_cache(maxsize=64)
def _forms(secrets: tuple[Secret, ...]) -> Scanner:
    return Scanner(secrets, decode=True, backend=_BACKEND)


def assert_no_echo(what: str, data: str | bytes, secrets: list[Secret]) -> None:
    """No form (self_scan) and no 6-character piece (strict scan) of any secret.

    Its frame is hidden from pytest's tracebacks, which print every frame's arguments
    (``data`` holds what is checked: on a failure, the very pieces found)."""
    __tracebackhide__ = True
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    if max((len(s.value) for s in secrets), default=0) < 1000:
        try:
            self_scan(data, secrets, what)
        except AssertionError as exc:  # without self_scan's frame (and its arguments)
            raise AssertionError(str(exc)) from None
    else:  # conftest's scanner takes hyperscan, which cannot compile these: the same check
        raw = [s.id for s in secrets if s.value.encode("utf-8", "surrogatepass") in data]
        assert not raw, f"{what} holds the raw value of {raw}"
        found = "; ".join(f"{f.secret_id} as {f.form}" for f in _forms(tuple(secrets)).scan(data))
        assert not found, f"{what} leaks: {found}"
    pieces = "; ".join(
        f"{f.secret_id} as {f.form} at {f.location}" for f in _strict(tuple(secrets)).scan(data)
    )
    assert not pieces, f"{what} shows pieces: {pieces}"
    spelled = leak_oracle.hits(data, secrets)  # the independent search, as for pytest's output
    assert not spelled, f"{what}: {spelled}"


class Run:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    @property
    def err_lines(self) -> list[str]:
        return self.err.splitlines()


@pytest.fixture
def scan(capsys: pytest.CaptureFixture[str]):
    """``leakcheck scan ARGS`` in process; every output checked against ``secrets``."""

    def run(*args: object, secrets: list[Secret], files: tuple[Path, ...] = ()) -> Run:
        __tracebackhide__ = True  # its arguments may name a path holding a piece of a secret
        capsys.readouterr()
        try:
            code = main(["scan", *map(str, args)])
        except SystemExit as exc:  # argparse's own usage errors
            code = int(exc.code or 0)
        out, err = capsys.readouterr()
        for name, text in (("stdout", out), ("stderr", err)):
            assert "Traceback" not in text
            assert_no_echo(name, text, secrets)
        for path in files:
            if path.exists():
                assert_no_echo(f"report file {path.name}", path.read_bytes(), secrets)
        return Run(code, out, err)

    return run


def usage_error(run: Run, *fragments: str) -> str:
    """Exit 2, nothing on stdout, exactly one line on stderr."""
    assert run.code == 2
    assert run.out == ""
    assert len(run.err_lines) == 1, len(run.err_lines)
    line = run.err_lines[0]
    assert line.startswith("leakcheck: error: ")
    for fragment in fragments:
        assert fragment in line, fragment
    return line


def user_secret(seed: str, length: int = 41, specials: str = "@:#") -> Secret:
    """A random user secret (letters and digits with ``specials`` spread in), as
    ``--secrets-file`` would give it; its value appears in no source line."""
    rng = random.Random(seed)
    chars = [rng.choice(string.ascii_letters + string.digits) for _ in range(length)]
    for i, ch in enumerate(specials):
        chars[12 + 5 * i] = ch
    return Secret.from_user("".join(chars), id="S1")


def write_lines(path: Path, secrets: list[Secret]) -> Path:
    path.write_text("".join(s.value + "\n" for s in secrets), encoding="utf-8")
    return path


def report_json(tests: list[dict[str, Any]], seed: str = "7") -> str:
    return json.dumps(
        {"tool": "leakcheck", "canary_generation": CANARY_GENERATION, "seed": seed, "tests": tests}
    )


def canary(seed: str, test: str, kind: str, n: int = 1) -> Secret:
    return canaries_module.CanaryFactory(seed, namespace=test).nth(kind, n)


# --- a truncated secret ------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
@pytest.mark.parametrize("where", ["stdout", "output file"])
def test_a_truncated_secret_shows_no_piece(scan, tmp_path: Path, fmt: str, where: str) -> None:
    """A log line cut after 24 of a 41-character password: the prefix form matches its
    start, and the widening of the masked span stops at the "@"; the rest of the piece
    (and its "@ : #") must not be printed either."""
    secret = user_secret("truncated")
    assert "@" in secret.value[:24] and ":" in secret.value[:24]
    secrets_file = write_lines(tmp_path / "secrets.txt", [secret])
    log = tmp_path / "gateway.log"
    log.write_text(f"auth failed: password={secret.value[:24]} (truncated)\n", encoding="utf-8")
    output = tmp_path / f"report.{fmt}"
    extra = ("--output", output) if where == "output file" else ()
    run = scan("--format", fmt, "--secrets-file", secrets_file, *extra, log, secrets=[secret],
               files=(output,))  # fmt: skip
    assert run.code == 1
    report = output.read_text(encoding="utf-8") if extra else run.out
    assert "«canary:secret:prefix-" in report
    if fmt != "text":
        json.loads(report)


#: Seeds whose password shows, cut at 24 characters, a few random characters between
#: its hostile ones that JSON's escapes make a piece of (masked as they are before the
#: report was dumped: shown in the JSON and SARIF reports until strings written as JSON
#: were masked as JSON spells them, ``masking.masked_for_json``; each seed here did).
TRUNCATED_SEEDS = ["cut", "s16", "s25"]


@pytest.mark.parametrize("seed", TRUNCATED_SEEDS)
def test_a_truncated_canary_in_a_report_shows_no_piece(
    scan, canaries, tmp_path: Path, seed: str
) -> None:
    """The same for every 24-character piece of a generated password (hostile characters
    at random places), found through ``--canaries-from``."""
    test = "t.py::test_login"
    password = canary(seed, test, "password")
    report = tmp_path / "leakcheck.json"
    report.write_text(
        report_json([{"test": test, "secrets": [{"id": "password#1", "generated": True}]}], seed)
    )
    log = tmp_path / "cut.log"
    value = password.value
    log.write_text(
        "".join(f"line {i}: {value[i : i + 24]} end\n" for i in range(len(value) - 23)),
        encoding="utf-8",
    )
    for fmt in ("text", "json", "sarif"):
        run = scan("--format", fmt, "--canaries-from", report, log, secrets=[password])
        assert run.code in (0, 1)  # pieces without a reportable form are masked all the same


# --- ids, kinds, paths that hold a secret ------------------------------------------------


@pytest.mark.parametrize(
    "field, piece",
    [("id", "whole"), ("id", "piece"), ("kind", "whole"), ("kind", "piece"), ("id", "other")],
)
def test_an_id_or_kind_holding_a_secret_is_refused(
    scan, tmp_path: Path, field: str, piece: str
) -> None:
    first, second = user_secret("first"), user_secret("second")
    held = {"whole": first.value, "piece": f"prod-{first.value[3:13]}", "other": second.value[5:17]}
    items: list[Any] = [{"value": first.value, field: held[piece]}, second.value]
    secrets_file = tmp_path / "secrets.json"
    secrets_file.write_text(json.dumps(items), encoding="utf-8")
    log = tmp_path / "a.log"
    log.write_text(f"token {first.value}\n")
    for fmt in ("text", "json"):
        run = scan("--format", fmt, "--secrets-file", secrets_file, log, secrets=[first, second])
        # (a kind holding a key has no name's shape: refused as it is read, described)
        said = "its 'kind' must be a name" if field == "kind" else "its id holds a piece"
        if field == "id" and piece != "other":  # (of its own value: refused as it is read)
            said = "a secret's id shares a run of 8 characters or more with its value"
        usage_error(run, "item 1:", said)


@pytest.mark.parametrize(
    "item, fragment",
    [
        ({"value": "V", "kind": ""}, "its 'kind' must be a non-empty string"),
        ({"value": "V", "kind": ["x"]}, "its 'kind' must be a non-empty string"),
        ({"value": "V", "kind": "a\u00bbb"}, "without control characters"),
        ({"value": "V", "id": "line\nbreak"}, "its 'id' must be"),
        ({"value": "V", "id": True}, "its 'id' must be"),
    ],
    ids=["empty kind", "list kind", "guillemet kind", "newline id", "bool id"],
)
def test_a_bad_id_or_kind_is_a_usage_error(scan, tmp_path: Path, item, fragment) -> None:
    secret = user_secret("bad-field")
    item = {**item, "value": secret.value}
    secrets_file = tmp_path / "secrets.json"
    secrets_file.write_text(json.dumps([secret.value, item]), encoding="utf-8")
    (tmp_path / "a.log").write_text("x\n")
    run = scan("--secrets-file", secrets_file, tmp_path / "a.log", secrets=[secret])
    usage_error(run, "item 2:", fragment)


def test_two_items_with_one_id_is_a_usage_error(scan, tmp_path: Path) -> None:
    a, b = user_secret("a"), user_secret("b")
    secrets_file = tmp_path / "secrets.json"
    secrets_file.write_text(
        json.dumps([{"value": a.value, "id": "gh"}, {"value": b.value, "id": "gh"}])
    )
    (tmp_path / "a.log").write_text("x\n")
    run = scan("--secrets-file", secrets_file, tmp_path / "a.log", secrets=[a, b])
    usage_error(run, "item 2: the same id as item 1")


def test_a_canary_id_holding_a_piece_of_a_secret_is_masked(scan, tmp_path: Path) -> None:
    """A test id (in a --canaries-from report) that holds a piece of a --secrets-file
    secret is printed in every JSON report: masked, never refused (the run wrote it)."""
    secret = user_secret("test-id")
    test = f"t.py::test_deploy[{secret.value[2:14]}]"
    bearer = canary("7", test, "bearer")
    report = tmp_path / "leakcheck.json"
    report.write_text(
        report_json([{"test": test, "secrets": [{"id": "bearer#1", "generated": True}]}])
    )
    secrets_file = write_lines(tmp_path / "secrets.txt", [secret])
    clean, leaky = tmp_path / "clean.log", tmp_path / "leaky.log"
    clean.write_text("nothing here\n")
    leaky.write_text(f"Authorization: Bearer {bearer.value}\n")
    run = scan("--format", "json", "--secrets-file", secrets_file, "--canaries-from", report,
               clean, secrets=[secret, bearer])  # fmt: skip
    assert run.code == 0
    ids = [entry["id"] for entry in json.loads(run.out)["secrets"]]
    assert ids[0] == "S1" and ids[1].startswith("bearer#1@t.py::test_deploy[\u00abcanary:")
    for fmt in ("text", "json", "sarif"):
        run = scan("--format", fmt, "--secrets-file", secrets_file, "--canaries-from", report,
                   leaky, secrets=[secret, bearer])  # fmt: skip
        assert run.code == 1


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_a_piece_of_a_secret_in_a_path_argument_is_masked(scan, tmp_path: Path, fmt) -> None:
    secret = user_secret("path")
    secrets_file = write_lines(tmp_path / "secrets.txt", [secret])
    missing = tmp_path / f"deploy-{secret.value[:11]}.log"  # letters and digits: a file name
    run = scan("--format", fmt, "--secrets-file", secrets_file, missing, secrets=[secret])
    assert run.code == 2
    assert "no such file or directory: " in run.out + run.err
    # a report written to a path holding a piece: named masked on stderr
    output = tmp_path / f"{secret.value[20:32].replace('/', '_')}.{fmt}"
    log = tmp_path / "a.log"
    log.write_text("x\n")
    run = scan("--format", fmt, "--secrets-file", secrets_file, "-o", output, log,
               secrets=[secret], files=(output,))  # fmt: skip
    assert run.code == 0 and "report written to" in run.err


def test_an_error_naming_a_path_after_the_secrets_are_loaded_is_masked(scan, tmp_path) -> None:
    secret = user_secret("report-path")
    secrets_file = write_lines(tmp_path / "secrets.txt", [secret])
    missing = tmp_path / f"report-{secret.value[:11]}.json"
    run = scan("--secrets-file", secrets_file, "--canaries-from", missing, tmp_path,
               secrets=[secret])  # fmt: skip
    line = usage_error(run, "cannot read report", "No such file or directory")
    assert "\u00abcanary:" in line or "names no file and looks like a credential" in line


# --- what is read ------------------------------------------------------------------------


def test_a_symlinked_directory_below_a_scanned_one_is_read(scan, tmp_path: Path) -> None:
    secret = user_secret("symlink")
    secrets_file = write_lines(tmp_path / "secrets.txt", [secret])
    root, elsewhere = tmp_path / "artifacts", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    (elsewhere / "leak.log").write_text(f"token={secret.value}\n")
    (root / "clean.log").write_text("fine\n")
    os.symlink(elsewhere, root / "logs")
    os.symlink(elsewhere, root / "same-logs")  # the same directory again: read once
    run = scan("--format", "json", "--secrets-file", secrets_file, root, secrets=[secret])
    assert run.code == 1
    report = json.loads(run.out)
    assert report["sources"] == 2
    assert [Path(f["source"]).relative_to(root).as_posix() for f in report["findings"]] == [
        "logs/leak.log"
    ]


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_a_symlink_loop_is_named_once_and_never_clean(scan, tmp_path: Path, fmt: str) -> None:
    secret = user_secret("loop")
    secrets_file = write_lines(tmp_path / "secrets.txt", [secret])
    root = tmp_path / "artifacts"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "app.log").write_text("fine\n")
    os.symlink(root, root / "a" / "b" / "up")  # back to the top: a loop
    os.symlink("a", root / "a-again")  # a directory already read: not a loop
    run = scan("--format", fmt, "--secrets-file", secrets_file, root, secrets=[secret])
    assert run.code == 0
    loop = str(root / "a" / "b" / "up")
    if fmt == "text":
        assert "clean" not in run.out.replace("not clean", "")
        assert f"not read (a symlink loop): {loop}" in run.out
        assert "1 entry was not read" in run.out and run.err == ""
        return
    assert run.err_lines == [f"leakcheck: note: not read (a symlink loop): {loop}"]
    document = json.loads(run.out)
    if fmt == "json":
        assert document["sources"] == 1
        assert document["not_read"] == [{"source": loop, "why": "a symlink loop"}]
    else:
        [invocation] = document["runs"][0]["invocations"]
        assert invocation["toolExecutionNotifications"] == [
            {"level": "warning", "message": {"text": f"not read (a symlink loop): {loop}"}}
        ]


def test_a_fifo_below_a_directory_makes_the_report_not_clean(scan, tmp_path: Path) -> None:
    secret = user_secret("fifo")
    secrets_file = write_lines(tmp_path / "secrets.txt", [secret])
    root = tmp_path / "artifacts"
    root.mkdir()
    (root / "app.log").write_text("fine\n")
    os.mkfifo(root / "pipe")
    watchdog = threading.Timer(0.5, lambda: _unblock(root / "pipe"))
    watchdog.start()
    try:
        text = scan("--secrets-file", secrets_file, root, secrets=[secret])
        as_json = scan("--format", "json", "--secrets-file", secrets_file, root, secrets=[secret])
    finally:
        watchdog.cancel()
    assert (text.code, as_json.code) == (0, 0)
    assert "clean: no form" not in text.out
    assert f"not read (a FIFO, socket or device): {root / 'pipe'}" in text.out
    assert json.loads(as_json.out)["not_read"] == [
        {"source": str(root / "pipe"), "why": "a FIFO, socket or device"}
    ]


def _unblock(fifo: Path) -> None:  # should the scan open the FIFO after all: EOF it
    with contextlib.suppress(OSError):
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_a_file_name_that_is_not_utf8(scan, tmp_path: Path, fmt: str) -> None:
    secret = user_secret("latin1-name")
    secrets_file = write_lines(tmp_path / "secrets.txt", [secret])
    root = tmp_path / "artifacts"
    root.mkdir()
    name = os.fsdecode(b"caf\xe9 \xff.log")  # latin-1, as an old tool wrote it
    (root / name).write_text(f"token={secret.value}\n")
    output = tmp_path / f"report.{fmt}"
    run = scan("--format", fmt, "--secrets-file", secrets_file, "-o", output, root,
               secrets=[secret], files=(output,))  # fmt: skip
    assert run.code == 1
    report = output.read_bytes().decode("utf-8")  # written, and valid UTF-8
    shown = f"{root}/caf\\xe9 \\xff.log"
    if fmt == "text":
        assert f"{shown}:1:7" in report
    elif fmt == "json":
        assert json.loads(report)["findings"][0]["source"] == shown
    else:
        [result] = json.loads(report)["runs"][0]["results"]
        uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert uri.endswith("/caf%E9%20%FF.log") and uri.isascii()


# --- JSON that cannot be read ------------------------------------------------------------

BAD_JSON = {
    "nested 100,000 deep": ("[" * 100_000, "nested too deeply to read"),
    "a 5,000-digit number": ('["x", ' + "7" * 5000 + "]", "a number too long to read (line 1"),
    "a lone surrogate": ('["\\ud800 x"]', "lone surrogate escape"),
    "a lone low surrogate": ('[{"value": "x", "kind": "\\udc00"}]', "lone surrogate escape"),
}


@pytest.mark.parametrize("name", list(BAD_JSON))
@pytest.mark.parametrize("option", ["--secrets-file", "--canaries-from"])
def test_json_that_cannot_be_read_is_a_usage_error(scan, tmp_path, name, option) -> None:
    text, fragment = BAD_JSON[name]
    if option == "--canaries-from" and not text.startswith("[" * 3):
        text = report_json([{"test": "t.py::t", "secrets": []}])[:-2] + ", " + text + "]}"
    path = tmp_path / "input.json"
    path.write_text(text, encoding="utf-8")
    (tmp_path / "a.log").write_text("x\n")
    usage_error(scan(option, path, tmp_path / "a.log", secrets=[]), repr(str(path)), fragment)


@pytest.mark.parametrize(
    "canary_id",
    ["bearer#\u00b2", "bearer#\u0661", "bearer#1" + "0" * 5000, "bearer#01", "bearer#", 7, None],
    ids=["superscript", "arabic-indic", "5000 digits", "leading zero", "no number", "int", "none"],
)
def test_a_canary_id_that_is_not_kind_hash_n_is_a_usage_error(scan, tmp_path, canary_id) -> None:
    report = tmp_path / "leakcheck.json"
    report.write_text(
        report_json([{"test": "t.py::t", "secrets": [{"id": canary_id, "generated": True}]}])
    )
    (tmp_path / "a.log").write_text("x\n")
    line = usage_error(scan("--canaries-from", report, tmp_path / "a.log", secrets=[]),
                       "test 1:", "is not a canary id (KIND#N)")  # fmt: skip
    assert len(line) < 300


def test_a_report_with_a_bom_is_read(scan, tmp_path: Path) -> None:
    test = "t.py::t"
    bearer = canary("7", test, "bearer")
    report = tmp_path / "leakcheck.json"
    text = report_json([{"test": test, "secrets": [{"id": "bearer#1", "generated": True}]}])
    report.write_bytes(b"\xef\xbb\xbf" + text.encode())
    log = tmp_path / "a.log"
    log.write_text(f"Bearer {bearer.value}\n")
    assert scan("--canaries-from", report, log, secrets=[bearer]).code == 1


def test_request_ids_shows_no_piece_of_a_canary_in_a_test_id(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``leakcheck request-ids`` names the report and test of each id a violation names; a
    test id holding another test's canary (a hand-made report: the plugin masks them) is
    printed masked, in full and in pieces, and the ids themselves are never printed."""
    bearer = canary("7", "t.py::test_a", "bearer")
    rid = "req_" + "5f" * 16
    tests = [
        {"test": "t.py::test_a", "secrets": [{"id": "bearer#1", "generated": True}],
         "matrix": {"operation": "o", "stage": "s", "placement": "p", "request_id": rid}},
        {"test": f"t.py::test_b[{bearer.value[:30]}]", "secrets": [],
         "matrix": {"operation": "o", "stage": "s", "placement": "p", "request_id": rid}},
    ]  # fmt: skip
    for n, shard in enumerate(tests):
        (tmp_path / f"shard-{n}.json").write_text(report_json([shard]))
    capsys.readouterr()
    code = main(["request-ids", str(tmp_path / "shard-0.json"), str(tmp_path / "shard-1.json")])
    out, err = capsys.readouterr()
    assert (code, err) == (1, "")
    assert "request-id-unique: repeats an earlier id: ids[1]" in out
    assert "shard-1.json t.py::test_b[«canary:bearer:" in out
    assert rid not in out
    assert_no_echo("request-ids output", out, [bearer])


# --- standard output that cannot be written ----------------------------------------------


def console_script() -> Path:
    script = Path(sys.executable).parent / "leakcheck"
    if not script.exists():
        pytest.skip("the leakcheck console script is not installed next to this python")
    return script


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_stdout_on_dev_full(tmp_path: Path, fmt: str) -> None:
    secret = user_secret("dev-full")
    secrets_file = write_lines(tmp_path / "secrets.txt", [secret])
    log = tmp_path / "a.log"
    log.write_text(f"token={secret.value}\n" * 50)
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [console_script(), "scan", "--format", fmt, "--secrets-file", secrets_file, log],
            stdout=full, stderr=subprocess.PIPE, env=_env(), timeout=120,
        )  # fmt: skip
    err = done.stderr.decode()
    assert_no_echo("stderr", err, [secret])
    assert done.returncode == 2
    assert err == "leakcheck: error: cannot write to standard output: No space left on device\n"


def test_stdout_a_closed_pipe(tmp_path: Path) -> None:
    secret = user_secret("closed-pipe")
    secrets_file = write_lines(tmp_path / "secrets.txt", [secret])
    log = tmp_path / "a.log"
    log.write_text(f"token={secret.value}\n" * 2000)
    read, write = os.pipe()
    os.close(read)  # nobody reads: the first write fails with EPIPE
    try:
        done = subprocess.run(
            [console_script(), "scan", "--secrets-file", secrets_file, log],
            stdout=write, stderr=subprocess.PIPE, env=_env(), timeout=120,
        )  # fmt: skip
    finally:
        os.close(write)
    err = done.stderr.decode()
    assert_no_echo("stderr", err, [secret])
    assert done.returncode == 2
    assert err == "leakcheck: error: cannot write to standard output: Broken pipe\n"


class _Full(io.StringIO):
    def write(self, text: str) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")


def test_stdout_that_cannot_be_written_in_process(scan, tmp_path, monkeypatch) -> None:
    secret = user_secret("in-process")
    secrets_file = write_lines(tmp_path / "secrets.txt", [secret])
    log = tmp_path / "a.log"
    log.write_text(f"token={secret.value}\n")
    monkeypatch.setattr(sys, "stdout", _Full())
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    assert main(["scan", "--secrets-file", str(secrets_file), str(log)]) == 2
    assert_no_echo("stderr", err.getvalue(), [secret])
    assert err.getvalue() == (
        "leakcheck: error: cannot write to standard output: No space left on device\n"
    )


# --- secrets files: BOM, line ends, spaces, duplicates -----------------------------------


def test_a_bom_and_crlf_line_ends_are_removed(scan, tmp_path: Path) -> None:
    a, b = user_secret("bom-a"), user_secret("bom-b")
    secrets_file = tmp_path / "secrets.txt"
    secrets_file.write_bytes(b"\xef\xbb\xbf" + f"{a.value}\r\n\r\n{b.value}\r\n".encode())
    log = tmp_path / "a.log"
    log.write_text(f"{a.value} and {b.value}\n")
    run = scan("--format", "json", "--secrets-file", secrets_file, log, secrets=[a, b])
    assert run.code == 1 and run.err == ""
    assert sorted(f["secret_id"] for f in json.loads(run.out)["findings"]) == ["S1", "S3"]


def test_spaces_and_tabs_around_a_secret_are_removed_with_a_warning(scan, tmp_path) -> None:
    a, b = user_secret("space-a"), user_secret("space-b")
    secrets_file = tmp_path / "secrets.txt"
    secrets_file.write_text(f"  {a.value}\t\n{b.value}\n\t{b.value[::-1]} \n")
    log = tmp_path / "a.log"
    log.write_text(f"[{a.value}]\n")
    run = scan("--secrets-file", secrets_file, log, secrets=[a, b])
    assert run.code == 1
    assert run.err_lines == [
        "leakcheck: warning: secrets file line 1, 3: spaces or tabs around the secret were "
        "removed (a secret that really has them goes in a .json secrets file)"
    ]
    # in the .json form they are the secret's own
    spaced = Secret.from_user(f" {a.value} ", id="S1")
    secrets_json = tmp_path / "secrets.json"
    secrets_json.write_text(json.dumps([spaced.value]))
    run = scan("--secrets-file", secrets_json, log, secrets=[spaced])
    assert run.code == 0 and run.err == ""


@pytest.mark.parametrize(
    "inside", ["\r", "\x00", "\x1b", "\x0c", "\u2028"], ids=["cr", "nul", "esc", "ff", "ls"]
)
def test_a_control_character_inside_a_line_is_a_usage_error(scan, tmp_path, inside) -> None:
    a = user_secret("control")
    secrets_file = tmp_path / "secrets.txt"
    secrets_file.write_text(f"{a.value}\n{a.value[:20]}{inside}{a.value[20:]}\n", newline="")
    (tmp_path / "a.log").write_text("x\n")
    usage_error(scan("--secrets-file", secrets_file, tmp_path / "a.log", secrets=[a]),
                "line 2: a control character", ".json secrets file")  # fmt: skip


def test_a_secret_given_twice_is_searched_once(scan, tmp_path: Path) -> None:
    a, b = user_secret("twice-a"), user_secret("twice-b")
    secrets_file = tmp_path / "secrets.txt"
    secrets_file.write_text(f"{a.value}\n{b.value}\n{a.value}\n")
    log = tmp_path / "a.log"
    log.write_text(f"one {a.value}\n")
    run = scan("--format", "json", "--secrets-file", secrets_file, log, secrets=[a, b])
    assert run.code == 1
    report = json.loads(run.out)
    assert [f["secret_id"] for f in report["findings"]] == ["S1"]
    assert [s["id"] for s in report["secrets"]] == ["S1", "S2"]
    note = "the same secret is given as S1 and S3: searched for once, reported as S1"
    assert report["notes"] == [note]
    assert run.err_lines == [f"leakcheck: note: {note}"]


def test_a_canary_also_in_the_secrets_file_is_searched_once(scan, tmp_path: Path) -> None:
    test = "t.py::test_auth"
    bearer = canary("7", test, "bearer")
    report = tmp_path / "leakcheck.json"
    report.write_text(
        report_json([{"test": test, "secrets": [{"id": "bearer#1", "generated": True}]}])
    )
    secrets_file = write_lines(tmp_path / "secrets.txt", [bearer])
    log = tmp_path / "a.log"
    log.write_text(f"Bearer {bearer.value}\nagain {bearer.value}\n")
    run = scan("--secrets-file", secrets_file, "--canaries-from", report, log, secrets=[bearer])
    assert run.code == 1
    assert "S1 (secret, direct): 2 hits" in run.out and "bearer#1@" not in run.out
    assert run.err_lines == [
        "leakcheck: note: the same secret is given as S1 and bearer#1@t.py::test_auth: "
        "searched for once, reported as S1"
    ]


# --- scale -------------------------------------------------------------------------------


def _no_work(*_args: object, **_kwargs: object) -> Any:
    raise AssertionError("a secret was judged or rebuilt before the scale check")


def test_too_many_secrets_is_refused_before_any_work(scan, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(canaries_module, "estimate_bits", _no_work)
    secrets_file = tmp_path / "secrets.txt"
    rng = random.Random(5)
    alphabet = string.ascii_letters + string.digits
    secrets_file.write_text(
        "".join(
            "".join(rng.choices(alphabet, k=40)) + "\n"
            for _ in range(budget_module.MAX_SECRETS + 1)
        )
    )
    (tmp_path / "a.log").write_text("x\n")
    usage_error(scan("--secrets-file", secrets_file, tmp_path / "a.log", secrets=[]),
                f"to {budget_module.MAX_SECRETS + 1:,}; one scan searches for at most "
                f"{budget_module.MAX_SECRETS:,}")  # fmt: skip
    as_json = tmp_path / "secrets.json"
    as_json.write_text(json.dumps(["x"] * (budget_module.MAX_SECRETS + 1)))
    usage_error(scan("--secrets-file", as_json, tmp_path / "a.log", secrets=[]), "at most")


def test_too_many_characters_is_refused(scan, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(canaries_module, "estimate_bits", _no_work)
    monkeypatch.setattr(budget_module, "MAX_SECRET_CHARS", 100)
    secrets_file = tmp_path / "secrets.txt"
    secrets_file.write_text("a1" * 30 + "\n" + "b2" * 30 + "\n")
    (tmp_path / "a.log").write_text("x\n")
    usage_error(scan("--secrets-file", secrets_file, tmp_path / "a.log", secrets=[]),
                "to 120 characters; one scan searches for at most 100")  # fmt: skip


def test_canaries_past_the_limit_are_refused_before_they_are_rebuilt(
    scan, tmp_path, monkeypatch
) -> None:
    monkeypatch.setattr(budget_module, "MAX_SECRETS", 3)
    monkeypatch.setattr(canaries_module.CanaryFactory, "nth", _no_work)
    planted = [{"id": f"bearer#{n}", "generated": True} for n in (1, 2)]
    report = tmp_path / "leakcheck.json"
    report.write_text(report_json([{"test": "t.py::t", "secrets": planted}]))
    a, b = user_secret("limit-a"), user_secret("limit-b")
    secrets_file = write_lines(tmp_path / "secrets.txt", [a, b])
    (tmp_path / "a.log").write_text("x\n")
    run = scan("--secrets-file", secrets_file, "--canaries-from", report, tmp_path / "a.log",
               secrets=[a, b])  # fmt: skip
    usage_error(run, "report", "to 4; one scan searches for at most 3")


@pytest.mark.skipif("hyperscan" not in available_backends(), reason="hyperscan not installed")
def test_hyperscan_past_its_limit(scan, tmp_path, monkeypatch, canaries) -> None:
    monkeypatch.setattr(budget_module, "HYPERSCAN_MAX_SECRETS", 2)
    secrets = [canaries("bearer") for _ in range(3)]
    secrets_file = write_lines(tmp_path / "secrets.txt", secrets)
    log = tmp_path / "a.log"
    log.write_text(f"Bearer {secrets[2].value}\n")
    run = scan("--engine", "hyperscan", "--secrets-file", secrets_file, log, secrets=secrets)
    usage_error(run, "at most 2 with --engine hyperscan")
    # auto takes the automaton past the engine's needle cap, whatever the input size
    # (stdin's is unknown)
    monkeypatch.setattr(engine_module, "HYPERSCAN_MAX_NEEDLES", 10)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(log.read_bytes())))
    run = scan("--format", "json", "--secrets-file", secrets_file, "-", secrets=secrets)
    assert run.code == 1 and json.loads(run.out)["engine"] == "ahocorasick"


@pytest.mark.skipif("hyperscan" not in available_backends(), reason="hyperscan not installed")
def test_a_secret_too_long_for_hyperscan(scan, tmp_path: Path, monkeypatch) -> None:
    """A needle past 4,000 bytes (a 2,000-character secret's hex form) is more than
    hyperscan compiles: ``auto`` takes the automaton, ``--engine hyperscan`` is refused."""
    long = user_secret("long", length=2000, specials="")
    secrets_file = write_lines(tmp_path / "secrets.txt", [long])
    log = tmp_path / "a.log"
    log.write_text(f"key={long.value}\n")
    usage_error(scan("--engine", "hyperscan", "--secrets-file", secrets_file, log, secrets=[long]),
                "--engine ahocorasick")  # fmt: skip
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(log.read_bytes())))
    run = scan("--format", "json", "--secrets-file", secrets_file, "-", secrets=[long])
    assert run.code == 1 and json.loads(run.out)["engine"] == "ahocorasick"


def test_the_output_masker_is_built_only_for_what_is_printed(scan, tmp_path, monkeypatch):
    """The scaled-down proof of the bound: masking windows multiply a scanner's needles, so
    the output masker is built over the secrets that can occur in what is printed, never
    over all of them; and a clean scan builds none (nor any window)."""
    secrets = [user_secret(f"many-{n}", length=32) for n in range(300)]
    secrets_file = write_lines(tmp_path / "secrets.txt", secrets)
    built: list[int] = []
    windows: list[int] = []
    real_scanner, real_heads = output_module.Scanner, output_module.Output._window_heads

    def scanner(secrets, **kwargs):  # type: ignore[no-untyped-def]
        if kwargs.get("forms") is not None:
            built.append(len(list(secrets)))
        return real_scanner(secrets, **kwargs)

    def heads(self):  # type: ignore[no-untyped-def]
        windows.append(len(self.secrets))
        return real_heads(self)

    # the masker builds its scanner in cli.output (the scan's own, in cli.scan, has no forms)
    monkeypatch.setattr(output_module, "Scanner", scanner)
    monkeypatch.setattr(output_module.Output, "_window_heads", heads)
    clean = tmp_path / "clean.log"
    clean.write_text("nothing to see\n" * 100)
    for fmt in ("text", "json", "sarif"):
        run = scan("--format", fmt, "--secrets-file", secrets_file, clean, secrets=secrets)
        assert run.code == 0
    assert (built, windows) == ([], [])
    leaky = tmp_path / "leaky.log"
    # (the prefix fragment reported, the full estimate's, and the characters after it to
    # one window past the "@" where its masked span stops widening: fewer than a piece the
    # excerpt masks itself, findings.PIECE_CHARS, so what is printed needs the masker's
    # windows)
    value = secrets[123].value
    prefix = forms_module._fragment_lengths(Secret.from_user(value, id="S1", early=False))[0]
    cut = value.index("@") + 6
    assert prefix is not None and prefix < value.index("@") and cut - prefix < 10
    leaky.write_text(f"a {secrets[7].value}\nb {value[:cut]}\nc {secrets[9].value}\n")
    run = scan("--format", "json", "--secrets-file", secrets_file, leaky, secrets=secrets)
    assert run.code == 1
    assert windows == [300]  # looked up in one pass...
    assert len(built) == 1 and built[0] <= 4  # ...the masker holds only the candidates
