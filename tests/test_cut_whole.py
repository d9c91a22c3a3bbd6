"""leakcheck's own cuts never leave a piece of a secret's encoded form.

Where leakcheck shortens a text before its report masks it (an MCP server's stderr line
and first answer line, a schema validator's message, a long dict key in a finding's
path, a spawned program's name), a run of credential characters that the cut falls
inside is shown ``«opaque»``: the hex or base64 of a token cut there is a piece that no
masking needle matches (``...word w6c63622e33466e694c50614b783875`` was a bearer token's
hex, cut at 200 characters). Assertions compare booleans and counts, never a value.
"""

from __future__ import annotations

import base64
import os
import sys

import pytest

from leakcheck import CanaryFactory
from leakcheck.findings import OPAQUE_LABEL, cut_whole

TOKEN = CanaryFactory(9, namespace="cut", announce=False).secret("bearer").value
HEX = TOKEN.encode().hex()
B64 = base64.b64encode(TOKEN.encode()).decode()


def _pieces(text: str, size: int = 8) -> int:
    """How many ``size``-character pieces of the token's hex or base64 (after the fixed
    ``lcb.``) ``text`` holds."""
    shown = 0
    for spelled in (HEX[8:], B64[6:-2]):
        shown += sum(spelled[i : i + size] in text for i in range(len(spelled) - size + 1))
    return shown


@pytest.mark.parametrize("encoded", [HEX, B64], ids=["hex", "base64"])
@pytest.mark.parametrize("keep_end", [False, True], ids=["head", "tail"])
def test_a_run_cut_is_opaque(encoded: str, keep_end: bool) -> None:
    text = "word " * 34 + encoded + " end" if not keep_end else "start " + encoded + " word" * 34
    shown = cut_whole(text, 200, keep_end=keep_end)
    assert _pieces(text) and not _pieces(shown)
    assert OPAQUE_LABEL in shown
    assert shown.startswith("word word") if not keep_end else shown.endswith("word word")


def test_a_cut_between_words_is_pytests_own() -> None:
    text = "word " * 100
    assert cut_whole(text, 200) == text[:200]
    assert cut_whole(text, 200, keep_end=True) == text[-200:]
    assert cut_whole("short", 200) == "short"


def test_an_mcp_servers_stderr_and_answer_lines_are_cut_whole() -> None:
    from leakcheck.audit.server import _first_text, _stderr_tail

    line = "word " * 34 + HEX + " end"
    assert not _pieces(_stderr_tail("starting\n" + line + "\n"))
    answer = {"content": [{"type": "text", "text": line}], "isError": True}
    assert not _pieces(_first_text(answer))


def test_a_schema_validators_message_is_cut_whole() -> None:
    from leakcheck.audit.arguments import SchemaProblem, check_input_schema

    schema = {"type": "object", "properties": {"x": {"type": "w" * 140 + HEX}}}
    with pytest.raises(SchemaProblem) as caught:
        check_input_schema("t", schema)
    assert "not a valid JSON Schema" in str(caught.value)
    assert not _pieces(str(caught.value))


def test_a_long_key_in_a_path_is_cut_whole() -> None:
    from leakcheck.serialize.objects import child_path

    key = ("note " * 40)[:170] + HEX + " end"
    shown = child_path("$", key)
    assert "chars)" in shown and not _pieces(shown)


def test_a_programs_name_is_cut_whole() -> None:
    from leakcheck.plugins.process_sink import _program

    here = os.path.dirname(sys.executable)
    # (the name is one run of credential characters, cut: all of it is opaque)
    assert _program(os.path.join(here, "run-" + "h" * 36 + HEX)) == OPAQUE_LABEL
    assert _program(os.path.join(here, "run-helper")) == "run-helper"


def test_an_mcp_url_that_is_none_is_not_quoted(capsys: pytest.CaptureFixture[str]) -> None:
    from leakcheck.cli import main

    assert main(["mcp", "--url", f"ftp://h/?token={TOKEN}"]) == 2
    assert main(["mcp", "--url", TOKEN]) == 2
    err = capsys.readouterr().err
    assert "one starting ftp:" in err and "other text" in err
    assert TOKEN[4:12] not in err
