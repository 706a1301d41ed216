"""Benchmark data: realistic ``.log`` segments written by an independent encoder.

Batches are built with kafka-python's ``DefaultRecordBatchBuilder`` (a producer library's own
magic-2 encoder, independent of ``segment_lib``), then given consecutive base offsets the way a
broker assigns them (``baseOffset`` is outside the CRC, so patching it keeps batches valid).

Records look like application events: a 16-byte key, a JSON-ish value of 100-1000 bytes drawn
from a small vocabulary (so lz4/zstd compress it about as well as they compress real JSON), and
headers on one record in four. Everything is seeded, so a given set of parameters always
produces the same bytes; files are cached under ``.work/bench/`` (git-ignored).
"""

from __future__ import annotations

import atexit
import json
import os
import platform
import random
import shutil
import struct
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from kafka.record.default_records import DefaultRecordBatchBuilder

REPO_ROOT = Path(__file__).resolve().parent.parent
BENCH_DIR = REPO_ROOT / ".work" / "bench"
RESULTS_DIR = Path(__file__).resolve().parent / "results"

#: kafka-python's compression_type ids are Kafka's codec ids
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
_BASE_OFFSET = struct.Struct(">q")  # the first field of every batch; not covered by the CRC
_WORDS = [
    "user",
    "order",
    "click",
    "view",
    "cart",
    "checkout",
    "payment",
    "refund",
    "shipment",
    "warehouse",
    "region",
    "eu",
    "us",
    "apac",
    "mobile",
    "web",
    "android",
    "ios",
    "session",
    "token",
    "price",
    "currency",
    "EUR",
    "USD",
    "quantity",
    "sku",
    "campaign",
    "email",
    "status",
    "ok",
    "failed",
    "pending",
    "retry",
    "latency_ms",
    "12",
    "250",
    "3",
    "17",
    "true",
    "false",
    "null",
]
_FIRST_TIMESTAMP = 1_700_000_000_000


@dataclass(frozen=True, slots=True)
class Segment:
    path: Path
    records: int
    batches: int
    size: int
    codec: str
    batch_bytes: int


def _records(count: int, seed: int) -> Iterator[tuple[int, bytes, bytes, list[tuple[str, bytes]]]]:
    rng = random.Random(seed)
    for i in range(count):
        key = b"user-%011d" % rng.randrange(10**11)  # 16 bytes
        target = rng.randint(100, 1000)
        words = []
        length = 60
        while length < target:
            word = rng.choice(_WORDS)
            words.append(word)
            length += len(word) + 1
        value = json.dumps(
            {
                "id": i,
                "ts": _FIRST_TIMESTAMP + i,
                "kind": rng.choice(_WORDS),
                "body": " ".join(words),
            }
        ).encode()[:target]
        headers: list[tuple[str, bytes]] = []
        if i % 4 == 0:
            headers = [
                ("trace-id", rng.randbytes(16)),
                ("content-type", b"application/json"),
            ]
        yield _FIRST_TIMESTAMP + i * 3, key, value, headers


def build_segment(path: Path, *, records: int, batch_bytes: int, codec: str, seed: int) -> Segment:
    """Write ``records`` records in batches of about ``batch_bytes`` (uncompressed) to ``path``."""
    compression = CODECS[codec]
    out = bytearray()
    next_offset = 0
    batches = 0

    def new_builder() -> Any:
        return DefaultRecordBatchBuilder(
            magic=2, compression_type=compression, is_transactional=False, producer_id=-1,
            producer_epoch=-1, base_sequence=-1, batch_size=batch_bytes,
        )  # fmt: skip

    def flush(builder: Any, count: int) -> None:
        nonlocal next_offset, batches
        batch = builder.build()
        _BASE_OFFSET.pack_into(batch, 0, next_offset)
        out.extend(batch)
        next_offset += count
        batches += 1

    builder = new_builder()
    in_batch = 0
    for timestamp, key, value, headers in _records(records, seed):
        # kafka-python writes the offset it is given as the offset delta
        if builder.append(in_batch, timestamp, key, value, headers) is None:
            flush(builder, in_batch)
            builder = new_builder()
            in_batch = 0
            builder.append(0, timestamp, key, value, headers)
        in_batch += 1
    if in_batch:
        flush(builder, in_batch)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(out)
    tmp.replace(path)
    return Segment(path, records, batches, len(out), codec, batch_bytes)


def ensure_segment(*, records: int, batch_bytes: int, codec: str, seed: int = 1) -> Segment:
    """The cached segment for these parameters, building it on first use."""
    path = BENCH_DIR / f"{codec}-{records}r-{batch_bytes}b-s{seed}.log"
    meta = path.with_suffix(".json")
    if path.exists() and meta.exists():
        info = json.loads(meta.read_text())
        return Segment(path, info["records"], info["batches"], info["size"], codec, batch_bytes)
    seg = build_segment(path, records=records, batch_bytes=batch_bytes, codec=codec, seed=seed)
    meta.write_text(json.dumps({"records": seg.records, "batches": seg.batches, "size": seg.size}))
    return seg


def machine() -> dict[str, Any]:
    """What the figures were measured on (recorded in every result file)."""
    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions: dict[str, str | None] = {}
    for dist in ("aiokafka", "kafka-python", "crc32c", "lz4", "zstandard", "cramjam"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = None
    return {
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "packages": versions,
        "commit": git_commit(),
    }


def git_commit() -> str:
    """The checkout's short commit id, recorded in every result file ("" outside git)."""
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True,
            text=True, check=False,
        ).stdout.strip()  # fmt: skip
    except OSError:
        return ""


def result_file(kind: str, directory: Path = RESULTS_DIR) -> Path:
    """``<directory>/<kind>-<UTC time>.json`` for a new result file; the directory is created."""
    directory.mkdir(parents=True, exist_ok=True)
    return directory / f"{kind}-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}.json"


def cli_environment(scratch: Path, bytecode: bool = True) -> dict[str, str]:
    """The environment of a timed ``kafka-archive`` child: no ``KAFKA_ARCHIVE_*`` setting of
    ours, and (``bytecode``) a private bytecode cache under ``scratch`` as an installed wheel
    has ``.pyc`` files (this sandbox sets ``PYTHONDONTWRITEBYTECODE=1`` and its venv has none:
    every process would compile every module, two to three times the start-up); without it,
    ``PYTHONDONTWRITEBYTECODE=1``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_ARCHIVE_")}
    env["COLUMNS"] = "120"
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(scratch / "pycache")
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTHONPYCACHEPREFIX", None)
    return env


def scratch_dir(prefix: str) -> Path:
    """A new temporary directory, removed when the benchmark's process exits, however it exits
    short of being killed: a replay benchmark leaves ~1 GB of segments, archive and catalog
    behind, and a dozen forgotten runs once filled the disk that CI installs onto."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def write_rolled_partitions(
    root: Path, partitions: int, segments: int, topic: str = "bench"
) -> list[str]:
    """``partitions`` partitions of ``topic`` with ``segments`` small rolled segments each
    (about 2 kB, 200-byte values), written by the broker-faithful writer under ``root``;
    returns the log dirs."""
    from kafka_archive_dev.writer import BrokerWriter, ManualClock, WriteRecord

    clock = ManualClock(1_700_000_000_000)
    broker = BrokerWriter(root / "broker-1", 1, clock=clock)
    for p in range(partitions):
        pw = broker.partition(topic, p, segment_bytes=2_000, index_interval_bytes=500)
        n = 0
        while len(list(pw.dir.glob("*.log"))) <= segments:  # rolled ones + the active one
            clock.advance(10)
            pw.append([WriteRecord(f"k{n}".encode(), b"v" * 200, (), clock.now_ms)])
            n += 1
        pw.roll()
    broker.close()
    return [str(d) for d in broker.log_dirs]
