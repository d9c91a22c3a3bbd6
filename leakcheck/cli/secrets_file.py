"""``--secrets-file``: one secret per line or a ``.json`` list, read and judged (a weak
secret is refused), its ids and kinds checked, never quoted back in a message."""

from __future__ import annotations

import codecs
import re

from .._lazy import lazy_compile
from .._values import replace
from ..canaries import KINDS, Secret, is_kind_name
from ..errors import LeakcheckUsageError
from ..serialize import parse_json
from .budget import Budget, ScaleError, budget_for
from .console import UsageError, named, print_stderr, quotable_choice

TYPE_CHECKING = False  # not typing's: its import was a twentieth of a scan's start-up
if TYPE_CHECKING:
    from typing import Any

__all__ = ["OWN_ID", "OWN_KINDS", "SecretsFile", "load_secrets", "read_secrets"]


#: Control characters that a line of a secrets file cannot mean (tab excepted): a lone
#: carriage return (a file with old Mac line endings would be one long secret), NUL, ESC,
#: form feed, the C1 controls and the Unicode line separators.
_LINE_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")
#: The keys of a secrets file's item (a JSON object).
_ITEM_KEYS = ("value", "kind", "id")
#: What an id or a kind may not hold: control characters, and the guillemets of a mask
#: label (``«canary:KIND:FORM»``), which a kind is printed inside.
_LABEL_FORBIDDEN = lazy_compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u00ab\u00bb]")
#: The ids ``S<line or item number>`` are ours; up to 5 characters they cannot hold a
#: 6-character piece of a secret.
OWN_ID = re.compile(r"S[0-9]{1,4}")
OWN_KINDS = frozenset({"secret", *KINDS})


class SecretsFile:
    """The secrets of a file, with what must be checked or said about them (a plain class:
    a dataclass cost the start-up 0.4 ms to define)."""

    def __init__(
        self,
        secrets: list[Secret],
        named: list[tuple[int, str, str]] | None = None,
        warnings: list[str] | None = None,
    ) -> None:
        self.secrets = secrets
        #: (item number, "id" or "kind", text) of every id and kind the file spells out:
        #: printed in every report (a kind inside every mask label), so checked once loaded
        self.named: list[tuple[int, str, str]] = [] if named is None else named
        self.warnings: list[str] = [] if warnings is None else warnings


def load_secrets(path: str) -> list[Secret]:
    """One secret per line (UTF-8, blank lines ignored), or a ``.json`` list of strings or of
    ``{"value", "kind", "id"}`` objects for multi-line secrets such as PEM keys. A leading
    BOM and a line's ``\\r`` are removed; spaces and tabs around a line's secret are
    removed with a warning (on stderr, naming the line, never the value)."""
    loaded = read_secrets(path)
    for warning in loaded.warnings:
        print_stderr(warning)
    return loaded.secrets


def read_secrets(path: str, budget: Budget | None = None, *, early: bool = True) -> SecretsFile:
    entries: list[tuple[str, str, str]] = []  # (value, kind, id), as read so far
    try:
        return _read_secrets(path, budget, early, entries)
    except UsageError as exc:
        # The message names the file's path and an item's id, either of which may hold a
        # secret the file gave before the bad line (a directory named after a token, an
        # id made of one): masked with them.
        exc.secrets += _for_masking(entries, str(exc), every=not isinstance(exc, ScaleError))
        raise


#: Up to this many values read, an error is masked with each of them (in any form, as
#: every mask is); past it, or for a file refused for holding too many (``ScaleError``:
#: before any work on them), with those the message holds a piece of as it is or
#: case-folded, this many characters in a row (a masking window).
_ALL_UP_TO, _SHOWN_CHARS = 1_000, 6


def _for_masking(entries: list[tuple[str, str, str]], message: str, *, every: bool) -> list[Secret]:
    """The values of ``entries`` to mask ``message`` with (``_ALL_UP_TO``; ``every``:
    no scale refusal), as secrets (judged early; one too weak to be a secret cannot be
    masked and is left out)."""
    size = _SHOWN_CHARS
    grams = {text[i : i + size] for text in (message, message.casefold()) for i in range(len(text))}
    secrets = []
    for value, _kind, _id in entries:
        windows = range(len(value) - size + 1)
        if (
            (not every or len(entries) > _ALL_UP_TO)
            and grams.isdisjoint(value[i : i + size] for i in windows)
            and grams.isdisjoint(value.casefold()[i : i + size] for i in windows)
        ):
            continue
        try:
            secrets.append(Secret.from_user(value, kind="secret", id="S1"))
        except (LeakcheckUsageError, ValueError):
            continue
    return secrets


def _read_secrets(
    path: str, budget: Budget | None, early: bool, entries: list[tuple[str, str, str]]
) -> SecretsFile:
    budget = budget_for() if budget is None else budget
    label = f"secrets file {named(path)}"
    try:
        with open(path, "rb") as given:
            data = given.read()
    except OSError as exc:
        raise UsageError(f"cannot read {label}: {exc.strerror}") from None
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    head = data[:64]
    if head[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE) or (
        len(head) >= 8 and head[1::2].count(0) >= len(head) // 4 and 0 not in head[::2]
    ):  # (UTF-16-LE of ASCII text is valid UTF-8: a NUL after every character)
        raise UsageError(
            f"{label} is UTF-16 (as Windows PowerShell 5 writes a file by default): save it "
            "as UTF-8 (Set-Content -Encoding utf8, or Out-File -Encoding utf8)"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        lineno = data.count(b"\n", 0, exc.start) + 1
        raise UsageError(f"{label} is not valid UTF-8 (line {lineno})") from None
    loaded = SecretsFile([])
    if path.endswith(".json"):
        listed = parse_json(text, label, UsageError, surrogates=False, unique_keys=True)
        if not isinstance(listed, list):
            raise UsageError(f"{label}: expected a JSON list")
        budget.check(len(listed), 0, label)
        ids: dict[str, int] = {}
        for n, item in enumerate(listed, start=1):
            if isinstance(item, str):
                item = {"value": item}
            if not isinstance(item, dict) or not isinstance(item.get("value"), str):
                raise UsageError(
                    f"{label} item {n}: expected a string or an object with a string 'value'"
                )
            unknown = [key for key in item if key not in _ITEM_KEYS]
            if unknown:
                # (refused, not ignored: a misspelt "kind" or "id" left the secret
                # named otherwise than meant, silently. A key may be a secret pasted where
                # a name goes: quoted only as an option's invalid choice is; a value never)
                shown = ", ".join(
                    repr(key) if quotable_choice(key, _ITEM_KEYS) else
                    f"a key of {len(key)} characters (not shown)"
                    for key in unknown
                )  # fmt: skip
                raise UsageError(
                    f"{label} item {n}: unknown key{'s' if len(unknown) > 1 else ''} {shown}; "
                    "an item has only 'value', 'kind' and 'id'"
                )
            kind = _label_field(item, "kind", "secret", label, n, loaded)
            secret_id = _label_field(item, "id", f"S{n}", label, n, loaded)
            if secret_id in ids:
                raise UsageError(
                    f"{label} item {n}: the same id as item {ids[secret_id]} (an id names "
                    "one secret)"
                )
            ids[secret_id] = n
            entries.append((item["value"], kind, secret_id))
    else:
        stripped: list[int] = []
        for n, line in enumerate(text.split("\n"), start=1):
            if line.endswith("\r"):
                line = line[:-1]
            value = line.strip(" \t")
            if not value:
                continue
            if _LINE_CONTROL.search(value):
                raise UsageError(
                    f"{label} line {n}: a control character (a carriage return inside the "
                    "line, NUL, ESC...) that a secret as written here can never mean; a "
                    "secret that really holds one goes in a .json secrets file"
                )
            if value != line:
                stripped.append(n)
            entries.append((value, "secret", f"S{n}"))
        if stripped:
            shown = ", ".join(map(str, stripped[:5]))
            more = f" and {len(stripped) - 5:,} more" if len(stripped) > 5 else ""
            loaded.warnings.append(
                f"leakcheck: warning: secrets file line {shown}{more}: spaces or tabs around "
                "the secret were removed (a secret that really has them goes in a .json "
                "secrets file)"
            )
    if not entries:
        raise UsageError(f"{label} holds no secret")
    budget.check(len(entries), sum(len(v) for v, _, _ in entries), label)
    judged: dict[str, Secret] = {}
    item = " item {}" if path.endswith(".json") else ""  # (a line's id says its number)
    for number, (value, kind, secret_id) in enumerate(entries, start=1):
        if value in judged:  # given twice: judged once (zxcvbn), searched for once
            loaded.secrets.append(replace(judged[value], id=secret_id))
            continue
        try:
            judged[value] = Secret.from_user(value, kind=kind, id=secret_id, early=early)
        except LeakcheckUsageError as exc:  # (too weak; an id that looks like a key)
            raise UsageError(f"{label}{item.format(number)}: {exc}") from None
        loaded.secrets.append(judged[value])
    return loaded


def _label_field(
    item: dict[str, Any], name: str, default: str, label: str, n: int, loaded: SecretsFile
) -> str:
    """An item's ``id`` or ``kind``: a string (an id may be a number), printable, never
    quoted back in a message (it may be the secret itself)."""
    if name not in item:
        return default
    value = item[name]
    if name == "id" and isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value or _LABEL_FORBIDDEN.search(value):
        raise UsageError(
            f"{label} item {n}: its {name!r} must be a non-empty string without control "
            "characters or \u00ab\u00bb"
        )
    if name == "kind" and value not in KINDS and not is_kind_name(value):
        # (printed in every mask label and report: a token given as it was shown raw)
        raise UsageError(
            f"{label} item {n}: its 'kind' must be a name for the secret, such as 'bearer' "
            f"or 'github_token'; it is a str of {len(value)} characters that looks like a "
            "value, not a name: was the secret given as its kind?"
        )
    loaded.named.append((n, name, value))
    return value
