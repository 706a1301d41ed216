"""What both export services share: the request, the resolved plan, the report, and helpers.

:mod:`kafka_archive.services.export` (Parquet; the service) and
:mod:`kafka_archive.services.export_iceberg` (Iceberg tables) both build and read these; kept
here so that neither imports the other's module for them (the service dispatches to the
Iceberg side, which must not import the service back).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from kafka_archive.frozen import FrozenModel

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from kafka_archive.export.manifest import PartitionRange
    from kafka_archive.replay.planning.plan import ReplayPlan

__all__ = ["FORMATS", "ExportPlan", "ExportReport", "ExportRequest", "plan_ranges", "topic_ids"]

#: the export formats: Parquet files in a directory, or appends to an Iceberg table
FORMATS = ("parquet", "iceberg")


def plan_ranges(plan: ReplayPlan) -> list[PartitionRange]:
    """Per partition of ``plan``, the offset range it exports (the manifest's, the id's)."""
    from kafka_archive.export.manifest import PartitionRange

    return [
        PartitionRange(partition=p.partition, start_offset=p.start_offset, end_offset=p.end_offset)
        for p in plan.partitions
    ]


def topic_ids(engine: Engine, plan: ReplayPlan) -> dict[int, str | None]:
    """Per partition, the Kafka topic id of the archived segments the plan reads (from their
    ``partition.metadata``, as cataloged); ``None`` where the catalog has none."""
    from sqlalchemy import select

    from kafka_archive.catalog.tables import segments

    out: dict[int, str | None] = {}
    with engine.connect() as conn:
        for p in plan.partitions:
            keys = [o.key for o in p.objects] or [o.key for o in p.tail_objects]
            ids: set[str] = set()
            for i in range(0, len(keys), 500):
                rows = conn.execute(
                    select(segments.c.topic_id).where(
                        segments.c.object_key.in_(keys[i : i + 500]),
                        segments.c.topic_id.is_not(None),
                    )
                )
                ids.update(str(r[0]) for r in rows)
            # the plan reads one incarnation of the topic: one id (several: unknown which)
            out[p.partition] = ids.pop() if len(ids) == 1 else None
    return out


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
    #: ``--format iceberg``: the table ``CATALOG.NAMESPACE.TABLE`` (default
    #: ``kafka_archive.<cluster>.<topic>``); ``output`` is then the warehouse for new tables
    table: str | None = None
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
    #: Iceberg exports: the table, the offsets its last export snapshot holds (``None``: its
    #: first export), and whether nothing lies beyond them (then no plan and no export id)
    table: str | None = None
    previous_offsets: dict[int, int] | None = None
    up_to_date: bool = False

    @property
    def replay_plan(self) -> ReplayPlan:
        from kafka_archive.replay.planning.plan import ReplayPlan

        return ReplayPlan.from_json(self.replay_plan_json)

    def summary(self) -> dict[str, Any]:
        """JSON-ready description (``--dry-run``): the ranges, bytes and holes."""
        if self.up_to_date:
            return {
                "kind": "export-plan",
                "export_id": None,
                "cluster": self.request.cluster,
                "topic": self.request.topic,
                "output": self.request.output,
                "table": self.table,
                "up_to_date": True,
                "previous_offsets": self.previous_offsets,
                "partitions": [],
                "bytes": 0,
                "records_at_most": 0,
            }
        plan = self.replay_plan
        return {
            "kind": "export-plan",
            "export_id": self.export_id,
            "cluster": self.request.cluster,
            "topic": self.request.topic,
            "output": self.request.output,
            "table": self.table,
            "previous_offsets": self.previous_offsets,
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
    #: "committed", "already-committed", "incomplete" (committed, see below) or, for an
    #: Iceberg table holding everything archived already, "up-to-date"
    status: str
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
    #: Iceberg exports: the table, the snapshot committed, and the offsets the table holds
    #: now (per partition, the next offset to export)
    table: str | None = None
    snapshot_id: int | None = None
    offsets: dict[int, int] = Field(default_factory=dict)
