"""``kafka-archive archive --dry-run`` lists the segments it would archive (issue 11 point 5):
in text, every segment the real run then archives, with its partition and base offset; in
``--json``, as ``planned``."""

from __future__ import annotations

import json

from archive_checks import snapshot
from cluster_data import CLUSTER, Cluster
from kafka_archive.cli import _register_groups, app
from kafka_archive.store import LocalStore
from typer.testing import CliRunner

runner = CliRunner()
if not any(c.name == "archive" for c in app.registered_commands):
    _register_groups()


def _args(cluster: Cluster, broker: int, store: LocalStore, *extra: str) -> list[str]:
    args = ["archive", "--cluster", CLUSTER, "--broker-id", str(broker), "--store", store.uri]
    for d in cluster.dirs(broker):
        args += ["--log-dir", d]
    return [*args, *extra]


def _dry_run_text(cluster: Cluster, store: LocalStore, columns: int) -> str:
    result = runner.invoke(
        app, _args(cluster, 2, store, "--dry-run"), env={"COLUMNS": str(columns)}
    )
    assert result.exit_code == 0, result.output
    return result.output


def test_dry_run_lists_what_the_run_archives(cluster: Cluster, local_store: LocalStore) -> None:
    wide = _dry_run_text(cluster, local_store, 400)
    narrow = _dry_run_text(cluster, local_store, 80)
    planned = json.loads(
        runner.invoke(app, _args(cluster, 2, local_store, "--dry-run", "--json")).stdout
    )["planned"]
    assert snapshot(local_store) == {}  # a dry run uploads nothing
    real = json.loads(runner.invoke(app, _args(cluster, 2, local_store, "--json")).stdout)
    archived = {(a["topic"], a["partition"], a["base_offset"]) for a in real["archived"]}
    assert archived == {(p["topic"], p["partition"], p["base_offset"]) for p in planned}
    assert len(archived) > 1
    rows = {
        tuple(cell.strip() for cell in line.split("│")[1:-1])
        for line in wide.splitlines()
        if line.startswith("│")
    }
    listed = {(r[2], r[3]) for r in rows if len(r) == 7}
    for topic, partition, base in archived:
        assert (f"{topic}-{partition}", str(base)) in listed, (topic, partition, base)
    assert f"would archive {len(archived)} segment(s)" in wide
    # at 80 columns: the same list as key: value blocks; only a line holding a path (an
    # unbreakable value, kept whole so it can be copied) is wider than the terminal
    assert all(len(line) <= 80 or "/tmp" in line for line in narrow.splitlines())
    assert "log dir: /" in " ".join(narrow.split())
    flat = " ".join(narrow.split())
    for topic, partition, base in archived:
        assert f"partition: {topic}-{partition} base offset: {base} " in flat
