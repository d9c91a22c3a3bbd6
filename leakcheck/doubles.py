"""Test doubles for the gateway-side stages, wired by the user into their gateway.

Each records that the gateway consulted it, which is how a gateway-side stage proves it
fired: a locked vault that nobody asked, or an approver that nobody asked, tested nothing.
None of them puts a secret into its own repr or messages.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

__all__ = [
    "Approver",
    "Boom",
    "InternalError",
    "MissingCredential",
    "ObservedInput",
    "Vault",
    "VaultLockedError",
]

Recorder = Callable[[str], None]


class VaultLockedError(Exception):
    """Raised by a locked ``Vault``. Its message names the kind, never a value."""


class MissingCredential(KeyError):
    """Raised by ``Vault.get`` for a kind the vault does not hold (a ``KeyError``, as a
    mapping's): the stage matrix's placements each plant their own kinds, and a target
    asking for another one gets why, not a bare ``KeyError: 'api_key'``. Kinds only."""

    def __str__(self) -> str:  # (a KeyError's str is the repr of its argument)
        return str(self.args[0]) if self.args else ""


class InternalError(RuntimeError):
    """What ``Boom`` raises: a gateway bug whose message carries secrets, as real
    ones do (a formatted URL, a header dict)."""


class Vault:
    """Credentials by kind. A locked vault raises ``VaultLockedError`` on ``get``."""

    def __init__(
        self,
        credentials: Mapping[str, str],
        *,
        locked: bool = False,
        on_locked: Recorder | None = None,
    ) -> None:
        self._credentials = dict(credentials)
        self.locked = locked
        self._on_locked = on_locked
        self.requests: list[str] = []
        #: kinds asked for that the vault does not hold (``MissingCredential``)
        self.missing: list[str] = []

    def get(self, kind: str) -> str:
        self.requests.append(kind)
        if self.locked:
            if self._on_locked is not None:
                self._on_locked(f"the gateway asked the locked vault for a {kind} credential")
            raise VaultLockedError(f"vault is locked: cannot read the {kind} credential")
        try:
            return self._credentials[kind]
        except KeyError:
            self.missing.append(kind)
            held = ", ".join(self.kinds()) or "none"
            raise MissingCredential(
                f"the vault holds no {kind} credential (it holds: {held})"
            ) from None

    def kinds(self) -> list[str]:
        return sorted(self._credentials)

    def __repr__(self) -> str:
        state = "locked" if self.locked else "unlocked"
        return f"Vault({state}, kinds={self.kinds()})"


class Approver:
    """Asked before an operation runs; declines when told to."""

    def __init__(self, *, decline: bool = False, on_decline: Recorder | None = None) -> None:
        self.decline = decline
        self._on_decline = on_decline
        self.asked: list[str] = []

    def approve(self, operation: str, summary: str = "") -> bool:
        self.asked.append(operation)
        if self.decline:
            if self._on_decline is not None:
                self._on_decline(f"the approver was asked about {operation!r} and declined")
            return False
        return True

    __call__ = approve

    def __repr__(self) -> str:
        return f"Approver(decline={self.decline})"


class ObservedInput(dict[str, Any]):
    """The agent's input; records that the gateway read it (validation ran)."""

    def __init__(self, data: Mapping[str, Any], *, on_read: Recorder | None = None) -> None:
        super().__init__(data)
        self._on_read = on_read
        self._seen = False

    def _read(self) -> None:
        if self._on_read is not None and not self._seen:
            self._seen = True
            self._on_read("the gateway read the agent input (validation ran)")

    def __getitem__(self, key: str) -> Any:
        self._read()
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self._read()
        return super().get(key, default)

    def __iter__(self) -> Iterator[str]:
        self._read()
        return super().__iter__()

    def items(self) -> Any:
        self._read()
        return super().items()

    def keys(self) -> Any:
        self._read()
        return super().keys()

    def values(self) -> Any:
        self._read()
        return super().values()

    def __contains__(self, key: object) -> bool:
        self._read()
        return super().__contains__(key)

    def __repr__(self) -> str:
        return f"ObservedInput(fields={sorted(super().keys())})"


class Boom:
    """Call it where the gateway's own code could fail: raises ``InternalError`` whose
    message carries a bearer token and an internal host, like a careless f-string."""

    def __init__(
        self,
        secret: Callable[[str], str],
        *,
        on_raise: Recorder | None = None,
        cause: BaseException | None = None,
    ) -> None:
        self._secret = secret
        self._on_raise = on_raise
        self._cause = cause
        self.armed = on_raise is not None

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        if not self.armed:
            return
        if self._on_raise is not None:
            self._on_raise("fault.boom raised inside the gateway")
        token, host = self._secret("bearer"), self._secret("hostname")
        raise InternalError(
            f"KeyError while building request for https://{host}/v1: "
            f"headers={{'Authorization': 'Bearer {token}'}}"
        ) from self._cause

    def __repr__(self) -> str:
        return f"Boom(armed={self.armed})"
