"""A usage error of ``leakcheck scan`` and ``leakcheck review`` names a path, an id or a
kind: each is masked with every secret known when it is said, those of a secrets file read
up to its bad line included, and a value that looks like a key and names nothing is
described, never quoted (found by a hunting helper, issue 13's trust items)."""

from __future__ import annotations

import json
import os
import secrets as random_secrets
from pathlib import Path

import pytest
from test_cli import no_echo

from leakcheck import Secret
from leakcheck.cli import main


def _token() -> str:
    return random_secrets.token_urlsafe(24)


@pytest.fixture
def token() -> Secret:
    return Secret.from_user(_token(), kind="secret", id="token")


def under_a_key(tmp_path: Path, token: Secret, name: str, text: str) -> Path:
    """A file ``name`` holding ``text``, in a directory named after ``token``."""
    folder = tmp_path / f"dir_{token.value}"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(text)
    return folder / name


def json_secrets(tmp_path: Path, items: list[dict[str, str]]) -> Path:
    path = tmp_path / "secrets.json"
    path.write_text(json.dumps(items))
    return path


def secrets_file(tmp_path: Path, token: Secret, name: str = "secrets.txt") -> Path:
    path = tmp_path / name
    path.write_text(token.value + "\n")
    return path


def run(capsys: pytest.CaptureFixture[str], known: list[Secret], *argv: str | Path) -> str:
    """``main(argv)``'s one error line, checked for every form and piece of ``known``."""
    __tracebackhide__ = True
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    no_echo(out + err, known, "the output")
    assert "Traceback" not in err
    assert code == 2, (code, out, err)
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("leakcheck: error: "), err
    return lines[0]


def test_a_second_secrets_file_under_a_directory_named_after_the_first_secret(
    tmp_path: Path, token: Secret, capsys: pytest.CaptureFixture[str]
) -> None:
    first = secrets_file(tmp_path, token, "first.txt")
    bad = under_a_key(tmp_path, token, "bad.txt", "bad\x01line\n")
    (tmp_path / "app.log").write_text("nothing\n")
    line = run(capsys, [token], "scan", "--secrets-file", first, "--secrets-file", bad,
               tmp_path / "app.log")  # fmt: skip
    assert "line 1: a control character" in line and "\u00abcanary:secret:" in line


def test_a_bad_line_after_a_secret_in_the_same_file(
    tmp_path: Path, token: Secret, capsys: pytest.CaptureFixture[str]
) -> None:
    path = under_a_key(tmp_path, token, "secrets.txt", f"{token.value}\nbad\x01line\n")
    line = run(capsys, [token], "scan", "--secrets-file", path, tmp_path)
    assert "line 2: a control character" in line and "\u00abcanary:secret:" in line


def test_an_id_made_of_a_piece_of_an_earlier_secret(
    tmp_path: Path, token: Secret, capsys: pytest.CaptureFixture[str]
) -> None:
    # the weak second value is refused, and its id, a note with the first secret's head
    # in it, was quoted raw: no masker knew the first secret yet
    listed = [{"value": token.value, "id": "one"},
              {"value": "hunter2hunter2", "id": f"note_{token.value[:12]}"}]  # fmt: skip
    path = json_secrets(tmp_path, listed)
    line = run(capsys, [token], "scan", "--secrets-file", path, tmp_path)
    assert "too guessable" in line


def test_an_id_that_looks_like_a_key_is_a_usage_error(
    tmp_path: Path, token: Secret, capsys: pytest.CaptureFixture[str]
) -> None:
    other = Secret.from_user(_token(), kind="secret", id="other")
    path = json_secrets(tmp_path, [{"value": token.value, "id": "one"},
                                   {"value": other.value, "id": token.value}])  # fmt: skip
    line = run(capsys, [token, other], "scan", "--secrets-file", path, tmp_path)
    assert "item 2: a secret's id of 32 characters looks like a key" in line


def test_a_token_given_as_a_kind_is_refused_never_shown(
    tmp_path: Path, token: Secret, capsys: pytest.CaptureFixture[str]
) -> None:
    kind = Secret.from_user(_token(), kind="secret", id="kind")
    path = json_secrets(tmp_path, [{"value": token.value, "id": "one", "kind": kind.value}])
    line = run(capsys, [token, kind], "scan", "--secrets-file", path, tmp_path)
    assert "its 'kind' must be a name" in line and "32 characters" in line
    # a kind that is a name is taken, and printed in the mask labels
    path.write_text(json.dumps([{"value": token.value, "id": "one", "kind": "github_token"}]))
    (tmp_path / "app.log").write_text(f"token {token.value}\n")
    assert main(["scan", "--secrets-file", str(path), str(tmp_path / "app.log")]) == 1
    assert "\u00abcanary:github_token:raw\u00bb" in capsys.readouterr().out


def test_output_that_is_an_input_is_said_masked(
    tmp_path: Path, token: Secret, capsys: pytest.CaptureFixture[str]
) -> None:
    ok = under_a_key(tmp_path, token, "ok.txt", token.value + "\n")
    line = run(capsys, [token], "scan", "--secrets-file", ok, "-o", ok, ok)
    assert "is also a PATH to scan" in line and "\u00abcanary:secret:" in line


def test_an_unwritable_report_path_that_looks_like_a_key(
    tmp_path: Path, token: Secret, capsys: pytest.CaptureFixture[str]
) -> None:
    path = secrets_file(tmp_path, token)
    (tmp_path / "app.log").write_text("nothing\n")
    unknown = Secret.from_user(f"{_token()}/{_token()}", kind="secret", id="unknown")
    line = run(capsys, [token, unknown], "scan", "--secrets-file", path, "-o", unknown.value,
               tmp_path / "app.log")  # fmt: skip
    assert "cannot write report (a path that looks like a credential: not quoted)" in line


def test_review_from_a_subdirectory_names_the_rootdir_masked(
    tmp_path: Path, token: Secret, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    root = tmp_path / f"repo_{token.value}"
    (root / ".leakcheck").mkdir(parents=True)
    (root / "sub").mkdir()
    path = secrets_file(tmp_path, token)
    monkeypatch.chdir(root / "sub")
    assert main(["review", "--secrets-file", str(path), "--reject-all"]) == 0
    out, err = capsys.readouterr()
    no_echo(out + err, [token], "the output")
    assert "leakcheck review: reviewing '" in err and "\u00abcanary:secret:" in err


def test_a_bad_first_secrets_file_is_masked_with_the_files_after_it(
    tmp_path: Path, token: Secret, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = under_a_key(tmp_path, token, "nul.txt", "bad\x00line\n")
    later = secrets_file(tmp_path, token, "later.txt")
    line = run(capsys, [token], "scan", "--secrets-file", bad, "--secrets-file", later,
               later)  # fmt: skip
    assert "a control character" in line and "\u00abcanary:secret:" in line


def test_output_that_would_replace_a_file_inside_a_scanned_directory(
    tmp_path: Path, token: Secret, capsys: pytest.CaptureFixture[str]
) -> None:
    secrets = secrets_file(tmp_path, token)
    scanned = tmp_path / "in" / "logs"
    scanned.mkdir(parents=True)
    evidence = scanned / "app.log"
    evidence.write_text(f"token {token.value}\n")
    line = run(capsys, [token], "scan", "--secrets-file", secrets, "-o", evidence,
               tmp_path / "in")  # fmt: skip
    assert "is also in a PATH to scan" in line
    assert token.value in evidence.read_text()  # the evidence is still there
    # a new report inside a scanned directory replaces nothing: written
    report = scanned / "report.txt"
    assert (
        main(["scan", "--secrets-file", str(secrets), "-o", str(report), str(tmp_path / "in")]) == 1
    )
    capsys.readouterr()
    assert report.exists()


def test_output_that_would_replace_the_secrets_file(
    tmp_path: Path, token: Secret, capsys: pytest.CaptureFixture[str]
) -> None:
    secrets = secrets_file(tmp_path, token)
    (tmp_path / "app.log").write_text("nothing\n")
    line = run(capsys, [token], "scan", "--secrets-file", secrets, "-o", secrets,
               tmp_path / "app.log")  # fmt: skip
    assert "is a --secrets-file" in line
    assert secrets.read_text() == token.value + "\n"


def test_a_report_path_is_described_without_the_advice_for_a_secret(
    tmp_path: Path, token: Secret, capsys: pytest.CaptureFixture[str]
) -> None:
    secrets = secrets_file(tmp_path, token)
    (tmp_path / "app.log").write_text("nothing\n")
    unknown = Secret.from_user(_token(), kind="secret", id="unknown")
    out = tmp_path / unknown.value / "report.json"
    line = run(capsys, [token, unknown], "scan", "--secrets-file", secrets, "-o", out,
               tmp_path / "app.log")  # fmt: skip
    assert "(a path that looks like a credential: not quoted)" in line
    assert "put it in a file" not in line


@pytest.mark.parametrize("given", [True, False], ids=["secrets file", "none"])
def test_review_errors_name_a_pending_file_named_after_a_key_masked(
    tmp_path: Path, token: Secret, capsys: pytest.CaptureFixture[str], given: bool
) -> None:
    # masked with --secrets-file's secrets, and «opaque» (looks like a key) without
    pending = tmp_path / "rv" / ".leakcheck" / "pending"
    pending.mkdir(parents=True)
    (pending / f"{token.value}.json").write_text("{bad")
    secrets = ["--secrets-file", secrets_file(tmp_path, token)] if given else []
    line = run(capsys, [token], "review", "--dir", tmp_path / "rv", *secrets, "--reject-all")
    # (either label: the name is opaque before the secrets mask what is left)
    assert "is not valid JSON" in line and f"pending{os.sep}\u00ab" in line


def test_a_path_holding_the_hex_of_an_earlier_secret_is_masked(
    tmp_path: Path, token: Secret, capsys: pytest.CaptureFixture[str]
) -> None:
    # (every value read is a mask, in every form: not only those whose characters show)
    folder = tmp_path / token.value.encode().hex()
    folder.mkdir()
    (folder / "secrets.txt").write_text(f"{token.value}\nbad\x01line\n")
    line = run(capsys, [token], "scan", "--secrets-file", folder / "secrets.txt", tmp_path)
    assert "line 2: a control character" in line and "\u00abcanary:secret:hex" in line
