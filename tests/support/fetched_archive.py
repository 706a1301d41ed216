"""Reading a fetch-made archive next to a real broker's files (tests/real_kafka/test_fetch_*).

Batches by base offset from a ``.log``'s bytes or a partition directory, a partition's
manifests in base offset order, and a run of ``kafka-archive archive fetch`` in this process
returning its ``--json`` report.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kafka_archive.archive.manifest import SegmentManifest, iter_manifests
from kafka_archive.cli import _register_groups, app
from kafka_archive.store import ObjectStore
from typer.testing import CliRunner

from segment_lib.log_file import open_log


def log_batches(data: bytes) -> dict[int, bytes]:
    """base offset -> batch bytes of a ``.log``'s bytes."""
    with tempfile.NamedTemporaryFile(suffix=".log") as f:
        f.write(data)
        f.flush()
        with open_log(f.name) as lb:
            return {
                h.base_offset: bytes(lb.data[h.position : h.next_position])
                for h in lb.batches(allow_torn_tail=True)
            }


def broker_batches(pdir: Path) -> dict[int, bytes]:
    """base offset -> batch bytes of every ``.log`` of a broker's partition directory."""
    out: dict[int, bytes] = {}
    for log in sorted(pdir.glob("*.log")):
        out.update(log_batches(log.read_bytes()))
    return out


def partition_manifests(
    store: ObjectStore, cluster: str, topic: str, partition: int
) -> list[SegmentManifest]:
    return sorted(iter_manifests(store, cluster, topic, partition), key=lambda m: m.base_offset)


def archived_batches(store: ObjectStore, ms: Sequence[SegmentManifest]) -> dict[int, bytes]:
    """base offset -> batch bytes of the manifests' ``.log`` files."""
    out: dict[int, bytes] = {}
    for m in ms:
        out.update(log_batches(store.get_bytes(m.log_file.key)))
    return out


def fetch_cli(cluster: str, bootstrap: str, store_uri: str, *topics: str) -> dict[str, Any]:
    """``archive fetch --until-caught-up --json`` of ``topics``; its report (exit code 0)."""
    _register_groups()
    args = ["archive", "fetch", "--cluster", cluster, "--bootstrap", bootstrap]
    for t in topics:
        args += ["--topics", t]
    out = CliRunner().invoke(app, [*args, "--store", store_uri, "--until-caught-up", "--json"])
    assert out.exit_code == 0, out.output
    report: dict[str, Any] = json.loads(
        next(ln for ln in out.output.splitlines() if ln.startswith("{"))
    )
    return report
