"""Regenerate corpora/demo/: demo canaries and two captured gateway error logs.

The leaky log is what a careless gateway writes when calls fail (the mistakes the seed
article lists); the clean log is the same failures handled by a careful one. Deterministic:
the canaries come from a fixed seed. Run: python scripts/make_demo_artifacts.py
"""

from __future__ import annotations

import base64
import json
import textwrap
from pathlib import Path
from urllib.parse import quote, urlencode

from leakcheck import CanaryFactory

OUT = Path(__file__).resolve().parent.parent / "corpora" / "demo"
KINDS = [
    "bearer",
    "api_key",
    "password",
    "cookie",
    "signature",
    "pem_private_key",
    "ssh_password",
    "hostname",
    "local_path",
    "user_name",
    "resource_id",
    "prose",
]


def main() -> None:
    factory = CanaryFactory(seed=20261130, namespace="demo")
    s = {kind: factory.secret(kind) for kind in KINDS}
    v = {kind: secret.value for kind, secret in s.items()}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "secrets.json").write_text(
        json.dumps(
            [{"id": s[k].id, "kind": k, "value": v[k]} for k in KINDS], indent=2, ensure_ascii=False
        )
        + "\n",
        encoding="utf-8",
    )

    host = v["hostname"]
    leaky = [
        "2026-11-30T10:00:01Z INFO gateway starting, vault unlocked",
        "2026-11-30T10:00:02Z ERROR tool call failed: httpx.HTTPStatusError: Client error "
        "'401 Unauthorized' for url 'https://api.example/v1/deployments?"
        + urlencode({"api_key": v["api_key"]})
        + "'",
        "2026-11-30T10:00:02Z DEBUG request headers: "
        + repr({"Authorization": f"Bearer {v['bearer']}", "Cookie": f"session={v['cookie']}"}),
        "2026-11-30T10:00:03Z WARNING retrying with "
        + "Authorization: Basic "
        + base64.b64encode(f"deploy:{v['password']}".encode()).decode(),
        "2026-11-30T10:00:04Z ERROR upstream said: "
        + json.dumps({"error": json.dumps({"detail": v["prose"], "echo": {"token": v["bearer"]}})}),
        "2026-11-30T10:00:05Z INFO redirect to https://files.example/export.tar?X-Signature="
        + quote(v["signature"], safe=""),
        "2026-11-30T10:00:06Z ERROR AUTH_FAILED: credential ending in "
        f"{v['bearer'][-4:]} was rejected",
        f"2026-11-30T10:00:07Z ERROR ssh: Command 'ssh -i {v['local_path']} "
        f"{v['user_name']}@{host} env DEPLOY_PASSWORD={v['ssh_password']} ./deploy.sh' "
        "returned non-zero exit status 255.",
        "2026-11-30T10:00:08Z ERROR httpcore.ConnectError: [Errno -2] Name or service not "
        f"known: '{host.upper()}'",
        "2026-11-30T10:00:09Z DEBUG loaded key material:",
        *textwrap.wrap(base64.b64encode(v["pem_private_key"].encode()).decode(), 76),
        "2026-11-30T10:00:10Z ERROR resource not found: "
        f"https://git.example/{quote(v['resource_id'])}/pulls",
    ]
    (OUT / "leaky-gateway.log").write_text("\n".join(leaky) + "\n", encoding="utf-8")

    clean = [
        "2026-11-30T10:00:01Z INFO gateway starting, vault unlocked",
        '2026-11-30T10:00:02Z ERROR tool call failed: {"ok": false, "code": "AUTH_FAILED", '
        '"action": "stop_and_report", "retryable": false, "request_id": "act_3f9c1e7a2b6d4058", '
        '"http_status": 401}',
        "2026-11-30T10:00:03Z INFO operator record act_3f9c1e7a2b6d4058: credential_record=cred_42 "
        "bytes_sent=true response_received=true",
        '2026-11-30T10:00:05Z ERROR tool call failed: {"ok": false, "code": "OUTCOME_UNKNOWN", '
        '"action": "inspect_outcome", "retryable": false, "request_id": "act_b81e0d94c27f3a65", '
        '"operation": "create_deployment"}',
        '2026-11-30T10:00:07Z ERROR tool call failed: {"ok": false, "code": "REMOTE_REJECTED", '
        '"action": "stop_and_report", "retryable": false, "request_id": "act_5c2a7f10e9d84b31"}',
        "2026-11-30T10:00:08Z ERROR tool call failed: "
        '{"ok": false, "code": "UPSTREAM_UNREACHABLE", '
        '"action": "retry_after_delay", "retryable": true, "request_id": "act_e04d6b8a1f5c9273"}',
    ]
    (OUT / "clean-gateway.log").write_text("\n".join(clean) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
