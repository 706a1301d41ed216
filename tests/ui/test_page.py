"""The on-call page: served to a logged-in user only, self-contained (nothing loaded from
another origin), and every API path its script calls exists in the API's OpenAPI description."""

from __future__ import annotations

import re

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from kafka_archive.settings import load_settings
from kafka_archive.ui.api import URL_PREFIX, build_app
from kafka_archive.ui.models import ReplayRequest
from kafka_archive.ui.page import page_html
from ui_fakes import RecordingLauncher, TokenAccess


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


def test_the_page_needs_a_login(client: TestClient) -> None:
    assert client.get(f"{URL_PREFIX}/").status_code == 401
    got = client.get(f"{URL_PREFIX}/", cookies={"_token": "viewer-token"})
    assert got.status_code == 200
    assert got.text == page_html()
    assert got.headers["content-type"].startswith("text/html")


def test_the_page_loads_nothing_from_elsewhere() -> None:
    html = page_html()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "@import" not in html
    assert "http://" not in html and "https://" not in html


def _called_paths(html: str) -> set[str]:
    """The API paths the script calls, with each ``${...}`` as ``{}``."""
    script = html.split("<script>", 1)[1].split("</script>", 1)[0]
    topic = "/clusters/{}/topics/{}"
    found = set()
    # a topic's paths: topicPath() + "...", or `path + "..."` where show() keeps topicPath()
    for m in re.finditer(r"api\(((?:topicPath\(\)|path)\s*\+\s*)?([\"`])(.*?)\2", script):
        path = re.sub(r"\$\{[^}]*\}", "{}", m.group(3))
        found.add((topic if m.group(1) else "") + path)
    # "/replay/runs/" + enc(id)
    return {p + "{}" if p.endswith("/") else p for p in found}


def test_every_path_the_script_calls_is_in_the_api(client: TestClient) -> None:
    spec = client.get(
        f"{URL_PREFIX}/api/v1/openapi.json", headers={"Authorization": "Bearer op-token"}
    ).json()
    api = {re.sub(r"\{[^}]*\}", "{}", p.removeprefix("/api/v1")) for p in spec["paths"]}
    called = _called_paths(page_html())
    assert len(called) >= 13, called
    assert called <= api, called - api
    # and the page offers every endpoint but the replay list and the Prometheus text
    assert api - called == {"/replays", "/clusters/{}/gaps", "/metrics"}


def _function(html: str, name: str) -> str:
    """The source of the script's top-level ``function name(...) {...}``."""
    script = html.split("<script>", 1)[1]
    start = script.index(f"function {name}(")
    return script[start : script.index("\n}\n", start) + 2]


def test_the_replay_form_sends_only_request_fields() -> None:
    """Every key the replay form sends is a field of the request (an unknown one is a 422 on
    the page), and the created topic's settings are among them."""
    body = _function(page_html(), "replayBody").split("return {", 1)[1]
    body = re.sub(r"//[^\n]*", "", body)  # comments name no field
    sent = set(re.findall(r"(?:^|[{,\s])([a-z_]+):\s", body))
    fields = {f.alias or name for name, f in ReplayRequest.model_fields.items()}
    assert {"topic_config", "no_source_config", "replication_factor", "create_topic"} <= sent
    assert sent <= fields, sent - fields


def test_the_created_topics_inputs_show_with_create_topic() -> None:
    html = page_html()
    opts = html.split('id="create-opts"', 1)[1].split("</div>", 1)[0]
    assert " hidden>" in html.split('id="create-opts"', 1)[1][:20]  # off until asked for
    for name in ("topic_config", "no_source_config", "replication_factor"):
        assert f'name="{name}"' in opts, name
    assert '$("create-opts").hidden = !$("replay").create_topic.checked' in html


#: the page's own constants and already escaped parts (anything else must be esc()'d)
SAFE = {"id", "rf", 'f.level === "error" ? "bad" : "warn"', 'f.hint ? " - " + esc(f.hint) : ""'}


def test_the_preview_escapes_the_topic_config_it_shows() -> None:
    """Every value of the preview's ``topic_config`` goes through ``esc()`` (config values
    and finding messages come from clusters, not from this page)."""
    for name in ("topicConfigHtml", "rowsTable"):
        src = _function(page_html(), name)
        # innermost ${...}: an outer one (a .map of templates) holds only checked inner ones
        for expr in re.findall(r"\$\{([^{}]*)\}", src):
            assert expr.startswith("esc(") or expr in SAFE, (name, expr)
