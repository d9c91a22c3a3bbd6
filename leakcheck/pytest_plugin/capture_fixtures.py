"""pytest's capture fixtures (``capsys``, ``capfd`` and their binary twins) take a test's
output away from the report sections the verdict reads: tapped while the test runs.

* ``readouterr()``: what the test reads back is handed to the stdout/stderr sinks.
* ``disabled()``: pytest's capture is off inside it, and what is printed goes straight to
  the terminal. A gateway that printed its token there passed green, with the token on
  the terminal. Inside it, ``sys.stdout`` and ``sys.stderr`` are tees: each line reaches
  the terminal masked and the sinks as written. Writes past them (to file descriptors 1
  and 2: subprocesses, C code; to ``sys.stdout.buffer``) are said as not inspected.

Where pytest itself lets a test's output reach the terminal (``-s``, the echo of
``--capture=tee-sys``), ``TerminalEcho`` masks it the same way, for the whole session.
"""

from __future__ import annotations

import contextlib
import io
import logging
import sys
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TextIO

import pytest

if TYPE_CHECKING:  # pragma: no cover
    from ..capture import TextSink
    from ..harness import LeakCheck

__all__ = [
    "CAPTURE_FIXTURES",
    "ECHOED_PATH",
    "MaskedEcho",
    "MaskingTee",
    "TerminalEcho",
    "tap",
    "untap",
]

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


def _run_start(text: str) -> int:
    """Where the run of credential characters that ends ``text`` starts."""
    from ..findings import credential_run_start

    return credential_run_start(text)


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
        """Show what is pending (a prompt without its newline), but for a run of
        credential characters at its end: it may go on in the next write (a progress line
        flushed in the middle of a token's hex showed a piece that no needle matches,
        masked alone), and is shown with what follows it, or when the test ends."""
        self._flush(whole=False)

    def flush_all(self) -> None:
        """Show everything pending (the test ended, the streams are given back)."""
        self._flush(whole=True)

    def _flush(self, *, whole: bool) -> None:
        with self._lock:
            if self._pending:
                pending = self._pending
                cut = len(pending) if whole else _run_start(pending)
                shown, self._pending = pending[:cut], pending[cut:]
                if shown:
                    self.stream.write(self._mask(shown))
        self.stream.flush()

    def start_recording(self) -> None:
        """Keep what is written from now on (what is pending is written out first)."""
        self._flush(whole=True)
        with self._lock:
            self._written = []

    def stop_recording(self) -> str:
        """Write out what is pending; what was written since ``start_recording``."""
        self.flush_all()
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


#: the capture notes once ``TerminalEcho`` masks what reaches the terminal
ECHO_NOTES = {
    "no": "-s/--capture=no (or -p no:capture): a test's stdout and stderr reach the terminal "
    "masked, a line at a time, and are scanned; writes to file descriptors 1 and 2 "
    "(subprocesses, C code, os.write, sys.__stdout__) are neither scanned nor masked",
    "tee-sys": "--capture=tee-sys: stdout and stderr are scanned and echoed to the terminal "
    "masked, a line at a time; writes to file descriptors 1 and 2 (subprocesses, C code, "
    "os.write, sys.__stdout__) are neither scanned nor masked",
}
#: where a test's writes under -s are said to be (what they leave unseen, the writes to
#: file descriptors 1 and 2, is said once, in the capture note, as for --capture=sys)
ECHOED_PATH = "printed with pytest -s"


class TerminalEcho:
    """What pytest lets reach the terminal of a test's ``sys.stdout`` and ``sys.stderr``,
    masked a line at a time (``MaskedEcho``): under ``-s`` the streams themselves, the
    log handlers made before (a conftest's ``logging.basicConfig``) and the sink plugins'
    writers (``POINT_STREAMS``: loguru's default handler); under ``--capture=tee-sys``
    the stream pytest's tee echoes to. Under ``-s`` nothing else sees what a test writes:
    it is recorded for the test's stdout and stderr sinks. ``restore`` gives everything
    back. pytest's internals this reads (the tee's) missing in another version: not
    installed, and the capture note says the echo is unmasked, as before."""

    def __init__(self, capture: str, mask: Callable[[str], str]) -> None:
        self.note = ECHO_NOTES.get(capture, "")
        self._mask = mask
        #: under ``-s``: the echoes of ``sys.stdout`` and ``sys.stderr``
        self.echoes: tuple[MaskedEcho, MaskedEcho] | None = None
        self._undo: list[Callable[[], None]] = []
        #: the terminal's streams by id -> their echoes, until the sink plugins' writers
        #: are pointed at them (``start_recording``)
        self._for_plugins: dict[int, MaskedEcho] = {}

    @classmethod
    def install(
        cls, config: pytest.Config, capture: str, mask: Callable[[str], str]
    ) -> TerminalEcho | None:
        """The echo for pytest's ``capture`` mode, in place; None where nothing reaches
        the terminal unmasked (or where pytest's internals are not those expected)."""
        echo = cls(capture, mask)
        if capture == "no" and echo._install_streams():
            return echo
        if capture == "tee-sys" and echo._install_tee(config):
            return echo
        return None

    def _install_streams(self) -> bool:
        shown = sys.stdout, sys.stderr
        if not all(callable(getattr(stream, "write", None)) for stream in shown):
            return False  # (closed, or replaced by something that is no stream)
        echoes = MaskedEcho(shown[0], self._mask), MaskedEcho(shown[1], self._mask)
        sys.stdout, sys.stderr = echoes
        self.echoes = echoes
        # log handlers made before now hold the terminal's streams themselves
        pointed = [
            (handler, echo)
            for handler in _stream_handlers()
            for stream, echo in zip(shown, echoes, strict=True)
            if handler.stream is stream
        ]
        for handler, echo in pointed:
            handler.setStream(echo)
        # and the sink plugins' libraries' writers, when the first test asks for the
        # fixture (the plugins are loaded then: a session that never asks imports none)
        self._for_plugins = {id(stream): echo for stream, echo in zip(shown, echoes, strict=True)}

        def undo() -> None:
            for echo in echoes:
                echo.flush_all()
            if sys.stdout is echoes[0]:
                sys.stdout = shown[0]
            if sys.stderr is echoes[1]:
                sys.stderr = shown[1]
            for handler, echo in pointed:
                if handler.stream is echo:
                    handler.setStream(echo.stream)

        self._undo.append(undo)
        return True

    def _install_tee(self, config: pytest.Config) -> bool:
        manager = config.pluginmanager.get_plugin("capturemanager")
        multi = getattr(manager, "_global_capturing", None)
        tees = [getattr(getattr(multi, name, None), "tmpfile", None) for name in ("out", "err")]
        if not all(hasattr(tee, "_other") for tee in tees):
            return False
        for tee in tees:
            echoed = tee._other  # type: ignore[union-attr]  # checked above
            tee._other = MaskedEcho(echoed, self._mask)  # type: ignore[union-attr]

            def undo(tee: Any = tee, echoed: Any = echoed) -> None:
                tee._other.flush_all()
                tee._other = echoed

            self._undo.append(undo)
        return True

    def start_recording(self) -> None:
        """Under ``-s``: record what a test writes from now on (``hand_over``); the first
        time, point the sink plugins' writers at the echoes (``POINT_STREAMS``)."""
        if self.echoes is None:
            return
        if self._for_plugins:
            from ..extensions import load_plugins

            by_id, self._for_plugins = self._for_plugins, {}
            for module in load_plugins():
                point = getattr(module, "POINT_STREAMS", None)
                if callable(point):
                    self._undo.append(point(by_id))
        for echo in self.echoes:
            echo.start_recording()

    def hand_over(self, check: LeakCheck | None) -> None:
        """Under ``-s``: stop recording, and hand what was written since
        ``start_recording`` to ``check``'s stdout and stderr sinks (None: dropped; it was
        shown masked)."""
        if self.echoes is None:
            return
        for echo, sink in zip(self.echoes, ("stdout", "stderr"), strict=True):
            written = echo.stop_recording()
            if check is not None and written:
                getattr(check, sink).add(ECHOED_PATH, written)

    def pause(self, paused: bool) -> None:
        """Keep nothing while ``paused`` (a debugger's session is the developer's)."""
        for echo in self.echoes or ():
            echo.flush_all()
            echo.paused = paused

    def restore(self) -> None:
        """Give pytest's streams and every writer pointed at an echo back (what is pending
        written out, masked)."""
        while self._undo:
            self._undo.pop()()


class _SuspendedEcho(MaskedEcho):
    """A ``MaskedEcho`` that masks only while pytest's capture is suspended. While it
    captures, a write here (through a stream kept from a suspended moment: a log handler
    that a conftest's ``pytest_sessionstart`` made) reaches the terminal's stream, which the
    capture of file descriptors 1 and 2 takes: as written, to be judged, never masked
    before the verdict reads it."""

    def __init__(self, stream: TextIO, mask: Callable[[str], str], suspended: Callable[[], bool]):
        super().__init__(stream, mask)
        self._suspended = suspended

    def write(self, text: str) -> int:
        if self._suspended():
            return super().write(text)
        self.flush_all()  # (a line begun while suspended: masked)
        return self.stream.write(text)

    def flush(self) -> None:
        if self._suspended():
            super().flush()
        else:
            self.flush_all()


class SuspendedStreams:
    """``sys.stdout`` and ``sys.stderr`` while pytest's capture is suspended (it writes a
    test's report line, the summary, between a session's last test and its end), masked a
    line at a time (``MaskedEcho``): pytest gives the terminal's streams back then, and a
    thread that outlived the tests (a token refresher) printed to them as it wrote, in the
    middle of the summary, and, under xdist, from a worker to the controller's terminal.
    pytest's capture keeps the streams it gives back (``SysCapture._old``, an ``FDCapture``'s
    ``syscapture``): each is replaced by its echo. pytest's internals missing in another
    version, or no capture (``-s``: ``TerminalEcho``): not installed."""

    def __init__(self) -> None:
        #: (the capture that gives the stream back, the stream, its echo)
        self._swapped: list[tuple[Any, TextIO, MaskedEcho]] = []

    @classmethod
    def install(cls, config: pytest.Config, mask: Callable[[str], str]) -> SuspendedStreams:
        streams = cls()
        manager = config.pluginmanager.get_plugin("capturemanager")
        multi = getattr(manager, "_global_capturing", None)
        for part in ("out", "err"):
            capture = getattr(multi, part, None)
            capture = getattr(capture, "syscapture", capture)  # (fd capture holds one)
            name, old = getattr(capture, "name", None), getattr(capture, "_old", None)
            if name not in ("stdout", "stderr") or old is None or not callable(old.write):
                continue
            echo = _SuspendedEcho(old, mask, lambda: getattr(multi, "_state", "") != "started")
            capture._old = echo  # type: ignore[union-attr]  # (checked above)
            if getattr(sys, name) is old:  # (suspended now: given back already)
                setattr(sys, name, echo)
            streams._swapped.append((capture, old, echo))
        for part in ("out", "err"):
            _mask_written_back(getattr(multi, part, None), mask)
        return streams

    def restore(self) -> None:
        """The streams back where pytest keeps them, and in ``sys`` where an echo is (what
        is pending written out, masked)."""
        while self._swapped:
            capture, old, echo = self._swapped.pop()
            echo.flush_all()
            if getattr(capture, "_old", None) is echo:
                capture._old = old
            if getattr(sys, capture.name, None) is echo:
                setattr(sys, capture.name, old)


def _mask_written_back(capture: Any, mask: Callable[[str], str]) -> None:
    """``capture``'s ``writeorg`` masked: what the global capture still holds when pytest
    stops it is written to the terminal's file descriptor as it is, after every plugin's
    ``pytest_unconfigure`` (a config cleanup). A log handler made at a conftest's import
    writes to the capture, and a record it logged after the last test (a client revoking
    its token in ``pytest_sessionfinish``, a refresher thread) came out raw (found by a
    hunting helper). Left in place: the capture is this session's own object, dropped
    when pytest stops it."""
    write = getattr(capture, "writeorg", None)
    if not callable(write):
        return

    def masked(data: str | bytes) -> None:
        if isinstance(data, bytes):
            text = data.decode("utf-8", "surrogateescape")
            write(mask(text).encode("utf-8", "surrogateescape"))
        else:
            write(mask(data))

    capture.writeorg = masked


def _stream_handlers() -> list[logging.StreamHandler[Any]]:
    """Every ``logging.StreamHandler`` that exists (``logging._handlerList``, the weak
    references logging keeps for its shutdown; else those of the loggers)."""
    refs = getattr(logging, "_handlerList", None)
    if isinstance(refs, list):
        handlers = [ref() for ref in refs if callable(ref)]
    else:  # (a logging without that list: the loggers' own handlers)
        loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
        handlers = [h for lg in loggers if isinstance(lg, logging.Logger) for h in lg.handlers]
    return [h for h in handlers if isinstance(h, logging.StreamHandler)]
