"""The keyed decoding pass decodes the tokens around its keys all at once (one pass of
each decoder over the tokens joined, one engine pass over their decoded runs): the same
runs and the same hits, in the same order, as decoding each token alone."""

from __future__ import annotations

import base64
import json
import random
import re
import urllib.parse
from collections.abc import Iterator
from urllib.parse import unquote_to_bytes

import pytest

from leakcheck import CanaryFactory, Scanner
from leakcheck import decode as decode_module
from leakcheck.decode import DECODERS, PIECE_SEPARATOR, decode_pieces

FACTORY = CanaryFactory(seed=14, namespace="decode-pieces")
SECRETS = [FACTORY.secret(kind) for kind in ("bearer", "api_key", "password", "bearer")]

#: bytes that start, end or break a run of some decoder, next to each other at random
_BITS = [
    b"x", b" ", b"\n", b"\r", b"\r\n", b"=", b"==", b"%4", b"%41", b"%zz", b"\\", b"\\x4",
    b"\\u00", b"&", b"&#65;", b"&amp;", b"QUJD", b"abc=", b'"', b"'", b"<", b"|", b"    ",
    b"\xe2\x94\x82", b"=3D", b"=\n", b"-_", b"0123456789abcdef" * 2, b"Zm9vYmFyYmF6cXV4" * 2,
    b"y" * 80,
]  # fmt: skip


def _encoded(rnd: random.Random, value: str) -> bytes:
    raw = value.encode()
    kind = rnd.randrange(11)
    if kind == 0:
        return base64.b64encode(raw)
    if kind == 1:  # base64 glued to a word: found only off the 4-character grid
        return b"abc" + base64.b64encode(raw)
    if kind == 2:
        return urllib.parse.quote(value).encode()
    if kind == 3:
        return "".join(f"%{b:02x}" for b in raw).encode()
    if kind == 4:
        return base64.b64encode(json.dumps({"token": value}).encode())
    if kind == 5:
        return raw.hex().encode()
    if kind == 6:
        return "".join(f"\\u{ord(c):04x}" for c in value).encode()
    if kind == 7:
        return raw[:5] + b"=3D" + raw[5:] + b"=\n=41"
    if kind == 8:
        return "".join(f"&#{ord(c)};" for c in value).encode()
    if kind == 9:  # a base64 blob folded by a log handler
        blob = base64.b64encode(raw)
        return blob[:20] + b"\n        " + blob[20:]
    return urllib.parse.quote(base64.b64encode(raw)).encode()


def _texts(rnd: random.Random) -> list[bytes]:
    texts = []
    for _ in range(rnd.randint(1, 6)):
        bits = [
            _encoded(rnd, rnd.choice(SECRETS).value) if rnd.random() < 0.3 else rnd.choice(_BITS)
            for _ in range(rnd.randint(0, 10))
        ]
        texts.append(b"".join(bits))
    return texts


def _hits(found: list) -> list[tuple[int, int, str, str]]:
    return [(h.start, h.end, h.secret.id, h.form) for h in found]


def test_pieces_are_decoded_as_each_alone() -> None:
    rnd = random.Random(0)
    decoded = 0
    for _ in range(400):
        texts = _texts(rnd)
        alone = [list(decode_module._runs(text, DECODERS)) for text in texts]
        assert decode_pieces(texts, DECODERS) == alone
        decoded += sum(map(len, alone))
    assert decoded > 1000  # the texts did hold runs of every kind


def test_a_piece_that_ends_where_a_run_could_go_on() -> None:
    """Runs that reach a piece's end (a soft break's "=", a base64 run before a line break,
    a token before the next piece's token) stop there, as at the end of a text alone; a
    quoted-printable run on a line longer than its 4 KiB look-back starts in its piece."""
    texts = [
        b"a=3Db=3Dc=",
        b"QUJDREVGR0hJSktMTU5PUFFSU1RVVldY",
        b"=41=42\n" + b"v" * 5000 + b"=41=42",
        b"%41%42%43%44%45%46%47",
        b"    continued piece of a wrapped line",
        b"x" * 79 + b"y",
        b"\\u0041\\u0042\\u0043\\u0044",
    ]
    alone = [list(decode_module._runs(text, DECODERS)) for text in texts]
    assert all(alone[:4]) and decode_pieces(texts, DECODERS) == alone
    assert decode_pieces(texts[::-1], DECODERS) == alone[::-1]
    assert decode_pieces([], DECODERS) == []
    assert PIECE_SEPARATOR not in b"".join(texts)


def test_a_plugin_decoder_reads_each_piece_alone() -> None:
    seen: list[bytes] = []

    def whole_text(buf: bytes) -> Iterator[tuple[int, int, bytes]]:
        seen.append(buf)
        yield 0, len(buf), buf[::-1]

    texts = [b"abc", b"", b"defg"]
    runs = decode_pieces(texts, {"rev": whole_text, **DECODERS})
    assert seen == texts
    assert runs == [[("rev", 0, 3, b"cba")], [], [("rev", 0, 4, b"gfed")]]


@pytest.mark.parametrize("backend", ["hyperscan", "ahocorasick"])
def test_tokens_decoded_together_give_each_token_s_hits(backend: str) -> None:
    if backend == "hyperscan":
        pytest.importorskip("hyperscan")
    scanner = Scanner(SECRETS, decode=True, backend=backend, input_bytes=1 << 30)
    rnd = random.Random(1)
    found = 0
    for _ in range(150):
        texts = _texts(rnd)
        alone = [_hits(scanner._decoded(text, scanner.decode_depth)) for text in texts]
        together = scanner._decoded_many(texts, scanner.decode_depth)
        assert [_hits(hits) for hits in together] == alone
        found += sum(map(len, alone))
    assert found > 100


def test_unquote_is_urllib_s() -> None:
    rnd = random.Random(2)
    alphabet = b"%%%%0123456789abcdefABCDEFxyz\\/&=?+-_.~\x80\xff\n\"'"
    for _ in range(20_000):
        run = bytes(rnd.choice(alphabet) for _ in range(rnd.randint(0, 14)))
        assert decode_module._unquote(run) == unquote_to_bytes(run), run


def _token_runs_reference(buf: bytes, marker: re.Pattern[bytes]) -> list[tuple[int, int]]:
    """Every marker visited, those inside the token just read skipped (the code before
    the next marker was searched for instead)."""
    out, done = [], 0
    for found in marker.finditer(buf):
        if found.start() < done:
            continue
        start = found.start()
        floor = max(done, start - 4096)
        before = decode_module._TOKEN_BEFORE.match(buf[floor:start][::-1])
        start -= before.end() if before else 0
        rest = decode_module._TOKEN_REST.match(buf, found.start())
        assert rest is not None
        done = rest.end()
        out.append((start, done))
    return out


def test_token_runs_skip_no_token() -> None:
    rnd = random.Random(3)
    markers = [
        decode_module._PERCENT_ESCAPE,
        decode_module._BACKSLASH_ESCAPE,
        decode_module._ENTITY,
    ]
    for _ in range(3000):
        buf = b"".join(rnd.choice(_BITS) for _ in range(rnd.randint(0, 12)))
        for marker in markers:
            assert list(decode_module._token_runs(buf, marker)) == _token_runs_reference(
                buf, marker
            )


def test_unescape_is_the_callback_s() -> None:
    rnd = random.Random(5)
    bits = [b"\\", b"\\\\", b"x", b"u", b"U", b"4", b"1", b"f", b"F", b"z", b"n", b"t", b"r", b"'"]
    bits += [b'"', b"/", b"0", b"\xed", b"\xa0", b"\x80", b"a", b"\n", b"\\x41", b"\\u0041"]
    fast = 0
    for _ in range(20_000):
        token = b"".join(rnd.choice(bits) for _ in range(rnd.randint(0, 12)))
        slow = decode_module._ONE_ESCAPE.sub(decode_module._unescape_one, token)
        assert decode_module._unescape(token) == slow, token
        fast += decode_module._C_ESCAPES.fullmatch(token) is not None and b"\\" in token
    assert fast > 1000  # the decoder's own path was taken, and checked
