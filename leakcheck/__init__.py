"""leakcheck: prove that an AI-agent tool gateway does not leak its secrets.

The pipeline, one module per concept: canaries -> forms -> engine -> detect -> findings ->
report. The scanner works without pytest; the pytest plugin and the CLI sit on top of it.
"""

from __future__ import annotations

__version__ = "0.1.0"

from .canaries import KINDS, CanaryFactory, Secret, SecretClass, WeakSecretError  # noqa: E402
from .detect import Scanner  # noqa: E402
from .findings import Finding  # noqa: E402
from .forms import FORMS, Needle, needles_for  # noqa: E402

__all__ = [
    "KINDS",
    "FORMS",
    "CanaryFactory",
    "Finding",
    "Needle",
    "Scanner",
    "Secret",
    "SecretClass",
    "WeakSecretError",
    "needles_for",
    "__version__",
]
