"""Small pure pieces of the replay engine: murmur2, partition mapping, key filters, rate limits."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from kafka_archive.replay.errors import ReplayConfigError
from kafka_archive.replay.execution.ratelimit import RateLimiter, TokenBucket
from kafka_archive.replay.planning.filters import KeyFilter
from kafka_archive.replay.target.murmur2 import murmur2, murmur2_partition, to_positive

# Kafka's own vectors (clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java,
# testMurmur2): expected signed Java ints of Utils.murmur2
KAFKA_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize(("data", "want"), list(KAFKA_VECTORS.items()))
def test_murmur2_kafka_vectors(data: bytes, want: int) -> None:
    assert murmur2(data) == want


def test_murmur2_matches_kafka_python_independently() -> None:
    # kafka-python's pure-Python port of Utils.murmur2 (returns the unsigned 32-bit value)
    from kafka.partitioner.default import murmur2 as kp_murmur2

    rng = random.Random(11)
    for n in [*range(40), 255, 1024, 4099]:
        data = rng.randbytes(n)
        assert murmur2(data) & 0xFFFFFFFF == kp_murmur2(data) & 0xFFFFFFFF
    for _ in range(500):
        data = os.urandom(rng.randrange(0, 64))
        assert murmur2(data) & 0xFFFFFFFF == kp_murmur2(data) & 0xFFFFFFFF


def test_to_positive_and_partition() -> None:
    assert to_positive(-1) == 0x7FFFFFFF
    assert to_positive(-(1 << 31)) == 0  # abs() would stay negative in Java
    assert to_positive(5) == 5
    # DefaultPartitioner: toPositive(murmur2(key)) % n
    assert murmur2_partition(b"21", 7) == (-973932308 & 0x7FFFFFFF) % 7
    with pytest.raises(ValueError):
        murmur2_partition(b"x", 0)


def test_key_filters() -> None:
    exact = KeyFilter.parse("exact:user-1")
    assert exact.matches(b"user-1") and not exact.matches(b"user-10") and not exact.matches(None)
    assert KeyFilter.parse("user-1").kind == "exact"
    assert KeyFilter.parse("exact:odd:value").matches(b"odd:value")
    prefix = KeyFilter.parse("prefix:user-")
    assert prefix.matches(b"user-77") and not prefix.matches(b"usr-1")
    # exact/prefix work on non-UTF-8 keys by bytes; regex never matches them
    assert KeyFilter.parse("prefix:é").matches("é!".encode())
    regex = KeyFilter.parse("regex:^order-[0-9]+$")
    assert (
        regex.matches(b"order-12")
        and not regex.matches(b"order-x")
        and not regex.matches(b"\xff\xfe")
    )
    assert KeyFilter.parse("regex:[0-9]{3}").matches(b"ab123")  # search, not fullmatch
    with pytest.raises(ReplayConfigError):
        KeyFilter.parse("regex:(")
    with pytest.raises(ReplayConfigError):
        KeyFilter.parse("prefix:")


def test_unknown_key_filter_kind_is_an_error() -> None:
    """``bogus:x`` used to mean "exact key bogus:x": every record filtered, replay "done"."""
    with pytest.raises(ReplayConfigError, match="unknown key filter kind 'bogus'") as info:
        KeyFilter.parse("bogus:x")
    assert "exact:bogus:x" in info.value.hint
    with pytest.raises(ReplayConfigError):
        KeyFilter.parse("prefx:user-")


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.slept.append(s)
        self.now += s


def test_token_bucket_rates() -> None:
    clock = FakeClock()
    limiter = RateLimiter(records_per_s=1000, bytes_per_s=10_000, clock=clock, sleep=clock.sleep)
    sent_records = sent_bytes = 0
    start = clock.now
    for _ in range(200):
        limiter.acquire(50, 400)
        sent_records += 50
        sent_bytes += 400
    elapsed = clock.now - start
    # 10,000 records at 1,000/s with a 1 s burst: at least 9 s; bytes 80,000 at 10 kB/s: 7 s
    assert elapsed == pytest.approx((sent_records - 1000) / 1000, rel=1e-6)
    assert limiter.waited == pytest.approx(elapsed)
    # the byte limit dominates when it is the tighter one
    clock2 = FakeClock()
    lim2 = RateLimiter(records_per_s=1e9, bytes_per_s=1000, clock=clock2, sleep=clock2.sleep)
    for _ in range(10):
        lim2.acquire(1, 500)
    assert clock2.now - 100.0 == pytest.approx((5000 - 1000) / 1000)


def test_token_bucket_refills_but_caps_burst() -> None:
    clock = FakeClock()
    bucket = TokenBucket(100, clock=clock)
    assert bucket.take(100) == 0
    clock.now += 60  # a long pause refills to the one-second capacity only
    assert bucket.take(100) == 0
    assert bucket.take(50) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        TokenBucket(0)


def test_dag_params_and_target_resolution() -> None:
    from types import SimpleNamespace

    import jsonschema
    from kafka_archive.airflow.replay_tasks import resolve_target, spec_from_params
    from kafka_archive.replay.planning.plan import ReplayPlan, TargetSpec

    conn = SimpleNamespace(
        host="k1:9093,k2", port=9094, login="replay", password="s3cret",
        extra_dejson={"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512"},
    )  # fmt: skip
    t = resolve_target("kafka_dr", {"ssl.ca.location": "/ca.pem"}, lambda cid: conn)
    assert t.bootstrap_servers == "k1:9093,k2:9094" and t.name == "kafka_dr"
    assert t.config["sasl.password"] == "s3cret" and t.config["sasl.username"] == "replay"
    assert t.config["security.protocol"] == "SASL_SSL" and t.config["ssl.ca.location"] == "/ca.pem"
    # host:port is taken as bootstrap servers without asking for a connection
    plain = resolve_target("h:9092", None, lambda cid: (_ for _ in ()).throw(AssertionError))
    assert plain.bootstrap_servers == "h:9092" and plain.config == {}
    # secrets never reach the stored plan
    red = t.redacted()
    assert red.config["sasl.password"] == "***" and red.config["sasl.username"] == "replay"
    spec = spec_from_params(
        {"cluster": "c", "topic": "t", "from": "offset:5", "target": "h:9092",
         "partition_mapping": "murmur2", "partitions": [1]},
        TargetSpec(bootstrap_servers="h:9092", config={"sasl.password": "x"}),
    )  # fmt: skip
    assert spec.partition_mapping == "murmur2" and spec.partitions == [1]
    plan = ReplayPlan(replay_id="r-1", spec=spec, partitions=[], source_partition_count=1,
                      created_at_ms=0)  # fmt: skip
    assert '"x"' not in plan.to_json() and ReplayPlan.from_json(plan.to_json()).has_redacted_secrets
    assert '"x"' in plan.to_json(redact=False)
    with pytest.raises(jsonschema.ValidationError):
        spec_from_params({"cluster": "c", "topic": "t", "from": "-2h", "target": "h:1",
                          "partition_mapping": "hash"})  # fmt: skip
    with pytest.raises(jsonschema.ValidationError):
        spec_from_params({"cluster": "", "topic": "t", "from": "-2h", "target": "h:1"})


def test_ledger_mirror_is_idempotent_and_monotone(tmp_path: Path) -> None:
    from kafka_archive.catalog.db import open_catalog
    from kafka_archive.replay.bookkeeping.ledger import ReplayLedger
    from kafka_archive.replay.execution.progress import OffsetRange, ProgressRecord

    ledger = ReplayLedger(open_catalog(f"sqlite:///{tmp_path / 'catalog.db'}", create=True).engine)

    def rng(q: int, first: int, n: int, target_first: int) -> OffsetRange:
        return OffsetRange(
            target_partition=q, source_first=first, source_last=first + n - 1,
            target_first=target_first, target_last=target_first + n - 1, count=n,
        )  # fmt: skip

    def record(seq: int, ranges: list[OffsetRange], done: bool = False) -> ProgressRecord:
        return ProgressRecord(
            replay_id="r-1", source_cluster="c", source_topic="t", source_partition=4,
            target_topic="x", next_offset=100 * seq, end_offset=300, txn_seq=seq,
            records_sent=100 * seq, first_offset=0, last_offset=100 * seq - 1, done=done,
            ranges=ranges,
        )  # fmt: skip

    first = record(1, [rng(0, 0, 100, 0)])
    second = record(2, [rng(0, 100, 60, 101), rng(1, 160, 40, 7)])
    assert ledger.mirror(first, 3, 10)
    assert not ledger.mirror(first, 3, 10)  # the same record again: nothing changes
    assert ledger.mirror(second, 3, 11)
    assert not ledger.mirror(first, 3, 10)  # an older record never overwrites a newer one
    mirrored = ledger.progress("r-1", 4)
    assert mirrored is not None
    assert (mirrored.record.txn_seq, mirrored.record.next_offset) == (2, 200)
    assert (mirrored.progress_partition, mirrored.progress_offset) == (3, 11)
    # a newer record repeating ranges already stored (a resume re-mirroring from Kafka) adds
    # only the new one, and the progress row follows it
    assert ledger.mirror(record(3, [*second.ranges, rng(0, 200, 100, 170)], done=True), 3, 12)
    rows = [(r.target_partition, r.source_first, r.count, r.txn_seq) for r in ledger.ranges("r-1")]
    assert rows == [(0, 0, 100, 1), (0, 100, 60, 2), (0, 200, 100, 3), (1, 160, 40, 2)]
    final = ledger.progress("r-1", 4)
    assert final is not None and final.record.done and final.progress_offset == 12


def test_problems_another_version_serves_are_not_holes() -> None:
    """A refused copy whose offsets a sound version still serves (``detail.served``, e.g. a
    misfiled duplicate replica) loses nothing: not a hole; one that nothing serves is."""
    from types import SimpleNamespace

    from kafka_archive.replay.planning.completeness import holes_from_gaps

    def gap(kind: str, served: bool, lo: int) -> SimpleNamespace:
        detail = {"object": f"c/t/0/{lo:020d}.log", "position": 61, "reason": "x", "served": served}
        return SimpleNamespace(
            kind=kind, partition=0, start_offset=lo, end_offset=lo + 9, detail=detail
        )

    holes = holes_from_gaps(
        [gap("misfiled", True, 0), gap("corrupt", False, 10), gap("overlap", False, 20)], 0
    )
    assert [(h.kind, h.first_offset, h.last_offset, h.byte_position) for h in holes] == [
        ("corrupt", 10, 19, 61)
    ]


def test_an_unknown_target_topic_is_asked_about_again_before_it_is_called_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A topic created a moment before the replay may not have reached the broker asked yet:
    the guard rail asks again while it is unknown (within the wait), and reports it missing
    only when it stayed unknown; with no wait (a replay that creates the topic) it asks once."""
    from kafka_archive.replay.target import checks

    answers = iter([("c", None), ("c", None), ("c", 4)])
    asked: list[str] = []

    def metadata(_consumer: object, topic: str) -> tuple[str | None, int | None]:
        asked.append(topic)
        return next(answers)

    monkeypatch.setattr(checks, "_topic_metadata", metadata)
    assert checks._topic_metadata_settled(None, "t", 30.0) == ("c", 4)  # type: ignore[arg-type]
    assert asked == ["t", "t", "t"]

    asked.clear()
    monkeypatch.setattr(checks, "_topic_metadata", lambda _c, t: asked.append(t) or ("c", None))
    assert checks._topic_metadata_settled(None, "gone", 0.3) == ("c", None)  # type: ignore[arg-type]
    assert len(asked) >= 2  # asked again before giving up
    asked.clear()
    assert checks._topic_metadata_settled(None, "new", 0.0) == ("c", None)  # type: ignore[arg-type]
    assert asked == ["new"]
