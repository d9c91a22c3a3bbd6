"""How the example gateways are put under leakcheck's stage matrix: the ~20 lines a team
writes once in its own conftest (README "The Target API, for a gateway built without
leakcheck in mind")."""

from __future__ import annotations

from typing import Any

from leakcheck.matrix import Case, Operation, Target

from . import careful_gateway, leaky_gateway
from .gateway_kit import HttpAuth, RecordStore, SSHSettings


class ExampleTarget(Target):
    gateway: Any = careful_gateway.Gateway
    operations = [
        Operation("create_deployment", "http", repeatable=False, input={"repo": "web"}),
        Operation("get_deployment", "http", repeatable=True, input={"deployment_id": "dep_7"}),
        Operation("run_command", "ssh", repeatable=False, input={"args": ["--dry-run"]}),
    ]

    def call(self, case: Case) -> dict[str, Any]:
        records = case.context["records"] = RecordStore()
        gateway = self.gateway(
            vault=case.vault, approver=case.approver, records=records,
            upstream_url=case.upstream_url, auth=HttpAuth(*vars(case.auth).values()),
            ssh=SSHSettings(**vars(case.ssh)) if case.ssh else None,
            timeout=case.timeout, verify=case.verify, checkpoint=case.boom,
        )  # fmt: skip
        return gateway.call(case.operation.name, case.agent_input)

    def record(self, case: Case, request_id: str) -> dict[str, Any] | None:
        return case.context["records"].get(request_id)


class CarefulTarget(ExampleTarget):
    gateway = careful_gateway.Gateway


class LeakyTarget(ExampleTarget):
    gateway = leaky_gateway.Gateway
