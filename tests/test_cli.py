"""``leakcheck scan``: exit codes, inputs, formats, and no secret in anything it prints."""

from __future__ import annotations

import base64
import contextlib
import functools
import io
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import leak_oracle
import pytest
from conftest import self_scan

import leakcheck.canaries as canaries_module
from leakcheck import Scanner, Secret, SecretClass
from leakcheck.cli import main
from leakcheck.engine import available_backends
from leakcheck.forms import MASKING_FORMS

KINDS = ("bearer", "api_key", "password", "cookie", "user_name")


class Run:
    """One in-process run of ``main``: exit code, stdout, stderr, all self-scanned."""

    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err


_estimate_bits = functools.lru_cache(maxsize=256)(canaries_module.estimate_bits)


@pytest.fixture(autouse=True)
def _cached_estimates(monkeypatch: pytest.MonkeyPatch) -> None:
    # zxcvbn takes ~80 ms a secret and every run reloads the secrets file: same answers, once
    monkeypatch.setattr(canaries_module, "estimate_bits", lambda v: list(_estimate_bits(v)))


@pytest.fixture
def secrets(canaries) -> list[Secret]:
    return [canaries(kind) for kind in KINDS]


@pytest.fixture
def secrets_file(tmp_path: Path, secrets: list[Secret]) -> Path:
    path = tmp_path / "secrets.txt"
    path.write_text("".join(s.value + "\n\n" for s in secrets), encoding="utf-8")
    return path


@functools.lru_cache(maxsize=64)
def _strict(secrets: tuple[Secret, ...]) -> Scanner:
    return Scanner(secrets, decode=True, forms=MASKING_FORMS, strict=True, backend="ahocorasick")


def no_echo(text: str | bytes, secrets: list[Secret], what: str) -> None:
    """No form (self_scan) and no 6-character piece (a strict scan) of any secret; the
    frame is hidden (pytest prints a frame's arguments: ``text``)."""
    __tracebackhide__ = True
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    try:
        self_scan(data, secrets, what)
    except AssertionError as exc:
        raise AssertionError(str(exc)) from None
    pieces = "; ".join(f"{f.secret_id} as {f.form}" for f in _strict(tuple(secrets)).scan(data))
    assert not pieces, f"{what} shows pieces: {pieces}"
    spelled = leak_oracle.hits(data, secrets)  # the independent search, as for pytest's output
    assert not spelled, f"{what}: {spelled}"


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], secrets: list[Secret]):
    """Run ``main(argv)``; every output is checked for ``secrets`` and ``extra``."""

    def run(*argv: str | Path, extra: tuple[Secret, ...] = (), files=()) -> Run:
        __tracebackhide__ = True
        everything = [*secrets, *extra]
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exc:  # argparse's own usage errors
            code = exc.code
        out, err = capsys.readouterr()
        no_echo(out, everything, "stdout")
        no_echo(err, everything, "stderr")
        for path in files:
            no_echo(Path(path).read_bytes(), everything, f"output file {Path(path).name}")
        assert "Traceback" not in err
        return Run(code, out, err)

    return run


class Pipe(io.RawIOBase):
    """Standard input as a pipe: readable, not seekable."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, target) -> int:  # type: ignore[override]
        return self._data.readinto(target)


def leaky_text(secrets: list[Secret]) -> str:
    return "".join(f"line {i}: token={s.value} end\n" for i, s in enumerate(secrets))


def one_error_line(run: Run, *fragments: str) -> str:
    assert run.code == 2
    assert run.out == ""
    lines = run.err.splitlines()
    assert len(lines) == 1, run.err
    assert lines[0].startswith("leakcheck: error: ")
    for fragment in fragments:
        assert fragment in lines[0]
    return lines[0]


# --- exit codes and inputs ----------------------------------------------------------------


def test_clean_exits_0(cli, secrets_file: Path, tmp_path: Path) -> None:
    log = tmp_path / "clean.log"
    log.write_text("nothing to see here\n")
    run = cli("scan", "--secrets-file", secrets_file, log)
    assert run.code == 0
    assert "clean: no form of any secret was found" in run.out
    assert "0 findings in 0 of 1 source" in run.out
    assert run.err == ""


def test_findings_exit_1_grouped_per_secret(cli, secrets_file: Path, secrets, tmp_path) -> None:
    log = tmp_path / "leaky.log"
    log.write_text(leaky_text(secrets) + leaky_text(secrets[:1]), encoding="utf-8")
    run = cli("scan", "--secrets-file", secrets_file, log)
    assert run.code == 1
    assert run.out.startswith(f"leakcheck: {len(secrets) + 1} findings in 1 of 1 source (")
    # ids come from line numbers of the secrets file (blank lines between them)
    for n in range(len(secrets)):
        assert f"S{2 * n + 1} (secret, direct): " in run.out
    assert "S1 (secret, direct): 2 hits" in run.out
    assert f"{log}:1:15" in run.out and f"{log}:{len(secrets) + 1}:15" in run.out
    assert "\u00abcanary:secret:raw\u00bb" in run.out


def test_directories_are_scanned_recursively(cli, secrets_file, secrets, tmp_path) -> None:
    root = tmp_path / "logs"
    (root / "a" / "b").mkdir(parents=True)
    (root / "top.log").write_text("clean\n")
    (root / "a" / "mid.log").write_text(leaky_text(secrets[:2]), encoding="utf-8")
    (root / "a" / "b" / "deep.json").write_text(json.dumps({"t": secrets[2].value}))
    (root / "a" / "b" / "binary.bin").write_bytes(b"\x00\xff" + secrets[3].value.encode())
    run = cli("scan", "--format", "json", "--secrets-file", secrets_file, root)
    assert run.code == 1
    report = json.loads(run.out)
    assert report["sources"] == 4
    found = {
        (Path(f["source"]).relative_to(root).as_posix(), f["secret_id"]) for f in report["findings"]
    }
    assert found == {
        ("a/mid.log", "S1"),
        ("a/mid.log", "S3"),
        ("a/b/deep.json", "S5"),
        ("a/b/binary.bin", "S7"),
    }


def test_dangling_link_in_a_directory_is_an_error(cli, secrets_file, tmp_path) -> None:
    root = tmp_path / "logs"
    root.mkdir()
    (root / "ok.log").write_text("fine\n")
    os.symlink(tmp_path / "gone", root / "dangling.log")
    run = cli("scan", "--format", "json", "--secrets-file", secrets_file, root)
    assert run.code == 2
    report = json.loads(run.out)
    assert report["sources"] == 1
    assert report["errors"] == [f"cannot read {root / 'dangling.log'}: No such file or directory"]
    assert run.err == f"leakcheck: error: {report['errors'][0]}\n"


def test_stdin_dash(cli, secrets_file, secrets, monkeypatch) -> None:
    data = ("é" * 3000 + " " + secrets[1].value + "\n").encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(Pipe(data))))
    assert not sys.stdin.buffer.seekable()
    run = cli("scan", "--format", "json", "--secrets-file", secrets_file, "-")
    assert run.code == 1
    [finding] = json.loads(run.out)["findings"]
    assert finding["source"] == "<stdin>"
    assert (finding["line"], finding["column"], finding["offset"]) == (1, 3002, 6001)


def test_missing_path_is_an_error_with_the_rest_scanned(cli, secrets_file, secrets, tmp_path):
    log = tmp_path / "leaky.log"
    log.write_text(leaky_text(secrets[:1]), encoding="utf-8")
    missing = tmp_path / "no-such.log"
    run = cli("scan", "--secrets-file", secrets_file, missing, log)
    assert run.code == 2  # an I/O error outranks the findings
    assert f"error: no such file or directory: {missing}" in run.out
    assert "S1 (secret, direct): 1 hit" in run.out
    run = cli("scan", "--format", "sarif", "--secrets-file", secrets_file, missing)
    assert run.code == 2
    assert run.err == f"leakcheck: error: no such file or directory: {missing}\n"
    sarif = json.loads(run.out)
    [invocation] = sarif["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False


def test_a_path_argument_that_is_a_secret_is_masked(cli, secrets_file, secrets) -> None:
    for secret in secrets:
        for fmt in ("text", "json"):
            run = cli("scan", "--format", fmt, "--secrets-file", secrets_file, secret.value)
            assert run.code == 2
            said = run.out + run.err
            # masked, or (one that looks like a credential) described as no file name
            assert (
                "no such file or directory: \u00abcanary:secret:raw\u00bb" in said
                or "no such file or directory: (an argument that names no file and looks "
                "like a credential"
                in said
            ), said


def test_a_file_named_after_a_secret_is_masked_in_reports(cli, canaries, tmp_path) -> None:
    secret = canaries("user_name")  # a valid file name: letters, digits, "_" and "-"
    secrets_file = tmp_path / "s.txt"
    secrets_file.write_text(secret.value + "\n")
    folder = tmp_path / secret.value
    folder.mkdir()
    (folder / "app.log").write_text(f"user {secret.value} logged in\n")
    for fmt in ("text", "json", "sarif"):
        output = tmp_path / f"report.{fmt}"
        run = cli(
            "scan",
            "--format",
            fmt,
            "--secrets-file",
            secrets_file,
            "--output",
            output,
            folder,
            extra=(secret,),
            files=[output],
        )
        assert run.code == 1
        assert "\u00abcanary:secret:raw\u00bb" in output.read_text(encoding="utf-8")


# --- formats, output, options -------------------------------------------------------------


def test_formats(cli, secrets_file, secrets, tmp_path) -> None:
    log = tmp_path / "leaky.log"
    log.write_text(leaky_text(secrets), encoding="utf-8")
    text = cli("scan", "--secrets-file", secrets_file, log)
    as_json = cli("scan", "--format", "json", "--secrets-file", secrets_file, log)
    sarif = cli("scan", "--format", "sarif", "--secrets-file", secrets_file, log)
    assert (text.code, as_json.code, sarif.code) == (1, 1, 1)
    report = json.loads(as_json.out)
    assert len(report["findings"]) == len(secrets)
    assert report["secrets"] == [
        {"id": f"S{2 * n + 1}", "kind": "secret"} for n in range(len(secrets))
    ]
    document = json.loads(sarif.out)
    assert document["version"] == "2.1.0"
    assert len(document["runs"][0]["results"]) == len(secrets)
    for finding in report["findings"]:
        assert finding["excerpt"] in text.out
    with pytest.raises(SystemExit):
        main(["scan", "--format", "xml", "--secrets-file", str(secrets_file), str(log)])


def test_output_file(cli, secrets_file, secrets, tmp_path) -> None:
    log = tmp_path / "leaky.log"
    log.write_text(leaky_text(secrets), encoding="utf-8")
    for fmt in ("text", "json", "sarif"):
        output = tmp_path / f"out.{fmt}"
        run = cli(
            "scan",
            "--format",
            fmt,
            "--output",
            output,
            "--secrets-file",
            secrets_file,
            log,
            files=[output],
        )
        assert run.code == 1
        assert run.out == ""
        assert run.err == f"leakcheck: {len(secrets)} findings, report written to {output}\n"
        if fmt != "text":
            json.loads(output.read_text(encoding="utf-8"))
    run = cli("scan", "-o", tmp_path / "missing-dir" / "r.txt", "--secrets-file", secrets_file, log)
    one_error_line(run, "cannot write report", "No such file or directory")


def test_decode_finds_chains(cli, secrets_file, secrets, tmp_path) -> None:
    log = tmp_path / "double.log"
    twice = base64.b64encode(base64.b64encode(secrets[0].value.encode())).decode()
    log.write_text(f"payload={twice}\n")
    # decoding is the default; --no-decode turns it off, --decode is still accepted
    assert cli("scan", "--no-decode", "--secrets-file", secrets_file, log).code == 0
    for options in ((), ("--decode",)):
        run = cli("scan", *options, "--format", "json", "--secrets-file", secrets_file, log)
        assert run.code == 1
        report = json.loads(run.out)
        assert report["decode"] is True
        [finding] = report["findings"]
        assert finding["secret_id"] == "S1" and finding["form"].startswith("base64>base64")
    assert cli("scan", "--decode", "--no-decode", "--secrets-file", secrets_file, log).code == 0


def test_a_utf16_transcript_is_read_as_written(cli, secrets, tmp_path) -> None:
    """A PowerShell transcript (UTF-16-LE, BOM): each secret on its line, found as
    utf16-le at its column in characters, the excerpt read as text, nothing echoed."""
    secrets = [s for s in secrets if "\n" not in s.value]  # a line each (no PEM)
    secrets_file = tmp_path / "one-line-secrets.txt"
    secrets_file.write_text("".join(s.value + "\n" for s in secrets), encoding="utf-8")
    lines = ["\ufeff**********************", "Windows PowerShell transcript start"]
    lines += [f"PS> Set-Secret -Name s{n} -Secret {s.value}" for n, s in enumerate(secrets)]
    transcript = tmp_path / "transcript.txt"
    transcript.write_bytes("\n".join(lines).encode("utf-16-le", "surrogatepass"))
    run = cli("scan", "--format", "json", "--secrets-file", secrets_file, transcript)
    assert run.code == 1
    found = {f["secret_id"]: f for f in json.loads(run.out)["findings"] if f["form"] == "utf16-le"}
    assert len(found) == len(secrets)
    for n in range(len(secrets)):
        finding = found[f"S{n + 1}"]
        head = f"PS> Set-Secret -Name s{n} -Secret "
        assert (finding["line"], finding["column"]) == (3 + n, len(head) + 1)
        assert f"{head}\u00abcanary:" in finding["excerpt"]
    clean = tmp_path / "clean.txt"
    clean.write_bytes("\n".join(lines[:2]).encode("utf-16-le"))
    assert cli("scan", "--secrets-file", secrets_file, clean).code == 0


@pytest.mark.parametrize("engine", ["ahocorasick", "hyperscan", "auto"])
def test_engine_option(cli, secrets_file, secrets, tmp_path, engine: str) -> None:
    if engine == "hyperscan":
        pytest.importorskip("hyperscan")
    log = tmp_path / "leaky.log"
    log.write_text(leaky_text(secrets), encoding="utf-8")
    run = cli("scan", "--engine", engine, "--format", "json", "--secrets-file", secrets_file, log)
    assert run.code == 1
    report = json.loads(run.out)
    if engine == "auto":  # a small input: building the automaton beats compiling
        engine = "ahocorasick"
    assert report["engine"] == engine
    assert len(report["findings"]) == len(secrets)


def test_auto_engine_follows_the_input_size(cli, secrets_file, secrets, tmp_path, monkeypatch):
    """``auto`` compiles hyperscan only when the input repays it (and when the size is not
    known, as for stdin); the automaton otherwise. Same findings either way."""
    pytest.importorskip("hyperscan")
    import leakcheck.engine as engine_module

    log = tmp_path / "leaky.log"
    log.write_text(leaky_text(secrets), encoding="utf-8")

    def engine_and_findings(*paths: object) -> tuple[str, list]:
        run = cli("scan", "--format", "json", "--secrets-file", secrets_file, *paths)
        report = json.loads(run.out)
        return report["engine"], [(f["secret_id"], f["form"]) for f in report["findings"]]

    small = engine_and_findings(log)
    assert small[0] == "ahocorasick"
    monkeypatch.setattr(engine_module, "AUTOMATON_BELOW_BYTES_PER_NEEDLE", 0)
    large = engine_and_findings(log)
    assert large[0] == "hyperscan" and sorted(large[1]) == sorted(small[1])
    monkeypatch.undo()
    stdin = io.TextIOWrapper(io.BufferedReader(Pipe(log.read_bytes())))
    monkeypatch.setattr(sys, "stdin", stdin)
    assert engine_and_findings("-") == large


def test_engine_hyperscan_unavailable_is_a_usage_error(cli, secrets_file, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "hyperscan", None)
    log = tmp_path / "x.log"
    log.write_text("x\n")
    run = cli("scan", "--engine", "hyperscan", "--secrets-file", secrets_file, log)
    one_error_line(run, "hyperscan", "not importable")


def test_json_secrets_file_with_a_pem_key(cli, canaries, tmp_path) -> None:
    pem, token = canaries("pem_private_key"), canaries("bearer")
    secrets_file = tmp_path / "secrets.json"
    secrets_file.write_text(
        json.dumps(
            [
                {"value": pem.value, "kind": "pem_private_key", "id": "deploy-key"},
                token.value,
            ]
        )
    )
    lines = pem.value.splitlines()
    log = tmp_path / "leaky.log"
    log.write_text(
        f"config: {json.dumps({'key': pem.value})}\n"  # JSON-escaped, newlines as \n
        f"fragment: {lines[2]}\n"  # one line of the body
        f"bearer: {token.value}\n"
    )
    run = cli("scan", "--format", "json", "--secrets-file", secrets_file, log, extra=(pem, token))
    assert run.code == 1
    report = json.loads(run.out)
    assert report["secrets"] == [
        {"id": "deploy-key", "kind": "pem_private_key"},
        {"id": "S2", "kind": "secret"},
    ]
    found = sorted((f["secret_id"], f["form"], f["line"]) for f in report["findings"])
    assert found == [("S2", "raw", 3), ("deploy-key", "json", 1), ("deploy-key", "line-3", 2)]


# --- usage errors -------------------------------------------------------------------------


def test_missing_secrets_file_option(cli, tmp_path) -> None:
    run = cli("scan", tmp_path)
    assert run.code == 2 and run.out == ""
    assert run.err.splitlines()[-1] == (
        "leakcheck: error: give --secrets-file FILE, --canaries-from REPORT, or both"
    )


def test_missing_path_argument(cli, secrets_file) -> None:
    run = cli("scan", "--secrets-file", secrets_file)
    assert run.code == 2 and run.out == ""
    assert run.err.splitlines()[-1] == (
        "leakcheck scan: error: the following arguments are required: PATH"
    )


def test_no_command(cli) -> None:
    run = cli()
    assert run.code == 2
    assert "scan" in run.out and "kinds" in run.out and "request-ids" in run.out


def test_canaries_from_is_given_once_per_report(cli) -> None:
    """The one design for several reports: the option repeated (a glob after one option
    would make the other reports PATHs, which scan refuses: tests/test_canaries_from.py)."""
    run = cli("scan", "--help")
    assert run.code == 0
    said = " ".join(run.out.split())
    assert "repeat it for several reports (one per shard of a sharded run)" in said
    assert "repeat it for several files" in said  # --secrets-file, the same way


def test_kinds_command(cli) -> None:
    run = cli("kinds")
    assert run.code == 0
    assert run.out.splitlines()[0].split()[:2] == ["bearer", "direct"]
    # which kinds a header cannot carry (a client refuses to encode them)
    by_kind = {line.split()[0]: line for line in run.out.splitlines()}
    assert by_kind["api_key"].endswith("(characters beyond ASCII: not for a header)")
    assert "beyond ASCII" not in by_kind["header_key"]
    assert "beyond ASCII" not in by_kind["bearer"]


@pytest.mark.parametrize(
    "name, content, fragments",
    [
        ("missing.txt", None, ["cannot read secrets file", "No such file or directory"]),
        ("a-directory", "DIR", ["cannot read secrets file", "Is a directory"]),
        (
            "latin1.txt",
            b"aGVsbG8gd29ybGQgdGhpcyBpcyBmaW5l\n\xe9t\xe9\n",
            ["not valid UTF-8 (line 2)"],
        ),
        (
            "powershell.txt",
            "ghp_Wd4Kx9Qm2Vt7Lp3Rz8Hn5Jc1Fb6Gs0Ya\r\n".encode("utf-16"),
            ["is UTF-16 (as Windows PowerShell 5 writes", "save it as UTF-8"],
        ),
        (
            "no-bom.txt",
            "ghp_Wd4Kx9Qm2Vt7Lp3Rz8Hn5Jc1Fb6Gs0Ya\n".encode("utf-16-le"),
            ["is UTF-16"],
        ),
        ("empty.txt", b"", ["holds no secret"]),
        ("blank.txt", b"\n   \n\t\n", ["holds no secret"]),
        ("empty.json", b"[]", ["holds no secret"]),
        ("bad.json", b'["abc",\n  oops]', ["not valid JSON (line 2, column 3)"]),
        ("object.json", b'{"value": "x"}', ["expected a JSON list"]),
        ("item.json", b'[{"kind": "bearer"}]', ["item 1: expected a string or an object"]),
    ],
    ids=lambda v: v if isinstance(v, str) and not v.startswith("[") else None,
)
def test_bad_secrets_files(cli, tmp_path, name, content, fragments) -> None:
    path = tmp_path / name
    if content == "DIR":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)
    log = tmp_path / "x.log"
    log.write_text("x\n")
    one_error_line(cli("scan", "--secrets-file", path, log), repr(str(path)), *fragments)


@pytest.mark.parametrize(
    "weak, fragment",
    [
        ("hunter2", "too short"),
        ("Password1234!", "too guessable"),  # long enough, but a dictionary word and digits
        ("aaaaaaaaaaaaaaaaaaaaaaaa", "too guessable"),
        ("qwertyuiopasdfghjkl", "too guessable"),
    ],
    ids=["short", "dictionary", "repeat", "keyboard"],
)
def test_weak_secret_is_rejected_without_its_value(cli, secrets, tmp_path, weak, fragment):
    path = tmp_path / "secrets.txt"
    path.write_text(f"{secrets[0].value}\n{weak}\n")
    log = tmp_path / "x.log"
    log.write_text("x\n")
    as_secret = Secret(weak, "secret", "weak", SecretClass.DIRECT)
    run = cli("scan", "--secrets-file", path, log, extra=(as_secret,))
    one_error_line(run, "secret 'S2' (kind secret", fragment)


# --- the console script -------------------------------------------------------------------


def console_script() -> Path:
    script = Path(sys.executable).parent / "leakcheck"
    if not script.exists():
        pytest.skip("the leakcheck console script is not installed next to this python")
    return script


def test_console_script_subprocess(secrets_file, secrets, tmp_path) -> None:
    script = console_script()
    log = tmp_path / "leaky.log"
    log.write_text(leaky_text(secrets), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    done = subprocess.run(
        [script, "scan", "--format", "json", "--secrets-file", secrets_file, "-", log],
        input=("from stdin: " + secrets[4].value + "\n").encode(),
        capture_output=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    self_scan(done.stdout, secrets, "stdout")
    self_scan(done.stderr, secrets, "stderr")
    assert done.returncode == 1, done.stderr.decode(errors="replace")
    report = json.loads(done.stdout)
    assert report["sources"] == 2
    assert [f["line"] for f in report["findings"] if f["source"] == "<stdin>"] == [1]
    assert len(report["findings"]) == len(secrets) + 1

    done = subprocess.run(
        [script, "scan", "--secrets-file", tmp_path / "nope.txt", log],
        capture_output=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stdout == b""
    assert done.stderr.decode().count("\n") == 1
    assert done.stderr.startswith(b"leakcheck: error: cannot read secrets file")
    assert b"Traceback" not in done.stderr

    done = subprocess.run(
        [script, "scan", "--secrets-file", secrets_file, tmp_path / "clean"],
        capture_output=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert done.returncode == 2  # missing path

    (tmp_path / "clean").write_text("clean\n")
    done = subprocess.run(
        [script, "scan", "--secrets-file", secrets_file, tmp_path / "clean"],
        capture_output=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0 and done.stderr == b""

    # request-ids: the same exit codes and one-line usage errors
    done = subprocess.run(
        [script, "request-ids", tmp_path / "leakcheck-1.json", tmp_path / "leakcheck-2.json"],
        capture_output=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr.decode().count("\n") == 1
    assert done.stderr.startswith(b"leakcheck: error: cannot read report ")
    assert b"leakcheck-1.json" in done.stderr and b"Traceback" not in done.stderr


def test_special_files_below_a_directory_are_named_not_opened(
    cli, secrets_file, secrets, tmp_path
) -> None:
    """A FIFO in a scanned directory would block the scan forever if opened; it is named
    on stderr instead. A FIFO named on the command line is read (`<(cmd)` is one)."""
    root = tmp_path / "artifacts"
    root.mkdir()
    os.mkfifo(root / "pipe")
    (root / "leaky.log").write_text(leaky_text(secrets), encoding="utf-8")

    def unblock_a_reader() -> None:  # should the scan open the FIFO after all: EOF it
        with contextlib.suppress(OSError):  # ENXIO: nobody is reading, as it should be
            os.close(os.open(root / "pipe", os.O_WRONLY | os.O_NONBLOCK))

    watchdog = threading.Timer(0.5, unblock_a_reader)
    watchdog.start()
    try:
        run = cli("scan", "--format", "json", "--secrets-file", secrets_file, root)
    finally:
        watchdog.cancel()
    assert run.code == 1
    assert json.loads(run.out)["sources"] == 1
    assert run.err == f"leakcheck: note: not read (a FIFO, socket or device): {root / 'pipe'}\n"

    named = tmp_path / "named"
    os.mkfifo(named)
    writer = threading.Thread(target=lambda: named.write_text(leaky_text(secrets)))
    writer.start()
    try:
        run = cli("scan", "--format", "json", "--secrets-file", secrets_file, named)
    finally:  # a writer still waiting for a reader is let go
        with contextlib.suppress(OSError):
            os.close(os.open(named, os.O_RDONLY | os.O_NONBLOCK))
        writer.join(timeout=0.5)
    assert not writer.is_alive()
    assert run.code == 1 and len(json.loads(run.out)["findings"]) == len(secrets)
    # its size is unknown (it may stream gigabytes): "auto" does not take the automaton
    if "hyperscan" in available_backends():
        assert json.loads(run.out)["engine"] == "hyperscan"


def test_a_directory_that_cannot_be_listed_is_an_error(
    cli, secrets_file, secrets, tmp_path, monkeypatch
) -> None:
    root = tmp_path / "artifacts"
    (root / "locked").mkdir(parents=True)
    (root / "leaky.log").write_text(leaky_text(secrets), encoding="utf-8")
    real = os.scandir

    def scandir(path):  # root runs the tests: chmod 000 would not stop it
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    run = cli("scan", "--format", "json", "--secrets-file", secrets_file, root)
    assert run.code == 2  # an error outranks the findings: the scan was incomplete
    report = json.loads(run.out)
    assert report["errors"] == [f"cannot list {root / 'locked'}: Permission denied"]
    assert len(report["findings"]) == len(secrets)
