"""leakcheck: prove that an AI-agent tool gateway does not leak its secrets.

The pipeline, one module per concept: canaries -> placements -> faults -> capture ->
detect -> verdict -> report. The scanner works without pytest; the pytest plugin and the
CLI sit on top of it.

The main objects, importable from here:

* secrets: ``CanaryFactory``, ``Secret``, ``SecretClass``, ``KINDS``, ``WeakSecretError``;
* every mistake in calling leakcheck: ``LeakcheckUsageError``;
* search: ``Scanner``, ``Finding``;
* a test's harness (also without pytest): ``LeakCheck``, ``LeakError``, ``Captured``,
  ``Policy``;
* the stage matrix: ``stage_matrix``, ``Target``, ``Operation``, ``Case``, ``Expectations``.

Each is imported on first use: ``leakcheck scan`` never pays for the harness and the
matrix, and the pytest plugin, loaded in every run of a virtualenv that has it, for none
of them until a test asks for its fixture or registers a secret.
"""

from __future__ import annotations

from ._lazy import lazy_names
from .version import __version__

TYPE_CHECKING = False  # not typing's: its import was a twentieth of a scan's start-up
if TYPE_CHECKING:
    from .canaries import KINDS, CanaryFactory, Secret, SecretClass, WeakSecretError
    from .capture import Captured
    from .contract import Expectations
    from .detect import Scanner
    from .errors import LeakcheckUsageError
    from .findings import Finding
    from .forms import FORMS, Needle, needles_for  # noqa: F401 - kept importable from here
    from .harness import LeakCheck, LeakError
    from .matrix import Case, Operation, Target, stage_matrix
    from .policy import Policy

__all__ = [
    "KINDS",
    "CanaryFactory",
    "Captured",
    "Case",
    "Expectations",
    "Finding",
    "LeakCheck",
    "LeakError",
    "LeakcheckUsageError",
    "Operation",
    "Policy",
    "Scanner",
    "Secret",
    "SecretClass",
    "Target",
    "WeakSecretError",
    "stage_matrix",
    "__version__",
]

#: name -> the module that defines it, imported when the name is first read
_LAZY = {
    "KINDS": "canaries",
    "CanaryFactory": "canaries",
    "Secret": "canaries",
    "SecretClass": "canaries",
    "WeakSecretError": "canaries",
    "Scanner": "detect",
    "LeakcheckUsageError": "errors",
    "Finding": "findings",
    "FORMS": "forms",
    "Needle": "forms",
    "needles_for": "forms",
    "Captured": "capture",
    "Expectations": "contract",
    "LeakCheck": "harness",
    "LeakError": "harness",
    "Case": "matrix",
    "Operation": "matrix",
    "Target": "matrix",
    "stage_matrix": "matrix",
    "Policy": "policy",
}


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
