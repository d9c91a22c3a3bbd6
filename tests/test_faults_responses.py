"""The responses fault transport: every HTTP stage on requests clients, offline.

What is proven here: each answered stage serves its status, repeated headers and body
(placement pieces found by the scanner), and requests follows the redirect to an
intercepted signed URL; each failing stage raises what requests itself raises (type,
message with host, port and query, cause chain, ``.request``), checked against requests
failing for real on loopback sockets, through the adapter's own retries and timeouts;
careless ``str(exc)`` wrappers leak the query's API key and careful ones do not; an unused
fault fails an inner pytest run; ``HTTPAdapter.send`` is restored whatever the order in
which another responses mock stops.
"""

from __future__ import annotations

import json
import re
import socket
import ssl
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
import requests
import responses
from conftest import (
    QUIET_INNER_ARGS,
    assert_inner_run_safe,
    fault_canaries,
    inner_outcomes,
    self_scan,
)
from leakcheck.plugins.responses_faults import ResponsesFault
from requests.adapters import HTTPAdapter
from test_faults_respx import chain, real_upstream, shape
from urllib3.exceptions import (
    ConnectTimeoutError,
    IncompleteRead,
    MaxRetryError,
    NameResolutionError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
)
from urllib3.exceptions import SSLError as Urllib3SSLError
from urllib3.util.retry import Retry

from leakcheck.faults import UnknownTransportError, reply_for
from leakcheck.harness import LeakCheck
from leakcheck.httpfaults import ANSWERED
from leakcheck.netwatch import failing_dns, watch
from leakcheck.stages import STAGES

pytest_plugins = ["pytester"]

HOST = "api.upstream.test"
POOL = f"HTTPSConnectionPool(host='{HOST}', port=443)"
CONN = f"HTTPSConnection(host='{HOST}', port=443)"
MAX_RETRIES = re.escape(f"{POOL}: Max retries exceeded with url: /v1/deployments?page=2 ")
SSL_FAILED = "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: "
SSL_C = r" \(_ssl\.c:\d+\)"

#: stage -> (exception type, message pattern, types down the chain), for
#: ``POST https://api.upstream.test/v1/deployments?page=2`` with ``timeout=(3.05, 27)``
FAILURES: dict[str, tuple[type[Exception], str, list[type[BaseException]]]] = {
    "dns_failure": (
        requests.exceptions.ConnectionError,
        MAX_RETRIES
        + re.escape(
            f'(Caused by NameResolutionError("{CONN}: Failed to resolve '
            f"'{HOST}' ([Errno -2] Name or service not known)\"))"
        ),
        [MaxRetryError, NameResolutionError, socket.gaierror],
    ),
    "connection_refused": (
        requests.exceptions.ConnectionError,
        MAX_RETRIES
        + re.escape(
            f'(Caused by NewConnectionError("{CONN}: Failed to establish a new connection: '
            '[Errno 111] Connection refused"))'
        ),
        [MaxRetryError, NewConnectionError, ConnectionRefusedError],
    ),
    "tls_hostname_mismatch": (
        requests.exceptions.SSLError,
        MAX_RETRIES
        + re.escape(
            f'(Caused by SSLError(SSLCertVerificationError(1, "{SSL_FAILED}Hostname mismatch, '
            f"certificate is not valid for '{HOST}'."
        )
        + SSL_C
        + re.escape('")))'),
        [MaxRetryError, Urllib3SSLError, ssl.SSLCertVerificationError],
    ),
    "tls_untrusted_ca": (
        requests.exceptions.SSLError,
        MAX_RETRIES
        + re.escape(
            f"(Caused by SSLError(SSLCertVerificationError(1, '{SSL_FAILED}unable to get local "
            "issuer certificate"
        )
        + SSL_C
        + re.escape("')))"),
        [MaxRetryError, Urllib3SSLError, ssl.SSLCertVerificationError],
    ),
    "timeout_before_send": (
        requests.exceptions.ConnectTimeout,
        MAX_RETRIES
        + re.escape(f"(Caused by ConnectTimeoutError(<{CONN} at ")
        + "0x[0-9a-f]+"
        + re.escape(f">, 'Connection to {HOST} timed out. (connect timeout=3.05)'))"),
        [MaxRetryError, ConnectTimeoutError, TimeoutError],
    ),
    "timeout_after_send": (
        requests.exceptions.ReadTimeout,
        re.escape(f"{POOL}: Read timed out. (read timeout=27)"),
        [ReadTimeoutError, TimeoutError],
    ),
    "reset_after_send": (
        requests.exceptions.ConnectionError,
        re.escape("('Connection aborted.', ConnectionResetError(104, 'Connection reset by peer'))"),
        [ProtocolError, ConnectionResetError],
    ),
    "truncated_body": (
        requests.exceptions.ChunkedEncodingError,
        r"\('Connection broken: IncompleteRead\(\d+ bytes read, \d+ more expected\)', "
        r"IncompleteRead\(\d+ bytes read, \d+ more expected\)\)",
        [ProtocolError, IncompleteRead],
    ),
}


@pytest.fixture
def lc(request: pytest.FixtureRequest) -> Iterator[LeakCheck]:
    check = LeakCheck(seed="responses-faults", namespace=request.node.nodeid, sinks=[])
    with check:
        yield check


def send(request_args: dict[str, Any], session: requests.Session | None = None, **kw: Any) -> Any:
    """Prepare and send one request; the prepared request is kept in
    ``request_args["sent"]``."""
    args = {k: v for k, v in request_args.items() if k != "sent"}
    with session or requests.Session() as client:
        request_args["sent"] = client.prepare_request(requests.Request(**args))
        return client.send(request_args["sent"], **kw)


# --- answered stages ------------------------------------------------------------------------


@pytest.mark.parametrize("stage", sorted(ANSWERED))
def test_answered_stage_serves_its_reply(lc: LeakCheck, stage: str) -> None:
    fault = lc.force(stage, via="responses")
    with watch(lookup=HOST) as names, watch(port=443) as connects:
        response = requests.post(
            fault.url + "/v1/deployments?page=2", json={}, allow_redirects=False
        )
    assert response.status_code == STAGES[stage].http_status
    expected = reply_for(stage, lambda kind: "x")
    assert expected is not None
    assert response.headers["Content-Type"] == expected.header("Content-Type")
    assert response.headers["Content-Length"] == str(len(response.content))
    if stage == "http_429":
        assert response.headers["Retry-After"] == "7"
    if stage == "malformed_json":
        with pytest.raises(requests.exceptions.JSONDecodeError):
            response.json()
    if stage == "html_login_page":
        assert "<form" in response.text
    assert fault.fired and fault.calls == 1
    self_scan("\n".join(fault.evidence), lc.secrets, "evidence")  # before showing it
    assert fault.evidence == [
        f"responses intercepted POST /v1/deployments (request 1): answered {response.status_code}"
    ]
    assert names.lookups == 0 and connects.connects == 0


def test_requests_follows_the_redirect_to_the_intercepted_signed_url(lc: LeakCheck) -> None:
    fault = lc.force("redirect_signed_url", via="responses")
    response = requests.post(fault.url + "/v1/deployments", json={})  # follows by default
    assert [r.status_code for r in response.history] == [302]
    assert response.status_code == 403 and "Request has expired" in response.text
    same_target = response.url == response.history[0].headers["Location"]
    assert same_target, "the followed request did not go to the Location URL"
    assert response.request.method == "GET"  # 302 after POST: requests switches to GET
    assert fault.calls == 2
    self_scan("\n".join(fault.evidence), lc.secrets, "evidence")
    assert "on the redirect target: answered 403" in fault.evidence[1]


#: placement -> (stage, canary kinds the scanner must find in what the client got)
UPSTREAM_PIECES = {
    "upstream-set-cookie": ("http_401", {"cookie"}),
    "upstream-signed-location": ("http_403", {"hostname", "signature"}),
    "upstream-internal-host": ("http_5xx", {"hostname"}),
    "upstream-prose": ("html_login_page", {"prose"}),
    "upstream-reflects-request": ("http_401", {"bearer", "api_key"}),
}


@pytest.mark.parametrize("placement", sorted(UPSTREAM_PIECES))
def test_placement_pieces_reach_the_client(lc: LeakCheck, placement: str) -> None:
    stage, kinds = UPSTREAM_PIECES[placement]
    fault = lc.force(stage, via="responses", placement=placement)
    assert fault.placed is not None
    key = lc.secret("api_key")  # a query credential the reflecting upstream echoes
    headers = {**dict(fault.placed.request_headers), "X-Trace": "trace-5150"}
    response = requests.post(
        fault.url + "/v1/deployments", params={"api_key": key}, headers=headers, json={}
    )
    assert response.status_code == STAGES[stage].http_status
    raw_headers = list(response.raw.headers.items())
    lc.expose({"headers": raw_headers, "body": response.text})
    found = {leak.finding.kind for leak in lc.findings()}
    assert kinds <= found, f"expected {sorted(kinds)} in the reply, found {sorted(found)}"
    if placement == "upstream-set-cookie":
        assert sum(1 for k, _ in raw_headers if k.lower() == "set-cookie") == 2
        assert len(response.cookies) == 2
    if placement == "upstream-reflects-request":
        echo = json.loads(response.text.split("\n", 1)[1])["request"]
        assert echo["method"] == "POST"
        assert echo["url"].startswith(fault.url + "/v1/deployments?api_key=")
        assert echo["headers"]["Host"] == HOST and echo["headers"]["X-Trace"] == "trace-5150"
        same = echo["headers"]["Authorization"] == headers["Authorization"]
        assert same, "the reflected Authorization header is not the one sent"


def test_reflected_request_with_a_bytes_header_value(lc: LeakCheck) -> None:
    """requests sends a bytes header value as it is: the reflecting upstream echoes what
    came over the wire (latin-1, as the respx and loopback faults read it)."""
    fault = lc.force("http_401", via="responses", placement="upstream-reflects-request")
    key = lc.secret("api_key")
    response = requests.post(
        fault.url + "/v1/deployments",
        headers={"X-Api-Key": key.encode(), "X-Trace": "caf\xe9".encode("latin-1")},
        json={},
    )
    assert response.status_code == 401
    echo = json.loads(response.text.split("\n", 1)[1])["request"]
    assert echo["headers"]["X-Api-Key"] == key.encode().decode("latin-1")
    assert echo["headers"]["X-Trace"] == "caf\xe9"
    lc.expose(response.text)
    assert "api_key" in {leak.finding.kind for leak in lc.findings()}


def test_reflected_request_shows_no_userinfo(lc: LeakCheck) -> None:
    """An upstream sees Host and an Authorization header, never the URL's userinfo."""
    fault = lc.force("http_401", via="responses", placement="upstream-reflects-request")
    # requests sends Basic credentials as latin-1 only: a canary with an emoji cannot go
    password = lc.register("Zq7-vW2xK9-pR4tL8mN3", kind="password")
    url = fault.url.replace("https://", f"https://deploy:{quote(password, safe='')}@")
    response = requests.post(url + "/v1/deployments", json={})
    echo = json.loads(response.text.split("\n", 1)[1])["request"]
    assert echo["url"] == fault.url + "/v1/deployments"
    assert echo["headers"]["Authorization"].startswith("Basic ")  # requests made it
    lc.expose(response.text)
    # the only trace is inside the base64 of "deploy:<password>"
    forms = {(leak.finding.kind, leak.finding.form[:6]) for leak in lc.findings()}
    assert forms == {("password", "base64")}


# --- failing stages -------------------------------------------------------------------------


@pytest.mark.parametrize("stage", sorted(FAILURES))
def test_failing_stage_raises_what_requests_raises(lc: LeakCheck, stage: str) -> None:
    fault = lc.force(stage, via="responses")
    expected_type, message, causes = FAILURES[stage]
    args: dict[str, Any] = {
        "method": "POST",
        "url": fault.url + "/v1/deployments",
        "params": {"page": 2},
        "json": {},
    }
    with watch(lookup=HOST) as names, watch(port=443) as connects:
        with pytest.raises(requests.RequestException) as info:
            send(args, timeout=(3.05, 27))
    exc = info.value
    assert type(exc) is expected_type
    assert re.fullmatch(message, str(exc)), str(exc)
    assert [type(e) for e in chain(exc)[1:]] == causes
    if stage == "truncated_body":
        assert exc.request is None  # requests raises ChunkedEncodingError without it
    else:
        assert exc.request is args["sent"] and exc.response is None
    assert fault.fired and fault.calls == 1
    assert names.lookups == 0 and connects.connects == 0
    if stage != "truncated_body":
        assert fault.evidence == [
            "responses intercepted POST /v1/deployments (request 1): raised "
            + expected_type.__name__
        ]


def test_truncated_body_fails_only_when_read(lc: LeakCheck) -> None:
    fault = lc.force("truncated_body", via="responses")
    response = requests.get(fault.url + "/v1/logs", stream=True)
    assert response.status_code == 200 and response.headers["Content-Length"] == "4096"
    assert fault.calls == 1 and not fault.fired
    assert "never read up to the cut" in fault.not_reached_reason()
    with pytest.raises(requests.exceptions.ChunkedEncodingError):
        response.content  # noqa: B018 - reading is the point
    assert fault.fired and len(fault.evidence) == 1


def test_the_adapters_retries_are_honoured(lc: LeakCheck) -> None:
    """A mounted adapter that retries gets what urllib3 would give it: a read timeout on
    a GET is retried, then reported as a ConnectionError naming the URL and query."""
    fault = lc.force("timeout_after_send", via="responses")
    session = requests.Session()
    session.mount("https://", HTTPAdapter(max_retries=Retry(2)))
    with pytest.raises(requests.exceptions.ConnectionError) as info:
        send({"method": "GET", "url": fault.url + "/v1/deployments?page=2"}, session, timeout=5)
    assert type(info.value) is requests.exceptions.ConnectionError
    assert str(info.value).startswith(
        f"{POOL}: Max retries exceeded with url: /v1/deployments?page=2 (Caused by "
        f'ReadTimeoutError("{POOL}: Read timed out. (read timeout=5)"))'
    )
    assert fault.calls == 3
    assert fault.evidence == [
        "responses intercepted GET /v1/deployments (request 1): raised ConnectionError after 3 "
        "attempts (the adapter's retries)"
    ]
    # a POST is not retried on a read error: the ReadTimeout comes through as it is
    with pytest.raises(requests.exceptions.ReadTimeout):
        send({"method": "POST", "url": fault.url + "/v1/deployments"}, session, timeout=5)


def test_verify_false_does_not_fire_a_tls_stage(lc: LeakCheck) -> None:
    fault = lc.force("tls_untrusted_ca", via="responses")
    with pytest.raises(requests.exceptions.ConnectionError) as info:
        requests.get(fault.url + "/v1/deployments", verify=False)
    assert "verify=False" in str(info.value)
    assert not fault.fired
    assert "with verify=False: certificate verification was off" in fault.not_reached_reason()
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(fault.url + "/v1/deployments")
    assert fault.fired


def test_exception_placement_rides_on_the_real_chain(lc: LeakCheck) -> None:
    fault = lc.force("connection_refused", via="responses", placement="exception-chain")
    with pytest.raises(requests.exceptions.ConnectionError) as info:
        requests.get(fault.url + "/v1/deployments")
    assert [type(e) for e in chain(info.value)] == [
        requests.exceptions.ConnectionError,
        MaxRetryError,
        NewConnectionError,
        ConnectionRefusedError,
        ConnectionError,
    ]
    lc.exception_reached_caller(info.value)
    assert {leak.finding.kind for leak in lc.findings()} >= {"api_key", "bearer"}


REAL = [
    "dns_failure",
    "connection_refused",
    "tls_hostname_mismatch",
    "tls_untrusted_ca",
    "timeout_after_send",
    "reset_after_send",
    "truncated_body",
]


@pytest.mark.parametrize("stage", REAL)
def test_same_exception_as_the_real_failure(
    lc: LeakCheck,
    certs: dict[str, Any],  # noqa: F811 (the fixture imported above)
    stage: str,
) -> None:
    """requests failing for real on loopback, then the fault at the same URL: same types
    and messages all the way down."""
    timeout = 0.2 if stage == "timeout_after_send" else 0.5  # a busy CI box needs slack
    with real_upstream(stage, certs, "requests") as (url, verify):
        real_args = {"method": "POST", "url": url + "/v1/deployments?page=2", "json": {"a": 1}}
        with pytest.raises(requests.RequestException) as real:
            send(real_args, verify=verify, timeout=timeout)
    fault = lc.force(stage, via="responses", url=url)
    fake_args = {"method": "POST", "url": url + "/v1/deployments?page=2", "json": {"a": 1}}
    with pytest.raises(requests.RequestException) as fake:
        send(fake_args, verify=verify, timeout=timeout)
    assert shape(fake.value) == shape(real.value)
    if stage == "truncated_body":
        assert real.value.request is None and fake.value.request is None
    else:
        assert real.value.request is real_args["sent"]
        assert fake.value.request is fake_args["sent"]
    assert fault.fired


# --- leaky and careful gateways ------------------------------------------------------------------


def careless(call: Any) -> dict[str, Any]:
    try:
        call().raise_for_status()
    except requests.RequestException as exc:
        return {"ok": False, "error": str(exc)}
    return {"ok": True}


def careful(call: Any) -> dict[str, Any]:
    try:
        call().raise_for_status()
    except requests.RequestException:
        return {"ok": False, "code": "UPSTREAM_UNAVAILABLE", "retryable": True}
    return {"ok": True}


@pytest.mark.parametrize(
    ("stage", "placement", "wrapper", "leaked"),
    [
        # "Max retries exceeded with url: /v1/deployments?api_key=..."
        ("dns_failure", "query-api-key", careless, {"api_key"}),
        ("tls_hostname_mismatch", "query-api-key", careless, {"api_key"}),
        ("timeout_before_send", "query-api-key", careless, {"api_key"}),
        ("dns_failure", "query-api-key", careful, set()),
        # a read timeout and a reset name no URL
        ("timeout_after_send", "query-api-key", careless, set()),
        ("reset_after_send", "query-api-key", careless, set()),
        # "403 Client Error: Forbidden for url: https://<host>/...?X-Amz-Signature=..."
        ("redirect_signed_url", "authorization-header", careless, {"hostname", "signature"}),
        ("redirect_signed_url", "authorization-header", careful, set()),
    ],
)
def test_leaky_and_careful_wrappers(
    stage: str, placement: str, wrapper: Any, leaked: set[str]
) -> None:
    with LeakCheck(seed="responses-wrappers", sinks=[]) as check:
        fault = check.force(stage, via="responses", placement=placement)
        placed = fault.placed
        assert placed is not None

        def call() -> requests.Response:
            return requests.post(
                fault.url + "/v1/deployments",
                params=dict(placed.query),
                headers=dict(placed.request_headers),
                json={},
            )

        check.expose(wrapper(call))
        assert fault.fired
        found = {leak.finding.kind for leak in check.findings() if not leak.allowed}
    assert found == leaked, sorted(found)


# --- evidence, harness errors, options ---------------------------------------------------------


def test_evidence_shows_no_query_and_withholds_a_secret_path(lc: LeakCheck) -> None:
    fault = lc.force("http_403", via="responses", placement="query-api-key")
    assert fault.placed is not None
    key = fault.placed.secrets["api_key"]
    requests.get(fault.url + "/v1/deployments", params=dict(fault.placed.query))
    requests.get(fault.url + "/v1/keys/" + quote(key, safe=""))
    self_scan("\n".join(fault.evidence), lc.secrets, "evidence")  # before showing it
    assert fault.evidence == [
        "responses intercepted GET /v1/deployments (request 1): answered 403",
        "responses intercepted GET <a path holding a secret> (request 2): answered 403",
    ]


def test_unreached_fault_is_a_harness_error(lc: LeakCheck) -> None:
    fault = lc.force("reset_after_send", via="responses", url="http://api.upstream.test:8080")
    assert fault.not_reached_reason() == (
        "no request reached http://api.upstream.test:8080 (responses)"
    )
    assert "harness error: stage reset_after_send via responses was never reached" in (
        lc.harness_errors()
    )


def test_requests_elsewhere_fail_clearly_without_the_network(lc: LeakCheck) -> None:
    fault = lc.force("http_401", via="responses", placement="query-api-key")
    assert fault.placed is not None
    with watch(lookup="elsewhere.test") as names, watch(port=443) as connects:
        with pytest.raises(requests.exceptions.ConnectionError) as info:
            requests.get("https://elsewhere.test/v1", params=dict(fault.placed.query))
    assert names.lookups == 0 and connects.connects == 0
    self_scan(str(info.value) + fault.not_reached_reason(), lc.secrets, "messages")
    assert "answers only https://api.upstream.test" in str(info.value)
    assert "elsewhere.test" not in str(info.value)
    assert info.value.request is not None and fault.other_calls == 1 and not fault.fired
    assert "the mock refused 1 request(s) to other URLs" in fault.not_reached_reason()


@pytest.mark.parametrize(
    ("stage", "options", "error", "words"),
    [
        ("http_401", {"retries": 3}, ValueError, "unknown option(s) retries"),
        ("http_401", {"url": "api.upstream.test"}, ValueError, "http:// or https://"),
        ("tls_hostname_mismatch", {"url": "http://h.test"}, ValueError, "needs an https"),
        ("http_401", {"method": 7}, ValueError, "HTTP method name"),
        ("approval_declined", {}, UnknownTransportError, "gateway-side stage"),
        ("ssh_command_failed", {}, UnknownTransportError, "forces HTTP stages only"),
    ],
)
def test_bad_use_is_a_clear_error(
    lc: LeakCheck, stage: str, options: dict[str, Any], error: type[Exception], words: str
) -> None:
    with pytest.raises(error) as info:
        lc.force(stage, via="responses", **options)
    assert words in str(info.value) and lc.faults == []


def test_method_option_answers_one_method(lc: LeakCheck) -> None:
    fault = lc.force("http_429", via="responses", method="GET")
    with pytest.raises(requests.exceptions.ConnectionError):
        requests.delete(fault.url + "/v1/deployments/7")
    assert requests.get(fault.url + "/v1/deployments").status_code == 429
    assert fault.calls == 1 and fault.other_calls == 1


# --- globals and other mocks -------------------------------------------------------------------

GENUINE_SEND = HTTPAdapter.send


def test_stop_restores_the_adapter_and_is_idempotent(lc: LeakCheck) -> None:
    assert HTTPAdapter.send is GENUINE_SEND
    fault = lc.force("http_401", via="responses", url="https://api.upstream.invalid")
    assert HTTPAdapter.send is not GENUINE_SEND
    assert requests.get(fault.url + "/v1/x").status_code == 401
    fault.stop()
    fault.stop()
    assert HTTPAdapter.send is GENUINE_SEND
    # no longer intercepted: requests asks the (failing) resolver
    with failing_dns() as failed, pytest.raises(requests.exceptions.ConnectionError):
        requests.get(fault.url + "/v1/x", timeout=0.5)
    assert failed() == 1 and fault.calls == 1


def test_other_urls_pass_to_the_tests_own_mock(lc: LeakCheck) -> None:
    with responses.RequestsMock(assert_all_requests_are_fired=True) as user:
        user.get("https://other.test/health", status=204)
        fault = lc.force("http_403", via="responses")
        assert requests.get("https://other.test/health").status_code == 204
        assert requests.get(fault.url + "/v1/x").status_code == 403
        with pytest.raises(requests.exceptions.ConnectionError) as info:
            requests.get("https://unknown.test/")
        assert "Connection refused by Responses" in str(info.value)  # the user's mock said it
        fault.stop()
        assert requests.get("https://other.test/health").status_code == 204
    assert HTTPAdapter.send is GENUINE_SEND


def test_a_mock_stopped_out_of_order_is_not_brought_back(lc: LeakCheck) -> None:
    user = responses.RequestsMock(assert_all_requests_are_fired=False)
    user.start()
    try:
        fault = lc.force("http_403", via="responses")
    finally:
        user.stop()  # puts back the genuine send, over the fault's patch
    assert HTTPAdapter.send is GENUINE_SEND
    fault.stop()
    assert HTTPAdapter.send is GENUINE_SEND


# --- through pytest ----------------------------------------------------------------------------

SEED = "responses-inner"
INNER = """
import hashlib, pathlib
import pytest, requests

def test_unused(leakcheck):
    leakcheck.force("dns_failure", via="responses", placement="query-api-key")
    digest = hashlib.sha256(leakcheck.secrets[0].value.encode()).hexdigest()
    pathlib.Path("proof-test_unused.txt").write_text(digest)
    leakcheck.expose({"ok": True})

def test_careless(leakcheck):
    fault = leakcheck.force("dns_failure", via="responses", placement="query-api-key")
    try:
        requests.get(fault.url + "/v1/deployments", params=dict(fault.placed.query))
    except requests.RequestException as exc:
        leakcheck.expose({"ok": False, "error": str(exc)})

def test_careful(leakcheck):
    fault = leakcheck.force("dns_failure", via="responses", placement="query-api-key")
    try:
        requests.get(fault.url + "/v1/deployments", params=dict(fault.placed.query))
    except requests.RequestException:
        leakcheck.expose({"ok": False, "code": "UPSTREAM_UNAVAILABLE"})
"""


def test_unused_fault_fails_the_inner_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest(*QUIET_INNER_ARGS, "-rA", f"--leakcheck-seed={SEED}")
    assert inner_outcomes(result) == {
        "test_unused": "FAILED",
        "test_careless": "FAILED",
        "test_careful": "PASSED",
    }
    out = result.stdout.str()
    assert (
        "harness error: stage dns_failure via responses was never reached: no request "
        "reached https://api.upstream.test (responses)." in out
    )
    assert "[LEAK] caller: tool response $.error" in out  # the careless one, masked
    secrets = [
        *fault_canaries(SEED, "test_unused", "dns_failure", "responses", "query-api-key"),
        *fault_canaries(SEED, "test_careless", "dns_failure", "responses", "query-api-key"),
    ]
    assert_inner_run_safe(pytester, result, secrets, ["test_unused"])


def test_factory_is_registered() -> None:
    from leakcheck.faults import fault_factories

    assert fault_factories()["responses"] is ResponsesFault


# --- never more lenient than the real client ---------------------------------------------------


def test_a_header_value_http_client_cannot_encode_fails_as_for_real(lc: LeakCheck) -> None:
    """requests lets a non-latin-1 value through; http.client refuses it while writing the
    header. Real client on loopback first, then the fault at the same URL."""
    from test_faults_respx_httpx2 import accepting_server

    headers = {"Authorization": "Bearer " + lc.secret("bearer") + "€"}
    with accepting_server() as port:
        url = f"http://127.0.0.1:{port}"
        with pytest.raises(UnicodeEncodeError) as real:
            requests.get(url + "/v1/d", headers=headers, timeout=0.5)
    fault = lc.force("http_401", via="responses", url=url)
    with pytest.raises(UnicodeEncodeError) as fake:
        requests.get(url + "/v1/d", headers=headers, timeout=0.5)
    assert shape(fake.value) == shape(real.value)
    assert fault.fired
    assert fault.evidence == [
        "responses intercepted GET /v1/d (request 1): the client refused to send it "
        "(http.client), raised UnicodeEncodeError"
    ]


def test_over_https_the_connection_fails_before_the_header(lc: LeakCheck) -> None:
    """urllib3 connects an https connection before writing headers: a DNS failure wins."""
    fault = lc.force("dns_failure", via="responses")
    headers = {"Authorization": "Bearer €"}
    with pytest.raises(requests.exceptions.ConnectionError):
        requests.get(fault.url + "/v1/d", headers=headers, timeout=0.5)
    with failing_dns(), pytest.raises(requests.exceptions.ConnectionError):
        requests.get("https://api.upstream.invalid/v1/d", headers=headers, timeout=0.5)


def test_a_valid_header_is_answered_by_responses(lc: LeakCheck) -> None:
    fault = lc.force("http_401", via="responses", url="http://api.upstream.test")
    response = requests.get(fault.url + "/v1/d", headers={"Authorization": "Bearer é"})
    assert response.status_code == 401  # latin-1 encodes: http.client sends it


def test_requests_refusing_a_malformed_credential_is_the_proof(lc: LeakCheck) -> None:
    """requests refuses a value with a newline while preparing the request, before any
    transport: the fault records that refusal for a request to its URL, and only then."""
    original = requests.PreparedRequest.prepare_headers
    fault = lc.force("http_401", via="responses", placement="credential-trailing-newline")
    placed = fault.placed
    assert placed is not None
    with pytest.raises(requests.exceptions.InvalidHeader) as info:
        requests.get(fault.url + "/v1/d", headers=dict(placed.request_headers))
    lc.exception_reached_caller(info.value)  # requests quotes the value in its message
    assert {leak.finding.kind for leak in lc.findings()} == {"bearer"}
    assert fault.fired
    assert fault.evidence == [
        "responses saw requests refuse GET /v1/d (request 1) while preparing it: invalid "
        "header value, raised InvalidHeader"
    ]
    with pytest.raises(requests.exceptions.InvalidHeader):  # another URL: not this case
        requests.get("https://elsewhere.test/", headers=dict(placed.request_headers))
    assert fault.calls == 1
    fault.stop()
    assert requests.PreparedRequest.prepare_headers is original
