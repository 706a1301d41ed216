"""``kafka-archive catalog topic-config / topic-history / acls / metadata-snapshot``: the
cluster metadata history (thin over :class:`~kafka_archive.services.metadata_history.
MetadataHistoryService`; see docs/metadata-history.md).

Query commands import the history's queries and SQLAlchemy only (no Kafka client);
``metadata-snapshot`` imports confluent-kafka when it runs.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from kafka_archive.cli.catalog_options import ClusterOpt, DbOpt, JsonOpt, TopicOpt
from kafka_archive.cli.catalog_options import open_catalog as _open
from kafka_archive.cli.catalog_options import parse_time_or_fail as _time
from kafka_archive.cli.catalog_options import run_query as _call
from kafka_archive.cli.context import cli_settings
from kafka_archive.cli.errors import fail_error
from kafka_archive.cli.output import console, emit_json, err_console, fail
from kafka_archive.timeparse import format_ms

__all__ = ["register"]

_LEFT = {"config", "value", "source", "time", "topic_id", "what", "record", "replicas"}
_LEFT |= {"principal", "permission", "operation", "resource", "pattern", "name", "host"}


def _table(title: str, columns: list[str], rows: list[list[Any]]) -> None:
    from kafka_archive.cli.tables import print_table

    print_table(title, columns, rows, left=_LEFT)


AtOpt = Annotated[
    str, typer.Option("--at", help="The moment: ISO-8601 (naive = UTC), epoch ms, -2h, now-30m.")
]


def _service(db: str | None, as_json: bool, *, create: bool = False) -> Any:
    from kafka_archive.services.metadata_history import MetadataHistoryService

    return MetadataHistoryService(catalog=_open(db, as_json, create=create))


def _no_topic(svc: Any, cluster: str, topic: str, ts: int, as_json: bool) -> None:
    """Exit 1: no ``topic`` at ``ts``, saying when it existed (or that it never did)."""
    if not _call(as_json, svc.has_history, cluster):
        _call(as_json, svc.acls_at, cluster, ts)  # raises the "no history" error with its hint
    incs = svc.incarnations(cluster, topic)
    if not incs:
        fail(
            f"cluster {cluster!r} never had a topic {topic!r} in its metadata history",
            hint="check the name; `kafka-archive catalog topics --cluster C` lists archived ones",
            as_json=as_json,
        )
    fail(
        f"no topic {topic!r} in cluster {cluster!r} at {format_ms(ts)}; it existed: "
        + "; ".join(i.describe() for i in incs),
        hint="ask for a time inside one of those lifetimes",
        as_json=as_json,
        details={"incarnations": [i.to_json() for i in incs]},
    )


def topic_config(
    cluster: ClusterOpt,
    topic: TopicOpt,
    at: AtOpt = "now",
    db: DbOpt = "",
    as_json: JsonOpt = False,
) -> None:
    """A topic as it was at TIME: its topic id, partitions, replicas and leaders, its dynamic
    config overrides, and the resolved value of the well-known configs with where each comes
    from (topic override, cluster-wide dynamic default, static broker config seen by an Admin
    API snapshot, or Kafka's default).

    A cluster snapshotted through the Admin API is answered at snapshot resolution (the
    answer names the snapshot used).

    Example: kafka-archive catalog topic-config --cluster prod --topic orders --at 2026-11-20T03:00Z
    """
    ts = _time(at, "--at", as_json)
    with _service(db, as_json) as svc:
        state = _call(as_json, svc.topic_at, cluster, topic, ts)
        if state is None:
            _no_topic(svc, cluster, topic, ts, as_json)
        resolved = svc.resolved_configs(state, ts)
    if as_json:
        emit_json({**state.to_json(), "at_ms": ts, "resolved": [r.to_json() for r in resolved]})
        return
    console.print(
        f"{cluster}/{topic} at {format_ms(ts)}: topic id {state.topic_id}, "
        f"{state.partitions} partition(s), last change {format_ms(state.as_of_ms)}",
        markup=False,
    )
    _table(
        "partitions",
        ["partition", "leader", "replicas"],
        [[p, state.leaders[p], ",".join(map(str, r))] for p, r in state.replicas.items()],
    )
    _table(
        "configs",
        ["config", "value", "source"],
        [[r.name, r.value, r.source] for r in resolved],
    )
    if state.resolution_note:
        err_console.print(f"note: {state.resolution_note}", markup=False)


def topic_history(
    cluster: ClusterOpt,
    topic: TopicOpt,
    db: DbOpt = "",
    as_json: JsonOpt = False,
) -> None:
    """What changed when for a topic name, across its incarnations (a deleted and re-created
    topic has a new topic id): creation, deletion, partitions added, replicas/leader/ISR
    changes, config overrides set or deleted; each with the metadata record (type, version,
    Raft offset) or the Admin API snapshot that showed it.

    Example: kafka-archive catalog topic-history --cluster prod --topic orders
    """
    with _service(db, as_json) as svc:
        events = _call(as_json, svc.topic_history, cluster, topic)
        if not events:
            _no_topic(svc, cluster, topic, 0, as_json)
    if as_json:
        for e in events:
            emit_json(e.to_json())
        return
    _table(
        f"{cluster}/{topic}: {len(events)} change(s)",
        ["time", "topic_id", "what", "record", "offset"],
        [
            [
                format_ms(e.at_ms),
                e.topic_id,
                e.what,
                e.record_type + (f" (snapshot {e.snapshot_id})" if e.snapshot_id else ""),
                e.seq if e.source == "metadata_log" else "-",
            ]
            for e in events
        ],
    )


def acls(
    cluster: ClusterOpt,
    at: AtOpt = "now",
    db: DbOpt = "",
    as_json: JsonOpt = False,
) -> None:
    """The ACL bindings of a cluster at TIME (from AccessControlEntryRecords, or Admin API
    snapshots where the cluster has an authorizer).

    Example: kafka-archive catalog acls --cluster prod --at -1d
    """
    ts = _time(at, "--at", as_json)
    with _service(db, as_json) as svc:
        found, note = _call(as_json, svc.acls_at, cluster, ts)
    if as_json:
        for a in found:
            emit_json({**a.to_json(), "at_ms": ts, "resolution_note": note})
        return
    _table(
        f"{cluster} ACLs at {format_ms(ts)}: {len(found)}",
        ["principal", "permission", "operation", "resource", "pattern", "name", "host"],
        [
            [
                a.principal,
                a.permission_type,
                a.operation,
                a.resource_type,
                a.pattern_type,
                a.resource_name,
                a.host,
            ]
            for a in found
        ],
    )
    if note:
        err_console.print(f"note: {note}", markup=False)


def metadata_snapshot(
    cluster: ClusterOpt,
    bootstrap: Annotated[
        str, typer.Option("--bootstrap", help="The cluster's bootstrap servers (host:port,...).")
    ],
    client_config: Annotated[
        list[str] | None,
        typer.Option(
            "-X",
            "--client-config",
            help="librdkafka NAME=VALUE for the Admin client (repeatable). @FILE reads "
            "NAME=VALUE lines from FILE instead, which keeps secrets off the command line.",
        ),
    ] = None,
    timeout: Annotated[
        float,
        typer.Option("--timeout", help="Seconds to wait for the cluster.", min=1, max=600),
    ] = 30.0,
    db: DbOpt = "",
    as_json: JsonOpt = False,
) -> None:
    """Snapshot a cluster's topics, configs and ACLs through the Admin API into the metadata
    history (for clusters without an archived metadata log; the history is then at snapshot
    resolution). The kafka_archive_metadata_snapshot DAG runs this on a schedule.

    Example: kafka-archive catalog metadata-snapshot --cluster legacy --bootstrap kafka-1:9092
    """
    from confluent_kafka import KafkaException

    from kafka_archive.catalog.db import CatalogError
    from kafka_archive.cli.client_settings import parse_settings
    from kafka_archive.client_log import ClusterUnreachable
    from kafka_archive.metadata_history.apply import SourceConflict
    from kafka_archive.services.metadata_history import MetadataHistoryService

    config = {**parse_settings(client_config, "-X", as_json), "bootstrap.servers": bootstrap}
    settings = cli_settings(as_json, db=db)
    if not settings.db:
        fail(
            "no catalog given",
            hint="pass --db PATH_OR_URL or set KAFKA_ARCHIVE_DB",
            as_json=as_json,
        )
    # the service asks the cluster before it creates the catalog: a wrong address makes none
    with MetadataHistoryService(settings) as svc:
        try:
            report = svc.snapshot_from_admin(cluster, config, timeout_s=timeout)
        except SourceConflict as exc:
            fail(
                str(exc), hint="use another --cluster name for Admin API snapshots", as_json=as_json
            )
        except ClusterUnreachable as exc:
            fail(str(exc), hint="check --bootstrap and the client settings (-X)", as_json=as_json)
        except CatalogError as exc:
            fail_error(exc, as_json=as_json)
        except KafkaException as exc:  # e.g. a refused -X setting
            fail(
                f"the Admin API of {bootstrap} refused: {exc}",
                hint="check --bootstrap and the client settings (-X)",
                as_json=as_json,
            )
    if as_json:
        emit_json(report.to_json())
        return
    acl_text = "" if report.acls_available else " (ACLs unavailable: no authorizer)"
    console.print(
        f"{cluster}: snapshot at {format_ms(report.at_ms)}, {report.changes} change(s){acl_text}",
        markup=False,
    )


def register(catalog_app: typer.Typer) -> None:
    """Add the metadata history commands to ``kafka-archive catalog``."""
    catalog_app.command("topic-config")(topic_config)
    catalog_app.command("topic-history")(topic_history)
    catalog_app.command("acls")(acls)
    catalog_app.command("metadata-snapshot")(metadata_snapshot)
