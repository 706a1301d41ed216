"""A source topic that grows between two archive runs (re-run tests, issue 20 point 3).

One partition of ``t`` (value ``v<offset>``, batches of 10 records, segments of 40), written by
segment_lib's broker writer, archived and cataloged; :meth:`Source.archive` with a larger count
writes the same bytes plus the new records and archives again (the old segments are already
archived, the new ones are added). Offsets from 120 on are :data:`LATER` ms later than the
first ones, so an age policy can prune offsets 0..119 and keep the rest.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from kafka_archive.archive.runner import run_archive
from kafka_archive.catalog.build import build_catalog
from kafka_archive.catalog.db import Catalog, open_catalog
from kafka_archive.store import ObjectStore, open_store
from kafka_archive_dev.writer.broker_writer import BrokerWriter
from kafka_archive_dev.writer.encode import WriteRecord

CLUSTER, TOPIC = "east", "t"
T0 = 1_700_000_000_000
#: the records from offset 120 on are this much later
LATER = 10_000_000


def _write(root: Path, n: int) -> list[Path]:
    """Offsets 0..n-1, closed (the last segment rolled, so every record is archivable)."""
    broker = BrokerWriter(root, 1, cluster_id="src-cluster-id", offsets_partitions=1)
    pw = broker.partition(TOPIC, 0)
    for i in range(0, n, 10):
        ts = T0 + i + (LATER if i >= 120 else 0)
        records = [WriteRecord(f"k{i + j}".encode(), f"v{i + j}".encode(), (), ts + j)
                   for j in range(min(10, n - i))]  # fmt: skip
        pw.append(records)
        if (i + 10) % 40 == 0:
            pw.roll()
    if n % 40:
        pw.roll()
    broker.close()
    return broker.log_dirs


@dataclass
class Source:
    root: Path
    store: ObjectStore
    catalog: Catalog
    db_url: str

    def archive(self, n: int) -> None:
        """Archive (and catalog) offsets 0..n-1: the same bytes as before plus what is new."""
        dirs = _write(self.root / f"broker-{n}", n)
        run_archive(cluster=CLUSTER, broker_id=1, log_dirs=[str(d) for d in dirs], store=self.store)
        build_catalog(self.catalog, self.store.uri, cluster=CLUSTER)

    def close(self) -> None:
        self.catalog.close()


def growing_source(root: Path, n: int = 120) -> Source:
    """Offsets 0..n-1 archived under ``root`` (store ``root/store``, catalog
    ``root/catalog.db``)."""
    store = open_store(str(root / "store"))
    db_url = f"sqlite:///{root / 'catalog.db'}"
    source = Source(root, store, open_catalog(db_url, create=True), db_url)
    source.archive(n)
    return source


def want(n: int) -> list[bytes | None]:
    """The values of offsets 0..n-1, in order."""
    return [f"v{i}".encode() for i in range(n)]


def command(src: Source, bootstrap: str, target: str, *extra: str) -> list[str]:
    """``replay run`` in the runbook's form (from earliest, no --to), with ``--json``."""
    return [
        "replay", "run", "--cluster", CLUSTER, "--topic", TOPIC, "--from", "earliest",
        "--target", bootstrap, "--target-topic", target,
        "--store", src.store.uri, "--db", src.db_url, "--json", *extra,
    ]  # fmt: skip


def killed_replay(src: Source, bootstrap: str, target: str) -> subprocess.CompletedProcess[str]:
    """The request of :func:`command` (in transactions of 10 records) run by the replay service
    in a child process that kills itself (SIGKILL) after two committed transactions (offsets
    0..19), the third's records (20..29) flushed to the target and left open."""
    request = {"cluster": CLUSTER, "topic": TOPIC, "from": "earliest", "target_topic": target,
               "target": bootstrap, "txn_max_records": 10}  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "tests.support.replay_service_child", src.store.uri, src.db_url,
         json.dumps(request), "--kill-at", "before_progress", "--nth", "3"],
        cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=240,
    )  # fmt: skip
