"""No finding on benign text: a 32 MiB corpus of real Python source, realistic logs (masked
tokens, bearer headers, request ids, truncated hashes) and random base64/hex blobs holds no
form of any canary or user-supplied token, with the decoding pass off and on.

The corpus comes from ``bench/corpus.py`` (deterministic for a seed), built once per test
session in pytest's temporary directory and shared by xdist workers (written to a unique
name, then renamed: no lock). Set ``LEAKCHECK_CORPUS_CACHE`` to keep it across runs.

Families: 20 canaries of every kind (4 seeds), and 20 random tokens per real token shape
registered with ``Secret.from_user`` (GitHub, AWS, Slack, Stripe, JWT, 32-hex; 4 PEM
certificates). All families are searched by one ``Scanner`` per mode (one pass over the
corpus, one test per mode); a failure groups the findings by family. Families in
KNOWN_FALSE_POSITIVES are strict xfails, each checked on its own. A failure names secret
ids, kinds, forms and corpus offsets, never a value nor an excerpt.
``test_planted_secrets_in_a_corpus_slice_are_found`` shows that the check can fail.
"""

from __future__ import annotations

import base64
import functools
import io
import json
import os
import random
import string
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType

import pytest
from conftest import bench_module

from leakcheck import KINDS, CanaryFactory, Finding, Scanner, Secret

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
CORPUS_MIB = 32
CORPUS_SEED = 0
#: 4 seeds x 5 canaries = 20 canaries of every kind.
CANARY_SEEDS = ("fp-1", "fp-2", "fp-3", "fp-4")
CANARIES_PER_SEED = 5
#: Random user-supplied tokens per family.
PER_FAMILY = 20
#: Fewer PEM certificates: ``Secret.from_user`` costs ~0.5 s per KiB of PEM (zxcvbn windows).
FAMILY_SIZE = {"pem": 4}

_ALNUM = string.ascii_letters + string.digits


def _load_corpus_module() -> ModuleType:
    return bench_module("corpus")


# --- secrets -------------------------------------------------------------------------------


def _rand(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choices(alphabet, k=n))


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _jwt(rng: random.Random) -> str:
    header = rng.choice(['{"alg":"HS256","typ":"JWT"}', '{"alg":"RS256","typ":"JWT"}'])
    sub, jti = _rand(rng, _ALNUM, 12), _rand(rng, _ALNUM, 16)
    iat = rng.randrange(1_600_000_000, 1_800_000_000)
    claims = f'{{"sub":"{sub}","iat":{iat},"jti":"{jti}"}}'
    return ".".join(
        (_b64url(header.encode()), _b64url(claims.encode()), _b64url(rng.randbytes(32)))
    )


def _pem_certificate(rng: random.Random) -> str:
    body = base64.b64encode(rng.randbytes(rng.randrange(300, 900))).decode()
    lines = "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
    return f"-----BEGIN CERTIFICATE-----\n{lines}\n-----END CERTIFICATE-----\n"


#: Real token shapes a user registers with ``Secret.from_user`` (random, so not in the corpus).
USER_FAMILIES: dict[str, Callable[[random.Random], str]] = {
    "github": lambda r: "ghp_" + _rand(r, _ALNUM, 36),
    "aws": lambda r: _rand(r, _ALNUM + "+/", 40),
    "slack": lambda r: (
        f"xoxb-{r.randrange(10**11, 10**12)}-{r.randrange(10**12, 10**13)}-" + _rand(r, _ALNUM, 24)
    ),
    "stripe": lambda r: "sk_live_" + _rand(r, _ALNUM, 24),
    "jwt": _jwt,
    "hex32": lambda r: _rand(r, "0123456789abcdef", 32),
    # a client certificate in the CLI's secrets file (a .json list): PEM, multi-line
    "pem": _pem_certificate,
}


@functools.cache
def user_secrets(family: str, count: int = 0, seed: str = "fp") -> tuple[Secret, ...]:
    """``count`` random tokens of a family (default: its size), accepted by
    ``Secret.from_user`` as the CLI accepts them."""
    count = count or FAMILY_SIZE.get(family, PER_FAMILY)
    rng = random.Random(f"leakcheck-fp-user:{seed}:{family}")
    make = USER_FAMILIES[family]
    return tuple(
        Secret.from_user(make(rng), kind=family, id=f"{family}-{n}") for n in range(1, count + 1)
    )


@functools.cache
def canary_secrets() -> tuple[Secret, ...]:
    secrets = []
    for seed in CANARY_SEEDS:
        factory = CanaryFactory(seed=seed, namespace="false-positives")
        for kind in KINDS:
            for _ in range(CANARIES_PER_SEED):
                secret = factory.secret(kind)
                # ids are per factory: make them unique across seeds
                secrets.append(
                    Secret(
                        secret.value,
                        secret.kind,
                        f"{seed}:{secret.id}",
                        secret.secret_class,
                        secret.bits,
                        generated=True,
                    )
                )
    return tuple(secrets)


def family_of(secret_id: str) -> str:
    return "canary" if secret_id.startswith("fp-") else secret_id.rsplit("-", 1)[0]


# Families with known core false positives on this corpus. Strict: a fix makes their test
# XPASS, which fails; then delete the entry, and the family joins the shared scan.
# Until then each is checked on its own, stopping at the first findings (a false positive
# per JWT or masked token in the corpus would cost a minute of excerpts otherwise).
KNOWN_FALSE_POSITIVES: dict[str, str] = {
    # fixed: public token prefixes, JWT headers and PEM armour carry no bits, hex tails are
    # judged on a 16-symbol alphabet, masked tails need 23 bits (leakcheck.canaries/forms)
}

FAMILIES = ["canary", *USER_FAMILIES]


# --- fixtures ------------------------------------------------------------------------------


def _cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    configured = os.environ.get("LEAKCHECK_CORPUS_CACHE")
    if configured:
        return Path(configured)
    base = tmp_path_factory.getbasetemp()
    # xdist workers each get base/popen-gwN: the parent is shared by the run's workers.
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    return base / "leakcheck-benign-corpus"


@pytest.fixture(scope="session")
def benign_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    corpus = _load_corpus_module()
    return corpus.cached_corpus(_cache_dir(tmp_path_factory), CORPUS_MIB, CORPUS_SEED)


def family_secrets(family: str) -> tuple[Secret, ...]:
    return canary_secrets() if family == "canary" else user_secrets(family)


def describe(findings: Iterable[Finding], where: Path | str) -> str:
    """Ids, kinds, forms and offsets of findings: never a value, never an excerpt."""
    findings = list(findings)
    forms = Counter((f.kind, f.form) for f in findings)
    secrets = {f.secret_id for f in findings}
    offsets = {f.offset for f in findings}
    lines = [
        f"{len(findings)} findings of {len(secrets)} secrets at {len(offsets)} offsets in {where}",
        "by kind and form: "
        + ", ".join(f"{kind}/{form} x{n}" for (kind, form), n in forms.most_common(12)),
    ]
    for f in sorted(findings, key=lambda f: f.offset)[:12]:
        lines.append(
            f"  {f.secret_id} ({f.kind}) as {f.form} at offset {f.offset} "
            f"(line {f.line}, column {f.column}, {f.length} bytes)"
        )
    return "\n".join(lines)


class _Pipe(io.RawIOBase):
    """A non-seekable stream: findings are located on the fly, chunk by chunk."""

    def __init__(self, data: bytes | io.BufferedIOBase) -> None:
        self._data = io.BytesIO(data) if isinstance(data, bytes) else data

    def readable(self) -> bool:
        return True

    def readinto(self, target) -> int:  # type: ignore[override]
        return self._data.readinto(target)


def first_findings(scanner: Scanner, path: Path, limit: int = 200) -> list[Finding]:
    """Up to ``limit`` findings, from a stream read 1 MiB at a time: stops early."""
    found: list[Finding] = []
    with open(path, "rb") as stream:
        for finding in scanner.scan_stream(_Pipe(stream), str(path), chunk_bytes=1 << 20):
            found.append(finding)
            if len(found) >= limit:
                break
    return found


# --- tests ---------------------------------------------------------------------------------


@pytest.mark.parametrize("decode", [False, True], ids=["first-pass", "decode"])
def test_benign_corpus_has_no_finding(benign_corpus: Path, decode: bool) -> None:
    """Every family outside KNOWN_FALSE_POSITIVES, in one scanner: one pass per mode (two
    tests, so xdist workers split the work rather than repeat it)."""
    assert benign_corpus.stat().st_size >= 32 * 1024 * 1024
    families = [f for f in FAMILIES if f not in KNOWN_FALSE_POSITIVES]
    secrets = [s for family in families for s in family_secrets(family)]
    scanner = Scanner(secrets, decode=decode)
    started = time.perf_counter()
    found = scanner.scan_path(benign_corpus)
    sys.stderr.write(
        f"benign corpus: {len(secrets)} secrets of {families}, {scanner.needle_count} needles, "
        f"decode={decode}: {len(found)} findings in {time.perf_counter() - started:.1f} s\n"
    )
    if found:
        by_family: dict[str, list[Finding]] = {}
        for finding in found:
            by_family.setdefault(family_of(finding.secret_id), []).append(finding)
        pytest.fail(
            "\n".join(
                f"[{family}] " + describe(group, benign_corpus)
                for family, group in by_family.items()
            ),
            pytrace=False,
        )


if KNOWN_FALSE_POSITIVES:  # no empty parametrization: pytest would report it as a skip

    @pytest.mark.parametrize("decode", [False, True], ids=["first-pass", "decode"])
    @pytest.mark.parametrize(
        "family",
        [
            pytest.param(family, marks=pytest.mark.xfail(strict=True, reason=reason), id=family)
            for family, reason in KNOWN_FALSE_POSITIVES.items()
        ],
    )
    def test_known_false_positive_family(benign_corpus: Path, family: str, decode: bool) -> None:
        """A family with a known core false positive, on its own; stops at its first
        findings."""
        found = first_findings(Scanner(family_secrets(family), decode=decode), benign_corpus)
        if found:
            pytest.fail(describe(found, benign_corpus), pytrace=False)


def test_secret_sets_are_complete() -> None:
    canaries = canary_secrets()
    kinds = Counter(s.kind for s in canaries)
    assert kinds == {kind: len(CANARY_SEEDS) * CANARIES_PER_SEED for kind in KINDS}
    assert all(n >= 20 for n in kinds.values())
    every = list(canaries)
    for family in USER_FAMILIES:
        if family not in FAMILY_SIZE:
            secrets = user_secrets(family)
            assert len(secrets) == PER_FAMILY
            assert {family_of(s.id) for s in secrets} == {family}
            every += secrets
    assert {family_of(s.id) for s in canaries} == {"canary"}
    # counted first: an assertion over the values would print them when it fails
    ids, values, total = len({s.id for s in every}), len({s.value for s in every}), len(every)
    assert ids == values == total


@pytest.mark.parametrize("decode", [False, True], ids=["first-pass", "decode"])
def test_planted_secrets_in_a_corpus_slice_are_found(
    benign_corpus: Path, tmp_path: Path, decode: bool
) -> None:
    """The check above can fail: the same scanner finds secrets planted in a copy of a corpus
    slice, one across a chunk edge, one base64-encoded in a Basic header and (decoding) one
    as base64 inside JSON inside base64."""
    chunk = 1 << 20
    canary = canary_secrets()[CANARIES_PER_SEED * list(KINDS).index("api_key")]
    user = user_secrets("aws", 1, seed="planted")[0]
    chained = user_secrets("slack", 1, seed="planted")[0]
    scanner = Scanner([canary, user, chained], decode=decode)

    with open(benign_corpus, "rb") as stream:
        stream.seek(9 * chunk + 12_345)
        source = stream.read(3 * chunk)
    prefix = b"\nrejected request: token="
    head = chunk - 5 - len(prefix)  # the canary starts 5 bytes before the first chunk edge
    basic = base64.b64encode(b"bob:" + user.value.encode())
    inner = base64.b64encode(chained.value.encode()).decode()
    chain = base64.b64encode(json.dumps({"event": "login", "token": inner}).encode())
    planted = b"".join(
        [
            source[:head],
            prefix + canary.value.encode() + b"\n",
            source[head : 2 * chunk],
            b"\n> Authorization: Basic " + basic + b"\n",
            source[2 * chunk : 2 * chunk + 70_000],
            b'\n{"ts": "2025-11-30T15:14:02Z", "payload": "' + chain + b'"}\n',
            source[2 * chunk + 70_000 :],
        ]
    )
    copy = tmp_path / "slice.log"
    copy.write_bytes(planted)

    # "bob:" is 4 bytes: the secret starts 1 byte into the second base64 group, and its first
    # whole base64 character is the 7th of the header value
    expected = {(canary.id, "raw", chunk - 5), (user.id, "base64@1", planted.index(basic) + 6)}
    if decode:
        expected.add((chained.id, "base64>base64@0", planted.index(chain)))
    for findings in (
        scanner.scan_path(copy),
        list(scanner.scan_stream(_Pipe(planted), "<pipe>", chunk_bytes=chunk)),
    ):
        got = {(f.secret_id, f.form, f.offset) for f in findings}
        if got != expected:
            pytest.fail(describe(findings, copy), pytrace=False)
        # a finding never carries the value (ids only in the message)
        leaked = [
            f.secret_id
            for f in findings
            if any(s.value in f.excerpt for s in (canary, user, chained))
        ]
        assert not leaked
    # the corpus slice itself is clean for these secrets
    clean = scanner.scan(source)
    if clean:
        pytest.fail(describe(clean, benign_corpus), pytrace=False)
