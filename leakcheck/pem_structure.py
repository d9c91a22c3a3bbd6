"""What every PEM private key of its type shares, read out of the key itself.

A user's PEM key is judged character by character (``canaries.estimate_bits``), and its
prefix, suffix and line fragments are cut where their characters carry enough bits. The
armour lines carry none, but inside the base64 body most of the first line is the same in
every key of a type (the DER header of a PKCS #8 EC key, ``MIGHAgEAMBMGByqGSM49...``; the
whole first line of an OpenSSH Ed25519 key), and a key also carries its public half, which
is no secret. Counted as random, those made fragments that every other key of the type
matched: a file holding a different key was a finding (found by a hunting helper).

``public_spans(value)`` gives the characters of each PEM block's body that spell only
such bytes: DER tags, lengths, object identifiers, small integers (a version, the public
exponent) and public keys (a ``BIT STRING``); an OpenSSH key's magic, names, lengths,
public key (and its copies in the private part), comment and padding; of an encrypted
OpenSSH key what precedes its ciphertext, and of a traditional encrypted key its
``Proc-Type`` header and ``DEK-Info`` cipher name. A block that does not parse is left as
it is (every character counted).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator

#: (a body holds no "-": a value of many BEGIN lines without their END was searched to its
#: end from each, in quadratic time; an encrypted key's headers, which may, are skipped)
_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----\r?\n([^-]*?)\r?\n-----END \1-----")
#: a traditional encrypted key's headers (RFC 1421): ``Proc-Type: 4,ENCRYPTED`` and
#: ``DEK-Info: AES-128-CBC,<IV>``; all of them the same in every such key but the IV
_HEADERS = re.compile(
    r"-----BEGIN [A-Z0-9 ]+-----\r?\n(Proc-Type: [^\r\n]*\r?\n)(DEK-Info: [A-Z0-9-]+,)"
)
_OPENSSH_MAGIC = b"openssh-key-v1\x00"
#: how deep a DER structure is walked (a PKCS #8 key wraps a SEC1 key: four levels)
_DEPTH = 6
#: integers up to this many bytes are structure (a version, the public exponent 65537)
_SMALL_INTEGER = 4
#: what the content of an OCTET STRING that wraps a key starts with (SEQUENCE, OCTET STRING)
_WRAPPED_STARTS = frozenset({0x30, 0x04})
#: a public key's byte string is looked for again in the private part from this length
_PUBLIC_COPY_FROM = 16


def public_spans(value: str) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of the characters of ``value`` that spell only structure or public
    bytes of a PEM block's body."""
    for headers in _HEADERS.finditer(value):
        yield headers.start(1), headers.end(2)
    for block in _BLOCK.finditer(value):
        body_start = block.start(2)
        positions = [
            body_start + i for i, c in enumerate(block.group(2)) if c.isalnum() or c in "+/="
        ]
        chars = "".join(value[p] for p in positions)
        if ":" in block.group(2) or len(chars) % 4:
            continue  # (headers: an encrypted key; or not base64)
        try:
            data = base64.b64decode(chars, validate=True)
        except (binascii.Error, ValueError):
            continue
        marks = _structure(data)
        if marks is None:
            continue
        yield from _char_spans(positions, chars, marks)


def _char_spans(positions: list[int], chars: str, marks: list[bool]) -> Iterator[tuple[int, int]]:
    """The spans of ``positions`` whose base64 characters cover marked bytes only."""
    run_start = -1
    last = -1
    for k, position in enumerate(positions):
        if chars[k] == "=":
            public = True
        else:
            first, final = 6 * k // 8, (6 * k + 5) // 8
            public = all(marks[i] for i in range(first, min(final, len(marks) - 1) + 1))
        if public and run_start >= 0 and position == last + 1:
            last = position
            continue
        if run_start >= 0:
            yield run_start, last + 1
            run_start = -1
        if public:
            run_start = last = position
    if run_start >= 0:
        yield run_start, last + 1


def _structure(data: bytes) -> list[bool] | None:
    if data.startswith(_OPENSSH_MAGIC):
        return _openssh(data)
    marks = [False] * len(data)
    if not _der(data, 0, len(data), marks, 0) or not any(marks):
        return None
    return marks


def _der(data: bytes, start: int, end: int, marks: list[bool], depth: int) -> bool:
    """Mark the structure of the DER elements from ``start`` to ``end``; False (nothing
    marked) when they are not DER."""
    if depth > _DEPTH:
        return False
    spans: list[tuple[int, int]] = []
    inner: list[tuple[int, int, int]] = []  # (tag, content start, content end) to walk
    at = start
    while at < end:
        tag = data[at]
        head = at + 1
        if head >= end:
            return False
        length = data[head]
        head += 1
        if length & 0x80:
            count = length & 0x7F
            if not 0 < count <= 4 or head + count > end:
                return False
            length = int.from_bytes(data[head : head + count], "big")
            head += count
        if head + length > end:
            return False
        spans.append((at, head))  # tag and length
        content = (head, head + length)
        if tag & 0x20:  # constructed: a SEQUENCE, a context tag [0] [1]
            inner.append((tag, *content))
        elif tag in (0x05, 0x06) or (tag == 0x02 and length <= _SMALL_INTEGER):
            spans.append(content)  # NULL, an object identifier, a small integer
        elif tag == 0x03:  # a BIT STRING in a private key: the public key
            spans.append(content)
        elif tag == 0x04 and length and data[head] in _WRAPPED_STARTS:
            # an OCTET STRING that may wrap a key (PKCS #8: a SEQUENCE, or Ed25519's OCTET
            # STRING); random key bytes seldom start so, and must parse whole besides
            inner.append((tag, *content))
        at = head + length
    for tag, low, high in inner:
        if tag == 0x04:
            wrapped = marks[:]
            if _der(data, low, high, wrapped, depth + 1):
                marks[:] = wrapped
        elif not _der(data, low, high, marks, depth + 1):
            return False
    for low, high in spans:
        marks[low:high] = [True] * (high - low)
    return True


#: the fields after its type name of each kind of key in an OpenSSH private section
_OPENSSH_FIELDS = {
    b"ssh-ed25519": 2,  # public key, private key (its public half appended)
    b"ssh-rsa": 6,  # n, e, d, iqmp, p, q
    b"ssh-dss": 5,  # p, q, g, y, x
    b"ecdsa-sha2-nistp256": 3,  # curve name, public point, private scalar
    b"ecdsa-sha2-nistp384": 3,
    b"ecdsa-sha2-nistp521": 3,
}


class _Reader:
    """SSH wire strings from ``data``, each length marked as structure."""

    def __init__(self, data: bytes, marks: list[bool], at: int) -> None:
        self.data, self.marks, self.at = data, marks, at

    def uint32(self) -> int:
        if self.at + 4 > len(self.data):
            raise ValueError("cut short")
        self.marks[self.at : self.at + 4] = [True] * 4
        self.at += 4
        return int.from_bytes(self.data[self.at - 4 : self.at], "big")

    def string(self, *, public: bool = False) -> bytes:
        length = self.uint32()
        if self.at + length > len(self.data):
            raise ValueError("cut short")
        low, self.at = self.at, self.at + length
        if public:
            self.marks[low : self.at] = [True] * length
        return self.data[low : self.at]


def _openssh(data: bytes) -> list[bool] | None:
    """The structure and public bytes of an OpenSSH private key (PROTOCOL.key: magic,
    cipher, kdf, its options, the key count, the public keys; then the private section:
    two equal check ints, each key's type and fields, its comment, padding). Of an
    encrypted key, what comes before its private section, which is ciphertext."""
    marks = [False] * len(data)
    marks[: len(_OPENSSH_MAGIC)] = [True] * len(_OPENSSH_MAGIC)
    read = _Reader(data, marks, len(_OPENSSH_MAGIC))
    try:
        encrypted = read.string(public=True) != b"none"
        read.string(public=True)  # kdf name
        options_at = read.at + 4
        options = read.string(public=not encrypted)
        if encrypted and len(options) >= 8:
            # bcrypt's: a salt (random; its length is structure) and the rounds
            marks[options_at : options_at + 4] = [True] * 4
            marks[options_at + len(options) - 4 : options_at + len(options)] = [True] * 4
        publics = [read.string(public=True) for _ in range(read.uint32())]
        shown = {
            field
            for blob in publics
            for field in _field_values(blob)
            if len(field) >= _PUBLIC_COPY_FROM
        }
        section_end = read.uint32() + read.at
        if section_end > len(data):
            return None
        if encrypted:
            return marks  # (the private section is ciphertext: every byte of it counts)
        check = read.uint32()
        if read.uint32() == check:
            marks[read.at - 4 : read.at] = [True] * 4  # (the second: a copy of the first)
        for _ in publics:
            fields = _OPENSSH_FIELDS.get(read.string(public=True))
            if fields is None:
                return None
            for _ in range(fields):
                low = read.at + 4
                value = read.string()
                for public in shown:  # a public field, or the public half appended
                    found = value.find(public)
                    if found >= 0:
                        at = low + found
                        marks[at : at + len(public)] = [True] * len(public)
            read.string(public=True)  # the comment: user@host, alike in a user's keys
        marks[read.at : section_end] = [True] * (section_end - read.at)  # padding 1, 2, ...
    except ValueError:
        return None
    return marks


def _field_values(blob: bytes) -> Iterator[bytes]:
    for low, high in _fields(blob):
        yield blob[low:high]


def _fields(blob: bytes) -> Iterator[tuple[int, int]]:
    """The fields of an SSH wire-format public key blob (each a length and bytes)."""
    at = 0
    while at + 4 <= len(blob):
        length = int.from_bytes(blob[at : at + 4], "big")
        if at + 4 + length > len(blob):
            return
        yield at + 4, at + 4 + length
        at += 4 + length
