"""The stage matrix: every operation x stage x placement of a gateway, one test item each.

A user describes their gateway once, as a ``Target``: its operations (transport, whether a
retry is safe, a valid input, an invalid one) and how to call it under a generated
``Case``. Then

    test_gateway = stage_matrix(MyTarget())

in a test module collects one item per case, eagerly (``-k``, ``--collect-only`` and
``-n 2`` work; ids are names, never values). Each case forces its stage, calls the gateway
once and makes the seed's four assertions:

1. contract: what the gateway returned carries the code and action expected for this
   stage and operation, judged by ``Target.contract`` (envelope v1 by default: the schema
   and the semantic rules too; an ``ErrorAdapter`` for a gateway's own error shape;
   ``NOT_CHECKED``);
2. leaks: no secret in any caller-visible field or forbidden sink (the ``leakcheck``
   fixture's verdict, reported above the matrix's own);
3. hygiene: no raw header, upstream body text, upstream-prose marker or local connection
   detail (loopback address, server port, known_hosts path) in the response, and no
   hostname or user name of the case in its request id;
4. record: the protected record exists, carries the request id and boundary states
   consistent with the stage, and holds no direct secret (it is scanned as an operator
   sink). Off for a target that keeps no record (``Target.record`` not overridden).

What is off is "not checked" in the grid and the reports, never "ok". A gateway that
raises instead of returning fails its case as "gateway raised"; a placement whose
credential the gateway never asked the vault for fails it as not exercised. The
gateway-side stages are generated only for the seams the target declares
(``Target.seams``).

Across the matrix, request ids are checked at the end of the session (unique, not
sequential, >= 64 random bits, nothing recognisable inside).

One module per role: ``model`` (``Operation``, ``Target``, ``CaseSpec``, ``Case``,
``SSHTarget``, the seams), ``collect`` (``cases_for``, the checks of a target,
``stage_matrix``), ``run`` (``build_case``, ``run_case``, the failure text), ``hygiene``
(assertion 3), ``grid`` (``format_grid``); every name is importable from
``leakcheck.matrix`` as before.
"""

from __future__ import annotations

# ``name as name``: importable from here as before (the plugins, the tests), not in __all__
from .collect import caseless_stages as caseless_stages
from .collect import cases_for, stage_matrix
from .grid import format_grid as format_grid
from .hygiene import hygiene_violations as hygiene_violations
from .hygiene import request_id_words as request_id_words
from .model import ALL_SEAMS as ALL_SEAMS
from .model import DEFAULT_CONTRACT as DEFAULT_CONTRACT
from .model import (
    DEFAULT_INVALID_INPUT,
    SEAMS,
    Case,
    CaseSpec,
    Operation,
    SSHTarget,
    Target,
    TargetError,
    default_invalid_input,
)
from .model import DEFAULT_UPSTREAM as DEFAULT_UPSTREAM
from .model import UNREACHABLE_URL as UNREACHABLE_URL
from .model import contract_of as contract_of
from .model import keeps_record as keeps_record
from .model import seams_of as seams_of
from .run import ASSERTIONS, MatrixFailure, run_case
from .run import Problem as Problem
from .run import build_case as build_case
from .run import unread_credentials as unread_credentials

__all__ = [
    "ASSERTIONS",
    "DEFAULT_INVALID_INPUT",
    "SEAMS",
    "Case",
    "CaseSpec",
    "MatrixFailure",
    "Operation",
    "SSHTarget",
    "Target",
    "TargetError",
    "cases_for",
    "default_invalid_input",
    "run_case",
    "stage_matrix",
]
