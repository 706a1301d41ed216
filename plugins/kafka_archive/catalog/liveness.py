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
from collections.abc import Callable
from types import TracebackType

from kafka_archive.timeparse import now_ms

__all__ = ["Heartbeat", "now_ms", "pid_alive", "process_gone", "this_process"]


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


class Heartbeat:
    """Calls ``renew`` every ``period_s`` from a daemon thread between :meth:`start` and
    :meth:`stop` (or inside a ``with`` block).

    A failed renewal is skipped (a catalog hiccup: the next beat tries again; holders' time-outs
    are many periods long); :meth:`stop` ends the thread and waits for it."""

    def __init__(self, renew: Callable[[], object], period_s: float, name: str) -> None:
        self._renew = renew
        self._period_s = period_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=name, daemon=True)

    def _beat(self) -> None:
        while not self._stop.wait(self._period_s):
            try:
                self._renew()
            except Exception:  # a catalog hiccup: see the class docstring
                continue

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def __enter__(self) -> Heartbeat:
        self.start()
        return self

    def __exit__(
        self, _t: type[BaseException] | None, _e: BaseException | None, _tb: TracebackType | None
    ) -> None:
        self.stop()
