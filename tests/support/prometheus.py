"""Prometheus for the monitoring tests: the binaries (Debian's package, installed by
scripts/ensure-prometheus.sh like PostgreSQL's), ``promtool``, and a throw-away server on a free
port in a temp dir with its HTTP API."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
ENSURE = REPO / "scripts" / "ensure-prometheus.sh"


@cache
def prometheus_bin() -> Path:
    """The directory holding ``prometheus`` and ``promtool`` (installed when missing and
    allowed); the test fails (never skips) when there is none, naming what to do."""
    proc = subprocess.run(["bash", str(ENSURE)], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        pytest.fail(f"no Prometheus: {proc.stderr.strip()}")
    return Path(proc.stdout.strip().splitlines()[-1])


def promtool(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(prometheus_bin() / "promtool"), *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PrometheusServer:
    """A running server's HTTP API."""

    def __init__(self, url: str) -> None:
        self.url = url

    def query(self, expr: str) -> list[dict[str, Any]]:
        """Instant query: the result vector (each ``{"metric": {...}, "value": [t, "v"]}``)."""
        q = urllib.parse.urlencode({"query": expr})
        with urllib.request.urlopen(f"{self.url}/api/v1/query?{q}", timeout=10) as resp:
            body = json.load(resp)
        assert body["status"] == "success", body
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    def targets_up(self) -> bool:
        with urllib.request.urlopen(f"{self.url}/api/v1/targets", timeout=10) as resp:
            body = json.load(resp)
        active = body["data"]["activeTargets"]
        return bool(active) and all(t["health"] == "up" for t in active)

    def wait_for(self, expr: str, pred: Any, *, timeout_s: float = 60.0) -> list[dict[str, Any]]:
        """Query ``expr`` until ``pred(result)`` holds (scrapes are every second); the last
        result, or an AssertionError naming the expression."""
        deadline = time.monotonic() + timeout_s
        result: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            result = self.query(expr)
            if pred(result):
                return result
            time.sleep(0.5)
        raise AssertionError(f"{expr}: never satisfied; last result {result}")


@contextmanager
def prometheus_server(tmp: Path, targets: dict[str, str]) -> Iterator[PrometheusServer]:
    """A Prometheus scraping ``targets`` (job -> host:port) every second, on a free port, its
    data in ``tmp``; stopped (and its process waited for) on exit."""
    port = free_port()
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "scrape_configs": [
            {"job_name": job, "static_configs": [{"targets": [addr]}]}
            for job, addr in targets.items()
        ],
    }
    tmp.mkdir(parents=True, exist_ok=True)
    cfg = tmp / "prometheus.yml"
    cfg.write_text(yaml.safe_dump(config), encoding="utf-8")
    log = (tmp / "prometheus.log").open("w")
    proc = subprocess.Popen(
        [
            str(prometheus_bin() / "prometheus"),
            f"--config.file={cfg}",
            f"--storage.tsdb.path={tmp / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ},
    )
    server = PrometheusServer(f"http://127.0.0.1:{port}")
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{server.url}/-/ready", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(
                        "prometheus did not start: " + (tmp / "prometheus.log").read_text()
                    ) from None
                time.sleep(0.3)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
