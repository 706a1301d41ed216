"""Archiving into S3 (moto in server mode, over HTTP), with faults injected by a proxy.

Every fault test asserts that its fault really fired, and every run ends with the same
independent check: each archived object equals its source file byte for byte (read back from
moto directly, bypassing the store) and every eligible segment is archived exactly once.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from archive_checks import check_archive
from archive_helpers import archive_cluster
from cluster_data import CLUSTER, Cluster, build_cluster
from kafka_archive.archive import SegmentStatus, iter_manifests, run_archive
from kafka_archive.store import S3Store
from support.faultproxy import FaultProxy

if TYPE_CHECKING:
    from support.s3server import MotoS3

pytest_plugins = ["support.s3server"]

MiB = 1024 * 1024


@pytest.fixture
def proxy(moto_s3: MotoS3) -> Iterator[FaultProxy]:
    with FaultProxy(moto_s3.host, moto_s3.port) as p:
        yield p


def api_calls(store: S3Store) -> Counter[str]:
    """Count every S3 API call the store's client makes from now on (by operation name)."""
    calls: Counter[str] = Counter()

    def record(model: Any, **_: Any) -> None:
        calls[model.name] += 1

    store.client.meta.events.register("before-call.s3", record)
    return calls


def check_raw_bytes(moto_s3: MotoS3, store: S3Store) -> int:
    """Every file of every current manifest, read from moto directly (not through the store),
    has its recorded SHA-256, and equals its source file when that still holds these bytes."""
    client = moto_s3.client()
    n = 0
    for m in iter_manifests(store, CLUSTER):
        src = Path(m.source.log_dir) / m.source.partition_dir
        for f in m.files:
            resp = client.get_object(Bucket=moto_s3.bucket, Key=f"{store.prefix}/{f.key}")
            data = resp["Body"].read()
            assert hashlib.sha256(data).hexdigest() == f.sha256
            if (src / f.name).exists() and hashlib.sha256(
                (src / f.name).read_bytes()
            ).hexdigest() == f.sha256:
                assert data == (src / f.name).read_bytes()
                n += 1
    return n


def lingering_uploads(moto_s3: MotoS3, store: S3Store) -> list[str]:
    resp = moto_s3.client().list_multipart_uploads(Bucket=moto_s3.bucket, Prefix=store.prefix)
    return [u["Key"] for u in resp.get("Uploads", [])]


def test_s3_happy_path_then_rerun_sends_no_upload(
    cluster: Cluster, make_s3_store: Callable[..., S3Store], moto_s3: MotoS3
) -> None:
    store = make_s3_store(list_page_size=1000)
    first = archive_cluster(cluster, store)
    assert first.ok and first.segments_archived > 0
    check_archive(store, cluster, CLUSTER)
    assert check_raw_bytes(moto_s3, store) > 0
    calls = api_calls(store)
    second = archive_cluster(cluster, store)
    assert second.ok and second.segments_archived == 0 and second.bytes_uploaded == 0
    assert calls["ListObjectsV2"] > 0  # it did look
    for op in ("PutObject", "UploadPart", "CreateMultipartUpload", "CopyObject", "DeleteObject"):
        assert calls[op] == 0, op
    assert second.skipped["already_archived"] == first.segments_archived


def test_s3_transient_errors_and_throttling_are_retried(
    cluster: Cluster, make_s3_store: Callable[..., S3Store], proxy: FaultProxy, moto_s3: MotoS3
) -> None:
    store = make_s3_store(endpoint_url=proxy.endpoint_url, list_page_size=1000)
    faults = [
        proxy.fail("PutObject", 500, "InternalError", times=2),
        proxy.slow_down("PutObject", times=2, skip=5),
        proxy.throttle("HeadObject", times=2, skip=3),
        proxy.slow_down("ListObjectsV2", times=1),
    ]
    report = archive_cluster(cluster, store)
    assert report.ok, [f.detail for f in report.failures]
    assert all(f.fired == f.times for f in faults), [(f.operation, f.fired) for f in faults]
    check_archive(store, cluster, CLUSTER)
    check_raw_bytes(moto_s3, store)


def test_s3_connection_reset_in_the_middle_of_a_multipart_upload(
    big_cluster: Cluster, make_s3_store: Callable[..., S3Store], proxy: FaultProxy, moto_s3: MotoS3
) -> None:
    store = make_s3_store(endpoint_url=proxy.endpoint_url, list_page_size=1000)
    reset = proxy.reset("UploadPart", times=1, skip=1)  # the second part dies mid-body
    report = run_archive(cluster=CLUSTER, broker_id=1, log_dirs=big_cluster.dirs(1), store=store)
    assert report.ok and report.segments_archived == 1
    assert reset.fired == 1
    assert proxy.count("UploadPart") >= 4  # 3 parts + the retried one
    [m] = list(iter_manifests(store, CLUSTER))
    assert m.log_file.size > 10 * MiB
    assert check_raw_bytes(moto_s3, store) >= 1
    assert lingering_uploads(moto_s3, store) == []


def test_s3_persistent_outage_fails_then_the_rerun_completes(
    cluster: Cluster, make_s3_store: Callable[..., S3Store], proxy: FaultProxy, moto_s3: MotoS3
) -> None:
    store = make_s3_store(endpoint_url=proxy.endpoint_url, list_page_size=1000, max_attempts=2)
    outage = proxy.fail("PutObject", 500, times=None, skip=6)  # the store dies after 6 PUTs
    first = archive_cluster(cluster, store, concurrency=1)
    assert outage.fired > 0
    assert not first.ok and first.segments_failed > 0
    assert {f.status for f in first.failures} == {SegmentStatus.FAILED}
    assert all(f.error is not None for f in first.failures)
    # nothing half-done is visible as archived: every manifest present is complete
    check_raw_bytes(moto_s3, store)
    proxy.clear()
    second = archive_cluster(cluster, store)
    assert second.ok
    assert second.files_reused > 0  # what arrived before the outage is not uploaded again
    check_archive(store, cluster, CLUSTER)
    check_raw_bytes(moto_s3, store)


def test_s3_single_broker_runs_skip_other_replicas(
    tmp_path: Path, make_s3_store: Callable[..., S3Store], proxy: FaultProxy
) -> None:
    cluster = build_cluster(tmp_path / "c")
    store = make_s3_store(endpoint_url=proxy.endpoint_url, list_page_size=1000)
    assert run_archive(cluster=CLUSTER, broker_id=3, log_dirs=cluster.dirs(3), store=store).ok
    # broker 1 must read broker 3's manifests to see what they cover; the first read fails
    flaky_get = proxy.fail("GetObject", 503, "ServiceUnavailable", times=1)
    for b in (1, 2):  # any order: each consults what the others archived
        report = run_archive(cluster=CLUSTER, broker_id=b, log_dirs=cluster.dirs(b), store=store)
        assert report.ok
        assert report.skipped["other_replica"] > 0
    assert flaky_get.fired == 1
    manifests = check_archive(store, cluster, CLUSTER)
    orders0 = [m for m in manifests if (m.topic, m.partition) == ("orders", 0)]
    assert orders0[0].source.broker_id == 3  # it ran first
