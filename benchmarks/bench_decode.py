"""Full record decode, CRC included: segment_lib vs aiokafka's compiled decoder vs kafka-python.

Each contender reads the same segment bytes (already in memory) from start to end, verifies
every batch's CRC-32C, decompresses, builds one object per record and touches its offset,
timestamp, key, value and headers:

* ``ours``: ``segment_lib.log_file.iter_batches(buf, verify_crc=True)`` + ``decode_batch``,
  yielding :class:`segment_lib.records.Record` tuples (the compiled decoder when built);
* ``aiokafka``: ``aiokafka.record.memory_records.MemoryRecords`` (its Cython ``_crecords``),
  ``validate_crc()`` on every batch, then iterating its records;
* ``kafka-python``: ``kafka.record.MemoryRecords`` (pure Python), the same way.

Runs are interleaved (the order rotates every repetition) and the median of the repetitions is
reported; the figures that matter are the throughput ratios measured in the same run, on the
same bytes. Usage::

    .venv/bin/python benchmarks/bench_decode.py                    # defaults below
    .venv/bin/python benchmarks/bench_decode.py --records 500000 --codecs none,lz4,zstd --reps 7
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import _data
from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords
from kafka.record import MemoryRecords as KpMemoryRecords

from segment_lib import record_batch
from segment_lib.log_file import decode_batch, iter_batches
from segment_lib.record_batch import _decode_records_python

Runner = Callable[[bytes], int]


def run_ours(buf: bytes) -> int:
    n = 0
    for header in iter_batches(buf, verify_crc=True):
        for r in decode_batch(buf, header):
            r.offset, r.timestamp, r.key, r.value, r.headers  # noqa: B018 - touch every field
            n += 1
    return n


def _run_memory_records(records_cls: Any, buf: bytes) -> int:
    n = 0
    mr = records_cls(buf)
    while True:
        batch = mr.next_batch()
        if batch is None:
            return n
        if not batch.validate_crc():
            raise RuntimeError(f"CRC mismatch in batch at offset {batch.base_offset}")
        for r in batch:
            r.offset, r.timestamp, r.key, r.value, r.headers  # noqa: B018
            n += 1


def run_aiokafka(buf: bytes) -> int:
    return _run_memory_records(AioMemoryRecords, buf)


def run_kafka_python(buf: bytes) -> int:
    return _run_memory_records(KpMemoryRecords, buf)


def cross_check(buf: bytes) -> None:
    """Before timing: all contenders must see the same records (else the race is meaningless)."""
    ours = [
        (r.offset, r.timestamp, r.key, r.value, [tuple(h) for h in r.headers])
        for h in iter_batches(buf)
        for r in decode_batch(buf, h)
    ]
    for cls in (AioMemoryRecords, KpMemoryRecords):
        theirs: list[tuple[Any, ...]] = []
        mr = cls(buf)
        while (batch := mr.next_batch()) is not None:
            theirs.extend(
                (r.offset, r.timestamp, r.key, r.value, [tuple(h) for h in r.headers])
                for r in batch
            )
        if theirs != ours:
            raise SystemExit(f"{cls.__module__} decodes different records than segment_lib")


def time_once(fn: Runner, buf: bytes, expected: int) -> float:
    gc.collect()
    t0 = time.perf_counter()
    n = fn(buf)
    elapsed = time.perf_counter() - t0
    if n != expected:
        raise SystemExit(f"{fn.__name__} decoded {n} records, expected {expected}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=200_000, help="records per segment")
    parser.add_argument("--batch-kib", type=int, default=16, help="uncompressed batch size")
    parser.add_argument("--codecs", default="none,lz4,zstd", help="comma-separated codecs")
    parser.add_argument("--reps", type=int, default=5, help="repetitions (median reported)")
    parser.add_argument("--no-kafka-python", action="store_true", help="skip the slow one")
    parser.add_argument("--out", help="result JSON (default benchmarks/results/decode-*.json)")
    args = parser.parse_args()

    compiled = record_batch._decode is not _decode_records_python
    contenders: dict[str, Runner] = {"ours": run_ours, "aiokafka": run_aiokafka}
    if not args.no_kafka_python:
        contenders["kafka-python"] = run_kafka_python

    results = []
    for codec in args.codecs.split(","):
        seg = _data.ensure_segment(
            records=args.records, batch_bytes=args.batch_kib * 1024, codec=codec
        )
        buf = seg.path.read_bytes()
        cross_check(buf)
        times: dict[str, list[float]] = {name: [] for name in contenders}
        names = list(contenders)
        for rep in range(args.reps):
            order = names[rep % len(names) :] + names[: rep % len(names)]
            for name in order:
                times[name].append(time_once(contenders[name], buf, seg.records))
        median = {name: statistics.median(ts) for name, ts in times.items()}
        row: dict[str, Any] = {
            "codec": codec,
            "records": seg.records,
            "batches": seg.batches,
            "bytes": seg.size,
            "median_seconds": median,
            "all_seconds": times,
            "mb_per_s": {n: seg.size / 1e6 / t for n, t in median.items()},
            "records_per_s": {n: seg.records / t for n, t in median.items()},
            # throughput ratio = their time / our time (>1: we are faster)
            "ours_over_aiokafka": median["aiokafka"] / median["ours"],
        }
        if "kafka-python" in median:
            row["ours_over_kafka_python"] = median["kafka-python"] / median["ours"]
        results.append(row)

    header = f"{'codec':6} {'MB':>7} {'records':>8} | " + " | ".join(
        f"{n:>12} MB/s  krec/s" for n in contenders
    )
    print(f"record decode incl. CRC, median of {args.reps}; compiled decoder: {compiled}")
    print(header + " | ours/aiokafka  ours/kafka-python")
    for row in results:
        cells = " | ".join(
            f"{row['mb_per_s'][n]:>17.0f} {row['records_per_s'][n] / 1e3:7.0f}" for n in contenders
        )
        kp = row.get("ours_over_kafka_python")
        print(
            f"{row['codec']:6} {row['bytes'] / 1e6:7.1f} {row['records']:8d} | {cells} | "
            f"{row['ours_over_aiokafka']:12.2f}x  {'' if kp is None else f'{kp:15.1f}x'}"
        )

    out = args.out or str(_data.result_file("decode"))
    with open(out, "w") as f:
        json.dump(
            {
                "benchmark": "decode",
                "args": vars(args),
                "compiled_decoder": compiled,
                "machine": _data.machine(),
                "results": results,
            },
            f,
            indent=2,
        )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
