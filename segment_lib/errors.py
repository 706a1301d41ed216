"""The one exception tree of ``segment_lib``.

Every error raised while reading Kafka's on-disk formats is a :class:`SegmentError`. Each names
the file it came from (``path``; ``None`` when parsing a bare buffer), the byte ``position``
inside that file where the problem starts, and what was ``expected`` there, so that an operator
can open the file at that byte and see it for themselves.

Callers that must stop cleanly at the end of an active segment catch
:class:`TornTailError`: it is the distinct, *expected* condition of a final batch that the broker
had not finished writing (or that a copy caught mid-append), not corruption.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = [
    "CompressionError",
    "CorruptBatchError",
    "CorruptIndexError",
    "CorruptRecordError",
    "CrcMismatchError",
    "InvalidCheckpointError",
    "InvalidFileNameError",
    "InvalidMetadataFileError",
    "NotALogError",
    "OffsetGapError",
    "OffsetOrderError",
    "OffsetOverlapError",
    "SegmentError",
    "TornTailError",
    "TruncatedSegmentError",
    "UnsupportedFormatError",
]


class SegmentError(Exception):
    """Base of every error about bad or unexpected bytes in a Kafka log file.

    Attributes:
        path: the file the bytes came from, or ``None`` for an in-memory buffer.
        position: byte position in that file where the problem starts (``None`` if not
            meaningful, e.g. a bad file name).
        expected: a short statement of what the format requires at that position.
        detail: what was actually found.
    """

    def __init__(
        self,
        detail: str,
        *,
        path: str | os.PathLike[str] | None = None,
        position: int | None = None,
        expected: str | None = None,
    ) -> None:
        self.detail = detail
        self.path = os.fspath(path) if path is not None else None
        self.position = position
        self.expected = expected
        super().__init__(self._render())

    def _render(self) -> str:
        where = self.path if self.path is not None else "<buffer>"
        if self.position is not None:
            where = f"{where} at byte {self.position}"
        text = f"{where}: {self.detail}"
        if self.expected:
            text += f" (expected {self.expected})"
        return text

    def with_location(
        self, path: str | os.PathLike[str] | None, base_position: int = 0
    ) -> SegmentError:
        """Return the same error re-anchored to ``path``, positions shifted by ``base_position``.

        Pure parsers raise with positions relative to the buffer they were given; file-level
        readers call this to report absolute positions in the file.
        """
        position = None if self.position is None else self.position + base_position
        clone = type(self).__new__(type(self))
        clone.__dict__.update(self.__dict__)
        SegmentError.__init__(
            clone,
            self.detail,
            path=path if path is not None else self.path,
            position=position,
            expected=self.expected,
        )
        return clone

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (used by ``--json`` CLIs and task reports)."""
        return {
            "error": type(self).__name__,
            "path": self.path,
            "position": self.position,
            "expected": self.expected,
            "detail": self.detail,
        }


class CorruptBatchError(SegmentError):
    """A batch (or legacy message) header is malformed: bad length, magic, or structure."""


class CorruptRecordError(CorruptBatchError):
    """A record inside an otherwise well-framed batch is malformed."""


class CrcMismatchError(CorruptBatchError):
    """A batch's stored checksum does not match the bytes (CRC-32C for magic 2, CRC-32 before)."""

    def __init__(
        self,
        detail: str,
        *,
        stored: int,
        computed: int,
        path: str | os.PathLike[str] | None = None,
        position: int | None = None,
        expected: str | None = None,
    ) -> None:
        self.stored = stored
        self.computed = computed
        super().__init__(detail, path=path, position=position, expected=expected)


class CompressionError(CorruptBatchError):
    """A compressed payload could not be decompressed with its codec."""


class UnsupportedFormatError(SegmentError):
    """Bytes of a format or version this library does not read (e.g. an unknown magic)."""


class NotALogError(UnsupportedFormatError):
    """The bytes of a file are not a Kafka log at all (whatever its name says): its first
    batch header is impossible, or (for a file not named like a segment) its first batch is not
    complete and checksummed. ``position`` is the first byte that gave it away."""


class TruncatedSegmentError(SegmentError):
    """A structure ends before its declared length inside the file (not at its tail)."""


class TornTailError(TruncatedSegmentError):
    """The last batch of the file is incomplete: an active segment caught mid-append.

    This is expected at the end of an active segment: callers stop reading here. ``position``
    is where the torn batch starts, i.e. the number of valid bytes before it.
    """


class CorruptIndexError(SegmentError):
    """An ``.index``, ``.timeindex`` or ``.txnindex`` file violates its format or invariants."""


class InvalidCheckpointError(SegmentError):
    """A checkpoint file (offsets, leader epochs, producer snapshot) is malformed."""


class InvalidMetadataFileError(SegmentError):
    """``meta.properties`` or ``partition.metadata`` is malformed."""


class InvalidFileNameError(SegmentError):
    """A file or directory name does not follow Kafka's naming rules."""


class OffsetOrderError(SegmentError):
    """A batch does not continue the offsets already written (see the two subclasses).

    Attributes:
        expected_offset: the offset the next batch had to start at (one past the last offset
            accepted, or the start offset given).
        base_offset: the offending batch's base offset.
        last_offset: the offending batch's last offset.
    """

    def __init__(
        self,
        detail: str,
        *,
        expected_offset: int,
        base_offset: int,
        last_offset: int,
        path: str | os.PathLike[str] | None = None,
        position: int | None = None,
        expected: str | None = None,
    ) -> None:
        self.expected_offset = expected_offset
        self.base_offset = base_offset
        self.last_offset = last_offset
        super().__init__(detail, path=path, position=position, expected=expected)


class OffsetOverlapError(OffsetOrderError):
    """A batch starts before the next expected offset: it repeats offsets already written."""


class OffsetGapError(OffsetOrderError):
    """A batch starts after the next expected offset where no gap is allowed."""
