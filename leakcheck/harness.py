"""``LeakCheck``: plant canaries, capture every sink, judge. Works with or without pytest.

with LeakCheck(seed=1) as lc:
    token = lc.secret("bearer")
    result = gateway(token).call("create_deployment", {"repo": "web"})
    lc.expose(result)
lc.check()                    # raises LeakError with masked evidence on a forbidden hit
"""

from __future__ import annotations

import _thread
import contextlib
import itertools
import sys
import weakref
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from .canaries import CanaryFactory, Secret, announce, check_kind_name
from .capture import (
    Captured,
    ExceptionSink,
    ExposedSink,
    Sink,
    TextSink,
    WarningsSink,
    builtin_sinks,
    plugin_sink_factories,
    resolve_latent,
)
from .detect import Scanner, check_scanner_arguments
from .engine import available_backends
from .errors import ExposeNameError, NotASecretError, with_article
from .extensions import masking_forms, waiting_plugins
from .faults import Fault, StageNotReached, make_fault
from .forms import text_spellings
from .placements import Placed, Placement, place
from .policy import DEFAULT_POLICY, Policy, SinkClass
from .records import CaseResult
from .stages import Stage
from .verdict import Leak, format_leaks, judge, leaks_header

__all__ = ["LeakCheck", "LeakError"]

T = TypeVar("T")

#: Captured texts are small: an automaton that builds in well under a millisecond beats
#: hyperscan, whose compile takes ~20 ms per test for a few hundred needles.
SMALL_INPUT_BACKEND = "ahocorasick" if "ahocorasick" in available_backends() else "auto"


#: Numbers each check, once for the process (an ``id()`` is reused once a check is gone).
_SERIALS = itertools.count(1)


def _check_expose_name(name: object, secrets: Iterable[Secret]) -> None:
    """Refuse a ``name`` for ``expose`` that is not a ``str``, or that holds a secret known
    so far, as it is or as JSON or ``repr`` spell it (``forms.text_spellings``):
    ``expose("tool response", result)`` judged the label and never the result, and the
    test passed. Described by its type and length and the secret's id, never quoted."""
    if not isinstance(name, str):
        given = type(name).__name__
    else:
        held = [
            secret.id
            for secret in secrets
            if any(spelled in name for spelled in text_spellings(secret.value))
        ]
        if not held:
            return
        given = f"str of {len(name)} characters holding {', '.join(held)}"
    raise ExposeNameError(
        f"expose(obj, name): name labels where obj goes ('tool response', 'error "
        f"envelope'); it was given {with_article(given)}: was the object passed as the "
        "name? The object comes first: expose(obj, name=...)"
    )


class LeakError(AssertionError):
    """A forbidden hit. The message carries masked evidence only."""

    leakcheck_verdict = True  # ours, not the gateway's: never scanned as caller output


#: The checks started and not stopped, in the order they started, each with the thread
#: that started it (``LeakCheck.stop``).
_RUNNING: list[tuple[LeakCheck, int]] = []
_RUNNING_LOCK = _thread.allocate_lock()


class LeakCheck:
    """One test's canaries, sinks and verdict.

    ``skip_sinks`` maps a sink name to the reason it is opted out (listed in reports).
    ``announce``: tell each canary made and each secret registered to
    ``canaries.watch_secrets``' watchers (in a pytest session, the plugin masks it in all
    that pytest prints: a check made by a test itself, an MCP audit run in a test); the
    plugin's fixture makes its check with False (the session masker takes a fixture's
    secrets from it, by class, at its verdict).
    """

    def __init__(
        self,
        *,
        seed: int | str | None = None,
        namespace: str = "",
        policy: Policy = DEFAULT_POLICY,
        decode: bool = True,
        skip_sinks: dict[str, str] | None = None,
        sinks: Iterable[Sink] | None = None,
        backend: str = SMALL_INPUT_BACKEND,
        announce: bool = True,
    ) -> None:
        self.canaries = CanaryFactory(seed, namespace=namespace, announce=announce)
        #: this check's number in the process, never another's
        self.serial = next(_SERIALS)
        self.policy = policy
        self.decode = decode
        check_scanner_arguments((), backend)  # (an unknown engine: said now, not at the end)
        self.backend = backend
        self.skip_sinks = dict(skip_sinks or {})
        self._secrets: list[Secret] = []
        self._session_secrets = 0  # how many of them ``register_secret`` added
        self._scanner: Scanner | None = None
        self._masker: Scanner | None = None
        #: tells, without a scanner, that a text holds none of the given secrets (True) or
        #: cannot tell (False): the pytest plugin's session index, once it holds this
        #: check's secrets (``SessionMasker.proves_absent``)
        self.absence_proof: Callable[[list[Secret], bytes], bool] | None = None
        self._exposed = ExposedSink()
        self._exceptions = ExceptionSink()
        self.stdout = TextSink("stdout", SinkClass.CALLER)
        self.stderr = TextSink("stderr", SinkClass.OPERATOR)
        # a weak method: the sink holding the check's own bound method made each check a
        # reference cycle, freed only by the garbage collector (whose full collections
        # walk the whole of pytest's heap)
        self.warnings = WarningsSink(_WeakMask(self))
        #: bundled sink plugins whose library nothing had imported when the check began
        self._waiting: dict[str, str] = {}
        if sinks is None:
            sinks = [*builtin_sinks(), *(f() for f in plugin_sink_factories().values())]
            self._waiting = waiting_plugins()
        every: list[Sink] = [
            self._exposed,
            self._exceptions,
            self.stdout,
            self.stderr,
            self.warnings,
            *sinks,
        ]
        self.sinks: list[Sink] = [s for s in every if s.name not in self.skip_sinks]
        self._started: list[Sink] = []
        self.faults: list[Fault] = []
        #: what a target knows of why a stage was not reached (an MCP tool that answered an
        #: error before any request), added to the harness errors
        self.harness_hints: list[str] = []
        self._armed: list[Fault] = []
        #: set by a stage-matrix case: what it was and which assertions failed
        self.matrix: CaseResult | None = None
        #: set by a baseline matrix case: its error-text snapshot entry (masked)
        self.snapshot: dict[str, Any] | None = None

    @property
    def seed(self) -> int | str:
        return self.canaries.seed

    # --- secrets ---------------------------------------------------------------------------

    def secret(self, kind: str = "bearer") -> str:
        """A fresh hostile canary of ``kind``, registered for this check."""
        return self._add(self.canaries.secret(kind)).value

    def register(self, value: str, kind: str = "secret", *, id: str | None = None) -> str:
        """Search for a user-supplied secret too (rejected, without echo, if too weak).
        ``kind`` is a name ("github_token"), printed wherever the secret is reported: one
        without a name's shape is refused, unprinted (``canaries.check_kind_name``)."""
        check_kind_name(kind, "register(value, kind=...)")
        # numbered among the test's own secrets: the session's do not shift the ids
        secret_id = id or f"{kind}#user{len(self._secrets) - self._session_secrets + 1}"
        self._add(Secret.from_user(value, kind=kind, id=secret_id))
        if self.canaries.announce:
            announce(self._secrets[-1])
        return value

    def text_sink(self, name: str, sink_class: SinkClass) -> TextSink:
        """The check's ``TextSink`` named ``name``, added (of ``sink_class``) the first time
        it is asked for: where an integration hands over texts it read itself (what a test
        set in pytest's cache, what an MCP case could not read)."""
        for sink in self.sinks:
            if isinstance(sink, TextSink) and sink.name == name:
                return sink
        sink = TextSink(name, sink_class)
        self.sinks.append(sink)
        return sink

    def register_secret(self, secret: Secret) -> Secret:
        """Search for (and mask) a ``Secret`` made elsewhere: a session-wide one."""
        if not isinstance(secret, Secret):
            # (a str here reached the verdict and the masker as a secret: INTERNALERROR)
            raise NotASecretError(
                f"register_secret takes a leakcheck Secret (Secret.from_user(...), a "
                f"CanaryFactory's), not {type(secret).__name__}; for a value, "
                f"register(value, kind=...)"
            )
        self._session_secrets += 1
        if self.canaries.announce:
            announce(secret)
        return self._add(secret)

    def _add(self, secret: Secret) -> Secret:
        self._secrets.append(secret)
        self._scanner = self._masker = None
        return secret

    @property
    def secrets(self) -> list[Secret]:
        return list(self._secrets)

    @property
    def secret_count(self) -> int:
        """How many secrets this check searches for (and masks) so far."""
        return len(self._secrets)

    @property
    def scanner(self) -> Scanner:
        if self._scanner is None:
            if self.decode:  # one scanner both detects and masks (its windows mask only)
                self._scanner = self._masker = self._build_masker()
            else:
                self._scanner = Scanner(self._secrets, decode=False, backend=self.backend)
        return self._scanner

    def _build_masker(self) -> Scanner:
        # (the codec plugins' forms too: a masking scanner also detects)
        return Scanner(self._secrets, decode=True, forms=masking_forms(), backend=self.backend)

    def built_masker(self) -> Scanner | None:
        """The masking scanner over this check's secrets, if one was built already."""
        return self._masker

    def mask(self, text: str) -> str:
        """``text`` with every form and every short piece of every secret masked."""
        if not self._secrets:
            return text
        proof = self.absence_proof
        if (
            self._masker is None
            and proof is not None
            and proof(self._secrets, str.encode(text, "utf-8", "surrogatepass"))
        ):
            return text
        if self._masker is None:
            self._masker = self._build_masker()
            if self.decode:
                self._scanner = self._masker
        return self._masker.mask(text)

    # --- placements and faults -------------------------------------------------------------

    def place(self, placement: str | Placement) -> Placed:
        """Render a hostile placement with fresh canaries (registered for this check)."""
        return place(placement, self.secret)

    def force(
        self,
        stage: str | Stage,
        *,
        via: str | None = None,
        placement: str | Placement | Placed | None = None,
        **options: Any,
    ) -> Fault:
        """Arm a fault that forces ``stage`` over transport ``via`` ("respx", "responses",
        "loopback", "ssh"; None for a gateway-side stage). It is disarmed when the check
        stops, and a fault that never fired fails the check as a harness error."""
        placed = self.place(placement) if isinstance(placement, str | Placement) else placement
        fault = make_fault(stage, via=via, placed=placed, secret=self.secret, **options)
        # what the fault itself hands the gateway that is no canary of a kind (the private
        # key of an ssh identity file): searched and masked as the test's own secrets (it
        # was neither, and -rA printed it: found by a hunting helper)
        for planted in getattr(fault, "planted_secrets", lambda: ())():
            if planted.value not in {secret.value for secret in self._secrets}:
                self.register_secret(planted)
        fault.start()
        self.faults.append(fault)
        self._armed.append(fault)
        return fault

    def unreached(self) -> list[Fault]:
        """Faults that never fired: each one is a harness error."""
        return [fault for fault in self.faults if not fault.fired]

    def harness_errors(self) -> str:
        """One line per forced stage that was never reached ("" when all fired)."""
        lines = []
        for fault in self.unreached():
            try:
                fault.assert_fired()
            except StageNotReached as exc:
                lines.append(str(exc))
        if lines:
            lines += self.harness_hints
        return self.mask("\n".join(lines))

    # --- what the agent sees -----------------------------------------------------------------

    def expose(self, obj: T, name: str = "tool response") -> T:
        """Mark ``obj`` as caller-visible (the tool response an agent receives). ``name``
        labels it in reports; a name that is no label (``_check_expose_name``) is refused:
        most often the object itself, passed second."""
        if name != "tool response":
            _check_expose_name(name, self._secrets)
        self._exposed.add(obj, name)
        return obj

    def caller_output_judged(self) -> bool:
        """Whether anything caller-visible is here to judge: an object exposed, an
        exception that reached the test, text on stdout."""
        return bool(
            self._exposed.exposed
            or self._exceptions.caught
            or any(text for _, text in self.stdout.texts)
        )

    def exception_reached_caller(self, exc: BaseException) -> None:
        self._exceptions.add(exc)

    # --- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        """Start every sink; if one fails, stop those already started and re-raise."""
        with _RUNNING_LOCK:
            if all(check is not self for check, _ in _RUNNING):
                _RUNNING.append((self, _thread.get_ident()))
        for sink in self.sinks:
            if sink not in self._started:
                try:
                    sink.start()
                except BaseException:
                    with contextlib.suppress(Exception):
                        self.stop()
                    raise
                self._started.append(sink)

    def stop(self) -> None:
        """Restore every global, in reverse order, even if one sink fails to. A check
        started after this one and still running is stopped first: each sink puts back
        the hook it found, so stopped out of order (``a.start(); b.start(); a.stop();
        b.stop()``) the later check put back the earlier one's hooks for good, and a
        stopped check went on capturing every DEBUG record (found by a hunting helper).

        Only the checks started by the thread that started this one: another thread's
        check is its own test's, still running (a runner of tests in threads), and stopping
        it under that test let what the test did next go unjudged."""
        with _RUNNING_LOCK:
            at = next((i for i, (check, _) in enumerate(_RUNNING) if check is self), None)
            later: list[LeakCheck] = []
            if at is not None:
                thread = _RUNNING[at][1]
                later = [check for check, by in _RUNNING[at + 1 :] if by == thread]
                _RUNNING[at:] = [entry for entry in _RUNNING[at + 1 :] if entry[1] != thread]
        for check in reversed(later):
            check._stop_own()
        self._stop_own()

    def _stop_own(self) -> None:
        errors = []
        while self._armed:
            fault = self._armed.pop()
            try:
                fault.stop()
            except Exception as exc:  # noqa: BLE001
                errors.append(f"{fault.describe()}: {type(exc).__name__}")
        while self._started:
            sink = self._started.pop()
            try:
                sink.stop()
            except Exception as exc:  # noqa: BLE001
                errors.append(f"{sink.name}: {type(exc).__name__}")
        if errors:
            raise RuntimeError("leakcheck could not restore: " + ", ".join(errors))

    def __enter__(self) -> LeakCheck:
        self.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()

    # --- verdict --------------------------------------------------------------------------------

    def captured(self) -> list[Captured]:
        """What every sink captured. A sink whose ``collect()`` fails (a plugin's bug, an
        app's object it cannot read) keeps what it gave before, and the rest of it is
        reported as not inspected, naming the sink: never a crash, never silently clean."""
        items: list[Captured] = []
        for sink in self.sinks:
            try:
                for item in sink.collect():
                    items.append(item)
            except Exception as exc:  # noqa: BLE001 - one sink must not take the verdict
                sink_class = getattr(sink, "sink_class", SinkClass.OPERATOR)
                if not isinstance(sink_class, SinkClass):
                    sink_class = SinkClass.OPERATOR
                why = f"{type(sink).__name__}.collect() raised {type(exc).__name__}"
                items.append(
                    Captured(
                        str(getattr(sink, "name", type(sink).__name__)), sink_class,
                        "collect()", "", uninspected=f"the sink failed: {why}",
                    )
                )  # fmt: skip
        return items

    def findings(self) -> list[Leak]:
        """Every hit so far (allowed ones too), without failing."""
        if not self._secrets:
            return []
        # log records below a declared production level are latent (capture.resolve_latent)
        return judge(self.scanner, resolve_latent(self.captured(), self.policy), self.policy)

    def violations(self) -> list[Leak]:
        return [leak for leak in self.findings() if not leak.allowed]

    def inactive_sinks(self) -> dict[str, str]:
        """``{sink name: why}`` for sinks that could not see anything (no sentry client,
        an OpenTelemetry provider we cannot hook): never silently taken as clean."""
        inactive = {
            sink.name: reason
            for sink in self.sinks
            if (reason := getattr(sink, "inactive_reason", ""))
        }
        for plugin, library in self._waiting.items():
            if library in sys.modules:  # imported after the check began: nothing watched it
                inactive[f"{plugin} sink"] = (
                    f"{library} was first imported during the test, after leakcheck started "
                    f"watching: import it before the test starts (in a conftest.py)"
                )
        return inactive

    def report(self, leaks: list[Leak] | None = None) -> str:
        leaks = self.findings() if leaks is None else leaks
        # (a check whose secrets all came from elsewhere, a Hypothesis strategy's among
        # them: its own seed replays none of them)
        seed = self.seed if self.canaries.made else None
        text = format_leaks(leaks, header=leaks_header(leaks, seed))
        if self.skip_sinks:
            text += "\nsinks opted out: " + "; ".join(
                f"{name} ({reason})" for name, reason in self.skip_sinks.items()
            )
        inactive = self.inactive_sinks()
        if inactive:
            text += "\nsinks inactive: " + "; ".join(
                f"{name} ({reason})" for name, reason in inactive.items()
            )
        return self.mask(text)

    def check(self) -> None:
        """Raise ``StageNotReached`` if a forced stage never fired, else ``LeakError`` on a
        forbidden hit."""
        harness = self.harness_errors()
        if harness:
            raise StageNotReached(harness)
        leaks = self.findings()
        if any(not leak.allowed for leak in leaks):
            raise LeakError(self.report(leaks))


class _WeakMask:
    """``check.mask`` without a strong reference to the check. Called once the check is
    gone (nothing does: its sinks stop while it runs) it raises ``ReferenceError`` rather
    than hand the text on unmasked."""

    __slots__ = ("_method",)

    def __init__(self, check: LeakCheck) -> None:
        self._method = weakref.WeakMethod(check.mask)

    def __call__(self, text: str) -> str:
        mask = self._method()
        if mask is None:
            raise ReferenceError("the check this warnings sink masked for is gone")
        return mask(text)
