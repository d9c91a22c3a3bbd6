"""Assertion 3, hygiene: what the response must not carry (a raw header, upstream body
text, the upstream-prose marker, a local connection detail) and what its request id must
not hold (the case's hostnames and user names)."""

from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import urlsplit

from ..contract import Violation, check_request_ids
from ..faults import Listening, reply_for
from ..serialize import leaves, to_jsonable
from .model import Case


def _words_of(case: Case) -> list[tuple[str, str]]:
    """(what, word): the hostnames and user names of ``case`` a request id must not hold."""
    words: list[tuple[str, str]] = []
    for what, value in (
        ("hostname", case.placed.secrets.get("hostname")),
        ("user name", case.placed.secrets.get("user_name")),
        ("upstream hostname", urlsplit(case.upstream_url).hostname),
        ("SSH user name", case.ssh.username if case.ssh is not None else None),
        ("SSH host alias", case.placed.ssh.host_alias),
        ("SSH user name", case.placed.ssh.username),
    ):
        if not isinstance(value, str) or len(value) < 4:
            continue  # a shorter word would match random ids by chance
        if re.fullmatch(r"[0-9.:]+", value):
            continue  # an address: the hygiene check's connection details cover it
        if value not in (w for _, w in words):
            words.append((what, value))
    return words


def request_id_words(request_id: str | None, case: Case) -> list[Violation]:
    """The request id holds none of the case's hostnames and user names (README: "no
    hostname, user name, secret or timestamp inside"; secrets are the leak verdict's,
    the rest is checked across the run at the end of the session)."""
    if request_id is None:
        return []
    found = []
    for what, word in _words_of(case):
        checked = check_request_ids([request_id], forbidden_words=[word], min_bits=0)
        if any(v.rule == "request-id-forbidden-word" for v in checked):
            found.append(
                Violation(
                    "request-id-forbidden-word",
                    "request_id",
                    f"holds the case's {what} (a request id is an opaque handle)",
                )
            )
    return found


_GENERIC_HEADERS = {"content-type", "content-length"}
_BODY_PIECE = re.compile(r"[A-Za-z][A-Za-z0-9 _.,'-]{11,}")


def _upstream_pieces(body: str) -> list[str]:
    """The runs of words of an upstream body that a response must not carry: 12
    characters or more, and more than one word (an error code such as ``rate_limited`` or
    ``invalid_token`` is a careful gateway's own vocabulary too)."""
    pieces = (p.strip() for p in _BODY_PIECE.findall(body))
    return [p for p in pieces if len(p) >= 12 and " " in p]


def _forbidden_texts(case: Case) -> dict[str, list[str]]:
    """What the response must not show, by reason (values only used for searching)."""
    out: dict[str, list[str]] = {
        "raw header": [],
        "upstream text": [],
        "quotable": [],
        "connection detail": [],
    }
    names = {k.lower() for k, _ in case.auth.headers}
    names |= {k.lower() for k, _ in case.placed.reply_headers}
    # the reply's own words and header names; its canaries are the leak verdict's business
    # (a placeholder here: asking the check would plant canaries the fault never used)
    reply = reply_for(case.stage, lambda kind: "", case.placed)
    if reply is not None and case.stage.transport == "http":
        names |= {k.lower() for k, _ in reply.headers}
        body = reply.body.decode("utf-8", "replace")
        out["upstream text"] = _upstream_pieces(body)
        # (the stage's own reply, without the placement's additions: ours, no canary in
        # it, so a finding may quote it and the user tell it from their own words)
        fixed = reply_for(case.stage, lambda kind: "")
        out["quotable"] = _upstream_pieces(fixed.body.decode("utf-8", "replace")) if fixed else []
    out["raw header"] = sorted(n for n in names - _GENERIC_HEADERS)
    details = ["127.0.0.1", "localhost", "::1"]
    if isinstance(case.fault, Listening):
        details.append(f":{case.fault.port}")
    if case.ssh is not None and case.ssh.known_hosts != os.devnull:
        details.append(case.ssh.known_hosts)
    out["connection detail"] = details
    return out


def hygiene_violations(envelope: Any, case: Case) -> list[Violation]:
    """Assertion 3, field by field; messages say what kind of thing was found, not what."""
    problems = []
    forbidden = _forbidden_texts(case)
    prose = case.placed.secrets.get("prose")
    for path, text in leaves(to_jsonable(envelope)):
        if not isinstance(text, str):
            continue
        lowered = text.lower()
        for name in forbidden["raw header"]:
            # a header as text shows as ``Name: value``, ``'name': ...`` or ``name=...``
            pattern = rf"(?<![a-z0-9-]){re.escape(name)}['\"]?\s*[:=]"
            if re.search(pattern, lowered):
                problems.append(Violation("raw-header", path, f"names the {name!r} header"))
        carried = next((piece for piece in forbidden["upstream text"] if piece in text), None)
        if carried is not None:
            said = "carries text of the upstream body"
            if carried in forbidden["quotable"]:
                said += f" ({carried!r}: the faked upstream's words, not yours)"
            problems.append(Violation("upstream-text", path, said))
        if prose is not None and prose[:24] in text:
            problems.append(Violation("upstream-prose", path, "carries the upstream-prose marker"))
        for detail in forbidden["connection detail"]:
            if detail in text:
                problems.append(
                    Violation(
                        "connection-detail",
                        path,
                        "carries a local connection detail (address, port or path)",
                    )  # fmt: skip
                )
                break
    return problems
