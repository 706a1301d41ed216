"""Names of the files and directories inside a Kafka log directory.

Facts (from Kafka's ``LogFileUtils``, ``LocalLog``, ``raft/Snapshots``):

* A segment's files share a prefix: the segment's *base offset* as exactly 20 zero-padded decimal
  digits (``NumberFormat`` with 20 minimum digits; a non-negative int64 never needs more), then a
  suffix: ``.log``, ``.index``, ``.timeindex``, ``.txnindex``. Producer-state snapshots use the
  same prefix with ``.snapshot``, where the number is the snapshot's (exclusive) end offset.
* While the broker works on a file it may carry one more *transient* suffix: ``.deleted``
  (scheduled for async deletion; also used for ``.snapshot``), ``.cleaned`` (written by the log
  cleaner) and ``.swap`` (about to replace the original), e.g. ``00000000000000000000.log.swap``.
* A partition directory is ``<topic>-<partition>``. Kafka renames it to
  ``<topic>-<partition>.<uniqueId>-delete`` (deletion pending), ``...-future`` (being moved to
  another log dir) or ``...-stray`` (not assigned to this broker); ``uniqueId`` is a UUID
  without dashes. For ``-delete`` and ``-stray`` the *topic is truncated* so that the whole name
  stays within 255 characters, so the topic parsed from such a name may be a prefix of the real
  one.

Contracts: every parser here is a pure function of a name (never touches the file system) and
raises :class:`~segment_lib.errors.InvalidFileNameError` (``position`` = ``None``) for a name that
does not follow the rules. :func:`classify_file` never raises: unknown names are ``UNKNOWN``.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Final, Literal, NamedTuple, cast

from segment_lib.errors import InvalidFileNameError

__all__ = [
    "CLEANED_SUFFIX",
    "DELETED_SUFFIX",
    "INDEX_SUFFIX",
    "LOG_SUFFIX",
    "SEGMENT_SUFFIXES",
    "SNAPSHOT_SUFFIX",
    "SWAP_SUFFIX",
    "TIME_INDEX_SUFFIX",
    "TRANSIENT_SUFFIXES",
    "TXN_INDEX_SUFFIX",
    "FileClass",
    "FileKind",
    "PartitionDirName",
    "SegmentFileName",
    "SegmentSuffix",
    "TransientSuffix",
    "classify_file",
    "format_partition_dir_name",
    "parse_dumpable_file_name",
    "parse_partition_dir_name",
    "parse_segment_file_name",
    "segment_file_name",
]

SegmentSuffix = Literal[".log", ".index", ".timeindex", ".txnindex", ".snapshot"]
TransientSuffix = Literal[".deleted", ".cleaned", ".swap"]
DirState = Literal["delete", "future", "stray"]

LOG_SUFFIX: Final = ".log"
INDEX_SUFFIX: Final = ".index"
TIME_INDEX_SUFFIX: Final = ".timeindex"
TXN_INDEX_SUFFIX: Final = ".txnindex"
SNAPSHOT_SUFFIX: Final = ".snapshot"
DELETED_SUFFIX: Final = ".deleted"
CLEANED_SUFFIX: Final = ".cleaned"
SWAP_SUFFIX: Final = ".swap"

SEGMENT_SUFFIXES: Final[tuple[SegmentSuffix, ...]] = (
    LOG_SUFFIX,
    INDEX_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    SNAPSHOT_SUFFIX,
)
TRANSIENT_SUFFIXES: Final[tuple[TransientSuffix, ...]] = (
    DELETED_SUFFIX,
    CLEANED_SUFFIX,
    SWAP_SUFFIX,
)

_INT64_MAX: Final = (1 << 63) - 1
_INT32_MAX: Final = (1 << 31) - 1
_OFFSET_DIGITS: Final = 20
# Producer snapshots are only ever renamed to ``.deleted``; the cleaner's ``.cleaned``/``.swap``
# apply to the segment's log and index files only.
_SNAPSHOT_TRANSIENTS: Final = frozenset({DELETED_SUFFIX})

_SEGMENT_RE: Final = re.compile(
    r"(?P<offset>[0-9]{20})(?P<kind>\.log|\.index|\.timeindex|\.txnindex|\.snapshot)"
    r"(?P<transient>\.deleted|\.cleaned|\.swap)?"
)
# Kafka's own check (LocalLog.DeleteDirPattern etc.): ^(\S+)-(\S+)\.(\S+)<suffix>$ .
_TRANSIENT_DIR_RE: Final = re.compile(r"(\S+)-(\S+)\.(\S+)-(delete|future|stray)")
# Legal topic characters and maximum length (Kafka's Topic.validate).
_TOPIC_RE: Final = re.compile(r"[a-zA-Z0-9._-]{1,249}")
# KRaft snapshot (raft Snapshots.java): <20-digit end offset>-<10-digit epoch>.checkpoint,
# plus .part while being written and .deleted once scheduled for deletion.
_KRAFT_SNAPSHOT_RE: Final = re.compile(r"[0-9]{20}-[0-9]{10}\.checkpoint(\.part|\.deleted)?")


class SegmentFileName(NamedTuple):
    """A parsed segment-family file name: unpacks as ``(base_offset, kind, transient)``."""

    base_offset: int
    kind: SegmentSuffix
    transient: TransientSuffix | None


class PartitionDirName(NamedTuple):
    """A parsed partition directory name.

    ``state`` is ``None`` for a live partition directory, otherwise the transient state; then
    ``unique_id`` holds the id Kafka put between the ``.`` and the suffix.
    """

    topic: str
    partition: int
    state: DirState | None = None
    unique_id: str | None = None


def segment_file_name(
    base_offset: int, suffix: SegmentSuffix, transient: TransientSuffix | None = None
) -> str:
    """Kafka's file name for ``base_offset`` with ``suffix`` (and an optional transient suffix)."""
    if not 0 <= base_offset <= _INT64_MAX:
        raise ValueError(f"base offset {base_offset} is not a non-negative int64")
    if suffix not in SEGMENT_SUFFIXES:
        raise ValueError(f"unknown segment suffix {suffix!r}")
    if transient is not None and transient not in TRANSIENT_SUFFIXES:
        raise ValueError(f"unknown transient suffix {transient!r}")
    return f"{base_offset:0{_OFFSET_DIGITS}d}{suffix}{transient or ''}"


def parse_segment_file_name(name: str) -> SegmentFileName:
    """Parse ``00000000000000000123.log`` (or ``.index.swap`` etc.) into its parts.

    Raises InvalidFileNameError for anything else, including a number that does not fit an
    int64 and a snapshot with a cleaner suffix (Kafka never creates those).
    """
    m = _SEGMENT_RE.fullmatch(name)
    if m is None:
        raise InvalidFileNameError(
            f"{name!r} is not a segment file name",
            expected="20 digits + .log/.index/.timeindex/.txnindex/.snapshot"
            " [+ .deleted/.cleaned/.swap]",
        )
    offset = int(m["offset"])
    if offset > _INT64_MAX:
        raise InvalidFileNameError(
            f"{name!r}: offset {offset} does not fit an int64", expected="offset <= 2^63-1"
        )
    kind = cast(SegmentSuffix, m["kind"])
    transient = cast("TransientSuffix | None", m["transient"])
    if kind == SNAPSHOT_SUFFIX and transient is not None and transient not in _SNAPSHOT_TRANSIENTS:
        raise InvalidFileNameError(
            f"{name!r}: producer snapshots are never {transient}", expected=".snapshot[.deleted]"
        )
    return SegmentFileName(offset, kind, transient)


#: an archived object's name (kafka_archive.archive.layout): the segment's base offset as 20
#: digits, ``-``, the first 16 hex digits of the object's SHA-256, the segment suffix
_ARCHIVED_RE: Final = re.compile(
    r"(?P<offset>[0-9]{20})-[0-9a-f]{16}(?P<kind>\.log|\.index|\.timeindex|\.txnindex|\.snapshot)"
)


def parse_dumpable_file_name(name: str) -> SegmentFileName:
    """Parse a broker's segment file name (:func:`parse_segment_file_name`) or the name of an
    object downloaded from the archive, ``<baseOffset:020d>-<sha16><suffix>`` (e.g.
    ``00000000000000000042-0123456789abcdef.log``): the base offset is its leading digits.

    Raises InvalidFileNameError for anything else.
    """
    m = _ARCHIVED_RE.fullmatch(name)
    if m is None:
        return parse_segment_file_name(name)
    offset = int(m["offset"])
    if offset > _INT64_MAX:
        raise InvalidFileNameError(
            f"{name!r}: offset {offset} does not fit an int64", expected="offset <= 2^63-1"
        )
    return SegmentFileName(offset, cast(SegmentSuffix, m["kind"]), None)


def parse_partition_dir_name(name: str) -> PartitionDirName:
    """Parse ``topic-N`` or ``topic-N.<uniqueId>-delete|-future|-stray``, as LocalLog does.

    Like Kafka, the partition is the text after the *last* ``-`` (topics may contain ``-`` and
    ``.``) and for transient forms everything from the last ``.`` on is the id and suffix.
    Stricter than Kafka: the partition must be plain ASCII digits (no sign) within int32, and the
    topic must use Kafka's legal topic characters (at most 249 of them).
    """
    state: DirState | None = None
    unique_id: str | None = None
    base = name
    if name.endswith(("-delete", "-future", "-stray")):
        m = _TRANSIENT_DIR_RE.fullmatch(name)
        if m is None:
            raise InvalidFileNameError(
                f"{name!r} is not a partition directory name",
                expected="topic-partition.uniqueId-delete|-future|-stray",
            )
        dot = name.rindex(".")
        dash = name.rindex("-")
        base, unique_id = name[:dot], name[dot + 1 : dash]
        state = cast(DirState, name[dash + 1 :])
    dash = base.rfind("-")
    topic, partition_text = base[:dash], base[dash + 1 :]
    if dash < 0 or not topic or not partition_text.isascii() or not partition_text.isdigit():
        raise InvalidFileNameError(
            f"{name!r} is not a partition directory name", expected="topic-partition"
        )
    partition = int(partition_text)
    if partition > _INT32_MAX:
        raise InvalidFileNameError(
            f"{name!r}: partition {partition} does not fit an int32", expected="partition <= 2^31-1"
        )
    if _TOPIC_RE.fullmatch(topic) is None:
        raise InvalidFileNameError(
            f"{name!r}: {topic!r} is not a legal topic name",
            expected="1-249 characters from [a-zA-Z0-9._-]",
        )
    return PartitionDirName(topic, partition, state, unique_id)


def format_partition_dir_name(
    topic: str, partition: int, state: DirState | None = None, unique_id: str | None = None
) -> str:
    """The directory name Kafka uses; ``unique_id`` is required for the transient states.

    For ``delete`` and ``stray`` the topic is truncated so the name fits 255 characters, as in
    ``LocalLog.logDirNameWithSuffixCappedLength``.
    """
    if _TOPIC_RE.fullmatch(topic) is None or not 0 <= partition <= _INT32_MAX:
        raise ValueError(f"illegal topic-partition {topic!r}-{partition}")
    if state is None:
        return f"{topic}-{partition}"
    if not unique_id or not re.fullmatch(r"\S+", unique_id):
        raise ValueError("a transient partition directory needs a non-blank unique_id")
    suffix = f"-{partition}.{unique_id}-{state}"
    if state in ("delete", "stray"):
        topic = topic[: min(len(topic), 255 - len(suffix))]
    return f"{topic}{suffix}"


class FileKind(StrEnum):
    """What a file found in a log directory (or partition directory) is."""

    SEGMENT = "segment"  # .log/.index/.timeindex/.txnindex/.snapshot, maybe with a transient suffix
    OFFSET_CHECKPOINT = "offset_checkpoint"  # recovery-point / replication / log-start / cleaner
    LEADER_EPOCH_CHECKPOINT = "leader_epoch_checkpoint"
    PARTITION_METADATA = "partition_metadata"
    META_PROPERTIES = "meta_properties"
    KRAFT_SNAPSHOT = "kraft_snapshot"  # __cluster_metadata-0/<offset>-<epoch>.checkpoint
    BOOTSTRAP_CHECKPOINT = "bootstrap_checkpoint"  # KRaft bootstrap.checkpoint
    QUORUM_STATE = "quorum_state"
    CLEAN_SHUTDOWN = "clean_shutdown"  # .kafka_cleanshutdown marker
    LOCK = "lock"  # .lock held by a running broker
    UNKNOWN = "unknown"


OFFSET_CHECKPOINT_NAMES: Final = frozenset(
    {
        "recovery-point-offset-checkpoint",
        "replication-offset-checkpoint",
        "log-start-offset-checkpoint",
        "cleaner-offset-checkpoint",
    }
)
_FIXED_NAMES: Final[dict[str, FileKind]] = {
    **dict.fromkeys(OFFSET_CHECKPOINT_NAMES, FileKind.OFFSET_CHECKPOINT),
    "leader-epoch-checkpoint": FileKind.LEADER_EPOCH_CHECKPOINT,
    "partition.metadata": FileKind.PARTITION_METADATA,
    "meta.properties": FileKind.META_PROPERTIES,
    "bootstrap.checkpoint": FileKind.BOOTSTRAP_CHECKPOINT,
    "quorum-state": FileKind.QUORUM_STATE,
    ".kafka_cleanshutdown": FileKind.CLEAN_SHUTDOWN,
    ".lock": FileKind.LOCK,
}


class FileClass(NamedTuple):
    """Result of :func:`classify_file`.

    ``temporary`` marks a ``<name>.tmp`` file: Kafka writes checkpoints, metadata files and
    quorum-state to ``.tmp`` and renames them atomically, so a leftover ``.tmp`` is an
    interrupted write of the file ``kind`` describes. ``segment`` is set for SEGMENT files.
    """

    kind: FileKind
    temporary: bool = False
    segment: SegmentFileName | None = None


def classify_file(name: str) -> FileClass:
    """Classify a file name found in a Kafka log directory; never raises."""
    kind = _FIXED_NAMES.get(name)
    if kind is not None:
        return FileClass(kind)
    if name.endswith(".tmp") and _FIXED_NAMES.get(name[: -len(".tmp")]) is not None:
        return FileClass(_FIXED_NAMES[name[: -len(".tmp")]], temporary=True)
    if _KRAFT_SNAPSHOT_RE.fullmatch(name):
        return FileClass(FileKind.KRAFT_SNAPSHOT)
    try:
        return FileClass(FileKind.SEGMENT, segment=parse_segment_file_name(name))
    except InvalidFileNameError:
        return FileClass(FileKind.UNKNOWN)
