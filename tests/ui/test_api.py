"""The on-call JSON API (kafka_archive.ui): its answers are the CLI's, every endpoint needs a
user, launching needs trigger permission, and bad input is a 4xx JSON error, never a 500."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from kafka_archive.airflow.replay_tasks import PARAMS_SCHEMA
from kafka_archive.settings import load_settings
from kafka_archive.ui.access import CSRF_HEADER
from kafka_archive.ui.api import URL_PREFIX, build_app
from kafka_archive.ui.models import ReplayRequest
from support.catalog_data import START_MS, History, archived_catalog
from support.cli_json import cli
from ui_fakes import Conn, RecordingLauncher, TokenAccess

C = "c1"
API = f"{URL_PREFIX}/api/v1"
OP = {"Authorization": "Bearer op-token"}
VIEWER = {"Authorization": "Bearer viewer-token"}
SECRET = "s3cr3t-pass-word"


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> tuple[History, str, str]:
    return archived_catalog(tmp_path_factory.mktemp("ui"), cluster=C)


@pytest.fixture
def launcher() -> RecordingLauncher:
    return RecordingLauncher(
        connections={"target_kafka": Conn("localhost", 19092, login="u", password=SECRET)}
    )


def make_app(archive: tuple[History, str, str], launcher: RecordingLauncher) -> FastAPI:
    _hist, store, db = archive
    app = build_app(
        settings=lambda: load_settings({"db": db, "store": store}, env={}),
        access=TokenAccess(),
        launcher=launcher,
    )
    root = FastAPI()  # as Airflow's API server mounts plugin apps
    root.mount(URL_PREFIX, app)
    return root


@pytest.fixture
def client(archive: tuple[History, str, str], launcher: RecordingLauncher) -> TestClient:
    return TestClient(make_app(archive, launcher))


def _replay_body(**over: Any) -> dict[str, Any]:
    return {"cluster": C, "topic": "orders", "from": "earliest", "target": "target_kafka", **over}


# -- access ------------------------------------------------------------------------------


def _every_route(client: TestClient) -> list[tuple[str, str]]:
    spec = client.get(f"{API}/openapi.json", headers=OP).json()
    # (the app's "/" only redirects to the page in Airflow's UI, and its bundle is code: no
    # data; tests/ui/test_page.py)
    routes = [("GET", f"{API}/openapi.json")]
    for path, ops in spec["paths"].items():
        concrete = path.replace("{cluster}", C).replace("{topic}", "orders")
        concrete = concrete.replace("{partition}", "0").replace("{group}", "billing")
        routes += [(m.upper(), URL_PREFIX + concrete.replace("{run_id}", "x")) for m in ops]
    return routes


def test_no_endpoint_answers_without_a_user(client: TestClient) -> None:
    routes = _every_route(client)
    assert len(routes) >= 14
    for method, url in routes:
        for headers in ({}, {"Authorization": "Bearer forged"}, {"Cookie": "_token=forged"}):
            got = client.request(method, url, headers=headers, json=_replay_body())
            assert got.status_code == 401, (method, url, headers, got.text)
            if url.startswith(API):
                assert got.json()["error"] == "not_authenticated"


def test_a_user_without_read_access_reads_nothing(client: TestClient) -> None:
    got = client.get(f"{API}/clusters", headers={"Authorization": "Bearer nobody-token"})
    assert got.status_code == 403
    assert got.json()["error"] == "forbidden"


def test_a_viewer_reads_but_cannot_launch_or_apply(
    client: TestClient, launcher: RecordingLauncher
) -> None:
    assert client.get(f"{API}/clusters", headers=VIEWER).status_code == 200
    assert client.get(f"{API}/whoami", headers=VIEWER).json() == {
        "user": "viewer",
        "can_trigger": False,
        "can_apply_groups": False,
        "can_restore": False,
    }
    group = {"cluster": C, "topic": "orders", "group": "billing"}
    for path, body, dag in [
        ("replay/launch", _replay_body(), "kafka_archive_replay"),
        ("replay/preview", _replay_body(), "kafka_archive_replay"),
        ("groups/translate/preview", group, "kafka_archive_group_offsets"),
        ("groups/translate/apply", group, "kafka_archive_group_offsets"),
    ]:
        got = client.post(f"{API}/{path}", headers=VIEWER, json=body)
        assert got.status_code == 403, got.text
        assert dag in got.json()["message"]
    assert launcher.triggered == []


def test_a_cookie_post_needs_the_csrf_header(
    client: TestClient, launcher: RecordingLauncher
) -> None:
    client.cookies.set("_token", "op-token")
    refused = client.post(f"{API}/replay/launch", json=_replay_body())
    assert refused.status_code == 403
    assert refused.json()["error"] == "csrf"
    assert launcher.triggered == []
    ok = client.post(f"{API}/replay/launch", json=_replay_body(), headers={CSRF_HEADER: "1"})
    assert ok.status_code == 201, ok.text
    assert len(launcher.triggered) == 1
    # reads by cookie need no header
    assert client.get(f"{API}/clusters").status_code == 200


# -- the CLI's answers -------------------------------------------------------------------


@pytest.mark.parametrize("form", ["iso", "epoch"])
def test_offsets_answer_equals_the_cli_json(
    client: TestClient, archive: tuple[History, str, str], form: str
) -> None:
    _hist, store, db = archive
    at_ms = START_MS + 97_000
    at = (
        datetime.fromtimestamp(at_ms / 1000, tz=UTC).isoformat().replace("+00:00", "Z")
        if form == "iso"
        else str(at_ms)
    )
    code, lines, out = cli(
        "catalog", "offsets", "--cluster", C, "--topic", "orders", "--at", at,
        "--db", db, "--store", store, "--json",
    )  # fmt: skip
    assert code == 0, out
    got = client.get(f"{API}/clusters/{C}/topics/orders/offsets", params={"at": at}, headers=OP)
    assert got.status_code == 200, got.text
    body = got.json()
    assert body["items"] == lines
    assert all(item["exact"] for item in body["items"])
    assert body["at"] == {
        "input": at,
        "ms": at_ms,
        "utc": datetime.fromtimestamp(at_ms / 1000, tz=UTC).isoformat(timespec="milliseconds"),
    }


def test_topics_stats_gaps_and_locate_equal_the_cli_json(
    client: TestClient, archive: tuple[History, str, str]
) -> None:
    _hist, store, db = archive
    base = ("--cluster", C, "--db", db)
    frm, to = str(START_MS - 60_000), str(START_MS + 3_600_000)
    cases = [
        (("topics", *base), f"clusters/{C}/topics", {}),
        (("gaps", *base), f"clusters/{C}/gaps", {}),
        (
            ("stats", *base, "--topic", "orders", "--from", frm, "--to", to, "--bucket", "2m"),
            f"clusters/{C}/topics/orders/stats",
            {"from": frm, "to": to, "bucket_ms": 120_000},
        ),
    ]
    for args, path, params in cases:
        code, lines, out = cli("catalog", *args, "--json")
        assert code == 0, out
        got = client.get(f"{API}/{path}", params=params, headers=OP)
        assert got.status_code == 200, got.text
        assert got.json()["items"] == lines, path
    assert sum(b["records"] for b in lines) > 0
    code, lines, out = cli(
        "catalog", "locate", *base, "--topic", "orders", "-p", "1", "--offset", "17",
        "--store", store, "--json",
    )  # fmt: skip
    got = client.get(
        f"{API}/clusters/{C}/topics/orders/partitions/1/locate", params={"offset": 17}, headers=OP
    )
    assert got.json() == lines[0]


def test_group_offsets_at_t_with_lag_behind_the_archive(
    client: TestClient, archive: tuple[History, str, str]
) -> None:
    hist, _store, db = archive
    (group, topic, partition), commits = next(
        (k, v) for k, v in sorted(hist.commits.items()) if k[1] == "orders" and len(v) > 1
    )
    at_ms = commits[-1][0] + 1
    code, lines, out = cli(
        "catalog", "group-offsets", "--cluster", C, "--group", group, "--at", str(at_ms),
        "--db", db, "--json",
    )  # fmt: skip
    assert code == 0, out
    got = client.get(
        f"{API}/clusters/{C}/groups/{group}/offsets", params={"at": str(at_ms)}, headers=OP
    ).json()
    assert got["items"] == lines
    row = next(b for b in got["behind"] if (b["topic"], b["partition"]) == (topic, partition))
    offsets = client.get(
        f"{API}/clusters/{C}/topics/{topic}/offsets", params={"at": str(at_ms)}, headers=OP
    ).json()["items"]
    end = next(a["offset"] for a in offsets if a["partition"] == partition)
    committed = next(
        i["offset"] for i in lines if (i["topic"], i["partition"]) == (topic, partition)
    )
    if end >= 0:
        assert row["end_offset"] == end
    assert row["lag"] == max(row["end_offset"] - committed, 0)


# -- bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "params", "status", "error"),
    [
        ("clusters/c1/topics/orders/offsets", {"at": "yesterday-ish"}, 400, "bad_time"),
        ("clusters/c1/topics/orders/offsets", {"at": "99999999999999999999"}, 400, "bad_time"),
        ("clusters/c1/topics/nosuch/offsets", {"at": "-2h"}, 404, "not_found"),
        ("clusters/c1/topics/orders/offsets", {"at": "-2h", "partition": 2**40}, 422, None),
        ("clusters/c1/topics/orders/stats", {"from": "-1h", "bucket_ms": 1}, 422, None),
        # issue 20.7: a range too large (or inverted) is a bad request, not "not found"
        (
            "clusters/c1/topics/orders/stats",
            {"from": "1970-01-01T00:00:00Z", "bucket_ms": 60_000},
            400,
            "bad_request",
        ),
        ("clusters/c1/topics/orders/stats", {"from": "now", "to": "-1h"}, 400, "bad_request"),
        ("clusters/c1/topics/nope/stats", {"from": "-1h"}, 404, "not_found"),
        ("clusters/c1/topics/orders/partitions/9999999999999/locate", {"offset": 1}, 422, None),
        ("time", {"at": ""}, 400, "bad_time"),
        ("nowhere", {}, 404, "not_found"),
    ],
)
def test_bad_input_is_a_4xx_json_error(
    client: TestClient, path: str, params: dict[str, Any], status: int, error: str | None
) -> None:
    got = client.get(f"{API}/{path}", params=params, headers=OP)
    assert got.status_code == status, got.text
    body = got.json()
    # the shape the page relies on, and the request field at fault (null: the whole request)
    assert set(body) == {"error", "message", "hint", "field"}
    assert body["message"]
    if error:
        assert body["error"] == error


def test_time_shows_the_resolved_utc_instant(client: TestClient) -> None:
    before = int(datetime.now(UTC).timestamp() * 1000)
    got = client.get(f"{API}/time", params={"at": "now-30m"}, headers=OP).json()
    after = int(datetime.now(UTC).timestamp() * 1000)
    assert before - 1_800_000 <= got["ms"] <= after - 1_800_000
    assert got["utc"].endswith("+00:00")


# -- replay ------------------------------------------------------------------------------


def test_the_request_model_is_the_dags_params() -> None:
    fields = {f.alias or name: f for name, f in ReplayRequest.model_fields.items()}
    form_only = {"dry_run", "spark_master", "spark_threshold_bytes"}
    assert set(fields) == set(PARAMS_SCHEMA) - form_only
    for name, field in fields.items():
        default = PARAMS_SCHEMA[name][0]
        if not field.is_required():
            assert field.get_default(call_default_factory=True) == default, name


def test_launch_triggers_the_dag_with_validated_params(
    client: TestClient, launcher: RecordingLauncher
) -> None:
    bad = client.post(f"{API}/replay/launch", headers=OP, json=_replay_body(**{"from": "soon"}))
    assert bad.status_code == 400, bad.text
    assert bad.json()["error"] == "bad_replay_request"
    bad = client.post(
        f"{API}/replay/launch", headers=OP, json=_replay_body(partition_mapping="random")
    )
    assert bad.status_code == 422
    assert launcher.triggered == []
    got = client.post(
        f"{API}/replay/launch", headers=OP, json=_replay_body(partitions=[1], to="latest")
    )
    assert got.status_code == 201, got.text
    ((conf, user),) = launcher.triggered
    assert user == "oncall"
    assert conf["partitions"] == [1] and conf["from"] == "earliest" and conf["to"] == "latest"
    run = got.json()
    assert run["url"] == f"/dags/kafka_archive_replay/runs/{run['run_id']}"
    assert client.get(f"{API}/replay/runs/{run['run_id']}", headers=VIEWER).json()["state"] == (
        "queued"
    )
    launcher.states[run["run_id"]] = "success"
    assert client.get(f"{API}/replay/runs/{run['run_id']}", headers=OP).json()["state"] == (
        "success"
    )
    assert client.get(f"{API}/replay/runs/nope", headers=OP).status_code == 404


@pytest.mark.parametrize("route", ["launch", "preview"])
@pytest.mark.parametrize(
    "field,key",
    [
        ("target_config", "sasl.password"),
        ("target_config", "sasl.oauthbearer.client.secret"),
        ("target_config", "ssl.key.password"),
        ("target_config", "ssl.keystore.password"),
        ("target_config", "ssl.key.pem"),
        ("target_config", "SSL.Key.Password"),
        ("topic_config", "sasl.password"),
    ],
)
def test_a_secret_setting_is_refused_and_never_stored(
    client: TestClient, launcher: RecordingLauncher, route: str, field: str, key: str
) -> None:
    """Issue 20.6: a run's conf is readable by every viewer, so a secret typed into the page
    is refused (422, the key named, the value never echoed) and nothing is triggered."""
    body = _replay_body(**{field: {"security.protocol": "SASL_SSL", key: SECRET}})
    got = client.post(f"{API}/replay/{route}", headers=OP, json=body)
    assert got.status_code == 422, got.text
    out = got.json()
    assert out["error"] == "secret_in_request"
    assert f"{field}.{key}" in out["message"]
    assert "Airflow connection" in out["hint"]
    assert SECRET not in got.text
    assert launcher.triggered == []
    # ordinary settings still go through
    ok = client.post(
        f"{API}/replay/launch",
        headers=OP,
        json=_replay_body(target_config={"security.protocol": "SASL_SSL", "sasl.username": "u"}),
    )
    assert ok.status_code == 201, ok.text


def test_preview_is_the_services_dry_run_and_sends_no_secret(
    client: TestClient, archive: tuple[History, str, str]
) -> None:
    from kafka_archive.airflow.replay_tasks import resolve_target, spec_from_params
    from kafka_archive.services.replay import ReplayService

    _hist, store, db = archive
    body = _replay_body(partitions=[0, 2])
    got = client.post(
        f"{API}/replay/preview", params={"check_target": False}, headers=OP, json=body
    )
    assert got.status_code == 200, got.text
    assert SECRET not in got.text
    out = got.json()
    conn = Conn("localhost", 19092, login="u", password=SECRET)
    params = ReplayRequest.model_validate(body).params()
    with ReplayService(load_settings({"db": db, "store": store}, env={})) as svc:
        expect = svc.preview(
            spec_from_params(params, resolve_target("target_kafka", {}, lambda _c: conn)),
            check_target=False,
        )
    assert out["replay_id"] == expect.replay_id
    assert out["summary"]["records"] == sum(p["records"] for p in expect.partitions.values())
    assert out["summary"]["records"] > 0
    assert out["summary"]["objects"] == sum(len(p["objects"]) for p in expect.partitions.values())
    assert sorted(out["partitions"]) == ["0", "2"]


def test_a_create_topic_preview_carries_the_planned_topic_config(
    client: TestClient, archive: tuple[History, str, str]
) -> None:
    """The page's "create target topic" fields reach the plan: the preview's ``topic_config``
    is the service's, with the override, no source config and the replication factor."""
    from kafka_archive.airflow.replay_tasks import spec_from_params
    from kafka_archive.services.replay import ReplayService

    _hist, store, db = archive
    body = _replay_body(
        target="localhost:9",
        create_topic=True,
        topic_config={"retention.ms": "-1", "cleanup.policy": "delete"},
        no_source_config=True,
        replication_factor=3,
    )
    got = client.post(
        f"{API}/replay/preview", params={"check_target": False}, headers=OP, json=body
    )
    assert got.status_code == 200, got.text
    settings = got.json()["topic_config"]["settings"]
    assert settings["configs"] == [
        {"name": "cleanup.policy", "value": "delete", "source": "override"},
        {"name": "retention.ms", "value": "-1", "source": "override"},
    ]
    assert settings["replication_factor"] == 3
    assert settings["dropped"] == []
    assert settings["notes"]  # this archive holds no metadata history: the note says so
    with ReplayService(load_settings({"db": db, "store": store}, env={})) as svc:
        params = ReplayRequest.model_validate(body).params()
        expect = svc.preview(spec_from_params(params), check_target=False)
    assert got.json()["topic_config"] == expect.topic_config
    bad = client.post(
        f"{API}/replay/preview",
        params={"check_target": False},
        headers=OP,
        json={**body, "replication_factor": 0},
    )
    assert bad.status_code == 422, bad.text


def test_a_runs_state_carries_its_replays_progress(
    client: TestClient, launcher: RecordingLauncher, archive: tuple[History, str, str]
) -> None:
    from kafka_archive.airflow.replay_tasks import spec_from_params
    from kafka_archive.services.replay import ReplayService

    _hist, store, db = archive
    body = _replay_body(partitions=[2], target="localhost:9")
    run = client.post(f"{API}/replay/launch", headers=OP, json=body).json()
    before = client.get(f"{API}/replay/runs/{run['run_id']}", headers=OP).json()
    assert before["replay_id"] is None and before["replay"] is None
    # what the DAG's plan task does: plan, register, return the replay id
    with ReplayService(load_settings({"db": db, "store": store}, env={})) as svc:
        plan = svc.plan(spec_from_params(run["params"]), register=True)
        expect = svc.status(replay_id=plan.replay_id)[0]
    launcher.replay_ids[run["run_id"]] = plan.replay_id
    got = client.get(f"{API}/replay/runs/{run['run_id']}", headers=OP).json()
    assert got["replay_id"] == plan.replay_id
    assert got["replay"] == expect
    assert got["replay"]["replay_id"] == plan.replay_id and got["replay"]["topic"] == "orders"


def test_connections_are_listed_by_id_only(client: TestClient) -> None:
    got = client.get(f"{API}/connections", headers=VIEWER)
    assert got.json() == {"items": ["target_kafka"]}
    assert SECRET not in got.text


def test_the_page_is_airflows_and_its_address_leads_there(client: TestClient) -> None:
    """The page is rendered by Airflow's UI (react_apps; tests/ui/test_page.py): the app's
    own address redirects a logged-in user there."""
    got = client.get(f"{URL_PREFIX}/", cookies={"_token": "viewer-token"}, follow_redirects=False)
    assert got.status_code == 307
    assert got.headers["location"] == "../plugin/kafka-archive/"


def test_openapi_describes_the_versioned_api(client: TestClient) -> None:
    spec = client.get(f"{API}/openapi.json", headers=OP).json()
    assert spec["servers"] == [{"url": URL_PREFIX}]
    assert all(p.startswith("/api/v1/") for p in spec["paths"])
    assert "/api/v1/replay/launch" in spec["paths"]


def test_holes_carry_the_times_around_them(
    tmp_path_factory: pytest.TempPathFactory, launcher: RecordingLauncher
) -> None:
    from kafka_archive.catalog.build import InProcessRunner, build_catalog
    from kafka_archive.catalog.db import open_catalog
    from support.catalog_data import archived_history

    root = tmp_path_factory.mktemp("ui_holes")
    _hist, store, _n = archived_history(root, cluster=C)
    logs = sorted(o.key for o in store.list(f"{C}/orders/0/") if o.key.endswith(".log"))
    store.delete(logs[1])  # a middle segment: records on both sides of the hole
    db = str(root / "catalog.db")
    with open_catalog(db, create=True) as cat:
        build_catalog(cat, store.uri, runner=InProcessRunner())
    client = TestClient(make_app((_hist, store.uri, db), launcher))
    got = client.get(f"{API}/clusters/{C}/topics/orders/holes", headers=OP)
    assert got.status_code == 200, got.text
    items = got.json()["items"]
    _code, lines, out = cli("catalog", "gaps", "--cluster", C, "--db", db, "--json")
    assert lines, out
    assert [{k: v for k, v in i.items() if k != "time_span"} for i in items] == [
        g for g in lines if g["topic"] == "orders"
    ]
    missing = next(i for i in items if i["kind"] == "missing" and i["partition"] == 0)
    span = missing["time_span"]
    before = client.get(
        f"{API}/clusters/{C}/topics/orders/partitions/0/locate",
        params={"offset": missing["start_offset"] - 1},
        headers=OP,
    ).json()
    after = client.get(
        f"{API}/clusters/{C}/topics/orders/partitions/0/locate",
        params={"offset": missing["end_offset"] + 1},
        headers=OP,
    ).json()
    assert span == {"start": before["timestamp"], "end": after["timestamp"]}


def test_a_bug_is_a_json_500_without_details(
    archive: tuple[History, str, str], launcher: RecordingLauncher
) -> None:
    def broken() -> Any:
        raise RuntimeError(f"password={SECRET} in a bug")

    app = build_app(settings=broken, access=TokenAccess(), launcher=launcher)
    client = TestClient(app, raise_server_exceptions=False)
    got = client.get("/api/v1/clusters", headers=OP)
    assert got.status_code == 500
    assert got.json()["error"] == "internal"
    assert SECRET not in got.text and "Traceback" not in got.text


@pytest.mark.parametrize(
    ("path", "params", "field", "words"),
    [
        # issue 23: an empty T said "Field required - see .../openapi.json"
        ("clusters/c1/topics/orders/offsets", {}, "at", "Time T is missing"),
        ("clusters/c1/topics/orders/offsets", {"at": ""}, "at", "Time T: cannot read an empty"),
        ("clusters/c1/topics/orders/offsets", {"at": "yesterday-ish"}, "at", "yesterday-ish"),
        ("time", {"at": "99999999999999999999"}, "at", "99999999999999999999"),
        ("clusters/c1/topics/orders/stats", {"from": "-1h", "to": "nope"}, "to", "nope"),
        ("clusters/c1/topics/orders/stats", {}, "from", "From is missing"),
        ("clusters/c1/topics/orders/offsets", {"at": "-2h", "partition": 2**40}, "partition", ""),
        # a partition the archive does not hold is about the partition, not the topic
        ("clusters/c1/topics/orders/offsets", {"at": "-2h", "partition": 99}, "partition", "99"),
    ],
)
def test_errors_name_the_field_in_the_pages_words(
    client: TestClient, path: str, params: dict[str, Any], field: str, words: str
) -> None:
    """The page places each message next to the field it is about (``field``), in its own
    words: no CLI option, no pointer to the OpenAPI document."""
    got = client.get(f"{API}/{path}", params=params, headers=OP)
    assert 400 <= got.status_code < 500, got.text
    body = got.json()
    assert body["field"] == field, body
    assert words in body["message"], body
    text = f"{body['message']} {body['hint'] or ''}"
    assert "openapi" not in text and "--" not in text and "Field required" not in text


def test_the_counts_are_named_as_everywhere(client: TestClient) -> None:
    """Issue 23, point 4: the page names its numbers with the labels the CLI and the user
    guide use (kafka_archive.counts)."""
    from kafka_archive.counts import LEGEND

    got = client.get(f"{API}/counts", headers=OP)
    assert got.status_code == 200, got.text
    assert {i["label"]: i["meaning"] for i in got.json()["items"]} == LEGEND
