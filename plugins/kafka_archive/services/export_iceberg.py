"""The Iceberg side of :class:`~kafka_archive.services.export.ExportService`.

* :func:`plan_iceberg` reads the table's exported offsets (the newest export snapshot's
  summary, :mod:`kafka_archive.export.iceberg`) and plans only what lies beyond them: the
  request's ``from`` applies to a table's first export (and to partitions it has never seen:
  from their start); once the table holds exports it continues where they ended. Nothing new:
  the plan says ``up_to_date`` and the run writes nothing.
* :func:`run_iceberg`, under the export's lease and the table's (one writer per table; the
  same lease table replays use), checks that the table is still where it was planned from
  (else :class:`IcebergTableMovedError`: plan again), then appends every partition's rows as
  one snapshot carrying the new offsets (:mod:`kafka_archive.spark.iceberg`). The offsets and
  the rows are committed atomically together, so every record is in the table exactly once
  whatever is killed when; a run whose snapshot is already the table's (a retry after a
  commit) reports ``already-committed``.

Where a transaction was open at the archive's end, a partition's export stops at its last
stable offset (``incomplete``) and the offsets say so: the next export continues from there.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import TYPE_CHECKING, Any

from kafka_archive.replay.errors import EmptyRangeError, ReplayError

if TYPE_CHECKING:
    from kafka_archive.export.iceberg import TableName, TableState
    from kafka_archive.replay.planning.plan import ReplayPlan
    from kafka_archive.services.export import (
        ExportPlan,
        ExportReport,
        ExportRequest,
        ExportService,
    )

__all__ = ["IcebergTableMovedError", "plan_iceberg", "run_iceberg", "table_of"]


class IcebergTableMovedError(ReplayError):
    """The table received another export since this one was planned."""

    default_hint = "plan the export again (run the same command again): it continues from the table"


def table_of(request: ExportRequest) -> TableName:
    from kafka_archive.export.iceberg import default_table, parse_table

    if request.table:
        return parse_table(request.table)
    return default_table(request.cluster, request.topic)


def _read_s3(options: dict[str, Any]) -> Any:
    """A reader of ``s3://bucket/key`` locations through the platform's store layer."""
    from urllib.parse import urlsplit

    from kafka_archive.store import open_store

    def read(location: str) -> bytes:
        parts = urlsplit(location)
        files = open_store(f"s3://{parts.netloc}", **options)
        try:
            return files.get_bytes(parts.path.lstrip("/"))
        finally:
            files.close()

    return read


def table_state(service: ExportService, table: TableName, options: dict[str, Any]) -> TableState:
    from kafka_archive.export.iceberg import read_table_state

    return read_table_state(service.resources.catalog().engine, table, _read_s3(options))


def plan_iceberg(
    service: ExportService, request: ExportRequest, plan_with: Any, options: dict[str, Any]
) -> ExportPlan:
    """Plan an Iceberg export (see the module docstring). ``plan_with(from_)`` plans the
    request with another ``from`` (the service's replay planning)."""
    from kafka_archive.export.iceberg import offsets_from_position
    from kafka_archive.export.manifest import export_id_for
    from kafka_archive.replay.planning.catalog_source import CatalogPlanSource
    from kafka_archive.services.export import ExportPlan, _ranges

    table = table_of(request)
    state = table_state(service, table, options)
    from_ = request.from_
    if state.offsets is not None:
        partitions = request.partitions or CatalogPlanSource(
            service.resources.catalog(), service.resources.store()
        ).partitions(request.cluster, request.topic)
        from_ = offsets_from_position(state.offsets, partitions)
    try:
        plan: ReplayPlan = plan_with(from_)
    except EmptyRangeError:
        if state.offsets is None:
            raise
        # nothing archived beyond what the table holds
        return ExportPlan(
            export_id="",
            request=request,
            replay_plan_json="",
            table=str(table),
            previous_offsets=state.offsets,
            up_to_date=True,
        )
    ranges = _ranges(plan)
    return ExportPlan(
        export_id=export_id_for(request.cluster, request.topic, ranges, fmt=f"iceberg:{table}"),
        request=request,
        replay_plan_json=plan.to_json(),
        table=str(table),
        previous_offsets=state.offsets,
    )


def _lease_id(table: TableName) -> str:
    return "t-" + hashlib.sha256(str(table).encode()).hexdigest()[:16]


def run_iceberg(
    service: ExportService,
    plan: ExportPlan,
    *,
    spark_master: str | None,
    spark: Any,
    output_options: dict[str, Any],
    store_options: dict[str, Any],
) -> ExportReport:
    """Append ``plan`` to its table as one snapshot (see the module docstring)."""
    from kafka_archive.catalog.leases import ObjectLeases
    from kafka_archive.export.iceberg import (
        SUMMARY_EXPORT_ID,
        SUMMARY_OFFSETS,
        SUMMARY_RANGES,
        SUMMARY_SOURCE,
        jdbc_catalog_properties,
        table_location,
        warehouse_uri,
    )
    from kafka_archive.replay.bookkeeping.lease import ReplayLease
    from kafka_archive.replay.runner import require_complete
    from kafka_archive.services.export import topic_ids
    from kafka_archive.services.replay import lease_ranges, refuse_pruned
    from kafka_archive.spark.export import ExportTask
    from kafka_archive.spark.iceberg import (
        APP_NAME,
        append_to_table,
        configure_catalog,
        find_iceberg_jars,
        iceberg_session_conf,
    )

    started = time.monotonic()
    table = table_of(plan.request)
    if plan.up_to_date:
        state = table_state(service, table, output_options)
        return _report(plan, table, state, "up-to-date", started, None)
    replay_plan = plan.replay_plan
    require_complete(replay_plan)
    ids = topic_ids(service.resources.catalog().engine, replay_plan)
    warehouse = warehouse_uri(plan.request.output)
    tasks = [
        ExportTask(
            export_id=plan.export_id,
            topic=plan.request.topic,
            partition_plan_json=p.model_dump_json(),
            store_uri=service.resources.require("store"),
            output_uri=warehouse,
            topic_id=ids.get(p.partition),
            store_options=store_options,
        )
        for p in replay_plan.partitions
        if not p.empty
    ]
    offsets = dict(plan.previous_offsets or {})
    for p in replay_plan.partitions:
        offsets[p.partition] = max(offsets.get(p.partition, 0), p.deliver_end)
    props = {
        SUMMARY_OFFSETS: json.dumps({str(k): v for k, v in sorted(offsets.items())}),
        SUMMARY_EXPORT_ID: plan.export_id,
        SUMMARY_SOURCE: f"{plan.request.cluster}/{plan.request.topic}",
        SUMMARY_RANGES: json.dumps(
            [[p.partition, p.start_offset, p.deliver_end] for p in replay_plan.partitions]
        ),
    }
    catalog = service.resources.catalog()
    db = service.resources.require("db")
    endpoint = output_options.get("endpoint_url") or _env("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
    region = output_options.get("region") or _env("AWS_REGION", "AWS_DEFAULT_REGION")
    catalog_props = jdbc_catalog_properties(db, warehouse, s3_endpoint=endpoint, s3_region=region)
    ranges = lease_ranges(replay_plan)
    with (
        ReplayLease(catalog.engine, _lease_id(table)),
        ReplayLease(catalog.engine, plan.export_id),
        ObjectLeases(catalog.engine).hold(f"export:{plan.export_id}", ranges),
    ):
        state = table_state(service, table, output_options)
        if state.last_export_id == plan.export_id:
            return _report(plan, table, state, "already-committed", started, None)
        if (state.offsets or None) != (plan.previous_offsets or None):
            raise IcebergTableMovedError(
                f"the table {table} received another export since this one was planned"
            )
        refuse_pruned(catalog, replay_plan, ranges)
        if tasks:
            session = spark
            if session is None:
                from kafka_archive.spark.session import make_spark_session

                jars = find_iceberg_jars(service.resources.settings.iceberg_jars)
                session = make_spark_session(
                    spark_master or service.resources.settings.spark_master,
                    app_name=APP_NAME,
                    conf=iceberg_session_conf(jars),
                )
            configure_catalog(session, table.catalog, catalog_props)
            append_to_table(session, table, table_location(warehouse, table), tasks, props)
        state = table_state(service, table, output_options)
    status = "incomplete" if replay_plan.incomplete else "committed"
    return _report(plan, table, state, status, started, replay_plan)


def _env(*names: str) -> str | None:
    """The first of the AWS environment variables ``names`` that is set (Iceberg's S3FileIO
    reads credentials from the environment itself, but not the endpoint, nor
    ``AWS_DEFAULT_REGION``)."""
    import os

    return next((os.environ[n] for n in names if os.environ.get(n)), None)


def _report(
    plan: ExportPlan,
    table: TableName,
    state: TableState,
    status: str,
    started: float,
    replay_plan: ReplayPlan | None,
) -> ExportReport:
    from kafka_archive.export.iceberg import SUMMARY_EXPORT_ID
    from kafka_archive.replay.planning.stability import INCOMPLETE_HINT, incomplete_rows
    from kafka_archive.services.export import ExportReport

    mine = next(
        (s for s in state.history if s.get(SUMMARY_EXPORT_ID) == plan.export_id), None
    ) if plan.export_id else None  # fmt: skip
    rows = int(mine.get("added-records", 0)) if mine and status != "up-to-date" else 0
    duration = time.monotonic() - started
    incomplete = incomplete_rows(replay_plan) if replay_plan is not None else []
    return ExportReport(
        export_id=plan.export_id or (state.last_export_id or ""),
        status=status,
        cluster=plan.request.cluster,
        topic=plan.request.topic,
        output=plan.request.output,
        manifest=state.metadata_location or "",
        table=str(table),
        snapshot_id=None if mine is None else int(mine["snapshot-id"]),
        offsets=state.offsets or {},
        files=int(mine.get("added-data-files", 0)) if mine and rows else 0,
        rows=rows,
        rows_per_partition={},
        bytes_written=int(mine.get("added-files-size", 0)) if mine and rows else 0,
        incomplete=incomplete if status == "incomplete" else [],
        hint=INCOMPLETE_HINT if status == "incomplete" else None,
        duration_s=round(duration, 3),
        rows_per_s=round(rows / duration, 1) if duration > 0 else 0.0,
    )
