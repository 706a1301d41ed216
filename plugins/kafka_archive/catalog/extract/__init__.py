"""Per-segment extraction: the bytes of one archived ``.log`` object -> catalog rows.

This is what Spark executors run, one segment object at a time. The rooms:

* :mod:`~kafka_archive.catalog.extract.extractor`: :class:`SegmentExtractor`, pure (fed chunks
  of bytes, no I/O), and :func:`extract_segment` for bytes in memory;
* :mod:`~kafka_archive.catalog.extract.fast_path` / :mod:`~kafka_archive.catalog.extract.
  general_path`: its scan paths (compiled whole-segment summary or header scan; per batch with
  pieces and record decoding), over the state of :mod:`~kafka_archive.catalog.extract.state`;
  :mod:`~kafka_archive.catalog.extract.speedups` loads the compiled helpers;
* :mod:`~kafka_archive.catalog.extract.from_store`: :func:`extract_object`, the I/O helper
  streaming an object out of the store with ranged reads and checking the whole object
  against its manifest's CRC-32C (default) or SHA-256 (:mod:`kafka_archive.catalog.integrity`);
* :mod:`~kafka_archive.catalog.extract.locate`: where bytes differ from the manifest (errors);
* :mod:`~kafka_archive.catalog.extract.rows`: what is extracted (below);
  :mod:`~kafka_archive.catalog.extract.framing`: the log format's framing they walk.

The defaults (:data:`DEFAULT_INTERVAL_BYTES`, :data:`DEFAULT_HISTOGRAM_MS`,
:data:`DEFAULT_CHUNK_BYTES`) live in :mod:`kafka_archive.catalog.constants`, shared with the
queries; they are re-exported here with the rest of the public API.

What is extracted:

* :class:`SegmentStats`: a header scan of the *whole* segment (offset range, first/max
  timestamps, record/batch counts, bytes, codecs, magics, transactional and control batches,
  leader-epoch runs). Every batch's CRC is verified (CRC-32C for magic 2, CRC-32 before)
  unless ``batch_crc=False`` (``verify=crc32c-only``).
* :class:`IntervalRow`: the sparse time index. Consecutive whole batches are grouped into
  intervals of at most ``interval_bytes`` bytes (a bigger batch gets an interval of its own);
  each records its offsets, its byte range ``[byte_start, byte_end)`` in the object and the
  largest timestamp in it. Control batches are included: the broker's ListOffsets counts
  transaction markers too.
* :class:`HistogramRow`: data records and batch bytes per time bucket (a batch is counted at
  its max timestamp, the broker's notion of a batch's time; control records are not counted as
  records, their bytes are).
* for ``__consumer_offsets`` only, :class:`CommitRow` (offset commits and offset tombstones)
  and :class:`MarkerRow` (transaction COMMIT/ABORT markers, needed because offsets committed
  inside a transaction take effect only at their COMMIT marker).

**Pieces.** When several archived versions hold the same offsets, only part of a segment may
belong to the partition's canonical chain (:mod:`kafka_archive.catalog.chain`). ``pieces``
lists those offset ranges ``(lo, hi)`` inclusive; everything but the stats is then restricted to
them, and no interval crosses a piece boundary. A batch straddling a boundary is kept whole in
the byte range (batches cannot be cut) but its offsets, records and timestamps are clipped to
the piece: the batch is decoded and only records inside the piece count. ``pieces=None`` means
the whole segment.

Errors are :class:`~segment_lib.errors.SegmentError` subclasses naming the object (``path``)
and the absolute byte position; a segment that ends inside a batch raises
:class:`~segment_lib.errors.TornTailError` (an archived segment is rolled, so it never may).
"""

from kafka_archive.catalog.constants import (
    CONSUMER_OFFSETS_TOPIC,
    DEFAULT_CHUNK_BYTES,
    DEFAULT_HISTOGRAM_MS,
    DEFAULT_INTERVAL_BYTES,
)
from kafka_archive.catalog.extract.extractor import SegmentExtractor, extract_segment
from kafka_archive.catalog.extract.from_store import extract_object
from kafka_archive.catalog.extract.rows import (
    CommitRow,
    HistogramRow,
    IntervalRow,
    MarkerRow,
    SegmentExtract,
    SegmentStats,
)

__all__ = [
    "CONSUMER_OFFSETS_TOPIC",
    "DEFAULT_CHUNK_BYTES",
    "DEFAULT_HISTOGRAM_MS",
    "DEFAULT_INTERVAL_BYTES",
    "CommitRow",
    "HistogramRow",
    "IntervalRow",
    "MarkerRow",
    "SegmentExtract",
    "SegmentExtractor",
    "SegmentStats",
    "extract_object",
    "extract_segment",
]
