"""``meta.properties`` (per log directory) and ``partition.metadata`` (per partition directory).

``meta.properties`` (``MetaProperties.java``) is a Java properties file written by
``Properties.store`` and read by ``Properties.load(InputStream)``, i.e. as ISO-8859-1 with Java's
escapes, ``#``/``!`` comments and ``=``/``:``/whitespace separators. Keys Kafka reads:

* ``version``: ``0`` (ZooKeeper era; ``broker.id`` optional) or ``1`` (KRaft; ``node.id`` and
  ``cluster.id`` required); absent means 0;
* ``broker.id`` (read for version 0 only) / ``node.id`` (version 1 only): int32;
* ``cluster.id``: free text (normally a base64 UUID);
* ``directory.id``: a Kafka UUID (22-character URL-safe base64 of 16 bytes), when present.

``partition.metadata`` (``PartitionMetadataFile``) is UTF-8 ``version: 0\\ntopic_id: <uuid>``.
Kafka accepts any version >= 0 there (for downgrades), ignores lines after the second and rejects
the all-zero topic id. Stricter here: the two keys must be ``version`` and ``topic_id``.

Parsers are pure functions of bytes; problems raise
:class:`~segment_lib.errors.InvalidMetadataFileError` with the byte position of the offending
line. Values Kafka would reject are rejected here too.
"""

from __future__ import annotations

import base64
import os
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Final, TypeVar

from segment_lib.errors import InvalidMetadataFileError, SegmentError

__all__ = [
    "MetaProperties",
    "PartitionMetadata",
    "decode_kafka_uuid",
    "encode_kafka_uuid",
    "format_meta_properties",
    "format_partition_metadata",
    "parse_java_properties",
    "parse_meta_properties",
    "parse_partition_metadata",
    "read_meta_properties",
    "read_partition_metadata",
]

_INT32: Final = (-(2**31), 2**31 - 1)
_JAVA_INT: Final = re.compile(r"[+-]?[0-9]+")
_BASE64URL: Final = re.compile(r"[A-Za-z0-9_-]*={0,2}")
_NATURAL_LINE: Final = re.compile(r"([^\r\n]*)(?:\r\n|\r|\n|$)")
_PROPS_BLANK: Final = " \t\f"  # whitespace for Java properties
_ESCAPES: Final = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_KNOWN_KEYS: Final = frozenset({"version", "broker.id", "node.id", "cluster.id", "directory.id"})

T = TypeVar("T")


# ---- Kafka UUIDs -----------------------------------------------------------------------------


def decode_kafka_uuid(text: str) -> uuid.UUID:
    """Kafka's ``Uuid.fromString``: URL-safe base64 (padding optional) of exactly 16 bytes."""
    if len(text) > 24 or _BASE64URL.fullmatch(text) is None or len(text.rstrip("=")) % 4 == 1:
        raise ValueError(f"{text!r} is not URL-safe base64 of at most 24 characters")
    raw = base64.urlsafe_b64decode(text.rstrip("=") + "=" * (-len(text.rstrip("=")) % 4))
    if len(raw) != 16:
        raise ValueError(f"{text!r} decodes to {len(raw)} bytes, not 16")
    return uuid.UUID(bytes=raw)


def encode_kafka_uuid(value: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 without padding (22 characters)."""
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


# ---- Java properties -------------------------------------------------------------------------


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """Java ``Properties`` logical lines with the position where each starts.

    Leading blanks are dropped, blank and comment lines skipped, and a line ending in an odd
    number of backslashes continues on the next natural line (minus its leading blanks).
    """
    lines = [(m.start(), m[1]) for m in _NATURAL_LINE.finditer(text) if m.start() < len(text)]
    i = 0
    while i < len(lines):
        start, line = lines[i]
        i += 1
        body = line.lstrip(_PROPS_BLANK)
        if not body or body[0] in "#!":
            continue
        while (len(body) - len(body.rstrip("\\"))) % 2 == 1 and i < len(lines):
            body = body[:-1] + lines[i][1].lstrip(_PROPS_BLANK)
            i += 1
        if (len(body) - len(body.rstrip("\\"))) % 2 == 1:
            body = body[:-1]  # a continuation at end of file continues into nothing
        yield start + len(line) - len(line.lstrip(_PROPS_BLANK)), body


def _unescape(text: str, position: int) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        i += 1
        if c != "\\" or i == len(text):
            out.append(c)
            continue
        c = text[i]
        i += 1
        if c == "u":
            digits = text[i : i + 4]
            if len(digits) != 4 or not all(d in "0123456789abcdefABCDEF" for d in digits):
                raise InvalidMetadataFileError(
                    "malformed \\uxxxx escape", position=position, expected="4 hex digits"
                )
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append(_ESCAPES.get(c, c))
    return "".join(out)


def _split_key_value(line: str) -> tuple[str, str]:
    # Java LineReader/load0: the key ends at the first unescaped '=', ':' or blank; then blanks
    # and at most one '=' or ':' are skipped before the value.
    backslash = False
    key_end = value_start = len(line)
    has_separator = False
    for i, c in enumerate(line):
        if not backslash and c in "=:":
            key_end, value_start, has_separator = i, i + 1, True
            break
        if not backslash and c in _PROPS_BLANK:
            key_end, value_start = i, i + 1
            break
        backslash = not backslash if c == "\\" else False
    while value_start < len(line):
        c = line[value_start]
        if c not in _PROPS_BLANK:
            if has_separator or c not in "=:":
                break
            has_separator = True
        value_start += 1
    return line[:key_end], line[value_start:]


def parse_java_properties(data: bytes) -> dict[str, tuple[str, int]]:
    """Parse Java properties bytes (ISO-8859-1) into ``{key: (value, line position)}``.

    Later duplicates win, as in ``Properties.load``.
    """
    text = bytes(data).decode("latin-1")  # one char per byte: char index == byte position
    props: dict[str, tuple[str, int]] = {}
    for position, line in _logical_lines(text):
        key, value = _split_key_value(line)
        props[_unescape(key, position)] = (_unescape(value, position), position)
    return props


def _escape(text: str, *, is_key: bool) -> str:
    # Properties.saveConvert (with Unicode escaping, as store(OutputStream) does).
    out = []
    for i, c in enumerate(text):
        if c == " " and (i == 0 or is_key):
            out.append("\\ ")
        elif c in "\\=:#!":
            out.append("\\" + c)
        elif c in "\t\n\r\f":
            out.append("\\" + "tnrf"["\t\n\r\f".index(c)])
        elif not " " <= c <= "~":
            out.append(f"\\u{ord(c):04X}")
        else:
            out.append(c)
    return "".join(out)


# ---- meta.properties -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MetaProperties:
    """Contents of a log directory's ``meta.properties``.

    ``node_id`` comes from ``broker.id`` for version 0 and ``node.id`` for version 1.
    ``properties`` holds every key/value as read, including ones Kafka ignores.
    """

    version: int
    node_id: int | None = None
    cluster_id: str | None = None
    directory_id: str | None = None
    properties: dict[str, str] = field(default_factory=dict, compare=False)


def _int32(text: str, position: int, what: str) -> int:
    if _JAVA_INT.fullmatch(text) is None or not _INT32[0] <= int(text) <= _INT32[1]:
        raise InvalidMetadataFileError(
            f"{what} {text!r} is not an int32", position=position, expected="a decimal int32"
        )
    return int(text)


def parse_meta_properties(data: bytes) -> MetaProperties:
    """Parse ``meta.properties`` bytes, validating them as ``MetaProperties.Builder`` does."""
    props = parse_java_properties(data)
    version_text, version_pos = props.get("version", ("0", 0))
    # MetaPropertiesVersion.fromNumberString trims (Java trim: chars <= U+0020).
    version = _int32(version_text.strip("".join(map(chr, range(33)))), version_pos, "version")
    if version not in (0, 1):
        raise InvalidMetadataFileError(
            f"unknown meta.properties version {version}", position=version_pos, expected="0 or 1"
        )
    node_id = None
    id_key = "broker.id" if version == 0 else "node.id"
    if id_key in props:
        node_id = _int32(*props[id_key], id_key)
    elif version == 1:
        raise InvalidMetadataFileError(
            "version 1 meta.properties lacks node.id", position=len(data), expected="node.id"
        )
    cluster_id = props["cluster.id"][0] if "cluster.id" in props else None
    if version == 1 and cluster_id is None:
        raise InvalidMetadataFileError(
            "version 1 meta.properties lacks cluster.id", position=len(data), expected="cluster.id"
        )
    directory_id = None
    if "directory.id" in props:
        text, position = props["directory.id"]
        try:
            directory_id = encode_kafka_uuid(decode_kafka_uuid(text))
        except ValueError as exc:
            raise InvalidMetadataFileError(
                f"directory.id: {exc}", position=position, expected="a Kafka UUID"
            ) from None
    return MetaProperties(
        version, node_id, cluster_id, directory_id, {k: v for k, (v, _) in props.items()}
    )


def format_meta_properties(meta: MetaProperties) -> bytes:
    """Bytes of a ``meta.properties`` as ``Properties.store`` writes it (without the date line).

    Keys Kafka knows are written from the fields; other entries of ``meta.properties`` follow.
    """
    if meta.version not in (0, 1):
        raise ValueError(f"unknown meta.properties version {meta.version}")
    if meta.version == 1 and (meta.node_id is None or meta.cluster_id is None):
        raise ValueError("version 1 meta.properties needs node_id and cluster_id")
    known: dict[str, str] = {"version": str(meta.version)}
    if meta.cluster_id is not None:
        known["cluster.id"] = meta.cluster_id
    if meta.node_id is not None:
        known["broker.id" if meta.version == 0 else "node.id"] = str(meta.node_id)
    if meta.directory_id is not None:
        known["directory.id"] = encode_kafka_uuid(decode_kafka_uuid(meta.directory_id))
    merged = {**known, **{k: v for k, v in meta.properties.items() if k not in _KNOWN_KEYS}}
    lines = ["#"] + [
        f"{_escape(k, is_key=True)}={_escape(v, is_key=False)}" for k, v in merged.items()
    ]
    return "".join(line + "\n" for line in lines).encode("latin-1")


# ---- partition.metadata ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    """Contents of ``partition.metadata``: format version and the topic id (Kafka base64)."""

    version: int
    topic_id: str

    @property
    def topic_uuid(self) -> uuid.UUID:
        return decode_kafka_uuid(self.topic_id)


def _colon_fields(line: str) -> list[str]:
    parts = re.split(r":[ \t\n\x0b\f\r]+", line)  # Java split(":\\s+")
    while parts and not parts[-1]:
        parts.pop()
    return parts


def parse_partition_metadata(data: bytes) -> PartitionMetadata:
    """Parse ``partition.metadata`` bytes (UTF-8 ``version: N`` then ``topic_id: <uuid>``)."""
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidMetadataFileError(
            "invalid UTF-8", position=exc.start, expected="UTF-8 text"
        ) from None
    lines = [(m.start(), m[1]) for m in _NATURAL_LINE.finditer(text) if m.start() < len(text)]
    lines += [(len(data), "")] * (2 - len(lines))  # a missing line reads as empty at EOF
    (version_pos, version_line), (topic_pos, topic_line) = lines[0], lines[1]
    version_pos = len(text[:version_pos].encode())
    topic_pos = len(text[:topic_pos].encode())
    parts = _colon_fields(version_line)
    if len(parts) != 2 or parts[0] != "version":
        raise InvalidMetadataFileError(
            f"malformed line {version_line!r}", position=version_pos, expected="'version: <n>'"
        )
    version = _int32(parts[1], version_pos, "version")
    if version < 0:
        raise InvalidMetadataFileError(
            f"unrecognized version {version}", position=version_pos, expected="version >= 0"
        )
    parts = _colon_fields(topic_line)
    if len(parts) != 2 or parts[0] != "topic_id":
        raise InvalidMetadataFileError(
            f"malformed line {topic_line!r}", position=topic_pos, expected="'topic_id: <uuid>'"
        )
    try:
        topic_uuid = decode_kafka_uuid(parts[1])
    except ValueError as exc:
        raise InvalidMetadataFileError(
            f"topic_id: {exc}", position=topic_pos, expected="a Kafka UUID"
        ) from None
    if topic_uuid.int == 0:
        raise InvalidMetadataFileError(
            "topic_id is the zero UUID", position=topic_pos, expected="a non-zero topic id"
        )
    return PartitionMetadata(version, encode_kafka_uuid(topic_uuid))


def format_partition_metadata(topic_id: str | uuid.UUID, version: int = 0) -> bytes:
    """Bytes of ``partition.metadata`` exactly as Kafka writes it (no final newline)."""
    value = topic_id if isinstance(topic_id, uuid.UUID) else decode_kafka_uuid(topic_id)
    if value.int == 0 or version < 0:
        raise ValueError("topic id must be non-zero and version >= 0")
    return f"version: {version}\ntopic_id: {encode_kafka_uuid(value)}".encode()


# ---- file helpers ----------------------------------------------------------------------------


def _read(path: str | os.PathLike[str], parse: Callable[[bytes], T]) -> T:
    with open(path, "rb") as f:
        data = f.read()
    try:
        return parse(data)
    except SegmentError as exc:
        raise exc.with_location(path) from None


def read_meta_properties(path: str | os.PathLike[str]) -> MetaProperties:
    """Read a ``meta.properties`` file (errors name ``path``)."""
    return _read(path, parse_meta_properties)


def read_partition_metadata(path: str | os.PathLike[str]) -> PartitionMetadata:
    """Read a ``partition.metadata`` file (errors name ``path``)."""
    return _read(path, parse_partition_metadata)
