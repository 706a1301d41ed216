"""The on-call API's health view and metrics (kafka_archive.ui.status_routes): ``/status`` is
what ``kafka-archive status --json`` answers, ``/metrics`` the catalog's Prometheus text; both
need a user."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from kafka_archive.settings import load_settings
from kafka_archive.ui.api import URL_PREFIX, build_app
from prometheus_client.parser import text_string_to_metric_families
from support.catalog_data import History, archived_catalog
from support.cli_json import cli
from ui_fakes import RecordingLauncher, TokenAccess

C = "c1"
API = f"{URL_PREFIX}/api/v1"
OP = {"Authorization": "Bearer op-token"}


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> tuple[History, str, str]:
    return archived_catalog(tmp_path_factory.mktemp("ui-status"), cluster=C)


def _client(db: str, store: str) -> TestClient:
    app = build_app(
        settings=lambda: load_settings({"db": db, "store": store} if db else {}, env={}),
        access=TokenAccess(),
        launcher=RecordingLauncher(),
    )
    from fastapi import FastAPI

    root = FastAPI()
    root.mount(URL_PREFIX, app)
    return TestClient(root)


def test_status_is_the_clis_answer(archive: tuple[History, str, str]) -> None:
    _hist, store, db = archive
    got = _client(db, store).get(f"{API}/status", headers=OP)
    assert got.status_code == 200, got.text
    body = got.json()
    code, [line], out = cli("status", "--db", db, "--json")
    assert code == 0, out
    line.pop("kind")
    for key in ("level", "needs_human", "brokers", "integrity", "replays", "prunes"):
        if key == "brokers":  # ages differ by the moments they were read
            assert [(b["cluster"], b["broker"], b["segments"]) for b in body[key]] == [
                (b["cluster"], b["broker"], b["segments"]) for b in line[key]
            ]
        else:
            assert body[key] == line[key], key
    assert [(c["area"], c["subject"], c["level"]) for c in body["checks"]] == [
        (c["area"], c["subject"], c["level"]) for c in line["checks"]
    ]


def test_metrics_is_prometheus_text_of_the_catalog(archive: tuple[History, str, str]) -> None:
    _hist, store, db = archive
    got = _client(db, store).get(f"{API}/metrics", headers=OP)
    assert got.status_code == 200, got.text
    assert got.headers["content-type"].startswith("text/plain")
    fams = {f.name: f for f in text_string_to_metric_families(got.text)}
    assert fams["kafka_archive_catalog_up"].samples[0].value == 1
    segs = {s.labels["topic"]: s.value for s in fams["kafka_archive_store_segments"].samples}
    assert segs and all(v > 0 for v in segs.values())


def test_both_need_a_user_and_a_catalog(archive: tuple[History, str, str]) -> None:
    _hist, store, db = archive
    client = _client(db, store)
    for path in ("/status", "/metrics"):
        assert client.get(f"{API}{path}").status_code == 401
    no_catalog = _client("", "")
    for path in ("/status", "/metrics"):
        got = no_catalog.get(f"{API}{path}", headers=OP)
        assert got.status_code == 503, got.text  # as every catalog route answers it
        assert got.json()["error"] == "not_configured"
        assert "KAFKA_ARCHIVE_DB" in got.json()["hint"]
