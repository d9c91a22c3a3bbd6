"""The scanner on streams, files, bytes and str: located exactly, found once, masked whole."""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import random
import threading
import time
import tracemalloc
from pathlib import Path
from unittest import mock
from urllib.parse import quote

import pytest
from conftest import self_scan

import leakcheck.detect as detect_module
import leakcheck.engine as engine_module
from leakcheck import Scanner, Secret
from leakcheck.engine import BACKENDS, available_backends
from leakcheck.findings import CONTEXT_BYTES, WIDEN_BYTES, mask_label
from leakcheck.forms import MASKING_FORMS, needles_for

# Filler never holds a masking context ("**", "...", "xxxx", "ending in", ...) nor a long
# token run, so the only findings are the planted occurrences.
WORDS = ["alpha", "beta", "gamma", "é", "中文", "ж", "🙂", "42", "-", "\t", "ß·ß", "ok,"]


class Recorder(io.RawIOBase):
    """A non-seekable stream (a pipe) that records the size of every read asked of it."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)
        self.sizes: list[int] = []

    def readable(self) -> bool:
        return True

    def readinto(self, target) -> int:  # type: ignore[override]
        self.sizes.append(len(target))
        return self._data.readinto(target)


class Trickle(io.RawIOBase):
    """A non-seekable stream that returns at most ``step`` bytes per read (short reads)."""

    def __init__(self, data: bytes, step: int) -> None:
        self._data = io.BytesIO(data)
        self._step = step

    def readable(self) -> bool:
        return True

    def readinto(self, target) -> int:  # type: ignore[override]
        piece = self._data.read(min(len(target), self._step))
        target[: len(piece)] = piece
        return len(piece)


def filler(rng: random.Random, size: int, *, max_line: int = 3000) -> bytes:
    """``size`` bytes of words and newlines, lines up to ``max_line`` bytes; cut at ``size``,
    possibly inside a multi-byte character (invalid UTF-8 at the edge on purpose)."""
    out, line = bytearray(), 0
    target = rng.randint(0, max_line)
    while len(out) < size:
        if line >= target:
            out += b"\n"
            line, target = 0, rng.randint(0, max_line)
            continue
        word = (rng.choice(WORDS) + " ").encode()
        out += word
        line += len(word)
    return bytes(out[:size])


def expected_location(data: bytes, offset: int) -> tuple[int, int]:
    """(line, column in code points of the line decoded as a whole), both from 1."""
    start = data.rfind(b"\n", 0, offset) + 1
    column = len(data[start:offset].decode("utf-8", "replace")) + 1
    return data.count(b"\n", 0, offset) + 1, column


def chunk_size(scanner: Scanner) -> int:
    """The chunk size scan_stream uses when asked for a tiny one."""
    recorder = Recorder(b"." * 100)
    list(scanner.scan_stream(recorder, chunk_bytes=1))
    return recorder.sizes[0]


def locations(findings) -> list[tuple[str, int, int, int, int]]:
    return sorted((f.form, f.offset, f.length, f.line, f.column) for f in findings)


def plant(rng: random.Random, value: bytes, starts: list[int], tail: int = 500) -> bytes:
    parts, position = [], 0
    for start in starts:
        assert start >= position
        parts += [filler(rng, start - position), value]
        position = start + len(value)
    parts.append(filler(rng, tail))
    return b"".join(parts)


# --- chunk boundaries ---------------------------------------------------------------------


def test_secret_at_every_offset_of_a_chunk_boundary(canaries) -> None:
    """One occurrence per chunk, each one byte further back from the chunk's end: every
    split of the secret across the boundary, and every position relative to the carried
    tail and the settling margin, is covered in one stream."""
    secret = canaries("api_key")  # non-ASCII and quotes, percent, backslash in the value
    value = secret.value.encode()
    scanner = Scanner([secret])
    size = chunk_size(scanner)
    assert size < 8192, "a tiny chunk_bytes should give a small chunk"
    starts = [k * (size - 1) for k in range(1, size + 2)]
    data = plant(random.Random(1), value, starts)
    expected = sorted(
        ("raw", start, len(value), *expected_location(data, start)) for start in starts
    )
    # lines up to 3000 bytes cross chunk edges, after non-ASCII text and cut characters
    assert any(data.rfind(b"\n", 0, s) < s - size for s in starts)

    streams = {
        "seekable": io.BytesIO(data),
        "pipe": Recorder(data),
        "short reads": Trickle(data, 97),
    }
    for name, stream in streams.items():
        found = list(scanner.scan_stream(stream, "<s>", chunk_bytes=1))
        assert locations(found) == expected, name
    assert locations(scanner.scan(data)) == expected


def test_every_split_around_a_chunk_edge_one_stream_each(canaries) -> None:
    """The secret alone near the first chunk edge, for each split (including the
    excerpt's context reaching over the edge)."""
    secret = canaries("bearer")
    value = secret.value.encode()
    scanner = Scanner([secret])
    size = chunk_size(scanner)
    rng = random.Random(2)
    for split in range(-60, len(value) + 60):
        start = size - split
        data = plant(rng, value, [start], tail=rng.choice([0, 3, 200, 2 * size]))
        for stream in (io.BytesIO(data), Recorder(data)):
            found = list(scanner.scan_stream(stream, chunk_bytes=1))
            assert [(f.offset, f.line, f.column) for f in found] == [
                (start, *expected_location(data, start))
            ], f"split {split}"


def test_many_occurrences_of_many_secrets_each_found_once(canaries) -> None:
    secrets = [canaries(kind) for kind in ("bearer", "cookie", "password", "hostname")]
    scanner = Scanner(secrets)
    size = chunk_size(scanner)
    rng = random.Random(3)
    parts, expected, position = [], [], 0
    for _ in range(400):
        gap = rng.randint(1, size // 3)
        parts.append(filler(rng, gap - 1) + b" ")
        position += gap
        secret = rng.choice(secrets)
        parts.append(secret.value.encode())
        expected.append((secret.id, position))
        position += len(parts[-1])
    parts.append(b"\n")
    data = b"".join(parts)
    assert len(data) > 30 * size
    found = list(scanner.scan_stream(Recorder(data), chunk_bytes=1))
    assert sorted((f.secret_id, f.offset) for f in found) == sorted(expected)
    assert {f.form for f in found} == {"raw"}
    for f in found:
        assert (f.line, f.column) == expected_location(data, f.offset)


def test_long_ascii_line_across_many_chunks(canaries) -> None:
    secret = canaries("signature")
    scanner = Scanner([secret])
    size = chunk_size(scanner)
    value = secret.value.encode()
    starts = [5 * size + 17, 11 * size - 3, 40 * size]
    line = bytearray(b"a " * (41 * size))  # one line, far longer than any chunk
    for s in starts:
        line[s : s + len(value)] = value
    data = b"first line\n" + bytes(line) + b"\n"
    starts = [s + 11 for s in starts]
    for stream in (io.BytesIO(data), Recorder(data)):
        found = list(scanner.scan_stream(stream, chunk_bytes=1))
        assert [(f.offset, f.line, f.column) for f in found] == [(s, 2, s - 11 + 1) for s in starts]


# --- bytes, str and invalid UTF-8 ---------------------------------------------------------


@pytest.mark.parametrize(
    "before, after",
    [
        (b"\xff\xfe", b"\x80\x81"),
        (b"\xe2\x82", b"\xc3"),  # truncated sequences on both sides
        (b"\x00\x00", b"\x00"),
        (b"\xed\xa0\x80", b"\xf4\x90\x80\x80"),  # surrogate, beyond U+10FFFF
        (b"\xc3\xa9\xe2\x82\xac", b"\xf0\x9f\x94\x91"),  # valid é€ and a 4-byte emoji
    ],
    ids=["ff-fe", "truncated", "nul", "surrogate", "valid-multibyte"],
)
def test_invalid_utf8_around_the_secret(canaries, before: bytes, after: bytes) -> None:
    secret = canaries("password")
    scanner = Scanner([secret])
    value = secret.value.encode()
    data = b"line one\n" + b"ab " + before + value + after + b" cd\n" + before + value
    found = sorted(scanner.scan(data), key=lambda f: f.offset)
    first = data.index(value)
    second = data.rindex(value)
    assert [(f.offset, f.line, f.column, f.form) for f in found] == [
        (first, 2, *expected_location(data, first)[1:], "raw"),
        (second, 3, *expected_location(data, second)[1:], "raw"),
    ]
    for f in found:
        assert f.length == len(value)
        self_scan(f.excerpt, [secret], "excerpt")
    assert locations(scanner.scan_stream(Recorder(data), chunk_bytes=1)) == locations(found)


def test_str_input_is_searched_as_utf8(canaries) -> None:
    secret = canaries("ssh_password")
    scanner = Scanner([secret])
    text = f"héllo wörld\n\tlet pw = {secret.value} # 中文\n"
    [finding] = scanner.scan(text, source="<mine>")
    prefix = text[: text.index(secret.value)]
    assert finding.source == "<mine>"
    assert finding.offset == len(prefix.encode())  # offsets are bytes
    assert (finding.line, finding.column) == (2, len("\tlet pw = ") + 1)  # columns code points
    assert finding.length == len(secret.value.encode())
    assert finding.secret_id == secret.id and finding.kind == "ssh_password"
    assert finding.secret_class == "direct" and finding.form == "raw"
    assert scanner.scan(text.encode()) == [dataclasses.replace(finding, source="<text>")]


def test_first_line_column_counts_code_points(canaries) -> None:
    secret = canaries("bearer")
    scanner = Scanner([secret])
    [finding] = scanner.scan("é€🔑 " + secret.value)
    assert (finding.line, finding.column) == (1, 5)
    [finding] = list(scanner.scan_stream(Recorder(("é€🔑 " + secret.value).encode())))
    assert (finding.line, finding.column) == (1, 5)


def test_backends_give_identical_findings(canaries) -> None:
    pytest.importorskip("hyperscan")
    secrets = list(canaries.all_kinds())
    rng = random.Random(4)
    pieces = []
    for secret in secrets:
        pieces += [filler(rng, 300), secret.value.encode(), b"\n"]
    data = b"".join(pieces)
    a = Scanner(secrets, backend="hyperscan").scan(data)
    b = Scanner(secrets, backend="ahocorasick").scan(data)
    assert sorted(x.to_dict().items() for x in a) == sorted(y.to_dict().items() for y in b)
    assert {f.secret_id for f in a} == {s.id for s in secrets}


def test_scan_of_many_findings_is_not_quadratic(canaries) -> None:
    secret = canaries("bearer")
    scanner = Scanner([secret])
    data = ("x " + secret.value + "\n").encode() * 3000
    began = time.perf_counter()
    found = scanner.scan(data)
    elapsed = time.perf_counter() - began
    assert len(found) == 3000
    # about 0.2 s here; the quadratic masking it replaced took over 30 s
    assert elapsed < 6, f"scan of 3000 findings took {elapsed:.1f} s"


# --- excerpts and masking -----------------------------------------------------------------


def test_excerpts_hold_no_form_of_any_secret(canaries) -> None:
    secrets = list(canaries.all_kinds())
    scanner = Scanner(secrets, decode=True)
    rng = random.Random(5)
    from leakcheck.forms import needles_for

    pieces = []
    for secret in secrets:
        for needle in rng.sample(needles_for(secret), 8):
            pieces += [filler(rng, rng.randint(0, 60), max_line=80), needle.pattern]
    data = b"".join(pieces)
    found = scanner.scan(data)
    assert {f.secret_id for f in found} == {s.id for s in secrets}
    for f in found:
        self_scan(f.excerpt, secrets, f"excerpt of {f.secret_id} as {f.form}")
        assert "\u00abcanary:" in f.excerpt


def test_adjacent_different_secrets_are_both_masked(canaries) -> None:
    a, b = canaries("api_key"), canaries("signature")
    scanner = Scanner([a, b])
    for joint in ("", " ", ",", "\n", "=", "%"):
        text = f"token: {a.value}{joint}{b.value} end"
        found = scanner.scan(text)
        assert {f.secret_id for f in found} == {a.id, b.id}, repr(joint)
        for f in found:
            self_scan(f.excerpt, [a, b], f"excerpt of {f.secret_id}, joint {joint!r}")
            # token characters between them merge the two masks into one
            assert f.excerpt.count("\u00abcanary:") == (1 if joint in ("", "=", "%") else 2)
        self_scan(scanner.mask(text), [a, b], "mask()")


def test_base64_neighbours_are_swallowed_by_the_mask(canaries) -> None:
    for kind in ("password", "api_key", "bearer"):
        secret = canaries(kind)
        scanner = Scanner([secret])
        for prefix in (b"u:", b"user:", b"admin:"):
            blob = base64.b64encode(prefix + secret.value.encode() + b"\x00rest of it!")
            text = b'{"Authorization": "Basic ' + blob + b'"}\n'
            found = scanner.scan(text)
            assert found and all(f.form.startswith("base64@") for f in found), kind
            for f in found:
                self_scan(f.excerpt, [secret], f"excerpt of {kind}")
                runs = {blob[i : i + 8].decode() for i in range(len(blob) - 7)}
                survived = [r for r in runs if r in f.excerpt]
                assert not survived, f"{len(survived)} 8-char runs of the blob survive"
                assert f.excerpt.count(mask_label(secret.kind, f.form)) == 1


def test_mask_covers_every_form(canaries) -> None:
    secret = canaries("cookie")
    scanner = Scanner([secret], decode=True)
    value = secret.value
    chain = base64.b64encode(json.dumps({"cookie": value}).encode()).decode()
    text = (
        f"raw: {value}\n"
        f"b64: {base64.b64encode(value.encode()).decode()}\n"
        f"hex: {value.encode().hex()}\n"
        f"chain: {chain}\n"
    )
    masked = scanner.mask(text)
    self_scan(masked, [secret], "mask()")
    assert masked.count("\u00abcanary:cookie:") == 4
    # mask() keeps the message's layout: one masked form per line
    assert masked.startswith("raw: \u00abcanary:cookie:raw\u00bb\nb64: \u00abcanary:cookie:")
    assert masked.count("\n") == 4
    assert scanner.mask("nothing here") == "nothing here"


# --- files and bounded memory -------------------------------------------------------------


def test_scan_path_and_source(canaries, tmp_path: Path) -> None:
    secret = canaries("resource_id")
    scanner = Scanner([secret])
    path = tmp_path / "log.txt"
    path.write_bytes(b"x\n" * 10 + secret.value.encode() + b"\n")
    [finding] = scanner.scan_path(path)
    assert finding.source == str(path)
    assert (finding.line, finding.column, finding.offset) == (11, 1, 20)
    [finding] = scanner.scan_path(path, source="alias")
    assert finding.source == "alias" and finding.location == "alias:11:1"


def test_stream_from_the_middle_of_a_file(canaries, tmp_path: Path) -> None:
    secret = canaries("user_name")
    scanner = Scanner([secret])
    path = tmp_path / "log.txt"
    path.write_bytes(b"header line\n" + b"a\n" * 3 + secret.value.encode())
    with open(path, "rb") as stream:
        stream.readline()
        [finding] = list(scanner.scan_stream(stream))
    assert (finding.offset, finding.line, finding.column) == (6, 4, 1)


def test_small_files_get_small_buffers_and_a_growing_file_is_read_whole(
    canaries, tmp_path: Path
) -> None:
    """A file's buffer is sized from its length (a directory of small logs would otherwise
    allocate 8 MiB per file); a file that grows after that is still read to its end, in
    chunks of that size, with every edge handled."""
    secret = canaries("cookie")
    value = secret.value.encode()
    scanner = Scanner([secret])
    tiny = tmp_path / "tiny.log"
    tiny.write_bytes(b"ok\n")
    with open(tiny, "rb") as stream:
        reads = []
        real = stream.readinto

        def recording(target):  # the size of every read asked for
            reads.append(len(target))
            return real(target)

        stream.readinto = recording  # type: ignore[method-assign]
        assert list(scanner.scan_stream(stream)) == []
    assert max(reads) < 64 * 1024, reads

    class Growing(io.BytesIO):
        """Has the tiny file's descriptor (fstat says 3 bytes) but holds far more, as a
        log appended to while it is read."""

        def fileno(self) -> int:
            return handle.fileno()

    size = chunk_size(scanner)
    starts = [k * (size - 1) for k in range(1, 40)]
    data = plant(random.Random(9), value, starts)
    with open(tiny, "rb") as handle:
        found = list(scanner.scan_stream(Growing(data), "<grown>"))
    assert locations(found) == locations(scanner.scan(data))
    assert len(found) == len(starts)


@pytest.mark.parametrize("backend", BACKENDS)
def test_bounded_memory_on_a_64_mib_file(canaries, tmp_path: Path, backend: str) -> None:
    if backend not in available_backends():
        pytest.skip(f"{backend} is not importable here")
    secret = canaries("bearer")
    scanner = Scanner([secret], backend=backend)
    value = secret.value.encode()
    block = (b"2025-01-01T00:00:00Z INFO request served in 3 ms, status 200\n" * 18000)[: 1 << 20]
    path = tmp_path / "big.log"
    mib = 1 << 20
    plants = [100, 8 * mib - 7, 33 * mib + 5, 64 * mib - len(value) - 1]
    with open(path, "wb") as out:
        for _ in range(64):
            out.write(block)
    with open(path, "r+b") as out:
        for where in plants:
            out.seek(where)
            out.write(value)
    assert path.stat().st_size == 64 * mib

    tracemalloc.start()
    try:
        found = scanner.scan_path(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sorted(f.offset for f in found) == plants
    assert peak < 32 * mib, f"peak {peak / mib:.1f} MiB while scanning 64 MiB"


def test_self_scan_catches_every_form_and_never_echoes(canaries) -> None:
    secret = canaries("password")
    value = secret.value.encode()
    leaks = [
        value,
        base64.b64encode(b"user:" + value),
        base64.b64encode(base64.b64encode(value)),  # a chain: needs the decoding pass
        value.hex().encode(),
        b"ends in **" + value[-4:],
    ]
    for leak in leaks:
        with pytest.raises(AssertionError) as info:
            self_scan(b"log: " + leak + b"\n", [secret], "probe")
        said = str(info.value)
        assert secret.value not in said
        # (the id, or its kind's word masked: a test's own failed assertion is masked with
        # the session's secrets, among them a value an earlier test had refused as weak,
        # "password" among them)
        assert said.startswith("probe ") and f"#{secret.id.split('#')[1]}" in said
    self_scan("nothing here", [secret])


# --- needles put off until a text may hold them ---------------------------------------------
#
# On the ahocorasick backend a scanner makes a secret's URL, JSON, repr and HTML spellings
# only once a text holds the secret's anchor run. An eager scanner (the same backend with
# nothing put off) is the reference: findings, masks and needle lists must be identical.
# (Searches happen outside the asserts, and results are compared into a bool: pytest would
# print a call's arguments, or the two sides, which may hold a secret when the test fails.)


def eager(secrets: list, **options) -> Scanner:  # type: ignore[type-arg]
    with mock.patch.object(detect_module, "_defers", return_value=False):
        return Scanner(secrets, backend="ahocorasick", **options)


def located_findings(scanner: Scanner, text: bytes) -> list[dict[str, object]]:
    return [f.to_dict() for f in scanner.scan(text)]


@pytest.mark.parametrize("decode", [False, True])
def test_every_needle_is_found_as_an_eager_scanner_finds_it(canaries, decode: bool) -> None:
    secrets = [canaries("api_key"), canaries("bearer"), canaries("password")]
    reference = eager(secrets, decode=decode)
    rng = random.Random(9)
    for secret in secrets:
        for needle in needles_for(secret, MASKING_FORMS):
            text = filler(rng, 40) + b" " + needle.pattern + b" " + filler(rng, 40)
            fresh = Scanner(secrets, backend="ahocorasick", decode=decode)
            same = located_findings(fresh, text) == located_findings(reference, text)
            assert same, ("findings differ", secret.kind, needle.form)
            message = text.decode("utf-8", "replace")
            same = fresh.mask(message) == reference.mask(message)
            assert same, ("masks differ", secret.kind, needle.form)


def test_needles_are_put_off_until_the_anchor_run_shows_up(canaries) -> None:
    secret = canaries("api_key")
    scanner = Scanner([secret], backend="ahocorasick", decode=True)
    assert scanner._deferred, "nothing put off: every test pays for every spelling"
    assert scanner.scan("a clean log line\n" * 20) == []
    assert scanner._deferred, "a clean text made the put-off needles"
    as_json = json.dumps({"token": secret.value})  # JSON escapes the hostile characters
    forms = {f.form for f in scanner.scan(as_json)}
    assert forms == {"json-ascii"}, forms
    assert not scanner._deferred


def test_a_put_off_needle_found_in_a_decoded_run_first(canaries) -> None:
    # base64 of JSON: the raw text holds no anchor run, the decoded run does
    secret = canaries("password")
    blob = base64.b64encode(json.dumps({"p": secret.value}).encode())
    text = b"blob=" + blob + b"\n"
    found = located_findings(Scanner([secret], backend="ahocorasick", decode=True), text)
    same = found == located_findings(eager([secret], decode=True), text)
    assert same, "findings differ"
    forms = [f["form"] for f in found]
    assert any(str(form).startswith("base64>json") for form in forms), forms


def test_needle_list_count_and_longest_are_those_of_an_eager_scanner(canaries) -> None:
    secrets = [canaries(kind) for kind in ("api_key", "cookie", "hostname")]
    reference = eager(secrets)
    want = [(n.pattern, n.form, n.secret.id) for n in reference.needles]
    for probe in (None, secrets[1].value):  # before any search, after a partial one
        scanner = Scanner(secrets, backend="ahocorasick")
        if probe is not None:
            scanner.scan(json.dumps(probe))
            assert scanner._deferred and len(scanner._deferred) < len(secrets)
        same = [(n.pattern, n.form, n.secret.id) for n in scanner.needles] == want
        assert same, "the needle lists differ"  # (a bare comparison would print needles)
        assert scanner.needle_count == reference.needle_count == len(want)
        assert scanner.max_needle == reference.max_needle


def test_stream_margin_counts_the_put_off_needles(canaries) -> None:
    secret = canaries("api_key")
    longest = max(needles_for(secret), key=lambda n: len(n.pattern))
    assert longest.form.startswith(("pct", "json", "repr", "html")), longest.form
    rng = random.Random(2)
    size = chunk_size(Scanner([secret], backend="ahocorasick"))
    margin = len(longest.pattern) + CONTEXT_BYTES + WIDEN_BYTES
    assert size == 4 * margin, "the margin left the put-off needles out"
    for offset in (1, len(longest.pattern) // 2, len(longest.pattern) - 1):
        start = size - offset
        data = plant(rng, longest.pattern, [start])
        scanner = Scanner([secret], backend="ahocorasick")
        found = list(scanner.scan_stream(Recorder(data), chunk_bytes=1))
        assert [(f.form, f.offset) for f in found] == [(longest.form, start)], offset


def test_secrets_sharing_a_value_put_nothing_off(canaries) -> None:
    one = canaries("api_key")
    two = Secret.from_user(one.value, kind="api_key", id="same value, other id")
    text = json.dumps({"k": one.value}).encode()
    scanner = Scanner([one, two], backend="ahocorasick")
    assert not scanner._deferred
    found = located_findings(scanner, text)
    same = found == located_findings(eager([one, two]), text)
    assert same, "findings differ"
    assert {f["secret_id"] for f in found} == {one.id, two.id}


def test_many_secrets_put_nothing_off(canaries) -> None:
    """Past ANCHOR_FROM_PATTERNS needles the automaton holds anchors and its order of hits
    (which names a mask on a tie) follows the pattern list: a scanner that may reach it
    indexes every needle at once, as before."""
    secrets = list(canaries.all_kinds())
    scanner = Scanner(secrets, backend="ahocorasick", decode=True)
    assert not scanner._deferred
    assert scanner.needle_count >= engine_module.ANCHOR_FROM_PATTERNS
    text = " ".join(json.dumps(s.value) + " " + quote(s.value) for s in secrets)
    same = scanner.mask(text) == eager(secrets, decode=True).mask(text)
    assert same, "masks differ"


def test_maskers_called_from_many_threads_mask_every_form(canaries) -> None:
    """The harness's masker may run in a logging thread while the test's thread searches:
    each text is masked whole however the making of put-off needles interleaves."""
    secrets = [canaries("api_key"), canaries("password")]
    texts = [
        json.dumps({"k": s.value}) + " " + repr(s.value) + " " + quote(s.value, safe="")
        for s in secrets
    ] * 3
    for _ in range(15):
        scanner = Scanner(secrets, backend="ahocorasick", decode=True)
        barrier = threading.Barrier(len(texts))
        results: list[str] = [""] * len(texts)

        def mask(i: int, scanner: Scanner = scanner, barrier=barrier, results=results) -> None:
            barrier.wait(timeout=0.5)
            results[i] = scanner.mask(texts[i])

        threads = [threading.Thread(target=mask, args=(i,)) for i in range(len(texts))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=0.5)
        assert not any(thread.is_alive() for thread in threads)
        for result in results:
            self_scan(result, secrets, "masked from a thread")
            assert result.count("\u00abcanary:") == 3
