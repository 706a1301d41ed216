"""The plugin inside a real Airflow: Airflow's plugin manager loads it from the repository's
plugins/ folder, Airflow's API server app mounts it, Airflow's auth manager decides: a viewer
reads (the catalog named by an Airflow Variable) but cannot launch; an operator's launch is a
DAG run of kafka_archive_replay in Airflow's database, triggered by that user, with the request
as its conf."""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.airflow import AirflowHome, run_airflow_python
from support.catalog_data import archived_catalog

pytest_plugins = ["support.airflow"]

PROBE = r"""
import json, subprocess, sys
from pathlib import Path

airflow = Path(sys.executable).with_name("airflow")
subprocess.run([str(airflow), "dags", "reserialize"], check=True, capture_output=True)
import os
subprocess.run([str(airflow), "variables", "set", "kafka_archive_db", os.environ["UI_TEST_DB"]],
               check=True, capture_output=True)
subprocess.run([str(airflow), "connections", "add", "kafka_prod", "--conn-type", "generic",
                "--conn-host", "prod-1:9092", "--conn-password", "db-secret-pw"],
               check=True, capture_output=True)

from airflow import plugins_manager
plugins, errors = plugins_manager._get_plugins()
ours = [p for p in plugins if p.name == "kafka_archive_ui"]

from airflow.api_fastapi.app import create_app, get_auth_manager
from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
from fastapi.testclient import TestClient

app = create_app("all")
am = get_auth_manager()
token = {r: am.generate_jwt(SimpleAuthManagerUser(username=r, role=r)) for r in ("viewer", "op")}
client = TestClient(app)

def call(method, path, role=None, **kw):
    headers = {"Authorization": f"Bearer {token[role]}"} if role else {}
    r = client.request(method, "/kafka-archive/api/v1" + path, headers=headers, **kw)
    return {"status": r.status_code, "body": r.json()}

body = {"cluster": "c1", "topic": "orders", "from": "earliest", "target": "localhost:9"}
out = {
    "loaded": len(ours),
    # ours: anything about the plugin's entry file, its package, or its name
    "our_errors": {
        k: v for k, v in errors.items()
        if "kafka_archive_ui" in k + v or "kafka_archive/ui" in k
    },
    "views": [v["name"] for p in ours for v in p.external_views],
    "react_apps": [a for p in ours for a in p.react_apps],
    "anonymous": call("GET", "/clusters"),
    "forged": client.get("/kafka-archive/api/v1/clusters",
                         headers={"Authorization": "Bearer not.a.jwt"}).status_code,
    "viewer_read": call("GET", "/clusters", "viewer"),
    "viewer_whoami": call("GET", "/whoami", "viewer"),
    "viewer_launch": call("POST", "/replay/launch", "viewer", json=body),
    "op_launch": call("POST", "/replay/launch", "op", json=body),
}
# the Airflow UI's session cookie: reads need nothing more, a POST needs the CSRF header
cookie_client = TestClient(app, cookies={"_token": token["op"]})
out["cookie_read"] = cookie_client.get("/kafka-archive/api/v1/whoami").json()
out["cookie_post_bare"] = cookie_client.post(
    "/kafka-archive/api/v1/replay/launch", json=body
).json()
out["cookie_page"] = cookie_client.get("/kafka-archive/?topic=orders",
                                      follow_redirects=False).headers.get("location")
# what Airflow's UI asks to build its menus and routes (the plugins its UI renders)
ui_plugins = cookie_client.get("/api/v2/plugins")
out["ui_react_apps"] = [a for p in ui_plugins.json()["plugins"] for a in p["react_apps"]]
bundle_url = out["react_apps"][0]["bundle_url"] if out["react_apps"] else ""
bundle = client.get("/" + bundle_url)  # Airflow resolves it against its base URL: "/"
out["bundle"] = {"status": bundle.status_code, "type": bundle.headers.get("content-type"),
                 "umd": "global.AirflowPlugin" in bundle.text}
conns = client.get("/kafka-archive/api/v1/connections",
                   headers={"Authorization": f"Bearer {token['viewer']}"})
out["connections"] = conns.json()
out["connections_text"] = conns.text
run_id = out["op_launch"]["body"].get("run_id")
out["op_run"] = call("GET", f"/replay/runs/{run_id}", "viewer")
# what the plan task returns, as Airflow stores it: the page learns the replay id from it
from airflow.models.xcom import XComModel
XComModel.set("return_value", {"replay_id": "r-0123456789abcdef", "dry_run": False},
              dag_id="kafka_archive_replay", task_id="plan", run_id=run_id)
out["planned_run"] = call("GET", f"/replay/runs/{run_id}", "viewer")
# a run of the group-offsets DAG through the same launcher (the API triggers it after a
# preview, which needs a replay this catalog lacks), and what its apply task returns
from kafka_archive.ui.launcher import AirflowLauncher
group_conf = {"cluster": "c1", "topic": "orders", "group": "billing",
              "at": "2026-01-01T00:00:00.000+00:00", "commits_at": None, "replay_id": None,
              "target_topic": None, "target": "kafka_prod"}
group_run = AirflowLauncher().trigger("kafka_archive_group_offsets", group_conf, user_name="op")
out["group_run_queued"] = call("GET", f"/groups/translate/runs/{group_run.run_id}", "op")
out["group_run_viewer"] = call("GET", f"/groups/translate/runs/{group_run.run_id}", "viewer")
applied = {"at": None, "commits_at": None, "basis": "b", "target": {}, "items": [
    {"group": "billing", "partition": 0, "offset": 7, "applied": True}]}
XComModel.set("return_value", applied, dag_id="kafka_archive_group_offsets",
              task_id="apply", run_id=group_run.run_id)
out["group_run_applied"] = call("GET", f"/groups/translate/runs/{group_run.run_id}", "op")
out["group_run_as_replay"] = call("GET", f"/replay/runs/{group_run.run_id}", "op")

from airflow.models.dagrun import DagRun
from airflow.utils.session import create_session
with create_session() as s:
    runs = [
        {"run_id": r.run_id, "user": r.triggering_user_name, "conf": r.conf}
        for r in s.query(DagRun).filter(DagRun.dag_id == "kafka_archive_replay")
    ]
    group_rows = s.query(DagRun).filter(DagRun.dag_id == "kafka_archive_group_offsets",
                                        DagRun.run_id == group_run.run_id).all()
    out["group_dag_runs"] = [{"user": r.triggering_user_name, "conf": r.conf} for r in group_rows]
out["dag_runs"] = runs
print("RESULT " + json.dumps(out, default=str))
"""


def test_the_plugin_in_airflow(
    airflow_home: AirflowHome, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _hist, store, db = archived_catalog(tmp_path_factory.mktemp("ui_airflow"), cluster="c1")
    out: dict[str, Any] = run_airflow_python(
        airflow_home,
        PROBE,
        extra_env={
            "UI_TEST_DB": db,  # set as the Airflow Variable kafka_archive_db
            "KAFKA_ARCHIVE_STORE": store,
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "viewer:viewer,op:op",
            "AIRFLOW__API_AUTH__JWT_SECRET": "test-secret-for-the-ui-plugin",
            "AIRFLOW_CONN_KAFKA_DR": json.dumps(
                {"conn_type": "generic", "host": "dr-1:9092", "password": "env-secret-pw"}
            ),
        },
    )
    assert out["loaded"] == 1, out
    assert out["our_errors"] == {}
    # the page is a React app in Airflow's own UI (no iframe view), at /plugin/kafka-archive
    assert out["views"] == []
    (app,) = out["react_apps"]
    assert (app["name"], app["url_route"], app["destination"]) == (
        "Kafka archive", "kafka-archive", "nav",
    )  # fmt: skip
    assert [a["url_route"] for a in out["ui_react_apps"]] == ["kafka-archive"], out
    assert out["bundle"] == {"status": 200, "type": "text/javascript; charset=utf-8", "umd": True}
    assert out["anonymous"]["status"] == 401
    assert out["forged"] in (401, 403)
    assert out["viewer_read"]["status"] == 200
    assert [c["cluster"] for c in out["viewer_read"]["body"]["items"]] == ["c1"]
    assert out["viewer_whoami"]["body"] == {
        "user": "viewer",
        "can_trigger": False,
        "can_apply_groups": False,
        "can_restore": False,
    }
    assert out["viewer_launch"]["status"] == 403, out["viewer_launch"]
    assert out["op_launch"]["status"] == 201, out["op_launch"]
    # connection ids from the metadata DB and the environment, never their secrets
    assert {"kafka_prod", "kafka_dr"} <= set(out["connections"]["items"])
    assert "secret-pw" not in out["connections_text"]
    assert out["cookie_read"] == {
        "user": "op",
        "can_trigger": True,
        "can_apply_groups": True,
        "can_restore": True,
    }
    assert out["cookie_post_bare"]["error"] == "csrf"
    assert out["cookie_page"] == "../plugin/kafka-archive/?topic=orders"
    # the Airflow home is shared with other tests of the session, which trigger runs of their
    # own: the launch made exactly one run, the one it answered with
    launched = out["op_launch"]["body"]["run_id"]
    (run,) = [r for r in out["dag_runs"] if r["run_id"] == launched]
    assert run["user"] == "op"
    assert run["conf"]["topic"] == "orders" and run["conf"]["from"] == "earliest"
    assert out["op_run"]["body"]["state"] == "queued", json.dumps(out["op_run"])
    assert out["op_run"]["body"]["replay_id"] is None
    assert out["op_launch"]["body"]["dag_paused"] is True  # Airflow's default for new DAGs
    planned = out["planned_run"]["body"]
    assert planned["replay_id"] == "r-0123456789abcdef", planned
    assert planned["replay"] is None  # not in this catalog's ledger
    # the group-offsets DAG's run: triggered by the user with its Params, its state and, once
    # the apply task returned, the positions (a viewer reads it, as the page polls it by GET,
    # with the cookie alone); it is not a replay run
    ((group_run,),) = [out["group_dag_runs"]]
    assert group_run["user"] == "op" and group_run["conf"]["group"] == "billing", group_run
    queued = out["group_run_queued"]["body"]
    assert (queued["dag_id"], queued["state"], queued["applied"]) == (
        "kafka_archive_group_offsets",
        "queued",
        None,
    ), queued
    assert out["group_run_viewer"]["body"]["state"] == "queued", out["group_run_viewer"]
    applied = out["group_run_applied"]["body"]
    assert applied["applied"]["items"][0]["offset"] == 7, applied
    assert out["group_run_as_replay"]["status"] == 404
