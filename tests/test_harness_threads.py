"""Checks started by two threads (a runner that runs tests in threads): stopping one
stops only the later checks its own thread started (``a.start(); b.start(); a.stop()``
in one thread, ``test_checks_stopped_out_of_order_put_every_hook_back``), never another
thread's check while that thread's test still runs."""

from __future__ import annotations

import logging
import threading

from leakcheck.capture import LoggingSink
from leakcheck.harness import LeakCheck

log = logging.getLogger("leakcheck.tests.threads")
WAIT = 0.5  # seconds; each wait is set at once by the other thread


def _check() -> LeakCheck:
    return LeakCheck(seed="harness-threads", sinks=[LoggingSink()])


def test_a_check_stopped_in_one_thread_leaves_another_threads_check_running() -> None:
    b_started, a_stopped = threading.Event(), threading.Event()
    judged: dict[str, bool] = {}

    def other_threads_test() -> None:
        with _check() as b:
            token = b.secret("bearer")
            b_started.set()
            a_stopped.wait(WAIT)
            log.warning("calling upstream with %s", token)  # after A's check stopped
        judged["leak found"] = bool(b.violations())

    thread = threading.Thread(target=other_threads_test)
    with _check():
        thread.start()
        assert b_started.wait(WAIT)
    a_stopped.set()
    thread.join(WAIT)
    assert not thread.is_alive()
    assert judged == {"leak found": True}


def test_a_later_check_of_the_same_thread_is_still_stopped_first() -> None:
    first, second = _check(), _check()
    first.start()
    second.start()
    first.stop()
    token = second.secret("bearer")
    log.warning("after both stopped: %s", token)
    assert second.violations() == []  # stopped with the first: it captured nothing more
