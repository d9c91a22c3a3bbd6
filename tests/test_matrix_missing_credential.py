"""A target that asks the vault for a kind its case's placement does not plant.

Found as a newcomer writing a ``Target`` for a gateway that takes an API key: every case
but those of ``query-api-key`` failed as "the gateway raised KeyError ... (raised at
doubles.py:48 in get: 'api_key')", pointing into leakcheck. The vault now says what it
holds, and the case fails as what it is, a case that exercised nothing (``!``), naming
the placements that plant the kind; and the hint for fixture tests about canaries beyond
ASCII is not given for a matrix case, whose canaries its placements plant.
"""

from __future__ import annotations

import pytest
from conftest import inner_outcomes, self_scan

from leakcheck.canaries import CanaryFactory
from leakcheck.doubles import MissingCredential, Vault
from leakcheck.harness import LeakCheck

pytest_plugins = ["pytester"]


def test_the_vault_says_what_it_holds_by_kind_only() -> None:
    check = LeakCheck(seed="vault-missing", sinks=[], announce=False)
    token = check.secret("bearer")
    vault = Vault({"bearer": token})
    assert vault.get("bearer") == token
    assert vault.missing == []
    with pytest.raises(MissingCredential) as raised:
        vault.get("api_key")
    assert isinstance(raised.value, KeyError)  # what a mapping raises, as before
    assert str(raised.value) == "the vault holds no api_key credential (it holds: bearer)"
    assert vault.missing == ["api_key"]
    assert vault.requests == ["bearer", "api_key"]
    self_scan(str(raised.value), check.secrets, "the vault's message")


INNER = """
import httpx2
from leakcheck.contract import NOT_CHECKED
from leakcheck.matrix import Operation, Target, stage_matrix


class Notes(Target):
    operations = [Operation("search_notes", "http", repeatable=True, input={"query": "x"})]
    contract = NOT_CHECKED
    seams = frozenset({"vault"})
    stages = ["http_401"]
    placements = ["authorization-header", "query-api-key"]

    def call(self, case):
        try:
            key = case.vault.get("api_key")
        except KeyError:
            if CATCHES:
                return {"ok": False, "code": "NO_CREDENTIAL"}
            raise
        token = case.vault.get("bearer")
        with httpx2.Client(timeout=case.timeout) as client:
            response = client.get(case.upstream_url + "/v1/notes",
                                  params={"q": "x", "api_key": key},
                                  headers={"Authorization": "Bearer " + token})
        return {"ok": False, "code": "UPSTREAM", "status": response.status_code}


test_notes = stage_matrix(Notes())
"""


@pytest.mark.parametrize("catches", [False, True], ids=["raised", "caught"])
def test_a_kind_the_placement_does_not_plant_is_a_case_that_proved_nothing(
    pytester: pytest.Pytester, catches: bool
) -> None:
    pytest.importorskip("httpx2")
    pytest.importorskip("respx")
    pytester.makepyfile(test_notes=INNER.replace("CATCHES", str(catches)))
    result = pytester.runpytest(
        "-p", "no:randomly", "-rA", "--leakcheck-seed=vault-missing", "--no-leakcheck-snapshots",
        # (httpx2 logs each request's URL, the key in its query, at INFO)
        "-o", "leakcheck_log_levels=httpx2=WARNING",
    )  # fmt: skip
    out = "\n".join(result.outlines + result.errlines)
    assert "INTERNALERROR" not in out
    outcomes = inner_outcomes(result)
    lacking = "test_notes[search_notes-http_401-authorization-header]"
    planting = "test_notes[search_notes-http_401-query-api-key]"
    assert outcomes == {lacking: "FAILED", planting: "PASSED"}
    result.stdout.fnmatch_lines(
        [
            "*[[]harness[]] what the case could not exercise*",
            "*- placement-lacks-credential: placement authorization-header plants no api_key, "
            "and the gateway asked for one (vault.get('api_key')); the vault holds: bearer, "
            "ssh_password. Placements that plant one: query-api-key, *; keep to them "
            "(Target.placements) or ask for what this one plants; a gateway with one key, "
            "whatever it calls it, can take the base credential every placement plants "
            "(vault.get('bearer'))",
        ]
    )
    assert "gateway-raised" not in out  # the double's error, not the gateway's
    assert "doubles.py" not in out
    assert "leakcheck hint" not in out  # a matrix's placements plant its canaries
    planted = [
        CanaryFactory("vault-missing", namespace=f"test_notes.py::{test}").secret(kind)
        for test in (lacking, planting)
        for kind in ("bearer", "api_key", "ssh_password")
    ]
    self_scan(out, planted, "the inner matrix's output")
