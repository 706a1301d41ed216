"""Optional extras (``[spark]``, ``[airflow]``): a feature whose extra is missing says which
``pip install`` fixes it, with a clean error and no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from kafka_archive.extras import MissingExtra, require
from kafka_archive_dev.demo import DemoError, DemoPaths, _airflow


def test_require_returns_the_module_when_installed() -> None:
    assert require("json", extra="x", what="JSON").dumps([1]) == "[1]"


def test_require_names_the_extra_when_missing() -> None:
    with pytest.raises(MissingExtra) as info:
        require("no_such_package_kafka_archive.sub", extra="spark", what="catalog build on Spark")
    assert str(info.value) == (
        "catalog build on Spark needs `pip install kafka-archive[spark]` "
        "(no_such_package_kafka_archive is not installed)"
    )
    assert info.value.extra == "spark" and isinstance(info.value, ImportError)


def test_catalog_build_without_pyspark_names_the_spark_extra(tmp_path: Path) -> None:
    """As if pyspark were not installed (``sys.modules['pyspark'] = None`` makes every import
    of it fail): the Spark build fails cleanly and names ``kafka-archive[spark]``."""
    # the build checks the store holds something before it starts Spark
    (tmp_path / "store" / "c1").mkdir(parents=True)
    (tmp_path / "store" / "c1" / "object").write_bytes(b"x")
    code = (
        "import sys\n"
        "sys.modules['pyspark'] = None\n"
        "sys.argv = ['kafka-archive', 'catalog', 'build', '--engine', 'spark', '--store', "
        "sys.argv[1], '--db', sys.argv[2]]\n"
        "from kafka_archive.cli import main\n"
        "main()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "store"), str(tmp_path / "c.db")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "pip install kafka-archive[spark]" in proc.stderr
    assert "--engine in-process" in proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr


def test_demo_without_airflow_names_the_airflow_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a Python with no `airflow` command next to it: the core install
    monkeypatch.setattr(sys, "executable", str(tmp_path / "bin" / "python"))
    paths = DemoPaths(tmp_path / "demo")
    paths.logs.mkdir(parents=True)
    with pytest.raises(DemoError, match=r"pip install kafka-archive\[airflow\]"):
        _airflow(paths, "airflow-db-migrate", "db", "migrate")
