"""The chart's buckets down to seconds (issue 23 point 3): ``/stats`` with a bucket of whole
seconds counts the archived batches themselves. Checked against the original log files
(each batch at its max timestamp, as the broker wrote it) and against the catalog's own
per-minute histogram summed per minute."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from support.catalog_data import START_MS, History, archived_catalog
from test_api import API, OP, C, make_app
from ui_fakes import RecordingLauncher

from segment_lib.log_file import iter_batches


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> tuple[History, str, str]:
    return archived_catalog(tmp_path_factory.mktemp("fine"), cluster=C)


@pytest.fixture(scope="module")
def client(archive: tuple[History, str, str]) -> TestClient:
    return TestClient(make_app(archive, RecordingLauncher()))


def _from_the_logs(hist: History, topic: str, first: int, end: int, bucket: int) -> Counter[int]:
    """Records per bucket start, from the partition directories' own .log files."""
    got: Counter[int] = Counter()
    for (t, _p), pdir in hist.dirs.items():
        if t != topic:
            continue
        for log in sorted(Path(pdir).glob("*.log")):
            data = log.read_bytes()
            for b in iter_batches(data, 0, verify_crc=False):
                if first <= b.max_timestamp < end and not b.is_control:
                    got[b.max_timestamp - (b.max_timestamp - first) % bucket] += b.record_count
    return got


def _stats(client: TestClient, frm: int, to: int, bucket: int) -> list[dict[str, int]]:
    got = client.get(
        f"{API}/clusters/{C}/topics/orders/stats",
        params={"from": str(frm), "to": str(to), "bucket_ms": bucket},
        headers=OP,
    )
    assert got.status_code == 200, got.text
    items: list[dict[str, int]] = got.json()["items"]
    return items


def test_second_buckets_are_the_logs_batches(
    client: TestClient, archive: tuple[History, str, str]
) -> None:
    hist = archive[0]
    frm, to = START_MS - 60_000, START_MS + 3_600_000
    seconds = _stats(client, frm, to, 5_000)
    assert all(b["width_ms"] == 5_000 for b in seconds)
    want = _from_the_logs(hist, "orders", seconds[0]["start"], to, 5_000)
    got = {b["start"]: b["records"] for b in seconds if b["records"]}
    assert got == dict(want)
    assert sum(got.values()) > 0
    # finer than a minute: some minute holds records in more than one of its 5 s buckets
    per_minute = Counter(start // 60_000 for start in got)
    assert max(per_minute.values()) > 1, per_minute


def test_second_buckets_sum_to_the_catalogs_minutes(client: TestClient) -> None:
    frm, to = START_MS - 60_000, START_MS + 3_600_000
    minutes = _stats(client, frm, to, 60_000)
    seconds = _stats(client, frm, to, 1_000)
    summed: Counter[int] = Counter()
    byts: Counter[int] = Counter()
    for b in seconds:
        summed[b["start"] - b["start"] % 60_000] += b["records"]
        byts[b["start"] - b["start"] % 60_000] += b["bytes"]
    assert {b["start"]: b["records"] for b in minutes} == {
        m["start"]: summed[m["start"]] for m in minutes
    }
    want_bytes = {m["start"]: byts[m["start"]] for m in minutes}
    assert {b["start"]: b["bytes"] for b in minutes} == want_bytes


def test_a_bucket_that_is_not_whole_seconds_is_refused(client: TestClient) -> None:
    got = client.get(
        f"{API}/clusters/{C}/topics/orders/stats",
        params={"from": str(START_MS), "bucket_ms": 1_500},
        headers=OP,
    )
    assert got.status_code == 422, got.text
