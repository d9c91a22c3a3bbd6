"""A Python child process as the loopback fault's client (``fault.child_environment()``):
what its proof hook (``netwatch.ChildProof``) watches and fails at each stage, the
variables that make it trust an https fault's CA, and what the reason of an unreached
stage says about the children."""

from __future__ import annotations

import os

from leakcheck.netwatch import ChildProof

__all__ = ["TRUST_VARIABLES", "child_note", "child_proof"]

#: an https fault's child trusts ``fault.ca_file`` through these (``SSL_CERT_FILE``
#: replaces the system CAs in the child: it trusts the fault alone)
TRUST_VARIABLES = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS")


def child_proof(
    directory: str, stage: str, address: tuple[str, int], redirect_hosts: list[str]
) -> ChildProof:
    """The proof hook of a fault's children, under ``directory``: it watches connects to
    ``address`` (connection_refused, timeout_before_send) and fails lookups of ``.invalid``
    names (dns_failure) and of ``redirect_hosts`` (a redirect target's host)."""
    watched = stage in ("connection_refused", "timeout_before_send")
    return ChildProof(
        os.path.join(directory, "child"),
        connect=address if watched else None,
        fail_suffixes=[".invalid"] if stage == "dns_failure" else [],
        fail_names=redirect_hosts,
    )


def child_note(proof: ChildProof | None) -> str:
    """What the reason of an unreached stage adds about child processes ("" when no child
    environment was asked for)."""
    if proof is None:
        return ""
    processes = proof.read().processes
    if not processes:
        return (
            " (no Python child process loaded the hook of fault.child_environment(): "
            "start the child with that environment, and without -I, -E or -S)"
        )
    plural = "es" if processes != 1 else ""
    return f" ({processes} Python child process{plural} ran with fault.child_environment())"
