"""Pausing the cyclic garbage collector while one source batch is decoded and produced.

Decoding a batch creates three GC-tracked tuples per record (the Record, its headers tuple, each
Header) that live only until the batch is produced. Left alone, the cyclic collector runs every
700 tracked allocations, finds the batch alive and promotes it to the older generations; those
promotions then trigger full collections, which walk the whole heap: in a process holding a
large heap (an Airflow worker; the benchmark's reference messages) that cost more than the
decoding itself (profile: one ~0.18 s full collection per 300,000 replayed records on a heap of
700,000 objects). So the collector is paused while one batch is decoded and produced - reference
counting frees the batch at the end of the pause, nothing of it is ever promoted - and resumed
between batches, where any collection that came due runs on an almost empty young generation.

The pause is process-wide (``gc.disable``), so its state has one owner: :class:`CollectorPause`,
of which the process has one instance, :data:`GC_PAUSE`. It is reference-counted across replay
threads, never enables a collector that was disabled before, and when overlapping pauses of
parallel partitions keep it off for more than :data:`GC_VALVE_S`, a young-generation collection
runs anyway so that cyclic garbage of other threads cannot pile up.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["GC_PAUSE", "GC_VALVE_S", "CollectorPause"]

#: longest stretch overlapping pauses keep the collector off before a young collection runs
GC_VALVE_S = 5.0


class CollectorPause:
    """The process's reference-counted pause of the cyclic garbage collector (module docstring).

    One instance per process (:data:`GC_PAUSE`): ``gc`` is process-wide state.
    """

    def __init__(self, valve_s: float = GC_VALVE_S) -> None:
        self.valve_s = valve_s
        self._lock = threading.Lock()
        self._pauses = 0
        self._was_enabled = False
        self._paused_since = 0.0

    @contextmanager
    def paused(self) -> Iterator[None]:
        """The collector is off inside (unless a pause outlives the valve: see the module)."""
        with self._lock:
            if self._pauses == 0:
                self._was_enabled = gc.isenabled()
                gc.disable()
                self._paused_since = time.monotonic()
            self._pauses += 1
        try:
            yield
        finally:
            with self._lock:
                self._pauses -= 1
                if self._pauses == 0:
                    if self._was_enabled:
                        gc.enable()
                elif self._was_enabled and time.monotonic() - self._paused_since > self.valve_s:
                    self._paused_since = time.monotonic()
                    gc.collect(1)


#: the process's one collector pause, shared by every replay thread
GC_PAUSE = CollectorPause()
