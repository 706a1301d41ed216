"""Secrets never shown, end to end: a whole run of the real ``kafka-archive`` command with
real-looking secrets everywhere, and every output scanned.

Secrets: the catalog's PostgreSQL password (a role with password authentication on the test
server), a wrong password, the S3 secret access key (moto server), and the target cluster's
``sasl.password`` (librdkafka's mock cluster). The flow runs the console script in child
processes, as a user would: archive -> catalog build (on local Spark) -> catalog queries ->
replay --dry-run -> replay run -> replay status, then the error paths (catalog unreachable,
wrong password, store unreachable).

Scanned for every secret: each command's stdout and stderr (text and ``--json``), every file
written under the run's HOME and internal-error log directory, the catalog database's content,
and the argument lists of every process the command started (sampled from /proc while it ran).
The catalog URL and store credentials are given through the environment, the way the platform
passes them on; the CLI's own argument list is the user's choice (``--target-config`` names the
SASL password there), so only its children's are checked.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from kafka_archive_dev.writer.broker_writer import BrokerWriter
from support.s3common import AWS_VARS_TO_MASK, BUCKET, FAKE_ACCESS_KEY, REGION, unique_prefix

from tests.support.kafka_mock import MockCluster
from tests.support.replay_data import write_source_topic

if TYPE_CHECKING:
    from support.postgres import PgServer
    from support.s3server import MotoS3

pytest_plugins = ["support.postgres", "support.s3server"]
pytestmark = pytest.mark.timeout(900)

DB_PW = "pgPw7c1f9e2aHunter2xyz"
WRONG_PW = "wrongPw5e6f7a8b9c0d1e2f"
AWS_SECRET = "aWsSecretKey/9f8e7d6c5b4a+TESTkey0123"
SASL_PW = "saslPw3d4c5b6a7f8e9d0cZZ"
SECRETS = (DB_PW, WRONG_PW, AWS_SECRET, SASL_PW)

ROLE = "ka_secret_user"
CLUSTER = "east"
TOPIC = "orders"
PROGRESS = "__kafka_archive_replay_progress"
KAFKA_ARCHIVE = str(Path(sys.executable).parent / "kafka-archive")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Run:
    args: list[str]
    code: int
    stdout: str
    stderr: str
    #: argument lists of every descendant process seen while the command ran
    children: list[list[str]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(x) for x in self.stdout.splitlines() if x.startswith("{")]

    def show(self) -> str:
        return (
            f"$ kafka-archive {' '.join(self.args)}\n-> {self.code}\n{self.stdout}\n{self.stderr}"
        )


def _descendants(root: int) -> dict[int, list[str]]:
    """``pid -> argv`` of every live descendant of ``root`` (from /proc)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: dict[int, list[str]] = {}
    for pid in parents:
        p, hops = pid, 0
        while p in parents and p != root and p > 1 and hops < 64:
            p, hops = parents[p], hops + 1
        if p == root and pid != root:
            try:
                raw = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            found[pid] = [a.decode(errors="replace") for a in raw.split(b"\0") if a]
    return found


def run_cli(args: list[str], env: dict[str, str], timeout: float = 600) -> Run:
    """Run ``kafka-archive ARGS`` and watch the argument lists of everything it starts."""
    proc = subprocess.Popen(
        [KAFKA_ARCHIVE, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    seen: dict[int, list[str]] = {}
    done = threading.Event()
    t0 = time.monotonic()

    def watch() -> None:
        while not done.is_set():
            for pid, argv in _descendants(proc.pid).items():
                if argv:
                    seen.setdefault(pid, argv)
            done.wait(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        done.set()
        watcher.join()
    took = time.monotonic() - t0
    print(f"{took:6.1f}s kafka-archive {' '.join(args)[:100]}")
    return Run(args, proc.returncode, out, err, list(seen.values()), took)


def assert_no_secret(where: str, text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"a secret ({secret[:6]}...) leaked into {where}:\n{text}"


def scan_run(run: Run) -> None:
    assert_no_secret(f"the output of {run.args[:2]}", run.stdout + run.stderr)
    for argv in run.children:
        assert_no_secret(f"the argv of a child of {run.args[:2]}", " ".join(argv))
    assert "Traceback (most recent call last)" not in run.stderr, run.show()


def scan_files(root: Path) -> int:
    n = 0
    for path in root.rglob("*"):
        if path.is_file():
            assert_no_secret(str(path), path.read_bytes().decode("utf-8", errors="replace"))
            n += 1
    return n


@dataclass
class World:
    root: Path
    env: dict[str, str]
    db_url: str
    bad_db_url: str
    wrong_pw_url: str
    store_uri: str
    log_dirs: list[str]
    mock: MockCluster
    pg: PgServer
    database: str


def _password_role(pg: PgServer) -> str:
    """A role that logs in with a password (the server trusts everyone else), owning a new
    database; returns the database name."""
    import psycopg

    name = f"secrets_{os.getpid()}"
    with psycopg.connect(pg.url(), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"DROP ROLE IF EXISTS {ROLE}")
        conn.execute(f"CREATE ROLE {ROLE} LOGIN PASSWORD '{DB_PW}'")
        conn.execute(f"CREATE DATABASE {name} OWNER {ROLE}")
        hba = pg.datadir / "pg_hba.conf"
        rule = f"host all {ROLE} 127.0.0.1/32 scram-sha-256\n"
        text = hba.read_text()
        if rule not in text:
            hba.write_text(rule + text)  # first match wins: password auth for this role only
        conn.execute("SELECT pg_reload_conf()")
    time.sleep(0.5)  # the postmaster re-reads pg_hba.conf asynchronously
    return name


@pytest.fixture(scope="module")
def world(
    pg_server: PgServer, moto_s3: MotoS3, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[World]:
    root = tmp_path_factory.mktemp("secrets")
    database = _password_role(pg_server)
    broker = BrokerWriter(root / "b1", 1, cluster_id="src-cluster-id", offsets_partitions=3)
    write_source_topic(root, TOPIC, 2, seed=7, broker=broker)
    broker.close()  # checkpoints and meta.properties: the archiver needs them
    env = {k: v for k, v in os.environ.items() if k not in AWS_VARS_TO_MASK}
    env.pop("KAFKA_ARCHIVE_DB", None)
    env.pop("KAFKA_ARCHIVE_STORE", None)
    home = root / "home"
    home.mkdir()
    db_url = f"postgresql://{ROLE}:{DB_PW}@127.0.0.1:{pg_server.port}/{database}"
    env.update(
        {
            "HOME": str(home),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "KAFKA_ARCHIVE_ERROR_LOG_DIR": str(root / "errors"),
            "AWS_ACCESS_KEY_ID": FAKE_ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": AWS_SECRET,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ENDPOINT_URL_S3": moto_s3.endpoint_url,
            "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_CONFIG_FILE": str(root / "no-aws-config"),
            "AWS_SHARED_CREDENTIALS_FILE": str(root / "no-aws-credentials"),
            "NO_PROXY": "127.0.0.1,localhost",
            "KAFKA_ARCHIVE_DB": db_url,
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.pop("KAFKA_ARCHIVE_SPARK_UI", None)
    mock = MockCluster(3)
    mock.create_topic(PROGRESS, 6)
    mock.create_topic("replayed", 2)
    try:
        yield World(
            root=root,
            env=env,
            db_url=db_url,
            bad_db_url=f"postgresql://{ROLE}:{DB_PW}@127.0.0.1:{_free_port()}/{database}",
            wrong_pw_url=f"postgresql://{ROLE}:{WRONG_PW}@127.0.0.1:{pg_server.port}/{database}",
            store_uri=f"s3://{BUCKET}/{unique_prefix()}",
            log_dirs=[str(d) for d in broker.log_dirs],
            mock=mock,
            pg=pg_server,
            database=database,
        )
    finally:
        mock.close()


def _catalog_text(world: World) -> str:
    """Every row of every table of the catalog database, as text."""
    import psycopg

    parts = []
    with psycopg.connect(world.pg.url(world.database)) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
            ).fetchall()
        ]
        for t in tables:
            rows = conn.execute(f'SELECT t::text FROM "{t}" t').fetchall()
            parts.extend(r[0] for r in rows)
    return "\n".join(parts)


def test_a_whole_run_shows_no_secret(world: World) -> None:
    env = world.env
    sasl = ["--target-config", "sasl.username=alice", "--target-config", f"sasl.password={SASL_PW}"]
    steps: list[Run] = []

    def step(*args: str, expect: int = 0) -> Run:
        run = run_cli(list(args), env)
        steps.append(run)
        scan_run(run)
        assert run.code == expect, run.show()
        return run

    archived = step(
        "archive", "--cluster", CLUSTER, "--broker-id", "1",
        *[a for d in world.log_dirs for a in ("--log-dir", d)],
        "--store", world.store_uri, "--json",
    )  # fmt: skip
    assert any(x.get("segments_archived", 0) > 0 for x in archived.lines), archived.show()
    built = step("catalog", "build", "--store", world.store_uri, "--engine", "spark",
                 "--spark-master", "local[1]", "--json")  # fmt: skip
    assert built.lines[-1]["segments_added"] > 0, built.show()
    assert any("java" in " ".join(a) for a in built.children), "Spark's JVM was not seen"
    # text and --json alternate over the commands (each CLI start costs seconds here)
    step("catalog", "topics", "--cluster", CLUSTER)
    step("catalog", "gaps", "--cluster", CLUSTER, "--topic", TOPIC, "--json")
    step("catalog", "offsets", "--cluster", CLUSTER, "--topic", TOPIC, "--at", "0",
         "--store", world.store_uri)  # fmt: skip
    step("catalog", "locate", "--cluster", CLUSTER, "--topic", TOPIC, "-p", "0", "--offset", "0",
         "--store", world.store_uri, "--json")  # fmt: skip
    replay = [
        "replay", "run", "--cluster", CLUSTER, "--topic", TOPIC, "--from", "earliest",
        "--target", world.mock.bootstrap_servers, "--target-topic", "replayed",
        "--store", world.store_uri, *sasl,
    ]  # fmt: skip
    step(*replay, "--dry-run")
    ran = step(*replay, "--json")
    assert ran.lines and ran.lines[-1].get("kind") != "error", ran.show()
    step("replay", "status")

    assert scan_files(world.root / "home") >= 0
    if (world.root / "errors").exists():
        scan_files(world.root / "errors")
    assert_no_secret("the catalog database", _catalog_text(world))


def test_error_paths_show_no_secret(world: World) -> None:
    """The failures, text and ``--json``: run in this process (no child processes to watch,
    and each start of the CLI would cost seconds on a busy machine)."""
    from kafka_archive.cli import _register_groups, app
    from typer.testing import CliRunner

    if not app.registered_groups:
        _register_groups()

    def run(env_update: dict[str, str], *args: str) -> Run:
        result = CliRunner().invoke(app, list(args), env={**world.env, **env_update})
        r = Run(list(args), result.exit_code, result.stdout, result.stderr or "")
        scan_run(r)
        assert r.code != 0, r.show()
        assert result.exception is None or isinstance(result.exception, SystemExit), r.show()
        return r

    unreachable = {"KAFKA_ARCHIVE_DB": world.bad_db_url}
    wrong = {"KAFKA_ARCHIVE_DB": world.wrong_pw_url}
    dead_store = {"AWS_ENDPOINT_URL_S3": f"http://127.0.0.1:{_free_port()}"}
    for as_json in ([], ["--json"]):
        r = run(unreachable, "catalog", "topics", "--cluster", CLUSTER, *as_json)
        assert f"{ROLE}:***@127.0.0.1" in r.stdout + r.stderr, r.show()
        r = run(wrong, "catalog", "topics", "--cluster", CLUSTER, *as_json)
        assert "password authentication failed" in r.stdout + r.stderr, r.show()
        run(unreachable, "catalog", "build", "--store", world.store_uri, "--in-process", *as_json)
        run(wrong, "replay", "status", *as_json)
        run(unreachable, "replay", "run", "--cluster", CLUSTER, "--topic", TOPIC, "--from",
            "earliest", "--target", world.mock.bootstrap_servers, "--target-topic", "replayed",
            "--store", world.store_uri, "--target-config", f"sasl.password={SASL_PW}",
            *as_json)  # fmt: skip
        # the URL on the command line (the user's choice): still never echoed
        run({}, "catalog", "gaps", "--cluster", CLUSTER, "--topic", TOPIC, "--db",
            world.wrong_pw_url, *as_json)  # fmt: skip
        run(dead_store, "catalog", "build", "--store", world.store_uri, "--in-process", *as_json)
        run(dead_store, "catalog", "offsets", "--cluster", CLUSTER, "--topic", TOPIC, "--at",
            "0", "--store", world.store_uri, *as_json)  # fmt: skip
        run(dead_store, "archive", "--cluster", CLUSTER, "--broker-id", "1",
            "--log-dir", world.log_dirs[0], "--store", world.store_uri, *as_json)  # fmt: skip
    if (world.root / "errors").exists():
        scan_files(world.root / "errors")
    scan_files(world.root / "home")
