"""A secret's pieces as the ``repr`` of its encoded bytes shows them (a ``-l`` local holding
``token.encode()`` or ``token.encode("utf-16-le")``, cut by pytest's truncation) are masked:
each run of six characters that carries a masking window's bits, spelled as Python spells
those bytes, with the quote Python chooses. The spellings are worked out here from
Python's own ``repr``, byte by byte. Assertions compare booleans and counts, never a
value."""

from __future__ import annotations

import pytest

from leakcheck import CanaryFactory, Secret, SecretClass
from leakcheck.forms import TAIL_BITS, WINDOW_CHARS
from leakcheck.masking import SessionMasker, masking_scanner


def _byte_escape(byte: int, quote: str) -> str:
    """How ``repr`` spells ``byte`` inside ``quote``: forced by what else the bytes hold."""
    if quote == "'":  # both quotes present: Python keeps ' and escapes it
        return repr(bytes([byte]) + b"'\"")[2:-4]
    return repr(bytes([byte]) + b"'")[2:-2]  # a ' and no ": b"..."


def _windows_as_repr(value: str, bits: tuple[float, ...], encoding: str) -> list[str]:
    """Each window of ``value`` (six characters carrying TAIL_BITS) as it appears inside
    ``repr(value.encode(encoding))``."""
    data = value.encode(encoding, "surrogatepass")
    quote = '"' if b"'" in data and b'"' not in data else "'"
    spelled = [
        "".join(_byte_escape(b, quote) for b in c.encode(encoding, "surrogatepass")) for c in value
    ]
    pythons = "".join(spelled) == repr(data)[2:-1]  # (a boolean: no value in a failure)
    assert pythons, "the spelling worked out is not Python's"
    return [
        "".join(spelled[i : i + WINDOW_CHARS])
        for i in range(len(value) - WINDOW_CHARS + 1)
        if sum(bits[i : i + WINDOW_CHARS]) >= TAIL_BITS
    ]


def _secrets() -> list[Secret]:
    factory = CanaryFactory(seed=21, namespace="byte-spellings")
    canaries = [
        factory.secret(kind) for kind in ("api_key", "password", "cookie") for _ in range(3)
    ]
    # a single quote and no double one: Python writes b"..."
    value = "tok'é€ABCdefGHIjklMNOpqr0123456789xyzUVW"
    user = Secret(
        value, "secret", "U1", SecretClass.DIRECT, tuple(0.0 if c in "'é€" else 5.9 for c in value)
    )
    return [*canaries, user]


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16-le"])
def test_every_window_of_a_bytes_repr_is_masked(encoding: str) -> None:
    checked = 0
    for secret in _secrets():
        scanner = masking_scanner([secret])
        session = SessionMasker()
        session.add([secret])
        bits = secret.mask_bits or secret.bits
        for piece in _windows_as_repr(secret.value, bits, encoding):
            text = f"locals: data = b'...{piece}...'"
            shown = piece in scanner.mask(text), piece in session.mask(text)
            assert shown == (False, False), secret.id
            checked += 1
    assert checked >= 100
