"""``archive_spans``' lowest-chain-piece query costs one primary-key probe per partition.

It used to fetch every chain piece of the topic and keep the lowest in Python, so ``catalog
offsets`` for a whole topic grew with the archive (``benchmarks/bench_scale.py``). Pinned
here: the query returns one row per partition, the right one, and SQLite's plan finds each
partition's piece by its full primary key, never by reading all of a partition's pieces,
and visits only the topic's partitions. Also: the pruned ranges ``offsets`` loads, and that
``gaps`` reads no segment row (it reads the coverage rows the build keeps).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kafka_archive.catalog.coverage import refresh_all
from kafka_archive.catalog.db import open_catalog
from kafka_archive.catalog.gaps import gaps
from kafka_archive.catalog.models import PrunedRange
from kafka_archive.catalog.tables import partitions
from kafka_archive.catalog.time_answers import archive_spans, first_pieces_query, last_pruned_query
from sqlalchemy import event, text
from sqlalchemy.dialects import sqlite
from support.catalog_data import insert_segment

PARTITIONS = 4
PIECES = 50
OTHER_PARTITIONS = 40


def _load(url: str) -> dict[int, tuple[int, int]]:
    """Partitions of one topic with ``PIECES`` chain pieces each, inserted in shuffled order;
    returns the expected (lowest lo, its segment's first timestamp) per partition."""
    expected: dict[int, tuple[int, int]] = {}
    with open_catalog(url, create=True) as cat, cat.engine.begin() as conn:
        sid = 0
        for p in range(PARTITIONS):
            conn.execute(
                text(
                    "INSERT INTO partitions (id, cluster, topic, partition) "
                    "VALUES (:id, 'c', 't', :p)"
                ),
                {"id": p + 1, "p": p},
            )
            order = sorted(range(PIECES), key=lambda i: (i * 7919) % PIECES)
            for i in order:
                sid += 1
                lo = 1000 + i * 100
                fts = 5_000_000 + p * 1000 + i
                insert_segment(conn, sid, p + 1, lo, lo + 100, lo, lo + 99, first_timestamp=fts)
                conn.execute(
                    text(
                        "INSERT INTO chain_pieces (partition_id, lo, hi, segment_id) "
                        "VALUES (:pid, :lo, :hi, :sid)"
                    ),
                    {"pid": p + 1, "lo": lo, "hi": lo + 99, "sid": sid},
                )
            expected[p] = (1000, 5_000_000 + p * 1000)
        for p in range(OTHER_PARTITIONS):  # other topics: the plan must not scan them
            conn.execute(
                text(
                    "INSERT INTO partitions (id, cluster, topic, partition) "
                    "VALUES (:id, 'c', 'other', :p)"
                ),
                {"id": 100 + p, "p": p},
            )
    return expected


def test_one_row_per_partition_the_lowest_piece(tmp_path: Path) -> None:
    url = str(tmp_path / "c.db")
    expected = _load(url)
    query = first_pieces_query(partitions.c.cluster == "c", partitions.c.topic == "t")
    with open_catalog(url) as cat, cat.session() as s:
        rows = s.execute(query).all()
    assert len(rows) == PARTITIONS
    assert {int(p): (int(lo), int(fts)) for p, lo, fts in rows} == expected


def test_sqlite_probes_each_partition_by_primary_key(tmp_path: Path) -> None:
    url = str(tmp_path / "c.db")
    _load(url)
    query = first_pieces_query(partitions.c.cluster == "c", partitions.c.topic == "t")
    sql = str(query.compile(dialect=sqlite.dialect(), compile_kwargs={"literal_binds": True}))
    with open_catalog(url) as cat, cat.engine.connect() as conn:
        conn.execute(text("ANALYZE"))
        plan = [str(r[-1]) for r in conn.execute(text("EXPLAIN QUERY PLAN " + sql))]
    pieces = [line for line in plan if "chain_pieces" in line]
    # the join finds the one piece by (partition_id, lo); the correlated min reads one entry
    assert any("PRIMARY KEY (partition_id=? AND lo=?)" in line for line in pieces), plan
    assert not any(line.startswith("SCAN chain_pieces") for line in pieces), plan
    # and only the topic's partitions are visited
    assert any(line.startswith("SEARCH partitions") for line in plan), plan


def _prune_history(url: str, prunes: int) -> None:
    """``prunes`` consecutive pruned ranges for each partition of topic ``t`` (inserted
    newest first), and one of another topic."""
    with open_catalog(url, create=True) as cat, cat.session() as s:
        for p in range(PARTITIONS):
            for k in reversed(range(prunes)):
                s.add(_pruned("t", p, k))
        s.add(_pruned("other", 0, prunes + 5))
        s.commit()


def _pruned(topic: str, partition: int, k: int) -> PrunedRange:
    return PrunedRange(
        cluster="c", topic=topic, partition=partition, first_offset=k * 100,
        last_offset=k * 100 + 99, first_timestamp=k, max_timestamp=k + 1, policy=f"p{k}",
        reason="r", segments=1, bytes=1, objects="[]", status="done", planned_at_ms=k,
        pruned_at_ms=k,
    )  # fmt: skip


def test_only_the_highest_pruned_range_per_partition_is_loaded(tmp_path: Path) -> None:
    url = str(tmp_path / "c.db")
    _prune_history(url, prunes=6)
    with open_catalog(url) as cat, cat.session() as s:
        rows = s.execute(last_pruned_query("c", "t")).all()
        one = s.execute(last_pruned_query("c", "t", [2])).all()
    assert sorted((r.partition, r.last_offset) for r in rows) == [
        (p, 599) for p in range(PARTITIONS)
    ]
    assert [(r.partition, r.last_offset, r.policy) for r in one] == [(2, 599, "p5")]


def test_archive_spans_reports_the_last_prune(tmp_path: Path) -> None:
    url = str(tmp_path / "c.db")
    _load(url)
    _prune_history(url, prunes=3)
    with open_catalog(url) as cat:
        spans = archive_spans(cat, "c", "t")
        one = archive_spans(cat, "c", "t", [1])
    assert set(spans) == set(range(PARTITIONS))
    for span in spans.values():
        assert span.pruned is not None
        assert (span.pruned.last_offset, span.pruned.policy) == (299, "p2")
    assert set(one) == {1}
    assert one[1].pruned is not None and one[1].pruned.last_offset == 299


def test_gaps_reads_no_segment_row(tmp_path: Path) -> None:
    """``gaps`` over a topic reads the coverage rows the build keeps (one statement), not the
    segments: its cost is that of the problems, not of the archive."""
    url = str(tmp_path / "c.db")
    _load(url)
    statements: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(statement)

    with open_catalog(url) as cat:
        with cat.engine.begin() as conn:
            conn.execute(text("DELETE FROM chain_pieces WHERE segment_id = 7"))
            conn.execute(text("DELETE FROM segments WHERE id = 7"))  # a hole in partition 0
            refresh_all(conn)  # what the build's write does for the partitions it changes
        event.listen(cat.engine, "before_cursor_execute", record)
        found = gaps(cat, "c", "t")
    assert [(g.kind, g.partition) for g in found] == [("missing", 0)]
    assert not [x for x in statements if "FROM segments" in x], statements
    assert len([x for x in statements if "FROM coverage_gaps" in x]) == 1, statements
