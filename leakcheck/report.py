"""Render findings as text, JSON or SARIF 2.1.0. Excerpts are already masked by span.

A report is built as a document first (the text report's lines, the JSON or SARIF object),
so that a caller can mask every string of it before it is dumped (``render(..., mask=)``):
masking the dumped JSON could cut through an escape sequence.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable

from ._values import Value, field
from .findings import Finding
from .serialize import map_strings
from .version import __version__

TYPE_CHECKING = False  # not typing's: its import was a twentieth of a scan's start-up
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "ScanSummary",
    "render",
    "render_text",
    "render_json",
    "render_sarif",
    "sarif_run",
    "RENDERERS",
]

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


class ScanSummary(Value):
    """What was scanned and how: the report's header. Never holds a secret value."""

    findings: list[Finding]
    sources: int = 0
    secrets: list[tuple[str, str]] = field(default_factory=list)  # (id, kind)
    needles: int = 0
    engine: str = ""
    decode: bool = False
    errors: list[str] = field(default_factory=list)
    #: (source, why) of each entry that was not read: a FIFO, socket or device below a
    #: directory, a symlink back to a directory being read. Never reported as clean.
    not_read: list[tuple[str, str]] = field(default_factory=list)
    #: what the user should know that is neither a finding nor an error (duplicates)
    notes: list[str] = field(default_factory=list)
    #: source -> its SARIF artifact URI, where the source name alone cannot give it (a
    #: file name that is not UTF-8 is shown with backslash escapes; its URI percent-encodes
    #: the raw bytes)
    uris: dict[str, str] = field(default_factory=dict)
    #: masked heads and tails found with fewer bits than the number of secrets needs
    #: (``forms.masked_bits_for``): masked, not reported, and the scan not called clean
    unreported: int = 0


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def text_lines(summary: ScanSummary) -> list[str]:
    findings = summary.findings
    lines = []
    hit_sources = len({f.source for f in findings})
    head = (
        f"leakcheck: {_plural(len(findings), 'finding')} in {hit_sources} of "
        f"{_plural(summary.sources, 'source')} ({_plural(len(summary.secrets), 'secret')}, "
        f"{summary.needles} needles, engine {summary.engine}, "
        f"decoding pass {'on' if summary.decode else 'off'})"
    )
    lines.append(head)
    by_secret: dict[str, list[Finding]] = {}
    for finding in findings:
        by_secret.setdefault(finding.secret_id, []).append(finding)
    for secret_id, group in by_secret.items():
        lines.append("")
        lines.append(
            f"{secret_id} ({group[0].kind}, {group[0].secret_class}): {_plural(len(group), 'hit')}"
        )
        width = max(len(f.location) for f in group)
        form_width = max(len(f.form) for f in group)
        for f in group:
            lines.append(f"  {f.location:<{width}}  {f.form:<{form_width}}  {f.excerpt}")
    for source, why in summary.not_read:
        lines.append(f"not read ({why}): {source}")
    for error in summary.errors:
        lines.append(f"error: {error}")
    if summary.unreported:
        lines.append(unreported_note(summary))
    if not findings and not summary.errors:
        if summary.unreported:
            lines.append("no finding reported, and not clean: see the masked pieces above")
        elif summary.not_read:
            count = len(summary.not_read)
            lines.append(
                f"no finding in what was read; {count} "
                f"{'entry was' if count == 1 else 'entries were'} not read (above): not clean"
            )
        else:
            lines.append("clean: no form of any secret was found")
    return lines


def unreported_note(summary: ScanSummary) -> str:
    """What the masked pieces not reported mean, and how to judge them."""
    return (
        f"{_plural(summary.unreported, 'masked piece')} of a secret (a head or tail beside a "
        f"mask: 'ending in 7KQ2', '****7KQ2') matched with fewer bits than "
        f"{len(summary.secrets):,} secrets at once need: not reported (at this scale chance "
        "can make them), not clean either; scan with fewer secrets (one shard's report, a "
        "test's canaries) to judge them"
    )


def render_text(summary: ScanSummary) -> str:
    return render(summary, "text")


def json_document(summary: ScanSummary) -> dict[str, Any]:
    document: dict[str, Any] = {
        "tool": {"name": "leakcheck", "version": __version__},
        "engine": summary.engine,
        "decode": summary.decode,
        "needles": summary.needles,
        "sources": summary.sources,
        "secrets": [{"id": i, "kind": k} for i, k in summary.secrets],
        "findings": [f.to_dict() for f in summary.findings],
        "errors": summary.errors,
    }
    # present only when there is something to say: a consumer that checks the keys of a
    # clean report sees the same keys as before
    if summary.not_read:
        document["not_read"] = [{"source": s, "why": why} for s, why in summary.not_read]
    if summary.notes:
        document["notes"] = summary.notes
    if summary.unreported:
        document["unreported_masked_pieces"] = summary.unreported
    return document


def render_json(summary: ScanSummary) -> str:
    return render(summary, "json")


def _uri(source: str, uris: dict[str, str] | None = None) -> str:
    """A URI reference for SARIF: relative paths percent-encoded (spaces, non-ASCII)."""
    if uris and source in uris:
        return uris[source]
    if source.startswith("<"):
        return source.strip("<>") or "stdin"
    from pathlib import Path  # SARIF's alone (see path_uri)
    from urllib.parse import quote

    path = Path(source)
    return quote(path.as_posix()) if not path.is_absolute() else path.as_uri()


def path_uri(path: str) -> str:
    """The SARIF URI of a file path as the OS gave it: its raw bytes percent-encoded (a
    name that is not UTF-8 arrives surrogate-escaped)."""
    # imported here: a JSON or text report needs neither (with urllib.parse's ipaddress,
    # 2 ms of a scan's start-up)
    from pathlib import Path
    from urllib.parse import quote

    if os.path.isabs(path):
        return Path(path).as_uri()
    return quote(os.fsencode(Path(path).as_posix()))


#: What a masked URI keeps as it is (reserved characters and existing escapes); anything
#: else a mask label brought in (``«»``, spaces) is percent-encoded again.
_URI_SAFE = "/:%@!$&'()*+,;=~?#[]-._"


def sarif_document(summary: ScanSummary) -> dict[str, Any]:
    rules = [
        {
            "id": f"leakcheck/{cls}",
            "name": name,
            "shortDescription": {"text": text},
            "defaultConfiguration": {"level": "error"},
        }
        for cls, name, text in (
            ("direct", "DirectSecretLeak", "A direct secret (credential) appears in the output"),
            ("context", "SensitiveContextLeak", "Sensitive context appears in the output"),
            ("prose", "UpstreamProseLeak", "Untrusted upstream text appears in the output"),
        )
    ]
    index = {rule["id"]: i for i, rule in enumerate(rules)}
    results = []
    for f in summary.findings:
        rule_id = f"leakcheck/{f.secret_class}"
        # Fingerprint from where and what, never from the secret's value.
        import hashlib  # here: OpenSSL's load is 3 ms of a scan's start-up

        fingerprint = hashlib.sha256(
            f"{f.secret_id}|{f.form}|{f.source}|{f.line}|{f.column}".encode()
        ).hexdigest()
        results.append(
            {
                "ruleId": rule_id,
                "ruleIndex": index[rule_id],
                "level": "error",
                "message": {"text": f"{f.secret_id} ({f.kind}) found as {f.form}: {f.excerpt}"},
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": {"uri": _uri(f.source, summary.uris)},
                            "region": {
                                "startLine": f.line,
                                "startColumn": f.column,
                                "byteOffset": f.offset,
                                "byteLength": f.length,
                                "snippet": {"text": f.excerpt},
                            },
                        }
                    }
                ],
                "partialFingerprints": {"leakcheck/v1": fingerprint},
                "properties": {"secretId": f.secret_id, "kind": f.kind, "form": f.form},
            }
        )
    notifications = [
        *({"level": "error", "message": {"text": e}} for e in summary.errors),
        *(
            {"level": "warning", "message": {"text": f"not read ({w}): {s}"}}
            for s, w in summary.not_read
        ),
        *({"level": "note", "message": {"text": n}} for n in summary.notes),
        *(
            [{"level": "warning", "message": {"text": unreported_note(summary)}}]
            if summary.unreported
            else []
        ),
    ]
    document = sarif_run(rules, results, not summary.errors, notifications)
    document["runs"][0]["columnKind"] = "unicodeCodePoints"
    return document


def sarif_run(
    rules: list[dict[str, Any]],
    results: list[dict[str, Any]],
    successful: bool,
    notifications: list[dict[str, Any]],
) -> dict[str, Any]:
    """One SARIF 2.1.0 run of leakcheck (``leakcheck scan``'s and ``leakcheck mcp``'s)."""
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "leakcheck",
                        "version": __version__,
                        "informationUri": "https://github.com/leakcheck/leakcheck",
                        "rules": rules,
                    }
                },
                "results": results,
                "invocations": [
                    {
                        "executionSuccessful": successful,
                        "toolExecutionNotifications": notifications,
                    }
                ],
            }
        ],
    }


def render_sarif(summary: ScanSummary) -> str:
    return render(summary, "sarif")


def _requote_uris(document: dict[str, Any]) -> None:
    from urllib.parse import quote  # SARIF's alone (see path_uri)

    for run in document["runs"]:
        for result in run["results"]:
            for location in result["locations"]:
                artifact = location["physicalLocation"]["artifactLocation"]
                artifact["uri"] = quote(artifact["uri"], safe=_URI_SAFE)


DOCUMENTS: dict[str, Callable[[ScanSummary], Any]] = {
    "text": text_lines,
    "json": json_document,
    "sarif": sarif_document,
}


def document(summary: ScanSummary, fmt: str) -> Any:
    """The report as data: a list of lines (text) or a JSON object."""
    return DOCUMENTS[fmt](summary)


def dump(document: Any, fmt: str) -> str:
    if fmt == "text":
        return "\n".join(document) + "\n"
    if fmt == "sarif":
        _requote_uris(document)
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def render(summary: ScanSummary, fmt: str, mask: Callable[[str], str] | None = None) -> str:
    """The report in ``fmt``; ``mask`` is applied to every string of the document (JSON
    keys too) before it is dumped."""
    built = document(summary, fmt)
    if mask is not None:
        from .masking import masked_for_json  # (the masker's modules: only when masking)

        built = map_strings(built, mask if fmt == "text" else masked_for_json(mask))
    return dump(built, fmt)


RENDERERS = {"text": render_text, "json": render_json, "sarif": render_sarif}
