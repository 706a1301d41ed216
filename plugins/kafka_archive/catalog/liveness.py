"""Telling a live holder from a dead one: the clock, this process, and heartbeats.

Three kinds of catalog rows belong to a running process: object leases
(:mod:`kafka_archive.catalog.leases`), a replay's run lease
(:mod:`kafka_archive.replay.bookkeeping.lease`) and catalog build runs
(:mod:`kafka_archive.catalog.problems`). Each is renewed by a heartbeat while its process works
and is taken for dead when it was not renewed for a while, or at once when its process is gone
from this host (kill -9). The pieces of that rule live here, once.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["heartbeat", "now_ms", "pid_alive", "process_gone", "this_process"]


def now_ms() -> int:
    """Wall-clock time in epoch milliseconds (what every catalog ``*_ms`` column holds)."""
    return int(time.time() * 1000)


def this_process() -> tuple[str, int]:
    """This process as a holder: (host name, at most 255 characters; pid)."""
    return socket.gethostname()[:255], os.getpid()


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists on this host (somebody else's counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def process_gone(host: str | None, pid: int | None) -> bool:
    """Whether the holder ``host``/``pid`` is provably dead: it ran on this host and no process
    has its pid any more. A holder elsewhere, or not tied to a process (pid 0 or ``None``), is
    never provably dead: only its heartbeat's age can tell."""
    if not pid or pid <= 0 or host is None:
        return False
    return host == this_process()[0] and pid != os.getpid() and not pid_alive(pid)


@contextmanager
def heartbeat(renew: Callable[[], object], period_s: float, name: str) -> Iterator[None]:
    """Call ``renew`` every ``period_s`` from a daemon thread while the block runs.

    A failed renewal is skipped (a catalog hiccup: the next beat tries again; holders' time-outs
    are many periods long), and the thread is stopped and joined when the block ends."""
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(period_s):
            try:
                renew()
            except Exception:  # a catalog hiccup: see the docstring
                continue

    thread = threading.Thread(target=beat, name=name, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)
