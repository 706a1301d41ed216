"""``segments dump`` of KRaft metadata files: the payload JSON kafka-dump-log's
``--cluster-metadata-decoder`` prints, applied by itself to ``__cluster_metadata`` files and
snapshots, SCRAM secrets redacted, undecodable values reported with their byte."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kafka_archive.cli import _register_groups, app
from kafka_archive_dev.writer.encode import WriteRecord, encode_batch_v2
from typer.testing import CliRunner

from tests.test_cluster_metadata import scram_record, topic_record

_register_groups()
runner = CliRunner()


def _write(path: Path, values: list[bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    batch = encode_batch_v2(0, [WriteRecord(None, v, (), 1_000 + i) for i, v in enumerate(values)])
    path.write_bytes(batch.data)
    return path


def _events(*args: str) -> list[dict[str, Any]]:
    result = runner.invoke(app, ["segments", "dump", "--json", *args])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.output.splitlines()]


def test_metadata_log_is_decoded_without_asking(tmp_path: Path) -> None:
    log = _write(tmp_path / "__cluster_metadata-0" / "00000000000000000000.log", [topic_record()])
    records = [e for e in _events("--print-data-log", str(log)) if e["kind"] == "record"]
    assert records[0]["metadata"] == {
        "type": "TOPIC_RECORD",
        "version": 0,
        "data": {"name": "orders", "topicId": "AAAAAAAAAAAAAAAAAAAAAQ"},
    }


def test_other_topics_are_not_decoded_as_metadata(tmp_path: Path) -> None:
    log = _write(tmp_path / "orders-0" / "00000000000000000000.log", [topic_record()])
    records = [e for e in _events("--print-data-log", str(log)) if e["kind"] == "record"]
    assert "metadata" not in records[0]
    forced = [e for e in _events("--cluster-metadata-decoder", str(log)) if e["kind"] == "record"]
    assert forced[0]["metadata"]["type"] == "TOPIC_RECORD"


def test_snapshot_is_dumped_with_its_end_offset_and_secrets_redacted(tmp_path: Path) -> None:
    snap = _write(
        tmp_path / "00000000000000000077-0000000002.checkpoint", [scram_record(), b"\x01\x7f\x00"]
    )
    events = _events("--cluster-metadata-decoder", str(snap))
    assert events[0]["type"] == ".checkpoint"
    assert events[0]["snapshot"] == {"end_offset": 77, "epoch": 2}
    scram, bad = (e for e in events if e["kind"] == "record")
    assert scram["metadata"]["data"] == {
        "name": "alice",
        "mechanism": 1,
        "salt": "[redacted]",
        "storedKey": "[redacted]",
        "serverKey": "[redacted]",
        "iterations": 8192,
    }
    assert bad["metadata_error"].startswith("Error at offset 1, skipping. ")
    assert "at byte 3" in bad["metadata_error"]
    text = runner.invoke(app, ["segments", "dump", "--cluster-metadata-decoder", str(snap)])
    assert text.exit_code == 0, text.output
    assert "Snapshot end offset: 77, epoch: 2" in text.output
    assert (
        '| offset: 0 timestamp: 1000 payload: {"type":"USER_SCRAM_CREDENTIAL_RECORD","version":0,'
        '"data":{"name":"alice","mechanism":1,"salt":"[redacted]"' in text.output
    )
    assert "c2FsdHk" not in text.output  # base64 of the salt


def test_an_archived_snapshot_object_is_dumped_as_a_snapshot(tmp_path: Path) -> None:
    obj = _write(
        tmp_path / "snapshots" / "00000000000000000077-0000000002-0123456789abcdef.checkpoint",
        [topic_record()],
    )
    events = _events(str(obj))
    assert events[0]["snapshot"] == {"end_offset": 77, "epoch": 2}
    records = [e for e in _events("--print-data-log", str(obj)) if e["kind"] == "record"]
    assert records[0]["metadata"]["type"] == "TOPIC_RECORD"
