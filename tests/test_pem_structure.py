"""A user's PEM private key: what every key of its type shares, and its public half, count
no bits (``leakcheck.pem_structure``). Counted as random, the DER header of a PKCS #8 key
and the constant first line of an OpenSSH key made prefix, suffix and line fragments that
any other key of the type matched: a file holding a different key was a finding (found by
a hunting helper). The key itself, and its secret part cut short, are still found."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from cryptography.hazmat.primitives import serialization as ser
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from leakcheck import Scanner, Secret
from leakcheck.pem_structure import public_spans

PKCS8, TRADITIONAL, OPENSSH = (
    ser.PrivateFormat.PKCS8,
    ser.PrivateFormat.TraditionalOpenSSL,
    ser.PrivateFormat.OpenSSH,
)


def _pem(key: object, form: ser.PrivateFormat) -> str:
    made = key.private_bytes(ser.Encoding.PEM, form, ser.NoEncryption())  # type: ignore[attr-defined]
    return made.decode().rstrip("\n")


KEYS: dict[str, Callable[[], str]] = {
    "ec p256 pkcs8": lambda: _pem(ec.generate_private_key(ec.SECP256R1()), PKCS8),
    "ec p384 pkcs8": lambda: _pem(ec.generate_private_key(ec.SECP384R1()), PKCS8),
    "ec p256 sec1": lambda: _pem(ec.generate_private_key(ec.SECP256R1()), TRADITIONAL),
    "rsa 2048 pkcs8": lambda: _pem(rsa.generate_private_key(65537, 2048), PKCS8),
    "rsa 2048 pkcs1": lambda: _pem(rsa.generate_private_key(65537, 2048), TRADITIONAL),
    "ed25519 openssh": lambda: _pem(ed25519.Ed25519PrivateKey.generate(), OPENSSH),
    "ecdsa openssh": lambda: _pem(ec.generate_private_key(ec.SECP256R1()), OPENSSH),
    "ed25519 pkcs8": lambda: _pem(ed25519.Ed25519PrivateKey.generate(), PKCS8),
}


def _found(value: str, text: str) -> list[str]:
    secret = Secret.from_user(value, kind="secret", id="deploy-key")
    return [f.form for f in Scanner([secret]).scan(f"loaded key:\n{text}\n")]


@pytest.mark.parametrize("shape", list(KEYS))
def test_another_key_of_the_type_is_no_finding(shape: str) -> None:
    for _ in range(3 if shape.startswith("rsa") else 5):  # (RSA: a fifth of the cost)
        mine, other = KEYS[shape](), KEYS[shape]()
        found = _found(mine, other)
        assert not found, f"{shape}: another key matched as {found}"


@pytest.mark.parametrize("shape", list(KEYS))
def test_the_key_and_its_secret_part_cut_short_are_found(shape: str) -> None:
    value = KEYS[shape]()
    assert "raw" in _found(value, value)
    # a log that kept one line of the key: the line that holds the most private bytes
    public = {i for start, end in public_spans(value) for i in range(start, end)}
    lines, at = [], 0
    for line in value.splitlines(keepends=True):
        private = sum(i not in public for i in range(at, at + len(line.rstrip())))
        lines.append((private, line.rstrip()))
        at += len(line)
    private, line = max(lines[1:-1])
    assert private >= 20, (shape, private)
    assert _found(value, line), f"{shape}: its line of {private} private characters was not found"


def test_the_structure_is_public_and_the_private_scalar_is_not() -> None:
    """In a PKCS #8 P-256 key: the DER header (``MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0w``)
    and the public point are public, the 32-byte private scalar is not."""
    value = KEYS["ec p256 pkcs8"]()
    public = set()
    for start, end in public_spans(value):
        public.update(range(start, end))
    body_start = value.index("\n") + 1
    assert all(i in public for i in range(body_start, body_start + 40))
    scalar = range(body_start + 48, body_start + 88)  # (the private scalar's base64)
    assert not any(i in public for i in scalar)


def test_a_body_that_is_not_der_counts_every_character() -> None:
    body = "QUJD" * 20
    value = f"-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----"
    assert list(public_spans(value)) == []


def test_a_key_given_with_crlf_is_found_where_it_is_written_with_lf() -> None:
    """A value with CRLF line endings (a Windows checkout, a JSON secrets file) kept its
    CRs in its forms: the key logged with LF line endings, whole or a line of it, was not
    found (found by a hunting helper)."""
    value = KEYS["ec p256 pkcs8"]()
    crlf = value.replace("\n", "\r\n")
    secret = Secret.from_user(crlf, kind="secret", id="windows")
    assert "raw" in [f.form for f in Scanner([secret]).scan(f"key:\n{value}\n")]
    line = value.splitlines()[2]
    assert [f.form for f in Scanner([secret]).scan(f"x\n{line}\n")] == ["line-3"]
    other = Secret.from_user(KEYS["ec p256 pkcs8"]().replace("\n", "\r\n"), id="other")
    assert not Scanner([other]).scan(f"key:\n{value}\n")


def _encrypted_openssh(key: object) -> str:
    made = key.private_bytes(  # type: ignore[attr-defined]
        ser.Encoding.PEM, OPENSSH, ser.BestAvailableEncryption(b"passphrase")
    )
    return made.decode().rstrip("\n")


@pytest.mark.parametrize(
    "make",
    [ed25519.Ed25519PrivateKey.generate, lambda: ec.generate_private_key(ec.SECP256R1())],
    ids=["ed25519", "ecdsa"],
)
def test_another_encrypted_openssh_key_is_no_finding(make: Callable[[], object]) -> None:
    """An encrypted OpenSSH key's magic, cipher and kdf names, lengths, rounds and public
    key are the same in every key of its type: counted as random, another such key matched
    its prefix (found by a hunting helper). Its private section, ciphertext, counts."""
    for _ in range(2):
        mine, other = _encrypted_openssh(make()), _encrypted_openssh(make())
        assert not _found(mine, other)
        assert "raw" in _found(mine, mine)


def test_another_traditional_encrypted_key_is_no_finding() -> None:
    """``Proc-Type: 4,ENCRYPTED`` and ``DEK-Info: AES-256-CBC,`` begin every such key: its
    line fragment and prefix matched another key (found by a hunting helper)."""

    def make() -> str:
        key = rsa.generate_private_key(65537, 2048)
        made = key.private_bytes(ser.Encoding.PEM, TRADITIONAL, ser.BestAvailableEncryption(b"pw"))
        return made.decode().rstrip("\n")

    for _ in range(2):
        mine, other = make(), make()
        assert "Proc-Type: 4,ENCRYPTED" in mine
        assert not _found(mine, other)
        assert "raw" in _found(mine, mine)
