"""Sink plugin for sentry-sdk: every envelope the SDK would send during a test.

The envelope is the final payload, after the SDK's own scrubbing (``EventScrubber``),
``before_send``/``before_breadcrumb``/``before_send_log`` and serialization: exception
values and notes, frame ``vars`` (``include_local_variables`` defaults to True, so a local
holding a credential is sent), breadcrumbs, tags, extra, transactions and their spans, log
items (``enable_logs``; the scrubber never touches them), metrics and attachments.

How: while a test runs, the ``transport`` of every active client (current, isolation and
global scope) is swapped for a capturing ``sentry_sdk.transport.Transport`` whose
``capture_envelope`` records the envelope. A client created during the test (an
``sentry_sdk.init`` in a fixture that runs after leakcheck's, a ``sentry_sdk.Client`` bound
to a scope) gets one too: ``Client.__init__`` is wrapped while the sink runs. Whenever the
sink is collected, and before it stops, the clients' batchers are flushed so that buffered
log and metric items are seen. At stop every original transport and ``Client.__init__`` is
put back, even if the test raised; the current client and the scopes are never replaced.

Envelopes are not forwarded to a network transport: nothing leaves the process during a
checked test (a canary sent to a real Sentry project would be a leak of its own, and a
test run must not depend on the network). A non-network transport (a test double that the
app's own tests inspect) still receives every envelope. An active client without a DSN,
as tests often configure it, is captured too: its envelopes are what production, with a
DSN, would send. A closed client (a DSN but no transport) sends nothing and is left alone.

Paths name the field of the JSON that would be sent: ``exception.values[0].stacktrace.
frames[3].vars.url``, ``breadcrumbs.values[2].message``, ``logs[0].body``,
``transaction spans[0].description``, ``attachment "dump.txt"``, ``envelope headers.
trace.transaction``. Each envelope item is one ``group``; its whole JSON is a ``fallback``.

Inactive state: when no sentry_sdk client is active during the test nothing would be sent,
so nothing is captured and ``collect()`` yields nothing; ``inactive_reason`` then says so
(``NO_CLIENT``; ``""`` while the sink saw a client), for a report to list the sink as
inactive rather than as clean.

Not covered: Spotlight (``spotlight=True`` sends envelopes to a local sidecar, not through
the transport) and a client whose ``transport`` the app replaces by hand during the test.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from typing import Any

import sentry_sdk
import sentry_sdk.client
from sentry_sdk.transport import HttpTransport, Transport

from leakcheck.capture import Captured
from leakcheck.policy import SinkClass
from leakcheck.serialize import leaves

try:  # the base class of the sync and async HTTP transports in recent 2.x releases
    from sentry_sdk.transport import HttpTransportCore as _NetworkTransport
except ImportError:  # pragma: no cover - older 2.x
    _NetworkTransport = HttpTransport  # type: ignore[misc]  # the same role under its old name

__all__ = ["SentrySink", "SINKS", "NO_CLIENT"]

#: ``SentrySink.inactive_reason`` when no client was active during the test.
NO_CLIENT = "no active sentry_sdk client during the test: nothing would be sent"

# Batched item types carry ``{"items": [...]}``: their paths read ``logs[0].body``.
_BATCHES = {"log": "logs", "trace_metric": "metrics", "span": "spans"}
# Item headers that are the SDK's bookkeeping, not data.
_BOOKKEEPING = frozenset({"type", "length", "content_type", "item_count"})
_SIMPLE_KEY = re.compile(r"[A-Za-z_][\w.\-]*\Z")


class _Recorded:
    """One envelope item (or the envelope's headers, ``index`` -1) as it would be sent."""

    __slots__ = ("envelope", "index", "type", "headers", "data")

    def __init__(self, envelope: int, index: int, type: str, headers: Any, data: bytes) -> None:
        self.envelope = envelope
        self.index = index
        self.type = type
        self.headers = headers
        self.data = data


class _CapturingTransport(Transport):
    """Records every envelope for its sink while the sink runs; forwards to the original
    transport only when that is not a network transport. Once the sink has stopped it is a
    plain pass-through (should a client still hold it)."""

    def __init__(self, sink: SentrySink, original: Transport | None, options: Any) -> None:
        Transport.__init__(self, options if isinstance(options, dict) else None)
        self._sink = sink
        self.original = original
        self._forward = original is not None and not isinstance(original, _NetworkTransport)
        if original is not None:
            self.parsed_dsn = original.parsed_dsn

    def _passing(self) -> bool:
        return self.original is not None and (self._forward or not self._sink._started)

    def capture_envelope(self, envelope: Any) -> None:
        if self._sink._started:
            self._sink._record(envelope)
        if self._passing() and self.original is not None:
            self.original.capture_envelope(envelope)

    def flush(self, timeout: float, callback: Any = None) -> None:
        if self._passing() and self.original is not None:
            self.original.flush(timeout, callback)

    def kill(self) -> Any:
        # the app closed its client: its real transport goes too
        if self.original is not None:
            return self.original.kill()
        return None

    def record_lost_event(self, *args: Any, **kwargs: Any) -> None:
        if self.original is not None:
            self.original.record_lost_event(*args, **kwargs)

    def is_healthy(self) -> bool:
        return self.original.is_healthy() if self.original is not None else True


class SentrySink:
    """Envelopes sentry-sdk would send during the test (operator-visible: a Sentry project).

    ``inactive_reason``: ``""`` while a client was active, else why nothing was captured
    (``NO_CLIENT``). An inactive sink yields no texts: correct, since nothing would be
    sent, but no evidence that the app scrubs what it sends.
    """

    name = "sentry event"
    #: Why the sink could capture nothing during this test; ``""`` when it was active.
    inactive_reason: str = ""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: list[_Recorded] = []
        self._envelopes = 0
        # (client, our transport, the transport the client had)
        self._wrapped: list[tuple[Any, _CapturingTransport, Any]] = []
        self._saved_init: Any = None
        self._started = False

    # --- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        if self._started:
            return
        client_class = sentry_sdk.client._Client
        original_init = client_class.__init__
        self._saved_init = client_class.__dict__.get("__init__")
        sink = self

        def __init__(client: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807
            __tracebackhide__ = True  # (the app's mistake in its options: its frame, not ours)
            original_init(client, *args, **kwargs)
            if sink._started:
                sink._wrap(client)

        __init__.__wrapped__ = original_init  # type: ignore[attr-defined]  # set on a function
        self._started = True
        client_class.__init__ = __init__  # type: ignore[method-assign, assignment]  # until stop()
        for client in _active_clients():
            self._wrap(client)
        self.inactive_reason = "" if self._wrapped else NO_CLIENT

    def _wrap(self, client: Any) -> None:
        transport = getattr(client, "transport", None)
        if any(client is seen for seen, _, _ in self._wrapped):
            return
        if transport is None and (getattr(client, "options", None) or {}).get("dsn"):
            return  # closed: sends nothing, with or without a DSN
        with self._lock:
            ours = _CapturingTransport(self, transport, getattr(client, "options", None))
            self._wrapped.append((client, ours, transport))
            client.transport = ours
            self.inactive_reason = ""

    def stop(self) -> None:
        if not self._started:
            return
        failures: list[str] = []
        try:
            self._flush(failures)
        finally:
            self._started = False
            client_class = sentry_sdk.client._Client
            if self._saved_init is not None:
                client_class.__init__ = self._saved_init  # type: ignore[method-assign]  # restored
            else:  # pragma: no cover - __init__ inherited in some release
                del client_class.__init__
            for client, ours, original in self._wrapped:
                if getattr(client, "transport", None) is ours:
                    client.transport = original
            self._wrapped.clear()
        if failures:
            raise RuntimeError("sentry sink: " + "; ".join(failures))

    def _flush(self, failures: list[str] | None = None) -> None:
        """Push what the clients' batchers hold (logs, metrics, sessions) into our
        transports now, rather than on the batchers' 5-second timer."""
        for client, ours, _ in list(self._wrapped):
            if getattr(client, "transport", None) is not ours:
                continue
            try:
                client.flush(timeout=0)
            except Exception as exc:  # noqa: BLE001 - the app's client, not ours
                if failures is not None:
                    failures.append(f"flushing a client raised {type(exc).__name__}")

    # --- recording --------------------------------------------------------------------------

    def _record(self, envelope: Any) -> None:
        """Copy an envelope's on-wire bytes. Never raises into the SDK."""
        with self._lock:
            number = self._envelopes
            self._envelopes += 1
        recorded: list[_Recorded] = []
        try:
            headers = _jsonable(getattr(envelope, "headers", None) or {})
            recorded.append(_Recorded(number, -1, "envelope", headers, b""))
            for index, item in enumerate(list(envelope.items)):
                try:
                    data = bytes(item.get_bytes())
                except Exception:  # noqa: BLE001 - keep the item's headers at least
                    data = b""
                recorded.append(
                    _Recorded(
                        number,
                        index,
                        str(item.type or "unknown"),
                        _jsonable(dict(item.headers)),
                        data,
                    )
                )
        except Exception:  # noqa: BLE001 - a malformed envelope: keep what we can read
            try:
                recorded.append(_Recorded(number, 0, "envelope", {}, envelope.serialize()))
            except Exception:  # noqa: BLE001
                pass
        with self._lock:
            self._items.extend(recorded)

    # --- texts ------------------------------------------------------------------------------

    def collect(self) -> Iterator[Captured]:
        if self._started:
            self._flush()
        with self._lock:
            items = list(self._items)
        for rec in items:
            yield from self._texts(rec, f"{self.name}#{rec.envelope}.{rec.index}")

    def _texts(self, rec: _Recorded, group: str) -> Iterator[Captured]:
        def item(path: str, text: str | bytes, fallback: bool = False) -> Captured:
            return Captured(
                self.name, SinkClass.OPERATOR, path, text, group=group, fallback=fallback
            )

        if rec.index == -1:
            for path, text in _leaves(rec.headers, "envelope headers"):
                yield item(path, text)
            return
        headers = rec.headers if isinstance(rec.headers, dict) else {}
        if rec.type == "attachment":
            label = f"attachment {json.dumps(str(headers.get('filename', '')), ensure_ascii=False)}"
        else:
            label = rec.type
        root = "" if rec.type == "event" else label
        extra = {k: v for k, v in headers.items() if k not in _BOOKKEEPING}
        for path, text in _leaves(extra, f"{label} item headers"):
            yield item(path, text)
        payload: Any = None
        if rec.type != "attachment":
            try:
                payload = json.loads(rec.data)
            except ValueError:
                payload = None
        if not isinstance(payload, (dict, list)):
            yield item(label, rec.data)
            return
        batch = _BATCHES.get(rec.type)
        if batch and isinstance(payload, dict) and isinstance(payload.get("items"), list):
            for n, entry in enumerate(payload["items"]):
                for path, text in _leaves(entry, f"{batch}[{n}]"):
                    yield item(path, text)
            rest = {k: v for k, v in payload.items() if k != "items"}
            for path, text in _leaves(rest, batch):
                yield item(path, text)
        else:
            for path, text in _leaves(payload, root):
                yield item(path, text)
        yield item(f"{label} item json", rec.data.decode("utf-8", "replace"), fallback=True)


def _active_clients() -> list[Any]:
    """The distinct active clients of the current, isolation and global scopes."""
    found: list[Any] = []
    for getter in ("get_current_scope", "get_isolation_scope", "get_global_scope"):
        try:
            client = getattr(sentry_sdk, getter)().client
            active = client is not None and client.is_active()
        except Exception:  # noqa: BLE001
            continue
        if active and all(client is not seen for seen in found):
            found.append(client)
    return found


def _jsonable(value: Any) -> Any:
    try:
        return json.loads(json.dumps(value, default=str))
    except (TypeError, ValueError):
        return {}


def _child(path: str, key: str) -> str:
    if _SIMPLE_KEY.match(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def _leaves(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """``(path, text)`` for every key and string leaf of a JSON value."""
    return leaves(value, path, scalars=False, child=_child)


SINKS = [SentrySink]
