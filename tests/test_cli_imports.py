"""What the CLI imports: ``--help`` and the catalog queries load only what they use.

Start-up time is mostly imports, so the import *set* is what is tested (deterministic), not the
time (``benchmarks/bench_cli_startup.py`` measures that). Each command runs in a fresh Python
process through the console script's ``main()``, and the names in ``sys.modules`` at exit are
checked against the heavy packages a query never needs: orchestration (Airflow, Spark), the
Kafka client, plotting, the S3 SDK (the store here is a local directory), Alembic (the catalog
is already at the newest schema), and dataframes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kafka_archive.catalog.db import packaged_heads
from kafka_archive.cli import SUBCOMMANDS
from support.catalog_data import archived_catalog

#: top-level packages no --help and no catalog query may import
HEAVY = (
    "airflow",
    "pyspark",
    "confluent_kafka",
    "matplotlib",
    "plotext",
    "boto3",
    "botocore",
    "alembic",
    "pandas",
    "pyarrow",
)

# Runs the console script's main() with the given arguments and writes the names of every
# imported module (at exit, whatever the exit code) to the file named by $MODULES_OUT.
_WRAPPER = """
import json, os, sys
sys.argv = ["kafka-archive", *sys.argv[1:]]
from kafka_archive.cli import main
try:
    main()
finally:
    with open(os.environ["MODULES_OUT"], "w") as out:
        json.dump(sorted(sys.modules), out)
"""

CLUSTER = "c1"


def _imported(tmp_path: Path, *args: str) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    """(top-level package names imported, the finished process) for ``kafka-archive ARGS``."""
    out = tmp_path / "modules.json"
    env = {**os.environ, "MODULES_OUT": str(out), "COLUMNS": "120"}
    env.pop("KAFKA_ARCHIVE_DB", None)
    env.pop("KAFKA_ARCHIVE_STORE", None)
    proc = subprocess.run(
        [sys.executable, "-c", _WRAPPER, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    names = json.loads(out.read_text())
    return {name.split(".", 1)[0] for name in names}, proc


def _assert_light(packages: set[str]) -> None:
    assert sorted(packages.intersection(HEAVY)) == []


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """(store URI, catalog path) of a small archive, cataloged in-process."""
    root = tmp_path_factory.mktemp("imports")
    _hist, store_uri, db = archived_catalog(root, cluster=CLUSTER, seed=5, appends=20)
    return store_uri, db


def test_root_help_imports_no_subcommand_module(tmp_path: Path) -> None:
    packages, proc = _imported(tmp_path, "--help")
    assert proc.returncode == 0, proc.stderr
    for name in SUBCOMMANDS:
        assert name in proc.stdout
    _assert_light(packages)
    out = json.loads((tmp_path / "modules.json").read_text())
    # the sub-command modules themselves are loaded only when their command is used (the
    # root's own guard, standard library and typer only, runs every command)
    root_guard = {"kafka_archive.cli.guard", "kafka_archive.cli.pipes"}
    assert [m for m in out if m.startswith("kafka_archive.cli.") and m not in root_guard] == []
    assert "segment_lib" not in packages and "sqlalchemy" not in packages
    # typer < 0.25 (pyproject): newer ones build a pydantic adapter for every option
    assert "pydantic" not in packages


@pytest.mark.parametrize("command", sorted(SUBCOMMANDS))
def test_subcommand_help_is_light(tmp_path: Path, command: str) -> None:
    packages, proc = _imported(tmp_path, command, "--help")
    assert proc.returncode == 0, proc.stderr
    assert f"kafka-archive {command}" in proc.stdout
    _assert_light(packages)
    assert "sqlalchemy" not in packages


@pytest.mark.parametrize(
    "args",
    [
        ("offsets", "--topic", "orders", "--at", "2020-01-01T00:00:00Z", "--store", "{store}"),
        ("topics",),
    ],
    ids=["offsets", "topics"],
)
def test_catalog_query_imports_only_what_it_uses(
    catalog: tuple[str, str], tmp_path: Path, args: tuple[str, ...]
) -> None:
    store, db = catalog
    command, *rest = args
    rest = [arg.format(store=store) for arg in rest]
    packages, proc = _imported(
        tmp_path, "catalog", command, "--cluster", CLUSTER, *rest, "--db", db, "--json"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().startswith("{"), proc.stdout
    _assert_light(packages)
    # nothing on a query's path builds pydantic models (typer's adapters did: ~150 ms)
    assert "pydantic" not in packages


def test_catalog_offsets_runs_on_sqlalchemy_core(catalog: tuple[str, str], tmp_path: Path) -> None:
    """``catalog offsets`` (exact: it reads the store) queries Core tables: no ORM (importing
    ``sqlalchemy.orm`` and building the mapped classes was ~0.15 s of its ~0.55 s), no mapped
    classes, and only the offsets room of ``catalog.queries`` (the package re-exports lazily)."""
    store, db = catalog
    at = "2020-01-01T00:00:00Z"
    args = ("catalog", "offsets", "--cluster", CLUSTER, "--topic", "orders", "--at", at)
    packages, proc = _imported(tmp_path, *args, "--store", store, "--db", db, "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    answers = [json.loads(line) for line in proc.stdout.splitlines()]  # one per partition
    assert answers and all(a["exact"] and a["offset"] >= 0 for a in answers), answers
    modules = set(json.loads((tmp_path / "modules.json").read_text()))
    assert (
        sorted(m for m in modules if m == "sqlalchemy.orm" or m.startswith("sqlalchemy.orm.")) == []
    )
    assert sorted(m for m in modules if m.startswith("alembic")) == []
    # the compiled CRC-32C where it uses CPU instructions: the crc32c package's import (its
    # argparse, its version lookup) is 6 ms or more (segment_lib/_crc.py)
    try:
        from segment_lib._speedups import CRC32C_IMPL
    except ImportError:  # built without a C compiler: the package is the CRC
        CRC32C_IMPL = "table"
    if CRC32C_IMPL != "table":
        assert "crc32c" not in packages
    catalog_modules = sorted(m for m in modules if m.startswith("kafka_archive.catalog"))
    assert catalog_modules == [
        "kafka_archive.catalog",
        "kafka_archive.catalog.db",
        "kafka_archive.catalog.queries",
        "kafka_archive.catalog.queries.offsets",
        "kafka_archive.catalog.queries.partitions",
        "kafka_archive.catalog.query_errors",
        "kafka_archive.catalog.tables",
        "kafka_archive.catalog.time_answers",
    ]


def test_root_help_lines_match_the_commands() -> None:
    """The help line the root lists for each lazily loaded sub-command is the first paragraph
    of that command's own help (what typer would show if the module were imported)."""
    from kafka_archive.cli import _load

    for name, (line, _register) in SUBCOMMANDS.items():
        command = _load(name)
        assert command.name == name
        assert (command.help or "").split("\n\n", 1)[0].strip() == line


def test_packaged_heads_match_alembic() -> None:
    """The cheap head check (version files read as text) agrees with Alembic itself."""
    from alembic.script import ScriptDirectory
    from kafka_archive.catalog.db import alembic_config

    heads = frozenset(ScriptDirectory.from_config(alembic_config()).get_heads())
    assert packaged_heads() == heads
    assert len(heads) == 3  # one per branch: the catalog's, the replay's, the metadata history's


def test_store_package_imports_no_s3_sdk() -> None:
    code = (
        "import sys, kafka_archive.store as s\n"
        "assert 'boto3' not in sys.modules and 'botocore' not in sys.modules\n"
        "assert s.S3Store.__name__ == 'S3Store' and 'boto3' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_catalog_build_with_spark_prints_no_log_noise(
    catalog: tuple[str, str], tmp_path: Path
) -> None:
    """Spark's driver logs nothing below ERROR: before the build's own output there are only the
    command's "engine: spark (...)" and "starting Spark" lines (and the JVM's own notice about
    incubator modules, which no log configuration controls)."""
    store, _db = catalog
    db = str(tmp_path / "spark.db")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_ARCHIVE_")}
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            _WRAPPER,
            "catalog",
            "build",
            "--engine",
            "spark",
            "--store",
            store,
            "--db",
            db,
        ],
        capture_output=True,
        text=True,
        env={**env, "MODULES_OUT": str(tmp_path / "modules.json")},
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "catalog build" in proc.stdout
    noise = [
        line
        for line in proc.stderr.splitlines()
        if line.strip()
        and not line.startswith(("engine: spark (", "starting Spark"))
        and not line.startswith("WARNING: Using incubator modules")
    ]
    assert noise == []


def test_registering_the_groups_again_adds_no_copies() -> None:
    """Test modules call ``_register_groups()`` each; copies would make every later CliRunner
    invocation build every command once per copy (the CLI fuzz slowed to minutes)."""
    from kafka_archive.cli import _register_groups, app

    _register_groups()
    before = (len(app.registered_groups), len(app.registered_commands))
    _register_groups()
    assert (len(app.registered_groups), len(app.registered_commands)) == before


@pytest.mark.parametrize(
    "args",
    [("topic-config", "--topic", "orders", "--at", "8500"), ("acls", "--at", "9000")],
    ids=["topic-config", "acls"],
)
def test_metadata_history_queries_import_only_what_they_use(
    catalog: tuple[str, str], tmp_path: Path, args: tuple[str, ...]
) -> None:
    from kafka_archive.catalog.db import open_catalog
    from kafka_archive.services.metadata_history import MetadataHistoryService
    from support.metadata_entries import scripted_history

    _store, db = catalog
    with MetadataHistoryService(catalog=open_catalog(db)) as svc:
        svc.build(CLUSTER, scripted_history())  # a re-run adds nothing
    packages, proc = _imported(
        tmp_path, "catalog", *args, "--cluster", CLUSTER, "--db", db, "--json"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().startswith("{"), proc.stdout
    _assert_light(packages)
    assert "pydantic" not in packages


def test_replay_run_without_a_terminal_imports_no_progress_bar(
    catalog: tuple[str, str], tmp_path: Path
) -> None:
    """``replay run --json`` (or with no terminal) draws no progress bar, so it does not import
    rich.progress: the import was on every replay's way to its first record (issue 27)."""
    store, db = catalog
    _packages, proc = _imported(
        tmp_path,
        "replay", "run", "--cluster", CLUSTER, "--topic", "orders", "--from", "earliest",
        "--target", "127.0.0.1:9", "--target-topic", "orders-copy", "--dry-run", "--offline",
        "--store", store, "--db", db, "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    modules = json.loads((tmp_path / "modules.json").read_text())
    assert "kafka_archive.cli.replay" in modules and "rich.progress" not in modules


def test_replay_run_on_the_record_path_imports_no_kafka_python(
    catalog: tuple[str, str], tmp_path: Path
) -> None:
    """A real ``replay run`` (not a dry run) to librdkafka's mock cluster, which the replay
    path's probe answers from its cluster id (the request could go by batches, so it asks):
    the records go through confluent-kafka, so kafka-python (its package init and every
    protocol module: ~0.14 s, issue 27) is never imported, nor rich (``--json``), SQLAlchemy's
    ORM, an orchestrator or the S3 SDK."""
    from tests.support.kafka_mock import MockCluster

    store, db = catalog
    mock = MockCluster(3)
    try:
        mock.create_topic("__kafka_archive_replay_progress", 6)
        mock.create_topic("orders-copy", 8)
        packages, proc = _imported(
            tmp_path,
            "replay", "run", "--cluster", CLUSTER, "--topic", "orders", "--from", "earliest",
            "--target", mock.bootstrap_servers, "--target-topic", "orders-copy",
            "--store", store, "--db", db, "--json",
        )  # fmt: skip
    finally:
        mock.close()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["status"] == "complete" and report["records_sent"] > 0, report
    assert report["replay_path"] == "records"
    modules = json.loads((tmp_path / "modules.json").read_text())
    assert "kafka" not in packages and "rich.progress" not in modules
    # nor rich at all: --json prints no table, and the consoles are made on first use
    # (rich.console with its styles and colours was ~40-50 ms of CPU before the first record)
    assert "rich" not in packages
    # nor the ORM: the ledger, the leases and the plan's catalog reads run on SQLAlchemy Core
    # (importing sqlalchemy.orm and configuring the mapped classes: ~0.1 s of CPU)
    orm = [m for m in modules if m == "sqlalchemy.orm" or m.startswith("sqlalchemy.orm.")]
    assert orm == []
    assert "kafka_archive.catalog.models" not in modules
    assert "kafka_archive.replay.bookkeeping.models" not in modules
    assert "kafka_archive.replay.bookkeeping.ledger" in modules  # (it did run)
    assert "confluent_kafka" in packages  # (the check is not vacuous: the replay ran)
    assert sorted(packages.intersection(HEAVY) - {"confluent_kafka", "alembic"}) == []


def test_cli_consoles_are_made_on_first_use() -> None:
    """``cli.output``'s consoles import rich only when something is printed through them, and
    then are one :class:`PipeConsole` each (a closed pipe is still a ``BrokenPipeError``)."""
    code = (
        "import sys\n"
        "from kafka_archive.cli import output\n"
        "assert not [m for m in sys.modules if m.split('.')[0] == 'rich'], 'rich at import'\n"
        "output.err_console.print('[bold]hello[/]')\n"
        "real = output.real_console(output.err_console)\n"
        "assert real is output.real_console(output.err_console)\n"
        "assert isinstance(real, output.PipeConsole) and real.stderr\n"
        "assert output.err_console.stderr and not output.console.stderr\n"
        "try:\n"
        "    real.on_broken_pipe()\n"
        "except BrokenPipeError:\n"
        "    assert real.quiet\n"
        "else:\n"
        "    raise AssertionError('no BrokenPipeError')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == "hello"
