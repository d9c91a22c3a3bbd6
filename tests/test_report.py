"""Reports: JSON structure, SARIF 2.1.0 against the official OASIS schema, text grouping."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jsonschema
import pytest
from conftest import self_scan

from leakcheck import Scanner, __version__
from leakcheck.findings import Finding
from leakcheck.report import (
    RENDERERS,
    ScanSummary,
    render,
    render_json,
    render_sarif,
    render_text,
)

SCHEMA_PATH = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"


@pytest.fixture(scope="module")
def sarif_validator() -> jsonschema.protocols.Validator:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    # the OASIS schema itself, not a stand-in
    assert schema["title"] == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    assert schema["$schema"].startswith("http://json-schema.org/")
    assert {"run", "result", "region", "artifactLocation"} <= set(schema["definitions"])
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def validate(validator, text: str) -> dict:
    document = json.loads(text)
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:5])
    return document


@pytest.fixture
def secrets(canaries):
    return [canaries("bearer"), canaries("api_key"), canaries("hostname")]


@pytest.fixture
def summary(secrets) -> ScanSummary:
    a, b, c = secrets
    scanner = Scanner(secrets, decode=True)
    findings = []
    findings += scanner.scan(f"GET /?key={a.value} HTTP/1.1\nHost: {c.value}\n", "logs/my app.log")
    findings += scanner.scan(f"x\n\ny {b.value}\n", "/var/log/abs path/é.log")
    findings += scanner.scan(f"{a.value} and again {a.value}", "<stdin>")
    return ScanSummary(
        findings=findings,
        sources=4,
        secrets=[(s.id, s.kind) for s in secrets],
        needles=scanner.needle_count,
        engine=scanner.engine.name,
        decode=True,
    )


def test_json_structure(summary: ScanSummary, secrets) -> None:
    text = render_json(summary)
    self_scan(text, secrets, "json report")
    document = json.loads(text)
    assert set(document) == {
        "tool",
        "engine",
        "decode",
        "needles",
        "sources",
        "secrets",
        "findings",
        "errors",
    }
    assert document["tool"] == {"name": "leakcheck", "version": __version__}
    assert document["engine"] == summary.engine and document["decode"] is True
    assert document["needles"] == summary.needles > 0
    assert document["sources"] == 4
    assert document["secrets"] == [{"id": s.id, "kind": s.kind} for s in secrets]
    assert document["errors"] == []
    fields = [f.name for f in dataclasses.fields(Finding)]
    assert len(document["findings"]) == len(summary.findings) == 5
    for entry, finding in zip(document["findings"], summary.findings, strict=True):
        assert list(entry) == fields
        assert Finding(**entry) == finding
    assert text.endswith("}\n")
    assert "\u00abcanary:" in text  # not escaped: ensure_ascii is off


def test_json_with_errors_and_no_findings() -> None:
    summary = ScanSummary(findings=[], sources=0, errors=["no such file or directory: x"])
    document = json.loads(render_json(summary))
    assert document["findings"] == [] and document["errors"] == ["no such file or directory: x"]


def test_sarif_with_findings_is_valid(sarif_validator, summary, secrets) -> None:
    text = render_sarif(summary)
    self_scan(text, secrets, "sarif report")
    document = validate(sarif_validator, text)
    assert document["version"] == "2.1.0"
    [run] = document["runs"]
    rules = run["tool"]["driver"]["rules"]
    assert run["tool"]["driver"]["name"] == "leakcheck"
    assert run["tool"]["driver"]["version"] == __version__
    assert run["columnKind"] == "unicodeCodePoints"
    assert len(run["results"]) == len(summary.findings)
    for result, finding in zip(run["results"], summary.findings, strict=True):
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["ruleId"] == f"leakcheck/{finding.secret_class}"
        [location] = result["locations"]
        region = location["physicalLocation"]["region"]
        assert region["startLine"] == finding.line
        assert region["startColumn"] == finding.column
        assert region["byteOffset"] == finding.offset
        assert region["byteLength"] == finding.length
        assert region["snippet"]["text"] == finding.excerpt
        assert finding.secret_id in result["message"]["text"]
        assert result["properties"] == {
            "secretId": finding.secret_id,
            "kind": finding.kind,
            "form": finding.form,
        }
    hostname = [r for r in run["results"] if r["properties"]["kind"] == "hostname"]
    assert hostname and all(r["ruleId"] == "leakcheck/context" for r in hostname)
    [invocation] = run["invocations"]
    assert invocation["executionSuccessful"] is True
    assert invocation["toolExecutionNotifications"] == []


def test_sarif_uris(summary) -> None:
    run = json.loads(render_sarif(summary))["runs"][0]
    uris = [
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in run["results"]
    ]
    assert uris[0] == uris[1] == "logs/my%20app.log"
    # an absolute path is a file URI, percent-encoded: a URI holds no space or raw non-ASCII
    assert "file:///var/log/abs%20path/%C3%A9.log" in uris
    assert uris[-1] == "stdin"
    for uri in uris:
        assert uri.isascii() and " " not in uri


def test_sarif_fingerprints(summary, secrets) -> None:
    again = dataclasses.replace(summary, findings=list(summary.findings))
    first = json.loads(render_sarif(summary))["runs"][0]["results"]
    second = json.loads(render_sarif(again))["runs"][0]["results"]
    prints = [r["partialFingerprints"]["leakcheck/v1"] for r in first]
    assert prints == [r["partialFingerprints"]["leakcheck/v1"] for r in second]  # stable
    assert len(set(prints)) == len(prints)  # distinct per location
    for value in prints:
        assert len(value) == 64 and int(value, 16) >= 0
    # the hash depends on where and what (id, form, location), not on the excerpt
    moved = [dataclasses.replace(f, excerpt="other") for f in summary.findings]
    third = json.loads(render_sarif(dataclasses.replace(summary, findings=moved)))
    assert [r["partialFingerprints"]["leakcheck/v1"] for r in third["runs"][0]["results"]] == (
        prints
    )


def test_sarif_clean_is_valid(sarif_validator) -> None:
    document = validate(sarif_validator, render_sarif(ScanSummary(findings=[], sources=3)))
    [run] = document["runs"]
    assert run["results"] == []
    assert run["invocations"][0]["executionSuccessful"] is True


def test_sarif_with_errors_is_valid(sarif_validator) -> None:
    summary = ScanSummary(findings=[], sources=1, errors=["cannot read x: Permission denied"])
    document = validate(sarif_validator, render_sarif(summary))
    [invocation] = document["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False
    assert invocation["toolExecutionNotifications"] == [
        {"level": "error", "message": {"text": "cannot read x: Permission denied"}}
    ]


def test_the_validator_rejects_a_broken_log(sarif_validator, summary) -> None:
    # the schema is really applied: a wrong version, a missing message, a bad line number
    document = json.loads(render_sarif(summary))
    document["version"] = "2.2.0"
    del document["runs"][0]["results"][0]["message"]
    document["runs"][0]["results"][1]["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
    assert len(list(sarif_validator.iter_errors(document))) == 3


def test_text_groups_per_secret(summary, secrets) -> None:
    text = render_text(summary)
    self_scan(text, secrets, "text report")
    a, b, c = secrets
    lines = text.splitlines()
    assert lines[0] == (
        f"leakcheck: 5 findings in 3 of 4 sources (3 secrets, {summary.needles} needles, "
        f"engine {summary.engine}, decoding pass on)"
    )
    headers = [line for line in lines if line and not line.startswith(("  ", "leakcheck:"))]
    # one group per secret, in order of first finding, every hit of it under it
    assert headers == [
        f"{a.id} (bearer, direct): 3 hits",
        f"{c.id} (hostname, context): 1 hit",
        f"{b.id} (api_key, direct): 1 hit",
    ]
    group = lines[lines.index(headers[0]) + 1 : lines.index(headers[1]) - 1]
    assert [line[2:].split("  ")[0] for line in group] == [
        "logs/my app.log:1:11",
        "<stdin>:1:1",
        f"<stdin>:1:{len(a.value) + 12}",
    ]
    assert all(" raw " in line for line in group)
    for finding in summary.findings:
        assert finding.excerpt in text
    assert "clean:" not in text


def test_text_clean_and_errors() -> None:
    clean = render_text(ScanSummary(findings=[], sources=2, engine="hyperscan"))
    assert clean.splitlines() == [
        "leakcheck: 0 findings in 0 of 2 sources (0 secrets, 0 needles, engine hyperscan, "
        "decoding pass off)",
        "clean: no form of any secret was found",
    ]
    failed = render_text(ScanSummary(findings=[], sources=1, errors=["boom"]))
    assert failed.splitlines()[1:] == ["error: boom"]
    assert failed.splitlines()[0].startswith("leakcheck: 0 findings in 0 of 1 source (")


def test_render_dispatch(summary) -> None:
    assert set(RENDERERS) == {"text", "json", "sarif"}
    for name, renderer in RENDERERS.items():
        assert render(summary, name) == renderer(summary)
