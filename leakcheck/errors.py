"""What every mistake in calling leakcheck has in common.

An unknown stage, transport, placement or kind, an option misspelt, a weak secret: each
error says what to change, and the frames of leakcheck that raised it say nothing more.
Under the pytest plugin such an error is shown at the caller's line, leakcheck's own frames
left out of the traceback (``--full-trace`` keeps them): pytest prints each frame's
arguments, and a frame of ours may hold the value it refused.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "ExposeNameError",
    "FaultOptionError",
    "LeakcheckUsageError",
    "NotASecretError",
    "UnknownOptionError",
    "did_you_mean",
    "looks_like_a_key",
    "plain",
    "quoted",
    "with_article",
]


class LeakcheckUsageError(Exception):
    """A mistake in how leakcheck was called; the message says what to change. Each
    concrete error is also the builtin a caller would catch (``ValueError``...)."""


class NotASecretError(LeakcheckUsageError, TypeError):
    """A value of the wrong type where a secret was expected (its type is named, never
    its value)."""


class ExposeNameError(LeakcheckUsageError, TypeError, ValueError):
    """A name given to ``expose`` that is no label: not a ``str``, or one holding a secret
    of the test (the object passed where its name goes: ``expose("tool response",
    result)`` left ``result`` unjudged and the test green)."""


class UnknownOptionError(LeakcheckUsageError, TypeError, ValueError):
    """An option a fault transport does not take (a ``TypeError``, as for an unexpected
    keyword argument, and a ``ValueError``, as the HTTP transports raised before)."""


class FaultOptionError(LeakcheckUsageError, ValueError):
    """A fault option whose value a transport cannot use (a URL that is none, a method
    name that is none). A usage error, so that pytest shows the caller's line and none of
    leakcheck's frames, whose arguments hold the value (a URL with a token in its query)."""


def did_you_mean(name: object, known: Iterable[str]) -> str:
    """`` (did you mean 'http_401'?)`` for the one of ``known`` closest to a misspelt
    ``name``, or nothing when none is close."""
    if not isinstance(name, str):
        return ""
    import difflib  # (on the error path only)

    known = list(known)
    same = [k for k in known if k.lower() == name.lower()]  # ("SSH" for "ssh")
    # (a short name's one slip is a larger part of it: "shh" for "ssh" is 0.67 alike)
    close = same or difflib.get_close_matches(
        name, known, n=1, cutoff=0.6 if len(name) <= 4 else 0.8
    )
    return f" (did you mean {close[0]!r}?)" if close else ""


def quoted(value: object) -> str:
    """``repr(value)``, as a message quotes what it refused, unless it holds a run that
    looks like a key and is no name of words (``findings.hides_a_key``): a token given
    where a name goes (a CI script's ``$TOKEN`` in the wrong option, a marker's key, an
    ini value) is no secret any mask knows yet, and is described, never quoted."""
    try:
        shown = repr(value)
    except Exception:  # noqa: BLE001 - a value whose repr raises is described too
        return with_article(type(value).__name__)
    return _described(value if isinstance(value, str) else shown) or shown


def plain(value: object) -> str:
    """``str(value)`` (a name as a message lists it, unquoted), or described as
    ``quoted`` describes a value that looks like a key."""
    try:
        shown = str(value)
    except Exception:  # noqa: BLE001
        return with_article(type(value).__name__)
    return _described(shown) or shown


def looks_like_a_key(value: object) -> bool:
    """Whether ``quoted`` and ``plain`` describe ``value`` rather than show it."""
    return isinstance(value, str) and bool(_described(value))


def _described(text: str) -> str:
    """``text`` described when it holds a run that looks like a key, else ""."""
    from .findings import OPAQUE_LABEL, hides_a_key  # (on the error path only)

    if not hides_a_key(text):
        return ""
    return f"{OPAQUE_LABEL} (a value of {len(text)} characters that looks like a key)"


def with_article(noun: str) -> str:
    """``noun`` after "a" or "an" (a type's name in a message: "an int", "a dict")."""
    return f"{'an' if noun[:1] in tuple('aeiou') else 'a'} {noun}"


def first_leaf(exc: BaseException) -> BaseException:
    """The first exception inside nested exception groups (anyio's task groups wrap what
    failed): what a message names, never "ExceptionGroup"."""
    while True:
        inner = getattr(exc, "exceptions", None)  # a BaseExceptionGroup (3.11+, exceptiongroup)
        if (
            not isinstance(inner, tuple | list)
            or not inner
            or not isinstance(inner[0], BaseException)
        ):
            return exc
        exc = inner[0]
