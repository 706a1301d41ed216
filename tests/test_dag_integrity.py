"""Every DAG file in ``dags/`` loads cleanly and follows the project's rules.

Generic: each ``dags/*.py`` is a parameter, so DAGs added later are covered without touching
this test. Each file is parsed by Airflow's own ``DagBag`` in an isolated Airflow home (a
subprocess, see ``support.airflow``), with the network and the metadata database watched:

* it imports without error and defines at least one DAG;
* every DAG has tags, ``doc_md``, ``default_args['retries'] >= 1`` and ``catchup`` off;
* every Param has a JSON Schema type (validated in the trigger form), and a DAG that is only
  triggered by hand declares its Params;
* parsing has no side effects: no network connection, no metadata-database connection, no file
  created or changed in the working directory or the DAGs folder, and parsing twice gives the
  same DAG structure (no randomness, no time-dependent task lists).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from support.airflow import AirflowHome

pytest_plugins = ["support.airflow"]

DAGS_DIR = Path(__file__).resolve().parent.parent / "dags"
DAG_FILES = sorted(p.name for p in DAGS_DIR.glob("*.py") if not p.name.startswith("_"))

PROBE = """
import json, os, socket, sys
from pathlib import Path

targets = {targets!r}

def tree(root):
    out = {{}}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for name in filenames:
            p = Path(dirpath) / name
            st = p.stat()
            out[str(p)] = (st.st_size, st.st_mtime_ns)
    return out

# Watch the network and the database while DAG files are parsed.
events = []
real_connect = socket.socket.connect
def connect(self, address):
    events.append(f"socket connect {{address}}")
    raise OSError("network access while parsing a DAG file")
socket.socket.connect = connect

from airflow.dag_processing.dagbag import DagBag
import sqlalchemy.engine
real_engine_connect = sqlalchemy.engine.Engine.connect
def engine_connect(self, *a, **kw):
    events.append("database connect")
    return real_engine_connect(self, *a, **kw)
sqlalchemy.engine.Engine.connect = engine_connect

def structure(dag):
    return sorted(
        (t.task_id, sorted(t.downstream_task_ids), str(getattr(t, "queue", None)))
        for t in dag.tasks
    )

result = {{}}
for folder, name in targets:
    dags_dir = Path(folder)
    path = dags_dir / name
    before_cwd, before_dags = tree(os.getcwd()), tree(dags_dir)
    events.clear()
    bags = [DagBag(dag_folder=str(path), safe_mode=False) for _ in range(2)]
    seen = list(events)
    after_cwd, after_dags = tree(os.getcwd()), tree(dags_dir)
    dags = {{}}
    for dag_id, dag in bags[0].dags.items():
        other = bags[1].dags.get(dag_id)
        dags[dag_id] = {{
            "tags": sorted(dag.tags or []),
            "doc_md": bool((dag.doc_md or "").strip()),
            "retries": (dag.default_args or {{}}).get("retries"),
            "catchup": dag.catchup,
            "stable": other is not None and structure(dag) == structure(other),
            "manual": type(dag.timetable).__name__ == "NullTimetable",
            "params": {{
                name: dag.params.get_param(name).schema for name in dag.params.keys()
            }},
        }}
    result[str(path)] = {{
        "errors": {{k: str(v)[-2000:] for k, v in bags[0].import_errors.items()}},
        "dags": dags,
        "side_effects": seen,
        "cwd_changed": before_cwd != after_cwd,
        "dags_changed": before_dags != after_dags,
    }}
print("RESULT " + json.dumps(result))
"""


#: A DAG file that breaks every rule, to prove the checks can fail.
BAD_DAG = """
import random, socket
from datetime import datetime
from pathlib import Path
from airflow.sdk import dag, task

Path("written-at-parse-time.txt").write_text("side effect")
try:
    socket.create_connection(("127.0.0.1", 9), timeout=0.1)
except OSError:
    pass

@dag(dag_id="bad_dag", schedule=None, start_date=datetime(2024, 1, 1), catchup=True,
     params={"unchecked": 1})
def bad_dag():
    @task
    def t():
        pass
    for i in range(random.randint(1, 10**6) % 2 + random.randint(1, 3)):
        t.override(task_id=f"t{i}_{random.random()}")()

bad_dag()
"""


@pytest.fixture(scope="module")
def parsed(airflow_home: AirflowHome, tmp_path_factory: pytest.TempPathFactory) -> Any:
    from support.airflow import run_airflow_python

    cwd = tmp_path_factory.mktemp("dag-parse-cwd")
    bad_dir = tmp_path_factory.mktemp("bad-dags")
    (bad_dir / "bad_dag.py").write_text(BAD_DAG)
    targets = [(str(DAGS_DIR), f) for f in DAG_FILES] + [(str(bad_dir), "bad_dag.py")]
    out = run_airflow_python(airflow_home, PROBE.format(targets=targets), cwd=cwd)
    return {Path(k).name if Path(k).parent == DAGS_DIR else "BAD": v for k, v in out.items()}


def test_there_are_dags() -> None:
    assert DAG_FILES, "no DAG files found in dags/"


@pytest.mark.parametrize("dag_file", DAG_FILES)
def test_dag_file_loads_and_follows_the_rules(parsed: Any, dag_file: str) -> None:
    info = parsed[dag_file]
    assert not info["errors"], info["errors"]
    assert info["dags"], f"{dag_file} defines no DAG"
    for dag_id, dag in info["dags"].items():
        assert dag["tags"], f"{dag_id} has no tags"
        assert dag["doc_md"], f"{dag_id} has no doc_md"
        assert isinstance(dag["retries"], int) and dag["retries"] >= 1, (
            f"{dag_id}: default_args retries is {dag['retries']!r}"
        )
        assert dag["catchup"] is False, f"{dag_id} has catchup on"
        assert dag["stable"], f"{dag_id} differs between two parses (randomness or time)"
        for name, schema in dag["params"].items():
            assert schema.get("type"), f"{dag_id}: param {name!r} has no JSON Schema type"
        if dag["manual"]:
            assert dag["params"], f"{dag_id} is triggered by hand but declares no Params"


@pytest.mark.parametrize("dag_file", DAG_FILES)
def test_parsing_has_no_side_effects(parsed: Any, dag_file: str) -> None:
    info = parsed[dag_file]
    assert info["side_effects"] == [], info["side_effects"]
    assert not info["cwd_changed"], "parsing wrote to the working directory"
    assert not info["dags_changed"], "parsing changed files in dags/"


def test_the_checks_catch_a_bad_dag(parsed: Any) -> None:
    bad = parsed["BAD"]
    assert not bad["errors"]
    dag = bad["dags"]["bad_dag"]
    assert not dag["tags"] and not dag["doc_md"] and not dag["retries"]
    assert dag["catchup"] is True and dag["stable"] is False
    assert dag["params"] == {"unchecked": {}}
    assert any(e.startswith("socket connect") for e in bad["side_effects"])
    assert bad["cwd_changed"]


def test_the_replay_dag_is_manual_with_a_validated_form(parsed: Any) -> None:
    replay = parsed["kafka_archive_replay.py"]["dags"]["kafka_archive_replay"]
    assert replay["manual"]
    assert replay["params"]["partition_mapping"]["enum"] == ["same", "murmur2", "round-robin"]


def test_the_group_offsets_dag_is_manual_with_the_group_form(parsed: Any) -> None:
    from kafka_archive.airflow.group_tasks import PARAMS_SCHEMA

    dag = parsed["kafka_archive_group_offsets.py"]["dags"]["kafka_archive_group_offsets"]
    assert dag["manual"]
    assert set(dag["params"]) == set(PARAMS_SCHEMA)
    assert dag["params"]["group"]["minLength"] == 1  # required in the form
    assert dag["params"]["at"]["type"] == ["null", "string"]
