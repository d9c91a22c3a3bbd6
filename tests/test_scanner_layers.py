"""``Scanner.layers``: the layers a scanner's decoding pass searches in a text, the public
ground the plugin's verdict reuses across tests (``verdict._layers``)."""

from __future__ import annotations

import base64
import json

from leakcheck import CanaryFactory, Scanner
from leakcheck.detect import KEYED_FROM_BYTES


def test_each_layer_is_what_the_decoding_pass_searches() -> None:
    secret = CanaryFactory(seed="layers-1").secret("bearer")
    inner = json.dumps({"token": secret.value}).encode()
    text = b"payload=" + base64.b64encode(base64.b64encode(inner)) + b" done"
    scanner = Scanner([secret], decode=True, decode_depth=2)
    layers = scanner.layers(text)
    assert layers is not None and layers[0] == text and len(layers) == 3
    assert layers[1] == base64.b64encode(inner)  # the run decoded once
    assert secret.value.encode() in layers[2]  # and twice: the JSON around the value
    # the same text is a finding exactly because a layer holds the secret
    assert [f.form for f in scanner.scan(text)] != []
    assert Scanner([secret], decode=True, decode_depth=1).layers(text) == layers[:2]
    assert Scanner([secret]).layers(text) == (text,)  # no decoding: the text alone
    assert scanner.layers(b"nothing encoded here") == (b"nothing encoded here",)


def test_a_layer_that_would_key_the_scanner_is_not_told() -> None:
    secret = CanaryFactory(seed="layers-2").secret("api_key")
    scanner = Scanner([secret], decode=True)
    big = base64.b64encode(b"x" * KEYED_FROM_BYTES)
    assert scanner.layers(big) is None
    assert scanner.decodes_whole_texts
    scanner.scan(b"y" * KEYED_FROM_BYTES)  # a large text keys the decoding pass
    assert not scanner.decodes_whole_texts


def test_the_layering_key_tells_depths_apart() -> None:
    secret = CanaryFactory(seed="layers-3").secret("bearer")
    two, one = Scanner([secret], decode=True), Scanner([secret], decode=True, decode_depth=1)
    assert two.layering == Scanner([secret], decode=True).layering
    assert two.layering != one.layering != Scanner([secret]).layering
