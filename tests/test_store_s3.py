"""S3Store specifics against moto in server mode, reached only over HTTP through boto3.

The independent oracle for checksums is the AWS definition: a single PUT's ChecksumSHA256 is
base64(sha256(content)); a multipart upload's is base64(sha256(concat(sha256(part_i))))
followed by "-<parts>" (AWS S3 User Guide, "Checking object integrity").
"""

from __future__ import annotations

import base64
import hashlib
import logging
import socket
import traceback
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import kafka_archive.store.s3.store as s3_store_module
import pytest
from kafka_archive.store import (
    IntegrityError,
    ObjectNotFound,
    S3Store,
    StoreConfigError,
    StoreError,
    StoreUnavailable,
    open_store,
)
from kafka_archive.store._digest import SourceDigest
from support.s3common import (
    FAKE_SECRET_KEY,
    FAST_TEST_OPTIONS,
    TEST_PART_SIZE,
    unique_prefix,
)

if TYPE_CHECKING:
    from support.s3server import MotoS3

pytest_plugins = ["support.s3server"]

MiB = 1024 * 1024


def b64sha(data: bytes) -> str:
    return base64.b64encode(hashlib.sha256(data).digest()).decode()


def composite(data: bytes, part: int) -> str:
    parts = [data[i : i + part] for i in range(0, len(data), part)]
    joined = b"".join(hashlib.sha256(p).digest() for p in parts)
    return base64.b64encode(hashlib.sha256(joined).digest()).decode()


def count_calls(store: S3Store, operation: str) -> list[dict[str, Any]]:
    """Record the API parameters of every call of ``operation`` the store's client makes."""
    calls: list[dict[str, Any]] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        calls.append(dict(params))

    store.client.meta.events.register(f"before-parameter-build.s3.{operation}", record)
    return calls


def sent_headers(store: S3Store, operation: str) -> list[dict[str, str]]:
    """Record the HTTP headers of every request of ``operation`` as sent on the wire."""
    seen: list[dict[str, str]] = []

    def record(request: Any, **_: Any) -> None:
        seen.append(
            {
                k.lower(): v.decode() if isinstance(v, bytes) else v
                for k, v in request.headers.items()
            }
        )

    store.client.meta.events.register(f"before-send.s3.{operation}", record)
    return seen


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def big(tmp_path: Path) -> tuple[Path, bytes]:
    data = b"".join(hashlib.sha512(i.to_bytes(4, "big")).digest() for i in range(12 * MiB // 64))
    path = tmp_path / "big.bin"
    path.write_bytes(data)
    return path, data


def test_multipart_upload_uses_parts_and_composite_checksum(
    make_s3_store: Callable[..., S3Store], moto_s3: MotoS3, big: tuple[Path, bytes]
) -> None:
    store = make_s3_store()
    parts = sent_headers(store, "UploadPart")
    path, data = big
    obj = store.put_file("seg.log", path)
    # 5 + 5 + 2 MiB, each part sent with its own SHA-256 for S3 to verify.
    expected_parts = [data[i : i + TEST_PART_SIZE] for i in range(0, len(data), TEST_PART_SIZE)]
    assert len(expected_parts) == 3
    assert sorted(p["x-amz-checksum-sha256"] for p in parts) == sorted(
        b64sha(p) for p in expected_parts
    )
    raw = moto_s3.client().head_object(
        Bucket=moto_s3.bucket, Key=f"{store.prefix}/seg.log", ChecksumMode="ENABLED"
    )
    assert raw["ChecksumSHA256"].partition("-")[0] == composite(data, TEST_PART_SIZE)
    assert raw["ETag"].strip('"').endswith("-3")
    assert raw["Metadata"]["sha256"] == hashlib.sha256(data).hexdigest()
    assert obj.sha256 == hashlib.sha256(data).hexdigest()
    assert obj.etag == raw["ETag"].strip('"')


def test_single_put_sends_our_sha256(
    make_s3_store: Callable[..., S3Store], moto_s3: MotoS3, tmp_path: Path
) -> None:
    store = make_s3_store()
    puts = sent_headers(store, "PutObject")
    data = b"small segment" * 100
    (tmp_path / "s").write_bytes(data)
    store.put_file("s", tmp_path / "s")
    assert len(puts) == 1
    assert puts[0]["x-amz-checksum-sha256"] == b64sha(data)
    raw = moto_s3.client().head_object(
        Bucket=moto_s3.bucket, Key=f"{store.prefix}/s", ChecksumMode="ENABLED"
    )
    assert raw["ChecksumSHA256"] == b64sha(data)


@pytest.mark.parametrize(("size", "change"), [(12 * MiB, "overwrite"), (4096, "append")])
def test_source_changing_during_upload_is_detected(
    make_s3_store: Callable[..., S3Store],
    moto_s3: MotoS3,
    big: tuple[Path, bytes],
    monkeypatch: pytest.MonkeyPatch,
    size: int,
    change: str,
) -> None:
    """A writer touches the file after it was hashed but before it was uploaded."""
    store = make_s3_store()
    path, data = big
    path.write_bytes(data[:size])
    real_digest_file = s3_store_module.digest_file

    def digest_then_modify(p: str, part_size: int | None = None) -> SourceDigest:
        digest = real_digest_file(p, part_size)
        with open(p, "r+b") as f:
            if change == "overwrite":  # same size, one byte different, in the second part
                f.seek(7 * MiB)
                f.write(b"X")
            else:
                f.seek(0, 2)
                f.write(b"appended")
        return digest

    monkeypatch.setattr(s3_store_module, "digest_file", digest_then_modify)
    with pytest.raises(IntegrityError, match="does not match the source"):
        store.put_file("seg", path)
    assert store.head("seg") is None
    uploads = moto_s3.client().list_multipart_uploads(Bucket=moto_s3.bucket, Prefix=store.prefix)
    assert uploads.get("Uploads", []) == []


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"sse": "AES256"}, {"ServerSideEncryption": "AES256"}),
        (
            {"sse": "aws:kms", "sse_kms_key_id": "alias/kafka-archive"},
            {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": "alias/kafka-archive"},
        ),
    ],
)
def test_sse_on_every_write(
    make_s3_store: Callable[..., S3Store],
    moto_s3: MotoS3,
    big: tuple[Path, bytes],
    options: dict[str, str],
    expected: dict[str, str],
) -> None:
    store = make_s3_store(**options)
    path, _ = big
    store.put_bytes("manifest.json", b"{}")
    store.put_file("big", path)  # multipart: SSE goes on CreateMultipartUpload
    client = moto_s3.client()
    for key in ("manifest.json", "big"):
        head = client.head_object(Bucket=moto_s3.bucket, Key=f"{store.prefix}/{key}")
        assert {k: head.get(k) for k in expected} == expected, key


def test_no_sse_unless_asked(make_s3_store: Callable[..., S3Store], moto_s3: MotoS3) -> None:
    store = make_s3_store()
    store.put_bytes("k", b"v")
    head = moto_s3.client().head_object(Bucket=moto_s3.bucket, Key=f"{store.prefix}/k")
    assert "ServerSideEncryption" not in head


def test_endpoint_from_aws_endpoint_url_env_only(
    moto_s3: MotoS3, aws_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_s3.endpoint_url)
    prefix = unique_prefix("env")
    options = {k: v for k, v in FAST_TEST_OPTIONS.items() if k != "endpoint_url"}
    store = open_store(f"s3://{moto_s3.bucket}/{prefix}", **options)
    assert isinstance(store, S3Store)
    assert store.options.endpoint_url is None
    assert store.client.meta.endpoint_url == moto_s3.endpoint_url
    store.put_bytes("k", b"via env endpoint")
    raw = moto_s3.client().get_object(Bucket=moto_s3.bucket, Key=f"{prefix}/k")
    assert raw["Body"].read() == b"via env endpoint"
    store.close()


def test_service_specific_endpoint_env_wins(
    moto_s3: MotoS3, aws_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")  # nothing there
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", moto_s3.endpoint_url)
    store = open_store(f"s3://{moto_s3.bucket}/{unique_prefix()}", **FAST_TEST_OPTIONS)
    assert isinstance(store, S3Store)
    assert store.client.meta.endpoint_url == moto_s3.endpoint_url
    store.put_bytes("k", b"v")
    assert store.get_bytes("k") == b"v"
    store.close()


def test_profile_from_aws_profile(
    moto_s3: MotoS3, aws_env: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = tmp_path / "config"
    credentials = tmp_path / "credentials"
    config.write_text("[profile archive]\nregion = eu-west-1\n")
    credentials.write_text(
        "[archive]\naws_access_key_id = AKIAPROFILEKEY000001\n"
        "aws_secret_access_key = profileSecretValue123\n"
    )
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.setenv("AWS_PROFILE", "archive")
    store = open_store(
        f"s3://{moto_s3.bucket}/{unique_prefix()}",
        **{**FAST_TEST_OPTIONS, "endpoint_url": moto_s3.endpoint_url},
    )
    assert isinstance(store, S3Store)
    assert store.client.meta.region_name == "eu-west-1"
    sent = sent_headers(store, "PutObject")
    store.put_bytes("k", b"v")
    assert "Credential=AKIAPROFILEKEY000001/" in sent[0]["authorization"]
    assert "profileSecretValue123" not in repr(store)
    store.close()


def test_endpoint_from_profile_config_gets_path_style(
    moto_s3: MotoS3, aws_env: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = tmp_path / "config"
    config.write_text(f"[profile archive]\nendpoint_url = {moto_s3.endpoint_url}\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_PROFILE", "archive")
    options = {k: v for k, v in FAST_TEST_OPTIONS.items() if k != "endpoint_url"}
    store = open_store(f"s3://{moto_s3.bucket}/{unique_prefix()}", **options)
    assert isinstance(store, S3Store)
    assert store.client.meta.endpoint_url == moto_s3.endpoint_url
    assert getattr(store.client.meta.config, "s3") == {"addressing_style": "path"}  # noqa: B009
    store.put_bytes("k", b"v")
    assert store.get_bytes("k") == b"v"
    store.close()


def test_missing_profile_is_a_config_error(
    moto_s3: MotoS3, aws_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_PROFILE", "no-such-profile")
    with pytest.raises(StoreConfigError, match="profile"):
        open_store(f"s3://{moto_s3.bucket}/x", endpoint_url=moto_s3.endpoint_url)


def test_region_precedence(moto_s3: MotoS3, aws_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_REGION", "eu-west-2")
    uri = f"s3://{moto_s3.bucket}/x"
    store = open_store(uri, endpoint_url=moto_s3.endpoint_url)
    assert isinstance(store, S3Store) and store.client.meta.region_name == "eu-west-2"
    store = open_store(uri, endpoint_url=moto_s3.endpoint_url, region="ap-south-1")
    assert isinstance(store, S3Store) and store.client.meta.region_name == "ap-south-1"
    monkeypatch.delenv("AWS_REGION")
    store = open_store(uri, endpoint_url=moto_s3.endpoint_url)
    assert isinstance(store, S3Store) and store.client.meta.region_name == "us-east-1"


def test_path_style_by_default_with_custom_endpoint(moto_s3: MotoS3, aws_env: None) -> None:
    store = open_store(f"s3://{moto_s3.bucket}/x", endpoint_url=moto_s3.endpoint_url)
    assert isinstance(store, S3Store)
    assert getattr(store.client.meta.config, "s3") == {"addressing_style": "path"}  # noqa: B009
    store = open_store(f"s3://{moto_s3.bucket}/x")  # AWS itself
    assert isinstance(store, S3Store)
    assert getattr(store.client.meta.config, "s3") == {"addressing_style": "auto"}  # noqa: B009


def test_secrets_never_in_repr_errors_or_logs(
    moto_s3: MotoS3, aws_env: None, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    caplog.set_level(logging.DEBUG)
    options = {k: v for k, v in FAST_TEST_OPTIONS.items() if k != "endpoint_url"}
    store = open_store(
        f"s3://{moto_s3.bucket}/{unique_prefix()}", endpoint_url=moto_s3.endpoint_url, **options
    )
    dead = open_store(
        f"s3://{moto_s3.bucket}/x", endpoint_url=f"http://127.0.0.1:{free_port()}", **options
    )
    assert isinstance(store, S3Store)
    store.put_bytes("k", b"v")
    errors: list[StoreError] = []
    for action in (
        lambda: store.get_bytes("missing"),
        lambda: store.put_bytes("k", b"v", sha256="0" * 64),
        lambda: dead.put_bytes("k", b"v"),
        lambda: dead.get_bytes("k"),
    ):
        with pytest.raises(StoreError) as info:
            action()
        errors.append(info.value)
    assert {type(e) for e in errors} == {ObjectNotFound, IntegrityError, StoreUnavailable}
    texts = [repr(store), str(store), repr(dead), repr(store.options)]
    for err in errors:
        texts += [str(err), repr(err), "".join(traceback.format_exception(err))]
    texts += [record.getMessage() for record in caplog.records]
    for text in texts:
        assert FAKE_SECRET_KEY not in text
    # sanity: botocore's debug logs (requests, signatures) were captured and scanned
    assert any(record.name.startswith("botocore") for record in caplog.records)
    store.close()
    dead.close()


def test_endpoint_with_embedded_credentials_refused(
    moto_s3: MotoS3, aws_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_password = f"http://user:urlPassword@127.0.0.1:{moto_s3.port}"
    with pytest.raises(StoreConfigError, match="must not contain credentials") as info:
        open_store(f"s3://{moto_s3.bucket}/x", endpoint_url=with_password)
    assert "urlPassword" not in str(info.value)
    monkeypatch.setenv("AWS_ENDPOINT_URL", with_password)
    with pytest.raises(StoreConfigError, match="AWS_ENDPOINT_URL must not contain credentials"):
        open_store(f"s3://{moto_s3.bucket}/x")


def test_list_paginates(make_s3_store: Callable[..., S3Store]) -> None:
    store = make_s3_store(list_page_size=2)
    sibling = make_s3_store(prefix=store.prefix + "-sibling")
    sibling.put_bytes("k", b"must not appear in the other store's listing")
    keys = [f"topic-0/{i:020d}.log" for i in range(7)]
    for key in keys:
        store.put_bytes(key, key.encode())
    calls = count_calls(store, "ListObjectsV2")
    listed = [o.key for o in store.list()]
    assert listed == keys
    assert len(calls) == 4  # 2 + 2 + 2 + 1
    assert all(c["MaxKeys"] == 2 for c in calls)
    calls.clear()
    assert [o.key for o in store.list("topic-0/0000000000000000000")] == keys
    assert len(calls) == 4


def test_store_on_whole_bucket(moto_s3: MotoS3, make_s3_store: Callable[..., S3Store]) -> None:
    bucket = f"kafka-archive-{uuid.uuid4().hex[:12]}"
    moto_s3.client().create_bucket(Bucket=bucket)
    store = open_store(
        f"s3://{bucket}", **{**FAST_TEST_OPTIONS, "endpoint_url": moto_s3.endpoint_url}
    )
    assert store.uri == f"s3://{bucket}"
    store.put_bytes("a/b", b"1")
    assert [o.key for o in store.list()] == ["a/b"]
    raw = moto_s3.client().get_object(Bucket=bucket, Key="a/b")
    assert raw["Body"].read() == b"1"


def test_missing_bucket(moto_s3: MotoS3, aws_env: None) -> None:
    store = open_store(
        "s3://no-such-bucket-here/x", **{**FAST_TEST_OPTIONS, "endpoint_url": moto_s3.endpoint_url}
    )
    with pytest.raises(StoreConfigError, match="Create bucket 'no-such-bucket-here'"):
        store.put_bytes("k", b"v")


def test_foreign_objects(make_s3_store: Callable[..., S3Store], moto_s3: MotoS3) -> None:
    """Objects written by other tools: sha256 derived from a whole-object checksum or unknown."""
    store = make_s3_store()
    client = moto_s3.client()
    data = b"written by another tool"
    client.put_object(
        Bucket=moto_s3.bucket, Key=f"{store.prefix}/with-sha", Body=data, ChecksumAlgorithm="SHA256"
    )
    client.put_object(
        Bucket=moto_s3.bucket, Key=f"{store.prefix}/crc-only", Body=data, ChecksumAlgorithm="CRC32"
    )
    head = store.head("with-sha")
    assert head is not None and head.sha256 == hashlib.sha256(data).hexdigest()
    head = store.head("crc-only")
    assert head is not None and head.sha256 is None
    assert store.get_bytes("crc-only") == data
    # put_if_absent streams and hashes an object without a recorded SHA-256.
    _, created = store.put_if_absent("crc-only", data)
    assert not created
    with pytest.raises(IntegrityError):
        store.put_if_absent("crc-only", b"other content")


def test_recorded_sha_contradicting_store_checksum(
    make_s3_store: Callable[..., S3Store], moto_s3: MotoS3
) -> None:
    store = make_s3_store()
    moto_s3.client().put_object(
        Bucket=moto_s3.bucket,
        Key=f"{store.prefix}/lying",
        Body=b"actual bytes",
        ChecksumAlgorithm="SHA256",
        Metadata={"sha256": hashlib.sha256(b"other bytes").hexdigest()},
    )
    with pytest.raises(IntegrityError, match="disagrees"):
        store.head("lying")
    with pytest.raises(IntegrityError, match="does not match the recorded"):
        store.get_bytes("lying")
    with pytest.raises(IntegrityError), store.open_stream("lying") as stream:
        stream.read()


@pytest.mark.parametrize(
    ("uri", "options"),
    [
        ("s3://", {}),
        ("s3://ab", {}),
        ("s3://bucket/../x", {}),
        ("s3://bucket/a//b", {}),
        ("s3://bucket/x?versionId=1", {}),
        ("s3://bucket/x", {"no_such_option": 1}),
        ("s3://bucket/x", {"sse": "AES256", "sse_kms_key_id": "k"}),
        ("s3://bucket/x", {"sse": "rot13"}),
        ("s3://bucket/x", {"multipart_chunksize": 1024}),
        ("s3://bucket/x", {"list_page_size": 0}),
        ("s3://bucket/x", {"max_attempts": 0}),
        ("s3://bucket/x", {"addressing_style": "sideways"}),
        ("s3://bucket/x", {"endpoint_url": "ftp://host"}),
    ],
)
def test_bad_uris_and_options(aws_env: None, uri: str, options: dict[str, Any]) -> None:
    with pytest.raises(StoreConfigError):
        open_store(uri, **options)


def test_uri_normalisation(aws_env: None, moto_s3: MotoS3) -> None:
    store = open_store("s3://my-bucket/a/b/", endpoint_url=moto_s3.endpoint_url)
    assert isinstance(store, S3Store)
    assert (store.uri, store.bucket, store.prefix) == ("s3://my-bucket/a/b", "my-bucket", "a/b")
    assert repr(store).startswith("S3Store(uri='s3://my-bucket/a/b'")
