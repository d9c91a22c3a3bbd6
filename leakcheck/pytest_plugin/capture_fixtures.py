"""pytest's capture fixtures (``capsys``, ``capfd`` and their binary twins) take a test's
output away from the report sections the verdict reads: tapped while the test runs.

* ``readouterr()``: what the test reads back is handed to the stdout/stderr sinks.
* ``disabled()``: pytest's capture is off inside it, and what is printed goes straight to
  the terminal. A gateway that printed its token there passed green, with the token on
  the terminal. Inside it, ``sys.stdout`` and ``sys.stderr`` are tees: each line reaches
  the terminal masked and the sinks as written. Writes past them (to file descriptors 1
  and 2: subprocesses, C code; to ``sys.stdout.buffer``) are said as not inspected.
"""

from __future__ import annotations

import contextlib
import io
import sys
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:  # pragma: no cover
    from ..capture import TextSink
    from ..harness import LeakCheck

__all__ = ["CAPTURE_FIXTURES", "tap", "untap"]

#: pytest's fixtures that take a test's output away from the report sections
#: (``capteesys``, pytest 8.4 on: what it tees reaches the report sections too, and its
#: ``disabled()`` printed a token raw)
CAPTURE_FIXTURES = ("capsys", "capsysbinary", "capfd", "capfdbinary", "capteesys")
#: what ``disabled()`` leaves unseen, as the summary's "could not inspect" says it
UNSEEN_WHEN_DISABLED = (
    "writes past sys.stdout and sys.stderr inside it (file descriptors 1 and 2: "
    "subprocesses, C code; sys.stdout.buffer) went to the terminal, neither scanned nor masked"
)


def tap(fixture: Any, name: str, check: LeakCheck, mask: Callable[[str], str]) -> None:
    """Tap ``fixture`` (a capture fixture the test asked for as ``name``) for ``check``;
    ``untap`` gives it its class's own methods again."""
    fixture.readouterr = _tapped_readouterr(fixture.readouterr, name, check)
    fixture.disabled = _tapped_disabled(fixture.disabled, name, check, mask)


def untap(fixture: Any) -> None:
    del fixture.readouterr
    del fixture.disabled


def _tapped_readouterr(readouterr: Any, name: str, check: LeakCheck) -> Any:
    def tapped() -> Any:
        result = readouterr()
        for sink, text in ((check.stdout, result.out), (check.stderr, result.err)):
            if isinstance(text, bytes):
                text = text.decode("utf-8", "replace")
            if text:
                sink.add(f"read by {name}", text)
        return result

    return tapped


def _tapped_disabled(
    disabled: Callable[[], contextlib.AbstractContextManager[None]],
    name: str,
    check: LeakCheck,
    mask: Callable[[str], str],
) -> Callable[[], contextlib.AbstractContextManager[None]]:
    @contextlib.contextmanager
    def tapped() -> Iterator[None]:
        path = f"printed under {name}.disabled()"
        with disabled():
            shown = sys.stdout, sys.stderr
            tees = (
                MaskingTee(shown[0], check.stdout, path, mask),
                MaskingTee(shown[1], check.stderr, path, mask),
            )
            sys.stdout, sys.stderr = tees
            try:
                yield
            finally:
                sys.stdout, sys.stderr = shown
                for tee in tees:
                    tee.hand_over()
                check.stdout.add_uninspected(f"{name}.disabled()", UNSEEN_WHEN_DISABLED)

    return tapped


class MaskedEcho(io.TextIOBase):
    """A text stream that writes to ``stream`` masked, a line at a time (a secret written
    in pieces is masked whole; a line without its newline when flushed), and, while
    ``recording``, keeps what is written, as written, for ``stop_recording``. Anything
    else is the stream's (``fileno``, ``buffer``...). Thread-safe: a test's threads print
    too."""

    def __init__(self, stream: TextIO, mask: Callable[[str], str]) -> None:
        super().__init__()
        self.stream = stream
        self._mask = mask
        self._pending = ""
        self._written: list[str] | None = None
        #: while set, what is written is not kept (a debugger's session: its output is
        #: the developer's, not the test's)
        self.paused = False
        self._lock = threading.Lock()

    def writable(self) -> bool:
        return True

    # (``io.TextIOBase`` answers these itself, ``encoding`` None, ``fileno`` raising: the
    # stream's own answers, or code that asks, a subprocess given ``sys.stdout`` or a
    # terminal check, would behave otherwise under the plugin)
    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self.stream.encoding

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return self.stream.errors

    @property
    def newlines(self) -> Any:  # type: ignore[override]
        return self.stream.newlines

    def fileno(self) -> int:
        return self.stream.fileno()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def write(self, text: str) -> int:
        if self.closed:
            raise ValueError("I/O operation on closed file.")
        with self._lock:
            if self._written is not None and not self.paused:
                self._written.append(text)
            self._pending += text
            if "\n" in text:
                lines, _, self._pending = self._pending.rpartition("\n")
                self.stream.write(self._mask(lines + "\n"))
        return len(text)

    def flush(self) -> None:
        with self._lock:
            if self._pending:  # (a prompt without its newline: shown when flushed)
                pending, self._pending = self._pending, ""
                self.stream.write(self._mask(pending))
        self.stream.flush()

    def start_recording(self) -> None:
        """Keep what is written from now on (what is pending is written out first)."""
        self.flush()
        with self._lock:
            self._written = []

    def stop_recording(self) -> str:
        """Write out what is pending; what was written since ``start_recording``."""
        self.flush()
        with self._lock:
            written, self._written = self._written or [], None
        return "".join(written)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


class MaskingTee(MaskedEcho):
    """A ``MaskedEcho`` of ``stream`` that hands everything written to ``sink`` at
    ``hand_over``. It stays open after, writing straight through: something made inside
    the block may keep it (a log handler given ``sys.stdout``), and what it writes then
    goes where it would without the plugin (pytest's capture, once the block has ended:
    judged and masked there)."""

    def __init__(
        self, stream: TextIO, sink: TextSink, path: str, mask: Callable[[str], str]
    ) -> None:
        super().__init__(stream, mask)
        self._sink: TextSink | None = sink
        self._path = path
        self.start_recording()

    def write(self, text: str) -> int:
        if self._sink is None:  # (after the hand-over: straight through)
            if self.closed:
                raise ValueError("I/O operation on closed file.")
            return self.stream.write(text)
        return super().write(text)

    def hand_over(self) -> None:
        """Write out what is pending, masked, and hand what was written to the sink."""
        written = self.stop_recording()
        if self._sink is not None and written:
            self._sink.add(self._path, written)
        self._sink = None
