"""What pytest cuts in the middle is masked whole before the cut.

pytest shortens a long value where it shows it: an assertion's operands (the summary
line of a failed comparison: some 30 characters each), ``-l`` locals, bytes and a long
string inside a container (240 characters), the explanation of a comparison (640 characters
without ``-vv``). A form of a canary cut there leaves a piece no masking needle
matches: the masking windows cover the raw and escaped spellings, the decoding pass
decodes hex runs of 32 characters and base64 runs of 16 and more, and a cut leaves
fewer. ``'6c63622e5673...5694b6a67792e'`` showed a bearer token's last six characters in
hex. The inner suite cuts the hex and the base64 of its canaries on each of those
routes; the outer test searches the output for every 10-character piece of the random
part of those encodings. The same run with pytest's own functions back must show pieces:
the search has teeth.
"""

from __future__ import annotations

import base64

import pytest

from leakcheck import CanaryFactory, Secret

pytest_plugins = ["pytester"]

SEED = 20261207

INNER = """
import base64


def test_operands_hex(leakcheck):
    token = leakcheck.secret("bearer")
    assert token.encode().hex() == "0" * 10


def test_operands_base64(leakcheck):
    token = leakcheck.secret("api_key")
    assert base64.b64encode(token.encode()).decode()[5:] == "0" * 10


def test_locals_cut(leakcheck):
    token = leakcheck.secret("bearer")
    text = "x" * 97 + token.encode().hex() + "y" * 300
    data = {"note": "x" * 100 + base64.b64encode(token.encode()).decode() + "y" * 300}
    assert not text and data


def test_locals_bytes_cut(leakcheck):
    token = leakcheck.secret("api_key")
    blob = ("x" * 97 + token.encode().hex() + "y" * 300).encode()
    assert not blob


def test_explanation_cut(leakcheck):
    token = leakcheck.secret("bearer")
    left = "\\n".join(["line 1", "line 2", "p" * 550 + token.encode().hex() + "q" * 60])
    assert left == "other"


def test_identical_head_skipped(leakcheck):
    token = leakcheck.secret("bearer")
    shown = token.encode().hex()
    assert "id=" + shown + "&ok" == "id=" + shown + "#failed"


def test_not_in(leakcheck):
    token = leakcheck.secret("api_key")
    body = "session=" + token.encode().hex() + "&debug=1&rest=" + "r" * 20
    assert "&debug=1&" not in body


def test_log_format_cut(leakcheck):
    import logging

    token = leakcheck.secret("bearer")
    logging.getLogger("app").warning("sending key=%s upstream", "w" * 20 + token.encode().hex())
    assert False


def test_log_msg_cut(leakcheck):
    import logging

    token = leakcheck.secret("bearer")
    logging.getLogger("app").warning("sending key=" + "w" * 20 + token.encode().hex())
    assert False


def test_locals_wrapped(leakcheck):
    token = leakcheck.secret("resource_id")
    blob = b"x" + token.encode("utf-16-le")
    assert not blob


def test_bytes_wrapped(leakcheck):
    token = leakcheck.secret("bearer")
    blob = b"p" * 15 + token.encode().hex().encode()
    assert [blob, 1] == [blob, 2]
"""

#: Puts pytest's own shortening back (the control run), and its log formatters' own
#: ``format`` (the plugin wraps them as the session starts, after a conftest's hook).
UNPATCHED = """
def pytest_sessionstart(session):
    from leakcheck.pytest_plugin.session import SESSION

    session.config.stash[SESSION].unmask_shortened()


def pytest_collection_finish(session):
    logging_plugin = session.config.pluginmanager.get_plugin("logging-plugin")
    for formatter in (logging_plugin.formatter, logging_plugin.log_cli_handler.formatter):
        vars(formatter).pop("format", None)
"""

TESTS = {
    "test_operands_hex": "bearer",
    "test_operands_base64": "api_key",
    "test_locals_cut": "bearer",
    "test_locals_bytes_cut": "api_key",
    "test_explanation_cut": "bearer",
    "test_identical_head_skipped": "bearer",
    "test_not_in": "api_key",
}
#: Cut only under ``-v``: a long ``bytes`` in the full diff, wrapped 4 bytes a line.
VERBOSE_TESTS = {"test_bytes_wrapped": "bearer"}
#: A format that cuts the message: the captured log section and the live log show it so
#: (a run of its own: the live log changes how pytest explains the other failures).
LOG_TESTS = {"test_log_format_cut": "bearer"}
LOG_FORMAT = ("-o", "log_cli=true", "--log-format=%(levelname)s %(message).60s",
              "--log-cli-format=%(message).60s", "--log-cli-level=WARNING")  # fmt: skip
#: The same cut on the record's ``msg`` (a message made before it is logged).
LOG_MSG_TESTS = {"test_log_msg_cut": "bearer"}
LOG_MSG_FORMAT = ("-o", "log_cli=true", "--log-format=%(levelname)s %(msg).60s",
                  "--log-cli-format=%(msg).60s", "--log-cli-level=WARNING")  # fmt: skip
PIECE = 10


def _encodings(secret: Secret) -> list[str]:
    """The hex and base64 spellings of ``secret``'s random part (its fixed prefix left
    out), at the three byte offsets base64 can meet it at."""
    data = secret.value.encode()
    random_part = data[4:]  # ("lcb." and "lck_": the kinds' fixed prefixes)
    spelled = [random_part.hex(), random_part.hex().upper()]
    for offset in range(3):
        core = base64.b64encode(b"\0" * offset + data).decode()
        spelled.append(core[(8 * (offset + 4) + 5) // 6 + 1 : -3])
    return spelled


def _pieces_shown(text: str, secret: Secret) -> int:
    """How many PIECE-character pieces of ``secret``'s encodings ``text`` holds."""
    shown = 0
    for spelled in _encodings(secret):
        shown += sum(spelled[i : i + PIECE] in text for i in range(len(spelled) - PIECE + 1))
    return shown


def _output(pytester: pytest.Pytester, *args: str, patched: bool, tests: dict[str, str]) -> str:
    """What the inner suite's ``tests`` print, with pytest's own shortening back unless
    ``patched``."""
    pytester.makepyfile(test_cut=INNER)
    if not patched:
        pytester.makeconftest(UNPATCHED)
    with pytest.MonkeyPatch.context() as env:
        # (pytest cuts no explanation on CI: the inner run is a developer's)
        env.delenv("CI", raising=False)
        env.delenv("BUILD_NUMBER", raising=False)
        result = pytester.runpytest_subprocess(
            "-p", "no:randomly", "-p", "no:cacheprovider", "-l", f"--leakcheck-seed={SEED}",
            "-k", " or ".join(tests), *args,
        )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    text = "\n".join(result.outlines + result.errlines)
    for name in tests:
        assert f"_ {name} _" in text, f"the run shows no failure of {name}"
    return text


def _canary(name: str, kind: str) -> Secret:
    return CanaryFactory(SEED, namespace=f"test_cut.py::{name}", announce=False).nth(kind, 1)


def _run(
    pytester: pytest.Pytester, *args: str, patched: bool, tests: dict[str, str]
) -> dict[str, int]:
    text = _output(pytester, *args, patched=patched, tests=tests)
    return {name: _pieces_shown(text, _canary(name, kind)) for name, kind in tests.items()}


def test_what_pytest_cuts_shows_no_piece(pytester: pytest.Pytester) -> None:
    shown = _run(pytester, patched=True, tests=TESTS)
    assert shown == dict.fromkeys(TESTS, 0)


def test_pytest_alone_shows_pieces_at_each_cut(pytester: pytest.Pytester) -> None:
    shown = _run(pytester, patched=False, tests=TESTS)
    assert all(shown.values()), shown


@pytest.mark.parametrize("patched", [True, False], ids=["patched", "pytest alone"])
@pytest.mark.parametrize(
    ("args", "tests"),
    [(("-v",), VERBOSE_TESTS), (LOG_FORMAT, LOG_TESTS), (LOG_MSG_FORMAT, LOG_MSG_TESTS)],
    ids=["-v", "log", "log msg"],
)
def test_cut_under_options(
    pytester: pytest.Pytester, args: tuple[str, ...], tests: dict[str, str], patched: bool
) -> None:
    shown = _run(pytester, *args, patched=patched, tests=tests)
    assert all(bool(n) is not patched for n in shown.values()), shown


def test_restore_puts_the_functions_back() -> None:
    """(This session's plugin has its own patch in place: ``restore`` puts back what
    was there, and a pytest without one gets its own functions.)"""
    import reprlib

    from _pytest._code import code
    from _pytest._io import pprint, saferepr
    from _pytest.assertion import compare_text, rewrite, truncate

    from leakcheck.pytest_plugin.shortened import ShortenedMasking

    patched = [
        (saferepr, "_ellipsize"),
        (saferepr, "safeformat"),
        (code, "safeformat"),
        (truncate, "materialize_with_truncation"),
        (compare_text, "_diff_text"),
        (pprint, "_wrap_bytes_repr"),
        (rewrite, "_saferepr"),
        (rewrite, "_format_assertmsg"),
    ]

    def there() -> tuple[object, ...]:
        own = vars(saferepr.SafeRepr).get("repr_str")
        return (*(getattr(owner, name) for owner, name in patched), own)

    before = there()
    shortened = ShortenedMasking(str.upper)
    shortened.install()
    during = there()
    # (every function it patches is in the list: each is another while installed)
    assert all(a is not b for a, b in zip(during[:-1], before[:-1], strict=True))
    assert len(shortened._saved) == len(patched) + 1  # (and SafeRepr.repr_str)
    shown = saferepr.saferepr("ab" * 200, maxsize=20)
    assert shown.startswith("'ABABABA...") and len(shown) <= 20
    shortened.restore()
    assert there() == before
    if before[-1] is None:
        assert saferepr.SafeRepr.repr_str is reprlib.Repr.repr_str
    with pytest.MonkeyPatch.context() as patch:  # pytest's own, whatever is in place
        if "repr_str" in vars(saferepr.SafeRepr):
            patch.delattr(saferepr.SafeRepr, "repr_str")
        shortened.install()
        shortened.restore()
        assert "repr_str" not in vars(saferepr.SafeRepr)


def test_a_difference_a_mask_swallows_still_shows_its_lines(pytester: pytest.Pytester) -> None:
    """``"prefix " * 10 + token + "A-tail" == ... + "B-tail"``: both sides masked are one
    label (a mask swallows the credential characters next to a form), and the diff of the
    masked texts showed no difference at all. The texts are diffed as they are then, never
    cut at an identical head or tail, each line masked whole: the - and + lines show."""
    pytester.makepyfile(
        """
        def test_glued(leakcheck):
            token = leakcheck.secret("bearer")
            assert "prefix " * 10 + token + "A-tail" == "prefix " * 10 + token + "B-tail"
        """
    )
    with pytest.MonkeyPatch.context() as env:
        env.delenv("CI", raising=False)
        env.delenv("BUILD_NUMBER", raising=False)
        result = pytester.runpytest_subprocess("-p", "no:randomly", f"--leakcheck-seed={SEED}")
    text = "\n".join(result.outlines)
    secret = CanaryFactory(SEED, namespace="test_glued.py::test_glued", announce=False).nth(
        "bearer", 1
    )
    assert "E         - prefix" in text and "E         + prefix" in text
    assert "Skipping" not in text
    assert secret.value[4:12] not in text and not _pieces_shown(text, secret)


@pytest.mark.parametrize("patched", [True, False], ids=["patched", "pytest alone"])
def test_a_local_that_pprint_wraps_under_vv(pytester: pytest.Pytester, patched: bool) -> None:
    """``-l -vv`` shows locals with the standard library's ``pprint``, which wraps a long
    ``bytes``: a token's UTF-16-LE bytes at an odd offset left a line of its characters
    (between ``\\x00`` escapes) that no window matched (found by a fuzzing helper)."""
    text = _output(pytester, "-vv", patched=patched, tests={"test_locals_wrapped": "x"})
    value = _canary("test_locals_wrapped", "resource_id").value
    narrowed = text.replace("\\x00", "")
    shown = sum(value[i : i + 8] in narrowed for i in range(5, len(value) - 7))
    assert bool(shown) is not patched, shown


@pytest.mark.parametrize(
    ("fmt", "style", "cuts"),
    [("%(message).60s", "%", True), ("%(msg).30s", "%", True), ("%(args)-.20s", "%", True),
     ("{msg:.30}", "{", True), ("{message!s:>10.40}", "{", True), ("%(message)s", "%", False),
     ("%(msg)s %(name).10s", "%", False), ("{msg} {name:.5}", "{", False),
     ("$message", "$", False)],
)  # fmt: skip
def test_a_format_that_cuts_the_message_is_told(fmt: str, style: str, cuts: bool) -> None:
    import logging

    from leakcheck.pytest_plugin.shortened import cuts_message

    assert cuts_message(logging.Formatter(fmt, style=style)) is cuts  # type: ignore[arg-type]


OWN = """
def test_own_text(leakcheck):
    token = leakcheck.secret("bearer")
    assert token == "nothing"


def test_own_short(leakcheck):
    password = leakcheck.register("Zq8#vLp2xW9t", kind="password")
    assert password == "nothing"


def test_own_set(leakcheck):
    token = leakcheck.secret("bearer")
    assert {token, "a"} == {"a"}


def test_own_in(leakcheck):
    token = leakcheck.secret("bearer")
    assert "zzz" in f"Bearer {token}"


def test_own_call(leakcheck):
    token = leakcheck.secret("bearer")
    assert token.startswith("zz")


def test_own_message(leakcheck):
    token = leakcheck.secret("bearer")
    assert not token, f"expected no token, got {token}"
"""


@pytest.mark.parametrize("verbosity", ["-q", "-v", "-vv"])
def test_a_tests_own_failed_comparison_is_no_leak_at_any_verbosity(
    pytester: pytest.Pytester, verbosity: str
) -> None:
    """A test comparing its own secret fails on its assertion, not on a leak verdict: its
    explanation is masked whole. The summary line shows each operand's ``repr`` cut only
    when long (never under ``-vv``), and a set comparison names the extra items: a short
    secret, any secret under ``-vv``, a set's items, reached the AssertionError raw, and
    the same failure was a leak verdict at one verbosity and not at another (found by a
    hunting helper). So did an assertion with no comparison explanation (``in``, a call's
    result: ``where ... = '<token>'.startswith``) and a custom message (found by
    another)."""
    pytester.makepyfile(test_own=OWN)
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "-p", "no:cacheprovider", f"--leakcheck-seed={SEED}", verbosity,
        "-rA",
    )  # fmt: skip
    text = "\n".join(result.outlines + result.errlines)
    result.assert_outcomes(failed=6)
    assert "[LEAK]" not in text and ", 0 with forbidden hits" in text
    assert text.count("AssertionError: ") >= 6
    names = ("test_own_text", "test_own_set", "test_own_in", "test_own_call", "test_own_message")
    tokens = [
        CanaryFactory(SEED, namespace=f"test_own.py::{name}", announce=False).nth("bearer", 1)
        for name in names
    ]
    shown = [secret.value[4:16] in text for secret in tokens] + ["Zq8#vLp2xW9t" in text]
    assert shown == [False] * 6
