"""``SessionMasker``: every secret a process has seen masks every text, at a bounded cost.

The property that matters: masking a text with the session masker gives exactly what one
masking scanner over every secret would give, for texts holding any form of any of them
(the masker only looks at the few batches a text could hold). Then the costs that made a
plain design quadratic, each held to a bound.
"""

from __future__ import annotations

import base64
import json
import time
import urllib.parse

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from leakcheck import CanaryFactory, Secret
from leakcheck.forms import MASKING_FORMS
from leakcheck.masking import SessionMasker, mask_strings, masking_scanner
from leakcheck.strategies import encoded_forms, hostile_secrets

SEED = "masking-1"


def batches(count: int, kinds: tuple[str, ...] = ("bearer", "api_key", "hostname")) -> list:
    return [
        [CanaryFactory(SEED, namespace=f"t{n}").secret(kind) for kind in kinds]
        for n in range(count)
    ]


@pytest.fixture(scope="module")
def session() -> tuple[SessionMasker, list[Secret]]:
    masker, secrets = SessionMasker(), []
    for n, batch in enumerate(batches(40)):
        # half the batches arrive with their test's scanner (its needles reused)
        scanner = masking_scanner(batch) if n % 2 else None
        if scanner is not None:
            scanner.mask("warm up: builds what a test's own masking would")
        masker.add(batch, scanner)
        secrets += batch
    return masker, secrets


def test_every_secret_of_every_batch_is_masked(session) -> None:
    masker, secrets = session
    for secret in secrets:
        for text in (
            f"Authorization: Bearer {secret.value}",
            f"url=https://api.example/?k={urllib.parse.quote(secret.value, safe='')}",
            "basic " + base64.b64encode(f"svc:{secret.value}".encode()).decode(),
            f"truncated {secret.value[5:16]}...",  # a masking window's worth
        ):
            masked = masker.mask(text)
            assert masked != text and "\u00abcanary:" in masked, secret.id


def test_a_clean_text_is_returned_as_it_is(session) -> None:
    masker, _ = session
    text = "WARNING gateway.http upstream answered 401 for create_deployment (internal)"
    assert masker.mask(text) is text


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_same_as_one_scanner_over_every_secret(session, data) -> None:
    masker, secrets = session
    secret = data.draw(st.sampled_from(secrets))
    _, encoded = data.draw(encoded_forms(secret, MASKING_FORMS))
    other = data.draw(st.sampled_from(secrets))
    text = (
        b"log: " + encoded + b" and " + other.value.encode("utf-8", "surrogatepass")[3:19]
    ).decode("utf-8", "replace")
    assert masker.mask(text) == _everything(secrets).mask(text)


_ALL: dict[int, object] = {}


def _everything(secrets: list[Secret]):
    key = id(secrets)
    if key not in _ALL:
        _ALL[key] = masking_scanner(secrets)
    return _ALL[key]  # type: ignore[return-value]


@settings(max_examples=25, deadline=None)
@given(secret=hostile_secrets())
def test_a_secret_added_alone_is_masked_in_any_form(secret: Secret) -> None:
    masker = SessionMasker()
    masker.add([secret])
    alone = masking_scanner([secret])
    for _form, encoded in (pair for form in MASKING_FORMS for pair in form(secret)):
        text = "x " + encoded.decode("utf-8", "replace") + " y"
        assert masker.mask(text) == alone.mask(text)


def test_a_value_known_already_is_kept_once() -> None:
    masker = SessionMasker()
    token = CanaryFactory(SEED).secret("bearer")
    masker.add([token])
    masker.add([token, Secret(token.value, token.kind, "again", token.secret_class, token.bits)])
    assert len(masker) == 1


def test_a_fixed_suffix_costs_one_small_scanner_not_one_over_every_batch() -> None:
    """Every host name canary ends in ``corp.internal``: a line saying "internal" must not
    make every batch a candidate (a scanner over them all, rebuilt as batches arrive)."""
    masker = SessionMasker()
    for batch in batches(300, kinds=("hostname", "user_name")):
        masker.add(batch)
    candidates = masker._candidates(b"the internal service corp.internal said no")
    assert len(candidates) <= 1


def test_a_utf16_piece_makes_its_own_batch_the_candidate_not_every_batch() -> None:
    """UTF-16-LE text and its bytes ``repr`` put a NUL or a ``\\x00`` after each ASCII
    character: six bytes of those needles hold two or three characters, alike across the
    batches of a kind. Indexed narrowed, a piece of one secret so spelled is masked and
    costs a scanner over its own batch only."""
    masker = SessionMasker()
    every = batches(120)
    for batch in every:
        masker.add(batch)
    secret = every[77][0]
    piece = secret.value[5:12].encode("utf-16-le")
    for text in (f"locals: {piece!r}", "transcript " + piece.decode("latin-1")):
        assert masker._candidates(text.encode("utf-8")) == (77,)
        masked = masker.mask(text)
        assert masked != text and "\u00abcanary:" in masked


def test_a_kinds_fixed_characters_escaped_are_no_piece_of_its_canaries() -> None:
    """Every api_key canary holds "é" and "€" (hostile, fixed: they carry none of its
    bits). Their escapes in JSON and in a bytes repr are no piece of any canary: left as
    they are, and a text holding them does not make every batch a candidate (in a
    session of 1,000 tests, one such JSON line cost a scanner over 3,000 secrets, six
    seconds)."""
    texts = [json.dumps({"msg": "caf\u00e9 5\u20ac"}), repr("5 \u20ac caf\u00e9".encode())]
    canary = CanaryFactory(SEED).secret("api_key")
    assert {"\u00e9", "\u20ac"} <= set(canary.value)
    alone = masking_scanner([canary])
    for text in texts:
        assert alone.mask(text) == text
    masker = SessionMasker()
    for batch in batches(120, kinds=("api_key",)):
        masker.add(batch)
    for text in texts:
        assert len(masker._candidates(text.encode("utf-8"))) <= 6


def test_adding_is_linear_in_the_secrets_added() -> None:
    """A batch costs the same whether it is the 10th or the 400th (the index is never
    copied or rebuilt): the last fifty batches take at most 3x the first fifty."""
    masker = SessionMasker()
    scanned = []
    for batch in batches(400):
        scanner = masking_scanner(batch)
        scanner.mask("x")
        scanned.append((batch, scanner))
    took = []
    for start in (0, 350):
        began = time.process_time()
        for batch, scanner in scanned[start : start + 50]:
            masker.add(batch, scanner)
        took.append(time.process_time() - began)
        if start == 0:
            for batch, scanner in scanned[50:350]:
                masker.add(batch, scanner)
    assert took[1] <= 3 * took[0] + 0.01, took


def test_mask_strings_returns_the_document_itself_when_nothing_shows() -> None:
    masker = SessionMasker()
    token = CanaryFactory(SEED).secret("api_key")
    masker.add([token])
    clean = {"test": "t.py::test_a", "secrets": [{"id": "api_key#1", "kind": "api_key"}]}
    assert mask_strings(clean, masker.mask) is clean
    leaky = {"findings": [{"excerpt": f"…key={token.value[:12]}"}], token.value: 1}
    masked = mask_strings(leaky, masker.mask)
    assert "\u00abcanary:" in masked["findings"][0]["excerpt"]
    assert all("\u00abcanary:" in key for key in masked if key != "findings")
