"""The extractor's settings and running state, shared by its scan paths.

:class:`ExtractorState` holds what :class:`~kafka_archive.catalog.extract.extractor.
SegmentExtractor` is configured with and everything it accumulates while bytes stream through
it: the streaming buffer, the whole-segment stats, epoch runs, intervals, histogram, commits
and markers, and the fast path's open aggregates. The paths that fill it are mixins on top of
it: :mod:`~kafka_archive.catalog.extract.fast_path` (whole segment, compiled) and
:mod:`~kafka_archive.catalog.extract.general_path` (per batch, with pieces and record decoding).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from kafka_archive.catalog.constants import (
    CONSUMER_OFFSETS_TOPIC,
    DEFAULT_HISTOGRAM_MS,
    DEFAULT_INTERVAL_BYTES,
)
from kafka_archive.catalog.extract import speedups
from kafka_archive.catalog.extract.rows import CommitRow, IntervalRow, MarkerRow
from segment_lib.records import Codec

__all__ = ["Checksum", "ExtractorState", "OpenInterval"]


class Checksum(Protocol):
    """What the extractor feeds every byte to (e.g. an
    :class:`~kafka_archive.catalog.integrity.ObjectChecksum`)."""

    def update(self, chunk: bytes | memoryview, /) -> None: ...


@dataclass(slots=True)
class OpenInterval:
    """The general path's time-index interval being grown, batch by batch."""

    piece: int
    start_offset: int
    end_offset: int
    byte_start: int
    byte_end: int
    max_ts: int
    record_max_ts: int
    record_count: int


class ExtractorState:
    """Settings and running state of a segment extractor (the arguments are those of
    :class:`~kafka_archive.catalog.extract.extractor.SegmentExtractor`)."""

    def __init__(
        self,
        *,
        topic: str,
        interval_bytes: int = DEFAULT_INTERVAL_BYTES,
        histogram_ms: int = DEFAULT_HISTOGRAM_MS,
        pieces: Sequence[tuple[int, int]] | None = None,
        path: str | None = None,
        size: int | None = None,
        checksum: Checksum | None = None,
        batch_crc: bool = True,
    ) -> None:
        if interval_bytes <= 0 or histogram_ms <= 0:
            raise ValueError("interval_bytes and histogram_ms must be positive")
        self.topic = topic
        self.interval_bytes = interval_bytes
        self.histogram_ms = histogram_ms
        self.pieces = None if pieces is None else tuple(sorted((int(a), int(b)) for a, b in pieces))
        self.path = path
        self.size = size
        self.checksum = checksum
        self.batch_crc = batch_crc
        self._checked = 0  # bytes of the view being fed that the checksum has seen
        self._decode_offsets = topic == CONSUMER_OFFSETS_TOPIC
        # streaming state: bytes not yet parsed start at absolute position _base
        self._pending: list[bytes] = []
        self._pending_len = 0
        self._base = 0
        self._need = 0
        # stats
        self._first = self._last = -1
        self._first_ts = self._max_ts = self._off_max = -1
        self._records = self._batches = self._txn = self._control = 0
        self._codecs: set[Codec] = set()
        self._magics: set[int] = set()
        # epoch runs: closed ones (the general path keeps its open run as the last item)
        self._runs: list[list[int]] = []
        # outputs
        self._open: OpenInterval | None = None
        self._intervals: list[IntervalRow] = []
        self._hist: dict[int, list[int]] = {}
        self._commits: list[CommitRow] = []
        self._markers: list[MarkerRow] = []
        self._other = self._undecodable = 0
        self._piece_idx = 0
        self._finished = False
        # the fast path (no pieces, no commit decoding) keeps its open aggregates here between
        # chunks (see _scan_fast)
        self._fast = self.pieces is None and not self._decode_offsets
        self._ep_cur = speedups.NO_EPOCH  # epoch of the open run, and its first offset
        self._ep_first = -1
        self._iv_open = False  # the open interval: start offset, byte start, maxima, count
        self._iv_so = self._iv_bs = 0
        self._iv_mx = self._iv_rmx = -1
        self._iv_cnt = 0
        # the compiled summary books the fast path (until a value outgrows int64: see
        # _summarize_window)
        self._summary = speedups.summarize
