"""Synthetic ``__consumer_offsets`` records for the offsets follower's unit tests: a
deterministic mix of every record kind the follower meets, spread over partitions with gaps in
the offsets (as transaction markers and compaction leave them)."""

from __future__ import annotations

import random

from kafka_archive.offsets_follower.follower import ReadRecord

from segment_lib.consumer_offsets import (
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
)

#: value versions and what each may carry (Kafka writes v1 with an expire timestamp, else v3/v4)
_VERSIONS = (0, 1, 2, 3, 4)


def synthetic_records(n: int, partitions: int = 3, seed: int = 7) -> list[ReadRecord]:
    """``n`` records in consumer order per partition (interleaved across partitions).

    Kinds: offset commits (key v0/v1, value v0-v4), offset tombstones, group metadata, group
    tombstones, and an undecodable record now and then. Record timestamps grow by 1..3 ms."""
    rng = random.Random(seed)
    next_offset = dict.fromkeys(range(partitions), 0)
    ts = 1_700_000_000_000
    out: list[ReadRecord] = []
    for i in range(n):
        p = rng.randrange(partitions)
        off = next_offset[p]
        next_offset[p] += 1 + (rng.random() < 0.1)  # a gap: a marker or a compacted record
        ts += rng.randint(1, 3)
        group = f"g{rng.randrange(4)}"
        kind = rng.random()
        key: bytes | None
        value: bytes | None
        if kind < 0.75:
            v = rng.choice(_VERSIONS)
            key = encode_offset_commit_key(
                group, f"t{rng.randrange(2)}", rng.randrange(3), version=rng.choice((0, 1))
            )
            value = encode_offset_commit_value(
                offset=i,
                commit_timestamp=ts,
                version=v,
                leader_epoch=5 if v >= 3 else -1,
                expire_timestamp=ts + 1000 if v == 1 else -1,
                metadata=f"m{i}",
            )
        elif kind < 0.83:
            key = encode_offset_commit_key(group, "t0", rng.randrange(3))
            value = None
        elif kind < 0.93:
            key = encode_group_metadata_key(group)
            value = encode_group_metadata_value(
                protocol_type="consumer", generation=i, protocol="range", leader=None
            )
        elif kind < 0.995:
            key = encode_group_metadata_key(group)
            value = None
        else:
            key, value = b"\x00\x01\x00", b"garbage"  # truncated key: undecodable
        out.append(ReadRecord(p, off, ts, key, value))
    return out
