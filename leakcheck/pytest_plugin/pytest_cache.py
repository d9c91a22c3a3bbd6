"""pytest's cache (``config.cache.set``) as a sink of the test that writes to it.

A test that keeps a login token between sessions (``request.config.cache.set("auth/token",
token)``, a common speed-up) writes it to ``.pytest_cache``, which CI keeps as a cache or
an artifact; the test passed (found by a hunting helper). What a running test sets is
judged as an operator sink of that test, ``pytest cache``, at the key it was set under
(the value as the cache writes it: JSON), and the key itself (a file's path under
``.pytest_cache/v/``). The cache's own method is wrapped on the
instance for the session and restored after it.

What pytest itself sets outside a test (``cache/lastfailed``, ``cache/nodeids``,
``cache/stepwise``: test ids, at the end of the session) is written masked with every
secret the session has seen: a test's id holding a value the test registered (a
parametrize value from the environment) went raw into ``.pytest_cache`` while every report
masked it. Such a test, its id masked there, is not found by the next ``--lf`` (which then
runs every test, as with no last failure).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from .session import CHECK

if TYPE_CHECKING:  # (the harness is imported when a test first asks for it: issue 13)
    from ..capture import TextSink
    from ..harness import LeakCheck

SINK_NAME = "pytest cache"
#: where a key is judged (it names a file under ``.pytest_cache/v/``)
KEY_PATH = "{}<key>"


#: what was set while a test ran before its check existed (a session-scoped fixture's
#: login, set up in the first test's setup; a fixture listed before ``leakcheck``): handed
#: to the check when it is made (``take_pending``)
PENDING = pytest.StashKey[list[tuple[str, str]]]()


def watch_cache(
    config: Any, running_item: Callable[[], pytest.Item | None], mask: Callable[[str], str]
) -> Callable[[], None]:
    """Judge what each running test sets in ``config.cache`` (none with ``-p
    no:cacheprovider``), and write what is set outside a test masked (``mask``); the
    function that restores the cache's method."""
    cache = getattr(config, "cache", None)
    original = getattr(cache, "set", None)
    if cache is None or original is None:
        return lambda: None

    def judged_set(key: str, value: object) -> None:
        item = running_item()
        if item is not None:
            texts = [
                (key, json.dumps(value, default=repr, ensure_ascii=False)),
                (KEY_PATH.format(key), key),
            ]
            check = item.stash.get(CHECK, None)
            if check is not None:
                for path, text in texts:
                    _sink(check).add(path, text)
            else:
                item.stash.setdefault(PENDING, []).extend(texts)
        else:
            from ..masking import mask_strings

            value = mask_strings(value, mask)
        original(key, value)

    cache.set = judged_set

    def restore() -> None:
        if cache.__dict__.get("set") is judged_set:
            del cache.set

    return restore


def take_pending(item: pytest.Item, check: LeakCheck) -> None:
    """Hand ``check`` what its test set in the cache before the check was made."""
    for key, text in item.stash.get(PENDING, ()):
        _sink(check).add(key, text)
    if PENDING in item.stash:
        del item.stash[PENDING]


def _sink(check: LeakCheck) -> TextSink:
    from ..policy import SinkClass

    return check.text_sink(SINK_NAME, SinkClass.OPERATOR)
