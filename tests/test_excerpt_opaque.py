"""An excerpt never shows a credential-looking token beside a hit, known or not.

A leaky gateway logs its request headers: the planted canary, and beside it the real keys
it holds (an internal service key from the CI environment). The canary is masked by what
leakcheck knows; the neighbour is no secret leakcheck knows, and the 40 characters of
context each side of a hit would carry it into a JSON report or a SARIF file uploaded to
a code-scanning service. A token that looks like a key (``findings._looks_random``) is
shown as ``«opaque»`` there, judged whole (the window is never cut inside one); words,
paths, hosts, URLs and UUIDs stay, so the context still says where the hit is.
Assertions compare booleans, never a value.
"""

from __future__ import annotations

import base64
import functools
import json
import random
import string
import uuid
from collections.abc import Callable

import pytest

from leakcheck import CanaryFactory, Scanner, Secret
from leakcheck.findings import OPAQUE_LABEL


@functools.cache
def _scanner() -> tuple[str, Scanner]:
    canary = CanaryFactory(1, namespace="opaque", announce=False).secret("bearer")
    return canary.value, Scanner([canary])


def _excerpts(line: str) -> list[str]:
    value, scanner = _scanner()
    shown = line.replace("{canary}", value).encode()
    return [f.excerpt for f in scanner.scan(shown, source="log")]


#: Keys from a generator seeded per test: the judging is a heuristic with a measured miss
#: rate (README, "Output"), and a test must pass or fail the same way in any order.
_URLSAFE = string.ascii_letters + string.digits + "-_"
_HEX = "0123456789abcdef"


def _chars(rng: random.Random, count: int, alphabet: str) -> str:
    return "".join(rng.choice(alphabet) for _ in range(count))


def _jwt(rng: random.Random) -> str:
    header = base64.urlsafe_b64encode(json.dumps({"alg": "HS256"}).encode()).rstrip(b"=")
    return f"{header.decode()}.{_chars(rng, 32, _URLSAFE)}.{_chars(rng, 43, _URLSAFE)}"


KEYS: dict[str, Callable[[random.Random], str]] = {
    "sk-live hex": lambda rng: "sk-live-" + _chars(rng, 32, _HEX),
    "ghp": lambda rng: "ghp_" + _chars(rng, 36, string.ascii_letters + string.digits),
    "urlsafe": lambda rng: _chars(rng, 43, _URLSAFE),
    "base64": lambda rng: base64.b64encode(rng.randbytes(30)).decode(),
    "jwt": _jwt,
    "sha1 hex": lambda rng: _chars(rng, 40, _HEX),
    # the hex of a piece of a token (12 to 15 characters): too few letters a-f to look
    # random, and shown whole beside a hit (found by a hunting helper)
    "hex of a piece": lambda rng: _chars(rng, rng.randint(12, 15), _URLSAFE).encode().hex(),
    "HEX of a piece": lambda rng: _chars(rng, 15, string.ascii_letters).encode().hex().upper(),
}


@pytest.mark.parametrize("shape", list(KEYS))
def test_a_real_key_beside_a_canary_is_opaque(shape: str) -> None:
    rng = random.Random(f"opaque:{shape}")
    for _ in range(20):
        key = KEYS[shape](rng)
        for line in (
            "Authorization: Bearer {canary} X-Api-Key: " + key,
            "X-Internal: " + key + " Authorization: Bearer {canary}",
            '{"token": "{canary}", "service_key": "' + key + '"}',
            "Authorization: Bearer {canary} " + "x" * 30 + " key=" + key,  # cut by the window
        ):
            excerpts = _excerpts(line)
            assert excerpts, "the canary was found"
            shown = any(key[:12] in e or key[-12:] in e for e in excerpts)
            assert not shown


@pytest.mark.parametrize(
    "length, most_missed", [(24, 0.005), (32, 0.001)], ids=["24 chars", "32 chars"]
)
def test_the_miss_rate_on_random_keys(length: int, most_missed: float) -> None:
    from leakcheck.findings import _looks_random

    rng = random.Random(f"opaque:rate:{length}")
    keys = [_chars(rng, length, _URLSAFE) for _ in range(4000)]
    missed = sum(not _looks_random(key) for key in keys) / len(keys)
    assert missed <= most_missed


@pytest.mark.parametrize(
    "context",
    [
        "request_id=" + str(uuid.UUID(int=2**127 + 12345)),
        "path=/srv/app/handlers/deploy_handler.py",
        "python3.11/site-packages/httpx/_client.py:1023",
        "https://api.example/v1/deployments?page=2&per_page=50",
        "HTTPConnectionPool(host='api.example', port=443)",
        "create_deployment_request_handler_for_region",
        "AKIAIOSFODNN7EXAMPLE",  # an access key id: an id, upper case and digits only
        "order=123456789012345678901234567890",  # a long number: no text in hex
        "order=313233343536373839303132",  # (the hex of a number's digits: a number still)
        # what every httpx / httpx2 status error ends with: a path of words
        "For more information check: https://developer.mozilla.org/en-US/docs/Web/HTTP/Status/401",
    ],
)
def test_the_context_still_says_where_the_hit_is(context: str) -> None:
    (excerpt,) = _excerpts("Authorization: Bearer {canary} " + context)
    assert OPAQUE_LABEL not in excerpt
    assert context[:20] in excerpt


def test_a_key_with_slashes_is_never_taken_for_a_path_of_words() -> None:
    """The words-path rule (a URL's path stays readable) exempts no random base64 key: of
    10,000 keys of each length from 20 to 60 characters, those holding a "/", none."""
    from leakcheck.findings import _WORD_PATH

    rng = random.Random("opaque:slashes")
    for length in (20, 24, 32, 44, 60):
        keys = [base64.b64encode(rng.randbytes(length)).decode()[:length] for _ in range(10_000)]
        slashed = [key for key in keys if "/" in key]
        assert len(slashed) > 2_000
        assert not any(_WORD_PATH.fullmatch(key) for key in slashed)


@pytest.mark.parametrize(
    "token",
    [
        "/files/aB3xK9pQ2mZ7/download",  # a signed path: one piece is no word
        "https://cdn.example/v1/aB3xK9pQ2mZ7Lp0/report.pdf",
    ],
)
def test_a_path_with_a_random_piece_is_still_opaque(token: str) -> None:
    (excerpt,) = _excerpts("Authorization: Bearer {canary} url=" + token)
    assert OPAQUE_LABEL in excerpt
    assert "aB3xK9pQ2mZ7" not in excerpt


def test_the_scan_command_writes_no_neighbour(tmp_path) -> None:
    from leakcheck.cli import main

    canary = CanaryFactory(2, namespace="opaque").secret("bearer")
    key = KEYS["sk-live hex"](random.Random("opaque:scan"))
    log = tmp_path / "ci.log"
    log.write_text(f"GET /v1 token={canary.value} service_key={key}\n", encoding="utf-8")
    secrets_file = tmp_path / "secrets.json"
    secrets_file.write_text(json.dumps([canary.value]), encoding="utf-8")
    for fmt in ("sarif", "json", "text"):
        out = tmp_path / f"report.{fmt}"
        code = main(["scan", "--secrets-file", str(secrets_file), "--format", fmt,
                     "-o", str(out), str(log)])  # fmt: skip
        written = out.read_text(encoding="utf-8")
        assert code == 1, fmt
        assert "opaque" in written, fmt
        shown = key[-12:] in written
        assert not shown, fmt


@pytest.mark.parametrize(
    "template, shown",
    [
        ("GET /v1/notes?q=x&key={pct} HTTP/1.1", "&key=«canary:bearer:pct»"),
        ("https://bucket.example/o?X-Amz-Signature={canary}&x=1", "X-Amz-Signature=«canary"),
        ("api_key={canary}", "api_key=«canary"),
        ("server.py --token={canary} --port 8", "server.py --token=«canary"),
    ],
)
def test_a_parameters_name_before_a_whole_secret_stays_shown(template: str, shown: str) -> None:
    """A whole secret ends nothing before it: the name of the parameter it is the value
    of is no part of it, and says where the hit is (it was swallowed with the token)."""
    from urllib.parse import quote

    value, _ = _scanner()
    (excerpt,) = _excerpts(template.replace("{pct}", quote(value, safe="")))
    assert shown in excerpt


@pytest.mark.parametrize(
    "line",
    [
        "aB3xK9={canary}",  # a name that is no word: perhaps a key's end
        "token={suffix}",  # before a piece: perhaps the rest of the secret (its own "=")
    ],
)
def test_what_may_be_secret_before_a_hit_is_still_swallowed(line: str) -> None:
    value, scanner = _scanner()
    # the shortest tail that is reported (``suffix-N``): the piece starts right after "="
    (probe,) = scanner.scan(value[-20:].encode(), source="log")
    assert probe.form.startswith("suffix-")
    tail = int(probe.form.rpartition("-")[2])
    excerpts = _excerpts(line.replace("{suffix}", value[-tail:]))
    assert excerpts
    for excerpt in excerpts:
        assert "aB3xK9" not in excerpt
        assert "=" not in excerpt.partition("«")[0]  # (nothing of the name shown)


def test_a_masked_text_keeps_the_token_whole_as_stored_snapshots_have_it() -> None:
    """``Scanner.mask`` (our output, error-text snapshots) swallows the name with the token
    as it always has: a stored snapshot does not drift because leakcheck was upgraded."""
    value, scanner = _scanner()
    masked = scanner.mask(f"GET /v1?q=x&key={value}&page=2")
    assert masked == "GET /v1?q=x&«canary:bearer:raw»&page=2"


def _host_and_signature() -> tuple[Secret, Secret, Scanner]:
    factory = CanaryFactory(1, namespace="opaque", announce=False)
    host, signature = factory.secret("hostname"), factory.secret("signature")
    return host, signature, Scanner([host, signature])


def test_a_url_around_a_whole_host_stays_shown() -> None:
    """httpx2's INFO line for a redirect to a signed URL read ``GET https:«canary:hostname:
    raw»?X-Amz-...``: the host's ``//`` and the path after it were swallowed with it. Around a
    whole secret neither is any part of it."""
    host, signature, scanner = _host_and_signature()
    line = (
        f"HTTP Request: GET https://{host.value}/v1/signed/upload?X-Amz-Expires=300"
        f"&X-Amz-Signature={signature.value} 403"
    )
    excerpts = [f.excerpt for f in scanner.scan(line.encode(), source="log")]
    assert any("GET https://«canary:hostname:raw»/v1/signed/upload?X-Amz" in e for e in excerpts)


@pytest.mark.parametrize(
    "line, hidden",
    [
        ("GET https://{host}/aB3xK9qZp7/upload", "aB3xK9qZp7"),  # a random piece: a key's?
        ("GET //{prefix} now", "//"),  # before a piece: perhaps the rest of the secret
    ],
)
def test_what_may_be_secret_around_a_url_host_is_still_swallowed(line: str, hidden: str) -> None:
    host, _, scanner = _host_and_signature()
    (probe,) = [f for f in scanner.scan(host.value[:-4].encode()) if f.form.startswith("prefix")]
    prefix = host.value[: int(probe.form.rpartition("-")[2])]
    shown = line.replace("{host}", host.value).replace("{prefix}", prefix)
    excerpts = [f.excerpt for f in scanner.scan(shown.encode(), source="log")]
    assert excerpts
    for excerpt in excerpts:
        assert hidden + "«" not in excerpt and "»" + hidden not in excerpt, excerpt
        assert hidden not in excerpt.replace("https://«", ""), excerpt


def test_a_masked_url_keeps_its_host_token_whole_as_stored_snapshots_have_it() -> None:
    host, _, scanner = _host_and_signature()
    masked = scanner.mask(f"GET https://{host.value}/v1/uploads?x=1")
    assert masked == "GET https:«canary:hostname:raw»?x=1"


def test_a_terminal_colour_code_before_a_secret_is_kept_whole() -> None:
    """A CI log's ``\\x1b[33m`` right before a token: its ``33m`` was swallowed with it,
    and the masked log showed ``\\x1b[«canary...»``, half an escape."""
    value, scanner = _scanner()
    masked = scanner.mask(f"\x1b[33m{value}\x1b[0m retry")
    assert masked.startswith("\\x1b[33m«canary:") and masked.endswith("»\\x1b[0m retry")
    # a run that is no colour code is still swallowed (it may be the secret's own)
    assert scanner.mask(f"x33m{value} retry").startswith("«canary:")


def test_an_escape_before_a_key_is_kept_whole() -> None:
    """A key right after a newline in an excerpt: the ``n`` of the written ``\\n`` was taken
    into the key's run, and the excerpt read ``}\\«opaque» POST``."""
    from leakcheck.findings import without_random_tokens

    shown = without_random_tokens("'Bearer x'}\\nreqAbC7dEf9GhI2jKl4MnO5pQ POST /v1/x")
    assert shown == "'Bearer x'}\\n«opaque» POST /v1/x"


@pytest.mark.parametrize("run", [100, 273, 600], ids=["shorter than the widening", "cut", "long"])
@pytest.mark.parametrize("side", ["before", "after"])
def test_a_run_longer_than_the_widening_is_opaque_where_the_window_cuts_it(
    run: int, side: str
) -> None:
    """The window is widened over a run of credential characters by 256 bytes at most: a
    longer run is cut at the edge, and another secret's hex there (a piece no masking
    needle of it matches) was shown (``…58422b5f53455858717a77zzzz…``)."""
    other = CanaryFactory(5, namespace="other", announce=False).secret("bearer").value
    filler = "z" * run
    if side == "before":
        line = other.encode().hex() + filler + " {canary} done"
    else:
        line = "done {canary} " + filler + other.encode().hex()
    (excerpt,) = _excerpts(line)
    spelled = other.encode().hex()[8:]  # (after "lcb.": the random part)
    pieces = [spelled[i : i + 8] for i in range(len(spelled) - 7)]
    assert not any(piece in excerpt for piece in pieces)
    assert OPAQUE_LABEL in excerpt
    assert "«canary:bearer:raw»" in excerpt


@pytest.mark.parametrize("kind", ["api_key", "password"])
@pytest.mark.parametrize("cut", ["masked-tail", "suffix"])
def test_a_detection_scanners_excerpt_shows_no_run_of_the_secret(kind: str, cut: str) -> None:
    """A plain ``Scanner`` finds a masked tail or a suffix of a hostile canary by its
    fragment form and masked that: the rest of the value around it (symbols no detection
    needle holds) was shown, 31 of an api_key's 50 characters in ``finding.excerpt``,
    which the README calls safe to print (found by a hunting helper). The excerpt is
    masked with the secret's masking windows too; a fragment found alone still is."""
    from leakcheck import CanaryFactory, Scanner

    secret = CanaryFactory(1234, announce=False).secret(kind)
    value = secret.value
    shown = value[:-4] + "****" if cut == "masked-tail" else value[6:]
    (finding,) = Scanner([secret], decode=True).scan(f"error: credential {shown} was rejected")
    longest = max(
        (n for n in range(1, len(value) + 1) for i in range(len(value) - n + 1)
         if value[i : i + n] in finding.excerpt),
        default=0,
    )  # fmt: skip
    assert longest < 8, longest


def test_a_source_named_after_the_secret_is_masked_in_the_finding() -> None:
    """``Scanner.scan(text, source=...)`` and ``scan_path`` name where a finding is: a log
    file named after a session, a URL carrying the token, went raw into ``location`` and
    ``repr(finding)`` (found by a hunting helper)."""
    from leakcheck import CanaryFactory, Scanner

    secret = CanaryFactory(1234, announce=False).secret("bearer")
    (finding,) = Scanner([secret]).scan(
        f"token={secret.value}", source=f"https://api.example/?token={secret.value}"
    )
    shown = secret.value[4:16] in finding.location or secret.value[4:16] in repr(finding)
    assert not shown and "«canary:bearer" in finding.location
