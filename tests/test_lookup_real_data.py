"""Broker-equivalent lookups on log dirs written by real Kafka brokers, checked by brute force."""

from __future__ import annotations

import random
from pathlib import Path

from segment_lib.errors import InvalidFileNameError
from segment_lib.log_file import open_log
from segment_lib.lookup import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    find_offset,
    find_offset_for_timestamp,
)
from segment_lib.partition import PartitionView


def _partitions(root: Path) -> list[PartitionView]:
    views = []
    for d in sorted(p for p in root.rglob("*") if p.is_dir()):
        try:
            view = PartitionView.open(d)
        except InvalidFileNameError:
            continue
        if view.segments:
            views.append(view)
    return views


def _all_records(view: PartitionView) -> list[tuple[int, int]]:
    out = []
    for seg in view.segments:
        with open_log(seg.log) as log:
            for batch in log.batches(allow_torn_tail=view.is_active(seg)):
                out.extend((r.offset, r.timestamp) for r in log.records(batch))
    return out


def test_timestamp_and_offset_lookups_equal_brute_force_on_real_partitions(
    real_broker_data: Path,
) -> None:
    rng = random.Random(7)
    checked = 0
    views = _partitions(real_broker_data)
    assert len(views) > 50, "expected the fixture tree to hold many partitions"
    for view in views:
        records = _all_records(view)
        if not records:
            continue
        stamps = sorted({t for _, t in records if t >= 0})
        targets = [0]
        if stamps:
            targets += [stamps[0] - 1, stamps[-1], stamps[-1] + 1]
            targets += rng.sample(stamps, min(15, len(stamps)))
            targets += [t + 1 for t in rng.sample(stamps, min(5, len(stamps)))]
        for target in targets:
            expected = next(((o, t) for o, t in records if t >= target), (-1, -1))
            answer = find_offset_for_timestamp(view, target)
            assert (answer.offset, answer.timestamp) == expected, (view.path, target)
            if answer.found:
                assert answer.segment is not None
                with open_log(answer.segment.log) as log:
                    batch = next(log.batches(answer.position, allow_torn_tail=True))
                    assert batch.base_offset <= answer.offset <= batch.last_offset
            checked += 1
        for offset, _ in rng.sample(records, min(10, len(records))):
            loc = find_offset(view, offset)
            assert loc is not None and loc.batch_base_offset <= offset <= loc.batch_last_offset
        assert find_offset(view, records[-1][0] + 1) is None
        latest = find_offset_for_timestamp(view, LATEST_TIMESTAMP)
        assert latest.offset == view.log_end_offset > records[-1][0]
        assert find_offset_for_timestamp(view, EARLIEST_TIMESTAMP).offset == records[0][0]
    assert checked > 500
