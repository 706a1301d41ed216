"""The on-call page: served to a logged-in user only, self-contained (nothing loaded from
another origin), and every API path its script calls exists in the API's OpenAPI description."""

from __future__ import annotations

import re

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from kafka_archive.settings import load_settings
from kafka_archive.ui.api import URL_PREFIX, build_app
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
    # and the page offers every endpoint but the replay list
    assert api - called == {"/replays", "/clusters/{}/gaps"}
