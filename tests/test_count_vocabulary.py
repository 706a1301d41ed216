"""Issue 23, point 4: one vocabulary for counts (:mod:`kafka_archive.counts`).

The demo showed four numbers for one topic with no word on why they differ (``topics`` 840,
an export 640 rows, the replay preview 369, the run 280). Each command now says which count it
shows, and the numbers add up by their labels: on a topic with committed and aborted
transactions, records in the log = committed records sent by a replay from the start +
aborted records it skipped; the offsets a preview counts also hold the transaction markers.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka_archive.counts import ABORTED, COMMITTED, IN_LOG, LEGEND, MARKERS, OFFSETS, WILL_SEND
from support.catalog_data import archived_catalog
from support.cli_json import cli
from support.kafka_mock import MockCluster

pytestmark = pytest.mark.timeout(300)

C = "c1"
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("counts")
    # 40 appends per round: each round of partition 0 commits one transaction, aborts one
    _hist, store, db = archived_catalog(root, cluster=C, appends=120)
    mock = MockCluster(1)
    mock.create_topic("__kafka_archive_replay_progress", 3)
    mock.create_topic("orders-counted", 3)
    yield {"store": store, "db": db, "mock": mock, "root": root}
    mock.close()


def _text(*args: str) -> str:
    code, _lines, text = cli(*args)
    assert code == 0, text
    return re.sub(r"\s+", " ", text)  # tables wrap: compare words


def test_every_count_says_which_it_is_and_they_add_up(archive: dict[str, Any]) -> None:
    a = archive
    where = ("--store", a["store"], "--db", a["db"])
    # records in the log: catalog topics and catalog stats
    code, held, text = cli("catalog", "topics", "--cluster", C, "--db", a["db"], "--json")
    assert code == 0, text
    in_log = sum(h["records"] for h in held if h["topic"] == "orders")
    topics = _text("catalog", "topics", "--cluster", C, "--db", a["db"])
    assert IN_LOG in topics and "transaction markers are offsets, not records" in topics
    stats = _text(
        "catalog", "stats", "--cluster", C, "--topic", "orders", "--from", "0",
        "--to", "2000000000000", "--bucket", "1d", "--db", a["db"],
    )  # fmt: skip
    assert f"{in_log} {IN_LOG}" in stats

    # the preview of a replay (and of an export) counts offsets, an upper bound
    replay = ["replay", "run", "--cluster", C, "--topic", "orders", "--from", "earliest"]
    replay += ["--target", a["mock"].bootstrap_servers, "--target-topic", "orders-counted"]
    code, plan, text = cli(*replay, "--dry-run", *where, "--json")
    assert code == 0, text
    offsets = sum(p["records"] for p in plan[-1]["partitions"].values())
    preview = _text(*replay, "--dry-run", *where)
    assert f"{WILL_SEND}: at most {offsets} (the {OFFSETS};" in preview
    export = _text(
        "export", "--cluster", C, "--topic", "orders", "--from", "earliest",
        "--output", str(a["root"] / "out"), "--dry-run", *where,
    )  # fmt: skip
    assert f"{offsets} {OFFSETS}" in export and f"it writes their {COMMITTED}" in export

    # the run: committed records sent, aborted records and markers counted apart
    code, done, text = cli(*replay, *where, "--json")
    assert code == 0, text
    parts = done[-1]["partitions"].values()
    sent = sum(p["records"] for p in parts)
    aborted = sum(p["skipped_aborted_records"] for p in parts)
    markers = sum(p["skipped_control_batches"] for p in parts)
    assert aborted > 0 and markers > 0 and sent > 0
    assert sent + aborted == in_log  # every record in the log: committed (sent) or aborted
    assert offsets >= in_log + markers  # markers are offsets; compaction may empty more
    report = _text("replay", "status", "--db", a["db"])
    assert f"{sent} records sent" in report


def test_the_report_of_a_run_names_its_counts(archive: dict[str, Any]) -> None:
    a = archive
    code, _lines, text = cli(
        "replay", "run", "--cluster", C, "--topic", "orders", "--from", "earliest",
        "--target", a["mock"].bootstrap_servers, "--target-topic", "orders-counted",
        "--force", "--store", a["store"], "--db", a["db"],
    )  # fmt: skip
    assert code == 0, text
    words = re.sub(r"\s+", " ", text)
    assert "committed records sent this run" in words
    assert f"{ABORTED} and" in words and f"{MARKERS} skipped" in words


def test_the_user_guide_defines_every_count() -> None:
    guide = (REPO / "docs" / "user-guide.md").read_text()
    for label in LEGEND:
        assert f"**{label}**" in guide, label
