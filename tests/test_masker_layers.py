"""The session masker narrows a text (drops its NULs and ``\\x00`` escapes) to look it up
for UTF-16-LE needles, and not for the NULs of the separators that join a test's short
texts into one look-up (``detect.JOIN_SEPARATOR``): a joined text was searched twice over.
Assertions compare booleans and counts, never a value."""

from __future__ import annotations

import pytest

from leakcheck import CanaryFactory
from leakcheck.detect import JOIN_SEPARATOR
from leakcheck.masking import SessionMasker

FACTORY = CanaryFactory(seed=5, namespace="masker-layers")
LINES = [b"calling create_deployment", b"upstream answered 401", b"auth failed for x"]


def test_texts_joined_by_the_separator_are_not_searched_again_narrowed() -> None:
    masker = SessionMasker()
    joined = JOIN_SEPARATOR.join(LINES)
    assert masker._layers(joined) == [joined]


@pytest.mark.parametrize("kind", ["bearer", "api_key", "password"])
@pytest.mark.parametrize("spelling", ["utf-16-le", "repr of utf-16-le"])
def test_a_utf16_secret_among_joined_texts_is_still_found(kind: str, spelling: str) -> None:
    secret = FACTORY.secret(kind)
    masker = SessionMasker()
    masker.add([secret])
    data = secret.value.encode("utf-16-le", "surrogatepass")
    shown = data if spelling == "utf-16-le" else repr(data).encode()
    joined = JOIN_SEPARATOR.join([*LINES, b"token " + shown + b" refused", *LINES])
    assert not masker.proves_absent([secret], [joined])
    clean = JOIN_SEPARATOR.join([*LINES, *LINES])
    assert masker.proves_absent([secret], [clean])
