"""The CLI's last-resort handler: no Python traceback ever reaches the user.

An unexpected exception is one ``internal error:`` line, a redacted log file with the
traceback, a hint to report it, and exit code 70; a typed platform error that a command let
escape is a plain ``error:``/``hint:`` and exit 1; usage errors keep exit 2.
"""

from __future__ import annotations

import json
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka_archive.cli import (
    EXIT_CLOSED_PIPE,
    EXIT_INTERNAL,
    _register_groups,
    app,
    catalog_options,
    crash,
)
from kafka_archive.extras import MissingExtra
from kafka_archive.replay.execution.kafka_errors import TxnAbort
from kafka_archive.settings import SettingsError
from kafka_archive.store.errors import StoreUnavailable
from typer.testing import CliRunner

SECRET = "Sup3rS3cretPassw0rd"


@pytest.fixture
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    d = tmp_path / "state"
    monkeypatch.setenv(crash.ERROR_LOG_DIR_ENV, str(d))
    yield d


@pytest.fixture(scope="module", autouse=True)
def _groups() -> None:
    if not app.registered_groups:
        _register_groups()


def _boom(*_args: object, **_kwargs: object) -> None:
    raise KeyError(f"postgresql://admin:{SECRET}@db.example:5432/catalog")


def _invoke(args: list[str]) -> Any:
    return CliRunner().invoke(app, args)


def test_unexpected_exception_is_one_line_and_a_log(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(catalog_options, "open_catalog", _boom)
    result = _invoke(["catalog", "topics", "--cluster", "c", "--db", str(tmp_path / "x.db")])
    out = result.stdout + result.stderr
    assert result.exit_code == EXIT_INTERNAL == 70, out
    assert "Traceback" not in out
    assert "internal error: KeyError:" in out
    assert SECRET not in out and "admin:***@db.example" in out
    logs = list(state_dir.glob("internal-error-*.log"))
    assert len(logs) == 1 and str(logs[0]) in out
    body = logs[0].read_text()
    assert "Traceback (most recent call last)" in body and "_boom" in body
    assert SECRET not in body
    assert stat.S_IMODE(logs[0].stat().st_mode) == 0o600
    assert "report" in out


def test_unexpected_exception_with_json(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(catalog_options, "open_catalog", _boom)
    result = _invoke(
        ["catalog", "topics", "--cluster", "c", "--db", str(tmp_path / "x.db"), "--json"]
    )
    assert result.exit_code == 70
    obj = json.loads(result.stdout.strip().splitlines()[-1])
    assert obj["kind"] == "error" and obj["error"] == "internal"
    assert obj["message"].startswith("internal error: KeyError")
    assert Path(obj["traceback_log"]).parent == state_dir
    assert SECRET not in result.stdout + result.stderr


def test_unwritable_state_dir_still_no_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv(crash.ERROR_LOG_DIR_ENV, str(blocker / "sub"))
    monkeypatch.setattr(catalog_options, "open_catalog", _boom)
    result = _invoke(["catalog", "topics", "--cluster", "c", "--db", "x.db"])
    out = result.stdout + result.stderr
    assert result.exit_code == 70 and "Traceback" not in out
    assert "not written" in out


def test_typed_error_escaping_a_command_is_a_plain_error(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unavailable(*_a: object, **_k: object) -> None:
        raise StoreUnavailable("connection refused", uri="s3://bucket/archive")

    monkeypatch.setattr(catalog_options, "open_catalog", unavailable)
    result = _invoke(["catalog", "topics", "--cluster", "c", "--db", "x.db"])
    out = result.stdout + result.stderr
    assert result.exit_code == 1, out
    assert "error: s3://bucket/archive: connection refused" in out
    assert "hint: Check that the endpoint is reachable" in out
    assert "Traceback" not in out and "internal error" not in out
    assert not state_dir.exists()


@pytest.mark.parametrize(
    ("error", "code", "hint"),
    [
        (lambda: SettingsError("retention is not a list", "fix the setting"), 2, "fix the setting"),
        (lambda: MissingExtra("catalog build", "spark", "pyspark"), 1, None),
    ],
)
def test_any_platform_error_escaping_a_command_is_a_plain_error_with_its_exit_code(
    state_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    error: Callable[[], Exception],
    code: int,
    hint: str | None,
) -> None:
    """Every KafkaArchiveError, not only the four families the handler used to list (a
    SettingsError or a MissingExtra used to be an "internal error", exit 70)."""

    def raising(*_a: object, **_k: object) -> None:
        raise error()

    monkeypatch.setattr(catalog_options, "open_catalog", raising)
    result = _invoke(["catalog", "topics", "--cluster", "c", "--db", "x.db", "--json"])
    assert result.exit_code == code, result.stdout + result.stderr
    obj = json.loads(result.stdout.strip().splitlines()[-1])
    assert obj["kind"] == "error" and obj["error"] == type(error()).__name__
    assert obj["message"] == str(error()) and obj["hint"] == hint
    assert not state_dir.exists()


def test_an_internal_signal_escaping_a_command_is_a_bug(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Control flow (``InternalSignal``) that escapes is reported as an internal error, even
    though it is a KafkaArchiveError."""

    def raising(*_a: object, **_k: object) -> None:
        raise TxnAbort("abort and redo")

    monkeypatch.setattr(catalog_options, "open_catalog", raising)
    result = _invoke(["catalog", "topics", "--cluster", "c", "--db", "x.db"])
    out = result.stdout + result.stderr
    assert result.exit_code == 70 and "internal error: TxnAbort: abort and redo" in out
    assert len(list(state_dir.glob("internal-error-*.log"))) == 1


def test_usage_errors_keep_exit_2(state_dir: Path) -> None:
    result = _invoke(["catalog", "topics", "--no-such-option"])
    assert result.exit_code == 2
    assert not state_dir.exists()


def _big_segment(tmp_path: Path) -> Path:
    """A partition directory whose dump is far more than a pipe's buffer (64 KiB)."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    d = tmp_path / "orders-0"
    d.mkdir()
    data = b""
    for base in range(0, 4000, 100):
        b = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 22)
        for i in range(100):
            b.append(i, 1_700_000_000_000 + base + i, b"key%d" % (base + i), b"v" * 200, [])
        raw = bytearray(b.build())
        raw[0:8] = base.to_bytes(8, "big")
        data += bytes(raw)
    (d / "00000000000000000000.log").write_bytes(data)
    return d / "00000000000000000000.log"


@pytest.mark.parametrize("as_json", [False, True])
def test_a_closed_pipe_is_a_quiet_end(tmp_path: Path, as_json: bool) -> None:
    """Issue 20.7: ``kafka-archive ... | head`` is a normal end: no internal error, no crash
    log, no "Exception ignored" from Python's flush at exit (a real pipe, closed by its
    reader after the first line)."""
    import os
    import subprocess
    import sys

    log = _big_segment(tmp_path)
    args = ["segments", "dump", "--print-data-log", str(log), *(["--json"] if as_json else [])]
    env = {**os.environ, crash.ERROR_LOG_DIR_ENV: str(tmp_path / "state")}
    proc = subprocess.Popen(
        [sys.executable, "-c", "from kafka_archive.cli import main; main()", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # `head -1` exits
    err = proc.stderr.read().decode()
    code = proc.wait(timeout=120)
    assert first, err
    assert err == "", err
    assert code == EXIT_CLOSED_PIPE == 141
    assert not (tmp_path / "state").exists() or not list((tmp_path / "state").iterdir())


@pytest.mark.parametrize(
    "argv",
    [
        # --help is printed by Click and rich while parsing, before any command runs
        ["kafka-archive", "--help"],
        ["kafka-archive", "catalog", "--help"],
        ["kafka-archive", "replay", "run", "--help"],
        ["kafka-archive", "catalog", "topics", "--help"],
        ["kafka-archive-dev", "--help"],
        ["kafka-archive-dev", "demo", "--help"],
        # the development command had no guard for it: an internal error and a crash log;
        # its demo's own `except OSError` took it for an unwritable --root
        # (its first progress line: the demo stops there, before any stage runs)
        ["kafka-archive-dev", "demo", "--kafka", "mock", "--root", "{tmp}/demo"],
    ],
    ids=lambda a: " ".join(a).replace("{tmp}/", ""),
)
def test_every_closed_pipe_is_a_quiet_end(tmp_path: Path, argv: list[str]) -> None:
    """Issue 23: ``--help | head`` and ``kafka-archive-dev demo | head`` ended in exit 1 or an
    ``internal error: BrokenPipeError ... this is a bug`` with a crash log. A real pipe whose
    reader went away before the first write: exit 141, nothing on stderr, no crash log."""
    import os
    import subprocess
    import sys

    exe = Path(sys.executable).with_name(argv[0])
    args = [a.replace("{tmp}", str(tmp_path)) for a in argv[1:]]
    env = {
        **os.environ,
        crash.ERROR_LOG_DIR_ENV: str(tmp_path / "state"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
    }
    read_end, write_end = os.pipe()
    os.close(read_end)  # `| head` that has already gone
    try:
        proc = subprocess.run(
            [str(exe), *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            env=env,
            timeout=300,
            check=False,
        )
    finally:
        os.close(write_end)
    err = proc.stderr.decode()
    assert err == "", err
    assert proc.returncode == EXIT_CLOSED_PIPE, err
    assert not (tmp_path / "state").exists() or not list((tmp_path / "state").rglob("*.log"))
