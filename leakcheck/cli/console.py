"""What ``leakcheck`` says and where: its exit codes, the one-line usage error, standard
output and standard error written so that neither can crash the command, and names (paths,
test ids) as printable text. What is said is masked before it gets here (``output``)."""

from __future__ import annotations

import os
import re
import sys

TYPE_CHECKING = False  # not typing's: its import was a twentieth of a scan's start-up
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from ..canaries import Secret

__all__ = [
    "EXIT_CLEAN",
    "EXIT_ERROR",
    "EXIT_FINDINGS",
    "StdoutError",
    "UsageError",
    "display",
    "print_stderr",
    "quotable_choice",
    "silence_stdout",
    "write_stdout",
]

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class UsageError(Exception):
    """A user mistake: reported as one line, exit 2, never a traceback. ``secrets``: those
    known where it was raised and not yet to the command's masker (a secrets file read
    up to a bad line: the path or id the message names may hold one of them)."""

    def __init__(self, message: str, secrets: Sequence[Secret] = ()) -> None:
        super().__init__(message)
        self.secrets = list(secrets)


class StdoutError(Exception):
    """Standard output cannot be written (``> /dev/full``, a closed pipe)."""


_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    code = ord(ch)
    return _ESCAPES.get(ch) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def display(name: str) -> str:
    """A path (or a test id) as printable text: bytes that are not UTF-8 (a file name
    arrives surrogate-escaped) as ``\\xff``, control characters escaped."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        try:
            raw = name.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            raw = name.encode("utf-8", "backslashreplace")
        name = raw.decode("utf-8", "backslashreplace")
    return _UNPRINTABLE.sub(_escape, name)


#: How an argument that names no file and looks like a credential is said instead of quoted.
NOT_A_PATH = "an argument that names no file and looks like a credential"


def named(path: str, *, to_write: bool = False) -> str:
    """``path`` as an error quotes it (``repr`` of its printable text), unless it names no
    file and looks like a credential: ``--secrets-file $TOKEN`` (or ``--secret``, which
    argparse took for it) printed the token in "cannot read secrets file '...'".
    ``to_write``: a path to write (``--output``), which names no file yet: described
    without the advice for a secret given as an argument."""
    if credential_argument(path):
        if to_write:
            return "(a path that looks like a credential: not quoted)"
        return f"({NOT_A_PATH}: a secret is never given as an argument; put it in a file)"
    return repr(display(path))


def credential_argument(path: str) -> bool:
    """Whether ``path`` names no file and holds a run that looks like a key."""
    import os

    if os.path.lexists(path):
        return False
    from ..findings import without_random_tokens  # (on this error path only)

    return without_random_tokens(display(path)) != display(path)


def print_stderr(line: str) -> None:
    try:
        print(line, file=sys.stderr)
    except (OSError, ValueError, AttributeError):
        pass  # nowhere left to say it


def write_stdout(text: str) -> None:
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except (OSError, ValueError) as exc:
        raise StdoutError(getattr(exc, "strerror", None) or str(exc)) from None


def silence_stdout() -> None:
    """Point fd 1 at /dev/null, so that the interpreter's last flush of what could not be
    written succeeds (as the Python docs advise for BrokenPipeError)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass  # not a real file descriptor (captured in tests): nothing is left to flush


#: Shorter than this, a value cannot be a piece that an excerpt would mask
#: (``findings.PIECE_CHARS``): quoted whatever it is ("--format yaml").
_SHOWN_BELOW = 8
#: A typo of a choice is quoted up to this length: one character shorter than the shortest
#: secret ``Secret.from_user`` accepts (12), so no secret is quoted whole.
_TYPO_MAX_CHARS = 11
#: How alike a typo and a choice are (``difflib.SequenceMatcher.ratio``): "jsno" and
#: "json" 0.75, "sarf" and "sarif" 0.89, "hyperscna" and "hyperscan" 0.89.
_TYPO_RATIO = 0.6


def quotable_choice(value: object, choices: Iterable[object]) -> bool:
    """Whether a value that is none of ``choices`` (an option's, the keys of a secrets
    file's item) may be quoted in its error: shorter than a piece of a secret, or a typo of
    a choice (as alike as _TYPO_RATIO, lower-cased) shorter than any secret. Anything else
    (a passphrase, a token, a canary, pasted where the choice goes) is described by its
    length only, and the choices are listed: an argument error is printed before any
    secret is read, with nothing to mask it, and the «opaque» rule passes a passphrase of
    words."""
    text = str(value)
    if len(text) < _SHOWN_BELOW:
        return True
    if len(text) > _TYPO_MAX_CHARS:
        return False
    import difflib  # (on this error path only)

    folded = text.lower()
    return any(
        difflib.SequenceMatcher(None, folded, str(choice).lower()).ratio() >= _TYPO_RATIO
        for choice in choices
    )
