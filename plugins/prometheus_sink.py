"""Sink plugin for prometheus_client: sample names and label values added during a test.

What an operator's ``/metrics`` page shows is the registry's ``collect()``: sample names,
label names and values (numbers carry no text). A test's secret must not become a label
value (``http_errors_total{url="https://...?key=SECRET"}``). The sink snapshots every
watched registry when the test starts and, when collected, reports only what is new: a new
sample, a new label value on an existing metric, a new exemplar, the help text of a new
metric, and a sample the test changed (a counter it incremented, a gauge it set to another
value): a label value made by an earlier test of the process, a session secret's, is
emitted again by each test that counts under it, and each such test is judged for it.
Paths name the sample and the label, never the value: ``http_errors_total{url=...}``.

Watched registries: ``prometheus_client.REGISTRY`` (looked up when the test starts), every
other ``CollectorRegistry`` of the process (found when the sink first starts, and each one
made since: an app's own registry, exposed by its own ``/metrics``), and anything with
``collect()`` named with ``register_registry``, typically once in a ``conftest.py`` (it
also gives a registry a name for the notes)::

    from leakcheck.plugins.prometheus_sink import register_registry
    from myapp.metrics import APP_REGISTRY

    register_registry(APP_REGISTRY, name="app")

``register_registry`` returns the registry (``reg = register_registry(CollectorRegistry())``)
and holds it weakly: a registry nobody references any more cannot be exposed and is
dropped. A registry registered while a test runs has no baseline for that test, so all of
its samples count as new. ``unregister_registry`` stops watching one.

Limitations: a collector that raises when collected makes a ``RuntimeWarning`` (what it
yielded before raising is still checked) rather than failing the test; samples added and
removed within the same test are not seen (only the state at collect time is compared),
nor a sample of an earlier test that this one set to the value it already had.
"""

from __future__ import annotations

import threading
import warnings
import weakref
from collections.abc import Iterator
from typing import Any

import prometheus_client

from leakcheck.capture import Captured
from leakcheck.policy import SinkClass

__all__ = ["PrometheusSink", "SINKS", "register_registry", "unregister_registry", "registries"]

_LOCK = threading.Lock()
# (weak reference to a registry, its display name), in registration order
_WATCHED: list[tuple[weakref.ReferenceType[Any], str]] = []


def register_registry(registry: Any, name: str | None = None) -> Any:
    """Watch ``registry`` (anything with ``collect()``) in every test from now on.

    ``name`` appears in the notes of findings (default ``registry#N``). Registering the same
    registry twice keeps the first registration. Returns ``registry``.
    """
    if not callable(getattr(registry, "collect", None)):
        raise TypeError(
            f"register_registry: expected a prometheus_client registry with collect(), "
            f"got {type(registry).__name__}"
        )
    with _LOCK:
        _prune()
        for n, (ref, _) in enumerate(_WATCHED):
            if ref() is registry:
                if registry in _FOUND:  # watched unnamed: it takes the name given now
                    _FOUND.discard(registry)
                    _WATCHED[n] = (ref, name or _WATCHED[n][1])
                return registry
        _WATCHED.append((weakref.ref(registry), name or f"registry#{len(_WATCHED) + 1}"))
    return registry


def unregister_registry(registry: Any) -> None:
    """Stop watching ``registry`` (no error if it was not watched)."""
    with _LOCK:
        _WATCHED[:] = [(ref, n) for ref, n in _WATCHED if ref() not in (None, registry)]


def _discover() -> None:
    """Watch every ``CollectorRegistry`` of the process, the ones made before (found once,
    through the garbage collector's objects) and after (their ``__init__``): a metric
    registered in a registry of the app's own that nobody passed to ``register_registry``
    took a token as a label value and the test passed, silently."""
    registry_class = prometheus_client.CollectorRegistry
    if registry_class.__dict__.get("_leakcheck_watched"):
        return
    import gc

    init = registry_class.__init__

    def __init__(registry: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807
        init(registry, *args, **kwargs)
        _watch_unnamed(registry)

    for found in gc.get_objects():
        if isinstance(found, registry_class):
            _watch_unnamed(found)
    registry_class.__init__ = __init__  # type: ignore[method-assign, assignment]  # for the process
    registry_class._leakcheck_watched = True  # type: ignore[attr-defined]


def _watch_unnamed(registry: Any) -> None:
    if registry is not prometheus_client.REGISTRY:
        with _LOCK:
            if not any(ref() is registry for ref, _ in _WATCHED):
                _WATCHED.append((weakref.ref(registry), f"registry#{len(_WATCHED) + 1}"))
                _FOUND.add(registry)


#: the registries watched without ``register_registry`` (``_discover``): one given to it
#: later takes its name
_FOUND: weakref.WeakSet[Any] = weakref.WeakSet()


def registries() -> list[tuple[str, Any]]:
    """``[(name, registry)]`` watched now: the global registry first."""
    _discover()
    found: list[tuple[str, Any]] = [("REGISTRY", prometheus_client.REGISTRY)]
    with _LOCK:
        _prune()
        for ref, name in _WATCHED:
            registry = ref()
            if registry is not None and all(registry is not r for _, r in found):
                found.append((name, registry))
    return found


def _prune() -> None:
    _WATCHED[:] = [(ref, n) for ref, n in _WATCHED if ref() is not None]


# A registry's visible texts, keyed so that two snapshots can be compared:
#   ("sample", sample name, labels)                 -> a sample
#   ("exemplar", sample name, labels, ex. labels)   -> an exemplar on a sample
#   ("help", family name, help text)                -> a metric's help text
_Key = tuple[Any, ...]
#: what a key showed at a snapshot: a sample's number, an exemplar's value and timestamp
_Shown = tuple[Any, ...]


def _labels(labels: Any) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((str(k), str(v)) for k, v in dict(labels or {}).items()))


# The collectors prometheus_client registers by default report the process, the platform
# and the garbage collector: fixed names and labels, never the app's data, and reading
# /proc twice per test was most of this sink's cost.
_DEFAULT_COLLECTORS = tuple(
    c
    for c in (
        getattr(prometheus_client, n, None)
        for n in ("ProcessCollector", "PlatformCollector", "GCCollector")
    )
    if isinstance(c, type)
)


def _collect(registry: Any) -> Any:
    collectors = getattr(registry, "_collector_to_names", None)
    lock = getattr(registry, "_lock", None)
    if collectors is None or lock is None or not _DEFAULT_COLLECTORS:
        yield from registry.collect()
        return
    with lock:
        current = list(collectors)
    target_info = getattr(registry, "_target_info_metric", None)
    if callable(target_info) and getattr(registry, "_target_info", None):
        yield target_info()
    for collector in current:
        if not isinstance(collector, _DEFAULT_COLLECTORS):
            yield from collector.collect()


def _snapshot(registry: Any) -> tuple[dict[_Key, _Shown], str]:
    """The keys of everything ``registry`` shows now, in collection order, with what each
    showed (numbers compared as their ``repr``: a NaN equals itself), and an error
    description if collecting failed."""
    keys: dict[_Key, _Shown] = {}
    try:
        for metric in _collect(registry):
            keys[("help", str(metric.name), str(getattr(metric, "documentation", "")))] = ()
            for sample in metric.samples:
                labels = _labels(sample.labels)
                keys[("sample", str(metric.name), str(sample.name), labels)] = (repr(sample.value),)
                exemplars = [sample.exemplar] if sample.exemplar is not None else []
                histogram = getattr(sample, "native_histogram", None)
                exemplars += list(getattr(histogram, "nh_exemplars", None) or ())
                for exemplar in exemplars:
                    key = ("exemplar", str(metric.name), str(sample.name), labels,
                           _labels(exemplar.labels))  # fmt: skip
                    keys[key] = (repr(exemplar.value), repr(getattr(exemplar, "timestamp", None)))
    except Exception as exc:  # noqa: BLE001 - the app's collector failed, not us
        return keys, f"collecting this registry raised {type(exc).__name__}"
    return keys, ""


class PrometheusSink:
    """Sample names, label values and exemplars added to the watched registries during
    the test (operator-visible: a ``/metrics`` page)."""

    name = "prometheus"

    def __init__(self) -> None:
        self._baseline: dict[int, dict[_Key, _Shown]] | None = None
        self._final: list[tuple[str, bool, list[_Key], str]] | None = None

    def start(self) -> None:
        if self._baseline is not None:
            return
        self._final = None
        self._baseline = {id(reg): _snapshot(reg)[0] for _, reg in registries()}

    def stop(self) -> None:
        if self._baseline is None:
            return
        # what the test left behind, kept for a collect() after stop (LeakCheck used as a
        # context manager checks after leaving the block)
        self._final = self._current()
        self._baseline = None

    def _current(self) -> list[tuple[str, bool, list[_Key], str]]:
        baseline = self._baseline or {}
        current = []
        for name, registry in registries():
            keys, error = _snapshot(registry)
            before = baseline.get(id(registry), {})
            new = [key for key, shown in keys.items() if before.get(key) != shown]
            current.append((name, id(registry) in baseline, new, error))
        return current

    def collect(self) -> Iterator[Captured]:
        state = (
            self._final
            if self._final is not None
            else (self._current() if self._baseline is not None else [])
        )
        for registry_name, had_baseline, new, error in state:
            notes = []
            if registry_name != "REGISTRY":
                notes.append(f"in registry {registry_name!r}")
            if not had_baseline:
                notes.append("registered during the test: every sample counts as new")
            note = "; ".join(notes)
            if error:
                _warn(
                    f"leakcheck prometheus sink: {error} (registry {registry_name!r}); "
                    "its samples were not all checked"
                )
            yield from self._texts(new, note)

    def _texts(self, new: list[_Key], note: str) -> Iterator[Captured]:
        seen_names: set[str] = set()
        seen_values: set[tuple[str, str, str]] = set()

        def item(path: str, text: str) -> Captured:
            return Captured(self.name, SinkClass.OPERATOR, path, text, note=note)

        for key in new:
            if key[0] == "help":
                _, family, documentation = key
                if documentation:
                    yield item(f"{family} HELP", documentation)
                continue
            family, sample_name, labels = key[1], key[2], key[3]
            if sample_name not in seen_names:
                seen_names.add(sample_name)
                yield item(sample_name, "\n".join([sample_name, *(k for k, _ in labels)]))
            if key[0] == "exemplar":
                for label, value in key[4]:
                    yield item(f"{sample_name} exemplar{{{label}=...}}", value)
                continue
            for label, value in labels:
                # one capture per (metric, label, value): a histogram repeats its labels
                # on every bucket, _count, _sum and _created sample
                if (family, label, value) in seen_values:
                    continue
                seen_values.add((family, label, value))
                yield item(f"{sample_name}{{{label}=...}}", value)


def _warn(message: str) -> None:
    try:
        warnings.warn(message, RuntimeWarning, stacklevel=2)
    except Exception:  # noqa: BLE001 - "-W error" must not turn a collect into a crash
        pass


SINKS = [PrometheusSink]
