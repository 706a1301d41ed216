"""Extraction of an object in the store: ranged reads through the extractor, whole-object check.

:func:`extract_object` streams an object out of an :class:`~kafka_archive.store.ObjectStore`
through a :class:`~kafka_archive.catalog.extract.extractor.SegmentExtractor` and checks the
whole object against its manifest's CRC-32C (default) or SHA-256 on the way
(:mod:`kafka_archive.catalog.integrity`). It reads through ``get_range_view``, so on the local
store the chunks are the page cache itself (mapped), not copies. When the checksum differs,
:mod:`~kafka_archive.catalog.extract.locate` builds the error, locating the difference.
"""

from __future__ import annotations

from collections.abc import Sequence

from kafka_archive.catalog.constants import (
    DEFAULT_CHUNK_BYTES,
    DEFAULT_HISTOGRAM_MS,
    DEFAULT_INTERVAL_BYTES,
)
from kafka_archive.catalog.extract.extractor import SegmentExtractor
from kafka_archive.catalog.extract.locate import integrity_error
from kafka_archive.catalog.extract.rows import SegmentExtract
from kafka_archive.catalog.integrity import DEFAULT_VERIFY, ObjectChecksum, verify_mode
from kafka_archive.store import ObjectNotFound, ObjectStore
from kafka_archive.store.base import read_view
from segment_lib.errors import SegmentError

__all__ = ["extract_object"]


def extract_object(
    store: ObjectStore,
    key: str,
    *,
    topic: str,
    size: int | None = None,
    sha256: str | None = None,
    crc32c: str | None = None,
    verify: str = DEFAULT_VERIFY,
    interval_bytes: int = DEFAULT_INTERVAL_BYTES,
    histogram_ms: int = DEFAULT_HISTOGRAM_MS,
    pieces: Sequence[tuple[int, int]] | None = None,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
) -> SegmentExtract:
    """Stream object ``key`` through a :class:`SegmentExtractor` with ranged reads of
    ``chunk_bytes`` and check the whole object against its manifest's checksum.

    ``verify`` (:data:`~kafka_archive.catalog.integrity.VERIFY_CHOICES`) picks the
    algorithm and whether every batch CRC is checked too; the expected value is ``crc32c`` /
    ``sha256`` (hex, as in the manifest). When only the other algorithm's value is known, that
    one is checked; when neither is, only the batch checks are made (batch CRCs are always
    checked then, and again on the error path of a whole-object mismatch, to find the damaged
    batch).

    Raises:
        ObjectIntegrityError: the bytes read differ from what the manifest recorded (also when
            a batch fails its own checks in such bytes: they are not the archived ones). Its
            ``position`` locates the difference when possible (see
            :mod:`kafka_archive.catalog.integrity`).
        SegmentError: the bytes match the manifest but are not a valid, complete segment.
        StoreError: the store failed (missing object, unreachable...).
    """
    wanted, batch_crc = verify_mode(verify)
    if size is None:
        head = store.head(key)
        if head is None:
            raise ObjectNotFound("segment object is missing", uri=store.uri, key=key)
        size = head.size
    algorithm, expected = _expected_checksum(wanted, crc32c, sha256)
    checksum = ObjectChecksum(algorithm) if expected is not None else None
    ex = SegmentExtractor(
        topic=topic,
        interval_bytes=interval_bytes,
        histogram_ms=histogram_ms,
        pieces=pieces,
        path=f"{store.uri.rstrip('/')}/{key}",
        size=size,
        checksum=checksum,
        batch_crc=batch_crc or checksum is None,
    )
    # A batch error does not end the read when the whole object is checked: bytes that differ
    # from the archived ones are a store problem (reported and retried), bytes that match but
    # are bad are a corrupt segment (recorded); only the whole checksum tells them apart.
    error: SegmentError | None = None
    pos = 0
    while pos < size:
        end = min(size, pos + chunk_bytes)
        # a view where the store can avoid copying (the local store maps the file)
        chunk = read_view(store, key, pos, end)
        if error is None:
            try:
                ex.feed(chunk)  # checksums the chunk too
            except SegmentError as exc:
                if checksum is None:
                    raise
                error = exc
        elif checksum is not None:
            checksum.update(chunk)
        # drop the chunk before reading the next: with two 8 MiB buffers alive the allocator
        # hands out fresh pages every time, and faulting them in costs more than the copy (a
        # mapped view is unmapped here)
        del chunk
        pos = end
    result: SegmentExtract | None = None
    if error is None:
        try:
            result = ex.finish()
        except SegmentError as exc:
            if checksum is None:
                raise
            error = exc
    if checksum is not None and checksum.hexdigest() != expected:
        assert expected is not None
        raise integrity_error(
            store, key, size, checksum, expected, error, crc32c=crc32c, chunk_bytes=chunk_bytes
        )
    if error is not None:
        raise error
    assert result is not None
    return result


def _expected_checksum(
    algorithm: str, crc32c: str | None, sha256: str | None
) -> tuple[str, str | None]:
    """The algorithm to check and its expected hex value (the other one when only it is
    known; ``None`` when neither is)."""
    known = {"crc32c": crc32c.lower() if crc32c else None, "sha256": sha256 or None}
    if known[algorithm] is not None:
        return algorithm, known[algorithm]
    other = "sha256" if algorithm == "crc32c" else "crc32c"
    return (other, known[other]) if known[other] is not None else (algorithm, None)
