"""Following leader changes as a follower does: is the leader's log still the one archived?

A Fetch as a consumer is served below the high watermark only, so what the archiver took can
be truncated only where Kafka's replication guarantee broke (an unclean leader election, data
lost on every replica of the ISR). A follower finds out with OffsetsForLeaderEpoch when it
starts following a leader (a new leader, or a new leader epoch of the same one); the archiver
asks the same question at the same moments, and at the start of each run (the store's resume
point may predate a truncation that happened while no archiver ran):

    "where does the leader's log end the epoch of the last batch I hold?"

:func:`judge_epoch_end` reads the answer as Kafka's consumer does
(``SubscriptionState.maybeCompleteValidation``): the leader's end offset of that epoch below
the archiver's position, or no such epoch at all (``UNDEFINED``), is a divergence. Then:

* if the archiver holds fetched batches not stored yet (the open segment), it **rewinds**:
  drops them and goes on from the end of what is stored, with the stored epochs, and asks
  again (as a follower truncates to the divergence and re-validates);
* if the divergence is in what is stored, :class:`LogTruncated`: that partition stops, the
  error names the offsets the archive holds and the leader does not; nothing more is stored
  for it (the archive keeps what the cluster lost; it never holds two histories of one offset
  under one cluster, nor a silent hole).

Pure: the answer and the positions in, a verdict out.
"""

from __future__ import annotations

from typing import Literal

from kafka_archive.archive.fetch.batches import FetchDiverged
from kafka_archive.kafka_protocol.fetch import EpochEnd

__all__ = ["LogTruncated", "judge_epoch_end"]


class LogTruncated(FetchDiverged):
    """The partition leader's log no longer holds offsets the archive stored (its epoch ends
    below them): an unclean leader election or lost data; nothing more is stored for the
    partition."""


def judge_epoch_end(
    name: str,
    *,
    epoch: int,
    position: int,
    stored_end: int,
    leader: int,
    answer: EpochEnd,
) -> Literal["ok", "rewind"]:
    """The verdict on the leader's OffsetsForLeaderEpoch ``answer`` (error code 0) for
    ``epoch``, the epoch of the last batch the archiver holds (module docstring).

    Args:
        name: the partition, for the message.
        position: one past the last offset the archiver holds (stored or not).
        stored_end: one past the last offset stored; batches held are not all stored when
            ``position`` is above it.
        leader: the broker that answered.

    Raises:
        LogTruncated: the divergence lies in what is stored.
    """
    undefined = answer.end_offset < 0 or answer.leader_epoch < 0
    if not undefined and answer.end_offset >= position:
        return "ok"
    if position > stored_end:
        return "rewind"
    if undefined:
        where = f"knows no leader epoch at or below {epoch}"
    else:
        where = (
            f"ends leader epoch {epoch} at offset {answer.end_offset} (its epoch "
            f"{answer.leader_epoch}): offsets {answer.end_offset}..{position - 1} are archived "
            "but not in its log"
        )
    raise LogTruncated(
        f"{name}: the log diverges from the archive: the leader, broker {leader}, {where}; the "
        f"archive holds offsets up to {position - 1} with leader epoch {epoch}. The partition's "
        "log was truncated below what was archived (an unclean leader election, or data lost "
        "on every replica); the archive keeps what it holds, nothing more is archived for "
        "this partition under this cluster name"
    )
