"""``--pastebin=all`` sends what pytest printed to a paste service: the copy is masked.

pytest's pastebin plugin tees every write of the terminal into a file, uploaded at the
session's end. Whether that copy is taken before or after the plugin's masking of the
terminal depends on the order the two wrap the terminal's ``write``: a copy taken before
would upload what the terminal net alone masks (an interrupt banner), unmasked, to a
public service. The upload is replaced here by a write to a file; the canary is rebuilt
from the seed and the test id, and searched with the independent oracle.
"""

from __future__ import annotations

import pytest
from leak_oracle import hits
from test_self_leak import INTERRUPT  # a test interrupted with its canary in the message

from leakcheck import CanaryFactory, Secret

pytest_plugins = ["pytester"]

SEED = "pastebin-1"


CONFTEST = """
import pathlib

import _pytest.pastebin


def paste(contents):
    (pathlib.Path(__file__).parent / "pasted.bin").write_bytes(contents)
    return "https://paste.invalid/1"


_pytest.pastebin.create_new_paste = paste
"""

#: the terminal net switched off in the inner run (the check has teeth)
UNMASKED_TERMINAL = """
from leakcheck.pytest_plugin.session import PluginSession

PluginSession.mask_terminal = lambda self: None
"""


def _pasted(pytester: pytest.Pytester, conftest: str) -> tuple[bytes, bytes]:
    pytester.makepyfile(test_paste=INTERRUPT)
    pytester.makeconftest(conftest)
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "-p", "no:cacheprovider", "-W", "ignore::pytest.PytestWarning",
        "-W", "ignore::DeprecationWarning", "--pastebin=all", f"--leakcheck-seed={SEED}",
    )  # fmt: skip
    pasted = (pytester.path / "pasted.bin").read_bytes()
    return pasted, "\n".join(result.outlines).encode("utf-8", "surrogatepass")


def _token() -> list[Secret]:  # (the canary, rebuilt: never printed)
    return [CanaryFactory(SEED, namespace="test_paste.py::test_interrupt").secret("bearer")]


def test_the_pasted_copy_is_masked(pytester: pytest.Pytester) -> None:
    pasted, shown = _pasted(pytester, CONFTEST)
    assert b"interrupted with" in pasted and b"KeyboardInterrupt" in pasted
    assert b"\xc2\xabcanary:bearer:" in pasted  # the label the terminal showed, pasted
    found = hits(pasted, _token()) + hits(shown, _token())
    assert not found


def test_without_the_terminal_net_the_paste_shows_it(pytester: pytest.Pytester) -> None:
    pasted, _ = _pasted(pytester, CONFTEST + UNMASKED_TERMINAL)
    assert hits(pasted, _token())
