"""S3Store under injected faults: a proxy between boto3 and moto misbehaves on purpose.

Every test asserts that the planned fault really fired (the proxy counts it), so a test cannot
pass merely because the fault was never exercised. Retry delays are tiny (FAST_TEST_OPTIONS:
3 botocore attempts per request, 2 whole-operation attempts).
"""

from __future__ import annotations

import hashlib
import logging
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from kafka_archive.store import IntegrityError, S3Store, StoreUnavailable
from support.faultproxy import FaultProxy
from support.s3common import FAST_TEST_OPTIONS

if TYPE_CHECKING:
    from support.s3server import MotoS3

pytest_plugins = ["support.s3server"]

MiB = 1024 * 1024
ATTEMPTS = FAST_TEST_OPTIONS["max_attempts"]
OP_ATTEMPTS = FAST_TEST_OPTIONS["op_attempts"]


@pytest.fixture
def proxy(moto_s3: MotoS3) -> Iterator[FaultProxy]:
    with FaultProxy(moto_s3.host, moto_s3.port) as p:
        yield p


@pytest.fixture
def store(make_s3_store: Callable[..., S3Store], proxy: FaultProxy) -> S3Store:
    return make_s3_store(endpoint_url=proxy.endpoint_url)


@pytest.fixture
def big(tmp_path: Path) -> tuple[Path, bytes]:
    data = b"".join(hashlib.sha512(i.to_bytes(4, "big")).digest() for i in range(12 * MiB // 64))
    path = tmp_path / "big.bin"
    path.write_bytes(data)
    return path, data


def stored_bytes(moto_s3: MotoS3, store: S3Store, key: str) -> bytes:
    """Read an object directly from moto, bypassing the store and the proxy."""
    raw = moto_s3.client().get_object(Bucket=moto_s3.bucket, Key=f"{store.prefix}/{key}")
    data: bytes = raw["Body"].read()
    return data


def lingering_uploads(moto_s3: MotoS3, store: S3Store) -> list[str]:
    resp = moto_s3.client().list_multipart_uploads(Bucket=moto_s3.bucket, Prefix=store.prefix)
    return [u["Key"] for u in resp.get("Uploads", [])]


def object_exists(moto_s3: MotoS3, store: S3Store, key: str) -> bool:
    resp = moto_s3.client().list_objects_v2(Bucket=moto_s3.bucket, Prefix=f"{store.prefix}/{key}")
    return any(o["Key"] == f"{store.prefix}/{key}" for o in resp.get("Contents", []))


# ---------------------------------------------------------------- transient errors: success


def test_transient_500_on_put_is_retried(
    store: S3Store, proxy: FaultProxy, moto_s3: MotoS3
) -> None:
    fault = proxy.fail("PutObject", 500, "InternalError", times=2)
    data = b"manifest bytes" * 50
    obj = store.put_bytes("m.json", data)
    assert fault.fired == 2
    assert proxy.count("PutObject") == 3
    assert obj.sha256 == hashlib.sha256(data).hexdigest()
    assert stored_bytes(moto_s3, store, "m.json") == data


def test_slow_down_on_upload_part_is_retried(
    store: S3Store, proxy: FaultProxy, moto_s3: MotoS3, big: tuple[Path, bytes]
) -> None:
    fault = proxy.slow_down("UploadPart", times=1, skip=1)
    path, data = big
    store.put_file("seg.log", path)
    assert fault.fired == 1
    assert proxy.count("UploadPart") == 4  # 3 parts + 1 retry
    assert stored_bytes(moto_s3, store, "seg.log") == data
    assert lingering_uploads(moto_s3, store) == []


def test_throttling_429_on_create_multipart_is_retried(
    store: S3Store, proxy: FaultProxy, moto_s3: MotoS3, big: tuple[Path, bytes]
) -> None:
    fault = proxy.throttle("CreateMultipartUpload", times=1)
    path, data = big
    store.put_file("seg.log", path)
    assert fault.fired == 1
    assert stored_bytes(moto_s3, store, "seg.log") == data


def test_500_on_complete_multipart_is_retried(
    store: S3Store, proxy: FaultProxy, moto_s3: MotoS3, big: tuple[Path, bytes]
) -> None:
    fault = proxy.fail("CompleteMultipartUpload", 500, times=1)
    path, data = big
    store.put_file("seg.log", path)
    assert fault.fired == 1
    assert stored_bytes(moto_s3, store, "seg.log") == data
    assert lingering_uploads(moto_s3, store) == []


@pytest.mark.parametrize("failure", ["response lost", "NoSuchUpload"])
def test_lost_complete_multipart_response(
    store: S3Store, proxy: FaultProxy, moto_s3: MotoS3, big: tuple[Path, bytes], failure: str
) -> None:
    """CompleteMultipartUpload succeeds on the server but its response is cut off; or the
    retried Complete finds the upload gone (what many S3-compatible stores answer then)."""
    if failure == "response lost":
        fault = proxy.reset_response("CompleteMultipartUpload", times=1)
    else:
        fault = proxy.fail("CompleteMultipartUpload", 404, "NoSuchUpload", times=1)
    path, data = big
    obj = store.put_file("seg.log", path)
    assert fault.fired == 1
    assert obj.sha256 == hashlib.sha256(data).hexdigest()
    assert stored_bytes(moto_s3, store, "seg.log") == data
    assert lingering_uploads(moto_s3, store) == []


def test_whole_operation_retry_after_botocore_gives_up(
    store: S3Store, proxy: FaultProxy, moto_s3: MotoS3, caplog: pytest.LogCaptureFixture
) -> None:
    # Every botocore attempt of the first operation fails; tenacity's second attempt succeeds.
    fault = proxy.fail("PutObject", 503, "ServiceUnavailable", times=ATTEMPTS)
    caplog.set_level(logging.WARNING, logger="kafka_archive.store")
    store.put_bytes("k", b"eventually")
    assert fault.fired == ATTEMPTS
    assert proxy.count("PutObject") == ATTEMPTS + 1
    assert stored_bytes(moto_s3, store, "k") == b"eventually"
    assert any("retrying" in r.getMessage() for r in caplog.records)


def test_listing_survives_a_failed_page(store: S3Store, proxy: FaultProxy) -> None:
    keys = [f"p/{i}" for i in range(5)]
    for key in keys:
        store.put_bytes(key, b"x")
    fault = proxy.fail("ListObjectsV2", 500, skip=1, times=1)  # the second page
    assert [o.key for o in store.list()] == keys
    assert fault.fired == 1


# ---------------------------------------------------------------- connection resets


def test_reset_mid_upload_part(
    store: S3Store, proxy: FaultProxy, moto_s3: MotoS3, big: tuple[Path, bytes]
) -> None:
    fault = proxy.reset("UploadPart", times=1, skip=1)
    path, data = big
    try:
        store.put_file("seg.log", path)
    except StoreUnavailable:
        # Allowed outcome: then nothing may be visible and nothing may linger.
        assert not object_exists(moto_s3, store, "seg.log")
    else:
        assert stored_bytes(moto_s3, store, "seg.log") == data
    assert fault.fired == 1
    assert lingering_uploads(moto_s3, store) == []


def test_reset_on_every_upload_part_fails_cleanly(
    store: S3Store, proxy: FaultProxy, moto_s3: MotoS3, big: tuple[Path, bytes]
) -> None:
    fault = proxy.reset("UploadPart", times=None)
    path, _ = big
    with pytest.raises(StoreUnavailable) as info:
        store.put_file("seg.log", path)
    assert fault.fired >= ATTEMPTS * OP_ATTEMPTS
    assert f"gave up after {OP_ATTEMPTS} attempts" in str(info.value)
    assert "endpoint" in info.value.hint
    assert not object_exists(moto_s3, store, "seg.log")
    assert store.head("seg.log") is None
    assert proxy.count("CreateMultipartUpload") == OP_ATTEMPTS
    assert proxy.count("AbortMultipartUpload", "forward") >= OP_ATTEMPTS
    assert lingering_uploads(moto_s3, store) == []


def test_upload_aborted_even_when_first_abort_fails(
    store: S3Store, proxy: FaultProxy, moto_s3: MotoS3, big: tuple[Path, bytes]
) -> None:
    """s3transfer's own abort exhausts its retries; the store's second abort cleans up."""
    proxy.reset("UploadPart", times=None)
    abort_fault = proxy.fail("AbortMultipartUpload", 500, times=ATTEMPTS)
    path, _ = big
    with pytest.raises(StoreUnavailable):
        store.put_file("seg.log", path)
    assert abort_fault.fired == ATTEMPTS
    assert lingering_uploads(moto_s3, store) == []
    assert not object_exists(moto_s3, store, "seg.log")


def test_response_cut_mid_body_is_retried(
    store: S3Store, proxy: FaultProxy, moto_s3: MotoS3, big: tuple[Path, bytes]
) -> None:
    path, data = big
    store.put_file("seg.log", path)
    fault = proxy.reset_response("GetObject", times=1)
    assert store.get_bytes("seg.log") == data
    assert fault.fired == 1
    fault = proxy.reset_response("GetObject", times=1)
    assert store.get_range("seg.log", 100, 5 * MiB + 100) == data[100 : 5 * MiB + 100]
    assert fault.fired == 1


# ---------------------------------------------------------------- permanent failure


def test_permanently_failing_endpoint(store: S3Store, proxy: FaultProxy) -> None:
    fault = proxy.fail(None, 500, "InternalError", times=None)
    with pytest.raises(StoreUnavailable) as info:
        store.put_bytes("k", b"never stored")
    # Bounded: exactly max_attempts per request times op_attempts per operation.
    assert proxy.count("PutObject") == ATTEMPTS * OP_ATTEMPTS
    assert fault.fired == ATTEMPTS * OP_ATTEMPTS
    message = str(info.value)
    assert "InternalError" in message
    assert f"gave up after {OP_ATTEMPTS} attempts" in message
    assert store.uri in message and "'k'" in message
    assert "run the operation again" in message  # the hint says what to do next


def test_unreachable_endpoint(make_s3_store: Callable[..., S3Store]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again below: connections are refused
    store = make_s3_store(endpoint_url=f"http://127.0.0.1:{port}")
    for action in (
        lambda: store.put_bytes("k", b"v"),
        lambda: store.get_bytes("k"),
        lambda: store.head("k"),
        lambda: list(store.list()),
        lambda: store.delete("k"),
    ):
        with pytest.raises(StoreUnavailable) as info:
            action()
        assert f"http://127.0.0.1:{port}" in str(info.value)
        assert "AWS_ENDPOINT_URL" in info.value.hint


# ---------------------------------------------------------------- corruption in transit


def test_corrupted_part_in_transit_is_detected(
    store: S3Store, proxy: FaultProxy, moto_s3: MotoS3, big: tuple[Path, bytes]
) -> None:
    # moto (unlike S3) does not check a part against its x-amz-checksum-sha256, so the bad byte
    # is stored; the store's post-upload composite-checksum check must catch it.
    fault = proxy.corrupt_request("UploadPart", times=1, skip=1)
    path, _ = big
    with pytest.raises(IntegrityError, match="does not match the source"):
        store.put_file("seg.log", path)
    assert fault.fired == 1
    assert not object_exists(moto_s3, store, "seg.log")  # deleted, not left behind
    assert lingering_uploads(moto_s3, store) == []


@pytest.mark.parametrize("size", [1000, 12 * MiB])
def test_corrupted_download_is_detected(
    store: S3Store, proxy: FaultProxy, big: tuple[Path, bytes], size: int
) -> None:
    path, data = big
    path.write_bytes(data[:size])
    store.put_file("obj", path)
    fault = proxy.corrupt_response("GetObject", times=1)
    with pytest.raises(IntegrityError):
        store.get_bytes("obj")
    assert fault.fired == 1
    fault = proxy.corrupt_response("GetObject", times=1)
    with pytest.raises(IntegrityError), store.open_stream("obj") as stream:
        stream.read()
    assert fault.fired == 1
    assert store.get_bytes("obj") == data[:size]  # the stored object itself is fine
