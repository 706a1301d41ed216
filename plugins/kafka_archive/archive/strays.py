"""Files in a log dir that look like Kafka's but are not what their place suggests.

Discovery must never pass over such a file without a word, and must never let one change what
it archives. Three kinds, each reported as a
:class:`~kafka_archive.archive.discovery.SkippedItem` with the reason:

* **odd names** (``odd_name``): a file with a segment suffix whose name Kafka would not load as
  a segment: ``48.log`` (not 20 digits), ``99999999999999999999.log`` (beyond int64),
  ``copy-of-00000000000000000000.log``, or a segment file lying in the log dir itself, outside
  any partition directory. Kafka ignores them, so the archive does too, but says so.
* **stray segments** (``stray_segment``): a correctly named ``.log`` with the highest base
  offset of its partition that the broker did not roll: its bytes are not a log, or its first
  batch does not start at the offset its name says, or its base offset lies inside the
  previous segment's offsets, or it leaves a gap after the previous segment's last offset
  while beyond both checkpoints (recovery point, high watermark). Taken at face value it would
  be "the active segment", making the real active segment look rolled and get archived while
  it is still written. It is set aside and the segment before it stays the active one. A live
  broker's active segment never looks like this: a new segment is rolled at the log end
  offset, i.e. right after the previous segment's last offset, and starts with a batch at
  exactly its base offset.
* **symbolic links** (``symlink``) in the log dir: a link to a directory (partition
  directories are not followed through links), a dangling link or a link loop is reported.

Pure inspection: nothing is written, moved or deleted; unreadable files are judged
conservatively (a segment that cannot be read is not declared stray).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from segment_lib.errors import InvalidFileNameError, SegmentError
from segment_lib.log_file import open_log
from segment_lib.names import FileKind, classify_file, parse_segment_file_name
from segment_lib.offset_index import read_offset_index
from segment_lib.partition import PartitionView, SegmentFiles
from segment_lib.sniff import header_problem

__all__ = ["OddFile", "OddKind", "inspect_partition", "log_dir_entry_problem", "odd_name_detail"]

#: a name ending like a segment family file (optionally with a transient suffix)
_SEGMENT_LIKE: Final = re.compile(
    r".*\.(log|index|timeindex|txnindex|snapshot)(\.(deleted|cleaned|swap))?", re.DOTALL
)

OddKind = str  # "odd_name" | "stray_segment" | "symlink" (SkipReason values)


@dataclass(frozen=True, slots=True)
class OddFile:
    """One file discovery passes over: its path, the skip reason value, and why."""

    path: Path
    reason: OddKind
    detail: str
    base_offset: int | None = None


def odd_name_detail(name: str) -> str | None:
    """Why ``name`` looks like a segment file that Kafka would not load, or ``None`` when it
    is not segment-like or is a proper segment name."""
    if _SEGMENT_LIKE.fullmatch(name) is None or classify_file(name).kind is not FileKind.UNKNOWN:
        return None
    try:
        parse_segment_file_name(name)
    except InvalidFileNameError as exc:
        why = exc.detail + (f" (expected {exc.expected})" if exc.expected else "")
        return (
            f"named like a segment file but {why}: Kafka does not load it as a segment, so it "
            "is not archived; give it its proper name or remove it"
        )
    return None  # pragma: no cover - an UNKNOWN name never parses


def log_dir_entry_problem(entry: os.DirEntry[str]) -> OddFile | None:
    """A top-level entry of a log dir that discovery must mention: a symbolic link, or a
    segment file outside any partition directory. ``None`` for everything else."""
    path = Path(entry.path)
    if entry.is_symlink():
        try:
            target = os.stat(path)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                what = "a symbolic link loop (Too many levels of symbolic links)"
            else:
                what = f"a dangling symbolic link ({exc.strerror})"
            return OddFile(path, "symlink", f"{what}: not followed; remove or fix the link")
        if stat.S_ISDIR(target.st_mode):
            with contextlib.suppress(OSError):
                where = os.readlink(path)
                return OddFile(
                    path,
                    "symlink",
                    f"a symbolic link to a directory ({where}): partition directories are not "
                    "followed through links; archive the log dir it points into instead",
                )
            return None  # replaced while we looked: the next run sees what it is now
        # a link to a file (a checkpoint, say) is read like the file itself
    segment_like = _SEGMENT_LIKE.fullmatch(entry.name) is not None
    if segment_like and entry.is_file():
        return OddFile(
            path,
            "odd_name",
            "a segment file outside any partition directory: Kafka never reads it there, "
            "so it is not archived",
        )
    return None


def _next_offset(seg: SegmentFiles) -> int | None:
    """One past the last offset ``seg`` holds (its base offset if it holds none), scanning from
    its last ``.index`` entry; ``None`` if it cannot be read."""
    start = 0
    if seg.index is not None:
        try:
            entries = list(read_offset_index(seg.index, seg.base_offset))
            start = entries[-1].position if entries else 0
        except (SegmentError, OSError):
            start = 0
    try:
        with open_log(seg.log, verify_crc=False) as log:
            last = -1
            for batch in log.batches(start if start < len(log) else 0, allow_torn_tail=True):
                last = batch.last_offset
    except (SegmentError, OSError):
        return None
    return last + 1 if last >= 0 else seg.base_offset


def _own_reason(seg: SegmentFiles) -> str | None:
    """Why the bytes of ``seg`` alone show it is not this partition's segment, or ``None``:
    they are not a log, or its first batch does not start at its name's base offset."""
    try:
        with open_log(seg.log, verify_crc=False) as log:
            problem = header_problem(log.data)
            if problem is not None:
                return (
                    f"its bytes are not a Kafka log ({problem[1]}, at byte {problem[0]}): a "
                    "foreign file, not this partition's segment"
                )
            try:
                first = next(log.batches(allow_torn_tail=True), None)
            except SegmentError:
                return None  # a damaged segment is the uploader's to report, not ours
    except OSError:
        return None
    if first is not None and first.base_offset != seg.base_offset:
        return (
            f"its first batch holds offset {first.base_offset}, but its name says "
            f"{seg.base_offset}: a file copied or renamed from elsewhere"
        )
    return None


def _order_reason(
    seg: SegmentFiles, previous: SegmentFiles, rp: int | None, hw: int | None
) -> str | None:
    """Why ``seg`` cannot follow ``previous`` (the segment below it), or ``None``.

    A segment is rolled at the log end offset: right after ``previous``'s last offset (later
    only if the cleaner removed ``previous``'s tail, which it does only below the high
    watermark, so the checkpoints then reach ``seg``'s base offset).
    """
    base = seg.base_offset
    following = _next_offset(previous)
    if following is None or following == base:
        return None
    if following > base:
        return (
            f"its base offset {base} lies inside the segment {previous.name} (which holds "
            f"offsets up to {following - 1}): segments never overlap"
        )
    known = [v for v in (rp, hw) if v is not None]
    if known and base <= max(known):
        return None  # a gap the cleaner may have left below the high watermark
    return (
        f"its base offset {base} is beyond the recovery point ({rp}) and the high watermark "
        f"({hw}) and does not follow the segment {previous.name} (next offset {following}): "
        "not a segment the broker rolled"
    )


def _strays(
    segments: list[SegmentFiles], rp: int | None, hw: int | None
) -> list[tuple[SegmentFiles, str]]:
    """Pop the stray segments off the top of ``segments`` (in place); return them with why.

    Each top segment is judged by its own bytes, then against the nearest segment below it
    whose own bytes are sound (so two strays do not vouch for each other). The lowest segment
    is never judged: there is nothing to compare it with.
    """
    own: dict[int, str | None] = {}

    def own_reason(i: int) -> str | None:
        if i not in own:
            own[i] = _own_reason(segments[i])
        return own[i]

    out: list[tuple[SegmentFiles, str]] = []
    while len(segments) >= 2:
        top = len(segments) - 1
        reason = own_reason(top)
        if reason is None:
            below = top - 1
            while below > 0 and own_reason(below) is not None:
                below -= 1
            reason = _order_reason(segments[top], segments[below], rp, hw)
        if reason is None:
            break
        out.append((segments.pop(), reason))
        own.pop(top, None)
    return out


def inspect_partition(
    view: PartitionView, rp: int | None, hw: int | None
) -> tuple[PartitionView, list[OddFile]]:
    """The partition as discovery should see it (stray segments removed, so the real active
    segment stays active) and every odd file found in it.

    ``rp``/``hw`` are the partition's recovery point and high watermark from the log dir's
    checkpoints (``None`` when absent).
    """
    odd: list[OddFile] = []
    for path in view.other_files:
        detail = odd_name_detail(path.name)
        if detail is not None:
            odd.append(OddFile(path, "odd_name", detail))
    segments = list(view.segments)
    strays = _strays(segments, rp, hw)
    for stray, reason in strays:
        odd.append(
            OddFile(
                stray.log,
                "stray_segment",
                f"{reason}; {segments[-1].name} stays the active segment",
                stray.base_offset,
            )
        )
    if len(segments) != len(view.segments):
        view = dataclasses.replace(view, segments=tuple(segments), _summaries={})
    return view, odd
