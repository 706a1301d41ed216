"""Airflow loads the project's ``plugins/`` folder without a plugin import error.

Airflow's plugin loader imports every ``.py`` file under its plugins folder as a top-level module
of its own (``plugins_manager._load_plugins_from_plugin_directory``), unless a ``.airflowignore``
excludes it. The folder holds the ``kafka_archive`` package, whose modules are not plugins and
break when imported that way (the catalog's Alembic ``env.py``, the replay's ORM models a second
time). The demo, the tests and the chart point Airflow at this folder, so this test loads it
with Airflow's own plugin manager, in a subprocess with a fresh ``AIRFLOW_HOME``, and asserts
no import errors, whatever the package layout becomes, under both syntaxes Airflow reads
``.airflowignore`` with (``[core] dag_ignore_file_syntax``: glob, the default, or regexp).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.airflow import airflow_env

REPO_ROOT = Path(__file__).resolve().parent.parent
PLUGINS = REPO_ROOT / "plugins"

_LOAD = """\
import json
from airflow import plugins_manager, settings

plugins_manager.ensure_plugins_loaded()
plugins, errors = plugins_manager._get_plugins()
print("RESULT " + json.dumps({
    "folder": settings.PLUGINS_FOLDER,
    "errors": plugins_manager.get_import_errors(),
    "plugins": sorted(str(p.name) for p in plugins),
}))
"""


@pytest.mark.parametrize("syntax", ["glob", "regexp"])
def test_airflow_loads_the_plugins_folder_without_import_errors(
    syntax: str, tmp_path: Path
) -> None:
    env = airflow_env(tmp_path)
    env["AIRFLOW__CORE__PLUGINS_FOLDER"] = str(PLUGINS)
    env["AIRFLOW__CORE__DAG_IGNORE_FILE_SYNTAX"] = syntax
    proc = subprocess.run(
        [sys.executable, "-c", _LOAD],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(lines[-1].removeprefix("RESULT "))
    assert Path(result["folder"]) == PLUGINS
    assert result["errors"] == {}
