"""The mocked transports make the client library's own log records, as a real connection does.

A mock is never more lenient than the real client, and that holds for what the client logs
too: urllib3 warns "Retrying (...) after connection broken by ...: /v1/x?api_key=..." at
WARNING, a level production emits, and logs each request line at DEBUG; httpcore traces the
upstream's response headers (``Set-Cookie``, a signed ``Location``) and h11's refusal, which
quotes the header value, at DEBUG. Each record is compared here with the one the same
client makes failing or answered for real on a loopback socket (ports and object addresses
aside), and a careful gateway that declares the logger's production level still passes.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
import requests
from requests.adapters import HTTPAdapter
from test_faults_respx import closed_port, loopback
from urllib3.util.retry import Retry

from leakcheck.harness import LeakCheck

pytest_plugins = ["pytester"]

#: a query that is no canary: the records' texts are compared whole
QUERY = {"api_key": "k3y value"}


#: the loggers whose records are compared (their filters are taken off while a comparison
#: runs: the careful example gateway, used in process by other tests, drops httpcore's
#: header traces at them for the rest of the process)
FILTERED = ("httpcore.http11", "httpcore.connection", "urllib3.connectionpool")


@contextmanager
def records_of(*loggers: str) -> Iterator[list[str]]:
    """``level name message`` of each record of ``loggers`` while inside, with the ports
    and object addresses taken out."""
    taken: list[str] = []

    class Take(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            text = f"{record.levelname} {record.name} {record.getMessage()}"
            text = re.sub(r"0x[0-9a-f]+", "0x?", text)
            taken.append(re.sub(r"(127\.0\.0\.1|localhost)[:', ]+\d+", "ADDRESS", text))

    handler = Take(logging.DEBUG)
    saved = [(logging.getLogger(name), logging.getLogger(name).level) for name in loggers]
    filtered = [(logging.getLogger(name), logging.getLogger(name).filters) for name in FILTERED]
    for logger, _ in saved:
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
    for logger, _ in filtered:
        logger.filters = []
    try:
        yield taken
    finally:
        for logger, level in saved:
            logger.removeHandler(handler)
            logger.setLevel(level)
        for logger, filters in filtered:
            logger.filters = filters


def _requests_get(url: str, retries: int = 0) -> None:
    with requests.Session() as session:
        session.mount("http://", HTTPAdapter(max_retries=retries))
        try:
            session.get(url + "/v1/x", params=QUERY, timeout=0.2)
        except requests.RequestException:
            pass


def _mocked(stage: str, via: str, url: str, call: Callable[[str], None]) -> list[str]:
    with LeakCheck(seed="library-records", sinks=[]) as check:
        fault = check.force(stage, via=via, url=url)
        with records_of("urllib3", "httpcore") as taken:
            call(fault.url)
        assert fault.fired
    return taken


# --- urllib3 under the responses mock ----------------------------------------------------------


def test_urllib3s_retry_warning_names_the_target_as_for_real() -> None:
    """A mounted ``HTTPAdapter(max_retries=2)`` on a refused connection: three connections
    started, two "Retrying" warnings naming the path and query (the API key)."""
    url = f"http://127.0.0.1:{closed_port()}"
    with records_of("urllib3") as real:
        _requests_get(url, retries=2)
    mocked = _mocked("connection_refused", "responses", url, lambda u: _requests_get(u, 2))
    assert mocked == real
    warnings = [text for text in real if text.startswith("WARNING")]
    assert len(warnings) == 2 and all("/v1/x?api_key=k3y+value" in w for w in warnings)


def test_a_reset_is_warned_with_the_os_error_as_for_real() -> None:
    with loopback("reset") as port:
        with records_of("urllib3") as real:
            _requests_get(f"http://127.0.0.1:{port}", retries=1)
    # (the one-connection server is gone: the mock at its address for the same two tries)
    mocked = _mocked("reset_after_send", "responses", f"http://127.0.0.1:{port}",
                     lambda u: _requests_get(u, 1))  # fmt: skip
    retried = [text for text in real if text.startswith("WARNING")]
    assert retried and "ConnectionResetError(104" in retried[0]
    assert [text for text in mocked if text.startswith("WARNING")] == retried


def test_urllib3s_request_line_of_an_answer_as_for_real() -> None:
    """An answered 401: the DEBUG request line names the path and query and the answer's
    length, as the real client's does against the loopback upstream."""
    with LeakCheck(seed="library-records", sinks=[]) as check:
        fault = check.force("http_401", via="loopback")
        with records_of("urllib3") as real:
            _requests_get(fault.url)
        assert fault.fired
    mocked = _mocked("http_401", "responses", fault.url, _requests_get)
    line = [text for text in real if "HTTP/1.1" in text]
    assert line and '/v1/x?api_key=k3y+value HTTP/1.1" 401' in line[0]
    assert [text for text in mocked if "HTTP/1.1" in text] == line
    assert [t for t in mocked if "Starting new" in t] == [t for t in real if "Starting new" in t]


def test_a_status_retry_names_the_target_never_the_userinfo() -> None:
    """``Retry(status_forcelist=[503])`` exhausted: the ``RetryError`` names the pool and
    the request target as urllib3's does; the URL's userinfo is not in it."""
    with LeakCheck(seed="library-records", sinks=[]) as check:
        fault = check.force("http_5xx", via="responses")
        base = fault.url.replace("://", "://deploy:pa55word@")
        with requests.Session() as session:
            session.mount("https://", HTTPAdapter(max_retries=Retry(1, status_forcelist=[503])))
            with pytest.raises(requests.exceptions.RetryError) as info:
                session.get(base + "/v1/x", params=QUERY)
        assert fault.fired
    text = str(info.value)
    assert "pa55word" not in text
    assert text.startswith(
        "HTTPSConnectionPool(host='api.upstream.test', port=443): Max retries exceeded with "
        "url: /v1/x?api_key=k3y+value (Caused by ResponseError('too many 503 error responses'))"
    )


def test_a_url_set_by_hand_is_encoded_as_urllib3_sends_it() -> None:
    """A prepared request whose URL was set by hand with a space in its query: urllib3
    sends it as ``%20`` and gets its answer; http.client never sees the raw space."""
    with LeakCheck(seed="library-records", sinks=[]) as check:
        fault = check.force("http_401", via="responses")
        with requests.Session() as session:
            prepared = session.prepare_request(requests.Request("GET", fault.url + "/v1/x"))
            prepared.url = fault.url + "/v1/x?api_key=k3y value"
            response = session.send(prepared)
        assert fault.fired
    assert response.status_code == 401


def test_a_missing_ca_bundle_fails_before_any_request(tmp_path: Any) -> None:
    """``verify=`` a CA bundle that does not exist: requests' own ``OSError`` naming the
    path, and no request (the stage is not reached), as for real."""
    missing = str(tmp_path / "no-such-ca.pem")
    with LeakCheck(seed="library-records", sinks=[]) as check:
        fault = check.force("http_401", via="responses")
        with pytest.raises(OSError, match="Could not find a suitable TLS CA certificate bundle"):
            requests.get(fault.url + "/v1/x", verify=missing)
        assert fault.calls == 0 and not fault.fired
        assert "was never reached" in check.harness_errors()


# --- httpcore under the respx mock -------------------------------------------------------------


def _httpx_get(url: str, **headers: str) -> None:
    with httpx.Client(timeout=0.2) as client:
        try:
            client.get(url + "/v1/x", params=QUERY, headers=headers)
        except httpx.HTTPError:
            pass


def _http11(texts: list[str]) -> list[str]:
    return [text for text in texts if " httpcore.http11 " in text]


@pytest.mark.parametrize("stage, mode", [("reset_after_send", "reset"),
                                         ("timeout_after_send", "hang")])  # fmt: skip
def test_httpcores_trace_of_a_failed_read_as_for_real(stage: str, mode: str) -> None:
    with loopback(mode) as port:
        with records_of("httpcore") as real:
            _httpx_get(f"http://127.0.0.1:{port}")
    mocked = _mocked(stage, "respx", f"http://127.0.0.1:{port}", _httpx_get)
    assert _http11(real) and _http11(mocked) == _http11(real)


def test_httpcores_trace_of_a_refused_header_quotes_it_as_for_real() -> None:
    """A header value with a trailing newline: h11 refuses it while the headers are
    written, and the trace's ``.failed`` record quotes the value."""
    with loopback("hang") as port:
        with records_of("httpcore") as real:
            _httpx_get(f"http://127.0.0.1:{port}", authorization="Bearer t0ken\n")
    mocked = _mocked("http_401", "respx", f"http://127.0.0.1:{port}",
                     lambda u: _httpx_get(u, authorization="Bearer t0ken\n"))  # fmt: skip
    assert any("Bearer t0ken" in text for text in _http11(real))
    assert _http11(mocked) == _http11(real)


def test_httpcores_trace_of_an_answer_holds_its_headers_as_for_real() -> None:
    """The upstream's ``Set-Cookie`` in the ``receive_response_headers.complete`` record,
    over a real connection to the loopback upstream and under the mock."""
    traces = []
    for via in ("loopback", "respx"):
        with LeakCheck(seed="library-records", sinks=[]) as check:
            fault = check.force("http_401", via=via, placement="upstream-set-cookie")
            cookie = next(s.value for s in check.secrets if s.kind == "cookie")
            with records_of("httpcore") as taken:
                _httpx_get(fault.url)
            assert fault.fired
        names = [text.split(" ")[2] for text in _http11(taken)]
        headers = [text for text in _http11(taken) if "receive_response_headers.complete" in text]
        traces.append(names[: names.index("receive_response_headers.complete") + 1])
        assert len(headers) == 1 and cookie in headers[0]
    assert traces[0] == traces[1]


def test_a_careful_gateway_declaring_httpcores_level_passes(pytester: pytest.Pytester) -> None:
    with records_of():  # (no filter of an earlier test on httpcore's loggers)
        _declaring_httpcores_level(pytester)


def _declaring_httpcores_level(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import httpx, pytest

        def gateway(url):
            return {"status": httpx.get(url + "/v1/x").status_code}

        @pytest.mark.leakcheck(log_levels={"httpcore": "INFO"})
        def test_declared(leakcheck):
            fault = leakcheck.force("http_401", via="respx", placement="upstream-set-cookie")
            leakcheck.expose(gateway(fault.url))

        def test_strict(leakcheck):
            fault = leakcheck.force("http_401", via="respx", placement="upstream-set-cookie")
            leakcheck.expose(gateway(fault.url))
        """
    )
    result = pytester.runpytest("-p", "no:randomly", "-q")
    result.assert_outcomes(passed=1, failed=1)
    assert "[LEAK] operator: log record httpcore.http11 DEBUG message" in result.stdout.str()
