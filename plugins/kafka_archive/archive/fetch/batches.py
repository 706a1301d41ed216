"""What of a Fetch answer may be archived: whole batches, from the asked offset, below the HW.

:func:`usable_batches` takes one partition's record bytes as a FetchResponse holds them and
returns the byte range to feed a :class:`~segment_lib.segment_builder.SegmentBuilder`:

* a **trailing partial batch** (the response is cut at the partition's size limit) is left out:
  the next Fetch starts at it;
* a batch that **ends before the asked offset** is skipped (a Fetch returns the whole batch
  holding the asked offset, and a broker may return earlier batches of the same segment read);
  a batch that **starts before it but ends at or after it** cannot be cut (its bytes are the
  broker's, CRC included) and holds offsets the archive already has: :class:`FetchDiverged`,
  unless the archive holds none of its offsets (nothing archived yet, or a hole before it: the
  whole batch is kept, as a broker's first segment after DeleteRecords keeps it);
* a batch reaching the **high watermark** or above is never kept (a consumer Fetch is served
  below the HW only, ``FetchIsolation.HIGH_WATERMARK``; this is the guard that data which a
  leader change may still truncate never enters the archive).

Pure: bytes in, a slice and counts out. CRCs are checked by the builder.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka_archive.errors import KafkaArchiveError
from segment_lib.errors import TornTailError
from segment_lib.log_file import iter_batches

__all__ = ["FetchDiverged", "UsableBatches", "usable_batches"]


class FetchDiverged(KafkaArchiveError, RuntimeError):
    """A fetched batch holds offsets below the archive's resume point and after it: the
    partition's log is not the one archived (truncated and rewritten); nothing is stored."""


@dataclass(frozen=True, slots=True)
class UsableBatches:
    """The archivable part of one partition's Fetch answer."""

    #: ``records[start:end]``: whole batches, first one holding or following the asked offset
    start: int
    end: int
    batch_count: int
    #: one past the last offset kept (the asked offset when nothing is kept)
    next_offset: int
    #: batches skipped because they end before the asked offset
    skipped_before: int
    #: a trailing partial batch was left out
    partial_tail: bool
    #: batches left out because they reach the high watermark (never expected)
    above_high_watermark: int

    @property
    def empty(self) -> bool:
        return self.batch_count == 0


def usable_batches(
    records: bytes | memoryview,
    fetch_offset: int,
    high_watermark: int,
    *,
    archived_end: int | None = None,
) -> UsableBatches:
    """The whole batches of ``records`` to archive (module docstring). ``archived_end``: one
    past the last offset the archive holds (``None``: nothing yet); below ``fetch_offset``
    after a hole (the log start moved past it), a batch across ``fetch_offset`` that starts at
    or after ``archived_end`` is kept whole.

    Raises:
        FetchDiverged: a batch starts before ``fetch_offset`` and before ``archived_end`` and
            ends at or after ``fetch_offset``.
        SegmentError: malformed bytes (CRCs are checked by the builder).
    """
    view = memoryview(records)
    start = end = -1
    count = skipped = above = 0
    next_offset = fetch_offset
    partial = False
    try:
        for h in iter_batches(view, verify_crc=False):
            if h.last_offset < next_offset and count == 0:
                skipped += 1
                continue
            if (
                count == 0
                and h.base_offset < next_offset
                and archived_end is not None
                and h.base_offset < archived_end
            ):
                raise FetchDiverged(
                    f"a fetched batch holds offsets {h.base_offset}..{h.last_offset}, across "
                    f"the archive's resume point {fetch_offset}: the partition's log is not "
                    "the one archived (truncated and rewritten?)"
                )
            if h.last_offset >= high_watermark:
                above += 1
                break
            if count == 0:
                start = h.position
            end = h.next_position
            count += 1
            next_offset = h.last_offset + 1
    except TornTailError:
        partial = True
    if count == 0:
        start = end = 0
    return UsableBatches(start, end, count, next_offset, skipped, partial, above)
