"""Settings shared by the catalog's write side (extraction, build) and its read side (queries).

They shape the rows a build writes, so the queries reading those rows must agree with them:
the histogram's bucket width (``catalog stats`` counts per whole bucket), the time-index
interval size (the most one ``offsets`` answer reads per partition). Kept apart from both sides
so that neither imports the other for them.
"""

from __future__ import annotations

__all__ = [
    "CONSUMER_OFFSETS_TOPIC",
    "DEFAULT_CHUNK_BYTES",
    "DEFAULT_HISTOGRAM_MS",
    "DEFAULT_INTERVAL_BYTES",
]

#: default size limit of one time-index interval (the most ``offsets`` reads per partition)
DEFAULT_INTERVAL_BYTES = 1 << 20
#: default width of a histogram bucket: one minute
DEFAULT_HISTOGRAM_MS = 60_000
#: ranged reads of this size stream an object through the extractor
DEFAULT_CHUNK_BYTES = 8 << 20
#: the topic whose segments also yield offset commits and transaction markers
CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"
