"""pytest's cache (``config.cache.set``) as a sink of the test that writes to it.

A test that keeps a login token between sessions (``request.config.cache.set("auth/token",
token)``, a common speed-up) writes it to ``.pytest_cache``, which CI keeps as a cache or
an artifact; the test passed (found by a hunting helper). What a running test sets is
judged as an operator sink of that test, ``pytest cache``, at the key it was set under
(the value as the cache writes it: JSON). The cache's own method is wrapped on the
instance for the session and restored after it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # (the harness is imported when a test first asks for it: issue 13)
    from ..capture import TextSink
    from ..harness import LeakCheck

SINK_NAME = "pytest cache"


def watch_cache(config: Any, running_check: Callable[[], LeakCheck | None]) -> Callable[[], None]:
    """Judge what each running test sets in ``config.cache`` (none with ``-p
    no:cacheprovider``); the function that restores the cache's method."""
    cache = getattr(config, "cache", None)
    original = getattr(cache, "set", None)
    if cache is None or original is None:
        return lambda: None

    def judged_set(key: str, value: object) -> None:
        check = running_check()
        if check is not None:
            _sink(check).add(key, json.dumps(value, default=repr, ensure_ascii=False))
        original(key, value)

    cache.set = judged_set

    def restore() -> None:
        if cache.__dict__.get("set") is judged_set:
            del cache.set

    return restore


def _sink(check: LeakCheck) -> TextSink:
    from ..capture import TextSink
    from ..policy import SinkClass

    for sink in check.sinks:
        if isinstance(sink, TextSink) and sink.name == SINK_NAME:
            return sink
    sink = TextSink(SINK_NAME, SinkClass.OPERATOR)
    check.sinks.append(sink)
    return sink
