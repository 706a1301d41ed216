"""The metadata decoder over every ``__cluster_metadata`` file real brokers wrote (the fixtures).

Every record decodes to a known type, except the 18 PartitionRecord v1 values of three
``apache__kafka/core/data`` log dirs: Kafka's own test data written by a pre-release build of
3.7, whose ``directories`` field had another layout. kafka-dump-log 4.4 refuses exactly those
too ("Failed to deserialize record with type 3"); tests/real_kafka/test_metadata_dump_vs_kafka.py
compares the two tools' output on all of these files.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from segment_lib.cluster_metadata import UNKNOWN_TYPE, iter_metadata_file

pytestmark = pytest.mark.fixtures


def metadata_files(root: Path) -> list[Path]:
    """Every metadata ``.log`` segment and ``.checkpoint`` snapshot under ``root``."""
    found = [
        p
        for p in root.rglob("*")
        if p.is_file()
        and "__cluster_metadata-" in p.parent.name
        and (p.suffix == ".log" or p.name.endswith(".checkpoint"))
    ]
    found += [p for p in root.rglob("bootstrap.checkpoint") if p.is_file()]
    return sorted(set(found))


def test_every_fixture_metadata_record_decodes(real_broker_data: Path) -> None:
    files = metadata_files(real_broker_data)
    assert files, "no __cluster_metadata files among the fixtures"
    types: Counter[str] = Counter()
    unknown = []
    for path in files:
        for entry in iter_metadata_file(path, allow_torn_tail=True):
            if entry.record is None:
                assert entry.control in {
                    "LEADER_CHANGE",
                    "SNAPSHOT_HEADER",
                    "SNAPSHOT_FOOTER",
                    "KRAFT_VERSION",
                    "KRAFT_VOTERS",
                }
                continue
            types[entry.record.type_name] += 1
            if entry.record.type_name == UNKNOWN_TYPE:
                unknown.append((path, entry.offset, entry.record))
    assert types["TOPIC_RECORD"] > 0 and types["PARTITION_RECORD"] > 0
    assert types["REGISTER_BROKER_RECORD"] > 0 and types["FEATURE_LEVEL_RECORD"] > 0
    for path, offset, record in unknown:
        where = f"{path} offset {offset}: {record.error}"
        assert "apache__kafka/core/data" in path.as_posix(), where
        assert (record.type_id, record.version) == (3, 1), where
        assert record.error is not None and "directories" in record.error, where
    assert len(unknown) == 18
