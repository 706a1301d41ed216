"""Typed values beside the raw bytes: JSON, or Confluent-framed Avro whose schemas are archived.

An export with a value format (``kafka-archive export --value-format json|avro|auto``) adds to
every row, beside the raw ``value`` (unchanged), a column ``value_typed`` whose Arrow type
follows one Avro schema (:func:`arrow_type`; Avro is the type system for both formats):

* **avro**: values framed as Confluent's serializers write them (magic byte 0, a 4-byte
  big-endian schema id, the Avro binary body). The schemas come from the archived ``_schemas``
  topic (Schema Registry's own log, read from the archive like any topic; :func:`
  registry_from_records` reads its records as the registry writes them: key ``{"keytype":
  "SCHEMA", "subject", "version", "magic"}``, value ``{"subject", "version", "id", "schema"}``).
  A record is decoded (fastavro) with the schema its id had when the record was written (the
  registration of that id at or before the record's timestamp; the first one when none is) and
  resolved to the column's schema: the newest version of the subject ``<topic>-value``
  (TopicNameStrategy), so older versions read as the newest. ``value_schema_id`` holds the id.
* **json**: values that parse as JSON (UTF-8) and fit the column's schema, given
  (``--value-schema``, an Avro schema) or inferred from a sample of the range's values
  (:func:`infer_json_schema`: every field nullable, ints and floats merged to double, any other
  conflict kept as JSON text).

A value that does not decode (not framed, unknown id, bad body, not JSON, not fitting the
schema) keeps its raw bytes, gets a null ``value_typed`` and is counted
(:attr:`ValueDecoder.undecoded`); nothing is ever dropped. Null values (tombstones) are neither.
Schema references (Confluent's ``references``) and recursive Avro types are not supported.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import pyarrow as pa
from pydantic import Field

from kafka_archive.errors import InternalSignal, KafkaArchiveError
from kafka_archive.frozen import FrozenModel

__all__ = [
    "RegisteredSchema",
    "ValueDecoder",
    "ValueFormatError",
    "ValueSpec",
    "arrow_type",
    "infer_json_schema",
    "registry_from_records",
    "sniff_format",
]

VALUE_FORMATS = ("json", "avro", "auto")
TYPED_COLUMN = "value_typed"
SCHEMA_ID_COLUMN = "value_schema_id"
_CONFLUENT_MAGIC = 0


class ValueFormatError(KafkaArchiveError):
    """A value format the export cannot set up (no schema for the subject, a schema it cannot
    map to columns)."""


class RegisteredSchema(FrozenModel):
    """One registration read from ``_schemas``: ``id`` had ``schema`` from ``registered_ms``."""

    id: int
    subject: str
    version: int
    schema_: str = Field(alias="schema")
    registered_ms: int
    deleted: bool = False


class ValueSpec(FrozenModel):
    """How a task decodes values (made once by the planner, shipped to every task)."""

    format: Literal["json", "avro"]
    #: the Avro schema (JSON text) the typed column follows
    column_schema: str
    #: avro: every registration of the ids (any subject), oldest first
    registry: list[RegisteredSchema] = Field(default_factory=list)


# -- Avro schema -> Arrow type ----------------------------------------------------------------

_PRIMITIVES: dict[str, pa.DataType] = {
    "null": pa.null(), "boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(),
    "float": pa.float32(), "double": pa.float64(), "bytes": pa.binary(), "string": pa.string(),
}  # fmt: skip
_LOGICAL: dict[tuple[str, str], pa.DataType] = {
    ("int", "date"): pa.date32(),
    ("int", "time-millis"): pa.time32("ms"),
    ("long", "time-micros"): pa.time64("us"),
    ("long", "timestamp-millis"): pa.timestamp("ms", tz="UTC"),
    ("long", "timestamp-micros"): pa.timestamp("us", tz="UTC"),
    ("long", "local-timestamp-millis"): pa.timestamp("ms"),
    ("long", "local-timestamp-micros"): pa.timestamp("us"),
}


def _strip_unmapped_logical(schema: Any) -> Any:
    """The schema without the logical types :func:`arrow_type` does not map (uuid, duration,
    ...): those values are then read as their underlying Avro type."""
    if isinstance(schema, list):
        return [_strip_unmapped_logical(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _strip_unmapped_logical(v) for k, v in schema.items()}
    lt, base = out.get("logicalType"), out.get("type")
    if lt is not None and (base, lt) not in _LOGICAL and lt != "decimal":
        del out["logicalType"]
    if "fields" in out:
        out["fields"] = [
            {**f, "type": _strip_unmapped_logical(f["type"])} for f in schema["fields"]
        ]
    return out


def arrow_type(schema: Any, names: dict[str, pa.DataType] | None = None) -> pa.DataType:
    """The Arrow type of values of an Avro schema (parsed JSON). Unions of null and one type
    are that type (nullable); other unions are JSON text (string).

    Raises:
        ValueFormatError: a type it cannot map (an unknown or recursive named type).
    """
    names = {} if names is None else names
    if isinstance(schema, str):
        if schema in _PRIMITIVES:
            return _PRIMITIVES[schema]
        if schema in names:
            return names[schema]
        raise ValueFormatError(f"the value schema names type {schema!r}, defined nowhere before")
    if isinstance(schema, list):
        branches = [s for s in schema if s != "null"]
        if len(branches) == 1:
            return arrow_type(branches[0], names)
        return pa.null() if not branches else pa.string()
    kind = schema.get("type")
    lt = schema.get("logicalType")
    if lt == "decimal" and kind in ("bytes", "fixed") and int(schema.get("precision", 0)) <= 38:
        return pa.decimal128(int(schema["precision"]), int(schema.get("scale", 0)))
    if isinstance(kind, str) and (kind, lt) in _LOGICAL:
        return _LOGICAL[(kind, lt)]
    if kind == "record":
        fields = [pa.field(f["name"], arrow_type(f["type"], names)) for f in schema["fields"]]
        t: pa.DataType = pa.struct(fields)
    elif kind == "enum":
        t = pa.string()
    elif kind == "array":
        t = pa.list_(arrow_type(schema["items"], names))
    elif kind == "map":
        t = pa.map_(pa.string(), arrow_type(schema["values"], names))
    elif kind == "fixed":
        t = pa.binary(int(schema["size"]))
    else:
        return arrow_type(kind, names)
    if "name" in schema:
        names[schema["name"]] = t
        if "namespace" in schema:
            names[f"{schema['namespace']}.{schema['name']}"] = t
    return t


class _Mismatch(InternalSignal):
    """A value of the wrong kind for its place in the schema (not decoded)."""


def _to_column(value: Any, schema: Any) -> Any:
    """A decoded value made fit for :func:`arrow_type`'s type: general unions as JSON text,
    maps as item lists; :class:`_Mismatch` for a number of the wrong kind (which pyarrow would
    convert silently)."""
    if value is None:
        return None
    if isinstance(schema, list):
        branches = [s for s in schema if s != "null"]
        if len(branches) == 1:
            return _to_column(value, branches[0])
        return value if isinstance(value, str) else json.dumps(value, default=str)
    if not isinstance(schema, dict):
        if schema == "string" and not isinstance(value, str):
            return json.dumps(value, default=str)  # a JSON field of mixed types
        if schema in ("int", "long") and (not isinstance(value, int) or isinstance(value, bool)):
            raise _Mismatch  # pyarrow would truncate 1.5 to 1
        if schema in ("float", "double") and (
            not isinstance(value, (int, float)) or isinstance(value, bool)
        ):
            raise _Mismatch
        return value
    kind = schema.get("type")
    if kind == "record" and isinstance(value, dict):
        return {f["name"]: _to_column(value.get(f["name"]), f["type"]) for f in schema["fields"]}
    if kind == "array" and isinstance(value, list):
        return [_to_column(v, schema["items"]) for v in value]
    if kind == "map" and isinstance(value, dict):
        return [(k, _to_column(v, schema["values"])) for k, v in value.items()]
    if isinstance(kind, (dict, list)):
        return _to_column(value, kind)
    return value


# -- JSON schema inference ------------------------------------------------------------------------


def _infer(value: Any) -> Any:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "long" if -(2**63) <= value < 2**63 else "double"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        items: Any = "null"
        for v in value:
            items = _merge(items, _infer(v))
        return {"type": "array", "items": items}
    fields = {str(k): _infer(v) for k, v in value.items()}
    return {"type": "record", "fields": fields}


def _merge(a: Any, b: Any) -> Any:
    if a == b:
        return a
    if a == "null":
        return b
    if b == "null":
        return a
    if {a, b} == {"long", "double"} if isinstance(a, str) and isinstance(b, str) else False:
        return "double"
    if isinstance(a, dict) and isinstance(b, dict) and a["type"] == b["type"]:
        if a["type"] == "array":
            return {"type": "array", "items": _merge(a["items"], b["items"])}
        fields = dict(a["fields"])
        for k, v in b["fields"].items():
            fields[k] = _merge(fields.get(k, "null"), v)
        return {"type": "record", "fields": fields}
    return "string"  # conflicting shapes: JSON text


def _to_avro(inferred: Any, path: str) -> Any:
    """Inferred shapes as an Avro schema (record fields nullable, records named by path)."""
    if isinstance(inferred, str):
        return inferred
    if inferred["type"] == "array":
        return {"type": "array", "items": _nullable(_to_avro(inferred["items"], path + "_item"))}
    return {
        "type": "record",
        "name": path,
        "fields": [
            {"name": k, "type": _nullable(_to_avro(v, f"{path}_{_ident(k)}")), "default": None}
            for k, v in inferred["fields"].items()
        ],
    }


def _ident(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name) or "_"


def _nullable(schema: Any) -> Any:
    return schema if schema == "null" else ["null", schema]


def infer_json_schema(values: Iterable[bytes | None]) -> dict[str, Any] | str | None:
    """An Avro schema for the JSON among ``values`` (those that do not parse are skipped);
    ``None`` when none parses."""
    shape: Any = None
    for raw in values:
        parsed = _parse_json(raw)
        if parsed is _NOT_JSON:
            continue
        shape = _infer(parsed) if shape is None else _merge(shape, _infer(parsed))
    return None if shape is None else _to_avro(shape, "value")


_NOT_JSON = object()


def _parse_json(raw: bytes | None) -> Any:
    if raw is None:
        return _NOT_JSON
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return _NOT_JSON


# -- the registry ----------------------------------------------------------------------------------


def registry_from_records(
    records: Iterable[tuple[int, bytes | None, bytes | None]],
) -> list[RegisteredSchema]:
    """The schema registrations of ``_schemas`` records ``(timestamp, key, value)`` in offset
    order (other key types - CONFIG, MODE, NOOP, DELETE_SUBJECT - and non-Avro schemas are
    skipped; a tombstone or ``deleted`` keeps the registration: archived data still uses it)."""
    out: dict[tuple[int, str], RegisteredSchema] = {}
    for ts, key, value in records:
        try:
            k = json.loads(key or b"null")
            v = json.loads(value) if value is not None else None
        except ValueError:
            continue
        if not isinstance(k, dict) or k.get("keytype") != "SCHEMA" or not isinstance(v, dict):
            continue
        if v.get("schemaType", "AVRO") != "AVRO" or "id" not in v or "schema" not in v:
            continue
        reg = RegisteredSchema.model_validate(
            {"id": v["id"], "subject": v.get("subject", k.get("subject", "")),
             "version": v.get("version", k.get("version", 0)), "schema": v["schema"],
             "registered_ms": ts, "deleted": bool(v.get("deleted", False))}
        )  # fmt: skip
        prior = out.get((reg.id, reg.schema_))
        if prior is None:
            out[(reg.id, reg.schema_)] = reg
        elif reg.deleted != prior.deleted:
            out[(reg.id, reg.schema_)] = prior.model_copy(update={"deleted": reg.deleted})
    return sorted(out.values(), key=lambda r: (r.registered_ms, r.id))


def column_schema_for_subject(registry: Sequence[RegisteredSchema], subject: str) -> str:
    """The newest version registered under ``subject`` (not deleted, if any is not).

    Raises:
        ValueFormatError: the archived ``_schemas`` has no schema under ``subject``.
    """
    found = [r for r in registry if r.subject == subject]
    if not found:
        raise ValueFormatError(
            f"the archived _schemas topic has no Avro schema under subject {subject!r}",
            hint="archive the cluster's _schemas topic, or export with --value-format json",
        )
    live = [r for r in found if not r.deleted] or found
    return max(live, key=lambda r: (r.version, r.registered_ms)).schema_


def is_framed(raw: bytes | None) -> bool:
    return raw is not None and len(raw) >= 5 and raw[0] == _CONFLUENT_MAGIC


def sniff_format(
    values: Sequence[bytes | None], registry: Sequence[RegisteredSchema]
) -> Literal["json", "avro"] | None:
    """``--value-format auto``: avro when most sampled values are framed with a known id, json
    when most parse as JSON, else ``None`` (raw only)."""
    present = [v for v in values if v is not None]
    if not present:
        return None
    ids = {r.id for r in registry}
    framed = sum(1 for v in present if is_framed(v) and int.from_bytes(v[1:5], "big") in ids)
    if framed * 2 > len(present):
        return "avro"
    parsed = sum(1 for v in present if _parse_json(v) is not _NOT_JSON)
    return "json" if parsed * 2 > len(present) else None


# -- decoding --------------------------------------------------------------------------------------


class ValueDecoder:
    """Adds the typed column(s) to tables of the export's rows (see the module docstring)."""

    def __init__(self, spec: ValueSpec) -> None:
        import fastavro

        self.spec = spec
        column = _strip_unmapped_logical(json.loads(spec.column_schema))
        self._column_avro = column
        self.type = arrow_type(column)
        self.decoded = 0
        self.undecoded = 0
        self._reader = fastavro.parse_schema(column, named_schemas={})
        self._writers: dict[int, list[tuple[int, Any]]] = {}
        for reg in spec.registry:
            writer = _strip_unmapped_logical(json.loads(reg.schema_))
            parsed = fastavro.parse_schema(writer, named_schemas={})
            self._writers.setdefault(reg.id, []).append((reg.registered_ms, parsed))

    def fields(self) -> list[pa.Field]:
        """The columns added after :data:`~kafka_archive.export.schema.FILE_SCHEMA`'s."""
        out = [pa.field(TYPED_COLUMN, self.type)]
        if self.spec.format == "avro":
            out.append(pa.field(SCHEMA_ID_COLUMN, pa.int32()))
        return out

    def _writer_for(self, schema_id: int, ts: int | None) -> Any:
        regs = self._writers.get(schema_id)
        if not regs:
            return None
        at = [w for t, w in regs if ts is not None and t <= ts]
        return at[-1] if at else regs[0][1]

    def _decode_avro(self, raw: bytes, ts: int | None) -> tuple[Any, int | None]:
        import fastavro

        if not is_framed(raw):
            return _NOT_JSON, None
        schema_id = int.from_bytes(raw[1:5], "big")
        writer = self._writer_for(schema_id, ts)
        if writer is None:
            return _NOT_JSON, schema_id
        body = io.BytesIO(raw[5:])
        try:
            value = fastavro.schemaless_reader(body, writer, self._reader)
        except Exception:  # any failure of a body to decode is "undecoded"
            return _NOT_JSON, schema_id
        if body.tell() != len(raw) - 5:
            return _NOT_JSON, schema_id  # bytes left over: not this schema's body
        return value, schema_id

    def decode(self, table: pa.Table) -> pa.Table:
        """``table`` with the typed column(s) appended; counts in :attr:`decoded` /
        :attr:`undecoded`."""
        raws = table.column("value").to_pylist()
        ts_col = table.column("timestamp").cast(pa.int64()).to_pylist()
        values: list[Any] = []
        ids: list[int | None] = []
        for raw, ts in zip(raws, ts_col, strict=True):
            schema_id = None
            if raw is None:
                value = None
            elif self.spec.format == "avro":
                value, schema_id = self._decode_avro(raw, ts)
            else:
                value = _parse_json(raw)
            if value is _NOT_JSON:
                self.undecoded += 1
                values.append(None)
            else:
                try:
                    values.append(_to_column(value, self._column_avro))
                    self.decoded += raw is not None
                except _Mismatch:
                    self.undecoded += 1
                    values.append(None)
            ids.append(schema_id)
        typed = self._array(values, [r is not None for r in raws])
        table = table.append_column(pa.field(TYPED_COLUMN, self.type), typed)
        if self.spec.format == "avro":
            table = table.append_column(
                pa.field(SCHEMA_ID_COLUMN, pa.int32()), pa.array(ids, pa.int32())
            )
        return table

    def _array(self, values: list[Any], present: list[bool]) -> pa.Array:
        """The typed array; a value that does not fit the type is null and counted."""
        try:
            return pa.array(values, self.type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
            pass
        fitted: list[Any] = []
        for value, was in zip(values, present, strict=True):
            if value is not None:
                try:
                    pa.array([value], self.type)
                except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
                    value = None
                    if was:
                        self.decoded -= 1
                        self.undecoded += 1
            fitted.append(value)
        return pa.array(fitted, self.type)
