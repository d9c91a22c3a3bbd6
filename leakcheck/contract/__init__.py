"""The agent error contract: what a gateway may hand an agent when a tool call fails.

Three checks, each returning ``Violation`` objects that name a field and a rule, never a
value (the value under test may be the very secret that leaked):

* ``check_envelope``: the agent-facing error envelope against a versioned JSON Schema
  (``agent-error`` v1, shipped in ``leakcheck/schemas``; users may bring their own), the
  semantic rules a schema cannot say, and the code and action expected for the stage.
* ``check_request_ids``: the request ids of a run are opaque handles: unique, not a counter,
  >= 64 random bits, no hostname, user name, secret or time inside.
* ``check_record``: the gateway's protected operator record exists, carries the request id
  and the boundary states a call reached, consistent with the stage.

Semantic rules (``RULES`` lists every rule id):

* ``retryable`` is true exactly when ``action`` is ``retry_after_delay``;
* ``code`` is ``OUTCOME_UNKNOWN`` exactly when ``action`` is ``inspect_outcome``;
* ``retry_after_seconds`` only with ``retry_after_delay``;
* ``http_status`` only when an upstream HTTP response arrived, and equal to the stage's;
* ``invalid_fields`` holds names (key paths present in the agent input), never values, and
  ``INVALID_INPUT`` carries it.

Default expectations, per stage (``repeatable`` is the integration author's label of the
operation, never guessed from its name):

==========================================  ==========================  =================
stage                                       code                        action
==========================================  ==========================  =================
invalid_input                               INVALID_INPUT               repair_input
vault_locked                                VAULT_LOCKED                stop_and_report
approval_declined                           USER_DENIED                 stop_and_report
gateway_exception                           INTERNAL_ERROR              stop_and_report
http_401, ssh_auth_rejected                 AUTH_FAILED                 stop_and_report
http_403                                    PERMISSION_DENIED           stop_and_report
http_429 (+ retry_after_seconds)            RATE_LIMITED                retry_after_delay
dns_failure, connection_refused,            UPSTREAM_UNREACHABLE        retry_after_delay
timeout_before_send, ssh_connection_refused
tls_*, ssh_host_key_mismatch,               REMOTE_UNVERIFIED           stop_and_report
ssh_unknown_host_key
redirect_signed_url                         UPSTREAM_INVALID_RESPONSE   stop_and_report
ssh_command_failed                          REMOTE_REJECTED             stop_and_report
timeout_after_send, reset_after_send,       non-repeatable: OUTCOME_UNKNOWN / inspect_outcome
http_5xx, ssh_hang_after_command            repeatable: UPSTREAM_UNAVAILABLE / retry_after_delay
malformed_json, html_login_page,            non-repeatable: OUTCOME_UNKNOWN / inspect_outcome
truncated_body                              repeatable: UPSTREAM_INVALID_RESPONSE / stop
==========================================  ==========================  =================

Choices the seed leaves open:

* ``http_429`` is retryable even for a non-repeatable operation: a 429 says the upstream
  refused the request without acting on it; the gateway owns the bounded delay.
* A connection that failed before a byte left (DNS, refused, connect timeout, SSH port
  refused) is retryable whatever the operation: nothing reached the upstream.
* ``redirect_signed_url``: a gateway must not follow a redirect to a host it did not expect
  (the ``Location`` is a signed URL, often for another host), nor pass the ``Location`` on.
  The response is unusable: UPSTREAM_INVALID_RESPONSE / stop_and_report, whatever the
  operation (stopping never re-sends, so repeatability does not change the advice).
* ``ssh_unknown_host_key`` is REMOTE_UNVERIFIED like a mismatch: trust-on-first-use is a
  person's decision, not an agent's.
* ``ssh_hang_after_command`` is a timeout after send: the command may have run.

Users override per stage and per operation with ``Expectations``.

How the stage matrix applies the contract is pluggable (``checks``): ``EnvelopeV1`` (the
default, with the user's schema if any), ``ErrorAdapter`` (the gateway's own error shape
mapped to code and action) or ``NOT_CHECKED``; any ``ContractCheck`` will do.

One module per part: ``vocabulary`` (codes, actions, fields, ``Violation``), ``schema``
(the versioned schema and its errors as fields and rules), ``expectations``, ``envelope``,
``request_ids``, ``record``, ``checks``; every name is importable from
``leakcheck.contract`` as before.
"""

from __future__ import annotations

from .checks import (
    ADAPTER_RULES,
    NOT_CHECKED,
    ContractCheck,
    EnvelopeV1,
    ErrorAdapter,
    NotChecked,
)
from .envelope import check_envelope
from .expectations import DEFAULT, Expectations, Expected, example_envelope
from .record import BOUNDARIES, check_record
from .request_ids import check_request_ids
from .schema import DEFAULT_SCHEMA, SCHEMA_VERSIONS, load_schema
from .vocabulary import (
    ACTIONS,
    CODES,
    DEFAULT_MESSAGES,
    NAME_PATTERN,
    OPERATION_PATTERN,
    OPTIONAL_FIELDS,
    REQUEST_ID_PATTERN,
    REQUIRED_FIELDS,
    RULES,
    Action,
    Code,
    Violation,
)

__all__ = [
    "ACTIONS",
    "ADAPTER_RULES",
    "Action",
    "BOUNDARIES",
    "CODES",
    "Code",
    "ContractCheck",
    "DEFAULT",
    "DEFAULT_MESSAGES",
    "DEFAULT_SCHEMA",
    "EnvelopeV1",
    "ErrorAdapter",
    "Expectations",
    "Expected",
    "NAME_PATTERN",
    "NOT_CHECKED",
    "NotChecked",
    "OPERATION_PATTERN",
    "OPTIONAL_FIELDS",
    "REQUEST_ID_PATTERN",
    "REQUIRED_FIELDS",
    "RULES",
    "SCHEMA_VERSIONS",
    "Violation",
    "check_envelope",
    "check_record",
    "check_request_ids",
    "example_envelope",
    "load_schema",
]
