"""A decoded run's hit is kept only where decoding made the occurrence.

Found writing a Hypothesis property test as a newcomer: pytest's assertion explanation
``where [Finding(... column=39, offset=38 ...)] = scan("... token ...p5rniH'}")`` came out
as one ``«canary:bearer:qp>masked-tail-6»`` line. ``=39`` and ``=38`` made the line a
quoted-printable run (its runs are whole lines), the run decoded to the same text, and the
decoded hit of the masked tail, a piece, won over the first pass's own hit and masked the
whole run. It is now left out when the run holds no occurrence that decoding made.
"""

from __future__ import annotations

import binascii
import urllib.parse

import pytest

from leakcheck import Scanner
from leakcheck.canaries import CanaryFactory, Secret
from leakcheck.detect import _occurrences
from leakcheck.masking import masking_scanner

#: strong and random-looking, ending in "=4F" and more: quoted-printable reads it as "O"
WITH_AN_ESCAPE = "Xq7Lp8mR2vT3nY6hJkW=4F9zK"


@pytest.fixture
def bearer() -> Secret:
    return CanaryFactory("decoded-runs", namespace="unit").secret("bearer")


def _explanation(bearer: Secret) -> str:
    error = {"ok": False, "error": f"401 for token ...{bearer.value[-6:]}"}
    return (
        # (the first line shorter than a terminal: one as long may be hard-wrapped, and
        # the next line its continuation, which the wrapped-lines decoder rejoins)
        "E       assert not [Finding(form='masked-tail-6', column=39, offset=38)]\n"
        f"E        +  where [Finding(column=39, offset=38)] = scan({str(error)!r})\n"
    )


def test_a_piece_in_a_run_that_decodes_to_itself_masks_only_itself(bearer: Secret) -> None:
    text = _explanation(bearer)
    masked = masking_scanner([bearer]).mask(text)
    assert bearer.value[-6:] not in masked
    second = masked.split("\n")[1]
    assert second.startswith("E        +  where [Finding(column=39, offset=38)] = scan(")
    assert "401 for token «canary:bearer:masked-tail-6»" in second
    assert [f.form for f in Scanner([bearer]).scan(text)] == ["masked-tail-6"]


def test_an_occurrence_decoding_made_still_masks_its_run(bearer: Secret) -> None:
    tail = bearer.value[-6:]
    encoded = tail[:3] + "".join(f"={ord(c):02X}" for c in tail[3:])  # quoted-printable
    text = f"plain ...{tail} then ...{encoded} column=39, offset=38\n"
    masked = masking_scanner([bearer]).mask(text)
    assert tail not in masked
    assert encoded not in masked
    assert tail.encode() not in binascii.a2b_qp(masked.encode())


def test_a_needle_holding_an_escapes_first_byte_is_kept() -> None:
    # The masked tail's raw occurrence holds "=4F", which decodes to "O" (that one is gone
    # from the decoded run), and the tail written with "=3D" for its "=" decodes to the
    # tail: as many in the decoded run as in the raw one, and only masking the run hides
    # the second (none of the value's windows is whole in it).
    secret = Secret.from_user(WITH_AN_ESCAPE, kind="signature", id="sig")
    tail = WITH_AN_ESCAPE[-6:]
    text = f"shown ...{tail} and ...{tail.replace('=', '=3D')} here\n"
    masked = masking_scanner([secret]).mask(text)
    assert tail not in masked
    assert tail[1:] not in masked
    assert tail.encode() not in binascii.a2b_qp(masked.encode())


@pytest.mark.parametrize(
    "escaped",
    [
        pytest.param(lambda piece: urllib.parse.quote(piece, safe=""), id="percent"),
        pytest.param(lambda piece: piece.encode("unicode_escape").decode(), id="backslash"),
    ],
)
def test_the_other_escaping_decoders_alike(bearer: Secret, escaped: object) -> None:
    tail = bearer.value[-6:]
    token = f"token=...{tail}&note={escaped('é ü')}"  # type: ignore[operator]
    masked = masking_scanner([bearer]).mask(f"GET /v1?{token} 401\n")
    assert tail not in masked
    assert "«canary:bearer:masked-tail-6»&note=" in masked


def test_occurrences_overlap() -> None:
    assert _occurrences(b"aaaa", b"aa") == 3
    assert _occurrences(b"abc", b"x") == 0


def test_one_needle_held_as_it_is_does_not_stand_for_another_of_its_form(
    bearer: Secret,
) -> None:
    """The masking windows share one form name: the run's raw window left out must not
    leave out another window that only decoding made (written here in quoted-printable)."""
    value = bearer.value
    starts = [i for i in range(len(value) - 6) if value[i : i + 6].isalnum()]
    first = starts[0]
    second = next(i for i in starts if i >= first + 12)
    held, made = value[first : first + 6], value[second : second + 6]
    encoded = "".join(f"={ord(c):02X}" for c in made)
    masked = masking_scanner([bearer]).mask(f"first {held} then {encoded} end\n")
    assert held not in masked
    assert encoded not in masked
    assert made.encode() not in binascii.a2b_qp(masked.encode())
