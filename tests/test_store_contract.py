"""The ObjectStore contract, run identically against LocalStore and S3Store (moto over HTTP).

Expected values are computed independently in the tests (hashlib over the bytes the test
generated), never read back from the store under test.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from kafka_archive.store import (
    IntegrityError,
    InvalidKey,
    InvalidRange,
    InvalidRequest,
    ObjectNotFound,
    ObjectStore,
)

pytest_plugins = ["support.s3server", "support.stores"]

MiB = 1024 * 1024
BIG = 12 * MiB  # > the 5 MiB multipart threshold used by the S3 test store: 3 parts


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(scope="module")
def big_data() -> bytes:
    # Deterministic but not compressible-looking; distinct per part so part mix-ups show.
    return b"".join(hashlib.sha512(i.to_bytes(4, "big")).digest() for i in range(BIG // 64))


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_store_satisfies_protocol(store: ObjectStore) -> None:
    assert isinstance(store, ObjectStore)
    assert store.uri.startswith(("file:///", "s3://"))


def test_put_bytes_round_trip_with_metadata(store: ObjectStore) -> None:
    data = b'{"manifest": 1}\n'
    obj = store.put_bytes("manifests/m-1.json", data, metadata={"kind": "manifest"})
    assert obj.key == "manifests/m-1.json"
    assert obj.size == len(data)
    assert obj.sha256 == sha(data)
    assert store.get_bytes("manifests/m-1.json") == data
    head = store.head("manifests/m-1.json")
    assert head is not None
    assert (head.key, head.size, head.sha256) == ("manifests/m-1.json", len(data), sha(data))
    assert dict(head.metadata) == {"kind": "manifest"}
    assert head.last_modified is not None and head.last_modified.tzinfo is not None
    assert store.exists("manifests/m-1.json")


def test_empty_object(store: ObjectStore) -> None:
    obj = store.put_bytes("empty", b"")
    assert (obj.size, obj.sha256) == (0, sha(b""))
    assert store.get_bytes("empty") == b""
    assert store.get_range("empty", 0, 0) == b""


@pytest.mark.parametrize("size", [1, 1000, BIG])
def test_put_file_round_trip(
    store: ObjectStore, tmp_path: Path, big_data: bytes, size: int
) -> None:
    data = big_data[:size]
    src = write(tmp_path / "src.bin", data)
    obj = store.put_file("segments/0/00000000000000000000.log", src, sha256=sha(data))
    assert (obj.size, obj.sha256) == (size, sha(data))
    assert store.get_bytes("segments/0/00000000000000000000.log") == data
    with store.open_stream("segments/0/00000000000000000000.log") as stream:
        assert stream.read() == data
    head = store.head("segments/0/00000000000000000000.log")
    assert head is not None and head.sha256 == sha(data) and head.size == size


def test_overwrite_replaces_content(store: ObjectStore) -> None:
    store.put_bytes("k", b"first")
    obj = store.put_bytes("k", b"second version")
    assert obj.sha256 == sha(b"second version")
    assert store.get_bytes("k") == b"second version"
    head = store.head("k")
    assert head is not None and head.sha256 == sha(b"second version")


def test_ranged_reads_at_boundaries(store: ObjectStore, tmp_path: Path, big_data: bytes) -> None:
    store.put_file("big", write(tmp_path / "big", big_data))
    n = len(big_data)
    part = 5 * MiB
    ranges = [
        (0, 1),
        (0, 4096),
        (n - 1, n),
        (n - 100, n),
        (0, n),
        (part - 3, part + 3),  # across the first multipart part boundary
        (2 * part - 1, 2 * part + 1),  # across the second
        (1234, 1234),  # empty
    ]
    for start, end in ranges:
        assert store.get_range("big", start, end) == big_data[start:end], (start, end)


def test_ranged_reads_outside_object(store: ObjectStore) -> None:
    data = bytes(range(256)) * 4
    store.put_bytes("small", data)
    assert store.get_range("small", 1000, 1024) == data[1000:]
    with pytest.raises(InvalidRange):
        store.get_range("small", 1000, 1025)  # one byte past the end
    with pytest.raises(InvalidRange):
        store.get_range("small", 1024, 1025)  # starts at the end
    with pytest.raises(InvalidRange):
        store.get_range("small", 5000, 6000)
    with pytest.raises(InvalidRange):
        store.get_range("small", -1, 3)
    with pytest.raises(InvalidRange):
        store.get_range("small", 10, 5)
    with pytest.raises(ObjectNotFound):
        store.get_range("missing", 0, 1)
    with pytest.raises(ObjectNotFound):
        store.get_range("missing", 0, 0)


def test_list_sorted_by_prefix(store: ObjectStore) -> None:
    keys = [
        "a/b/2.log",
        "a/b/10.log",
        "a/c.idx",
        "a-sibling",
        "ab/x",
        "b/y",
        "a/b/1.log",
    ]
    for i, key in enumerate(keys):
        store.put_bytes(key, b"x" * i)
    listed = list(store.list())
    assert [o.key for o in listed] == sorted(keys)
    sizes = {o.key: o.size for o in listed}
    assert sizes == {key: i for i, key in enumerate(keys)}
    assert all(o.sha256 is None for o in listed)  # documented: use head() for sha256
    assert [o.key for o in store.list("a/")] == ["a/b/1.log", "a/b/10.log", "a/b/2.log", "a/c.idx"]
    assert [o.key for o in store.list("a")] == sorted(k for k in keys if k.startswith("a"))
    assert [o.key for o in store.list("a/b/1")] == ["a/b/1.log", "a/b/10.log"]
    assert list(store.list("nothing/here/")) == []


def test_head_exists_delete(store: ObjectStore) -> None:
    assert store.head("gone") is None
    assert not store.exists("gone")
    store.delete("gone")  # idempotent on a missing key
    store.put_bytes("gone", b"data")
    assert store.exists("gone")
    store.delete("gone")
    assert not store.exists("gone")
    assert store.head("gone") is None
    with pytest.raises(ObjectNotFound):
        store.get_bytes("gone")
    with pytest.raises(ObjectNotFound):
        store.open_stream("gone")
    assert list(store.list("gone")) == []


def test_expected_sha256_mismatch_stores_nothing(
    store: ObjectStore, tmp_path: Path, big_data: bytes
) -> None:
    wrong = sha(b"something else")
    with pytest.raises(IntegrityError) as info:
        store.put_bytes("manifest", b"payload", sha256=wrong)
    assert wrong in str(info.value)
    assert not store.exists("manifest")

    src = write(tmp_path / "seg", big_data)
    with pytest.raises(IntegrityError):
        store.put_file("seg", src, sha256=wrong)
    assert not store.exists("seg")
    assert list(store.list()) == []


def test_expected_sha256_accepts_uppercase_and_rejects_garbage(store: ObjectStore) -> None:
    obj = store.put_bytes("k", b"abc", sha256=sha(b"abc").upper())
    assert obj.sha256 == sha(b"abc")
    with pytest.raises(InvalidRequest):
        store.put_bytes("k2", b"abc", sha256="not-a-sha")
    assert not store.exists("k2")


def test_put_if_absent(store: ObjectStore, tmp_path: Path) -> None:
    data = b"content-addressed bytes"
    key = f"cas/{sha(data)}"
    first, created = store.put_if_absent(key, data)
    assert created and first.sha256 == sha(data)
    again, created_again = store.put_if_absent(key, write(tmp_path / "same", data))
    assert not created_again
    assert again.etag == first.etag  # not rewritten
    with pytest.raises(IntegrityError):
        store.put_if_absent(key, b"different bytes under the same key")
    assert store.get_bytes(key) == data


@pytest.mark.parametrize(
    "key",
    [
        "",
        "/abs",
        "../escape",
        "a/../../escape",
        "a/./b",
        "a//b",
        "trailing/",
        "back\\slash",
        "nul\x00byte",
        "new\nline",
        ".ka-tmp-x",
        "dir/.ka-meta/x",
        "x" * 1025,
    ],
)
def test_invalid_keys_rejected(store: ObjectStore, key: str) -> None:
    with pytest.raises(InvalidKey):
        store.put_bytes(key, b"x")
    with pytest.raises(InvalidKey):
        store.get_bytes(key)
    with pytest.raises(InvalidKey):
        store.head(key)
    with pytest.raises(InvalidKey):
        store.delete(key)
    assert list(store.list()) == []


def test_unusual_but_valid_keys(store: ObjectStore) -> None:
    keys = ["ümlaut/ключ", "spaces in name", ".hidden-topic-0/0.log", "a+b=c&d", "q?x#y%20z"]
    for key in keys:
        store.put_bytes(key, key.encode())
    for key in keys:
        assert store.get_bytes(key) == key.encode()
    assert sorted(o.key for o in store.list()) == sorted(keys)


def test_metadata_validation(store: ObjectStore) -> None:
    with pytest.raises(InvalidRequest):
        store.put_bytes("k", b"x", metadata={"sha256": "0" * 64})  # reserved
    with pytest.raises(InvalidRequest):
        store.put_bytes("k", b"x", metadata={"Upper": "v"})
    with pytest.raises(InvalidRequest):
        store.put_bytes("k", b"x", metadata={"name": "non-ascii é"})
    assert not store.exists("k")


def test_open_stream_reads_in_pieces(store: ObjectStore) -> None:
    data = os.urandom(300_000)
    store.put_bytes("stream", data)
    pieces = []
    with store.open_stream("stream") as stream:
        while chunk := stream.read(65_537):
            pieces.append(chunk)
    assert b"".join(pieces) == data
