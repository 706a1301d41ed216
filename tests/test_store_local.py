"""LocalStore specifics: atomic writes, sidecars, key safety on a real filesystem, URIs."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from kafka_archive.store import (
    IntegrityError,
    InvalidKey,
    LocalStore,
    StoreConfigError,
    StoreError,
    open_store,
)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def all_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_layout_and_no_temp_files_left(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    store.put_bytes("t/p-0/0.log", b"abc", metadata={"topic": "t"})
    files = all_files(tmp_path)
    assert files == ["t/p-0/.ka-meta-0.log.json", "t/p-0/0.log"]
    assert (tmp_path / "t/p-0/0.log").read_bytes() == b"abc"
    assert (tmp_path / "t/p-0/0.log").stat().st_mode & 0o777 == 0o644


def test_failed_write_leaves_nothing(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    store.put_bytes("k", b"old")
    with pytest.raises(IntegrityError):
        store.put_bytes("k", b"new", sha256=sha(b"not new"))
    assert store.get_bytes("k") == b"old"  # previous object untouched
    head = store.head("k")
    assert head is not None and head.sha256 == sha(b"old")
    assert all_files(tmp_path) == [".ka-meta-k.json", "k"]  # no temp file left behind


def test_write_that_reads_back_differently_is_not_published(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The temp file is re-read before the rename; a mismatch must not reach the key."""
    import kafka_archive.store.local.store as local_module
    from kafka_archive.store._digest import SourceDigest

    store = LocalStore(tmp_path)
    store.put_bytes("k", b"old")
    monkeypatch.setattr(
        local_module, "digest_file", lambda path: SourceDigest(size=3, sha256=bytes(32))
    )
    with pytest.raises(IntegrityError, match="reads back"):
        store.put_bytes("k", b"new")
    monkeypatch.undo()
    assert store.get_bytes("k") == b"old"
    assert all_files(tmp_path) == [".ka-meta-k.json", "k"]


def test_keys_cannot_escape_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    store = LocalStore(root)
    for key in ("../outside", "a/../../outside", "/etc/passwd-copy"):
        with pytest.raises(InvalidKey):
            store.put_bytes(key, b"x")
    assert not (tmp_path / "outside").exists()
    assert not root.exists() or all_files(root) == []


def test_leftover_temp_files_are_invisible(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    store.put_bytes("dir/real", b"1")
    # What a crash mid-write leaves behind.
    (tmp_path / "dir" / ".ka-tmp-abc123").write_bytes(b"partial")
    assert [o.key for o in store.list()] == ["dir/real"]
    assert [o.key for o in store.list("dir/")] == ["dir/real"]


def test_bit_rot_is_detected_on_read(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    data = os.urandom(10_000)
    store.put_bytes("seg", data)
    path = tmp_path / "seg"
    st = path.stat()
    # Flip one byte in place, then restore the mtime: what silent media corruption looks like.
    with open(path, "r+b") as f:
        f.seek(5000)
        original = f.read(1)
        f.seek(5000)
        f.write(bytes([original[0] ^ 0xFF]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    with pytest.raises(IntegrityError, match="does not match the recorded"):
        store.get_bytes("seg")
    with pytest.raises(IntegrityError), store.open_stream("seg") as stream:
        stream.read()
    # Ranged reads are not whole-object verified (documented): they return the bytes as stored.
    corrupted = bytearray(data)
    corrupted[5000] ^= 0xFF
    assert store.get_range("seg", 4999, 5002) == bytes(corrupted[4999:5002])


def test_keys_that_look_like_sidecar_names(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    # "a" and "a.json/x" coexist (a file and a directory with different names), and neither
    # may clash with a's bookkeeping.
    store.put_bytes("a", b"1")
    store.put_bytes("a.json/x", b"2")
    store.put_bytes("meta-a.json", b"3")
    assert [o.key for o in store.list()] == ["a", "a.json/x", "meta-a.json"]
    for key, data in (("a", b"1"), ("a.json/x", b"2"), ("meta-a.json", b"3")):
        head = store.head(key)
        assert head is not None and head.sha256 == sha(data)
    store.delete("a")
    assert all_files(tmp_path) == [
        ".ka-meta-meta-a.json.json",
        "a.json/.ka-meta-x.json",
        "a.json/x",
        "meta-a.json",
    ]


def test_file_changed_behind_the_store_has_unknown_sha(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    store.put_bytes("k", b"original")
    (tmp_path / "k").write_bytes(b"replaced by someone else")
    head = store.head("k")
    assert head is not None
    assert head.sha256 is None  # the sidecar no longer describes this file: not trusted
    assert store.get_bytes("k") == b"replaced by someone else"


def test_truncated_stream_detected(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    store.put_bytes("k", b"x" * 1000)
    with store.open_stream("k") as stream:
        os.truncate(tmp_path / "k", 0)  # the file shrinks under the open reader
        with pytest.raises(IntegrityError, match="stream ended after"):
            stream.read()


def test_put_file_from_source_rejects_missing_source(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "s")
    with pytest.raises(FileNotFoundError):
        store.put_file("k", tmp_path / "does-not-exist")
    assert not store.exists("k")


def test_object_and_directory_conflict(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    store.put_bytes("a", b"object")
    with pytest.raises(StoreError, match="cannot hold both"):
        store.put_bytes("a/b", b"nested")
    store.put_bytes("d/x", b"1")
    with pytest.raises(StoreError):
        store.put_bytes("d", b"over a directory")
    assert store.head("d") is None
    store.delete("d")  # a directory is not an object: nothing to delete, no error
    assert store.get_bytes("d/x") == b"1"


def test_open_store_uris(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    by_uri = open_store(tmp_path.as_uri())
    assert isinstance(by_uri, LocalStore)
    assert by_uri.uri == tmp_path.as_uri()
    assert by_uri.uri.startswith("file:///")
    by_path = open_store(str(tmp_path), fsync=False)
    assert isinstance(by_path, LocalStore) and by_path.root == tmp_path
    monkeypatch.chdir(tmp_path)
    relative = open_store("rel/dir")
    assert isinstance(relative, LocalStore) and relative.root == tmp_path / "rel" / "dir"
    assert open_store("file://localhost" + str(tmp_path)).uri == tmp_path.as_uri()
    with pytest.raises(StoreConfigError):
        open_store("file://otherhost/data")
    with pytest.raises(StoreConfigError):
        open_store("file:relative/path")
    with pytest.raises(StoreConfigError):
        open_store(str(tmp_path), no_such_option=1)
    with pytest.raises(StoreConfigError):
        open_store("gs://bucket/x")
    with pytest.raises(StoreConfigError, match="s3://"):
        open_store("s3a://bucket/x")


def test_uri_round_trips_special_characters(tmp_path: Path) -> None:
    root = tmp_path / "with space%and#hash"
    store = open_store(str(root))
    store.put_bytes("k", b"v")
    again = open_store(store.uri)
    assert again.get_bytes("k") == b"v"


def test_repr_names_the_root(tmp_path: Path) -> None:
    assert repr(LocalStore(tmp_path)) == f"LocalStore(uri={tmp_path.as_uri()!r})"


def test_without_fsync_still_atomic(tmp_path: Path) -> None:
    store = LocalStore(tmp_path, fsync=False)
    store.put_bytes("k", b"v")
    assert store.get_bytes("k") == b"v"
    assert all_files(tmp_path) == [".ka-meta-k.json", "k"]
