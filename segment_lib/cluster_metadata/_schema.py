"""A message-schema interpreter for Kafka's versioned protocol messages (metadata records).

Private to :mod:`segment_lib.cluster_metadata`. A :class:`Message` is Kafka's JSON schema of one
message in our own form (``schemas.py`` holds the table); :func:`read_message` reads one version
of it from bytes as Kafka's generated ``Message.read(readable, version)`` does, and returns the
fields as Kafka's generated ``*JsonConverter.write(message, version)`` prints them:

* camelCase field names in schema order; a field the version does not have is absent;
* a tagged field is absent when it holds its default (the converter's non-default check);
* int8/16/32/64 and uint16 as ``int``, float64 as ``float``, bool as ``bool``;
* uuid as Kafka's ``Uuid.toString()``: URL-safe base64 without padding;
* bytes as standard base64 with padding (Jackson's ``BinaryNode``);
* nullable strings, bytes and arrays as ``None`` when null; structs as ``dict``.

Unknown tagged fields are skipped (the converter does not print them). Fields marked ``secret``
(SCRAM salts and keys) are left out unless ``include_secrets``. Every malformed input raises
:class:`~segment_lib.errors.CorruptRecordError` with the byte position in the buffer.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from segment_lib.consumer_offsets._wire import PRIMITIVE_READ, Reader

__all__ = ["Field", "Message", "kafka_uuid", "read_message"]

Versions = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a message schema (a JSON ``fields`` entry).

    ``kind``: a primitive (int8, int16, int32, int64, uint16, float64, bool, uuid, string,
    bytes), ``struct``, or ``[]`` + one of those. ``versions``/``nullable``/``tagged``: inclusive
    version ranges (``None``: never). ``default``: the schema's default, as written there.
    """

    name: str
    kind: str
    versions: Versions
    nullable: Versions | None = None
    tag: int | None = None
    tagged: Versions | None = None
    default: str | None = None
    secret: bool = False
    fields: tuple[Field, ...] = ()


@dataclass(frozen=True, slots=True)
class Message:
    """One message schema: ``type_name`` is Kafka's MetadataRecordType (or control type) name."""

    name: str
    type_name: str
    api_key: int | None
    valid: Versions
    flexible: Versions | None
    fields: tuple[Field, ...]


def _in(version: int, rng: Versions | None) -> bool:
    return rng is not None and rng[0] <= version <= rng[1]


def kafka_uuid(raw: bytes) -> str:
    """Kafka's ``Uuid.toString()``: URL-safe base64 of the 16 bytes, no padding."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


_ZERO_UUID: Final = kafka_uuid(bytes(16))

#: primitive kind -> the protocol reader's method (uuid is read apart: Kafka's text form)
_FIXED: Final[Mapping[str, str]] = {k: v for k, v in PRIMITIVE_READ.items() if k != "uuid"}


def default_value(f: Field) -> Any:
    """The value a field holds when it is not in the bytes (Kafka's generated defaults)."""
    d = f.default
    if d == "null":
        return None
    if f.kind.startswith("[]"):
        return []
    if f.kind in ("int8", "int16", "uint16", "int32", "int64"):
        return int(d, 0) if d else 0
    if f.kind == "float64":
        return float(d) if d else 0.0
    if f.kind == "bool":
        return d == "true"
    if f.kind == "string":
        return d or ""
    if f.kind == "uuid":
        return _ZERO_UUID
    if f.kind == "bytes":
        return ""
    return {g.name: default_value(g) for g in f.fields if not g.secret}


def _read_value(
    r: Reader, f: Field, kind: str, version: int, flexible: bool, where: str, secrets: bool
) -> Any:
    nullable = _in(version, f.nullable)
    if kind in _FIXED:
        return getattr(r, _FIXED[kind])(where)
    if kind == "uuid":
        return kafka_uuid(r.raw(16, where))
    if kind == "string":
        return r.string(where, nullable=nullable, compact=flexible)
    if kind == "bytes":
        blob = r.blob(where, nullable=nullable, compact=flexible)
        return None if blob is None else base64.b64encode(blob).decode("ascii")
    if kind == "struct":
        if nullable and r.i8(f"null marker of {where}") < 0:
            return None
        return _read_fields(r, f.fields, version, flexible, where, secrets)
    if kind.startswith("[]"):
        n = r.array_len(where, nullable=nullable, compact=flexible)
        if n < 0:
            return None
        elem = kind[2:]
        return [
            _read_value(r, f, elem, version, flexible, f"{where}[{i}]", secrets) for i in range(n)
        ]
    raise AssertionError(f"unsupported schema kind {kind}")  # pragma: no cover - schema table


def _read_fields(
    r: Reader,
    fields: tuple[Field, ...],
    version: int,
    flexible: bool,
    where: str,
    secrets: bool,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    tagged: dict[int, Field] = {}
    for f in fields:
        if not _in(version, f.versions):
            continue
        if f.tag is not None and _in(version, f.tagged):
            tagged[f.tag] = f
            out[f.name] = default_value(f)
            continue
        out[f.name] = _read_value(r, f, f.kind, version, flexible, f"{where}.{f.name}", secrets)
    if flexible:
        for tag, start, size in r.tagged_fields(where):
            tf = tagged.get(tag)
            if tf is None:
                continue  # an unknown tagged field: kept by Kafka, never printed
            sub = r.sub(start, size)
            name = f"{where}.{tf.name}"
            out[tf.name] = _read_value(sub, tf, tf.kind, version, True, name, secrets)
            sub.done(f"tagged field {name}")
        for tf in tagged.values():  # the converter omits a tagged field at its default
            if out[tf.name] == default_value(tf):
                del out[tf.name]
    for f in fields:
        if f.secret and not secrets:
            out.pop(f.name, None)
    return out


def read_message(
    r: Reader, msg: Message, version: int, *, include_secrets: bool = False
) -> dict[str, Any]:
    """Read ``msg`` at ``version`` from ``r`` (the caller checks the version is valid and that
    nothing is left after it)."""
    flexible = _in(version, msg.flexible)
    return _read_fields(r, msg.fields, version, flexible, msg.name, include_secrets)
