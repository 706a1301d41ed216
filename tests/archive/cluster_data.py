"""Deterministic multi-broker log dirs for the archive tests (``kafka_archive_dev.writer``).

:func:`build_cluster` writes three brokers as a running cluster leaves them (active segments
open, checkpoints written):

* broker 1 (log dirs ``data-a``, ``data-b``) leads ``orders`` 0-1 (4 KiB segments, zstd/gzip
  codecs, an idempotent producer), the compacted ``state-0``, and ``__consumer_offsets`` 3 (group
  commits, 2 KiB segments);
* broker 2 (``data``) follows ``orders`` with 3000-byte segments and 1500-byte fetches, so its
  segments are rolled at other offsets than the leader's, and leads ``payments-0`` (transactions,
  some aborted, so ``.txnindex`` files exist);
* broker 3 (``data``) follows ``orders-0`` with the leader's segment size and fetches of 700
  bytes.

Everything is a pure function of ``phase`` (``ManualClock``, fixed data), so the tree of phase
2 extends phase 1's: the same rolled segments byte for byte, the phase-1 active segments rolled
with more data. :func:`sync_tree` moves a live directory from one phase to the next the way a
broker changes its files (unchanged files keep their inode and mtime). ``compact=True`` runs one
cleaning round over ``state-0`` at the end (a compaction rewrite: same base offsets, new bytes).
"""

from __future__ import annotations

import filecmp
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from kafka_archive_dev.writer.broker_writer import BrokerWriter
from kafka_archive_dev.writer.encode import WriteRecord
from kafka_archive_dev.writer.partition_writer import ManualClock

from segment_lib.compression import Codec
from segment_lib.partition import PartitionView

CLUSTER = "testcluster"


@dataclass
class Cluster:
    root: Path
    log_dirs: dict[int, list[Path]] = field(default_factory=dict)

    def dirs(self, broker: int) -> list[str]:
        return [str(d) for d in self.log_dirs[broker]]

    def all_targets(self) -> list[tuple[int, str]]:
        return [(b, str(d)) for b, ds in sorted(self.log_dirs.items()) for d in ds]

    def partition_dirs(self) -> list[tuple[int, Path]]:
        out = []
        for b, ds in sorted(self.log_dirs.items()):
            for d in ds:
                for p in sorted(d.iterdir()):
                    if p.is_dir():
                        out.append((b, p))
        return out


def build_cluster(root: Path, *, phase: int = 1, compact: bool = False) -> Cluster:
    clock = ManualClock(1_700_000_000_000)
    b1 = BrokerWriter(
        root / "broker-1",
        1,
        log_dirs=("data-a", "data-b"),
        clock=clock,
        offsets_partitions=8,
        cluster_id="TestClusterId0000000001",
    )
    b2 = BrokerWriter(
        root / "broker-2",
        2,
        log_dirs=("data",),
        clock=clock,
        offsets_partitions=8,
        cluster_id="TestClusterId0000000001",
    )
    b3 = BrokerWriter(
        root / "broker-3",
        3,
        log_dirs=("data",),
        clock=clock,
        offsets_partitions=8,
        cluster_id="TestClusterId0000000001",
    )
    orders = [b1.partition("orders", p, segment_bytes=4096) for p in range(2)]
    state = b1.partition("state", 0, segment_bytes=2048)
    payments = b2.partition("payments", 0, segment_bytes=3072)
    b1.consumer_offsets(3, segment_bytes=2048)
    n = 120 * phase
    codecs = (Codec.NONE, Codec.GZIP, Codec.ZSTD)
    for i in range(n):
        clock.advance(1000)
        for p, pw in enumerate(orders):
            pw.append(
                [WriteRecord(f"order-{p}-{i}".encode(), b"x" * (30 + i % 17))],
                codec=codecs[i % 3],
                producer_id=500 + p,
                producer_epoch=0,
            )
        # half the keys repeat (compaction drops their older values), half are unique
        skey = f"key-{i % 7}" if i % 2 else f"unique-{i}"
        state.append([(skey.encode(), f"value-{i}".encode() * 3)])
        if i % 5 == 0:
            txn = payments.begin_transaction(900 + i % 2)
            txn.append([(f"pay-{i}".encode(), b"p" * 40)])
            txn.append([(f"pay-{i}b".encode(), b"q" * 40)])
            if i % 3 == 0:
                txn.abort(coordinator_epoch=1)
            else:
                txn.commit(coordinator_epoch=1)
        if i % 3 == 0:
            b1.commit_offsets("group-a", {("orders", 0): i, ("orders", 1): i})
    for pw in orders:
        b2.replicate(pw, fetch_max_bytes=1500, segment_bytes=3000)
    b3.replicate(orders[0], fetch_max_bytes=700, segment_bytes=4096)
    if compact:
        b1.compact("state", 0)
    for b in (b1, b2, b3):
        # active indexes are not preallocated to 10 MiB: they are never archived anyway
        b.close(active=True, preallocate_indexes=False)
    return Cluster(root, {b.broker_id: list(b.log_dirs) for b in (b1, b2, b3)})


def sync_tree(src: Path, dst: Path) -> None:
    """Make ``dst`` hold exactly ``src``'s files, touching only files that differ (a changed
    file is replaced by rename, as the broker's cleaner does; unchanged files keep inode and
    mtime)."""
    for dirpath, _dirnames, filenames in os.walk(src):
        rel = Path(dirpath).relative_to(src)
        (dst / rel).mkdir(parents=True, exist_ok=True)
        for name in filenames:
            s, d = Path(dirpath) / name, dst / rel / name
            if d.exists() and filecmp.cmp(s, d, shallow=False):
                continue
            tmp = d.with_name(d.name + ".sync-tmp")
            shutil.copyfile(s, tmp)
            os.replace(tmp, d)
    for dirpath, _dirnames, filenames in os.walk(dst, topdown=False):
        rel = Path(dirpath).relative_to(dst)
        for name in filenames:
            if not (src / rel / name).exists():
                (Path(dirpath) / name).unlink()
        if not (src / rel).exists():
            Path(dirpath).rmdir()


def rolled_segments(partition_dir: Path) -> list[tuple[int, int, Path]]:
    """``(base, end, .log path)`` of the rolled segments of a partition directory."""
    view = PartitionView.open(partition_dir)
    segs = view.segments
    return [(s.base_offset, segs[i + 1].base_offset, s.log) for i, s in enumerate(segs[:-1])]
