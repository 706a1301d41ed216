"""Batch-header scan with CRC verification vs a raw read of the same file.

For each batch size, one segment of about ``--mib`` MiB (uncompressed batches built by
kafka-python, see ``_data.py``) is read from the page cache, repeatedly and interleaved, by:

* ``raw``: the baseline -- reading every byte of the file into memory: ``readinto`` a reused
  1 MiB buffer until EOF (unbuffered file object). This is the cheapest way to bring the bytes
  into user space, so the ratio against it is the overhead of looking at them;
* ``scan``: ``segment_lib.log_file.open_log(path)`` (read-only ``mmap``) then every
  ``BatchHeader`` from ``LogBuffer.batches()``, each batch's CRC-32C verified -- what the
  archiver and the catalog do for every segment;
* ``scan_mem`` (context): ``iter_batches(bytes, verify_crc=True)`` over bytes already in memory,
  i.e. the parsing + CRC cost without any I/O or page mapping;
* ``scan_python`` (context): ``scan`` with the compiled scan switched off, i.e. the pure-Python
  reference path of ``iter_batches`` (``crc32c`` package per batch) -- what ``scan`` costs
  without a C compiler;
* ``crc_only`` (context): map the file and run the ``crc32c`` package over each batch's
  CRC-covered span (spans computed beforehand) from a Python loop, nothing else -- the floor of
  a scan whose loop is in Python;
* ``map_crc`` (the floor): map the file and checksum all of it with one call of the compiled
  CRC-32C (``segment_lib._speedups.crc32c``) -- touching every mapped page once at full CRC
  speed, which any mmap-based CRC-verifying scan must do;
* ``read_whole`` (the gentler reference): ``f.read()`` of the whole file into a fresh ``bytes``
  object, the other common meaning of "reading the file into memory" (pays for allocating and
  faulting in new memory, so it is much slower than ``raw``).

The reported ratio is ``scan`` throughput / ``raw`` throughput (target: >= 0.5 for batches of
16 KiB and more). Usage::

    .venv/bin/python benchmarks/bench_scan.py
    .venv/bin/python benchmarks/bench_scan.py --batch-kib 16,64 --mib 128 --reps 21
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import mmap
import pstats
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _data
from crc32c import crc32c

from segment_lib import log_file
from segment_lib.log_file import iter_batches, open_log
from segment_lib.record_batch import CRC_START

try:
    from segment_lib import _speedups
except ImportError:  # pragma: no cover - depends on the build
    _speedups = None  # type: ignore[assignment]

CHUNK = 1 << 20


def run_raw(path: Path, _buf: bytes) -> int:
    chunk = bytearray(CHUNK)
    n = 0
    with open(path, "rb", buffering=0) as f:
        while got := f.readinto(chunk):
            n += got
    return n


def run_read_whole(path: Path, _buf: bytes) -> int:
    with open(path, "rb") as f:
        return len(f.read())


_SPANS: dict[Path, list[tuple[int, int, int]]] = {}


def run_crc_only(path: Path, _buf: bytes) -> int:
    n = 0
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        view = memoryview(mapped)
        for start, end, crc in _SPANS[path]:
            if crc32c(view[start:end]) != crc:
                raise SystemExit(f"CRC mismatch at byte {start}")
            n = end
        view.release()
    return n


def run_scan(path: Path, _buf: bytes) -> int:
    n = 0
    with open_log(path) as log:
        for header in log.batches():
            n += header.size
    return n


def run_scan_mem(_path: Path, buf: bytes) -> int:
    n = 0
    for header in iter_batches(buf, verify_crc=True):
        n += header.size
    return n


def run_scan_python(path: Path, buf: bytes) -> int:
    saved = log_file._scan_v2
    log_file._scan_v2 = None  # the pure-Python reference path
    try:
        return run_scan(path, buf)
    finally:
        log_file._scan_v2 = saved


def run_map_crc(path: Path, _buf: bytes) -> int:
    if _speedups is None:
        return 0
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        view = memoryview(mapped)
        _speedups.crc32c(view)
        n = len(view)
        view.release()
    return n


CONTENDERS: dict[str, Callable[[Path, bytes], int]] = {
    "raw": run_raw,
    "scan": run_scan,
    "scan_mem": run_scan_mem,
    "scan_python": run_scan_python,
    "crc_only": run_crc_only,
    "map_crc": run_map_crc,
    "read_whole": run_read_whole,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch-kib", default="1,4,16,64,256", help="comma-separated sizes")
    parser.add_argument("--mib", type=int, default=64, help="approximate segment size")
    parser.add_argument("--reps", type=int, default=15, help="repetitions (median reported)")
    parser.add_argument("--out", help="result JSON (default benchmarks/results/scan-*.json)")
    parser.add_argument(
        "--profile", action="store_true", help="also print a cProfile of one scan per size"
    )
    args = parser.parse_args()
    scan_path = "python" if log_file._scan_v2 is None else "compiled"
    crc_impl = "none (extension not built)" if _speedups is None else _speedups.CRC32C_IMPL

    results = []
    for kib in (int(k) for k in args.batch_kib.split(",")):
        # records average ~600 bytes on the wire; size the segment by record count
        records = args.mib * (1 << 20) // 600
        seg = _data.ensure_segment(records=records, batch_bytes=kib * 1024, codec="none")
        buf = seg.path.read_bytes()
        _SPANS[seg.path] = [
            (h.position + CRC_START, h.position + h.size, h.crc) for h in iter_batches(buf)
        ]
        times: dict[str, list[float]] = {name: [] for name in CONTENDERS}
        names = list(CONTENDERS)
        for rep in range(args.reps):
            for name in names[rep % len(names) :] + names[: rep % len(names)]:
                gc.collect()
                t0 = time.perf_counter()
                n = CONTENDERS[name](seg.path, buf)
                times[name].append(time.perf_counter() - t0)
                if n != seg.size and name not in ("crc_only", "map_crc"):
                    raise SystemExit(f"{name} covered {n} bytes of {seg.size}")
        median = {name: statistics.median(ts) for name, ts in times.items()}
        results.append(
            {
                "batch_kib": kib,
                "batches": seg.batches,
                "bytes": seg.size,
                "median_seconds": median,
                "all_seconds": times,
                "mb_per_s": {n: seg.size / 1e6 / t for n, t in median.items()},
                "batches_per_s": {n: seg.batches / t for n, t in median.items()},
                "scan_over_raw": median["raw"] / median["scan"],
                "scan_mem_over_raw": median["raw"] / median["scan_mem"],
                "scan_python_over_raw": median["raw"] / median["scan_python"],
                "crc_only_over_raw": median["raw"] / median["crc_only"],
                "map_crc_over_raw": median["raw"] / median["map_crc"],
                "scan_over_read_whole": median["read_whole"] / median["scan"],
            }
        )
        if args.profile:
            profiler = cProfile.Profile()
            profiler.runcall(run_scan, seg.path, buf)
            print(f"--- cProfile of one scan, {kib} KiB batches ---")
            pstats.Stats(profiler).sort_stats("tottime").print_stats(8)

    print(
        f"batch scan with CRC-32C vs raw read (1 MiB readinto), median of {args.reps}; "
        f"scan path: {scan_path}, CRC-32C: {crc_impl}"
    )
    print(
        f"{'batch':>7} {'batches':>8} {'MB':>6} | {'MB/s: raw':>9} {'scan':>6} {'scan_mem':>8} "
        f"{'scan_py':>7} {'crc_only':>8} {'map_crc':>7} {'read_whole':>10} | {'scan/raw':>8} "
        f"{'scan_py/raw':>11} {'map_crc/raw':>11} {'scan/read_whole':>15} | {'us/batch':>8}"
    )
    for row in results:
        mbs = row["mb_per_s"]
        print(
            f"{row['batch_kib']:>5}Ki {row['batches']:8d} {row['bytes'] / 1e6:6.1f} | "
            f"{mbs['raw']:9.0f} {mbs['scan']:6.0f} {mbs['scan_mem']:8.0f} "
            f"{mbs['scan_python']:7.0f} {mbs['crc_only']:8.0f} {mbs['map_crc']:7.0f} "
            f"{mbs['read_whole']:10.0f} | "
            f"{row['scan_over_raw']:7.2f}x {row['scan_python_over_raw']:10.2f}x "
            f"{row['map_crc_over_raw']:10.2f}x {row['scan_over_read_whole']:14.2f}x | "
            f"{row['median_seconds']['scan'] / row['batches'] * 1e6:8.2f}"
        )
    out = args.out or str(_data.result_file("scan"))
    payload: dict[str, Any] = {
        "benchmark": "scan",
        "args": vars(args),
        "scan_path": scan_path,
        "crc32c_impl": crc_impl,
        "machine": _data.machine(),
        "results": results,
    }
    with open(out, "w") as f:
        json.dump(payload, f, indent=2)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
