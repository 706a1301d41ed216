"""Planning an export's typed values (:mod:`kafka_archive.export.values`) from the archive.

:func:`plan_values` turns ``--value-format``/``--value-schema`` into the
:class:`~kafka_archive.export.values.ValueSpec` every task gets: for Avro (and ``auto``) the
registry is read from the archived ``_schemas`` topic of the same cluster, planned and read like
any topic (the replay planner, then the replay reader: committed records, CRCs checked); for
JSON without a given schema, the schema is inferred from a sample of the export's own range.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafka_archive.export.values import RegisteredSchema, ValueSpec
    from kafka_archive.replay.planning.plan import PartitionPlan, PlanSource, ReplayPlan
    from kafka_archive.store.base import ObjectStore

__all__ = ["SAMPLE_VALUES", "SCHEMAS_TOPIC", "plan_values"]

#: Schema Registry's topic (its ``kafkastore.topic`` default)
SCHEMAS_TOPIC = "_schemas"
#: values of the export's range sampled for ``auto`` and for inferring a JSON schema
SAMPLE_VALUES = 2000


def _records(
    store: ObjectStore, plans: list[PartitionPlan], limit: int | None = None
) -> Iterator[tuple[int, bytes | None, bytes | None]]:
    """``(timestamp, key, value)`` of the plans' committed records, in order, at most ``limit``."""
    from kafka_archive.replay.execution.reader import PartitionReader

    n = 0
    for plan in plans:
        for group in PartitionReader(store, plan):
            records = group.records() if hasattr(group, "records") else group
            for rec in records:
                yield rec.timestamp, rec.key, rec.value
                n += 1
                if limit is not None and n >= limit:
                    return


def read_registry(
    source: PlanSource, store: ObjectStore, cluster: str, *, required: bool
) -> list[RegisteredSchema]:
    """The schema registrations of the archived ``_schemas`` topic of ``cluster`` (empty when
    it is not archived and not ``required``).

    Raises:
        ValueFormatError: ``required`` and the archive has no ``_schemas`` topic.
    """
    from kafka_archive.export.values import ValueFormatError, registry_from_records
    from kafka_archive.replay.errors import ReplayError
    from kafka_archive.replay.planning.plan import (
        ReplaySpec,
        TargetSpec,
        build_plan,
        parse_position,
    )

    spec = ReplaySpec.model_validate(
        {"cluster": cluster, "topic": SCHEMAS_TOPIC, "from": parse_position("earliest"),
         "target": TargetSpec(bootstrap_servers="export:", name="export-schemas")}
    )  # fmt: skip
    try:
        plan = build_plan(spec, source)
    except ReplayError as exc:
        if not required:
            return []
        raise ValueFormatError(
            f"Avro values need the cluster's {SCHEMAS_TOPIC} topic, which the archive does not "
            f"hold: {exc.message}",
            hint=f"archive {SCHEMAS_TOPIC} with the cluster's other topics, or use "
            "--value-format json",
        ) from None
    return registry_from_records(_records(store, list(plan.partitions)))


def plan_values(
    value_format: str,
    value_schema: str | None,
    *,
    topic: str,
    cluster: str,
    plan: ReplayPlan,
    source: PlanSource,
    store: ObjectStore,
) -> ValueSpec | None:
    """The spec of ``value_format`` (``json``, ``avro`` or ``auto``) for ``plan``'s export;
    ``None`` when ``auto`` finds neither format in the sample.

    Raises:
        ValueFormatError: an unknown format, a given schema that is not an Avro schema the
            columns can follow, Avro without an archived registry or a schema for
            ``<topic>-value``.
    """
    from kafka_archive.export.values import (
        VALUE_FORMATS,
        ValueFormatError,
        ValueSpec,
        arrow_type,
        column_schema_for_subject,
        infer_json_schema,
        sniff_format,
    )

    if value_format not in VALUE_FORMATS:
        raise ValueFormatError(
            f"unknown value format {value_format!r}", hint="Use --value-format json, avro or auto."
        )
    registry = []
    if value_format in ("avro", "auto"):
        registry = read_registry(source, store, cluster, required=value_format == "avro")
    sample: list[bytes | None] = []
    if value_format == "auto" or (value_format == "json" and value_schema is None):
        sample = [v for _t, _k, v in _records(store, list(plan.partitions), SAMPLE_VALUES)]
    fmt = sniff_format(sample, registry) if value_format == "auto" else value_format
    if fmt is None:
        return None
    if fmt == "avro":
        column = column_schema_for_subject(registry, f"{topic}-value")
        return ValueSpec(format="avro", column_schema=column, registry=registry)
    if value_schema is not None:
        try:
            arrow_type(json.loads(value_schema))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ValueFormatError(
                f"--value-schema is not an Avro schema the export can follow ({exc})",
                hint='Give an Avro schema as JSON, e.g. {"type": "record", "name": "v", '
                '"fields": [{"name": "n", "type": ["null", "long"]}]}.',
            ) from None
        return ValueSpec(format="json", column_schema=value_schema)
    inferred = infer_json_schema(sample)
    if inferred is None:
        raise ValueFormatError(
            f"none of the first {len(sample)} values of the range is JSON",
            hint="Give --value-schema, or export without --value-format.",
        )
    return ValueSpec(format="json", column_schema=json.dumps(inferred))
