"""A check is freed when its test lets go of it, not left to the garbage collector: the
collector's full collections walk the whole of pytest's heap, and a suite made one check
a test."""

from __future__ import annotations

import gc
import logging
import weakref
from collections.abc import Iterator

import pytest

from leakcheck.harness import LeakCheck, _WeakMask


@pytest.fixture
def collector_off() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def a_check_run(leaky: bool) -> weakref.ref[LeakCheck]:
    check = LeakCheck(seed=1)
    token = check.secret("bearer")
    check.start()
    logging.getLogger("leakcheck.tests.cycles").warning("upstream refused the credentials")
    check.expose({"error": {"message": "refused" + (f" {token}" if leaky else "")}})
    check.stop()
    assert bool(check.violations()) is leaky
    check.report()
    return weakref.ref(check)


@pytest.mark.parametrize("leaky", [False, True])
def test_a_check_is_freed_by_reference_counting(collector_off: None, leaky: bool) -> None:
    assert a_check_run(leaky)() is None


def test_the_warnings_sinks_mask_refuses_once_its_check_is_gone() -> None:
    check = LeakCheck(seed=2)
    token = check.secret("bearer")
    mask = _WeakMask(check)
    assert token not in mask(f"token={token}")
    del check
    gc.collect()
    with pytest.raises(ReferenceError):
        mask(f"token={token}")  # never the text unmasked
