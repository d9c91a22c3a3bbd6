"""Where the pytest plugin lived: its public names, importable from here as before.

The plugin is the ``leakcheck.pytest_plugin`` package (registered through the ``pytest11``
entry point); this module only re-exports what users import.
"""

from __future__ import annotations

from .pytest_plugin import CHECK, LeakcheckOptions, register_session_secret

__all__ = ["CHECK", "LeakcheckOptions", "register_session_secret"]
