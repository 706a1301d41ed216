"""The on-call page as Airflow's UI loads it (issue 23): the plugin's ``react_apps`` entry, the
bundle the API app serves, the old address redirecting to the page in Airflow's shell with its
query, a bundle that brings no React of its own and loads nothing from elsewhere, and every API
path the page's sources call present in the API's OpenAPI description."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from kafka_archive.settings import load_settings
from kafka_archive.ui import react_app_spec
from kafka_archive.ui.api import URL_PREFIX, build_app
from kafka_archive.ui.models import GroupRequest, ReplayRequest, RestoreRequestBody
from kafka_archive.ui.page import BUNDLE_PATH, bundle_js
from ui_fakes import RecordingLauncher, TokenAccess

REPO = Path(__file__).resolve().parents[2]
SOURCES = REPO / "frontend" / "src"


@pytest.fixture(scope="module")
def client() -> TestClient:
    app = build_app(
        settings=lambda: load_settings({}, env={}),
        access=TokenAccess(),
        launcher=RecordingLauncher(),
    )
    root = FastAPI()
    root.mount(URL_PREFIX, app)
    return TestClient(root)


def _sources() -> str:
    return "\n".join(p.read_text() for p in sorted(SOURCES.glob("*.js*")))


def test_the_plugin_declares_a_react_app_in_airflows_shell() -> None:
    spec = react_app_spec()
    digest = hashlib.sha256(bundle_js()).hexdigest()[:12]
    assert spec == {
        "name": "Kafka archive",
        # relative: Airflow resolves it against its <base href> (a base path is kept)
        "bundle_url": f"kafka-archive{BUNDLE_PATH}?v={digest}",
        "destination": "nav",
        "url_route": "kafka-archive",
        "category": "browse",
    }
    plugin = (REPO / "plugins" / "kafka_archive_ui.py").read_text()
    assert "react_apps" in plugin and "external_views" not in plugin.split('"""', 2)[2]


def test_the_bundle_is_served_to_anyone_as_javascript(client: TestClient) -> None:
    got = client.get(f"{URL_PREFIX}{BUNDLE_PATH}")
    assert got.status_code == 200
    assert got.content == bundle_js()
    assert got.headers["content-type"].startswith("text/javascript")
    assert "immutable" in got.headers["cache-control"]  # its URL names its content


def test_the_old_address_leads_to_the_page_in_airflow_with_its_query(client: TestClient) -> None:
    link = f"{URL_PREFIX}/?cluster=demo&topic=orders&at=-2h&group=billing"
    got = client.get(link, follow_redirects=False)
    assert got.status_code == 307
    query = "cluster=demo&topic=orders&at=-2h&group=billing"
    assert got.headers["location"] == f"../plugin/kafka-archive/?{query}"
    bare = client.get(f"{URL_PREFIX}/", follow_redirects=False)
    assert bare.headers["location"] == "../plugin/kafka-archive/"


def test_the_bundle_uses_the_hosts_react_and_chakra() -> None:
    """UMD that puts the page on globalThis.AirflowPlugin, taking React, its JSX runtime, React
    Router and Chakra UI from the globals Airflow's UI sets: no second React in the page."""
    js = bundle_js().decode()
    assert "global.AirflowPlugin = factory(" in js
    hosts = ("global.ChakraUI", "global.ReactJSXRuntime", "global.React", "global.ReactRouterDOM")
    for name in hosts:
        assert name in js, name
    assert "react.production" not in js and "__CLIENT_INTERNALS" not in js
    assert len(js) < 200_000  # the page's own code only


def test_the_page_loads_nothing_from_elsewhere_and_writes_no_raw_html() -> None:
    src = _sources()
    assert not re.search(r"https?://", src)
    assert "dangerouslySetInnerHTML" not in src and "innerHTML" not in src


def _called_paths(src: str) -> set[str]:
    """The API paths the sources call, with each ``${...}`` or ``+ enc(...)`` as ``{}``."""
    topic = "/clusters/{}/topics/{}"
    found = set()
    call = r"api\(\s*(topicPath\([^)]*\)\s*\+\s*)?([\"`])(.*?)\2(\s*\+\s*enc\()?"
    for m in re.finditer(call, src):
        path = re.sub(r"\$\{[^}]*\}", "{}", m.group(3))
        if m.group(4):
            path += "{}"
        found.add((topic if m.group(1) else "") + path)
    return found


def test_every_path_the_page_calls_is_in_the_api(client: TestClient) -> None:
    spec = client.get(
        f"{URL_PREFIX}/api/v1/openapi.json", headers={"Authorization": "Bearer op-token"}
    ).json()
    api = {re.sub(r"\{[^}]*\}", "{}", p.removeprefix("/api/v1")) for p in spec["paths"]}
    called = _called_paths(_sources())
    assert len(called) >= 15, called
    assert called <= api, called - api
    # and the page offers every endpoint but the replay list, the Prometheus text, the count
    # labels (for scripts; the page has them built in)
    assert api - called == {"/replays", "/clusters/{}/gaps", "/metrics", "/counts"}


def _keys_of(src: str, function: str) -> set[str]:
    """The object keys a function of the sources returns (``key: value`` at its return)."""
    body = src.split(f"function {function}(", 1)[1].split("\n  }\n", 1)[0]
    if "const out = {" in body:
        body = body.split("const out = {", 1)[1].split("\n    };", 1)[0]
    else:
        body = body.split("return {", 1)[1]
    body = re.sub(r"//[^\n]*", "", body)
    return set(re.findall(r"(?:^|[{,\s])([a-z_]+):\s", body))


def test_the_forms_send_only_request_fields() -> None:
    """Every key the replay and the group forms send is a field of the request (an unknown
    one is a 422), the created topic's settings among them."""
    replay = _keys_of((SOURCES / "replay.jsx").read_text(), "body")
    fields = {f.alias or name for name, f in ReplayRequest.model_fields.items()}
    assert {"topic_config", "no_source_config", "replication_factor", "create_topic"} <= replay
    assert replay <= fields, replay - fields
    group = _keys_of((SOURCES / "groups.jsx").read_text(), "body")
    sent = {"cluster", "topic", "group", "at", "commits_at", "replay_id", "target_topic", "target"}
    assert group == sent
    assert group <= set(GroupRequest.model_fields)
    restore = _keys_of((SOURCES / "restore.jsx").read_text(), "body")
    params = {f.alias or name for name, f in RestoreRequestBody.model_fields.items()}
    assert {"cluster", "topics", "at", "target", "prefix", "groups", "allow_gaps"} <= restore
    assert restore <= params, restore - params
