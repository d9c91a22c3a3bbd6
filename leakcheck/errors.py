"""What every mistake in calling leakcheck has in common.

An unknown stage, transport, placement or kind, an option misspelt, a weak secret: each
error says what to change, and the frames of leakcheck that raised it say nothing more.
Under the pytest plugin such an error is shown at the caller's line, leakcheck's own frames
left out of the traceback (``--full-trace`` keeps them): pytest prints each frame's
arguments, and a frame of ours may hold the value it refused.
"""

from __future__ import annotations

__all__ = ["LeakcheckUsageError", "NotASecretError"]


class LeakcheckUsageError(Exception):
    """A mistake in how leakcheck was called; the message says what to change. Each
    concrete error is also the builtin a caller would catch (``ValueError``...)."""


class NotASecretError(LeakcheckUsageError, TypeError):
    """A value of the wrong type where a secret was expected (its type is named, never
    its value)."""
