"""What pytest shortens is masked before it is cut.

pytest shows a long value cut in the middle: an assertion's operands and ``-l`` locals
(``saferepr``: 240 characters, 2,400 under ``-v``), a long string inside a container,
and the explanation of a failed comparison (8 lines or 640 characters without ``-vv``).
A secret's encoded form cut there leaves two pieces that no masking needle matches: the
masking windows cover the raw and escaped spellings, and a piece of the hex or base64
of a token is shorter than that form's needle. ``'6c63622e5673...5694b6a67792e'`` is the
first and the last six characters of a bearer token, in hex. So the whole text is masked
first (the form is found whole there) and the masked text is cut as pytest cuts it.

A text holding no secret is shown exactly as pytest shows it; one that holds a form of
one is cut after masking, which may change where the cut falls.
"""

from __future__ import annotations

import builtins
import logging
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

#: Texts up to this many characters are masked whole before the cut; past it, the head
#: and the tail of this many characters each (what pytest shows is a few thousand at most)
_WHOLE_UP_TO, _END_CHARS = 1 << 20, 1 << 16
_FILL = "..."


def _ends(text: str) -> str:
    """``text``, or its two ends joined around a fill where it is too long to mask whole
    (pytest shows a few thousand characters of its ends at most)."""
    if len(text) <= _WHOLE_UP_TO:
        return text
    return text[:_END_CHARS] + _FILL + text[-_END_CHARS:]


def _cut(text: str, size: int, fill: str = _FILL) -> str:
    """``text`` cut in the middle to ``size`` characters, as ``saferepr`` cuts it."""
    if len(text) <= size:
        return text
    head = max(0, (size - len(fill)) // 2)
    tail = max(0, size - len(fill) - head)
    return text[:head] + fill + text[len(text) - tail :]


class ShortenedMasking:
    """Patches pytest's shortening (``install``) with masking by ``mask``; ``restore``
    puts pytest's own functions back."""

    def __init__(self, mask: Callable[[str], str]) -> None:
        self._mask = mask
        self._saved: list[tuple[Any, str, Any, bool]] = []

    def install(self) -> None:
        if self._saved:
            return
        from _pytest._io import saferepr
        from _pytest.assertion import truncate

        ellipsize = saferepr._ellipsize
        repr_str = saferepr.SafeRepr.repr_str
        mask = self._mask

        def masked_ellipsize(s: str, maxsize: int) -> str:
            if len(s) <= maxsize:
                return s
            shown = _ends(s)
            masked = mask(shown)
            return ellipsize(s if masked == shown else masked, maxsize)

        def masked_repr_str(self: Any, x: str, level: int) -> str:
            original = repr_str(self, x, level)
            if len(x) <= self.maxstring and original == builtins.repr(x):
                return original  # nothing was cut
            if len(x) <= _WHOLE_UP_TO:
                shown = builtins.repr(x)
            else:
                shown = _ends(builtins.repr(x[: _END_CHARS + 1] + x[-_END_CHARS - 1 :]))
            masked = mask(shown)
            if masked == shown:
                return original
            return _cut(masked, self.maxstring, self.fillvalue)

        self._patch(saferepr, "_ellipsize", masked_ellipsize)
        self._patch(saferepr.SafeRepr, "repr_str", masked_repr_str)
        self._install_diff_and_wrap()
        self._install_locals_format()
        self._install_assertion_reprs()

        # pytest 9 cuts the explanation as it streams it; pytest 8 cut the list. Only the
        # line cut in the middle is masked before the cut (a line kept whole is masked
        # where the report is, and what the test's exception holds stays as it was)
        streaming = getattr(truncate, "materialize_with_truncation", None)
        if streaming is not None:

            def masked_materialize(lines: Iterable[str], config: Any) -> list[str]:
                pulled: list[str] = []
                shown: list[str] = streaming(_recorded(lines, pulled), config)
                return _masked_lines(
                    _cut_line_masked(shown, pulled, mask, truncate.TRUNCATION_MSG), mask
                )

            self._patch(truncate, "materialize_with_truncation", masked_materialize)
        listed = getattr(truncate, "truncate_if_required", None)
        if listed is not None:

            def masked_truncate(explanation: list[str], *args: Any, **kwargs: Any) -> Any:
                shown = listed(explanation, *args, **kwargs)
                return _masked_lines(
                    _cut_line_masked(shown, explanation, mask, truncate.TRUNCATION_MSG), mask
                )

            self._patch(truncate, "truncate_if_required", masked_truncate)

    def _install_diff_and_wrap(self) -> None:
        """Two more cuts: a failed comparison of two texts skips their identical head and
        tail but for 10 characters of context (``assert a not in b`` shows the same cut
        text), and a long ``bytes`` in a ``-v`` diff is wrapped 4 bytes at a time. Both
        texts of a comparison are masked before the diff is made (the same form, the
        same label on both sides); bytes whose ``repr`` holds a form are shown on one
        line, masked."""
        mask = self._mask
        try:
            from _pytest._io import pprint
            from _pytest.assertion import compare_text
        except ImportError:  # (a pytest without them: nothing of theirs to cut)
            return
        diff_text = getattr(compare_text, "_diff_text", None)
        if diff_text is not None:

            def masked_diff_text(
                left: Any, right: Any, highlighter: Any, verbose: int = 0, *args: Any, **kw: Any
            ) -> Any:
                if isinstance(left, str) and isinstance(right, str):
                    masked_left, masked_right = mask(left), mask(right)
                    if masked_left != masked_right or left == right:
                        left, right = masked_left, masked_right
                    else:
                        # (what differs is inside what a mask swallows: both sides would
                        # show one label and no difference. The texts as they are, never
                        # cut at an identical head or tail; each line is masked whole
                        # where the report is.)
                        verbose = max(verbose, 1)
                return diff_text(left, right, highlighter, verbose, *args, **kw)

            self._patch(compare_text, "_diff_text", masked_diff_text)
        wrap_bytes = getattr(pprint, "_wrap_bytes_repr", None)
        if wrap_bytes is not None:

            def masked_wrap_bytes(data: Any, width: int, allowance: int) -> Iterator[str]:
                whole = builtins.repr(bytes(data))
                masked = mask(_ends(whole))
                if masked == _ends(whole):
                    yield from wrap_bytes(data, width, allowance)
                else:
                    yield masked

            self._patch(pprint, "_wrap_bytes_repr", masked_wrap_bytes)

    def _install_locals_format(self) -> None:
        """``-l`` under ``-vv`` shows each local with the standard library's ``pprint``,
        which wraps a long ``bytes`` or ``str`` over lines (``b'...' b'...'``): a form cut
        there (a token's UTF-16 bytes at an odd offset) left a line of its characters that
        no window matched. A local whose one-line ``repr`` holds a form is shown on one
        line, masked."""
        mask = self._mask
        try:
            from _pytest._code import code
            from _pytest._io import saferepr
        except ImportError:
            return
        for owner in (saferepr, code):
            formatted = getattr(owner, "safeformat", None)
            if formatted is None:
                continue

            def masked_safeformat(obj: object, formatted: Any = formatted) -> str:
                shown: str = formatted(obj)
                try:
                    whole = builtins.repr(obj)
                except Exception:  # noqa: BLE001 - pytest's own text says how it failed
                    return shown
                masked = mask(_ends(whole))
                return shown if masked == _ends(whole) else masked

            self._patch(owner, "safeformat", masked_safeformat)

    def _install_assertion_reprs(self) -> None:
        """A rewritten assertion with no comparison explanation (``assert "x" in text``,
        ``assert token < ""``, ``assert token.startswith(...)``: ``where ... = '<token>'``)
        shows each operand and intermediate value as pytest's rewrite module spells it,
        and a custom message as given: masked here, as a comparison's explanation is, so
        that a test's own failed assertion holds no secret (it was a leak verdict: found
        by a hunting helper)."""
        mask = self._mask
        try:
            from _pytest.assertion import rewrite
        except ImportError:
            return
        for name in ("_saferepr", "_format_assertmsg"):
            spelled = getattr(rewrite, name, None)
            if spelled is None:
                continue

            def masked(obj: object, spelled: Any = spelled) -> str:
                shown: str = spelled(obj)
                return mask(shown)

            self._patch(rewrite, name, masked)

    def _patch(self, owner: Any, name: str, replacement: Any) -> None:
        self._saved.append((owner, name, getattr(owner, name), name in vars(owner)))
        setattr(owner, name, replacement)

    def restore(self) -> None:
        while self._saved:
            owner, name, original, own = self._saved.pop()
            if own:
                setattr(owner, name, original)
            else:  # (inherited: the subclass had none of its own)
                delattr(owner, name)


#: A ``%``-style format whose message has a precision (``%(message).60s``), and the same
#: in a ``{``-style one (``{message:.60}``): the formatter cuts the message there.
_PERCENT_CUT = re.compile(r"%\((?:message|msg|args)\)[#0 +\-]*(?:\d+|\*)?\.")
_BRACE_CUT = re.compile(r"\{(?:message|msg|args)(?:![rsa])?:[^}]*\.")


def cuts_message(formatter: logging.Formatter) -> bool:
    """Whether ``formatter``'s format cuts the record's message (a precision on it)."""
    style = getattr(formatter, "_style", None)
    fmt = getattr(style, "_fmt", None) or getattr(formatter, "_fmt", None) or ""
    if isinstance(style, logging.StrFormatStyle):
        return bool(_BRACE_CUT.search(fmt))
    if isinstance(style, logging.StringTemplateStyle):
        return False  # (no precision in a ``$`` template)
    return bool(_PERCENT_CUT.search(fmt))


def _recorded(lines: Iterable[str], pulled: list[str]) -> Iterator[str]:
    for line in lines:
        pulled.append(line)
        yield line


def _masked_lines(lines: list[str], mask: Callable[[str], str]) -> list[str]:
    """A comparison's explanation, masked whole: its summary (``'<token>' == 'x'``, each
    operand's ``repr`` cut only when long, never under ``-vv``) and the items a set or a
    dict comparison names showed the test's own secret, and the test's own failed
    assertion was a leak verdict, at some verbosities and not others (found by a hunting
    helper). The AssertionError it makes holds no secret then, as README says."""
    if not lines:
        return lines
    joined = "\n".join(lines)
    masked = mask(joined)
    return lines if masked == joined else masked.split("\n")


def _cut_line_masked(
    shown: list[str], full: list[str], mask: Callable[[str], str], notice: str
) -> list[str]:
    """``shown`` (pytest's cut of the explanation ``full``) with the line it cut in the
    middle cut from that line masked: ``..."`` and the notice follow the last line kept."""
    if len(shown) < 3 or shown[-1] != notice:
        return shown
    at = len(shown) - 3
    cut = shown[at]
    if at >= len(full) or not cut.endswith(_FILL):
        return shown
    whole = full[at]
    kept = len(cut) - len(_FILL)
    if kept >= len(whole):  # (not cut inside: the lines after it were dropped)
        return shown
    masked = mask(whole)
    if masked == whole:
        return shown
    return [*shown[:at], masked[:kept] + _FILL, *shown[at + 1 :]]
