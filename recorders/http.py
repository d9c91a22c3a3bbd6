"""The HTTP clients leakcheck knows, driven against a loopback fault, and the corpus of the
real exception text each produces at each stage on this machine.

Not installed with leakcheck: test and corpus tooling. ``scripts/record_http_exceptions.py``
writes the corpus to ``corpora/exceptions/http.json``, the baseline a dependency upgrade is
reviewed against; ``tests/test_faults_loopback.py`` drives every client at every stage.
"""

from __future__ import annotations

import json
import re
import ssl
import traceback
import urllib.parse
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from leakcheck.plugins.loopback_http import LoopbackFault

from leakcheck.faults import HarnessError
from leakcheck.libtrace import library_versions
from leakcheck.placements import Placed
from leakcheck.snapshot_store import normalize as normalize_text
from leakcheck.stages import HTTP, STAGES, TLS_STAGES

if TYPE_CHECKING:
    from leakcheck.harness import LeakCheck

# --- clients and the exception-text corpus --------------------------------------------------

#: the client libraries driven by the corpus and the tests
CLIENTS = ("httpx", "httpx-async", "httpx2", "httpx2-async", "requests", "urllib3", "aiohttp")
#: clients with a raise_for_status()
_RAISES_FOR_STATUS = {"httpx", "httpx-async", "httpx2", "httpx2-async", "requests", "aiohttp"}
CORPUS_SEED = "leakcheck-http-exceptions-1"
CORPUS_PATH = "corpora/exceptions/http.json"
#: the corpus request path and the timeout its faults use (every text is recorded with it,
#: and normalized): a bound, not a wait, for every stage but the two timeouts, which run side
#: by side; 0.2 s was short enough for a loaded machine to time out a TLS read (the limit
#: is the 1 s SYN retransmission of timeout_before_send)
_CORPUS_TIMEOUT = 0.5
_PATH = "/v1/deployments"
_WAITING_STAGES = frozenset({"timeout_before_send", "timeout_after_send"})
_VERSIONED = (
    "aiohttp",
    "h11",
    "httpcore",
    "httpcore2",
    "httpx",
    "httpx2",
    "multidict",
    "requests",
    "urllib3",
    "yarl",
)


@dataclass(frozen=True)
class Outcome:
    """What one client call saw. ``error``: the call failed before a full response
    (transport, TLS, timeout, body read); otherwise ``status`` and ``body``, with what
    ``raise_for_status()`` (where the client has one) and the JSON decoding raised."""

    client: str
    error: BaseException | None = field(default=None, repr=False)
    status: int | None = None
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    body: bytes = field(default=b"", repr=False)
    status_error: BaseException | None = field(default=None, repr=False)
    json_error: BaseException | None = field(default=None, repr=False)

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)


def _request_parts(
    fault: LoopbackFault, placed: Placed | None
) -> tuple[str, dict[str, str], list[tuple[str, str]]]:
    """(URL with the placement's query, request headers, query pairs)."""
    query = list(placed.query) if placed is not None else []
    headers = dict(placed.request_headers) if placed is not None else {}
    url = fault.url + _PATH
    if placed is not None and placed.userinfo is not None:
        user, password = (urllib.parse.quote(p, safe="") for p in placed.userinfo)
        url = f"{fault.scheme}://{user}:{password}@{fault.host}:{fault.port}{_PATH}"
    return url, headers, query


def call_client(client: str, fault: LoopbackFault, placed: Placed | None = None) -> Outcome:
    """``POST fault.url/v1/deployments`` with ``client`` as a gateway would: the
    placement's query and headers, a JSON body, ``fault.timeout``, trust in
    ``fault.ca_file``, no redirect following, no proxy from the environment, no retry."""
    if client not in CLIENTS:
        raise ValueError(f"unknown client {client!r}; known: {', '.join(CLIENTS)}")
    url, headers, query = _request_parts(fault, placed)
    call = {
        "httpx": _httpx,
        "httpx-async": _httpx_async,
        "httpx2": _httpx2,
        "httpx2-async": _httpx2_async,
        "requests": _requests,
        "urllib3": _urllib3,
        "aiohttp": _aiohttp,
    }[client]
    return call(fault, url, headers, query)


_BODY: dict[str, str | int] = {"repo": "web", "replicas": 2}


def _httpx_verify(fault: LoopbackFault) -> ssl.SSLContext | bool:
    # plain HTTP has no certificate to verify; False spares loading the system CA bundle,
    # which httpx does for every client it builds (~20 ms)
    return fault.ssl_context() if fault.scheme == "https" else False


#: How long an httpx client may take to connect (and its TLS handshake) where the stage
#: fails later, after the request went out: a loaded machine (CI under -n 2) took longer
#: than the stage's 0.15 s over https, and the client saw ConnectTimeout where it had to
#: see ReadTimeout. (At most the suite's 0.5 s; spent only when the machine is slow.)
_CONNECT_PATIENCE = 0.5


def _httpx_timeout(module: Any, fault: LoopbackFault) -> Any:
    if fault.stage.name != "timeout_after_send":
        return fault.timeout
    return module.Timeout(fault.timeout, connect=max(fault.timeout, _CONNECT_PATIENCE))


def _httpx(fault: LoopbackFault, url: str, headers: dict[str, str], query: Any) -> Outcome:
    import httpx

    return _httpx_family("httpx", httpx, fault, url, headers, query)


def _httpx_async(fault: LoopbackFault, url: str, headers: dict[str, str], query: Any) -> Outcome:
    import httpx

    return _httpx_family_async("httpx-async", httpx, fault, url, headers, query)


def _httpx2(fault: LoopbackFault, url: str, headers: dict[str, str], query: Any) -> Outcome:
    import httpx2

    return _httpx_family("httpx2", httpx2, fault, url, headers, query)


def _httpx2_async(fault: LoopbackFault, url: str, headers: dict[str, str], query: Any) -> Outcome:
    import httpx2

    return _httpx_family_async("httpx2-async", httpx2, fault, url, headers, query)


def _httpx_family(
    client: str, module: Any, fault: LoopbackFault, url: str, headers: dict[str, str], query: Any
) -> Outcome:
    """httpx and httpx2 (its fork, the same API over httpcore2): one sync driver."""
    verify = _httpx_verify(fault)
    timeout = _httpx_timeout(module, fault)
    with module.Client(verify=verify, timeout=timeout, trust_env=False) as session:
        try:
            response = session.post(url, params=query, headers=headers, json=_BODY)
        except Exception as exc:  # noqa: BLE001 - the text is what we record
            return Outcome(client, error=exc)
        return _steps(
            client,
            response.status_code,
            response.headers.multi_items(),
            response.content,
            response.raise_for_status,
            response.json,
        )


def _httpx_family_async(
    client: str, module: Any, fault: LoopbackFault, url: str, headers: dict[str, str], query: Any
) -> Outcome:
    import asyncio

    async def go() -> Outcome:
        verify = _httpx_verify(fault)
        timeout = _httpx_timeout(module, fault)
        async with module.AsyncClient(verify=verify, timeout=timeout, trust_env=False) as c:
            try:
                response = await c.post(url, params=query, headers=headers, json=_BODY)
            except Exception as exc:  # noqa: BLE001
                return Outcome(client, error=exc)
            return _steps(
                client,
                response.status_code,
                response.headers.multi_items(),
                response.content,
                response.raise_for_status,
                response.json,
            )

    return asyncio.run(go())


def _requests(fault: LoopbackFault, url: str, headers: dict[str, str], query: Any) -> Outcome:
    import requests

    with requests.Session() as session:
        session.trust_env = False
        try:
            response = session.post(
                url,
                params=query,
                headers=headers,
                json=_BODY,
                timeout=fault.timeout,
                verify=fault.ca_file if fault.scheme == "https" else True,
                allow_redirects=False,
            )
        except Exception as exc:  # noqa: BLE001
            return Outcome("requests", error=exc)
        return _steps(
            "requests",
            response.status_code,
            list(response.headers.items()),
            response.content,
            response.raise_for_status,
            response.json,
        )


def _urllib3(fault: LoopbackFault, url: str, headers: dict[str, str], query: Any) -> Outcome:
    import urllib3

    if query:
        url += "?" + urllib.parse.urlencode(query)
    context = fault.ssl_context() if fault.scheme == "https" else None
    # Retry(0): one attempt, and the MaxRetryError wrapping real code meets (as requests
    # does); a read error on a POST is raised as it is
    with urllib3.PoolManager(ssl_context=context) as pool:
        try:
            response = pool.request(
                "POST",
                url,
                headers=headers,
                json=_BODY,
                timeout=urllib3.Timeout(fault.timeout),
                retries=urllib3.Retry(0, redirect=False),
                redirect=False,
            )
        except Exception as exc:  # noqa: BLE001
            return Outcome("urllib3", error=exc)
        return _steps(
            "urllib3",
            response.status,
            list(response.headers.iteritems()),
            response.data,
            None,
            response.json,
        )


def _aiohttp(fault: LoopbackFault, url: str, headers: dict[str, str], query: Any) -> Outcome:
    import asyncio

    import aiohttp

    async def go() -> Outcome:
        # connect and read limits rather than ``total``: each stage then raises its own
        # timeout (ConnectionTimeoutError, SocketTimeoutError)
        timeout = aiohttp.ClientTimeout(sock_connect=fault.timeout, sock_read=fault.timeout)
        ssl_arg: Any = fault.ssl_context() if fault.scheme == "https" else True
        async with aiohttp.ClientSession(timeout=timeout, trust_env=False) as session:
            try:
                async with session.post(
                    url,
                    params=query,
                    headers=headers,
                    json=_BODY,
                    ssl=ssl_arg,
                    allow_redirects=False,
                ) as response:
                    body = await response.read()
                    status_error = json_error = None
                    try:
                        response.raise_for_status()
                    except Exception as exc:  # noqa: BLE001
                        status_error = exc
                    try:
                        await response.json()
                    except Exception as exc:  # noqa: BLE001
                        json_error = exc
                    return Outcome(
                        "aiohttp",
                        status=response.status,
                        headers=tuple(response.headers.items()),
                        body=body,
                        status_error=status_error,
                        json_error=json_error,
                    )
            except Exception as exc:  # noqa: BLE001
                return Outcome("aiohttp", error=exc)

    return asyncio.run(go())


def _steps(
    client: str,
    status: int,
    headers: Any,
    body: bytes,
    raise_for_status: Callable[[], Any] | None,
    decode_json: Callable[[], Any],
) -> Outcome:
    status_error = json_error = None
    if raise_for_status is not None:
        try:
            raise_for_status()
        except Exception as exc:  # noqa: BLE001
            status_error = exc
    try:
        decode_json()
    except Exception as exc:  # noqa: BLE001
        json_error = exc
    return Outcome(
        client,
        status=status,
        headers=tuple((str(k), str(v)) for k, v in headers),
        body=body,
        status_error=status_error,
        json_error=json_error,
    )


@dataclass(frozen=True)
class CorpusCase:
    """One corpus entry: a stage, the fault options, and its key in the corpus."""

    stage: str
    options: Mapping[str, str] = field(default_factory=dict)

    @property
    def key(self) -> str:
        tags = [v for k, v in sorted(self.options.items()) if k != "scheme"]
        if self.options.get("scheme") == "https" and self.stage not in TLS_STAGES:
            tags.append("https")
        return self.stage + (f"[{','.join(tags)}]" if tags else "")


#: every HTTP stage, the truncation and disconnect variants, and, where TLS changes what a
#: client sees of a broken connection, the same over HTTPS
CORPUS_CASES: tuple[CorpusCase, ...] = (
    *(CorpusCase(name) for name, stage in STAGES.items() if stage.transport == HTTP),
    CorpusCase("truncated_body", {"truncation": "chunked"}),
    CorpusCase("reset_after_send", {"disconnect": "close_without_response"}),
    CorpusCase("http_401", {"scheme": "https"}),
    CorpusCase("timeout_after_send", {"scheme": "https"}),
    CorpusCase("reset_after_send", {"scheme": "https"}),
    CorpusCase("reset_after_send", {"scheme": "https", "disconnect": "close_without_response"}),
    CorpusCase("truncated_body", {"scheme": "https"}),
    CorpusCase("truncated_body", {"scheme": "https", "truncation": "chunked"}),
)


def exception_text(exc: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(exc), exc))


def outcome_text(outcome: Outcome) -> str:
    """The corpus text of one call (raw: mask before showing it anywhere)."""
    if outcome.error is not None:
        return exception_text(outcome.error)
    lines = [f"status: {outcome.status}", "body: " + outcome.body.decode("utf-8", "replace")]
    if outcome.client in _RAISES_FOR_STATUS:
        raised = outcome.status_error
        lines.append("raise_for_status: " + (exception_text(raised) if raised else "-\n"))
    else:
        lines.append(f"raise_for_status: ({outcome.client} has none)\n")
    lines.append("json: " + (exception_text(outcome.json_error) if outcome.json_error else "-\n"))
    return "\n".join(line.rstrip("\n") for line in lines) + "\n"


_TIMEOUT = re.compile(r"\b(timeout)=\d+(?:\.\d+)?(?:e-?\d+)?")
_DURATION = re.compile(r"\b\d+\.\d+ ?(?:ms|s|sec|seconds)\b")


def normalize(text: str, fault: LoopbackFault, tmpdir: str | None = None) -> str:
    """The snapshots' normalization (``leakcheck.snapshot_store.normalize``: the fault's
    port, temporary paths, memory addresses, the ssl module's C line numbers), then the
    durations and the timeout, which the corpus's own fixed timeout makes."""
    text = normalize_text(text, ports=[fault.port], paths=[tmpdir] if tmpdir else [])
    text = _TIMEOUT.sub(r"\1=TIMEOUT", text)
    return _DURATION.sub("DURATION", text)


def client_versions() -> dict[str, str]:
    """The versions the corpus texts depend on."""
    return library_versions([*_VERSIONED, "python", "openssl"])


def record_exception_texts(check: LeakCheck | None = None) -> dict[str, Any]:
    """Run every (client, corpus case) against a loopback fault and return the corpus
    document: ``{"generated_by", "versions", "texts": {client: {case key: text}}}``, every
    text masked with ``check.mask`` (a ``LeakCheck`` seeded with ``CORPUS_SEED`` unless
    one is given; its secrets are those the request and the replies carried)."""
    from leakcheck.harness import LeakCheck

    if check is None:
        check = LeakCheck(seed=CORPUS_SEED, sinks=[])
    # bearer in Authorization, api_key in the query: the secrets real texts carry
    placed = check.place("query-api-key")
    case_of = {case.key: case for case in CORPUS_CASES}

    def make_fault(key: str) -> LoopbackFault:
        case = case_of[key]
        return LoopbackFault(
            case.stage, placed=placed, secret=check.secret, timeout=_CORPUS_TIMEOUT,
            **dict(case.options),
        )  # fmt: skip

    # made in a fixed order, so that the canaries a reply draws are the same every run
    faults = {
        (client, case.key): make_fault(case.key) for client in CLIENTS for case in CORPUS_CASES
    }

    def record(client: str, fault: LoopbackFault) -> str:
        with fault:
            tmpdir = fault.tmpdir
            outcome = call_client(client, fault, placed)
        if not fault.fired:
            raise HarnessError(
                check.mask(
                    f"corpus: {fault.describe()} with {client} never fired: "
                    f"{fault.not_reached_reason()}"
                )
            )
        return normalize(outcome_text(outcome), fault, tmpdir)

    # The timeout stages only wait, and touch no global but the (thread-safe) socket
    # watcher: they run side by side. The others patch socket.getaddrinfo (DNS failure, a
    # redirect target) and run one after the other.
    waiting = [job for job, fault in faults.items() if fault.stage.name in _WAITING_STAGES]
    raw: dict[str, dict[str, str]] = {client: {} for client in CLIENTS}
    with ThreadPoolExecutor(max_workers=max(1, len(waiting))) as pool:
        futures = {job: pool.submit(record, job[0], faults[job]) for job in waiting}
        for job, fault in faults.items():
            if job not in futures:
                raw[job[0]][job[1]] = record(job[0], fault)
        for job, future in futures.items():
            try:
                raw[job[0]][job[1]] = future.result()
            except HarnessError:
                # (a timeout stage run beside the others never fired: on a loaded machine
                # a client's TLS handshake among a few dozen took longer than its connect
                # timeout, and no request was read. Once more, alone: such a stage draws
                # no canary of a reply, and what it records is the same)
                raw[job[0]][job[1]] = record(job[0], make_fault(job[1]))
    texts = {c: {k: check.mask(t) for k, t in cases.items()} for c, cases in raw.items()}
    return {
        "generated_by": (
            "python scripts/record_http_exceptions.py "
            "(recorders.http.record_exception_texts, canary seed "
            f"{CORPUS_SEED!r}): the real exception text each client library produces at "
            "each stage against the loopback server, secrets masked, ports, temporary "
            "paths, addresses, durations and the timeout normalized"
        ),
        "versions": client_versions(),
        "texts": texts,
    }


def dump_corpus(document: Mapping[str, Any]) -> str:
    """The corpus file's text: sorted keys, stable across runs."""
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
