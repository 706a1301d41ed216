"""Whole-object integrity of archived segments during the catalog build.

An archived ``.log`` object with one flipped byte - in a batch header field no batch CRC
covers (the base offset), or inside a batch's records - must be reported as a typed
:class:`ObjectIntegrityError` naming the object key and the byte, with nothing of that segment
cataloged (and the segment built by the next run once the object is repaired). The same holds
with ``verify=sha256``; every setting catalogs an intact archive identically. The
single-byte location from a CRC-32C difference is checked against flips made on purpose.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import random
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import crc32c
import pytest
from kafka_archive.catalog.build import build_catalog, refs_from_manifests
from kafka_archive.catalog.db import Catalog, open_catalog
from kafka_archive.catalog.extract import extract_object
from kafka_archive.catalog.integrity import (
    ObjectChecksum,
    ObjectIntegrityError,
    crc32c_update,
    locate_single_byte_error,
)
from kafka_archive.catalog.refs import SegmentRef
from kafka_archive.store import ObjectStore, open_store
from sqlalchemy import text
from support.catalog_data import archived_history, dump_catalog

from segment_lib.errors import CrcMismatchError
from segment_lib.log_file import iter_batches
from segment_lib.records import BatchHeader

CLUSTER = "c1"


@pytest.fixture(scope="module")
def archive_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("integrity")
    _hist, _store, archived = archived_history(root, cluster=CLUSTER, appends=60)
    assert archived > 5
    return root / "store"


@dataclass
class Damaged:
    store: ObjectStore
    root: Path
    victim: SegmentRef
    batches: list[BatchHeader]
    original: bytes

    def flip(self, position: int, xor: int = 0x01) -> None:
        """Flip bits of one byte of the victim object where the store keeps it."""
        with open(self.root / self.victim.object_key, "r+b") as f:
            f.seek(position)
            byte = f.read(1)[0]
            f.seek(position)
            f.write(bytes([byte ^ xor]))

    def repair(self) -> None:
        (self.root / self.victim.object_key).write_bytes(self.original)


@pytest.fixture
def damaged(archive_dir: Path, tmp_path: Path) -> Damaged:
    """A private copy of the archive and one victim segment of ``orders`` (>= 4 batches)."""
    root = tmp_path / "store"
    shutil.copytree(archive_dir, root)
    store = open_store(str(root))
    for ref in refs_from_manifests(store, CLUSTER):
        if ref.topic != "orders":
            continue
        data = (root / ref.object_key).read_bytes()
        batches = list(iter_batches(data, verify_crc=True))
        if len(batches) >= 4:
            return Damaged(store, root, ref, batches, data)
    raise AssertionError("no orders segment with 4 batches")


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[Catalog]:
    cat = open_catalog(tmp_path / "catalog.db", create=True)
    yield cat
    cat.close()


def _rows_of(cat: Catalog, manifest_key: str) -> int:
    with cat.engine.connect() as conn:
        return int(
            conn.execute(
                text(
                    "SELECT count(*) FROM segments s LEFT JOIN time_index t "
                    "ON t.segment_id = s.id WHERE s.manifest_key = :k"
                ),
                {"k": manifest_key},
            ).scalar_one()
        )


def _the_failure(report: Any, victim: SegmentRef) -> dict[str, Any]:
    assert len(report.failed) == 1, report.failed
    (failure,) = report.failed
    assert failure["manifest_key"] == victim.manifest_key
    assert failure["error"] == "ObjectIntegrityError"
    assert failure["key"] == victim.object_key
    assert victim.object_key in failure["detail"]
    return dict(failure)


@pytest.mark.parametrize("verify", ["crc32c", "crc32c-only", "sha256"])
def test_flipped_base_offset_is_located_and_nothing_is_cataloged(
    damaged: Damaged, catalog: Catalog, verify: str
) -> None:
    third = damaged.batches[2]
    position = third.position + 7  # low byte of the base offset: covered by no batch CRC
    damaged.flip(position)
    report = build_catalog(catalog, damaged.store.uri, cluster=CLUSTER, verify=verify)
    failure = _the_failure(report, damaged.victim)
    assert failure["position"] == position
    assert failure["algorithm"] == ("sha256" if verify == "sha256" else "crc32c")
    assert f"batch at byte {third.position}" in failure["detail"]
    assert report.segments_added == report.manifests - 1 and report.corrupt == 0
    assert _rows_of(catalog, damaged.victim.manifest_key) == 0
    # repaired (restored from another copy): the next run catalogs it
    damaged.repair()
    again = build_catalog(catalog, damaged.store.uri, cluster=CLUSTER, verify=verify)
    assert again.failed == [] and again.segments_added == 1
    assert _rows_of(catalog, damaged.victim.manifest_key) > 0


@pytest.mark.parametrize("verify", ["crc32c", "sha256"])
def test_flipped_record_byte_is_located_at_its_batch(
    damaged: Damaged, catalog: Catalog, verify: str
) -> None:
    third = damaged.batches[2]
    damaged.flip(third.position + third.size - 5, 0x40)  # inside the CRC-covered records
    report = build_catalog(catalog, damaged.store.uri, cluster=CLUSTER, verify=verify)
    failure = _the_failure(report, damaged.victim)
    assert failure["position"] == third.position
    assert failure["cause"]["error"] == "CrcMismatchError"
    assert _rows_of(catalog, damaged.victim.manifest_key) == 0


def test_extract_object_raises_a_typed_error(damaged: Damaged) -> None:
    v = damaged.victim
    position = damaged.batches[1].position + 13  # partition leader epoch: not CRC-covered
    damaged.flip(position, 0x10)
    with pytest.raises(ObjectIntegrityError) as err:
        extract_object(damaged.store, v.object_key, topic=v.topic, size=v.size, crc32c=v.crc32c)
    exc = err.value
    assert (exc.key, exc.position, exc.size) == (v.object_key, position, v.size)
    assert exc.expected == v.crc32c and exc.computed != v.crc32c
    # without any whole-object checksum only the batch checks remain: the flip passes them
    ex = extract_object(damaged.store, v.object_key, topic=v.topic, size=v.size)
    assert ex.stats.batch_count == len(damaged.batches)


class FlakyStore:
    """Returns one flipped byte on the first read of ``key`` only (corruption in transit)."""

    def __init__(self, inner: ObjectStore, key: str, position: int) -> None:
        self.inner, self.key, self.position = inner, key, position
        self.flipped = False

    def get_range(self, key: str, start: int, end_exclusive: int) -> bytes:
        data = self.inner.get_range(key, start, end_exclusive)
        if key == self.key and not self.flipped and start <= self.position < end_exclusive:
            self.flipped = True
            b = bytearray(data)
            b[self.position - start] ^= 0x01
            return bytes(b)
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_read_that_differs_once_is_reported_as_such(damaged: Damaged) -> None:
    v = damaged.victim
    flaky = FlakyStore(damaged.store, v.object_key, damaged.batches[3].position + 2)
    with pytest.raises(ObjectIntegrityError, match="different bytes on two reads") as err:
        extract_object(flaky, v.object_key, topic=v.topic, size=v.size, crc32c=v.crc32c)
    assert err.value.position is None
    # a second extraction reads the intact bytes
    ex = extract_object(flaky, v.object_key, topic=v.topic, size=v.size, crc32c=v.crc32c)
    assert ex.stats.batch_count == len(damaged.batches)


def test_every_setting_catalogs_the_same(archive_dir: Path, tmp_path: Path) -> None:
    dumps = []
    for verify in ("crc32c", "crc32c-only", "sha256"):
        with open_catalog(tmp_path / f"{verify}.db", create=True) as cat:
            report = build_catalog(cat, archive_dir.as_uri(), cluster=CLUSTER, verify=verify)
            assert report.failed == [] and report.corrupt == 0 and report.verify == verify
            dumps.append(dump_catalog(cat))
    assert dumps[0] == dumps[1] == dumps[2]
    assert dumps[0]["segments"]


def test_verify_setting_from_the_environment(
    archive_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KAFKA_ARCHIVE_CATALOG_VERIFY", "sha256")
    with open_catalog(tmp_path / "env.db", create=True) as cat:
        assert build_catalog(cat, archive_dir.as_uri(), cluster=CLUSTER).verify == "sha256"
        with pytest.raises(ValueError, match="verify"):
            build_catalog(cat, archive_dir.as_uri(), verify="md5")


@pytest.mark.parametrize("cut", [False, True])
def test_batch_crc_error_in_bytes_that_match_the_manifest_is_corrupt(
    damaged: Damaged, catalog: Catalog, cut: bool
) -> None:
    """Bytes equal to what the manifest recorded but failing a batch CRC were archived
    corrupt: with the batch CRCs checked (``crc32c``, ``sha256``) the segment is
    recorded ``corrupt``, with the batch's position, and not retried. (The archiver never
    archives such a segment: it checks every batch before upload.) ``cut``: the bad batch is
    split by a ranged read's end, so it fails while being completed from the next chunk; the
    whole-object checksum must still see every byte once."""
    third = damaged.batches[2]
    damaged.flip(third.position + third.size - 5, 0x40)
    data = (damaged.root / damaged.victim.object_key).read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    ref = dataclasses.replace(
        damaged.victim,
        crc32c=f"{crc32c.crc32c(data):08x}",
        sha256=sha,
        # as an archiver would have keyed the manifest of these bytes (identity check)
        manifest_key=f"{damaged.victim.manifest_key.rsplit('-', 1)[0]}-{sha[:16]}.json",
    )
    chunk = third.position + 40 if cut else 8 << 20
    with pytest.raises(CrcMismatchError) as err:
        extract_object(
            damaged.store, ref.object_key, topic=ref.topic, crc32c=ref.crc32c,
            verify="crc32c", chunk_bytes=chunk,
        )  # fmt: skip
    assert err.value.position == third.position
    for verify in ("crc32c", "sha256"):
        with open_catalog(damaged.root.parent / f"{verify}.db", create=True) as cat:
            report = build_catalog(
                cat, damaged.store.uri, refs=[ref], verify=verify, chunk_bytes=chunk
            )
            assert report.failed == [] and report.corrupt == 1
            with cat.engine.connect() as conn:
                status, error = conn.execute(text("SELECT status, error FROM segments")).one()
            assert status == "corrupt" and f'"position": {third.position}' in error


# ---------------------------------------------------------------------------------------------
# the arithmetic


def test_checksums_fed_in_pieces_equal_the_whole() -> None:
    rng = random.Random(3)
    data = rng.randbytes(200_000)
    for algorithm, whole in (
        ("crc32c", f"{crc32c.crc32c(data):08x}"),
        ("sha256", hashlib.sha256(data).hexdigest()),
    ):
        ck = ObjectChecksum(algorithm)
        pos = 0
        while pos < len(data):
            n = rng.randint(0, 5000)
            ck.update(memoryview(data)[pos : pos + n])
            pos += n
        assert ck.hexdigest() == whole
    assert crc32c_update(data[10:], crc32c_update(data[:10], 0)) == crc32c.crc32c(data)
    with pytest.raises(ValueError):
        ObjectChecksum("md5")


@pytest.mark.parametrize("size", [1, 100, 70_000, 3_000_000])
def test_single_byte_differences_are_located(size: int) -> None:
    rng = random.Random(size)
    data = bytearray(os.urandom(size))
    good = crc32c.crc32c(bytes(data))
    for _ in range(6):
        p = rng.randrange(size)
        v = rng.randrange(1, 256)
        bad = bytearray(data)
        bad[p] ^= v
        syndrome = crc32c.crc32c(bytes(bad)) ^ good
        # candidates: a few header-like ranges, one of them holding p
        candidates = [(q, q + 21) for q in range(0, size, max(1, size // 50))]
        candidates.append((max(0, p - 3), p + 4))
        assert locate_single_byte_error(syndrome, size, candidates) == [(p, v)]
        # p outside every candidate range: never reported there
        outside = [(a, b) for a, b in candidates if not a <= p < b]
        assert all(pos != p for pos, _ in locate_single_byte_error(syndrome, size, outside))
    assert locate_single_byte_error(0, size, [(0, size)]) == []
