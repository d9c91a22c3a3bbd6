"""A deterministic benign corpus: what leakcheck scans in real life, holding none of its secrets.

The corpus interleaves three kinds of text, so every kind also sits across chunk edges:

* real text: the Python source of the running interpreter's stdlib and site-packages
  (paths sorted, then shuffled with the seed, read as bytes);
* synthetic logs: HTTP access and error lines, tracebacks, JSON log events with request
  ids, hex ids and UUIDs, masked tokens (``****ab12``, "credential ending in 9XQ1", ``…x7Qa``)
  with random tails, ``Authorization: Bearer`` headers, cookies, GitHub/Slack/Stripe/AWS-shaped
  tokens and JWTs, all random and none of them a secret under test;
* random blobs: base64 (one line, base64url, MIME-wrapped at 76, PEM-armoured at 64) and hex.

Everything random comes from ``random.Random(seed)``: the same seed, size and interpreter
give the same bytes. ``cached_corpus`` keeps built corpora in a cache directory, keyed by
seed, size, builder version and the list of source files, and writes them atomically (a
unique temporary file, then ``os.replace``), so concurrent builders (pytest-xdist workers)
need no lock.

Run as a script to build one: ``python bench/corpus.py OUT --size-mib 32 --seed 0``.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import random
import site
import string
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = ["build_corpus", "cached_corpus", "source_files", "MIB", "BUILDER_VERSION"]

MIB = 1024 * 1024
#: Bump when the corpus content changes, so cached corpora are rebuilt.
BUILDER_VERSION = 5
#: One-line (unwrapped) base64 blobs are at most this long by default. Longer single tokens
#: are realistic (data: URIs); the cap keeps the corpus as it was (the decoding pass, once
#: quadratic on such a token, decodes a 1 MiB base64 line in about 40 ms now).
DEFAULT_MAX_LINE_BLOB = 2048

_ALNUM = string.ascii_letters + string.digits
_LOWER_ALNUM = string.ascii_lowercase + string.digits
_HEX = "0123456789abcdef"
_B64URL = _ALNUM + "-_"

# Share of the corpus (by bytes) each kind of text gets.
_MIX = (("source", 0.50), ("logs", 0.36), ("blobs", 0.14))


# --- real text ---------------------------------------------------------------------------


def source_files() -> list[Path]:
    """Python files of the stdlib and site-packages of the running interpreter, sorted."""
    roots = [Path(sysconfig.get_paths()["stdlib"])]
    for extra in [sysconfig.get_paths()["purelib"], *site.getsitepackages()]:
        if Path(extra) not in roots:
            roots.append(Path(extra))
    seen: set[Path] = set()
    files: list[Path] = []
    for root_index, root in enumerate(roots):
        for dirpath, dirnames, filenames in os.walk(root):
            # the stdlib's own site-packages belongs to another interpreter's install
            dirnames[:] = sorted(
                d
                for d in dirnames
                if d != "__pycache__" and not (root_index == 0 and d in ("site-packages",))
            )
            for name in sorted(filenames):
                if name.endswith(".py"):
                    path = Path(dirpath, name)
                    if path not in seen and path.is_file():
                        seen.add(path)
                        files.append(path)
    return sorted(files)


def _source_stream(rng: random.Random, files: list[Path]) -> Iterator[bytes]:
    order = list(files)
    rng.shuffle(order)
    while True:
        produced = False
        for path in order:
            try:
                data = path.read_bytes()
            except OSError:
                continue
            if data:
                produced = True
                yield b"# ---- " + path.name.encode() + b" ----\n" + data
        if not produced:
            yield b"# no Python source found\n" * 64


# --- synthetic logs ----------------------------------------------------------------------

_METHODS = ["GET"] * 6 + ["POST"] * 3 + ["PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"]
_PATHS = [
    "/api/v1/items/{n}",
    "/api/v1/users/{n}/repos",
    "/api/v2/search?q={word}&page={n}",
    "/v1/chat/completions",
    "/v1/tools/{word}/invoke",
    "/static/js/app.{hex8}.js",
    "/healthz",
    "/metrics",
    "/oauth/callback?code={tok20}&state={tok16}",
    "/download/{word}-{n}.tar.gz",
    "/search?q={word}%20{word}&lang=en-US&ts={n}",
    "/repos/acme/{word}/pulls/{n}/files",
]
_WORDS = (
    "alpha beta gamma delta timeout refused upstream gateway proxy cache worker queue "
    "billing invoice customer session tool agent retry backoff shard replica index search "
    "token refresh expired denied allowed payload chunk stream buffer socket handshake tls "
    "config loader plugin schema migrate commit rollback lease lock mutex pool thread"
).split()
_AGENTS = [
    "python-requests/2.31.0",
    "python-httpx/0.27.0",
    "curl/8.5.0",
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0",
    "Go-http-client/2.0",
    "okhttp/4.12.0",
    "aiohttp/3.9.5",
]
_EVENTS = ["request done", "tool {word} invoked", "auth ok", "auth failed", "upstream error {n}"]
_STATUS = [200] * 12 + [201, 204, 301, 302, 304, 400, 401, 403, 404, 409, 429, 500, 502, 503]
_LEVELS = ["DEBUG", "INFO", "INFO", "INFO", "WARNING", "ERROR"]
_EXCEPTIONS = [
    ("TimeoutError", "timed out after {n}.0 seconds"),
    ("ConnectionResetError", "[Errno 104] Connection reset by peer"),
    ("KeyError", "'{word}'"),
    ("ValueError", "invalid literal for int() with base 10: '{word}'"),
    ("PermissionError", "[Errno 13] Permission denied: '/var/lib/{word}/{word}.db'"),
    ("json.decoder.JSONDecodeError", "Expecting value: line 1 column {n} (char {n})"),
    (
        "httpx.HTTPStatusError",
        "Client error '401 Unauthorized' for url 'https://api.{word}.test/v1'",
    ),
]
# How masked credentials look in real logs; the random tail is never one of our secrets'.
_MASKS: list[Callable[[random.Random], str]] = [
    lambda r: "****" + _rand(r, _ALNUM, 4),
    lambda r: "********" + _rand(r, _ALNUM, r.choice((4, 4, 6))),
    lambda r: "credential ending in " + _rand(r, string.ascii_uppercase + string.digits, 4),
    lambda r: "token ending with " + _rand(r, _ALNUM, 4),
    lambda r: "key ends in " + _rand(r, _ALNUM, 4),
    lambda r: "last 4: " + _rand(r, string.digits, 4),
    lambda r: "\u2022\u2022\u2022\u2022 " + _rand(r, string.digits, 4),
    lambda r: "\u2026" + _rand(r, _ALNUM, 4),
    lambda r: "ghp_" + _rand(r, _ALNUM, 4) + "..." + _rand(r, _ALNUM, 4),
    lambda r: "sk_live_...." + _rand(r, _ALNUM, 4),
    lambda r: "xoxb-****-" + _rand(r, _ALNUM, 4),
    lambda r: "AKIA" + _rand(r, string.ascii_uppercase + string.digits, 4) + "XXXXXXXXXXXX",
    lambda r: _rand(r, _HEX, 6) + "****",
    lambda r: "eyJhbGci..." + _rand(r, _B64URL, 6),
    lambda r: "eyJhbGciOi" + "*" * 12,
    # vendor prefix kept, everything random masked: what dashboards and SDKs print
    lambda r: "ghp_" + "*" * r.choice((4, 8, 36)),
    lambda r: "ghp_...",
    lambda r: "sk_live_" + r.choice(("****", "...", "\u2026", "************************")),
    lambda r: "xoxb-****",
    lambda r: "AKIA" + "*" * 16,
    lambda r: "github_pat_" + "*" * 8,
    # truncated hex: ids and commit hashes cut with an ellipsis or stars
    lambda r: _rand(r, _HEX, r.choice((7, 8, 12))) + r.choice(("...", "\u2026", "**")),
    lambda r: "****" + _rand(r, _HEX, 4),
    lambda r: "key ending in " + _rand(r, _HEX, 4),
]
_HINTS = [
    'hint: GitHub tokens look like "ghp_..." or "github_pat_..."; got a string of {n} chars',
    "hint: Stripe live keys start with sk_live_... and must not be used in test mode",
    "hint: Slack bot tokens start with xoxb-, user tokens with xoxp-",
    "hint: a JWT starts with eyJ... (base64url JSON); got {word}",
    "deploying commit {sha7}... to {word} ({n} files changed)",
    "HEAD is now at {sha7} merge {word} into main",
    "cache key {sha12}\u2026 restored ({n} MiB)",
]


def _rand(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choices(alphabet, k=n))


def _uuid(rng: random.Random) -> str:
    h = _rand(rng, _HEX, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{rng.choice('89ab')}{h[17:20]}-{h[20:]}"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _jwt(rng: random.Random) -> str:
    header = rng.choice(
        [
            '{"alg":"HS256","typ":"JWT"}',
            '{"alg":"RS256","typ":"JWT"}',
            '{"alg":"RS256","kid":"' + _rand(rng, _HEX, 16) + '","typ":"JWT"}',
        ]
    )
    iat = 1_700_000_000 + rng.randrange(10**7)
    claims = (
        f'{{"sub":"{_uuid(rng)}","iat":{iat},"exp":{iat + 3600},'
        f'"scope":"{rng.choice(_WORDS)}","jti":"{_rand(rng, _ALNUM, 16)}"}}'
    )
    signature = rng.randbytes(32 if "HS" in header else 256)
    return ".".join((_b64url(header.encode()), _b64url(claims.encode()), _b64url(signature)))


def _token(rng: random.Random) -> str:
    """A random credential-shaped token: other people's secrets, never ours."""
    shape = rng.randrange(8)
    if shape == 0:
        return "ghp_" + _rand(rng, _ALNUM, 36)
    if shape == 1:
        return f"xoxb-{rng.randrange(10**11, 10**12)}-{rng.randrange(10**12, 10**13)}-" + _rand(
            rng, _ALNUM, 24
        )
    if shape == 2:
        return "sk_live_" + _rand(rng, _ALNUM, 24)
    if shape == 3:
        return _jwt(rng)
    if shape == 4:
        return _rand(rng, _HEX, 32)
    if shape == 5:
        return _rand(rng, _ALNUM + "+/", 40)
    if shape == 6:
        return "AKIA" + _rand(rng, string.ascii_uppercase + string.digits, 16)
    return _rand(rng, _B64URL, 43)


def _fill(rng: random.Random, template: str) -> str:
    out = template
    while "{word}" in out:
        out = out.replace("{word}", rng.choice(_WORDS), 1)
    while "{n}" in out:
        out = out.replace("{n}", str(rng.randrange(1, 100_000)), 1)
    out = out.replace("{hex8}", _rand(rng, _HEX, 8))
    out = out.replace("{tok20}", _rand(rng, _B64URL, 20)).replace("{tok16}", _rand(rng, _ALNUM, 16))
    return out


def _timestamp(rng: random.Random, t: float, style: int) -> str:
    tm = time.gmtime(t)
    ms = rng.randrange(1000)
    if style == 0:
        return time.strftime("%d/%b/%Y:%H:%M:%S +0000", tm)
    return time.strftime("%Y-%m-%dT%H:%M:%S", tm) + f".{ms:03d}Z"


def _ip(rng: random.Random) -> str:
    return f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"


def _access_line(rng: random.Random, t: float) -> str:
    path = _fill(rng, rng.choice(_PATHS))
    extra = ""
    if rng.random() < 0.15:
        extra = f" auth={rng.choice(_MASKS)(rng)}"
    return (
        f'{_ip(rng)} - - [{_timestamp(rng, t, 0)}] "{rng.choice(_METHODS)} {path} HTTP/1.1" '
        f'{rng.choice(_STATUS)} {rng.randrange(0, 200_000)} "-" "{rng.choice(_AGENTS)}" '
        f"rt={rng.random() * 3:.3f} rid={_rand(rng, _HEX, 16)}{extra}\n"
    )


def _error_line(rng: random.Random, t: float) -> str:
    level = rng.choice(_LEVELS)
    msg = _fill(
        rng,
        rng.choice(
            [
                "upstream {word} timed out after {n}ms (attempt {n})",
                "retrying {word} request, backoff {n}ms",
                "cache miss for key {word}:{n}",
                "rejected request: invalid credentials ({mask})",
                "rotated {word} credential, new key {mask}",
                "tool call {word}.{word} finished in {n}ms",
                "{hint}",
                "connection pool {word} exhausted ({n} waiting)",
            ]
        ),
    )
    msg = msg.replace("{mask}", rng.choice(_MASKS)(rng))
    if "{hint}" in msg:
        msg = _fill(rng, rng.choice(_HINTS)).replace("{sha7}", _rand(rng, _HEX, 7))
        msg = msg.replace("{sha12}", _rand(rng, _HEX, 12))
    return (
        f"{_timestamp(rng, t, 1)} {level:<7} [worker-{rng.randrange(16)}] "
        f"request_id={_uuid(rng)} trace={_rand(rng, _HEX, 32)} {msg}\n"
    )


def _json_event(rng: random.Random, t: float) -> str:
    fields = [
        f'"ts": "{_timestamp(rng, t, 1)}"',
        f'"level": "{rng.choice(_LEVELS).lower()}"',
        f'"msg": "{_fill(rng, rng.choice(_EVENTS))}"',
        f'"request_id": "{_uuid(rng)}"',
        f'"span_id": "{_rand(rng, _HEX, 16)}"',
        f'"latency_ms": {rng.random() * 900:.1f}',
    ]
    roll = rng.random()
    if roll < 0.25:
        fields.append(f'"credential": "{rng.choice(_MASKS)(rng)}"')
    elif roll < 0.35:
        fields.append(f'"headers": {{"Authorization": "Bearer {_token(rng)}", "Accept": "*/*"}}')
    elif roll < 0.40:
        blob = base64.b64encode(rng.randbytes(rng.randrange(12, 300))).decode()
        fields.append(f'"body_b64": "{blob}"')
    elif roll < 0.45:
        fields.append(
            f'"url": "https://api.example.test/v1/x?sig={_rand(rng, _ALNUM, 12)}'
            f'%2B{_rand(rng, _ALNUM, 10)}%3D&n={rng.randrange(99)}"'
        )
    rng.shuffle(fields[3:])
    return "{" + ", ".join(fields) + "}\n"


def _request_dump(rng: random.Random, t: float) -> str:
    lines = [
        f"> {rng.choice(_METHODS)} {_fill(rng, rng.choice(_PATHS))} HTTP/1.1",
        "> Host: api.example.test",
        f"> User-Agent: {rng.choice(_AGENTS)}",
        f"> Authorization: Bearer {_token(rng)}",
        f"> X-Request-Id: {_uuid(rng)}",
    ]
    if rng.random() < 0.4:
        lines.append(
            f"> Cookie: session={_rand(rng, _B64URL, 32)}; csrftoken={_rand(rng, _ALNUM, 32)}"
        )
    lines += [
        "> ",
        f"< HTTP/1.1 {rng.choice(_STATUS)}",
        f"< Content-Length: {rng.randrange(10, 90_000)}",
        f'< ETag: "{_rand(rng, _HEX, 40)}"',
        f"< Set-Cookie: sid={_rand(rng, _ALNUM + '%', 28)}; Path=/; HttpOnly; Secure",
        "< ",
    ]
    return "\n".join(lines) + "\n"


def _traceback(rng: random.Random, t: float) -> str:
    lines = [
        f"{_timestamp(rng, t, 1)} ERROR unhandled exception in request {_uuid(rng)}",
        "Traceback (most recent call last):",
    ]
    for _ in range(rng.randrange(2, 7)):
        module = "/".join(rng.choice(_WORDS) for _ in range(rng.randrange(1, 4)))
        lines.append(
            f'  File "/srv/app/{module}.py", line {rng.randrange(1, 900)}, '
            f"in {rng.choice(_WORDS)}_{rng.choice(_WORDS)}"
        )
        lines.append(
            f"    {rng.choice(_WORDS)} = self.{rng.choice(_WORDS)}({rng.choice(_WORDS)}, **kwargs)"
        )
    name, message = rng.choice(_EXCEPTIONS)
    lines.append(f"{name}: {_fill(rng, message)}")
    return "\n".join(lines) + "\n"


_LOG_WRITERS = [
    (_access_line, 40),
    (_error_line, 25),
    (_json_event, 25),
    (_request_dump, 5),
    (_traceback, 5),
]


def _log_block(rng: random.Random, state: dict[str, float], target: int) -> bytes:
    writers, weights = zip(*_LOG_WRITERS, strict=True)
    out, size = [], 0
    while size < target:
        state["t"] += rng.random() * 2
        line = rng.choices(writers, weights)[0](rng, state["t"])
        out.append(line)
        size += len(line)
    return "".join(out).encode("utf-8")


# --- random blobs ------------------------------------------------------------------------


def _blob(rng: random.Random, max_line_blob: int) -> bytes:
    kind = rng.randrange(7)
    if kind == 0:  # one-line base64, as in JSON fields and headers
        data = rng.randbytes(rng.randrange(12, max(13, max_line_blob * 3 // 4)))
        return b'{"data": "' + base64.b64encode(data) + b'"}\n'
    if kind == 1:  # base64url without padding
        data = rng.randbytes(rng.randrange(12, max(13, max_line_blob * 3 // 4)))
        return b"payload=" + base64.urlsafe_b64encode(data).rstrip(b"=") + b"\n"
    if kind == 2:  # MIME attachment, wrapped at 76
        data = rng.randbytes(rng.randrange(256, 24_000))
        boundary = _rand(rng, _ALNUM, 24).encode()
        return (
            b"--" + boundary + b"\r\nContent-Type: application/octet-stream\r\n"
            b"Content-Transfer-Encoding: base64\r\n\r\n"
            + base64.encodebytes(data).replace(b"\n", b"\r\n")
            + b"--"
            + boundary
            + b"--\r\n"
        )
    if kind == 3:  # PEM-armoured random body, wrapped at 64
        data = rng.randbytes(rng.randrange(300, 1800))
        body = base64.b64encode(data)
        lines = b"\n".join(body[i : i + 64] for i in range(0, len(body), 64))
        return b"-----BEGIN CERTIFICATE-----\n" + lines + b"\n-----END CERTIFICATE-----\n"
    if kind == 4:  # continuous hex
        return b"digest " + rng.randbytes(rng.randrange(16, 512)).hex().encode() + b"\n"
    if kind == 5:  # xxd-style hex dump
        data = rng.randbytes(rng.randrange(64, 2048))
        rows = []
        for i in range(0, len(data), 16):
            row = data[i : i + 16]
            groups = " ".join(row[j : j + 2].hex() for j in range(0, len(row), 2))
            text = "".join(chr(b) if 32 <= b < 127 else "." for b in row)
            rows.append(f"{i:08x}: {groups:<39}  {text}")
        return ("\n".join(rows) + "\n").encode()
    # percent-encoded random bytes in a query string
    data = rng.randbytes(rng.randrange(8, 96))
    quoted = "".join(f"%{b:02X}" if rng.random() < 0.7 else _rand(rng, _ALNUM, 1) for b in data)
    return f"GET /cb?blob={quoted}&n={rng.randrange(999)} HTTP/1.1\n".encode()


def _blob_block(rng: random.Random, target: int, max_line_blob: int) -> bytes:
    out, size = [], 0
    while size < target:
        blob = _blob(rng, max_line_blob)
        out.append(blob)
        size += len(blob)
    return b"".join(out)


# --- building ----------------------------------------------------------------------------


def build_corpus(
    path: str | os.PathLike[str],
    size_mib: float = 32,
    seed: int = 0,
    *,
    max_line_blob: int = DEFAULT_MAX_LINE_BLOB,
    files: list[Path] | None = None,
    collect: dict[str, list[bytes]] | None = None,
) -> Path:
    """Write exactly ``size_mib`` MiB of benign text to ``path`` and return it.

    ``collect`` maps kinds of text (``source``, ``logs``, ``blobs``) to lists: each piece of
    such a kind that is written is appended to its list too (the benchmark times the
    decoding pass on the corpus's log-like text alone). The bytes written do not change."""
    path = Path(path)
    total = int(size_mib * MIB)
    rng = random.Random(f"leakcheck-bench-corpus:{seed}")
    sources = _source_stream(random.Random(f"sources:{seed}"), files or source_files())
    kinds, weights = zip(*_MIX, strict=True)
    state = {"t": 1_764_000_000.0 + rng.randrange(10**6)}
    written = 0
    with open(path, "wb") as out:
        while written < total:
            kind = rng.choices(kinds, weights)[0]
            if kind == "source":
                piece = next(sources)
            elif kind == "logs":
                piece = _log_block(rng, state, rng.randrange(2_000, 60_000))
            else:
                piece = _blob_block(rng, rng.randrange(1_000, 30_000), max_line_blob)
            piece = piece[: total - written]
            if collect is not None and kind in collect:
                collect[kind].append(piece)
            out.write(piece)
            written += len(piece)
    return path


def _files_digest(files: list[Path]) -> str:
    h = hashlib.sha256()
    for f in files:
        try:
            size = f.stat().st_size
        except OSError:
            size = -1
        h.update(f"{f}\0{size}\n".encode())
    return h.hexdigest()[:16]


def cached_corpus(
    cache_dir: str | os.PathLike[str],
    size_mib: float = 32,
    seed: int = 0,
    *,
    max_line_blob: int = DEFAULT_MAX_LINE_BLOB,
) -> Path:
    """The corpus for (size, seed) in ``cache_dir``, built once; safe under concurrency."""
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    files = source_files()
    key = (
        f"v{BUILDER_VERSION}-py{sys.version_info[0]}{sys.version_info[1]}-"
        f"{_files_digest(files)}-s{seed}-{size_mib:g}mib-l{max_line_blob}"
    )
    target = cache_dir / f"corpus-{key}.txt"
    if target.exists() and target.stat().st_size == int(size_mib * MIB):
        return target
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=cache_dir)
    os.close(fd)
    try:
        build_corpus(tmp, size_mib, seed, max_line_blob=max_line_blob, files=files)
        os.replace(tmp, target)  # atomic: a concurrent builder wrote the same bytes
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--size-mib", type=float, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-line-blob", type=int, default=DEFAULT_MAX_LINE_BLOB)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    build_corpus(args.out, args.size_mib, args.seed, max_line_blob=args.max_line_blob)
    elapsed = time.perf_counter() - start
    print(f"wrote {args.size_mib:g} MiB to {args.out} in {elapsed:.2f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
