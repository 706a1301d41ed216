"""Retention must never delete what it has to keep (issue 20, points 1 and 7).

* a lease only ever protects more: a ``max_bytes`` policy run while a replay or export leases
  part of one partition trims the other partitions exactly as it would without the lease;
* policies are strictly typed (``max_age: true`` is not 1 ms);
* a prune that would delete more than the configured share of a topic asks first;
* internal topics (``__cluster_metadata``, ``__consumer_offsets``, ``_schemas``) are kept
  unless a policy names them;
* what is said about a topic whose data was pruned away entirely.

The archive is a real one (:func:`support.catalog_data.archived_catalog`), copied per test.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka_archive.catalog.db import Catalog, open_catalog
from kafka_archive.catalog.leases import LeaseRange, ObjectLeases
from kafka_archive.catalog.models import Partition, Segment
from kafka_archive.catalog.prune import prune
from kafka_archive.catalog.retention import (
    RetentionPolicy,
    VersionSpan,
    select_units,
    units_of,
)
from kafka_archive.store import ObjectStore, open_store
from sqlalchemy import select
from support.catalog_data import archived_catalog

CLUSTER = "c1"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("retention-safety")
    archived_catalog(root, cluster=CLUSTER, appends=180)
    return root


@pytest.fixture
def archive(pristine: Path, tmp_path: Path) -> Iterator[tuple[Catalog, ObjectStore, Path]]:
    root = tmp_path / "a"
    shutil.copytree(pristine, root)
    cat = open_catalog(str(root / "catalog.db"))
    store = open_store(str(root / "store"))
    yield cat, store, root
    cat.close()
    store.close()


def _segments(cat: Catalog, topic: str, part: int) -> list[Segment]:
    with cat.session() as s:
        return list(
            s.execute(
                select(Segment)
                .join(Partition, Partition.id == Segment.partition_id)
                .where(Partition.topic == topic, Partition.partition == part)
                .order_by(Segment.base_offset)
            ).scalars()
        )


def _v(sid: int, base: int, end: int, newest: int, size: int = 100) -> VersionSpan:
    return VersionSpan(sid, base, end, base, end - 1, newest - 5, newest, newest, size)


# ---------------------------------------------------------------------------------------------
# a lease only ever protects more


def test_a_lease_never_makes_a_size_policy_delete_more_of_other_partitions() -> None:
    # three partitions of three 100-byte units each, interleaved in time
    units = {
        p: units_of(p, [_v(10 * p + i, 100 * i, 100 * i + 100, 1_000 * i + p) for i in range(3)])
        for p in range(3)
    }
    policy = RetentionPolicy(name="size", max_bytes=600)  # per topic: 300 of 900 bytes go
    free, held = select_units(policy, units, now_ms=0)
    assert held == {}
    assert {p: [u.first_offset for u in us] for p, us in free.items()} == {
        0: [0],
        1: [0],
        2: [0],
    }
    leased, held = select_units(policy, units, now_ms=0, leased={0: [(0, 29)]})
    # partition 0 is held from its first unit; 1 and 2 lose what they lose without the lease
    assert held[0].first_offset == 0
    assert {p: [u.first_offset for u in us] for p, us in leased.items()} == {1: [0], 2: [0]}


def test_a_size_prune_with_a_lease_trims_the_other_partitions_as_without_it(
    archive: tuple[Catalog, ObjectStore, Path],
) -> None:
    """The issue's case: ``max_bytes`` 16 KiB on the 3-partition ``orders`` with a lease on
    partition 0 offsets 0..29. Before the fix partitions 1 and 2 were pruned empty (the held
    partition's bytes were made up for with their newest data)."""
    cat, store, _root = archive
    policy = RetentionPolicy(name="orders-16k", topic="orders", max_bytes="16KiB")
    free = prune(cat, store, [policy], dry_run=True)
    want = {r.partition: (r.first_offset, r.last_offset) for r in free.ranges}
    assert set(want) == {0, 1, 2}
    ObjectLeases(cat.engine).take("replay:r-1", [LeaseRange(CLUSTER, "orders", 0, 0, 29)])
    report = prune(cat, store, [policy])
    got = {r.partition: (r.first_offset, r.last_offset) for r in report.ranges}
    assert got == {p: want[p] for p in (1, 2)}
    assert [(h["partition"], h["first_offset"]) for h in report.held] == [(0, 0)]
    for p in (1, 2):  # each keeps its newest data
        kept = [s for s in _segments(cat, "orders", p) if s.status != "pruned"]
        assert kept and kept[-1].end_offset == _segments(cat, "orders", p)[-1].end_offset
    assert all(s.status != "pruned" for s in _segments(cat, "orders", 0))


# ---------------------------------------------------------------------------------------------
# strictly typed policies


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"max_age": True}, r"retention\[0\] \(typo\): max_age: True is a boolean"),
        ({"max_bytes": True}, r"retention\[0\] \(typo\): max_bytes: True is a boolean"),
        ({"max_age": False}, "max_age: False is a boolean"),
        ({"max_age": 1.5}, "max_age: 1.5 is a float"),
        ({"max_bytes": 1e9}, "max_bytes: 1000000000.0 is a float"),
        ({"max_age": 30}, "max_age: 30 would be 30 millisecond"),
        ({"max_age": "30"}, "not a duration"),
        ({"max_age": "30 days"}, "not a duration"),
        ({"max_age": "yes"}, "not a duration"),
        ({"max_bytes": "1.5GiB"}, "not a size"),
        ({"max_bytes": "2tb"}, "not a size"),
        ({"max_bytes": "yes"}, "not a size"),
        ({"max_bytes": 0}, "must be positive"),
        ({"keep_all": "yes"}, "keep_all: Input should be a valid boolean"),
        ({"keep_all": 1}, "keep_all: Input should be a valid boolean"),
        ({"max_age": "30d", "topic": 7}, "topic: Input should be a valid string"),
    ],
)
def test_a_doubtful_policy_value_is_refused_naming_the_policy_and_field(
    entry: dict[str, Any], message: str
) -> None:
    from kafka_archive.catalog.retention import RetentionConfigError, load_policies

    with pytest.raises(RetentionConfigError, match=message):
        load_policies([{"name": "typo", **entry}])


def test_yaml_yes_is_refused_as_a_max_age(tmp_path: Path) -> None:
    """YAML 1.1 reads ``yes`` as true: the policy is refused, not a 1 ms retention."""
    from kafka_archive.catalog.retention import RetentionConfigError, load_policies
    from kafka_archive.settings import load_settings

    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("retention:\n  - {name: oops, topic: orders, max_age: yes}\n")
    settings = load_settings(env={"KAFKA_ARCHIVE_CONFIG": str(cfg)})
    with pytest.raises(RetentionConfigError, match=r"\(oops\): max_age: True is a boolean"):
        load_policies(settings.retention)
    env = {"KAFKA_ARCHIVE_RETENTION": json.dumps([{"name": "j", "max_bytes": True}])}
    with pytest.raises(RetentionConfigError, match=r"\(j\): max_bytes: True is a boolean"):
        load_policies(load_settings(env=env).retention)


def test_the_documented_forms_are_accepted() -> None:
    from kafka_archive.catalog.retention import load_policies

    got = load_policies(
        [
            {"name": "a", "max_age": "30d"},
            {"name": "b", "max_age": "2w", "max_bytes": "500GiB"},
            {"name": "c", "max_age": 86_400_000, "max_bytes": 1_048_576},
            {"name": "d", "max_age": "500ms", "max_bytes": "2TB"},
            {"name": "e", "max_bytes": "1048576"},
            {"name": "f", "keep_all": True},
        ]
    )
    assert [(p.max_age_ms, p.max_size) for p in got] == [
        (30 * 86_400_000, None),
        (14 * 86_400_000, 500 * 2**30),
        (86_400_000, 1_048_576),
        (500, 2 * 10**12),
        (None, 1_048_576),
        (None, None),
    ]


# ---------------------------------------------------------------------------------------------
# a prune that deletes much of a topic asks first


def _keys(store: ObjectStore) -> set[str]:
    return {o.key for o in store.list("")}


def test_a_prune_above_the_share_deletes_nothing_and_a_dry_run_shows_the_share(
    archive: tuple[Catalog, ObjectStore, Path],
) -> None:
    from kafka_archive.catalog.models import PrunedRange
    from kafka_archive.catalog.prune_share import PruneNeedsConfirmation

    cat, store, _root = archive
    everything = [RetentionPolicy(name="typo", topic="events", max_bytes=1)]
    before = _keys(store)
    with pytest.raises(PruneNeedsConfirmation, match=r"more than 50% of 1 topic\(s\)") as asked:
        prune(cat, store, everything, max_share=50)
    assert "c1/events 100.0% (policy typo)" in str(asked.value)
    assert "--yes" in asked.value.hint and "prune_max_share" in asked.value.hint
    assert _keys(store) == before
    with cat.session() as s:
        assert s.execute(select(PrunedRange)).first() is None
    assert all(x.status != "pruned" for p in (0, 1) for x in _segments(cat, "events", p))
    dry = prune(cat, store, everything, max_share=50, dry_run=True)
    assert [(x.topic, x.percent) for x in dry.needs_confirmation] == [("events", 100.0)]
    total = sum(x.size_bytes for p in (0, 1) for x in _segments(cat, "events", p))
    assert [(x.pruned_bytes, x.total_bytes) for x in dry.shares] == [(total, total)]
    # a policy that keeps most of the topic is not asked about; confirmed (None), it all goes
    most = [RetentionPolicy(name="most", topic="events", max_bytes=total * 3 // 4)]
    small = prune(cat, store, most, max_share=50)
    assert small.ranges and 0 < small.shares[0].percent < 50
    assert prune(cat, store, everything, max_share=None).segments > 0


def test_the_share_setting_is_a_strict_percentage() -> None:
    from kafka_archive.settings import SettingsError, load_settings

    assert load_settings(env={}).prune_max_share == 50
    for text, want in (("30", 30), ("30%", 30), ("100", 100), ("0", 0)):
        got = load_settings(env={"KAFKA_ARCHIVE_PRUNE_MAX_SHARE": text}).prune_max_share
        assert got == want
    for bad in ("yes", "true", "0.5", "101", "-1", "half"):
        with pytest.raises(SettingsError, match="prune_max_share from KAFKA_ARCHIVE_PRUNE_MAX_SH"):
            load_settings(env={"KAFKA_ARCHIVE_PRUNE_MAX_SHARE": bad})


def _cli(args: list[str], env: dict[str, str]) -> Any:
    from kafka_archive.cli import _register_groups, app
    from typer.testing import CliRunner

    _register_groups()
    return CliRunner().invoke(app, args, env=env)


def test_cli_prune_asks_for_yes_and_the_task_fails_without_it(
    archive: tuple[Catalog, ObjectStore, Path],
) -> None:
    from kafka_archive.airflow.prune_tasks import prune_in_task
    from kafka_archive.catalog.prune_share import PruneNeedsConfirmation

    _cat, store, root = archive
    policy = json.dumps([{"name": "typo", "topic": "events", "max_bytes": "1KiB"}])
    env = {
        "KAFKA_ARCHIVE_DB": str(root / "catalog.db"),
        "KAFKA_ARCHIVE_STORE": store.uri,
        "KAFKA_ARCHIVE_RETENTION": policy,
    }
    before = _keys(store)
    dry = _cli(["archive", "prune", "--dry-run"], env)
    assert dry.exit_code == 0, dry.output
    assert (
        "c1/events: would prune 100.0% of the topic" in dry.output and "needs --yes" in dry.output
    )
    refused = _cli(["archive", "prune"], env)
    assert refused.exit_code == 1, refused.output
    assert "would delete more than 50% of 1 topic(s): c1/events 100.0%" in refused.output
    assert "--yes" in refused.output and "Traceback" not in refused.output
    assert _keys(store) == before
    variables = {"kafka_archive_retention": policy}.get
    with pytest.raises(PruneNeedsConfirmation):
        prune_in_task(variables, env=env)
    assert _keys(store) == before
    # the setting raises the limit; --yes confirms
    raised = _cli(
        ["archive", "prune", "--dry-run", "--json"], {**env, "KAFKA_ARCHIVE_PRUNE_MAX_SHARE": "100"}
    )
    lines = [json.loads(x) for x in raised.output.splitlines()]
    assert [x["needs_confirmation"] for x in lines if x["kind"] == "topic_share"] == [False]
    done = _cli(["archive", "prune", "--yes", "--json"], env)
    assert done.exit_code == 0, done.output
    assert json.loads(done.output.splitlines()[-1])["segments"] > 0
    assert _keys(store) != before


# ---------------------------------------------------------------------------------------------
# internal topics are kept unless a policy names them


def test_a_catch_all_policy_keeps_internal_topics_unless_one_names_them(
    archive: tuple[Catalog, ObjectStore, Path],
) -> None:
    from kafka_archive.catalog.retention import policy_for

    catch_all = RetentionPolicy(name="all", max_bytes=1)
    for internal in ("__cluster_metadata", "__consumer_offsets", "_schemas", "__transaction_state"):
        assert policy_for([catch_all], "c1", internal) is None
        assert policy_for([catch_all], "c1", internal, internal=True) is catch_all
    named = RetentionPolicy(name="meta", topic="__cluster_metadata", max_age="30d")
    internals = RetentionPolicy(name="internals", topic="__*", max_age="90d")
    assert policy_for([named, catch_all], "c1", "__cluster_metadata") is named
    assert policy_for([catch_all, internals], "c1", "__consumer_offsets") is internals
    assert policy_for([catch_all, internals], "c1", "orders") is catch_all

    cat, store, _root = archive
    report = prune(cat, store, [catch_all])
    assert {r.topic for r in report.ranges} == {"events", "orders"}
    assert [(k["topic"], k["policy"]) for k in report.kept_internal] == [
        ("__consumer_offsets", "all")
    ]
    assert all(
        x.status != "pruned" for p in (0, 1, 2) for x in _segments(cat, "__consumer_offsets", p)
    )
    named_co = RetentionPolicy(name="co", topic="__consumer_offsets", max_bytes=1)
    assert {r.topic for r in prune(cat, store, [named_co, catch_all]).ranges} == {
        "__consumer_offsets"
    }


# ---------------------------------------------------------------------------------------------
# a replay refused over a pruned range: the part asked for, each offset counted once


def _prune_oldest_events(cat: Catalog, store: ObjectStore, keep_from: int = 3) -> list[Segment]:
    segs = _segments(cat, "events", 0)
    cutoff = max(x.max_timestamp for x in segs[:keep_from]) + 1
    policy = RetentionPolicy(name="events-age", topic="events", max_age="1s")
    prune(cat, store, [policy], now_ms=cutoff + 1000)
    return segs


def _plan(source: Any, frm: str, to: str | None = None) -> Any:
    from kafka_archive.replay.planning.plan import (
        ReplaySpec,
        TargetSpec,
        build_plan,
        parse_position,
    )

    bounds: dict[str, Any] = {"from": parse_position(frm)}
    if to is not None:
        bounds["to"] = parse_position(to)
    spec = ReplaySpec(
        cluster=CLUSTER,
        topic="events",
        partitions=[0],
        **bounds,
        target=TargetSpec(bootstrap_servers="localhost:1"),
    )
    return build_plan(spec, source)


def test_a_refusal_names_the_part_of_a_pruned_range_that_was_asked_for(
    archive: tuple[Catalog, ObjectStore, Path],
) -> None:
    from kafka_archive.replay.planning.catalog_source import CatalogPlanSource
    from kafka_archive.replay.planning.completeness import ReplayGapsError
    from kafka_archive.replay.runner import require_complete

    cat, store, _root = archive
    segs = _prune_oldest_events(cat, store)
    last_pruned = segs[2].end_offset - 1
    source = CatalogPlanSource(cat, store)
    plan = _plan(source, "offset:50")
    assert [(h.kind, h.first_offset, h.last_offset) for _p, h in plan.holes] == [
        ("pruned", 50, last_pruned)
    ]
    with pytest.raises(ReplayGapsError) as refused:
        require_complete(plan)
    n = last_pruned - 50 + 1
    assert f"cannot deliver {n} offset(s)" in str(refused.value)
    assert f"partition 0 offsets 50..{last_pruned} ({n}): pruned" in str(refused.value)
    # a request wholly inside the pruned range: refused naming it (it was "nothing to replay:
    # selects no records", as if the offsets had never existed)
    with pytest.raises(ReplayGapsError, match=r"24 offset\(s\).*offsets 10\.\.33 \(24\): pruned"):
        _plan(source, "offset:10", "offset:34")


def test_offsets_two_sources_report_are_counted_once(
    archive: tuple[Catalog, ObjectStore, Path],
) -> None:
    """A pruned range the catalog also reports as ``missing`` (and a duplicate report of the
    same range) is one hole, counted once: it was "48 offset(s) (2 hole(s))" for 24."""
    from kafka_archive.replay.planning.catalog_source import CatalogPlanSource
    from kafka_archive.replay.planning.completeness import PlanHole, ReplayGapsError
    from kafka_archive.replay.runner import require_complete

    cat, store, _root = archive
    segs = _prune_oldest_events(cat, store)
    last_pruned = segs[2].end_offset - 1

    class TwoSources(CatalogPlanSource):
        def holes(self, cluster: str, topic: str, partition: int) -> list[PlanHole]:
            found = super().holes(cluster, topic, partition)
            again = [h.model_copy(update={"kind": "missing"}) for h in found]
            return [*found, *again, *found]

    plan = _plan(TwoSources(cat, store), f"offset:{last_pruned - 23}")
    assert [(h.kind, h.first_offset, h.last_offset) for _p, h in plan.holes] == [
        ("pruned", last_pruned - 23, last_pruned)
    ]
    with pytest.raises(ReplayGapsError, match=r"cannot deliver 24 offset\(s\) .* \(1 hole\(s\)\)"):
        require_complete(plan)


def test_overlapping_holes_are_made_disjoint_most_specific_first() -> None:
    from kafka_archive.replay.planning.completeness import PlanHole, disjoint_holes

    def h(kind: str, a: int, b: int) -> PlanHole:
        return PlanHole(kind=kind, first_offset=a, last_offset=b, reason=kind)

    got = disjoint_holes(
        [h("missing", 0, 99), h("corrupt", 40, 59), h("pruned", 0, 19), h("not-archived", 90, 120)],
        10,
        109,
    )
    assert [(x.kind, x.first_offset, x.last_offset) for x in got] == [
        ("pruned", 10, 19),
        ("missing", 20, 39),
        ("corrupt", 40, 59),
        ("missing", 60, 99),
        ("not-archived", 100, 109),
    ]
    assert sum(x.offsets for x in got) == 100


# ---------------------------------------------------------------------------------------------
# a topic pruned away entirely: the answers name the policy


def test_a_topic_pruned_away_entirely_is_named_as_pruned_not_unknown(
    archive: tuple[Catalog, ObjectStore, Path],
) -> None:
    from kafka_archive.catalog.time_answers import offsets_at
    from kafka_archive.replay.errors import UnknownTopicError
    from kafka_archive.replay.planning.catalog_source import CatalogPlanSource

    cat, store, root = archive
    last = {p: _segments(cat, "events", p)[-1].end_offset - 1 for p in (0, 1)}
    prune(cat, store, [RetentionPolicy(name="events-gone", topic="events", max_bytes=1)])
    with pytest.raises(UnknownTopicError) as refused:
        _plan(CatalogPlanSource(cat, store), "earliest")
    text = str(refused.value)
    assert "holds no retained data of 'events'" in text and "policy events-gone pruned" in text
    assert f"partition 0 up to offset {last[0]}, partition 1 up to offset {last[1]}" in text
    assert "catalog build" not in text.split(":")[0]
    assert "cannot be replayed or exported" in (refused.value.hint or "")
    # export plans through the same source: the same answer
    from kafka_archive.services.export import ExportRequest, ExportService
    from kafka_archive.settings import load_settings

    request = ExportRequest(
        cluster=CLUSTER, topic="events", **{"from": "earliest"}, output=str(root / "out")
    )
    with pytest.raises(UnknownTopicError, match="policy events-gone pruned all of it"):
        ExportService(load_settings(env={}), catalog=cat, store=store).plan(request)
    # catalog offsets --at 0: not "1970 is after the archive's last record"
    answers = offsets_at(cat, store, CLUSTER, "events", 0)
    assert [(a.partition, a.offset, a.clamped) for a in answers] == [
        (0, -1, "pruned"),
        (1, -1, "pruned"),
    ]
    assert "holds no retained record" in (answers[0].note or "")
    assert "pruned by policy events-gone at" in (answers[0].note or "")
    assert answers[0].to_json()["pruned"]["last_offset"] == last[0]
    env = {"KAFKA_ARCHIVE_DB": str(root / "catalog.db"), "KAFKA_ARCHIVE_STORE": store.uri}
    out = _cli(["catalog", "offsets", "--cluster", CLUSTER, "--topic", "events", "--at", "0"], env)
    assert out.exit_code == 0, out.output
    assert "after the archive's last record" not in out.output
    assert "pruned by policy events-gone" in out.output
