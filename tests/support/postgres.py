"""A real PostgreSQL server for the tests, started by the test session itself.

``scripts/ensure-postgres.sh`` finds (or, as root with apt, installs) the server binaries; this
plugin then runs ``initdb`` into a fresh temp directory and ``pg_ctl start`` on a free port of
127.0.0.1, tuned for throw-away data (no fsync). PostgreSQL refuses to run as root, so under
root the server runs as the ``postgres`` system user (created by Debian's package; a dedicated
user is added if it is missing). The server is stopped and its directory removed at the end of
the session.

As a pytest plugin (``pytest_plugins = ["support.postgres"]``) it provides

* ``pg_server`` (session): the running :class:`PgServer`;
* ``pg_url`` (function): the URL of a brand-new empty database on it.

If no server can be had, tests needing it *fail* (the catalog must be tested on PostgreSQL);
``KAFKA_ARCHIVE_SKIP_POSTGRES=1`` turns that into a skip for machines known to lack it.
"""

from __future__ import annotations

import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
ENSURE = REPO_ROOT / "scripts" / "ensure-postgres.sh"
SUPERUSER = "kafka_archive"
_RUN_AS = "postgres"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _bindir() -> Path:
    proc = subprocess.run(
        ["bash", str(ENSURE)], capture_output=True, text=True, timeout=900, check=False
    )
    if proc.returncode != 0 or not proc.stdout.strip():
        raise RuntimeError(f"no PostgreSQL server available: {proc.stderr.strip()}")
    return Path(proc.stdout.strip().splitlines()[-1])


def _ensure_user() -> str:
    try:
        pwd.getpwnam(_RUN_AS)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", _RUN_AS],
            check=True,
        )
    return _RUN_AS


@dataclass
class PgServer:
    """A running throw-away PostgreSQL server."""

    bindir: Path
    root: Path
    port: int
    run_as: str | None
    _counter: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def datadir(self) -> Path:
        return self.root / "data"

    def _cmd(self, *args: str) -> list[str]:
        if self.run_as is None:
            return list(args)
        return ["runuser", "-u", self.run_as, "--", *args]

    def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        sock = self.root / "sock"
        sock.mkdir(exist_ok=True)
        if self.run_as is not None:
            user = pwd.getpwnam(self.run_as)
            for p in (self.root, sock):
                os.chown(p, user.pw_uid, user.pw_gid)
        subprocess.run(
            self._cmd(
                str(self.bindir / "initdb"),
                "-D",
                str(self.datadir),
                "-U",
                SUPERUSER,
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ),
            check=True,
            capture_output=True,
            text=True,
        )
        options = (
            f"-p {self.port} -k {sock} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=50 "
            "-c shared_buffers=256MB"
        )
        subprocess.run(
            self._cmd(
                str(self.bindir / "pg_ctl"),
                "-D",
                str(self.datadir),
                "-w",
                "-t",
                "60",
                "-l",
                str(self.root / "server.log"),
                "-o",
                options,
                "start",
            ),
            check=True,
            capture_output=True,
            text=True,
        )

    def stop(self) -> None:
        subprocess.run(
            self._cmd(
                str(self.bindir / "pg_ctl"),
                "-D",
                str(self.datadir),
                "-m",
                "immediate",
                "-w",
                "stop",
            ),
            check=False,
            capture_output=True,
        )
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def create_database(self, prefix: str = "catalog") -> str:
        """Create a fresh database and return its URL."""
        import psycopg

        name = f"{prefix}_{os.getpid()}_{next(self._counter)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


def start_server() -> PgServer:
    """Start a server (used by the fixture and by the benchmarks)."""
    bindir = _bindir()
    run_as = _ensure_user() if os.geteuid() == 0 else None
    root = Path(tempfile.mkdtemp(prefix="kafka-archive-pg-"))
    os.chmod(root, 0o755)
    server = PgServer(bindir, root, _free_port(), run_as)
    for attempt in range(3):
        try:
            server.start()
            return server
        except subprocess.CalledProcessError as exc:
            log = server.root / "server.log"
            detail = log.read_text(errors="replace") if log.exists() else ""
            server.stop()
            if attempt == 2:
                raise RuntimeError(
                    f"PostgreSQL did not start: {exc.stderr}\n{detail[-2000:]}"
                ) from exc
            time.sleep(0.5)
            root = Path(tempfile.mkdtemp(prefix="kafka-archive-pg-"))
            os.chmod(root, 0o755)
            server = PgServer(bindir, root, _free_port(), run_as)
    raise AssertionError("unreachable")


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    try:
        server = start_server()
    except (RuntimeError, OSError, subprocess.CalledProcessError) as exc:
        if os.environ.get("KAFKA_ARCHIVE_SKIP_POSTGRES") == "1":
            pytest.skip(f"PostgreSQL unavailable: {exc}")
        pytest.fail(f"PostgreSQL unavailable (set KAFKA_ARCHIVE_SKIP_POSTGRES=1 to skip): {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(pg_server: PgServer) -> str:
    return pg_server.create_database()
