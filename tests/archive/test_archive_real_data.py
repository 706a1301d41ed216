"""Discovery and archiving over log dirs written by real Kafka brokers (read-only fixtures).

Every log dir of the fixtures that has offset checkpoints is archived into a temporary local
store; each archived object must equal its source file, transient files and directories
(cleaner ``.swap``/``.cleaned`` files, a ``-delete`` directory) must never be taken, and nothing
may raise.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from kafka_archive.archive import iter_manifests, run_archive
from kafka_archive.store import LocalStore

from segment_lib.errors import SegmentError
from segment_lib.metadata_files import read_meta_properties


def _log_dirs(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.rglob("recovery-point-offset-checkpoint"))


def _broker_id(log_dir: Path) -> int:
    try:
        meta = read_meta_properties(log_dir / "meta.properties")
    except (OSError, SegmentError):
        return 0
    return meta.node_id if meta.node_id is not None else 0


def test_real_log_dirs_archive_byte_for_byte(real_broker_data: Path, tmp_path: Path) -> None:
    log_dirs = _log_dirs(real_broker_data)
    assert len(log_dirs) >= 10
    store = LocalStore(tmp_path / "store", fsync=False)
    archived = 0
    reasons: set[str] = set()
    for i, d in enumerate(log_dirs):
        report = run_archive(
            cluster=f"real{i}", broker_id=_broker_id(d), log_dirs=[str(d)], store=store
        )
        reasons |= {s.reason.value for s in report.skipped_items}
        archived += report.segments_archived
        for m in iter_manifests(store, f"real{i}"):
            src = Path(m.source.log_dir) / m.source.partition_dir
            assert not any(t in m.source.partition_dir for t in ("-delete", "-future", "-stray"))
            for f in m.files:
                data = store.get_bytes(f.key)
                assert data == (src / f.name).read_bytes()
                assert hashlib.sha256(data).hexdigest() == f.sha256
                assert not f.name.endswith((".swap", ".cleaned", ".deleted"))
        for failure in report.failures:
            # a real segment may be corrupt; then it must be reported with file and position
            assert failure.error is not None and failure.error.path
    assert archived > 0
    assert {"active", "transient_file", "transient_dir", "cleaning_in_progress"} <= reasons


def test_swap_files_in_real_data_defer_the_partition(real_broker_data: Path) -> None:
    from kafka_archive.archive import discover_log_dir

    swaps = sorted(real_broker_data.rglob("*.log.swap"))
    if not swaps:
        pytest.skip("no .swap file in the fixtures")
    log_dir = swaps[0].parent.parent
    d = discover_log_dir("real", _broker_id(log_dir), log_dir)
    partition = swaps[0].parent.name
    assert not [c for c in d.candidates if c.partition_dir == partition]
    names = {Path(s.path).name for s in d.skipped if s.reason == "transient_file"}
    assert swaps[0].name in names
