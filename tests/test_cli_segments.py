"""``kafka-archive segments dump|lookup``: the --json contract, text output and exit codes."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka_archive.cli import _register_groups, app
from typer.testing import CliRunner

_register_groups()
runner = CliRunner()

BATCH_KEYS = {
    "kind": str,
    "position": int,
    "base_offset": int,
    "last_offset": int,
    "magic": int,
    "codec": str,
    "timestamp_type": str,
    "max_timestamp": int,
    "record_count": int,
    "crc_valid": bool,
    "transactional": bool,
    "control": bool,
    "producer_id": int,
}
RECORD_KEYS = {"kind": str, "offset": int, "timestamp": int, "headers": list}


def _lines(output: str) -> list[dict]:
    return [json.loads(line) for line in output.splitlines() if line.strip()]


@pytest.fixture()
def partition_dir(tmp_path: Path) -> Path:
    """Two batches written by kafka-python (an independent encoder) in a partition dir."""
    d = tmp_path / "orders-0"
    d.mkdir()
    data = b""
    for base, codec in ((0, 0), (3, 3)):
        b = DefaultRecordBatchBuilder(2, codec, False, -1, -1, -1, 1 << 20)
        for i in range(3):
            b.append(
                i,
                1_700_000_000_000 + 1000 * (base + i),
                b"key%d" % (base + i),
                b"\xff\xfe" if i == 2 else b"value%d" % (base + i) * 40,
                [("trace", b"t1")],
            )
        raw = bytearray(b.build())
        raw[0:8] = base.to_bytes(8, "big")
        data += bytes(raw)
    (d / "00000000000000000000.log").write_bytes(data)
    return d


def test_dump_json_follows_the_contract(partition_dir: Path) -> None:
    log = partition_dir / "00000000000000000000.log"
    result = runner.invoke(app, ["segments", "dump", "--print-data-log", "--json", str(log)])
    assert result.exit_code == 0, result.output
    events = _lines(result.output)
    batches = [e for e in events if e["kind"] == "batch"]
    records = [e for e in events if e["kind"] == "record"]
    assert [b["codec"] for b in batches] == ["none", "lz4"]
    for b in batches:
        for key, typ in BATCH_KEYS.items():
            assert isinstance(b[key], typ), key
        assert b["crc_valid"] is True and b["timestamp_type"] == "CreateTime"
    assert [r["offset"] for r in records] == list(range(6))
    for r in records:
        for key, typ in RECORD_KEYS.items():
            assert isinstance(r[key], typ), key
    assert base64.b64decode(records[4]["key"]) == b"key4"
    assert base64.b64decode(records[4]["value"]) == b"value4" * 40
    assert base64.b64decode(records[5]["value"]) == b"\xff\xfe"
    assert records[0]["headers"] == [["trace", base64.b64encode(b"t1").decode()]]


def test_dump_text_shows_utf8_and_escapes_binary(partition_dir: Path) -> None:
    log = partition_dir / "00000000000000000000.log"
    result = runner.invoke(app, ["segments", "dump", "--print-data-log", str(log)])
    assert result.exit_code == 0
    assert "payload: " + "value0" * 40 in result.output
    assert "payload: \\xff\\xfe" in result.output
    assert "compresscodec: lz4" in result.output


def test_dump_reports_bad_crc_and_exits_nonzero(partition_dir: Path) -> None:
    log = partition_dir / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[70] ^= 0x55
    log.write_bytes(data)
    result = runner.invoke(app, ["segments", "dump", "--json", str(log)])
    assert result.exit_code == 1
    assert [b["crc_valid"] for b in _lines(result.output) if b["kind"] == "batch"] == [False, True]


def test_dump_corrupt_structure_names_file_and_position(partition_dir: Path) -> None:
    log = partition_dir / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[16] = 9  # unknown magic in the first batch
    log.write_bytes(data)
    result = runner.invoke(app, ["segments", "dump", "--json", str(log)])
    assert result.exit_code == 1
    error = _lines(result.output)[-1]
    assert error["kind"] == "error" and error["position"] == 16 and error["path"] == str(log)


def test_lookup_json_by_time_and_offset(partition_dir: Path) -> None:
    result = runner.invoke(
        app, ["segments", "lookup", str(partition_dir), "--timestamp", "1700000003500", "--json"]
    )
    assert result.exit_code == 0, result.output
    answer = _lines(result.output)[0]
    assert (answer["offset"], answer["timestamp"]) == (4, 1_700_000_004_000)
    assert answer["segment"] == "00000000000000000000.log" and answer["position"] > 0
    result = runner.invoke(
        app,
        ["segments", "lookup", str(partition_dir), "--timestamp", "2030-01-01T00:00:00", "--json"],
    )
    assert _lines(result.output)[0]["offset"] == -1
    result = runner.invoke(app, ["segments", "lookup", str(partition_dir), "-o", "1", "--json"])
    answer = _lines(result.output)[0]
    assert (answer["offset"], answer["timestamp"], answer["position"]) == (1, 1_700_000_001_000, 0)


def test_lookup_rejects_bad_time_with_a_hint(partition_dir: Path) -> None:
    result = runner.invoke(app, ["segments", "lookup", str(partition_dir), "-t", "yesterday"])
    assert result.exit_code == 1
    assert "ISO-8601" in result.output


def test_offsets_decoder_and_index_checks_on_real_broker_files(real_broker_data: Path) -> None:
    part = real_broker_data / "NikhilDighe9975__kafka_setup/kafka-logs/__consumer_offsets-12"
    result = runner.invoke(
        app,
        ["segments", "dump", "--offsets-decoder", "--json", str(part / "00000000000000000000.log")],
    )
    assert result.exit_code == 0, result.output
    decoded = [e["offsets"] for e in _lines(result.output) if e["kind"] == "record"]
    assert decoded and {d["type"] for d in decoded} <= {
        "OffsetCommit",
        "GroupMetadata",
        "Tombstone",
        "UnknownRecord",
    }
    assert any(d["type"] == "OffsetCommit" and d["offset"] >= 0 for d in decoded)
    result = runner.invoke(
        app,
        [
            "segments",
            "dump",
            "--verify-index-only",
            "--json",
            str(part / "00000000000000000000.index"),
            str(part / "00000000000000000000.timeindex"),
        ],
    )
    assert result.exit_code == 0, result.output
    summaries = [e for e in _lines(result.output) if e["kind"] == "summary"]
    assert len(summaries) == 2 and all(s["problems"] == 0 for s in summaries)


def test_index_check_finds_an_entry_pointing_inside_a_batch(partition_dir: Path) -> None:
    from segment_lib.offset_index import format_offset_index

    index = partition_dir / "00000000000000000000.index"
    index.write_bytes(format_offset_index(0, [(4, 30)]))  # 30 is inside the first batch
    result = runner.invoke(app, ["segments", "dump", "--verify-index-only", "--json", str(index)])
    assert result.exit_code == 1
    problems = [e for e in _lines(result.output) if e["kind"] == "index_problem"]
    assert problems and problems[0]["offset"] == 4


def test_console_script_help_teaches(tmp_path: Path) -> None:
    exe = shutil.which("kafka-archive") or str(Path(sys.executable).parent / "kafka-archive")
    out = subprocess.run(
        [exe, "segments", "dump", "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert "--print-data-log" in out and "Examples" in out


def test_time_index_check_finds_a_timestamp_the_log_does_not_have(partition_dir: Path) -> None:
    from segment_lib.time_index import format_time_index

    timeindex = partition_dir / "00000000000000000000.timeindex"
    # batch 1 (offsets 3-5) has max timestamp 1_700_000_005_000; the entry claims another one
    timeindex.write_bytes(format_time_index(0, [(1_700_000_002_000, 2), (1_700_000_009_000, 5)]))
    result = runner.invoke(
        app, ["segments", "dump", "--verify-index-only", "--json", str(timeindex)]
    )
    assert result.exit_code == 1
    problems = [e for e in _lines(result.output) if e["kind"] == "index_problem"]
    assert [(p["offset"], p["timestamp"]) for p in problems] == [(5, 1_700_000_009_000)]
    events = _lines(result.output)
    summary = [e for e in events if e["kind"] == "summary"][-1]
    assert summary["problems"] == 1
    # the last line repeats what was wrong where (and decides the exit status)
    assert events[-1]["kind"] == "error" and events[-1]["path"] == str(timeindex)
    assert [p["problem"] for p in events[-1]["problems"]] == ["index_mismatch"]


def test_dump_shows_sequences_and_delete_horizon_like_dump_log_segments(tmp_path: Path) -> None:
    """lastSequence, per-record sequence (wrapping past int32 max, as Kafka's
    incrementSequence does) and deleteHorizonMs (attribute bit 6: the first-timestamp field holds
    the cleaner's delete horizon), as DumpLogSegments prints them. Found comparing against
    Kafka 4.4's DumpLogSegments on a real cluster's segments (tests/real_kafka)."""
    from crc32c import crc32c

    d = tmp_path / "compacted-0"
    d.mkdir()
    top = (1 << 31) - 1
    b = DefaultRecordBatchBuilder(2, 0, False, 7, 1, top - 1, 1 << 20)
    for i in range(3):
        b.append(i, 1_700_000_000_000 + i, b"k%d" % i, None if i == 1 else b"v", [])
    raw = bytearray(b.build())
    attributes = int.from_bytes(raw[21:23], "big") | 0x40
    raw[21:23] = attributes.to_bytes(2, "big")
    raw[27:35] = (1_800_000_000_000).to_bytes(8, "big")  # first timestamp = the horizon
    raw[17:21] = crc32c(bytes(raw[21:])).to_bytes(4, "big")
    plain = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    plain.append(0, 1_700_000_000_000, b"k", b"v", [])
    raw2 = bytearray(plain.build())
    raw2[0:8] = (3).to_bytes(8, "big")
    log = d / "00000000000000000000.log"
    log.write_bytes(bytes(raw) + bytes(raw2))
    result = runner.invoke(app, ["segments", "dump", "--print-data-log", "--json", str(log)])
    assert result.exit_code == 0, result.output
    events = _lines(result.output)
    batches = [e for e in events if e["kind"] == "batch"]
    assert [(x["base_sequence"], x["last_sequence"]) for x in batches] == [(top - 1, 0), (-1, -1)]
    assert [x["delete_horizon_ms"] for x in batches] == [1_800_000_000_000, None]
    assert [r["sequence"] for r in events if r["kind"] == "record"] == [top - 1, top, 0, -1]
    text = runner.invoke(app, ["segments", "dump", "--print-data-log", str(log)]).output
    assert f"baseSequence: {top - 1} lastSequence: 0 " in text
    assert "deleteHorizonMs: OptionalLong[1800000000000] " in text
    assert "deleteHorizonMs: OptionalLong.empty " in text
    assert "| offset: 2 timestamp: " in text and " sequence: 0 " in text


def test_dump_reads_objects_downloaded_from_the_archive(
    partition_dir: Path, tmp_path: Path
) -> None:
    """An archived object is named ``<baseOffset:020d>-<sha16><suffix>`` (archive/layout.py):
    dump takes the base offset from its leading digits (the name was refused before)."""
    import struct

    from kafka_archive.archive.layout import object_key

    obj_dir = tmp_path / "store" / "prod" / "orders" / "0"
    obj_dir.mkdir(parents=True)
    log_bytes = (partition_dir / "00000000000000000000.log").read_bytes()
    index_bytes = struct.pack(">ii", 2, 100)
    sha = "0123456789abcdef" * 4
    log_name = object_key("prod", "orders", 0, 0, sha, ".log").rsplit("/", 1)[1]
    assert log_name == "00000000000000000000-0123456789abcdef.log"
    (obj_dir / log_name).write_bytes(log_bytes)
    index = obj_dir / "00000000000000000010-fedcba9876543210.index"
    index.write_bytes(index_bytes)
    result = runner.invoke(
        app, ["segments", "dump", "--print-data-log", "--json", str(obj_dir / log_name), str(index)]
    )
    assert result.exit_code == 0, result.output
    events = _lines(result.output)
    assert [e["offset"] for e in events if e["kind"] == "record"] == list(range(6))
    assert [e for e in events if e["kind"] == "index_entry"] == [
        {"kind": "index_entry", "offset": 12, "position": 100}
    ]


def _summary(events: list[dict]) -> dict:
    return next(e for e in events if e["kind"] == "summary" and e.get("type") == ".log")


def test_dump_tells_a_corrupt_length_mid_file_from_a_torn_tail(partition_dir: Path) -> None:
    """A corrupted length field in the first batch used to read as "torn tail (expected)",
    hiding the second batch, with exit 0."""
    log = partition_dir / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[8:12] = (len(data) * 4).to_bytes(4, "big")  # first batch now "runs past the end"
    log.write_bytes(bytes(data))
    result = runner.invoke(app, ["segments", "dump", "--json", str(log)])
    assert result.exit_code == 1, result.output
    events = _lines(result.output)
    assert not [e for e in events if e["kind"] == "torn_tail"]
    corrupt = [e for e in events if e["kind"] == "corrupt_batch"]
    assert corrupt and corrupt[0]["position"] == 8 and corrupt[0]["path"] == str(log)
    assert corrupt[0]["error"] == "CorruptBatchError"
    # the dump goes on at the next valid batch: nothing after the bad length is hidden
    second = int.from_bytes(log.read_bytes()[8:12], "big")  # (the corrupted value)
    resync = [e for e in events if e["kind"] == "resync"]
    assert len(resync) == 1 and resync[0]["from"] == 8 and resync[0]["position"] < second
    assert [b["base_offset"] for b in events if b["kind"] == "batch"] == [3]
    summary = _summary(events)
    assert summary["batches"] == 1 and summary["ok"] is False
    assert [(p["problem"], p["position"]) for p in summary["problems"]] == [("corrupt", 8)]
    assert events[-1]["kind"] == "error" and events[-1]["position"] == 8
    text = runner.invoke(app, ["segments", "dump", str(log)])
    assert text.exit_code == 1 and "Traceback" not in text.output
    assert "CORRUPT" in text.output and "corrupt at byte 8" in text.output


def test_dump_torn_tail_past_an_index_entry_is_corruption(partition_dir: Path) -> None:
    """The .index points at the second batch, so a copy ending inside the first one was cut
    short: the file is damaged, not an active segment caught mid-append."""
    from segment_lib.offset_index import format_offset_index

    log = partition_dir / "00000000000000000000.log"
    whole = log.read_bytes()
    second = int.from_bytes(whole[8:12], "big") + 12
    (partition_dir / "00000000000000000000.index").write_bytes(
        format_offset_index(0, [(3, second)])
    )
    log.write_bytes(whole[: second - 10])
    events = _lines(runner.invoke(app, ["segments", "dump", "--json", str(log)]).output)
    assert [(p["problem"], p["position"]) for p in _summary(events)["problems"]] == [("corrupt", 0)]


def test_dump_truncated_copy_exits_nonzero_with_a_summary(partition_dir: Path) -> None:
    log = partition_dir / "00000000000000000000.log"
    whole = log.read_bytes()
    first_end = int.from_bytes(whole[8:12], "big") + 12
    log.write_bytes(whole[:-7])
    result = runner.invoke(app, ["segments", "dump", "--json", str(log)])
    assert result.exit_code == 1, result.output
    events = _lines(result.output)
    summary = _summary(events)
    assert summary["batches"] == 1 and summary["valid_bytes"] == first_end
    assert summary["problems"] == [
        {
            "problem": "torn_tail",
            "position": first_end,
            "detail": f"the last {len(whole) - 7 - first_end} bytes are an incomplete batch",
        }
    ]
    assert events[-1]["kind"] == "error" and events[-1]["position"] == first_end
    text = runner.invoke(app, ["segments", "dump", str(log)])
    assert text.exit_code == 1
    assert f"1 batches read ({first_end} of {len(whole) - 7} bytes valid)" in text.output
    assert f"torn tail at byte {first_end}" in text.output
    # the intact file: exit 0 and a summary saying so
    log.write_bytes(whole)
    ok = runner.invoke(app, ["segments", "dump", str(log)])
    assert ok.exit_code == 0 and "2 batches read" in ok.output and ": OK" in ok.output


def test_dump_reads_a_renamed_segment_by_its_bytes(partition_dir: Path, tmp_path: Path) -> None:
    log_bytes = (partition_dir / "00000000000000000000.log").read_bytes()
    for name in ("0-0123456789abcdef.log", "48.log", "backup.bin", "segment"):
        odd = tmp_path / name
        odd.write_bytes(log_bytes)
        result = runner.invoke(app, ["segments", "dump", "--print-data-log", "--json", str(odd)])
        assert result.exit_code == 0, (name, result.output)
        events = _lines(result.output)
        assert events[0] == {
            "kind": "file",
            "path": str(odd),
            "type": ".log",
            "detected_by": "content",
        }
        assert [e["offset"] for e in events if e["kind"] == "record"] == list(range(6))


def test_dump_refuses_bytes_that_are_not_a_log(tmp_path: Path) -> None:
    text_bytes = b"this is a text file, not a Kafka segment\n" * 3
    for name in ("00000000000000000000.log", "renamed.log", "notes.txt"):
        path = tmp_path / name
        path.write_bytes(text_bytes)
        result = runner.invoke(app, ["segments", "dump", "--json", str(path)])
        assert result.exit_code == 1, (name, result.output)
        events = _lines(result.output)
        bad = [e for e in events if e["kind"] == "file_error"]
        assert bad and bad[0]["problem"] == "NotALogError" and bad[0]["file"] == str(path)
        assert "not a Kafka log segment" in bad[0]["detail"]
        assert events[-1]["kind"] == "error" and events[-1]["path"] == str(path)
        text = runner.invoke(app, ["segments", "dump", str(path)])
        assert text.exit_code == 1 and "Traceback" not in text.output
        assert "not a Kafka log segment" in text.output and "hint:" in text.output
    # an empty file under a name that says nothing: refused too (nothing to recognise)
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    assert runner.invoke(app, ["segments", "dump", str(empty)]).exit_code == 1


def test_dump_goes_on_after_a_bad_file_and_reports_each(partition_dir: Path) -> None:
    good = partition_dir / "00000000000000000000.log"
    bad = partition_dir / "00000000000000000099.log"
    bad.write_bytes(good.read_bytes()[:-3])
    result = runner.invoke(app, ["segments", "dump", "--json", str(bad), str(good)])
    assert result.exit_code == 1
    events = _lines(result.output)
    summaries = [e for e in events if e["kind"] == "summary"]
    assert [(s["file"], s["ok"]) for s in summaries] == [(str(bad), False), (str(good), True)]
    assert [p["file"] for p in events[-1]["problems"]] == [str(bad)]


def test_lookup_refuses_an_offset_that_is_not_one(partition_dir: Path) -> None:
    for bad in ("-5", str(1 << 63)):
        result = runner.invoke(app, ["segments", "lookup", str(partition_dir), "--offset", bad])
        assert result.exit_code == 1, (bad, result.output)
        assert "is not a Kafka offset" in result.output and "hint:" in result.output


def test_dump_reports_each_corruption_and_reads_on_between_them(partition_dir: Path) -> None:
    log = partition_dir / "00000000000000000000.log"
    whole = log.read_bytes()
    first_size = int.from_bytes(whole[8:12], "big") + 12
    third = bytearray(whole[:first_size])
    third[0:8] = (6).to_bytes(8, "big")  # the first batch again, as offsets 6-8
    data = bytearray(whole + bytes(third) + bytes(third[:20]))
    data[16] = 9  # unknown magic in the first batch
    data[first_size + 8 : first_size + 12] = (1 << 30).to_bytes(4, "big")  # 2nd batch's length
    log.write_bytes(bytes(data))
    result = runner.invoke(app, ["segments", "dump", "--json", str(log)])
    assert result.exit_code == 1
    events = _lines(result.output)
    assert [b["base_offset"] for b in events if b["kind"] == "batch"] == [6]
    summary = _summary(events)
    # bytes 16 .. the third batch are unreadable (the second batch's length is broken too):
    # the dump says where it read on, then finds the torn copy at the end
    assert [(p["problem"], p["position"], p.get("resumed_at")) for p in summary["problems"]] == [
        ("corrupt", 16, len(whole)),
        ("torn_tail", len(whole) + first_size, None),
    ]
    assert [p["position"] for p in events[-1]["problems"]] == [16, len(whole) + first_size]
    text = runner.invoke(app, ["segments", "dump", str(log)]).output
    assert f"corrupt at byte 16 (read on at byte {len(whole)})" in text


def test_dump_unreadable_file_is_a_clear_error(
    partition_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import segment_lib.dump as dump_module

    log = partition_dir / "00000000000000000000.log"

    def denied(path: object, **_: object) -> None:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(dump_module, "open_log", denied)
    for extra in ([], ["--json"]):
        result = runner.invoke(app, ["segments", "dump", *extra, str(log)])
        assert result.exit_code == 1 and not isinstance(result.exception, PermissionError)
        assert "Permission denied" in result.output and str(log) in result.output
    events = _lines(runner.invoke(app, ["segments", "dump", "--json", str(log)]).output)
    assert [e["kind"] for e in events] == ["file_error", "error"]
    assert events[0]["problem"] == "PermissionError" and events[0]["position"] is None
