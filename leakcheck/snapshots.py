"""Where error-text snapshots lived: importable from here as before.

The pytest side is ``leakcheck.pytest_plugin.snapshots``; what needs no pytest (entries,
files, the guard, the diff, ``leakcheck review``) is ``leakcheck.snapshot_store``.
"""

from __future__ import annotations

from .pytest_plugin.snapshots import *  # noqa: F403 - the same public names
from .pytest_plugin.snapshots import __all__  # noqa: F401
