"""``leakcheck scan``'s arguments as a newcomer gives them: ``--secrets-file`` repeated
(the last one alone was kept: the first file's token in the log, "clean", exit 0),
``--output`` naming a file it scans (the evidence replaced by the report, a second scan
then "clean"), standard input named twice, and one finding said as one."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from conftest import self_scan

from leakcheck import CanaryFactory, Secret
from leakcheck.cli import main

ONE = "ghp_Wd4Kx9Qm2Vt7Lp3Rz8Hn5Jc1Fb6Gs0Ya"
TWO = "xoxb-58Hq2Zr9Lm4Vt8Pb3Nw6Jc1Fd5GsK"
SECRETS = [Secret.from_user(ONE), Secret.from_user(TWO)]


def scan(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = main(["scan", *map(str, args)])
    out, err = capsys.readouterr()
    self_scan(out + err, SECRETS, "scan output")
    assert "Traceback" not in err
    return code, out, err


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path, Path]:
    one, two, log = tmp_path / "one.txt", tmp_path / "two.txt", tmp_path / "app.log"
    one.write_text(ONE + "\n")
    two.write_text(TWO + "\n")
    log.write_text(f"auth failed token={ONE}\nretry with {TWO}\n")
    return one, two, log


def test_every_secrets_file_is_searched_for(
    files: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    one, two, log = files
    code, out, err = scan(capsys, "--secrets-file", one, "--secrets-file", two, "--format",
                          "json", log)  # fmt: skip
    assert code == 1, err
    report = json.loads(out)
    # each file's first line is S1: the second file's is told apart by its number
    assert {f["secret_id"] for f in report["findings"]} == {"S1", "S1@2"}
    assert len(report["secrets"]) == 2
    # a file named twice is read once; either file alone finds its own secret only
    code, out, _ = scan(capsys, "--secrets-file", one, "--secrets-file", one, "--format",
                        "json", log)  # fmt: skip
    assert (code, len(json.loads(out)["secrets"])) == (1, 1)


def test_an_id_two_files_spell_out_is_refused(
    tmp_path: Path, files: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, _, log = files
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps([{"value": ONE, "id": "github"}]))
    second.write_text(json.dumps([{"value": TWO, "id": "github"}]))
    code, out, err = scan(capsys, "--secrets-file", first, "--secrets-file", second, log)
    assert (code, out) == (2, "")
    assert "an id that secrets file" in err and "gives too" in err


def test_the_output_cannot_be_a_file_it_scans(
    files: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    one, _, log = files
    before = log.read_bytes()
    code, out, err = scan(capsys, "--secrets-file", one, "-o", log, log)
    assert (code, out) == (2, "")
    assert "is also a PATH to scan" in err
    assert log.read_bytes() == before
    # elsewhere it is written, and one finding is said as one
    report = log.parent / "report.txt"
    code, _, err = scan(capsys, "--secrets-file", one, "-o", report, log)
    assert code == 1 and "leakcheck: 1 finding, report written to" in err


def test_standard_input_named_twice_is_one_source(
    files: tuple[Path, Path, Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    one, _, log = files
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(log.read_bytes())))
    code, out, _ = scan(capsys, "--secrets-file", one, "-", "-")
    assert code == 1
    assert "in 1 of 1 source " in out


def test_the_short_masked_head_the_lower_bound_leaves_out_is_reported_by_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A random token accepted early counts a lower bound of its bits: ``ix1N****``, a
    character that could begin a short word counting less, carries 14.9 bits there and
    23.8 in full. Its masked heads are searched with its class bits and a hit verified
    with the full estimate: reported by default, as with ``--full-estimate``."""
    from leakcheck.forms import head_bits

    token = "ix1NOEq7Vb2Lk9Rt4Wm8Zp3Hs6Fd0GcY"
    early, full = Secret.from_user(token), Secret.from_user(token, early=False)
    assert sum(head_bits(early)[:4]) < 23 <= sum(head_bits(full)[:4])
    secrets, log = tmp_path / "s.txt", tmp_path / "app.log"
    secrets.write_text(token + "\n")
    log.write_text(f"token {token[:4]}**** used\n")
    for options in ([], ["--full-estimate"]):
        code, out, _ = scan(capsys, "--secrets-file", secrets, *options, "--format", "json", log)
        assert code == 1, options
        assert [f["form"] for f in json.loads(out)["findings"]] == ["masked-head-4"], options


def test_a_token_given_as_an_argument_is_never_quoted_back(
    files: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """``--secrets-file $TOKEN`` (and ``--secret $TOKEN``, which argparse abbreviated to
    it) printed the token as the file it could not read; a token as a PATH or an extra
    argument was quoted too. An argument that names no file and looks like a credential
    is described; abbreviations are off."""
    one, _, log = files
    for argv in (
        ["scan", "--secrets-file", ONE, str(log)],
        ["scan", "--secret", ONE, str(log)],
        ["scan", "--secrets-file", str(one), ONE],
        ["kinds", ONE],
        ["scan", "--canaries-from", ONE, str(log)],
        ["review", "--dir", ONE],
        ["mcp", "--cwd", ONE, "--", sys.executable, "server.py"],
        ["mcp", "--arguments", ONE, "--", sys.executable, "server.py"],
    ):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse's own usage errors
            code = exc.code
        out, err = capsys.readouterr()
        self_scan(out + err, SECRETS, f"leakcheck {' '.join(argv[:2])}")
        assert ONE not in out + err and code == 2, (argv, out, err)
    assert main(["scan", "--secrets-file", ONE, str(log)]) == 2
    err = capsys.readouterr().err
    assert "an argument that names no file and looks like a credential" in err
    with pytest.raises(SystemExit):  # no abbreviation: --secret is no --secrets-file
        main(["scan", "--secret", str(one), str(log)])
    assert "unrecognized arguments: --secret" in capsys.readouterr().err


def test_a_misspelt_option_is_said_by_its_command_with_the_one_meant(
    files: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """``leakcheck scan --secret-file ...`` printed the top level's usage, with no word of
    the option meant (found by a newcomer)."""
    one, _, log = files
    with pytest.raises(SystemExit) as ended:
        main(["scan", "--secret-file", str(one), str(log)])
    err = capsys.readouterr().err
    assert ended.value.code == 2
    assert "usage: leakcheck scan " in err
    assert "unrecognized arguments: --secret-file (did you mean '--secrets-file'?)" in err


@pytest.mark.parametrize("listed", ['[{"value": ""}]', '[""]'])
def test_an_empty_json_secret_is_refused_as_too_short(
    tmp_path: Path, files: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str], listed: str
) -> None:
    """An empty value failed inside the strength estimate (zxcvbn's IndexError, a
    traceback and exit 1, which reads as "findings"): it is too short, a usage error."""
    secrets_file = tmp_path / "empty.json"
    secrets_file.write_text(listed)
    code, _, err = scan(capsys, "--secrets-file", secrets_file, files[2])
    assert code == 2
    assert "item 1" in err and "too short" in err


def test_an_unknown_key_of_a_json_item_is_refused_never_quoting_a_value(
    tmp_path: Path, files: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """A key other than "value", "kind" and "id" was ignored (a misspelt "kind" named the
    secret otherwise than meant). Refused; a short key is quoted, one that may be a secret
    pasted as a key is described, and a value is never quoted."""
    secrets_file = tmp_path / "extra.json"
    secrets_file.write_text(json.dumps([{"value": ONE, "extra": TWO}]))
    code, out, err = scan(capsys, "--secrets-file", secrets_file, files[2])
    shown = ONE in out + err or TWO in out + err
    assert (code, shown) == (2, False)
    assert "item 1: unknown key 'extra'; an item has only 'value', 'kind' and 'id'" in err
    secrets_file.write_text(json.dumps([{"value": ONE}, {"value": ONE + "x", TWO: 1}]))
    code, out, err = scan(capsys, "--secrets-file", secrets_file, files[2])
    shown = ONE in out + err or TWO in out + err
    assert (code, shown) == (2, False)
    assert f"item 2: unknown key a key of {len(TWO)} characters (not shown)" in err


def test_a_json_item_giving_a_key_twice_is_refused(
    tmp_path: Path, files: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """``{"value": A, "value": B}``: JSON keeps the last, and the first secret was never
    searched for, silently (found by a hunting helper)."""
    secrets_file = tmp_path / "twice.json"
    secrets_file.write_text(f'[{{"value": "{ONE}", "value": "{TWO}"}}]')
    code, out, err = scan(capsys, "--secrets-file", secrets_file, files[2])
    shown = ONE in out + err or TWO in out + err
    assert (code, shown) == (2, False)
    assert "has an object that gives the same key twice (only the last would count)" in err


def _usage_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own usage errors
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out + err


def test_an_invalid_choice_is_quoted_only_when_it_is_a_typo(
    files: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """argparse quoted an invalid choice whole: a passphrase (words, which the «opaque»
    rule passes) or a canary given as ``--format`` or ``--engine``, or as the command, was
    printed before any secret was read to mask it. A value is quoted when shorter than a
    piece of a secret, or a typo of a choice shorter than any secret; else its length is
    said, and the choices listed."""
    one, _, log = files
    passphrase = "mauve Quokka; ate 7 burritos & 19 kiwis @dawn?"
    canary = CanaryFactory(3, namespace="choices", announce=False).secret("bearer").value
    for value in (passphrase, canary):
        for argv, choices in (
            (["scan", "--secrets-file", str(one), "--format", value, str(log)], "json, sarif"),
            (["scan", "--secrets-file", str(one), "--engine", value, str(log)], "auto, "),
            ([value, "--format", "json"], "scan, "),
        ):
            code, said = _usage_error(capsys, argv)
            quoted = value in said or value[:12] in said
            described = f"(a value of {len(value)} characters, not shown); choose from" in said
            assert (code, quoted, described) == (2, False, True)
            assert choices in said
    for typo in ("jsno", "yaml", "Sarf"):
        code, said = _usage_error(capsys, ["scan", "--format", typo, str(log)])
        assert code == 2 and f"invalid choice: '{typo}'" in said
    code, said = _usage_error(capsys, ["scan", "--engine", "hyperscna", str(log)])
    assert code == 2 and "invalid choice: 'hyperscna'" in said


def test_an_unknown_option_with_a_value_taken_for_a_path_never_shows_the_value(
    files: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """``--tokn="<passphrase>"`` after the options is a PATH to argparse; its "no such
    file" quoted the passphrase whole (found by a reviewing helper)."""
    one, _, log = files
    passphrase = "correct horse battery staple"
    code, out, err = scan(capsys, "--secrets-file", one, f"--tokn={passphrase}", log)
    assert (code, passphrase in out + err) == (2, False)
    assert (
        "nor an option of this command: --tokn= (a value of 28 characters, not shown)" in out + err
    )
