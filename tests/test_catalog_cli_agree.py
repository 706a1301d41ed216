"""The catalog commands agree with each other (issue 11 point 5) on an archive with two
replicas rolled differently (partial overlaps, some versions only partly serving):

* ``records`` is one count everywhere: ``topics`` equals ``stats`` over all time equals the
  data records the broker holds; ``offset_span`` is the other count, shown apart;
* ``topics`` counts the rows ``gaps`` lists, by the severity ``gaps`` shows (overlaps are
  info, not problems);
* ``clusters`` lists what the catalog holds;
* tables fit an 80-column terminal (``key: value`` blocks) and stay tables when wide.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from kafka_archive.catalog.build import build_catalog
from kafka_archive.catalog.db import open_catalog
from kafka_archive.cli import _register_groups, app
from kafka_archive.store import open_store
from kafka_archive_dev.writer import BrokerWriter, ManualClock
from support.catalog_data import START_MS, all_records, archive_partition
from typer.testing import CliRunner

C = "agree"


def _lines(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


@pytest.fixture(scope="module")
def overlapped(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, int]:
    """A catalog of partition r-0 archived from a leader (every other segment) and a follower
    that rolled at other offsets: overlaps, versions partly serving. Returns (db, records)."""
    import random

    from kafka_archive_dev.writer import WriteRecord

    root = tmp_path_factory.mktemp("agree")
    clock = ManualClock(START_MS)
    lb = BrokerWriter(root / "b0", 0, clock=clock)
    fb = BrokerWriter(root / "b1", 1, clock=clock)
    leader = lb.partition("r", 0, segment_bytes=2_000)
    rng = random.Random(5)
    for i in range(80):
        now = clock.advance(rng.randint(1_000, 30_000))
        leader.append([WriteRecord(f"k{i}-{j}".encode(), b"v" * 40, (), now) for j in range(2)])
    follower = fb.replicate(leader, fetch_max_bytes=700, segment_bytes=1_500)
    for pw in (leader, follower):
        pw.roll()
    lb.close()
    fb.close()
    store = open_store(str(root / "store"))
    lrefs = archive_partition(store, C, leader.dir, broker_id=0, archived_at_ms=START_MS + 10)
    frefs = archive_partition(store, C, follower.dir, broker_id=1, archived_at_ms=START_MS + 20)
    db = str(root / "catalog.db")
    cat = open_catalog(db, create=True)
    try:
        build_catalog(cat, store.uri, refs=frefs, interval_bytes=500)
        build_catalog(cat, store.uri, refs=lrefs[::2] + frefs, interval_bytes=500)
    finally:
        cat.close()
    return db, sum(1 for _ in all_records(leader.dir))


@pytest.fixture(scope="module")
def cli() -> CliRunner:
    _register_groups()
    return CliRunner()


def _run(cli: CliRunner, *args: str, columns: int = 200) -> str:
    result = cli.invoke(app, ["catalog", *args], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    return result.output


def test_records_mean_the_same_in_topics_and_stats(
    overlapped: tuple[str, int], cli: CliRunner
) -> None:
    db, records = overlapped
    (held,) = _lines(_run(cli, "topics", "--cluster", C, "--json", "--db", db))
    assert held["records"] == records
    assert held["offset_span"] == held["last_offset"] - held["first_offset"] + 1
    stats = ["stats", "--cluster", C, "--topic", "r", "--from", str(START_MS - 60_000)]
    stats += ["--to", str(held["max_timestamp"] + 60_000), "--bucket", "1h", "--db", db]
    assert sum(b["records"] for b in _lines(_run(cli, *stats, "--json"))) == records
    assert f"{records} records" in _run(cli, *stats)
    text = _run(cli, "topics", "--cluster", C, "--db", db)
    assert "offset_span" in text and f"{records} records" in text


def test_topics_counts_what_gaps_lists_by_severity(
    overlapped: tuple[str, int], cli: CliRunner
) -> None:
    db, _ = overlapped
    found = _lines(_run(cli, "gaps", "--cluster", C, "--json", "--db", db))
    assert found and {(g["kind"], g["severity"]) for g in found} == {("overlap", "info")}
    (held,) = _lines(_run(cli, "topics", "--cluster", C, "--json", "--db", db))
    assert (held["problems"], held["errors"], held["warnings"]) == (0, 0, 0)
    assert held["info"] == len(found)
    summary = f"0 error(s), {len(found)} info"
    gaps_text = _run(cli, "gaps", "--cluster", C, "--db", db)
    assert summary in gaps_text and "severity" in gaps_text
    assert summary in _run(cli, "topics", "--cluster", C, "--db", db)


def test_clusters_lists_what_the_catalog_holds(overlapped: tuple[str, int], cli: CliRunner) -> None:
    db, _ = overlapped
    (c,) = _lines(_run(cli, "clusters", "--json", "--db", db))
    assert (c["cluster"], c["topics"], c["partitions"]) == (C, 1, 1)
    assert c["segments"] > 0 and START_MS <= c["first_timestamp"] <= c["max_timestamp"]
    assert c["last_build_ms"] > 0
    text = _run(cli, "clusters", "--db", db)
    assert C in text and "last build" in text


def test_tables_fit_80_columns(overlapped: tuple[str, int], cli: CliRunner) -> None:
    db, _ = overlapped
    (held,) = _lines(_run(cli, "topics", "--cluster", C, "--json", "--db", db))
    narrow = _run(cli, "topics", "--cluster", C, "--db", db, columns=80)
    assert all(len(line) <= 80 for line in narrow.splitlines()), narrow
    # one value per line, never folded: the key: value layout
    assert f"offset_span: {held['offset_span']}" in " ".join(narrow.split())
    assert f"{held['first_offset']}-{held['last_offset']}" in narrow
    wide = _run(cli, "topics", "--cluster", C, "--db", db, columns=250)
    header = next(line for line in wide.splitlines() if "offset_span" in line)
    assert "records" in header and "errors" in header  # a table: the columns on one line
    gaps_narrow = _run(cli, "gaps", "--cluster", C, "--db", db, columns=80)
    assert max(len(line) for line in gaps_narrow.splitlines()) <= 80
    assert "severity" in gaps_narrow and "overlap" in gaps_narrow


def test_print_table_switches_layout_by_width(capsys: pytest.CaptureFixture[str]) -> None:
    from kafka_archive.cli.tables import print_table

    row = ["orders", 3, "2026-11-20T03:00:00.000+00:00", "x" * 30]
    print_table("t", ["topic", "partition", "time", "detail"], [row], width=60)
    narrow = capsys.readouterr().out
    assert "  partition: 3" in narrow and "x" * 30 in narrow
    print_table("t", ["topic", "partition", "time", "detail"], [row], width=120)
    wide = capsys.readouterr().out
    assert "partition:" not in wide and "x" * 30 in wide


def test_stats_chart_has_a_time_axis(overlapped: tuple[str, int], cli: CliRunner) -> None:
    """The terminal chart's x axis reads times (first, middle, last bucket), not bucket
    numbers."""
    from kafka_archive.timeparse import format_ms

    db, _ = overlapped
    (held,) = _lines(_run(cli, "topics", "--cluster", C, "--json", "--db", db))
    args = ["stats", "--cluster", C, "--topic", "r", "--from", str(held["first_timestamp"])]
    args += ["--to", str(held["max_timestamp"] + 1), "--bucket", "10m", "--db", db]
    buckets = _lines(_run(cli, *args, "--json"))
    text = _run(cli, *args)
    chart = text[: text.index("bytes")]  # the chart comes before the table
    assert "bucket number" not in chart and "bucket start (UTC)" in chart
    for i in (0, (len(buckets) - 1) // 2, len(buckets) - 1):
        label = format_ms(buckets[i]["start"])[:16].replace("T", " ") + "Z"
        assert label in chart, label


def test_help_says_when_store_is_needed(cli: CliRunner) -> None:
    """--store is optional for offsets (what it adds is explained) and required, and said so,
    where bytes are always read (locate)."""

    def words(text: str) -> str:  # the help's words, without rich's box lines
        return " ".join(re.sub("[\u2500-\u257f]", " ", text).split())

    offsets = words(_run(cli, "offsets", "--help"))
    assert "Optional: without it the catalog alone answers an offset range" in offsets
    locate = words(_run(cli, "locate", "--help"))
    assert "Required: this command reads archived bytes" in locate
