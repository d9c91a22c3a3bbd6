"""How many secrets one scan takes: the limits, and a budget that the secrets file and the
rebuilt canaries each spend before any work on them (see README, "Scale"). The limits are
read when a budget is made: set them here (tests do), not on ``leakcheck.cli``."""

from __future__ import annotations

from ..canaries import Secret
from .console import UsageError

__all__ = [
    "BATCH_CHARS",
    "BATCH_SECRETS",
    "HYPERSCAN_MAX_SECRETS",
    "MAX_SECRETS",
    "MAX_SECRET_CHARS",
    "Budget",
    "batches_of",
    "budget_for",
]


#: The most secrets one scan searches for: the secrets file's and the rebuilt canaries
#: together, duplicates included. Past it the run is refused before any work on them
#: (every secret makes ~85 needles; a random token is judged in ~0.3 ms, one that zxcvbn
#: must judge in ~4 ms; 100,000 random tokens take ~2 minutes; see README, "Scale").
MAX_SECRETS = 100_000
#: The most characters those secrets may hold together: needles, and the masking windows
#: of what is printed, grow with the length of each secret.
MAX_SECRET_CHARS = 5_000_000
#: A scan searches for this many secrets (or characters of them) at a time, reading its
#: inputs once per batch: memory stays that of one batch's needles (~85 needles and ~35 KB
#: a secret in the automaton) however many secrets there are.
BATCH_SECRETS = 5_000
BATCH_CHARS = 250_000
#: The most secrets ``--engine hyperscan`` is accepted for: compiling takes ~3 KB of memory
#: and ~0.1 ms per needle (2,000 secrets: ~190,000 needles, 0.6 GB, 20 s; 10,000: 3 GB, 2
#: minutes, where the automaton takes 0.45 GB). ``auto`` takes the automaton there by
#: itself (``engine.HYPERSCAN_MAX_NEEDLES``).
HYPERSCAN_MAX_SECRETS = 2_000


class ScaleError(UsageError):
    """More secrets than a scan is made for: refused before any work on them (an error
    masked with the values read judges only those its message holds a piece of)."""


class Budget:
    """How many secrets (and characters of them) a scan may take, and has taken (a plain
    class: a dataclass cost the start-up 0.4 ms to define)."""

    __slots__ = ("secrets", "chars", "why", "used", "used_chars")

    def __init__(
        self, secrets: int, chars: int, why: str = "", used: int = 0, used_chars: int = 0
    ) -> None:
        self.secrets, self.chars, self.used, self.used_chars = secrets, chars, used, used_chars
        #: why the limit is what it is, when it is not the general one
        self.why = why

    def __repr__(self) -> str:
        return (
            f"Budget(secrets={self.secrets}, chars={self.chars}, why={self.why!r}, "
            f"used={self.used}, used_chars={self.used_chars})"
        )

    def check(self, count: int, chars: int, label: str) -> None:
        """Refuse, before any work on them, more secrets than a scan is made for."""
        total, total_chars = self.used + count, self.used_chars + chars
        if total > self.secrets:
            raise ScaleError(
                f"{label} brings the secrets to search for to {total:,}; one scan searches "
                f"for at most {self.secrets:,}{self.why} (split them over several scans; see "
                "README, Scale)"
            )
        if total_chars > self.chars:
            raise ScaleError(
                f"{label} brings the secrets to search for to {total_chars:,} characters; one "
                f"scan searches for at most {self.chars:,} (split them over several scans; "
                "see README, Scale)"
            )

    def take(self, secrets: list[Secret]) -> Budget:
        """This budget once ``secrets`` are in."""
        return Budget(
            self.secrets,
            self.chars,
            self.why,
            used=self.used + len(secrets),
            used_chars=self.used_chars + sum(len(s.value) for s in secrets),
        )


def budget_for(engine: str = "auto") -> Budget:
    if engine == "hyperscan":
        return Budget(
            secrets=HYPERSCAN_MAX_SECRETS,
            chars=MAX_SECRET_CHARS,
            why=" with --engine hyperscan (it compiles ~3 KB per needle; the default engine "
            "takes more)",
        )
    return Budget(secrets=MAX_SECRETS, chars=MAX_SECRET_CHARS)


def batches_of(secrets: list[Secret]) -> list[list[Secret]]:
    """``secrets`` in batches of at most BATCH_SECRETS secrets and BATCH_CHARS characters
    (a longer secret alone); one batch when they fit."""
    batches: list[list[Secret]] = [[]]
    chars = 0
    for secret in secrets:
        if batches[-1] and (
            len(batches[-1]) >= BATCH_SECRETS or chars + len(secret.value) > BATCH_CHARS
        ):
            batches.append([])
            chars = 0
        batches[-1].append(secret)
        chars += len(secret.value)
    return batches
