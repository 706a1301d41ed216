"""Object keys of the archive: where every archived file and manifest lives in the store.

Layout (all keys relative to the store root; ``<sha16>`` is the first 16 hex digits of the
file's own SHA-256, offsets are zero-padded to 20 digits like Kafka's file names)::

    <cluster>/<topic>/<partition>/<baseOffset>-<sha16>.log          segment data
    <cluster>/<topic>/<partition>/<baseOffset>-<sha16>.index        offset index
    <cluster>/<topic>/<partition>/<baseOffset>-<sha16>.timeindex    time index
    <cluster>/<topic>/<partition>/<baseOffset>-<sha16>.txnindex     aborted-transaction index
    <cluster>/<topic>/<partition>/<snapshotOffset>-<sha16>.snapshot producer-state snapshot
    <cluster>/<topic>/<partition>/manifests/<baseOffset>-<sha16 of the .log>.json
    <cluster>/<topic>/<partition>/manifests/pruned.json               retention watermark
    <cluster>/_quarantine/<topic>/<partition>/<baseOffset>-<sha16 of the .log>/<file name>
    <cluster>/_quarantine/<topic>/<partition>/<baseOffset>-<sha16 of the .log>/error.json

Contracts:

* **Content addressing.** Every data key names the SHA-256 of exactly the bytes stored under it,
  so a key is written once and never changes: identical bytes map to the same key (and are never
  uploaded twice) and new bytes (a segment rewritten by log compaction) to a new key beside the
  old one. A segment's identity is the SHA-256 of its ``.log``; its manifest is keyed by it.
* **Names.** The cluster name must be a plain key segment (``[A-Za-z0-9][A-Za-z0-9._-]*``).
  Topic names use Kafka's legal characters ``[a-zA-Z0-9._-]``; the few that could not be used
  verbatim as a key segment (a leading ``.`` such as ``..`` or ``.ka-x``, and the reserved
  ``_quarantine``) get their first character percent-encoded (``%2E``, ``%5F``). Kafka topics
  never contain ``%``, so the mapping is reversible (:func:`topic_from_key_segment`).
* These functions are pure (no store access); they raise ``ValueError`` for bad input.
"""

from __future__ import annotations

import re
from typing import Final, Literal, NamedTuple

__all__ = [
    "MANIFEST_DIR",
    "QUARANTINE_DIR",
    "QUARANTINE_ERROR_FILE",
    "SEGMENT_EXTENSIONS",
    "ManifestKey",
    "ObjectExtension",
    "check_cluster",
    "cluster_prefix",
    "manifest_key",
    "manifest_prefix",
    "object_key",
    "parse_manifest_key",
    "partition_prefix",
    "pruned_marker_key",
    "quarantine_partition_prefix",
    "quarantine_prefix",
    "sha16",
    "topic_from_key_segment",
    "topic_key_segment",
    "topic_prefix",
]

ObjectExtension = Literal[".log", ".index", ".timeindex", ".txnindex", ".snapshot"]

SEGMENT_EXTENSIONS: Final[tuple[ObjectExtension, ...]] = (
    ".log",
    ".index",
    ".timeindex",
    ".txnindex",
    ".snapshot",
)
MANIFEST_DIR: Final = "manifests"
QUARANTINE_DIR: Final = "_quarantine"
QUARANTINE_ERROR_FILE: Final = "error.json"

_CLUSTER_RE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
_TOPIC_RE: Final = re.compile(r"[a-zA-Z0-9._-]{1,249}")
_SHA256_RE: Final = re.compile(r"[0-9a-f]{64}")
_RESERVED_TOPIC_SEGMENTS: Final = frozenset({QUARANTINE_DIR})
_INT64_MAX: Final = (1 << 63) - 1
_INT32_MAX: Final = (1 << 31) - 1
# <cluster>/<topic segment>/<partition>/manifests/<20 digits>-<16 hex>.json
_MANIFEST_KEY_RE: Final = re.compile(
    r"(?P<cluster>[^/]+)/(?P<topic>[^/]+)/(?P<partition>[0-9]+)/"
    + MANIFEST_DIR
    + r"/(?P<base>[0-9]{20})-(?P<sha16>[0-9a-f]{16})\.json"
)


class ManifestKey(NamedTuple):
    """The parts of a manifest key (see :func:`parse_manifest_key`)."""

    key: str
    cluster: str
    topic: str
    partition: int
    base_offset: int
    sha16: str


def check_cluster(cluster: str) -> str:
    """``cluster`` if it can name a cluster in the store's keys, else ValueError."""
    if not isinstance(cluster, str) or _CLUSTER_RE.fullmatch(cluster) is None:
        raise ValueError(
            f"cluster name {cluster!r} must match [A-Za-z0-9][A-Za-z0-9._-]* (max 200 chars)"
        )
    return cluster


def _check_partition(partition: int) -> int:
    if isinstance(partition, bool) or not isinstance(partition, int):
        raise ValueError(f"partition must be an int, not {partition!r}")
    if not 0 <= partition <= _INT32_MAX:
        raise ValueError(f"partition {partition} is not a non-negative int32")
    return partition


def _check_offset(offset: int) -> int:
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise ValueError(f"offset must be an int, not {offset!r}")
    if not 0 <= offset <= _INT64_MAX:
        raise ValueError(f"offset {offset} is not a non-negative int64")
    return offset


def sha16(sha256: str) -> str:
    """The 16-hex-digit key tag of a lowercase hex SHA-256."""
    if not isinstance(sha256, str) or _SHA256_RE.fullmatch(sha256) is None:
        raise ValueError(f"{sha256!r} is not a lowercase hex SHA-256")
    return sha256[:16]


def topic_key_segment(topic: str) -> str:
    """The key segment for ``topic`` (the topic itself unless it needs escaping)."""
    if not isinstance(topic, str) or _TOPIC_RE.fullmatch(topic) is None:
        raise ValueError(f"{topic!r} is not a legal Kafka topic name")
    if topic.startswith(".") or topic in _RESERVED_TOPIC_SEGMENTS:
        return f"%{ord(topic[0]):02X}{topic[1:]}"
    return topic


def topic_from_key_segment(segment: str) -> str:
    """Inverse of :func:`topic_key_segment`."""
    if segment.startswith("%") and len(segment) >= 3:
        return chr(int(segment[1:3], 16)) + segment[3:]
    return segment


def cluster_prefix(cluster: str) -> str:
    """``<cluster>/``: everything archived for one cluster."""
    return f"{check_cluster(cluster)}/"


def topic_prefix(cluster: str, topic: str) -> str:
    """``<cluster>/<topic>/``."""
    return f"{cluster_prefix(cluster)}{topic_key_segment(topic)}/"


def partition_prefix(cluster: str, topic: str, partition: int) -> str:
    """``<cluster>/<topic>/<partition>/``: the data objects of one partition."""
    return f"{topic_prefix(cluster, topic)}{_check_partition(partition)}/"


def object_key(
    cluster: str, topic: str, partition: int, offset: int, sha256: str, ext: ObjectExtension
) -> str:
    """Key of one archived file: ``<partition prefix><offset:020d>-<sha16><ext>``.

    ``offset`` is the segment's base offset, or for a producer snapshot the snapshot's offset.
    """
    if ext not in SEGMENT_EXTENSIONS:
        raise ValueError(f"unknown archived file extension {ext!r}")
    prefix = partition_prefix(cluster, topic, partition)
    return f"{prefix}{_check_offset(offset):020d}-{sha16(sha256)}{ext}"


def manifest_prefix(cluster: str, topic: str, partition: int) -> str:
    """``<cluster>/<topic>/<partition>/manifests/``: list this to find a partition's segments."""
    return f"{partition_prefix(cluster, topic, partition)}{MANIFEST_DIR}/"


def pruned_marker_key(cluster: str, topic: str, partition: int) -> str:
    """Key of the partition's retention watermark (:mod:`kafka_archive.archive.pruned`): beside
    the manifests, so the listing the archiver does anyway finds it. Not a manifest key."""
    return f"{manifest_prefix(cluster, topic, partition)}pruned.json"


def manifest_key(
    cluster: str, topic: str, partition: int, base_offset: int, log_sha256: str
) -> str:
    """Key of the manifest of the segment whose ``.log`` has SHA-256 ``log_sha256``."""
    prefix = manifest_prefix(cluster, topic, partition)
    return f"{prefix}{_check_offset(base_offset):020d}-{sha16(log_sha256)}.json"


def parse_manifest_key(key: str) -> ManifestKey | None:
    """Split a manifest key into its parts; ``None`` if ``key`` is not a manifest key."""
    m = _MANIFEST_KEY_RE.fullmatch(key)
    if m is None or m["cluster"] == QUARANTINE_DIR or m["topic"] == QUARANTINE_DIR:
        return None
    return ManifestKey(
        key,
        m["cluster"],
        topic_from_key_segment(m["topic"]),
        int(m["partition"]),
        int(m["base"]),
        m["sha16"],
    )


def quarantine_partition_prefix(cluster: str, topic: str, partition: int) -> str:
    """``<cluster>/_quarantine/<topic>/<partition>/``."""
    return (
        f"{cluster_prefix(cluster)}{QUARANTINE_DIR}/{topic_key_segment(topic)}/"
        f"{_check_partition(partition)}/"
    )


def quarantine_prefix(
    cluster: str, topic: str, partition: int, base_offset: int, log_sha256: str
) -> str:
    """``<cluster>/_quarantine/<topic>/<partition>/<baseOffset>-<sha16>/``: one corrupt
    segment's files (under their broker file names) and its ``error.json``."""
    return (
        f"{quarantine_partition_prefix(cluster, topic, partition)}"
        f"{_check_offset(base_offset):020d}-{sha16(log_sha256)}/"
    )
