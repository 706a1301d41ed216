"""Exports as a service: plan a range exactly as replay does, write Parquet on Spark, commit.

:class:`ExportService` is what ``kafka-archive export``, the export DAG and
``spark_jobs/export.py`` call. The steps:

1. :meth:`ExportService.plan` - resolve the request with the replay planner
   (:func:`kafka_archive.replay.planning.plan.build_plan`): the same ``--from``/``--to`` semantics,
   the same partitions and offset ranges, the same holes. The export id is derived from the
   resolved ranges (:func:`~kafka_archive.export.manifest.export_id_for`).
2. :meth:`ExportService.run` - refuse a plan with holes (unless ``allow_gaps``); if the output's
   committed manifest already has this export id, only finish its clean-up and report it
   (re-running an export never duplicates rows) - unless that manifest says the export is
   incomplete (it stopped at the archive's last stable offset, :mod:`kafka_archive.replay.
   stability`): then it is exported again, whole; otherwise take the export's lease in the
   catalog (one live run per export id; the same lease table replays use, so retention sees
   what a running export reads), run one Spark task per partition, and commit the manifest.

Errors: :class:`~kafka_archive.replay.errors.ReplayError` subclasses for the request (unknown
topic, empty range, holes: ``ReplayGapsError``), ``ReplayBusyError`` when another run holds
the export, :class:`~kafka_archive.store.errors.StoreError` for the archive or the output (a
local output that is a file or cannot be written, and a manifest that is not one this version
reads, are refused before Spark starts),
:class:`~segment_lib.errors.SegmentError` for bad archived bytes, and Spark's own errors for a
failed job (re-running completes the export).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from kafka_archive.frozen import FrozenModel
from kafka_archive.services.resources import ResourceService

if TYPE_CHECKING:
    from kafka_archive.export.manifest import ExportManifest, PartitionRange
    from kafka_archive.export.partition import PartitionExport
    from kafka_archive.replay.planning.plan import ReplayPlan
    from kafka_archive.store.base import ObjectStore

__all__ = ["ExportPlan", "ExportReport", "ExportRequest", "ExportService"]

#: the placeholder target of the replay spec an export is planned with (planning never uses
#: it; it only keeps the replay id of the plan distinct from any real replay's)
_EXPORT_TARGET = "export:"


def _value_columns(spec_json: str | None) -> list[tuple[str, str]]:
    """``(name, type)`` of the typed value columns of an export (none without typed values)."""
    if spec_json is None:
        return []
    from kafka_archive.export.values import ValueDecoder, ValueSpec

    fields = ValueDecoder(ValueSpec.model_validate_json(spec_json)).fields()
    return [(f.name, str(f.type)) for f in fields]


def _ranges(plan: ReplayPlan) -> list[PartitionRange]:
    from kafka_archive.export.manifest import PartitionRange

    return [
        PartitionRange(partition=p.partition, start_offset=p.start_offset, end_offset=p.end_offset)
        for p in plan.partitions
    ]


class ExportRequest(FrozenModel):
    """What to export: a topic's range, where to, and how.

    ``from``/``to`` are positions as replay takes them (a time in any form the CLI takes,
    ``offset:N``, ``offset:P=N,...``, ``earliest``, ``latest``); no ``to``: the end of the
    archive. ``output`` is a store URI (``file:///dir``, a path, ``s3://bucket/prefix``).
    """

    model_config = ConfigDict(populate_by_name=True)

    cluster: str = Field(min_length=1)
    topic: str = Field(min_length=1)
    from_: str = Field(alias="from", min_length=1)
    to: str | None = None
    partitions: list[int] | None = None
    output: str = Field(min_length=1)
    format: str = "parquet"
    allow_gaps: bool = False
    max_rows_per_file: int | None = Field(default=None, gt=0)
    #: typed values beside the raw bytes: ``json``, ``avro`` or ``auto`` (None: raw only); for
    #: JSON, ``value_schema`` is the Avro schema (JSON text) of the column (default: inferred)
    value_format: str | None = None
    value_schema: str | None = None


class ExportPlan(BaseModel):
    """A resolved export: the replay plan of the range, the export id and the output."""

    export_id: str
    request: ExportRequest
    replay_plan_json: str
    #: the typed values' :class:`~kafka_archive.export.values.ValueSpec` as JSON (None: raw only)
    value_spec_json: str | None = None

    @property
    def replay_plan(self) -> ReplayPlan:
        from kafka_archive.replay.planning.plan import ReplayPlan

        return ReplayPlan.from_json(self.replay_plan_json)

    def summary(self) -> dict[str, Any]:
        """JSON-ready description (``--dry-run``): the ranges, bytes and holes."""
        plan = self.replay_plan
        return {
            "kind": "export-plan",
            "export_id": self.export_id,
            "cluster": self.request.cluster,
            "topic": self.request.topic,
            "output": self.request.output,
            "partitions": [
                {
                    "partition": p.partition,
                    "start_offset": p.start_offset,
                    "end_offset": p.end_offset,
                    "records_at_most": p.records,
                    "bytes": p.bytes,
                    "holes": len(p.holes),
                }
                for p in plan.partitions
            ],
            "bytes": plan.total_bytes,
            "records_at_most": plan.total_records,
            "value_format": self.value_format,
        }

    @property
    def value_format(self) -> str | None:
        """``json``/``avro`` when values get a typed column (``auto`` resolved)."""
        if self.value_spec_json is None:
            return None
        return str(json.loads(self.value_spec_json)["format"])


class ExportReport(BaseModel):
    """The outcome of :meth:`ExportService.run` (``--json`` prints it as one object)."""

    kind: str = "export"
    export_id: str
    status: str  # "committed", "already-committed" or "incomplete" (committed, see below)
    cluster: str
    topic: str
    output: str
    manifest: str
    files: int
    rows: int
    rows_per_partition: dict[int, int]
    bytes_written: int
    bytes_read: int = 0
    aborted_records: int = 0
    control_batches: int = 0
    open_txn_records: int = 0
    #: typed values: the format (None: raw only), values decoded, values kept raw only
    value_format: str | None = None
    decoded_values: int = 0
    undecoded_values: int = 0
    #: partitions whose records above the archive's last stable offset are not in the files
    #: (the manifest says ``complete: false``; running the export again completes it)
    incomplete: list[dict[str, Any]] = Field(default_factory=list)
    #: what to do next (set when ``incomplete``)
    hint: str | None = None
    duration_s: float
    rows_per_s: float
    #: seconds each partition's Spark task took (empty when nothing was exported this run)
    task_s: dict[int, float] = Field(default_factory=dict)
    #: CPU seconds of each partition's task
    task_cpu_s: dict[int, float] = Field(default_factory=dict)


class ExportService(ResourceService):
    """Exports over the archive and catalog the settings name (see the module docstring).

    Not thread-safe: one per command or task; close it, or use it as a context manager.
    """

    def plan(
        self,
        request: ExportRequest,
        *,
        wait_open_txns_s: float = 0,
        on_wait: Callable[[ReplayPlan], None] | None = None,
    ) -> ExportPlan:
        """Resolve ``request`` against the catalog, as replay would plan it (``wait_open_txns_s``
        / ``on_wait``: as :meth:`~kafka_archive.services.replay.ReplayService.plan`).

        Raises:
            ReplayConfigError: a bad position, an unknown topic or partition, an empty range,
                or a format other than ``parquet``.
        """
        from kafka_archive.export.manifest import export_id_for
        from kafka_archive.replay.errors import ReplayConfigError
        from kafka_archive.replay.planning.catalog_source import CatalogPlanSource
        from kafka_archive.replay.planning.plan import TargetSpec
        from kafka_archive.replay.runner import plan_replay
        from kafka_archive.services.replay import spec_from_request

        if request.format != "parquet":
            raise ReplayConfigError(
                f"unknown export format {request.format!r}", hint="Use --format parquet."
            )
        spec = spec_from_request(
            {
                "cluster": request.cluster,
                "topic": request.topic,
                "partitions": request.partitions,
                "from": request.from_,
                "to": request.to,
                "allow_gaps": request.allow_gaps,
            },
            TargetSpec(bootstrap_servers=_EXPORT_TARGET, name="export"),
        )

        def once() -> ReplayPlan:
            return plan_replay(
                spec, CatalogPlanSource(self.resources.catalog(), self.resources.store())
            )

        plan = once()
        if plan.incomplete and wait_open_txns_s > 0:
            from kafka_archive.replay.planning.stability import wait_until_stable

            plan = wait_until_stable(once, wait_open_txns_s, on_wait=on_wait)
        ranges = _ranges(plan)
        values = None
        if request.value_format is not None:
            from kafka_archive.services.export_values import plan_values

            value_spec = plan_values(
                request.value_format, request.value_schema, topic=request.topic,
                cluster=request.cluster, plan=plan, store=self.resources.store(),
                source=CatalogPlanSource(self.resources.catalog(), self.resources.store()),
            )  # fmt: skip
            values = None if value_spec is None else value_spec.model_dump_json(by_alias=True)
        return ExportPlan(
            export_id=export_id_for(request.cluster, request.topic, ranges, values),
            request=request,
            replay_plan_json=plan.to_json(),
            value_spec_json=values,
        )

    def run(
        self,
        plan: ExportPlan,
        *,
        spark_master: str | None = None,
        spark: Any = None,
        output_options: Mapping[str, Any] | None = None,
        store_options: Mapping[str, Any] | None = None,
    ) -> ExportReport:
        """Export ``plan`` on Spark and commit it (see the module docstring).

        ``output_options``/``store_options``: store options (e.g. ``endpoint_url``) for the
        output and the archive, given to every executor too.
        """
        from kafka_archive.export.manifest import (
            check_output,
            clean_output,
            commit,
            read_manifest,
        )
        from kafka_archive.replay.planning.stability import INCOMPLETE
        from kafka_archive.replay.runner import require_complete
        from kafka_archive.store import open_store

        started = time.monotonic()
        replay_plan = plan.replay_plan
        require_complete(replay_plan)
        output = open_store(plan.request.output, **dict(output_options or {}))
        try:
            check_output(output)  # a bad --output is one line here, not a Spark job's stacks
            existing = read_manifest(output)
            if existing is not None and existing.export_id == plan.export_id:
                clean_output(output, existing)  # finishes an interrupted clean-up
                if existing.complete:
                    return self._report(existing, "already-committed", started, output.uri, [])
                # an incomplete export (stopped at the archive's last stable offset) is never
                # served as done: it is exported again, whole, and its manifest replaced
            manifest, results = self._export(
                plan, replay_plan, output, spark_master, spark,
                dict(output_options or {}), dict(store_options or {}),
            )  # fmt: skip
            commit(output, manifest)
            status = "committed" if manifest.complete else INCOMPLETE
            return self._report(manifest, status, started, output.uri, results)
        finally:
            output.close()

    def _export(
        self,
        plan: ExportPlan,
        replay_plan: ReplayPlan,
        output: ObjectStore,
        spark_master: str | None,
        spark: Any,
        output_options: dict[str, Any],
        store_options: dict[str, Any],
    ) -> tuple[ExportManifest, list[PartitionExport]]:
        """Run the tasks under the export's lease: ``(manifest to commit, task results)``."""
        from kafka_archive.catalog.leases import ObjectLeases
        from kafka_archive.export.manifest import manifest_for
        from kafka_archive.export.partition import PartitionExport
        from kafka_archive.replay.bookkeeping.lease import ReplayLease
        from kafka_archive.replay.planning.stability import incomplete_rows
        from kafka_archive.services.replay import lease_ranges, refuse_pruned
        from kafka_archive.spark.export import ExportTask, run_export_tasks

        tasks = [
            ExportTask(
                export_id=plan.export_id,
                topic=plan.request.topic,
                partition_plan_json=p.model_dump_json(),
                store_uri=self.resources.require("store"),
                output_uri=output.uri,
                store_options=store_options,
                output_options=output_options,
                max_rows_per_file=plan.request.max_rows_per_file,
                value_spec_json=plan.value_spec_json,
            )
            for p in replay_plan.partitions
            if not p.empty
        ]
        catalog = self.resources.catalog()
        ranges = lease_ranges(replay_plan)
        # one live run per export id, and the offsets it reads leased so that prune leaves
        # them (a range pruned since planning is refused, as for a replay)
        with (
            ReplayLease(catalog.engine, plan.export_id),
            ObjectLeases(catalog.engine).hold(f"export:{plan.export_id}", ranges),
        ):
            refuse_pruned(catalog, replay_plan, ranges)
            rows = run_export_tasks(
                tasks, master=spark_master or self.resources.settings.spark_master, spark=spark
            )
        results = [PartitionExport.from_dict(r) for r in rows]
        manifest = manifest_for(
            export_id=plan.export_id,
            cluster=plan.request.cluster,
            topic=plan.request.topic,
            ranges=_ranges(replay_plan),
            files=[f for r in results for f in r.files],
            aborted_records=sum(r.aborted_records for r in results),
            control_batches=sum(r.control_batches for r in results),
            open_txn_records=sum(r.open_txn_records for r in results),
            incomplete=incomplete_rows(
                replay_plan, {r.partition: r.stopped_at for r in results if r.stopped_at >= 0}
            ),
            extra_columns=_value_columns(plan.value_spec_json),
            value_format=plan.value_format,
            decoded_values=sum(r.decoded_values for r in results),
            undecoded_values=sum(r.undecoded_values for r in results),
        )
        return manifest, results

    @staticmethod
    def _report(
        manifest: ExportManifest,
        status: str,
        started: float,
        uri: str,
        results: list[PartitionExport],
    ) -> ExportReport:
        from kafka_archive.export.manifest import MANIFEST_KEY
        from kafka_archive.replay.planning.stability import INCOMPLETE_HINT

        per: dict[int, int] = {r.partition: 0 for r in manifest.ranges}
        for f in manifest.files:
            per[f.partition] = per.get(f.partition, 0) + f.rows
        duration = time.monotonic() - started
        return ExportReport(
            export_id=manifest.export_id,
            status=status,
            cluster=manifest.cluster,
            topic=manifest.topic,
            output=uri,
            manifest=MANIFEST_KEY,
            files=len(manifest.files),
            rows=manifest.rows,
            rows_per_partition=per,
            bytes_written=sum(f.bytes for f in manifest.files),
            bytes_read=sum(r.bytes_read for r in results),
            aborted_records=manifest.aborted_records,
            control_batches=manifest.control_batches,
            open_txn_records=manifest.open_txn_records,
            value_format=manifest.value_format,
            decoded_values=manifest.decoded_values,
            undecoded_values=manifest.undecoded_values,
            incomplete=manifest.incomplete,
            hint=None if manifest.complete else INCOMPLETE_HINT,
            duration_s=round(duration, 3),
            rows_per_s=round(manifest.rows / duration, 1) if duration > 0 else 0.0,
            task_s={r.partition: r.duration_s for r in results},
            task_cpu_s={r.partition: r.cpu_s for r in results},
        )
