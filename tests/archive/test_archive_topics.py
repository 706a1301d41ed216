"""``--topics`` / a cluster's ``topics``: the archiver reads only the topics it is asked for
(issue 27), and archives those exactly as a run without a selection does.

The file-system spy is Python's audit hooks (``open``, ``os.scandir``, ``os.listdir``: every
way the discovery, the digests and the uploads reach a file); the store spy wraps ``list`` and
the reads. Fixture: ``cluster_data.build_cluster`` (topics ``orders``, ``state``, ``payments``
and ``__consumer_offsets`` on three brokers).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from archive_checks import check_archive
from cluster_data import CLUSTER, Cluster
from kafka_archive.archive.config import ArchiveConfig
from kafka_archive.archive.runner import run_archive
from kafka_archive.archive.topic_selection import TopicSelection
from kafka_archive.cli import _register_groups, app
from kafka_archive.services.archive import ArchiveService
from kafka_archive.store import LocalStore, ObjectStore
from typer.testing import CliRunner

from segment_lib.names import parse_partition_dir_name

runner = CliRunner()
if not any(c.name == "archive" for c in app.registered_commands):
    _register_groups()

_touched: list[str] | None = None  # the paths the spy records while a run is watched
_spy_lock = threading.Lock()


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _touched is None or event not in ("open", "os.scandir", "os.listdir") or not args:
        return
    path = args[0]
    if isinstance(path, (str, bytes, os.PathLike)):
        with _spy_lock:
            _touched.append(os.fsdecode(path))


sys.addaudithook(_audit)  # (hooks cannot be removed: it records only inside `watched`)


@contextmanager
def watched() -> Iterator[list[str]]:
    """Every file or directory path opened or listed inside the block."""
    global _touched
    _touched = seen = []
    try:
        yield seen
    finally:
        _touched = None


class ListingStore:
    """A store that records every prefix listed and every key read."""

    def __init__(self, inner: ObjectStore) -> None:
        self.inner = inner
        self.listed: list[str] = []
        self.read: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @property
    def uri(self) -> str:
        return self.inner.uri

    def list(self, prefix: str, *a: Any, **kw: Any) -> Any:
        self.listed.append(prefix)
        return self.inner.list(prefix, *a, **kw)

    def get_bytes(self, key: str, *a: Any, **kw: Any) -> bytes:
        self.read.append(key)
        return self.inner.get_bytes(key, *a, **kw)


def _topic(partition_dir: Path) -> str:
    return parse_partition_dir_name(partition_dir.name).topic


def _stored_topics(store: LocalStore) -> set[str]:
    return {o.key.split("/")[1] for o in store.list(f"{CLUSTER}/") if "/manifests/" in o.key}


def _archive(cluster: Cluster, store: Any, topics: list[str]) -> list[Any]:
    return [
        run_archive(
            cluster=CLUSTER, broker_id=b, log_dirs=cluster.dirs(b), store=store, topics=topics
        )
        for b in sorted(cluster.log_dirs)
    ]


def test_selection_globs_and_the_internal_topics() -> None:
    sel = TopicSelection(["orders", "pay*"])
    assert sel.selects("orders") and sel.selects("payments") and not sel.selects("state")
    assert not sel.selects("Orders") and not sel.selects("orders-eu")  # case, whole name
    assert sel.selects("__consumer_offsets") and sel.selects("__cluster_metadata")
    assert not sel.selects("__transaction_state") and not sel.selects("_schemas")
    assert not TopicSelection() and TopicSelection().selects("anything")


def test_unselected_partitions_are_never_opened_listed_or_read(
    cluster: Cluster, local_store: LocalStore
) -> None:
    store = ListingStore(local_store)
    unselected = [p for _b, p in cluster.partition_dirs() if _topic(p) in ("state", "payments")]
    assert unselected  # the fixture has them
    with watched() as seen:
        reports = _archive(cluster, store, ["orders"])
    assert all(r.ok for r in reports)
    assert seen  # the spy works: the selected partitions were read
    inside = [s for s in seen for p in unselected if s == str(p) or s.startswith(f"{p}{os.sep}")]
    assert inside == []
    assert not any(
        part in key for key in store.listed + store.read for part in ("/state/", "/payments/")
    )
    assert _stored_topics(local_store) == {"orders", "__consumer_offsets"}


def test_selected_topics_are_archived_exactly_as_without_a_selection(
    cluster: Cluster, tmp_path: Path
) -> None:
    everything, some = LocalStore(tmp_path / "all"), LocalStore(tmp_path / "some")
    _archive(cluster, everything, [])
    reports = _archive(cluster, some, ["ord*"])
    assert sum(r.segments_archived for r in reports) > 0

    def objects(store: LocalStore, topics: tuple[str, ...]) -> dict[str, bytes]:
        return {
            o.key: store.get_bytes(o.key)
            for o in store.list(f"{CLUSTER}/")
            if o.key.split("/")[1] in topics
        }

    wanted = ("orders", "__consumer_offsets")
    got, expected = objects(some, wanted), objects(everything, wanted)
    assert sorted(got) == sorted(expected)
    for key, data in got.items():
        if "/manifests/" in key:  # the same manifest but for when and by which run
            a, b = json.loads(data), json.loads(expected[key])
            for m in (a, b):
                m.pop("archived_at", None)
                m.pop("run_id", None)
            assert a == b, key
        else:
            assert data == expected[key], key
    assert not [o.key for o in some.list(f"{CLUSTER}/") if o.key.split("/")[1] in ("state",)]


def test_the_cli_and_the_dag_config_take_the_selection(
    cluster: Cluster, local_store: LocalStore, tmp_path: Path
) -> None:
    args = ["archive", "--cluster", CLUSTER, "--broker-id", "2", "--store", local_store.uri]
    for d in cluster.dirs(2):
        args += ["--log-dir", d]
    result = runner.invoke(app, [*args, "--topics", "pay*", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["segments_archived"] > 0
    topics = _stored_topics(local_store)
    assert topics <= {"payments", "__consumer_offsets"} and "payments" in topics

    config = ArchiveConfig.model_validate(
        {
            "store_uri": local_store.uri,
            "clusters": [
                {
                    "name": CLUSTER,
                    "topics": ["state"],
                    "brokers": [{"id": 1, "log_dirs": cluster.dirs(1)}],
                }
            ],
        }
    )
    targets = config.targets()
    assert targets and all(t.topics == ["state"] for t in targets)
    found = [ArchiveService(config=config).discover(t) for t in targets]
    assert {c.topic for d in found for c in d.candidates} <= {"state", "__consumer_offsets"}
    assert any(c.topic == "state" for d in found for c in d.candidates)
    assert sum(d.unselected_partitions for d in found) == len(
        [p for b, p in cluster.partition_dirs() if b == 1 and _topic(p) == "orders"]
    )


@pytest.mark.parametrize("topics", [[], ["*"]])
def test_every_topic_without_a_selection_or_with_star(
    cluster: Cluster, local_store: LocalStore, topics: list[str]
) -> None:
    reports = _archive(cluster, local_store, topics)
    assert all(r.ok for r in reports)
    archived = {m.topic for m in check_archive(local_store, cluster, CLUSTER)}
    assert {"orders", "state", "payments", "__consumer_offsets"} <= archived
