"""segment_lib's compiled helpers, on the terms the extractor's fast path uses them.

:data:`summarize` (``segment_lib._summary.summarize_v2``: one pass folding magic-2 batches into
running aggregates) and :data:`scan_v2` (``segment_lib._speedups.scan_batches_v2``: the batch
headers) are ``None`` when not built or when the CRC-32C they would use is the slow table
implementation; the extractor then takes the next path (:mod:`kafka_archive.catalog.extract.
fast_path`). Tests and benchmarks set them to ``None`` to exercise those paths: the extractor
reads them from this module when it needs them.
"""

from __future__ import annotations

from collections.abc import Callable

from segment_lib.records import BatchHeader

__all__ = ["NO_EPOCH", "scan_v2", "summarize"]

#: "no epoch run open yet" (a partition leader epoch is an int32)
NO_EPOCH = -(1 << 40)

_ScanV2 = Callable[[memoryview, int, int, bool, int], tuple[list[BatchHeader], int, str]]
scan_v2: _ScanV2 | None = None
try:  # the compiled magic-2 scan, on the terms iter_batches uses it: with a hardware CRC
    from segment_lib._speedups import CRC32C_IMPL as _crc_impl
    from segment_lib._speedups import scan_batches_v2 as _scan_compiled

    if _crc_impl != "table":
        scan_v2 = _scan_compiled
except ImportError:  # pragma: no cover - depends on the build
    pass

#: the fast path's running aggregates, as segment_lib._summary.summarize_v2 carries them
_State = tuple[int, ...]
_Summarize = Callable[
    [memoryview, int, int, int, bool, int | None, _State, int, int],
    tuple[int, str, int | None, _State, list[tuple[int, ...]], list[tuple[int, ...]],
          list[tuple[int, ...]]],
]  # fmt: skip
summarize: _Summarize | None = None
try:  # the compiled one-pass summary (same acceptance as the scan; hardware CRC only)
    from segment_lib._summary import CRC32C_IMPL as _summary_impl
    from segment_lib._summary import NO_EPOCH as _SUMMARY_NO_EPOCH
    from segment_lib._summary import summarize_v2 as _summarize_compiled

    if _summary_impl != "table" and _SUMMARY_NO_EPOCH == NO_EPOCH:
        summarize = _summarize_compiled
except ImportError:  # pragma: no cover - depends on the build
    pass
