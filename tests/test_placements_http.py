"""Placements on the wire: every canary a placement puts in an HTTP header is a header value
a client sends (visible ASCII), and the malformed-credential placements damage the
credential the gateway gets, not the secret searched for.

A non-ASCII canary in a header made httpx refuse the request (``UnicodeEncodeError``) before
any fault could fire, a harness error instead of a case. The malformed credential (a token
with its trailing newline, as a mounted secret or an ``.env`` line gives it) is the most
common real leak of all: the client refuses the header and quotes the value in its error.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator

import h11
import httpx
import httpx2
import pytest
import requests

from leakcheck.canaries import CanaryFactory
from leakcheck.harness import LeakCheck
from leakcheck.placements import PLACEMENTS, Placed, place

NO_CA = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
SEEDS = range(40)
HEADER_PLACEMENTS = sorted(
    name
    for name, p in PLACEMENTS.items()
    if p.where in ("credential", "upstream") or "request_headers" in p.spec
)


def visible_ascii(text: str) -> bool:
    return text != "" and all(0x21 <= ord(ch) <= 0x7E for ch in text.replace(" ", "!"))


def rendered(name: str, seed: int) -> Placed:
    factory = CanaryFactory(seed, namespace=name)
    return place(name, lambda kind: factory(kind).value)


def header_values(placed: Placed) -> Iterator[tuple[str, str]]:
    """Every header value a placement puts on a request or a reply, with the placement's
    deliberate damage taken off (that part is the point of a malformed placement)."""
    damage = tuple(placed.malformed.values())
    for name, value in (*placed.request_headers, *placed.reply_headers):
        for suffix in damage:
            value = value.removesuffix(suffix)
        yield name, value


@pytest.mark.parametrize("name", HEADER_PLACEMENTS)
def test_every_header_canary_is_a_valid_header_value(name: str) -> None:
    for seed in SEEDS:
        placed = rendered(name, seed)
        for header, value in header_values(placed):
            assert visible_ascii(value), f"{name} seed {seed}: {header} is not visible ASCII"
            # h11 (httpx, httpx2) accepts it as it stands
            h11.Request(method="GET", target="/", headers=[("Host", "h"), (header, value)])


def test_the_check_has_teeth_on_a_non_ascii_kind() -> None:
    """The query key keeps its non-ASCII hostile characters (a URL percent-encodes them):
    had a header placement used it, the check above would fail."""
    factory = CanaryFactory(0)
    assert not all(visible_ascii(factory.nth("api_key", n).value) for n in range(5))
    assert all(visible_ascii(factory.nth("header_key", n).value) for n in range(200))


@pytest.mark.parametrize("library", ["httpx", "httpx2", "requests"])
@pytest.mark.parametrize(
    "name", sorted(n for n in HEADER_PLACEMENTS if not PLACEMENTS[n].malformed)
)
def test_every_library_sends_the_placement_headers(library: str, name: str) -> None:
    """Under the mocked transports, which validate as the real clients do, each placement's
    request is answered: the stage fires instead of the client refusing the request."""
    via = "responses" if library == "requests" else "respx"
    with LeakCheck(seed="placements-on-the-wire", namespace=name, sinks=[]) as check:
        fault = check.force("http_401", via=via, placement=name)
        placed = fault.placed
        assert placed is not None
        headers = list(placed.request_headers)
        url = fault.url + "/v1/deployments"
        if library == "requests":
            status = requests.get(url, headers=dict(headers)).status_code
        else:
            lib = httpx if library == "httpx" else httpx2
            status = lib.get(url, headers=headers, verify=NO_CA).status_code
        assert status == 401 and fault.fired


# --- the malformed credential ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "ending"),
    [("credential-trailing-newline", "\n"), ("credential-trailing-crlf", "\r\n")],
)
def test_malformed_placement_damages_the_credential_not_the_secret(name: str, ending: str) -> None:
    placed = rendered(name, 1)
    token = placed.secrets["bearer"]
    assert not token.endswith(("\n", "\r"))  # the secret searched for is the token itself
    assert placed.credentials["bearer"] == token + ending  # what the vault hands out
    assert dict(placed.request_headers)["Authorization"] == f"Bearer {token}{ending}"
    assert placed.placement.stages is not None
    assert set(placed.placement.stages) <= {"http_401", "timeout_after_send"}


def test_other_placements_are_not_damaged() -> None:
    for name in PLACEMENTS:
        if PLACEMENTS[name].malformed:
            continue
        placed = rendered(name, 2)
        assert placed.credentials == dict(placed.secrets), name


@pytest.mark.parametrize("library", ["httpx", "httpx2"])
@pytest.mark.parametrize("stage", ["http_401", "timeout_after_send"])
def test_a_wrapper_that_returns_the_error_leaks_the_damaged_token(library: str, stage: str) -> None:
    lib = httpx if library == "httpx" else httpx2
    with LeakCheck(seed="malformed-credential", sinks=[]) as check:
        fault = check.force(stage, via="respx", placement="credential-trailing-newline")
        placed = fault.placed
        assert placed is not None
        try:
            lib.get(fault.url + "/v1/d", headers=list(placed.request_headers), verify=NO_CA)
            answer = {"ok": True}
        except lib.HTTPError as exc:
            answer = {"ok": False, "error": str(exc)}
        check.expose(answer)
        assert fault.fired
        assert "the client refused to send it" in fault.evidence[0]
        assert {leak.finding.kind for leak in check.findings()} == {"bearer"}


def test_a_gateway_that_strips_the_credential_reaches_the_stage() -> None:
    with LeakCheck(seed="malformed-credential", sinks=[]) as check:
        fault = check.force("http_401", via="respx", placement="credential-trailing-newline")
        placed = fault.placed
        assert placed is not None
        token = placed.credentials["bearer"].strip()
        response = httpx.get(
            fault.url + "/v1/d", headers={"Authorization": f"Bearer {token}"}, verify=NO_CA
        )
        assert response.status_code == 401
        assert fault.evidence == ["respx intercepted GET /v1/d (request 1): answered 401"]
