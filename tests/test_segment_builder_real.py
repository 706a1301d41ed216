"""segment_lib.segment_builder against segments written by real Kafka brokers.

For every partition of ``real-broker-data`` holding magic-2 batches, the broker's own ``.log``
bytes (its segments concatenated in offset order) are fed to a :class:`SegmentBuilder`, which
is forced to roll where the broker rolled (its segment base offsets), and every file the
broker left is compared **byte for byte** with the builder's: ``.log`` always; ``.index`` and
``.timeindex`` where the broker left them trimmed (a rolled segment, or the last one after a
clean shutdown). The active segments' preallocated index files were not committed to the source
repositories (SOURCES.md: "absent"), so for those only the ``.log`` is compared. No fixture
holds a ``.txnindex`` or an ABORT marker (SOURCES.md); the transaction index is checked in
``test_segment_builder.py``.

How each broker appended is stated per case (``Case``), from its version and from what the
files show:

* **leaders** append one magic-2 batch per produce request (the builder's default
  ``PER_BATCH``); the time index's offset for an uncompressed CreateTime batch is the offset of
  its first record holding the batch's max timestamp on brokers before 3.7.1
  (``time_index_record_offsets``), the batch's last offset from 3.7.1 on (KAFKA-16310);
* a **follower** (dipendrasaini, broker 0 of 3) appended fetch responses, several batches at a
  time, before ``LogSegment.append`` looped over batches (``PER_APPEND``). Its appends are
  recovered from its offset index (an entry is an append from its position to the batch
  holding its offset; the batches between two such appends are taken as one), like its rolls
  from its file names; what is checked is that the builder indexes exactly there (no other
  entry), the whole time index, and the bytes;
* **compacted** segments (named below their first batch, or with offset gaps) were rewritten by
  the log cleaner, which appends each read of its I/O buffer (256 KiB by default; every cleaned
  segment here is smaller) as one append: fed as one ``PER_APPEND`` append;
* **restarts**: smartassets' broker (Confluent 5.1.0 = Kafka 2.1) was down between the
  timestamps 1572166044099 and 1572335510816 (27 and 29 Oct 2019: nothing in any of its
  partitions lies between them). A restart ends the active segment's life in that broker
  (``LogSegment.close`` writes its final time index entry) and the reloaded segment counts
  ``bytesSinceLastIndexEntry`` from 0 (:meth:`SegmentIndexes.restart`). Its segments' entries
  from before the restart carry batch last offsets (an index rebuilt by ``LogSegment.recover``,
  which goes batch by batch), those after it first-record offsets (live Kafka 2.1 appends).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from segment_lib.checkpoints import read_leader_epoch_checkpoint, read_offset_checkpoint
from segment_lib.errors import UnsupportedFormatError
from segment_lib.log_file import open_log
from segment_lib.names import parse_partition_dir_name
from segment_lib.offset_index import read_offset_index
from segment_lib.records import BatchHeader
from segment_lib.segment_builder import BuiltSegment, IndexRule, SegmentBuilder, SegmentConfig

LEADER = "leader"
LEADER_RECORD_OFFSETS = "leader, time index offsets of first records (Kafka < 3.7.1)"
FOLLOWER = "follower, chunks from its offset index"
SMARTASSETS = "leader Kafka 2.1, compaction, a restart"
#: any instant in smartassets' downtime (module docstring)
SMARTASSETS_RESTART_MS = 1572200000000


@dataclass(frozen=True)
class Case:
    path: str
    how: str


CASES = [
    Case("CancerTiN__Golearn/tmp/kafka-logs/web_log-0", LEADER_RECORD_OFFSETS),  # 2.4.0
    Case("BiggerBrain__kafka/data/lsx1-0", LEADER),  # active segment only: .log
    *(
        Case(f"Danielowo2000__BigDataTechnologies-Version-2/kafka_data/{p}", LEADER)
        for p in (
            "__cluster_metadata-0",
            "_confluent-ksql-default__command_topic-0",
            "_confluent-ksql-default_query_CTAS_CURRENTLOCATION_3-Aggregate-GroupBy-repartition-0",
        )
    ),
    *(
        # cp-kafka "latest" (2024): single-record batches, either time index rule gives these
        Case(
            f"ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions/kafka-data/{p}",
            LEADER,
        )
        for p in ("__transaction_state-44", "_confluent-ksql-default__command_topic-0")
    ),
    *(
        Case(f"Lewi217__Apache_Kafka/kafka-logs/{p}", LEADER)
        for p in ("__consumer_offsets-17", "quickstart-events-0", "wanjohi-0")
    ),
    # Kafka 3.7.1: batch last offsets in the time index (the record rule gives other offsets)
    Case("NikhilDighe9975__kafka_setup/kafka-logs/__consumer_offsets-12", LEADER),
    Case("NikhilDighe9975__kafka_setup/kafka-logs/nikhilDemo-0", LEADER),
    *(
        Case(f"apache__kafka/core/data/{p}", LEADER)
        for p in (
            "kafka-1168504093769635972/__cluster_metadata-0",
            "kafka-13294002803961715372/test-topic-0",
            "kafka-13980083082189751010/test-topic-0",
            "kafka-14696354110866436968/test-topic-0.2308294e39dc4a44ab8183f587805af2-delete",
            "kafka-15372165916945441544/__cluster_metadata-0",
            "kafka-2125062511645133543/test-topic-0",
            "kafka-2167572160391180112/__cluster_metadata-0",
            "kafka-2249262930763353014/__cluster_metadata-0",
            "kafka-7155829485418535035/__cluster_metadata-0",
            "kafka-7498518511977031704/__cluster_metadata-0",
        )
    ),
    Case("christseng89__RealTime_Analysis/kafka-logs/__cluster_metadata-0", LEADER),
    Case("dipendrasaini__kafka-learnning-series/tmp/kafka-logs/invoice-0", FOLLOWER),
    # Kafka 3.3.1 and 2.8.0; HelloTopic-0's one segment starts at 6 (retention)
    Case("geraldine999__Kafka/kafka/kafka-logs/HelloTopic-0", LEADER_RECORD_OFFSETS),
    Case("geraldine999__Kafka/kafka/kafka-logs/__consumer_offsets-18", LEADER_RECORD_OFFSETS),
    Case("getachew015__kafka-broker/data/kafka/__consumer_offsets-13", LEADER_RECORD_OFFSETS),
    *(
        Case(f"mscaldas2012__kafka-connect-spooldir/kafka-data/{p}", LEADER)
        for p in (
            "_confluent-command-0",
            "_confluent-controlcenter-5-1-2-1-KSTREAM-OUTEROTHER-0000000096-store-changelog-0",
            "_confluent-controlcenter-5-1-2-1-actual-group-consumption-rekey-0",
            "_confluent-controlcenter-5-1-2-1-monitoring-message-rekey-0",
            "_confluent-controlcenter-5-1-2-1-monitoring-trigger-event-rekey-0",
        )
    ),
    *(
        # Confluent 7.6 = Kafka 3.6; orders-0's multi-record batches tell the two rules apart
        Case(f"rjmfernandes__flink-on-prem/data/{p}", LEADER_RECORD_OFFSETS)
        for p in (
            "_confluent-command-0",
            "_confluent-controlcenter-7-6-0-1-MonitoringVerifierStore-changelog-0",
            "_confluent-monitoring-0",
            "orders-0",
        )
    ),
    *(
        Case(f"seanorth__kafka-server/kafka-logs/{p}", LEADER)
        for p in ("__consumer_offsets-16", "some-topic-0")
    ),
    *(
        Case(f"smartassets__backend-server/kafka/data/{p}", SMARTASSETS)
        for p in (
            "__confluent.support.metrics-0",
            "__consumer_offsets-37",
            "_confluent-command-0",
            "docker-connect-configs-0",
            "docker-connect-status-2",
            "temperature-0",
        )
    ),
    *(
        Case(f"suryavansh__food-ordering-service/kafka/data/{p}", LEADER)
        for p in ("_confluent-metrics-0", "_confluent-metrics-11", "_confluent-metrics-4")
    ),
]
# Not cases: the partitions whose every .log is empty (apache__kafka's test harness dirs: the
# builder never makes an empty segment, there is nothing to feed) and xpxwo100's magic-1 logs
# (Kafka 0.10.1), which test_magic_1_logs_are_refused covers.


def _batches(log: Path) -> list[BatchHeader]:
    with open_log(log) as lb:
        return list(lb.batches())


def _is_cleaned(base_offset: int, headers: list[BatchHeader]) -> bool:
    return headers[0].base_offset != base_offset or any(
        b.base_offset != a.last_offset + 1 for a, b in itertools.pairwise(headers)
    )


def _follower_chunks(log: Path, headers: list[BatchHeader]) -> Iterator[list[BatchHeader]]:
    """The segment's batches grouped into the follower's appends, as its offset index shows
    them: an entry ``(offset, position)`` is an append starting at ``position`` and ending with
    the batch holding ``offset``; the batches between two such appends are taken as one (no
    entry in them means no append started there after more than index.interval.bytes)."""
    index = log.with_suffix(".index")
    entries = {e.position: e.offset for e in read_offset_index(index)} if index.exists() else {}
    chunk: list[BatchHeader] = []
    end_offset: int | None = None  # the last offset of the indexed append being collected
    for h in headers:
        if h.position in entries or (end_offset is not None and h.base_offset > end_offset):
            if chunk:
                yield chunk
            chunk = []
            end_offset = entries.get(h.position)
        chunk.append(h)
    yield chunk


def build_like_broker(pdir: Path, how: str) -> tuple[SegmentBuilder, list[BuiltSegment]]:
    """Feed the partition's batches to a builder that rolls where the broker rolled."""
    rule = IndexRule.PER_APPEND if how in (FOLLOWER, SMARTASSETS) else IndexRule.PER_BATCH
    config = SegmentConfig(index_rule=rule, time_index_record_offsets=how == LEADER_RECORD_OFFSETS)
    builder = SegmentBuilder(config=config, allow_gaps=True)
    restarted = False
    for log in sorted(pdir.glob("*.log")):
        headers = _batches(log)
        if not headers:
            continue
        data = log.read_bytes()
        builder.roll(int(log.stem))
        if how == FOLLOWER:
            chunks = list(_follower_chunks(log, headers))
        elif how == SMARTASSETS and _is_cleaned(int(log.stem), headers):
            chunks = [headers]
        else:
            chunks = [[h] for h in headers]
        for chunk in chunks:
            if (
                how == SMARTASSETS
                and not restarted
                and chunk[0].max_timestamp > SMARTASSETS_RESTART_MS
            ):
                assert builder.active is not None
                builder.active.restart()
                builder.config = dataclasses.replace(config, time_index_record_offsets=True)
                restarted = True
            builder.append(data[chunk[0].position : chunk[-1].next_position])
    return builder, builder.close()


@pytest.mark.parametrize(
    "case", CASES, ids=[c.path.split("/", 1)[0] + ":" + Path(c.path).name for c in CASES]
)
def test_builder_reproduces_broker_files(real_broker_data: Path, case: Case) -> None:
    pdir = real_broker_data / case.path
    builder, built = build_like_broker(pdir, case.how)
    broker_logs = [p for p in sorted(pdir.glob("*.log")) if p.stat().st_size]
    assert [s.file_name(".log") for s in built] == [p.name for p in broker_logs]
    for seg in built:
        assert seg.log == (pdir / seg.file_name(".log")).read_bytes(), seg.base_offset
        for suffix, mine in ((".index", seg.index_bytes()), (".timeindex", seg.time_index_bytes())):
            theirs = pdir / seg.file_name(suffix)
            if theirs.exists():  # absent: an active segment's preallocated index (docstring)
                assert mine == theirs.read_bytes(), (seg.base_offset, suffix)
        assert not (pdir / seg.file_name(".txnindex")).exists() and not seg.aborted
    _check_leader_epochs(pdir, builder, built)


def _check_leader_epochs(pdir: Path, builder: SegmentBuilder, built: list[BuiltSegment]) -> None:
    """The builder's epochs are the broker's ``leader-epoch-checkpoint``, once both are seen
    as of the same log: the broker's cache was truncated to the log start offset
    (``truncateFromStart``: deleteRecords moved it past batches the segment still holds), it
    lists elections at the log end that no batch followed, and compaction may have removed the
    batches its first epoch started at (then the first batch left starts it)."""
    checkpoint = pdir / "leader-epoch-checkpoint"
    if not checkpoint.exists():
        return
    topic, partition, state, _ = parse_partition_dir_name(pdir.name)
    starts = pdir.parent / "log-start-offset-checkpoint"
    log_start = read_offset_checkpoint(starts).get((topic, partition), 0) if starts.exists() else 0
    first_batch = _batches(pdir / built[0].file_name(".log"))[0].base_offset
    log_end = built[-1].next_offset
    theirs = [e for e in read_leader_epoch_checkpoint(checkpoint) if e.start_offset < log_end]
    if theirs:
        theirs[0] = theirs[0]._replace(start_offset=max(theirs[0].start_offset, first_batch))
    mine = builder.leader_epochs
    # LeaderEpochFileCache.truncateFromStart(logStartOffset)
    before = [e for e in mine if e.start_offset <= log_start]
    mine = [e for e in mine if e.start_offset > log_start]
    if before:
        mine.insert(0, before[-1]._replace(start_offset=log_start))
    if state is not None:
        # a directory being deleted is no longer in log-start-offset-checkpoint: its log start
        # offset, hence its first epoch's start, is unknown
        assert [e.epoch for e in mine] == [e.epoch for e in theirs] and mine[1:] == theirs[1:]
    else:
        assert mine == theirs


def test_magic_1_logs_are_refused(real_broker_data: Path) -> None:
    """A Kafka 0.10.1 log (magic 1 messages): the builder takes magic-2 batches only (a
    FetchResponse of such a log would need down/up-conversion first) and names the magic byte
    of the first message."""
    log = real_broker_data / "xpxwo100__bullShit/tmp/kafka-logs/foo-0/00000000000000000000.log"
    builder = SegmentBuilder()
    with pytest.raises(UnsupportedFormatError) as exc:
        builder.append(log.read_bytes())
    assert exc.value.position == 16
    assert builder.close() == []
