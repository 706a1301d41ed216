"""An isolated Airflow installation for DAG tests (pytest plugin: ``support.airflow``).

Airflow reads ``AIRFLOW_HOME`` and its configuration once, at import, into process-global state,
so DAG tests run Airflow in **subprocesses** that get a prepared environment:

* ``airflow_home`` (session): a temporary ``AIRFLOW_HOME`` with its own SQLite metadata DB,
  migrated once (``airflow db migrate``, a few seconds), examples off, ``dags/`` of this
  repository as the DAGs folder. Its ``env`` is the environment to run Airflow with.
* :func:`run_airflow_python` runs a Python snippet in that environment and returns its JSON
  result (the snippet prints one line ``RESULT <json>``), failing the test with the subprocess
  output when it crashes.

Other DAG tests reuse both (``pytest_plugins = ["support.airflow"]``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
DAGS_FOLDER = REPO_ROOT / "dags"
RESULT_PREFIX = "RESULT "


@dataclass(frozen=True)
class AirflowHome:
    path: Path
    env: Mapping[str, str] = field(default_factory=dict)


def airflow_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env.update(
        AIRFLOW_HOME=str(home),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        AIRFLOW__CORE__DAGS_FOLDER=str(DAGS_FOLDER),
        AIRFLOW__CORE__UNIT_TEST_MODE="False",
        AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=f"sqlite:///{home / 'airflow.db'}",
        AIRFLOW__LOGGING__LOGGING_LEVEL="INFO",
        # the plugins folder is where kafka_archive lives; it is also installed in the venv
        AIRFLOW__CORE__PLUGINS_FOLDER=str(REPO_ROOT / "plugins"),
    )
    return env


@pytest.fixture(scope="session")
def airflow_home(tmp_path_factory: pytest.TempPathFactory) -> AirflowHome:
    home = tmp_path_factory.mktemp("airflow_home")
    env = airflow_env(home)
    airflow = Path(sys.executable).with_name("airflow")
    proc = subprocess.run(
        [str(airflow), "db", "migrate"], env=env, capture_output=True, text=True, timeout=300
    )
    if proc.returncode != 0:
        pytest.fail(f"airflow db migrate failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return AirflowHome(home, env)


def run_airflow_python(
    home: AirflowHome,
    code: str,
    *,
    extra_env: Mapping[str, str] | None = None,
    timeout: float = 600,
    cwd: Path | None = None,
) -> Any:
    """Run ``code`` with Airflow configured for ``home``; return the JSON it printed after
    ``RESULT `` (the snippet must print exactly one such line)."""
    env = {**home.env, **(extra_env or {})}
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd or home.path,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT_PREFIX)]
    if proc.returncode != 0 or len(lines) != 1:
        pytest.fail(
            f"Airflow subprocess failed (rc={proc.returncode}):\n"
            f"--- stdout ---\n{proc.stdout[-6000:]}\n--- stderr ---\n{proc.stderr[-6000:]}"
        )
    return json.loads(lines[0][len(RESULT_PREFIX) :])
