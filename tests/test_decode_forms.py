"""The decoding pass's forms (issue 14): each with a catching and a non-catching sample, in
a small text (decoded whole) and in keyed decoding (what a large input gets).

Nothing here prints a secret: assertions name forms and kinds only.
"""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import logging
import random
import re
import string
import urllib.parse

import pytest

from leakcheck import Scanner, Secret
from leakcheck.canaries import CanaryFactory, estimate_bits
from leakcheck.detect import KEYED_FROM_BYTES
from leakcheck.forms import FRAGMENT_BITS, fragment_forms, head_bits

#: how each text is searched: decoded whole (small), keyed (as past KEYED_FROM_BYTES)
MODES = ("whole", "keyed")


def scanner(secrets: list[Secret], mode: str, *, decode: bool = True) -> Scanner:
    size = KEYED_FROM_BYTES if mode == "keyed" else None
    made = Scanner(secrets, decode=decode, backend="ahocorasick", input_bytes=size)
    assert made._keyed is (decode and mode == "keyed")
    return made


def forms_of(secret: Secret, found: list) -> list[str]:
    return [f.form for f in found if f.secret_id == secret.id]


def whole(forms: list[str]) -> list[str]:
    """Forms that spell the whole secret (not a prefix, suffix or masked piece)."""
    pieces = ("prefix-", "suffix-", "masked-", "line-", "base64-wrapped@", "fragment")
    return [f for f in forms if not f.rpartition(">")[2].startswith(pieces)]


def escape_all_but_alnum(value: str) -> str:
    """A percent-encoder that escapes every character but ASCII letters and digits, the
    unreserved ``-._~`` included, in lower case."""
    return "".join(
        c if c.isascii() and c.isalnum() else "".join(f"%{b:02x}" for b in c.encode())
        for c in value
    )


@pytest.fixture
def secret(canaries: CanaryFactory) -> Secret:
    return canaries("password")  # the hostile kind: "?#%[]\\" and non-ASCII


@pytest.fixture
def other(canaries: CanaryFactory) -> Secret:
    return canaries("api_key")


# --- percent-encoding: any escape of any character, either case ----------------------------


@pytest.mark.parametrize("mode", MODES)
def test_lowercase_percent_escaping_unreserved_too_is_found(
    secret: Secret, other: Secret, mode: str
) -> None:
    text = f"GET /cb?next={escape_all_but_alnum(secret.value)}&x=1 HTTP/1.1\n"
    assert "pct>raw" in forms_of(secret, scanner([secret, other], mode).scan(text))
    # not a one-layer needle: without decoding only pieces (if any) are found
    assert not whole(forms_of(secret, scanner([secret], mode, decode=False).scan(text)))
    # the other secret's encoding holds nothing of this one
    text = f"GET /cb?next={escape_all_but_alnum(other.value)}\n"
    assert not forms_of(secret, scanner([secret, other], mode).scan(text))


@pytest.mark.parametrize("mode", MODES)
def test_every_character_escaped_in_mixed_case_is_found(secret: Secret, mode: str) -> None:
    data = secret.value.encode()
    mixed = "".join(f"%{b:02x}" if i % 2 else f"%{b:02X}" for i, b in enumerate(data))
    assert whole(forms_of(secret, scanner([secret], mode).scan(f"u={mixed}\n")))
    # one byte changed: nothing
    broken = mixed[:-2] + ("00" if mixed[-2:] != "00" else "01")
    assert not whole(forms_of(secret, scanner([secret], mode).scan(f"u={broken}\n")))


# --- chains: base64url JSON in a JWT, base64 of JSON, percent of base64 --------------------


def jwt_with(claims: dict[str, object]) -> str:
    def segment(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).decode().rstrip("=")

    header = segment(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    return f"{header}.{segment(json.dumps(claims).encode())}.{segment(b'x' * 32)}"


@pytest.mark.parametrize("mode", MODES)
def test_a_token_in_a_jwt_payload_is_found(secret: Secret, other: Secret, mode: str) -> None:
    token = jwt_with({"sub": "svc", "upstream_token": secret.value, "exp": 1700000000})
    text = f"Authorization: Bearer {token}\n"
    found = forms_of(secret, scanner([secret, other], mode).scan(text))
    assert any(f.startswith("base64>json") for f in found), found
    other_token = jwt_with({"sub": "svc", "upstream_token": other.value})
    assert not forms_of(secret, scanner([secret], mode).scan(f"Bearer {other_token}\n"))


@pytest.mark.parametrize("mode", MODES)
def test_percent_of_base64_is_found(secret: Secret, mode: str) -> None:
    blob = urllib.parse.quote(base64.b64encode(secret.value.encode()).decode(), safe="")
    found = forms_of(secret, scanner([secret], mode).scan(f"GET /x?state={blob} 302\n"))
    assert any(f.startswith("pct>base64") for f in found), found
    blob = urllib.parse.quote(base64.b64encode(secret.value.encode()[1:]).decode(), safe="")
    assert not whole(forms_of(secret, scanner([secret], mode).scan(f"GET /x?state={blob}\n")))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "encode",
    [
        lambda v: "".join(f"\\u{ord(c):04x}" if ord(c) < 0x10000 else c for c in v),
        lambda v: "".join(f"&#{ord(c)};" for c in v),
        lambda v: "".join(f"\\x{b:02x}" for b in v.encode()),
    ],
    ids=["u-escapes", "html-numeric", "x-escapes"],
)
def test_escapes_of_every_character_are_found(secret: Secret, mode: str, encode) -> None:
    text = f'{{"note": "{encode(secret.value)}"}}\n'
    assert whole(forms_of(secret, scanner([secret], mode).scan(text)))
    text = f'{{"note": "{encode(secret.value[::-1])}"}}\n'
    assert not whole(forms_of(secret, scanner([secret], mode).scan(text)))


@pytest.mark.parametrize("mode", MODES)
def test_quoted_printable_is_found(secret: Secret, mode: str) -> None:
    import quopri

    body = quopri.encodestring(("x" * 70 + secret.value).encode()).decode()
    assert whole(forms_of(secret, scanner([secret], mode).scan(f"Content: {body}\n")))
    body = quopri.encodestring(("x" * 70 + secret.value[:-3]).encode()).decode()
    assert not whole(forms_of(secret, scanner([secret], mode).scan(f"Content: {body}\n")))


def test_keyed_decoding_skips_clean_text(secret: Secret) -> None:
    # a clean text: no key, no needle, no dense escapes: nothing is decoded
    keyed = scanner([secret], "keyed")
    text = b"GET /v1/tools?id=" + b"ab12" * 40 + b" HTTP/1.1 200\n" + b"%41" * 3 + b"\n"
    needles, keys = keyed._search(text)
    assert not needles and not keys
    assert keyed.scan(text) == []


# --- wrapped text ----------------------------------------------------------------------------


def rich_lines(message: str, width: int) -> str:
    """What rich's log handler (fastmcp's default) writes for one INFO record."""
    console = pytest.importorskip("rich.console")
    rich_logging = pytest.importorskip("rich.logging")
    out = io.StringIO()
    handler = rich_logging.RichHandler(
        console=console.Console(file=out, width=width, color_system=None, force_terminal=False)
    )
    log = logging.getLogger(f"leakcheck.test.rich.{width}")
    log.handlers, log.propagate = [handler], False
    log.setLevel(logging.INFO)
    log.info(message)
    return out.getvalue()


def password_of(length: int, seed: int) -> Secret:
    """A random password with the full strength estimate's bits: the test is about the
    rejoining of wrapped lines, not about the bits an early-accepted secret's fragments
    count (a lower bound of that estimate, longer fragments: tests/test_cli_startup.py)."""
    rng = random.Random(seed)
    alphabet = string.ascii_letters + string.digits + "!@#$%^&*-_.~+/=?"
    value = "".join(rng.choice(alphabet) for _ in range(length))
    accepted = Secret.from_user(value, id="pw", kind="password")
    return dataclasses.replace(accepted, bits=tuple(estimate_bits(value)), mask_bits=())


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("width", [70, 90, 110])
def test_a_percent_encoded_password_folded_by_rich_is_found(mode: str, width: int) -> None:
    secret = password_of(85, width)
    url = f"https://bob:{urllib.parse.quote(secret.value, safe='')}@db.internal:5432/app"
    text = rich_lines(f"connecting to {url}", width)
    assert len(text.splitlines()) >= 3  # folded in pieces, each too short to count
    found = forms_of(secret, scanner([secret], mode).scan(text))
    assert any(f.startswith("wrap>") for f in found), found
    # without the middle piece the rest is not the secret
    lines = text.splitlines(keepends=True)
    cut = "".join(lines[:2] + lines[3:])
    assert not whole(forms_of(secret, scanner([secret], mode).scan(cut)))


def wrap(text: str, width: int, indent: str) -> str:
    return "\n".join(indent + text[i : i + width] for i in range(0, len(text), width)) + "\n"


@pytest.mark.parametrize("mode", MODES)
def test_boxed_and_hard_wrapped_pieces_are_rejoined(mode: str) -> None:
    secret = password_of(60, 7)
    value = urllib.parse.quote(secret.value, safe="")
    boxed = "".join(f"\u2502 {line:<40} \u2502\n" for line in wrap(value, 40, "").splitlines())
    assert whole(forms_of(secret, scanner([secret], mode).scan("\u256d\u2500\u256e\n" + boxed)))
    hard = ("token=" + value + " " * 80)[:80] + "\n"  # padded so the wrap is at 80
    hard = wrap("token=" + value, 80, "")
    assert whole(forms_of(secret, scanner([secret], mode).scan(hard)))
    # the same pieces as separate paragraphs (a blank line between): not one secret
    apart = "\n\n".join(wrap(value, 40, "    ").splitlines()) + "\n"
    assert not whole(forms_of(secret, scanner([secret], mode).scan(apart)))


# --- fragments after a token family's public head -------------------------------------------


@pytest.mark.parametrize(
    "head", ["ghp_", "github_pat_", "sk-", "sk_live_", "xoxb-", "AKIA", "glpat-", "lin_api_"]
)
def test_a_prefix_fragment_carries_its_bits_after_the_head(head: str) -> None:
    rng = random.Random(head)
    body = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(36))
    secret = Secret.from_user(head + body, id="t")
    # the prefix reported: an early-accepted secret's, as its full estimate makes it (its
    # class bits' shorter needle is verified on a hit: forms.unsure_pieces)
    full = Secret.from_user(head + body, id="t", early=False)
    bits = head_bits(full)
    assert sum(bits[: len(head)]) == 0
    [prefix] = [(n, f) for n, f in fragment_forms(full) if n.startswith("prefix-")]
    random_part = len(prefix[1]) - len(head)
    assert random_part >= 11 and sum(bits[: len(prefix[1])]) >= FRAGMENT_BITS  # 65.5 bits
    # catching: the token truncated just after its prefix fragment
    truncated = (head + body)[: len(prefix[1]) + 1] + "\u2026"
    assert Scanner([secret]).scan(f"token={truncated}\n")
    # not catching: another token of the family sharing the head and a few characters
    near = head + body[: random_part - 1] + ("x" if body[random_part - 1] != "x" else "y")
    assert not Scanner([secret]).scan(f"token={near}{body[random_part:][::-1]}\n")


def test_the_wrap_search_is_linear_on_a_long_line() -> None:
    """A multi-megabyte line (a JSON report on one line) once took minutes: the joint
    pattern retried every position of the line. Scaled: 16 KB then 256 KB of one line, the
    second at most 64 times the first (linear: 16 times; quadratic: 256 times)."""
    import time

    from leakcheck.decode import wrapped_runs

    def cost(size: int) -> float:  # the best of 3: a busy machine's pause is not the code's
        text = b"{" + b"x" * size + b" y" * 10 + b"\nend\n"
        times = []
        for _ in range(3):
            start = time.perf_counter()
            list(wrapped_runs(text))
            times.append(time.perf_counter() - start)
        return min(times)

    cost(1000)  # warm
    small = max(cost(16 * 1024), 1e-4)
    large = cost(256 * 1024)
    assert large < 64 * small, (small, large)


# --- hex wrapped over lines ---------------------------------------------------------------


@pytest.mark.parametrize("mode", ["whole"])  # (keyed decoding: a limit, README)
@pytest.mark.parametrize("width", [16, 24, 32, 60])
@pytest.mark.parametrize("line_break", ["\n", "\r\n", "\\n"], ids=["lf", "crlf", "json"])
def test_hex_wrapped_over_lines_is_rejoined(
    canaries: CanaryFactory, mode: str, width: int, line_break: str
) -> None:
    # ``print("\n".join(textwrap.wrap(token.encode().hex(), 24)))``: each line too short to
    # count as a hex run, the token shown whole (found by a hunting helper: neither found
    # nor masked, the -rA section showed every line)
    import textwrap

    secret = canaries("bearer")
    lines = textwrap.wrap(secret.value.encode().hex(), width)
    # (a blank line after: a line of 80 with its escaped breaks is a terminal's width, and
    # the next line would be taken for its hard-wrapped rest)
    text = "dump:\n" + line_break.join(lines) + "\n\nend\n"
    found = whole(forms_of(secret, scanner([secret], mode).scan(text)))  # (never the text)
    assert "hex" in " ".join(found), found
    # not catching: the same lines apart (a blank line between)
    apart = "dump:\n" + (line_break * 2).join(lines) + "\n\nend\n"
    if width < 32:  # (a line of 32 is a hex run of its own: a piece, found as one)
        found = forms_of(secret, scanner([secret], mode).scan(apart))
        assert not found, found


def test_a_continuation_must_end_its_line() -> None:
    from leakcheck.decode import hex_runs

    digest = b"ab12" * 10
    assert [(s, e) for s, e, _ in hex_runs(b"sha=" + digest + b"\n2024-01-01 ok")] == [
        (4, 44),
        (4, 44),
    ]
    assert [(s, e) for s, e, _ in hex_runs(b"sha=" + digest[:20] + b"\n" + digest[:20] + b"\n")][
        0
    ] == (4, 45)


def test_wrapped_hex_is_masked_whole(canaries: CanaryFactory) -> None:
    import textwrap

    from leakcheck import LeakCheck

    check = LeakCheck(seed=7)
    token = check.secret("bearer")
    hexed = token.encode().hex()
    for width in (16, 20, 24, 28, 30, 32, 48, 60, 64):
        masked = check.mask("\n".join(textwrap.wrap(hexed, width)) + "\n")
        flat = masked.replace("\n", "")
        shown = [hexed[i : i + 10] for i in range(len(hexed) - 9) if hexed[i : i + 10] in flat]
        assert not shown, f"width {width}: {len(shown)} hex pieces of the token shown"


@pytest.mark.parametrize("width", [16, 18, 24, 30])
def test_hex_wrapped_in_a_failure_message_behind_pytests_e_is_masked(width: int) -> None:
    # ``pytest.fail("\n".join(textwrap.wrap(token.encode().hex(), 18)))``: pytest shows each
    # line behind "E" and spaces, and every line showed its 18 hex characters (a fuzzer)
    import textwrap

    from leakcheck import LeakCheck

    check = LeakCheck(seed=7)
    token = check.secret("bearer")
    hexed = token.encode().hex()
    lines = "\nE       ".join(textwrap.wrap(hexed, width))
    failure = f">       pytest.fail(text)\nE       Failed: {lines}\n\ntest_x.py:3: Failed\n"
    flat = check.mask(failure).replace("\nE       ", "")
    shown = sum(hexed[i : i + 10] in flat for i in range(len(hexed) - 9))
    assert not shown, f"{shown} hex pieces of the token shown"
    # not a continuation: an "E" line of words after a digest
    from leakcheck.decode import hex_runs

    assert not list(hex_runs(b"sha " + b"ab" * 10 + b"\nE       Failed: nothing here\n"))


# --- RFC 2047 encoded words (a mail header's text) ------------------------------------------


@pytest.mark.parametrize("charset", ["utf-8", "iso-8859-1"])
def test_a_token_folded_into_encoded_words_is_found_and_masked(
    canaries: CanaryFactory, charset: str
) -> None:
    """``email.header.Header`` folds a long subject into encoded words: the base64 piece
    of the second word was too short to count, and showed as written (found by a hunting
    helper). The words of a run are decoded and joined, as a mail reader shows them."""
    from email.header import Header

    from leakcheck.masking import masking_scanner

    for kind in ("api_key", "bearer", "cookie"):
        secret = canaries(kind)
        try:
            header = Header("token " + secret.value, charset).encode()
        except UnicodeEncodeError:  # (a canary holding "€" has no latin-1 spelling)
            continue
        text = f"Subject: {header}\nTo: ops@example.test\n"
        # (a q-encoded word reads as quoted-printable too: that chain may report a prefix)
        assert forms_of(secret, scanner([secret], "whole").scan(text)), kind
        shown = masking_scanner([secret]).mask(text)
        assert "=?" not in shown, kind  # (every word of the run masked)


def test_encoded_words_are_joined_only_across_whitespace() -> None:
    from leakcheck.decode import encoded_word_runs

    text = b"a =?utf-8?q?caf=C3=A9_au?=\n =?utf-8?b?IGxhaXQ=?= and =?utf-8?B?b25l?= z"
    first, second = text.index(b"=?"), text.index(b"=?utf-8?B")
    assert list(encoded_word_runs(text)) == [
        (first, text.index(b" and"), "caf\u00e9 au lait".encode()),
        (second, text.index(b" z"), b"one"),
    ]
    assert list(encoded_word_runs(b"no words =? here ?=")) == []


def test_a_clean_subject_in_encoded_words_is_no_finding(canaries: CanaryFactory) -> None:
    from email.header import Header

    secret = canaries("api_key")
    text = "Subject: " + Header("token " + "x" * 60 + " rejected", "utf-8").encode()
    assert not forms_of(secret, scanner([secret], "whole").scan(text))


# --- what re.escape writes (pytest.raises(match=...)'s "Expected regex") ---------------------


def _recovery_code(seed: int) -> Secret:
    """A token of 4-character groups joined by separators ``re.escape`` escapes."""
    rng = random.Random(seed)
    alphabet = string.ascii_letters + string.digits
    groups = ["".join(rng.choice(alphabet) for _ in range(4)) for _ in range(9)]
    pairs = zip("-.+~#&-.", groups[1:], strict=True)
    joined = groups[0] + "".join(sep + group for sep, group in pairs)
    return Secret.from_user(joined, kind="secret", id="code")


@pytest.mark.parametrize("seed", range(3))
def test_a_regex_escaped_token_is_found_and_masked(seed: int) -> None:
    """``pytest.raises(match=re.escape(token))``: a backslash before every separator, and
    pytest's failure shows the pattern's repr (two): each group alone too short to count."""
    import re as regex

    from leakcheck.masking import masking_scanner

    secret = _recovery_code(seed)
    pattern = regex.escape(secret.value)
    for text in (
        f"E   Expected regex: {pattern!r}\nE   Actual message: 'nope'\n",
        f"matching {pattern} failed\n",
    ):
        assert "regex>raw" in forms_of(secret, scanner([secret], "whole").scan(text))
        shown = masking_scanner([secret]).mask(text)
        groups = regex.split(r"[-.+~#&]", secret.value)
        assert not any(group in shown for group in groups[1:-1]), "a group shown"


def test_other_escapes_are_no_regex_run(canaries: CanaryFactory) -> None:
    from leakcheck.decode import regex_escape_runs

    assert list(regex_escape_runs(b'{"msg": "said \\"hi\\""} C:\\\\Users\\\\x\n')) == []
    other = _recovery_code(7)
    text = f"E   Expected regex: {re.escape(_recovery_code(8).value)!r}\n"
    assert not forms_of(other, scanner([other], "whole").scan(text))


@pytest.mark.parametrize("charset", ["undefined", "rot13", "zlib", "x-nonesuch", "utf-16"])
def test_an_encoded_word_in_any_charset_is_no_crash(charset: str) -> None:
    """The codec named ``undefined`` raises a ``UnicodeError`` on every decode: a scan of a
    mail holding ``=?undefined?q?hello?=`` ended in a traceback (found by a hunting
    helper). An unknown or odd charset leaves the word's bytes as they are."""
    from leakcheck.decode import encoded_word_runs

    text = f"Subject: =?{charset}?q?hello?= =?{charset}?b?QUJD?=\n".encode()
    runs = list(encoded_word_runs(text))  # (raised for "undefined")
    assert len(runs) == 1 and runs[0][2].startswith(b"hello" if charset != "utf-16" else b"")
    secret = CanaryFactory(seed="charset", announce=False).secret("bearer")
    assert not scanner([secret], "whole").scan(text)


def test_a_quoted_printable_run_starts_no_more_than_4_kib_back() -> None:
    """On a line longer than 4 KiB, a run started at the text's start, and masking it hid
    every line before it (found by a hunting helper)."""
    from leakcheck.decode import qp_runs

    text = b"head line\n" + b"x" * 5000 + b" a=3Db=3Dc\n"
    runs = list(qp_runs(text))
    assert len(runs) == 1 and runs[0][0] >= text.index(b" a=3D") - 4096 > 10, runs


def _alnum_token(seed: int) -> Secret:
    rng = random.Random(seed)
    body = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(40))
    return Secret.from_user("xoxb-" + body, kind="secret", id=f"t{seed}")


@pytest.mark.parametrize("mode", MODES)
def test_a_token_folded_by_quoted_printable_with_no_escape_is_found(mode: str) -> None:
    """``email`` (``cte="quoted-printable"``) folds a body line at 78 columns with a soft
    break and escapes nothing on a line of letters and digits: a run was decoded only
    where it held an ``=XX``, and a token cut there was never joined (found by a hunting
    helper)."""
    import email.message

    token = _alnum_token(1)
    message = email.message.EmailMessage()
    line = f"the token for the deploy pipeline of the ops team is: {token.value}"
    message.set_content(f"Hello,\n\n{line}\n\ncafé\n", cte="quoted-printable")
    body = message.as_string()
    folded = token.value not in body
    assert folded  # (no operand shown: the token)
    assert whole(forms_of(token, scanner([token], mode).scan(body)))
    # a token that is another: nothing
    other = _alnum_token(2)
    assert not forms_of(other, scanner([other], mode).scan(body))


def test_base64_padding_at_a_short_line_is_no_quoted_printable_run() -> None:
    from leakcheck.decode import qp_runs

    block = base64.encodebytes(bytes(range(200))).replace(b"\n", b"\n  ")  # (ends in "=")
    assert not list(qp_runs(b"key:\n  " + block + b"next line\n"))
    # a line of a width an encoder folds at, ending in padding, and nothing folded into it
    single = b"auth: " + base64.b64encode(bytes(range(53))) + b"\n"
    assert 70 <= len(single) - 1 <= 78 and single.endswith(b"=\n")
    assert not list(qp_runs(single)) and not list(qp_runs(single + b"\nnext\n"))
    assert not list(qp_runs(b"x" * 70 + b"==\nnext line\n"))  # (base64's "==")
    # a quoted-printable line folded at 76: a run
    folded = b"a" * 75 + b"=\n" + b"b" * 10 + b"\n"
    assert list(qp_runs(folded)) == [(0, len(folded) - 1, b"a" * 75 + b"b" * 10)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("spell", [ascii, lambda v: v.encode("unicode_escape").decode()])
def test_a_character_beyond_the_bmp_escaped_under_json_is_found(mode: str, spell) -> None:
    """``\\U0001d518`` (``ascii()``, ``unicode_escape`` of a character beyond the BMP,
    PyYAML's dump) began no backslash run: under one more layer (a JSON log line) the
    secret was missed (found by a hunting helper)."""
    value = "OjRbGiUTiG\U0001d518F4nqYQSIxBk"
    secret = Secret.from_user(value, kind="secret", id="nonbmp")
    line = json.dumps({"msg": f"bad password {spell(value)}"}) + "\n"
    assert "\\\\U0001d518" in line  # (escaped twice: JSON of the escape)
    assert whole(forms_of(secret, scanner([secret], mode).scan(line)))
    other = Secret.from_user(value[::-1], kind="secret", id="reversed")
    assert not whole(forms_of(other, scanner([other], mode).scan(line)))


@pytest.mark.parametrize("mode", ["whole"])  # (keyed decoding of wrapped hex: a limit, README)
@pytest.mark.parametrize("layer", ["repr", "json in json"])
@pytest.mark.parametrize("encode", ["hex", "base64"])
def test_wrapped_lines_escaped_twice_are_rejoined(mode: str, layer: str, encode: str) -> None:
    """A token's hex (or base64) wrapped at 20 characters inside a JSON text, shown by
    ``repr`` (``-l``, ``%r``) or nested in another JSON document: every line break is
    written ``\\\\n``, and the pieces of 10 characters were neither found nor masked (found
    by a hunting helper)."""
    import textwrap

    secret = _alnum_token(7)
    data = secret.value.encode()
    spelled = data.hex() if encode == "hex" else base64.b64encode(data).decode()
    body = json.dumps({"sig": "\n".join(textwrap.wrap(spelled, 20))})
    text = repr(body) if layer == "repr" else json.dumps({"upstream": body})
    assert "\\\\n" in text  # (the break written with two backslashes)
    assert whole(forms_of(secret, scanner([secret], mode).scan(f"said {text}\n")))
    other = _alnum_token(8)
    assert not forms_of(other, scanner([other], mode).scan(f"said {text}\n"))
    # and masked
    from leakcheck.masking import masking_scanner

    masked = masking_scanner([secret]).mask(f"said {text}\n")
    assert not forms_of(secret, scanner([secret], mode).scan(masked))


OCTET_SPELLINGS = {
    "hex colons": lambda data: data.hex(":"),
    "hex spaces": lambda data: data.hex(" "),
    "hex dashes": lambda data: data.hex("-").upper(),
    "0x literals": lambda data: ", ".join(f"0x{b:02x}" for b in data),
    "numbers": lambda data: repr(list(data)),
}


@pytest.mark.parametrize("spelling", OCTET_SPELLINGS)
def test_bytes_written_one_by_one_are_found_and_masked(spelling: str) -> None:
    """``token.encode().hex(":")`` (a fingerprint's way), with spaces or dashes, a list of
    ``0x`` literals, ``list(token.encode())``: such a test passed, and a failed ``assert``
    showed the token so (found by a hunting helper)."""
    from leakcheck.masking import masking_scanner

    secret, other = _alnum_token(9), _alnum_token(10)
    text = f"key fingerprint {OCTET_SPELLINGS[spelling](secret.value.encode())} loaded\n"
    assert "octets>raw" in forms_of(secret, scanner([secret], "whole").scan(text))
    assert not forms_of(other, scanner([other], "whole").scan(text))
    masked = masking_scanner([secret]).mask(text)
    assert masked.startswith("key fingerprint ") and masked.endswith(" loaded\n")
    assert not forms_of(secret, scanner([secret], "whole").scan(masked))


def test_short_or_mixed_runs_are_no_octets() -> None:
    from leakcheck.decode import octet_runs

    assert not list(octet_runs(b"mac aa:bb:cc:dd:ee:ff at 12:34:56, ids 1, 2, 3, 4, 5\n"))
    assert not list(octet_runs(b"[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 300, 13]\n"))  # (> 255)
