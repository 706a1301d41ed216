"""``catalog verify``: re-check the store against the catalog.

The build checked every object once, when it cataloged it; the store may have changed since
(an object deleted by a lifecycle rule, overwritten, rotted). ``verify`` re-checks every
cataloged segment version (every ``segments`` row not already known ``corrupt``) of a cluster:

* **shallow** (default; one HEAD per object and per manifest, no data read): the object still
  exists with the size the catalog recorded, and, when the store reports one, the SHA-256 the
  catalog recorded; its manifest still exists.
* **deep** (``--deep``; reads every byte): additionally the whole object's SHA-256 (the
  checksum the catalog keeps) and every batch's CRC and framing, as the build did
  (:func:`~kafka_archive.catalog.extract.extract_object` with ``verify="sha256"``); and the
  manifest still parses.

Each failure is recorded in ``integrity_problems`` (``detected_by = "verify"``: kinds
``missing-object``, ``changed``, ``corrupt``, ``unreadable-manifest``; see
:mod:`kafka_archive.catalog.problems`), with the byte position where known, so ``gaps`` and
``topics`` show it; a segment that passes has its earlier ``verify`` problems deleted. Store
failures that say nothing about the object (unreachable, access denied) are not problems of
the object: they end the run with :class:`~kafka_archive.store.StoreError`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select

from kafka_archive.archive.manifest import InvalidManifest, read_manifest
from kafka_archive.catalog.db import Catalog
from kafka_archive.catalog.integrity import ObjectIntegrityError
from kafka_archive.catalog.models import Partition, Segment
from kafka_archive.catalog.problems import Problem, clear_problems, record_problems
from kafka_archive.catalog.refs import SegmentRef
from kafka_archive.store import IntegrityError, ObjectNotFound, ObjectStore
from segment_lib.errors import SegmentError

__all__ = ["VerifyReport", "verify_catalog"]


@dataclass(slots=True)
class VerifyReport:
    """What a verify run checked and found."""

    deep: bool
    checked: int = 0
    bytes_read: int = 0
    problems: list[Problem] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "deep": self.deep,
            "checked": self.checked,
            "bytes_read": self.bytes_read,
            "problems": len(self.problems),
            "problem_list": [p.to_json() for p in self.problems],
        }


def _ref(seg: Segment, part: Partition) -> SegmentRef:
    return SegmentRef(
        part.cluster,
        part.topic,
        part.partition,
        seg.manifest_key,
        seg.object_key,
        seg.size_bytes,
        seg.sha256,
        seg.base_offset,
        seg.archived_at_ms,
        seg.broker_id,
        seg.log_dir,
        seg.end_offset,
    )


def _check(store: ObjectStore, ref: SegmentRef, deep: bool) -> tuple[Problem | None, int]:
    """The problem of one cataloged segment version (or ``None``) and the bytes read."""
    head = store.head(ref.object_key)
    if head is None:
        return Problem.of_ref("missing-object", ref, f"object {ref.object_key} is gone"), 0
    if head.size != ref.size:
        why = f"object {ref.object_key} is {head.size} bytes, cataloged with {ref.size}"
        return Problem.of_ref("changed", ref, why), 0
    if head.sha256 is not None and ref.sha256 is not None and head.sha256 != ref.sha256:
        why = (
            f"object {ref.object_key} has SHA-256 {head.sha256[:16]}..., cataloged with "
            f"{ref.sha256[:16]}..."
        )
        return Problem.of_ref("changed", ref, why), 0
    if not store.exists(ref.manifest_key):
        why = f"manifest {ref.manifest_key} of object {ref.object_key} is gone"
        return Problem.of_ref("missing-object", ref, why), 0
    if not deep:
        return None, 0
    from kafka_archive.catalog.extract import extract_object

    try:
        read_manifest(store, ref.manifest_key)
    except (InvalidManifest, IntegrityError) as exc:
        why = f"manifest {ref.manifest_key}: {exc}"
        return Problem.of_ref("unreadable-manifest", ref, why), 0
    try:
        extract_object(
            store, ref.object_key, topic=ref.topic, size=ref.size, sha256=ref.sha256,
            verify="sha256",
        )  # fmt: skip
    except ObjectIntegrityError as exc:
        return Problem.of_ref("corrupt", ref, str(exc), exc.position), ref.size
    except SegmentError as exc:
        why = f"object {ref.object_key}: {exc}"
        return Problem.of_ref("corrupt", ref, why, exc.to_dict().get("position")), ref.size
    except ObjectNotFound:
        return Problem.of_ref("missing-object", ref, f"object {ref.object_key} is gone"), 0
    return None, ref.size


def verify_catalog(
    catalog: Catalog,
    store: ObjectStore,
    cluster: str,
    *,
    deep: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> VerifyReport:
    """Re-check every cataloged segment version of ``cluster`` against ``store`` (see the
    module docstring); records what it finds and returns it.

    Raises:
        StoreError: the store failed in a way that says nothing about an object.
    """
    report = VerifyReport(deep=deep)
    with catalog.session() as s:
        rows = s.execute(
            select(Segment, Partition)
            .join(Partition, Partition.id == Segment.partition_id)
            .where(Partition.cluster == cluster, Segment.status.not_in(("corrupt", "pruned")))
            .order_by(Partition.topic, Partition.partition, Segment.base_offset, Segment.id)
        ).all()
        refs = [_ref(seg, part) for seg, part in rows]
    passed: list[str] = []
    for i, ref in enumerate(refs):
        problem, nbytes = _check(store, ref, deep)
        report.checked += 1
        report.bytes_read += nbytes
        if problem is None:
            passed.append(ref.manifest_key)
        else:
            report.problems.append(problem)
        if progress:
            progress(i + 1, len(refs))
    with catalog.session() as s, s.begin():
        # a shallow pass says nothing about the bytes: it must not clear what --deep found
        kinds = None if deep else ("missing-object", "changed")
        clear_problems(s, passed, "verify", kinds)
        record_problems(s, report.problems, "verify")
    return report
