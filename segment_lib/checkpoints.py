"""Kafka's text checkpoint files.

* Offset checkpoints in each log directory (``OffsetCheckpointFile``):
  ``recovery-point-offset-checkpoint``, ``replication-offset-checkpoint`` (high watermarks),
  ``log-start-offset-checkpoint`` and ``cleaner-offset-checkpoint``; lines
  ``<topic> <partition> <offset>``.
* ``leader-epoch-checkpoint`` in each partition directory (``LeaderEpochCheckpointFile``);
  lines ``<epoch> <startOffset>``.

Both share ``CheckpointFile``'s layout: a version line (``0``), a count line, then one line per
entry, fields separated by whitespace, UTF-8. As in Kafka's reader:

* lines end at ``\\n``, ``\\r`` or ``\\r\\n`` (Java ``readLine``; a broker on Windows writes
  ``\\r\\n``), a final line needs no terminator;
* an empty file, or one holding only the version line, has no entries (Kafka creates the file
  empty before its first write);
* fields are split on runs of whitespace, so leading whitespace makes an extra empty field and
  the line malformed, trailing whitespace is ignored; numbers are Java ``parseInt`` /
  ``parseLong`` style (optional sign, ASCII digits, within int32 / int64);
* the number of entry lines must equal the count.

Stricter than Kafka: a repeated topic-partition (Kafka keeps the last) is rejected. Every problem
raises :class:`~segment_lib.errors.InvalidCheckpointError` whose ``position`` is the byte where
the offending line (or, for a bad UTF-8 sequence, the bad byte) starts; a missing entry is
reported at the end of the file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Final, NamedTuple, TypeVar

from segment_lib.errors import InvalidCheckpointError, SegmentError

__all__ = [
    "CHECKPOINT_VERSION",
    "EpochEntry",
    "TopicPartition",
    "format_leader_epoch_checkpoint",
    "format_offset_checkpoint",
    "parse_leader_epoch_checkpoint",
    "parse_offset_checkpoint",
    "read_leader_epoch_checkpoint",
    "read_offset_checkpoint",
]

CHECKPOINT_VERSION: Final = 0
_INT32: Final = (-(2**31), 2**31 - 1)
_INT64: Final = (-(2**63), 2**63 - 1)
_LINE: Final = re.compile(rb"([^\r\n]*)(?:\r\n|\r|\n|$)")
_JAVA_INT: Final = re.compile(r"[+-]?[0-9]+")
_JAVA_WHITESPACE: Final = re.compile(r"[ \t\n\x0b\f\r]+")  # Java regex \s

T = TypeVar("T")


class TopicPartition(NamedTuple):
    topic: str
    partition: int


class EpochEntry(NamedTuple):
    """A leader epoch and the first offset written in it."""

    epoch: int
    start_offset: int


def _lines(data: bytes) -> Iterator[tuple[int, str]]:
    """``(byte position, text)`` of each line, decoded as UTF-8."""
    pos, size = 0, len(data)
    while pos < size:
        m = _LINE.match(data, pos)
        assert m is not None  # the pattern matches at every position
        try:
            text = m[1].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidCheckpointError(
                "invalid UTF-8 in checkpoint", position=pos + exc.start, expected="UTF-8 text"
            ) from None
        yield pos, text
        pos = m.end()


def _int(text: str, bounds: tuple[int, int], pos: int, what: str) -> int:
    if _JAVA_INT.fullmatch(text) is None or not bounds[0] <= int(text) <= bounds[1]:
        kind = "int32" if bounds == _INT32 else "int64"
        raise InvalidCheckpointError(
            f"malformed {what} {text!r}", position=pos, expected=f"a decimal {kind}"
        )
    return int(text)


def _fields(text: str) -> list[str]:
    parts = _JAVA_WHITESPACE.split(text)
    while parts and not parts[-1]:  # Java's split drops trailing empty strings
        parts.pop()
    return parts


def _parse(data: bytes, parse_entry: Callable[[int, str], T]) -> list[T]:
    lines = _lines(bytes(data))
    first = next(lines, None)
    if first is None:
        return []
    version = _int(first[1], _INT32, first[0], "version line")
    if version != CHECKPOINT_VERSION:
        raise InvalidCheckpointError(
            f"unsupported checkpoint version {version}",
            position=first[0],
            expected=f"version {CHECKPOINT_VERSION}",
        )
    second = next(lines, None)
    if second is None:
        return []
    count = _int(second[1], _INT32, second[0], "entry count line")
    if count < 0:
        raise InvalidCheckpointError(
            f"negative entry count {count}", position=second[0], expected="a count >= 0"
        )
    entries: list[T] = []
    for pos, text in lines:
        if len(entries) == count:
            raise InvalidCheckpointError(
                f"more entries than the declared {count}", position=pos, expected="end of file"
            )
        entries.append(parse_entry(pos, text))
    if len(entries) != count:
        raise InvalidCheckpointError(
            f"declared {count} entries but found only {len(entries)}",
            position=len(data),
            expected=f"{count - len(entries)} more entry lines",
        )
    return entries


def parse_offset_checkpoint(data: bytes) -> dict[tuple[str, int], int]:
    """Parse an offset checkpoint file's bytes into ``{(topic, partition): offset}``.

    Keys are :class:`TopicPartition` named tuples (equal to plain ``(topic, partition)``).
    """
    result: dict[tuple[str, int], int] = {}

    def entry(pos: int, text: str) -> None:
        parts = _fields(text)
        if len(parts) != 3:
            raise InvalidCheckpointError(
                f"malformed line {text!r}", position=pos, expected="'<topic> <partition> <offset>'"
            )
        tp = TopicPartition(parts[0], _int(parts[1], _INT32, pos, "partition"))
        if tp in result:
            raise InvalidCheckpointError(
                f"{tp.topic}-{tp.partition} appears twice", position=pos, expected="unique entries"
            )
        result[tp] = _int(parts[2], _INT64, pos, "offset")

    _parse(data, entry)
    return result


def parse_leader_epoch_checkpoint(data: bytes) -> list[EpochEntry]:
    """Parse a ``leader-epoch-checkpoint`` file's bytes into its entries, in file order."""

    def entry(pos: int, text: str) -> EpochEntry:
        parts = _fields(text)
        if len(parts) != 2:
            raise InvalidCheckpointError(
                f"malformed line {text!r}", position=pos, expected="'<epoch> <start offset>'"
            )
        return EpochEntry(
            _int(parts[0], _INT32, pos, "epoch"), _int(parts[1], _INT64, pos, "start offset")
        )

    return _parse(data, entry)


def _read(path: str | os.PathLike[str], parse: Callable[[bytes], T]) -> T:
    with open(path, "rb") as f:
        data = f.read()
    try:
        return parse(data)
    except SegmentError as exc:
        raise exc.with_location(path) from None


def read_offset_checkpoint(path: str | os.PathLike[str]) -> dict[tuple[str, int], int]:
    """Read an offset checkpoint file (errors name ``path``)."""
    return _read(path, parse_offset_checkpoint)


def read_leader_epoch_checkpoint(path: str | os.PathLike[str]) -> list[EpochEntry]:
    """Read a ``leader-epoch-checkpoint`` file (errors name ``path``)."""
    return _read(path, parse_leader_epoch_checkpoint)


def _format(lines: list[str]) -> bytes:
    # CheckpointWriteBuffer: version, count, entries, each followed by a newline.
    return "".join(
        f"{line}\n" for line in [str(CHECKPOINT_VERSION), str(len(lines)), *lines]
    ).encode()


def format_offset_checkpoint(offsets: Mapping[tuple[str, int], int]) -> bytes:
    """Bytes of an offset checkpoint holding ``{(topic, partition): offset}``."""
    lines = []
    for (topic, partition), offset in offsets.items():
        if not topic or _JAVA_WHITESPACE.search(topic):
            raise ValueError(f"topic {topic!r} cannot be written to a checkpoint")
        if not (_INT32[0] <= partition <= _INT32[1] and _INT64[0] <= offset <= _INT64[1]):
            raise ValueError(f"partition {partition} or offset {offset} out of range")
        lines.append(f"{topic} {partition} {offset}")
    return _format(lines)


def format_leader_epoch_checkpoint(entries: Iterable[tuple[int, int]]) -> bytes:
    """Bytes of a ``leader-epoch-checkpoint`` holding ``(epoch, start_offset)`` entries."""
    lines = []
    for epoch, start_offset in entries:
        if not (_INT32[0] <= epoch <= _INT32[1] and _INT64[0] <= start_offset <= _INT64[1]):
            raise ValueError(f"epoch {epoch} or start offset {start_offset} out of range")
        lines.append(f"{epoch} {start_offset}")
    return _format(lines)
