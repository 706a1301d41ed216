"""One vocabulary for counts: what every command, the on-call API and the docs call a number.

A topic's archive holds data records of committed transactions (or of none), records of
aborted transactions, and transaction markers (control records: one per partition and
transaction, never data); compaction leaves offsets without records. So the same range has
several honest counts, and each is shown under its own name, never as bare "records":

* :data:`IN_LOG` - **records in the log**: the data records the archive holds, committed and
  aborted (markers not counted): ``catalog topics``, ``catalog stats``, the page's chart;
* :data:`COMMITTED` - **committed records**: records in the log less the aborted ones (what a
  ``read_committed`` consumer reads): the rows of an ``export``;
* :data:`WILL_SEND` - **records a replay will send**: the committed records of the range
  (after a key filter): what ``replay run`` sends and reports; before it runs, a preview
  knows only the offsets of the range, an upper bound:
* :data:`OFFSETS` - **offsets in the range**: every offset from start to end, records,
  markers and compacted-away offsets alike, the upper bound a preview gives;
* :data:`ABORTED` and :data:`MARKERS` - **aborted records** and **transaction markers**,
  counted apart wherever they are skipped.

:data:`LEGEND` is the table (label -> meaning) the API serves and the user guide prints.
Standard library only (the lowest floor).
"""

from __future__ import annotations

from typing import Final

__all__ = ["ABORTED", "COMMITTED", "IN_LOG", "LEGEND", "MARKERS", "OFFSETS", "WILL_SEND"]

IN_LOG: Final = "records in the log"
COMMITTED: Final = "committed records"
WILL_SEND: Final = "records a replay will send"
OFFSETS: Final = "offsets in the range"
ABORTED: Final = "aborted records"
MARKERS: Final = "transaction markers"

#: label -> what it counts (the user guide's table; ``GET /counts`` of the on-call API)
LEGEND: Final[dict[str, str]] = {
    IN_LOG: "data records the archive holds, of committed and of aborted transactions "
    "(transaction markers not counted): catalog topics, catalog stats, the page's chart",
    COMMITTED: "records in the log less the aborted ones: what a read_committed consumer "
    "reads, the rows of an export",
    WILL_SEND: "the committed records of the range (after a key filter): what a replay sends",
    OFFSETS: "every offset from the range's start to its end: records, aborted records, "
    "transaction markers and offsets compaction emptied; the upper bound a preview gives",
    ABORTED: "records of aborted transactions: in the log, never exported or replayed",
    MARKERS: "the commit/abort markers closing each transaction (one per partition): offsets, "
    "not records",
}
