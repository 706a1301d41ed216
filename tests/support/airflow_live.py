"""A real, running Airflow for end-to-end tests: api-server, scheduler and dag-processor as
separate processes with their own SQLite metadata DB and a LocalExecutor, reached over HTTP on
127.0.0.1 through Airflow's REST API (``/api/v2``), exactly as deployed (minus Celery).

Authentication is Airflow's SimpleAuthManager with every user an admin, so the tests need no
password; everything listens on loopback only.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LiveAirflow:
    """Airflow's components as subprocesses (start with :meth:`start`, stop with :meth:`stop`)."""

    def __init__(self, home: Path, env: Mapping[str, str], logs: Path) -> None:
        self.home = home
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.logs = logs
        self.env = {
            **env,
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": "4",
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.base}/execution/",
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(self.port),
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
            "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
        }
        self.procs: list[subprocess.Popen[bytes]] = []

    def _airflow(self, *args: str) -> list[str]:
        return [str(Path(sys.executable).with_name("airflow")), *args]

    def start(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            self._airflow("db", "migrate"),
            env=self.env,
            check=True,
            capture_output=True,
            timeout=300,
        )
        for name, args in (
            ("api-server", ("api-server", "--host", "127.0.0.1", "--port", str(self.port))),
            ("scheduler", ("scheduler",)),
            ("dag-processor", ("dag-processor",)),
        ):
            out = (self.logs / f"{name}.log").open("wb")
            self.procs.append(
                subprocess.Popen(
                    self._airflow(*args),
                    env=self.env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
        self.wait(lambda: self.get("/api/v2/monitor/health") is not None, 120, "api-server")

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        for p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(5)

    def request(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            self.base + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read() or b"null")

    def get(self, path: str) -> Any:
        try:
            return self.request("GET", path)
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return None

    def wait(self, check: Any, timeout: float, what: str) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for p in self.procs:
                if p.poll() is not None:
                    raise AssertionError(
                        f"an Airflow process exited while waiting for {what}; logs in {self.logs}"
                    )
            result = check()
            if result:
                return result
            time.sleep(2)
        raise AssertionError(
            f"timed out after {timeout:.0f} s waiting for {what}; logs in {self.logs}"
        )

    def runs(self, dag_id: str) -> list[dict[str, Any]]:
        got = self.get(f"/api/v2/dags/{dag_id}/dagRuns?order_by=-start_date")
        return list(got["dag_runs"]) if got else []

    def wait_for_success(
        self, dag_id: str, timeout: float, run_id: str | None = None, run_type: str | None = None
    ) -> dict[str, Any]:
        def done() -> dict[str, Any] | None:
            for run in self.runs(dag_id):
                if run_id is not None and run["dag_run_id"] != run_id:
                    continue
                if run_type is not None and run["run_type"] != run_type:
                    continue
                if run["state"] == "failed":
                    raise AssertionError(
                        f"{dag_id} run {run['dag_run_id']} failed; logs in {self.home / 'logs'}"
                    )
                if run["state"] == "success":
                    return run
            return None

        result: dict[str, Any] = self.wait(done, timeout, f"a successful {dag_id} run")
        return result
