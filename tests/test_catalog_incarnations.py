"""Two incarnations of one topic (deleted and re-created: a new topic id, offsets from 0 again)
archived under one cluster: the catalog keeps each segment's topic id, ``catalog topics`` and
``locate`` show it, and ``catalog gaps`` reports the partition's ``incarnations`` as an error,
so that their offsets are never silently mixed; ``catalog offsets`` names the topic id its
answer comes from."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka_archive.archive import run_archive
from kafka_archive.catalog.build import InProcessRunner, build_catalog
from kafka_archive.catalog.db import open_catalog
from kafka_archive.catalog.gaps import gaps
from kafka_archive.catalog.holdings import topics
from kafka_archive.catalog.queries import locate
from kafka_archive.catalog.time_answers import offsets_at
from kafka_archive.store import open_store
from kafka_archive_dev.writer import BrokerWriter, ManualClock, WriteRecord, new_topic_id

C = "c1"
START = 1_700_000_000_000


def _broker(root: Path, broker_id: int, topic_id: str, start_ms: int) -> BrokerWriter:
    """One broker's log dir holding ``orders-0`` (id ``topic_id``): 3 rolled segments."""
    broker = BrokerWriter(root, broker_id, clock=ManualClock(start_ms))
    pw = broker.partition("orders", 0, topic_id=topic_id, segment_bytes=2_000)
    for i in range(60):
        broker.clock.advance(10)
        pw.append([WriteRecord(b"k", b"v" * 60, (), broker.clock.now_ms)])
        if i % 20 == 19:
            pw.roll()
    broker.close()
    return broker


@pytest.mark.parametrize("incremental", [False, True], ids=["one-build", "build-between"])
def test_two_incarnations_are_told_apart(tmp_path: Path, incremental: bool) -> None:
    first, second = new_topic_id("orders-1"), new_topic_id("orders-2")
    store = open_store(str(tmp_path / "store"))
    with open_catalog(tmp_path / "catalog.db", create=True) as cat:
        for n, (tid, start) in enumerate(((first, START), (second, START + 3_600_000)), 1):
            b = _broker(tmp_path / f"b{n}", n, tid, start)
            dirs = [str(d) for d in b.log_dirs]
            assert run_archive(cluster=C, broker_id=n, log_dirs=dirs, store=store).segments_archived
            if incremental:
                build_catalog(cat, store.uri, runner=InProcessRunner())
        build_catalog(cat, store.uri, runner=InProcessRunner())
        (held,) = topics(cat, C)
        assert held.topic_ids == tuple(sorted((first, second)))
        assert held.to_json()["topic_ids"] == sorted((first, second))
        found = gaps(cat, C)
        # the incarnations' offsets are other records, not copies: no overlap rows
        assert [g.kind for g in found] == ["incarnations"]
        problems = [g for g in found if g.kind == "incarnations"]
        assert len(problems) == 1 and problems[0].severity == "error"
        assert set(problems[0].detail["topic_ids"]) == {first, second}
        assert problems[0].detail["served"] == [second]  # the newest incarnation only
        assert held.errors >= 1  # `catalog topics` counts it
        # never mixed: every answer comes from the newest incarnation's segments
        for offset in (0, 5, 25, 59):
            loc = locate(cat, store, C, "orders", 0, offset)
            assert loc.topic_id == second and loc.to_json()["topic_id"] == second
        for at in (START + 3_600_000, START + 3_600_300):
            (answer,) = offsets_at(cat, store, C, "orders", at)
            assert answer.topic_id == second and answer.offset >= 0
        assert held.first_timestamp >= START + 3_600_000


def test_one_incarnation_is_no_problem(tmp_path: Path) -> None:
    tid = new_topic_id("orders-only")
    store = open_store(str(tmp_path / "store"))
    b = _broker(tmp_path / "b1", 1, tid, START)
    run_archive(cluster=C, broker_id=1, log_dirs=[str(d) for d in b.log_dirs], store=store)
    with open_catalog(tmp_path / "catalog.db", create=True) as cat:
        build_catalog(cat, store.uri, runner=InProcessRunner())
        (held,) = topics(cat, C)
        assert held.topic_ids == (tid,)
        assert not [g for g in gaps(cat, C) if g.kind == "incarnations"]
        assert locate(cat, store, C, "orders", 0, 5).topic_id == tid
        for reading in (store, None):  # exact (one ranged read) and catalog-only answers
            (answer,) = offsets_at(cat, reading, C, "orders", START + 100)
            assert answer.topic_id == tid and answer.to_json()["topic_id"] == tid
