"""``check_record``: the protected operator record of a call."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..stages import Stage, get_stage
from .vocabulary import Violation

if TYPE_CHECKING:  # pragma: no cover
    pass


# --- the protected record -----------------------------------------------------------------

#: the boundaries a call crosses, in order (the seed's "high-value action" trace)
BOUNDARIES: tuple[str, ...] = (
    "validated",
    "credential_selected",
    "authorized",
    "connection_started",
    "bytes_sent",
    "response_received",
    "result_returned",
)

#: boundaries a gateway-side stage stops before (beyond the stage's own bytes/response)
_NOT_REACHED: dict[str, tuple[str, ...]] = {
    "invalid_input": ("credential_selected", "connection_started"),
    "vault_locked": ("credential_selected", "connection_started"),
    "approval_declined": ("authorized", "connection_started"),
}

#: (later, earlier): reaching ``later`` implies having reached ``earlier``
_ORDER: tuple[tuple[str, str], ...] = (
    ("response_received", "bytes_sent"),
    ("bytes_sent", "connection_started"),
    ("connection_started", "validated"),
)


def check_record(
    record: Mapping[str, Any] | None, *, stage: str | Stage, request_id: str
) -> list[Violation]:
    """Every way the gateway's protected record of a failed call falls short: it exists,
    carries ``request_id``, and holds each of ``BOUNDARIES`` as a boolean (at the top level
    or under ``"boundaries"`` or ``"states"``), consistent with ``stage`` (a timeout before send has
    ``bytes_sent`` false; a 5xx has it true) and with their order. Whether the record holds
    a direct secret is the scanner's job (the protected record is a sink)."""
    stage = get_stage(stage)
    if record is None:
        return [Violation("record-exists", "", "no protected record for the request id")]
    if not isinstance(record, Mapping):
        return [Violation("record-exists", "", "the protected record is not a mapping")]
    found: list[Violation] = []
    if "request_id" not in record:
        found.append(Violation("record-request-id", "request_id", "is missing"))
    elif record["request_id"] != request_id:
        found.append(
            Violation("record-request-id", "request_id", "differs from the envelope's request id")
        )
    nested = next((k for k in ("boundaries", "states") if isinstance(record.get(k), Mapping)), "")
    states, where = (record[nested], nested + ".") if nested else (record, "")
    known: dict[str, bool] = {}
    for name in BOUNDARIES:
        if name not in states:
            found.append(Violation("record-boundary-present", where + name, "is missing"))
        elif not isinstance(states[name], bool):
            found.append(
                Violation("record-boundary-present", where + name, "must be true or false")
            )
        else:
            known[name] = states[name]
    must = {"bytes_sent": stage.bytes_sent, "response_received": stage.response_received}
    for name in _NOT_REACHED.get(stage.name, ()):
        must[name] = False
    for name, wanted in must.items():
        if wanted is not None and name in known and known[name] != wanted:
            found.append(
                Violation(
                    "record-boundary-stage",
                    where + name,
                    f"must be {str(wanted).lower()} for stage {stage.name} ({stage.title})",
                )
            )
    for later, earlier in _ORDER:
        if known.get(later) is True and known.get(earlier) is False:
            found.append(
                Violation(
                    "record-boundary-order",
                    where + earlier,
                    f"must be true: {later} is true, and {later} comes after {earlier}",
                )
            )
    return found
