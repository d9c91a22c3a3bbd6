"""Render findings as text, JSON or SARIF 2.1.0. Excerpts are already masked by span."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from . import __version__
from .findings import Finding

__all__ = ["ScanSummary", "render_text", "render_json", "render_sarif", "RENDERERS"]

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


@dataclass
class ScanSummary:
    """What was scanned and how: the report's header. Never holds a secret value."""

    findings: list[Finding]
    sources: int = 0
    secrets: list[tuple[str, str]] = field(default_factory=list)  # (id, kind)
    needles: int = 0
    engine: str = ""
    decode: bool = False
    errors: list[str] = field(default_factory=list)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def render_text(summary: ScanSummary) -> str:
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
    for error in summary.errors:
        lines.append(f"error: {error}")
    if not findings and not summary.errors:
        lines.append("clean: no form of any secret was found")
    return "\n".join(lines) + "\n"


def render_json(summary: ScanSummary) -> str:
    document = {
        "tool": {"name": "leakcheck", "version": __version__},
        "engine": summary.engine,
        "decode": summary.decode,
        "needles": summary.needles,
        "sources": summary.sources,
        "secrets": [{"id": i, "kind": k} for i, k in summary.secrets],
        "findings": [f.to_dict() for f in summary.findings],
        "errors": summary.errors,
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _uri(source: str) -> str:
    """A URI reference for SARIF: relative paths percent-encoded (spaces, non-ASCII)."""
    if source.startswith("<"):
        return source.strip("<>") or "stdin"
    path = Path(source)
    return quote(path.as_posix()) if not path.is_absolute() else path.as_uri()


def render_sarif(summary: ScanSummary) -> str:
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
                            "artifactLocation": {"uri": _uri(f.source)},
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
    document = {
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
                "columnKind": "unicodeCodePoints",
                "results": results,
                "invocations": [
                    {
                        "executionSuccessful": not summary.errors,
                        "toolExecutionNotifications": [
                            {"level": "error", "message": {"text": e}} for e in summary.errors
                        ],
                    }
                ],
            }
        ],
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


RENDERERS = {"text": render_text, "json": render_json, "sarif": render_sarif}


def render(summary: ScanSummary, fmt: str) -> str:
    return RENDERERS[fmt](summary)
