"""The "Replay from here" form's created-topic fields, in Chromium against the API in-process.

No Airflow here (tests/ui/test_browser.py runs the whole stack): the page is loaded from a
made-up origin whose requests Playwright hands to the API's ``TestClient`` over an archived
catalog, as the operator's token. What runs is the page's own script in a real browser: the
inputs appear with "create target topic", the topic configs go out as an object and come back
as the preview's table, a malformed line is an error on the page, and a preview whose target
check found an error (its JSON built from the replay's own models) leaves Launch off with the
reason shown.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_support import launch_chromium, require_browser
from fastapi.testclient import TestClient
from kafka_archive.ui.api import URL_PREFIX
from support.catalog_data import START_MS, History, archived_catalog
from test_api import OP, C, make_app
from ui_fakes import RecordingLauncher

ORIGIN = "http://oncall.test"
PAGE = f"{ORIGIN}{URL_PREFIX}/?cluster={C}&topic=orders&at={START_MS}"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> TestClient:
    archive: tuple[History, str, str] = archived_catalog(tmp_path_factory.mktemp("form"), cluster=C)
    return TestClient(make_app(archive, RecordingLauncher()))


@pytest.fixture
def page(api: TestClient, tmp_path: Path) -> Iterator[tuple[Any, list[dict[str, Any]]]]:
    """The page, every request answered by ``api``; the preview bodies it sent."""
    require_browser()
    from playwright.sync_api import sync_playwright

    sent: list[dict[str, Any]] = []
    canned: dict[str, Any] = {}

    def answer(route: Any) -> None:
        req = route.request
        path = req.url.removeprefix(ORIGIN)
        if "/replay/preview" in path:
            sent.append(json.loads(req.post_data))
            if "preview" in canned:
                route.fulfill(status=200, json=canned["preview"])
                return
        headers = {k: v for k, v in req.headers.items() if k.lower() != "cookie"}
        got = api.request(req.method, path, headers={**headers, **OP}, content=req.post_data_buffer)
        route.fulfill(status=got.status_code, body=got.content, headers=dict(got.headers))

    with sync_playwright() as pw:
        ctx = launch_chromium(pw, tmp_path / "profile")
        try:
            ctx.route(f"{ORIGIN}/**", answer)
            p = ctx.new_page()
            p.canned = canned  # the test may fix the preview's answer
            p.goto(PAGE)
            yield p, sent
        finally:
            ctx.close()


def test_the_created_topics_fields_reach_the_preview_and_back(
    page: tuple[Any, list[dict[str, Any]]],
) -> None:
    from playwright.sync_api import expect

    p, sent = page
    expect(p.locator("#offsets tbody tr").first).to_be_visible()
    form = p.locator("#replay")
    form.locator("[name=target_servers]").fill("localhost:9")
    form.locator("[name=check_target]").uncheck()  # no target broker here
    expect(p.locator("#create-opts")).to_be_hidden()
    form.locator("[name=create_topic]").check()
    expect(p.locator("#create-opts")).to_be_visible()

    form.locator("[name=topic_config]").fill("retention.ms=-1\nnot a setting")
    p.locator("#preview").click()
    expect(p.locator("#status")).to_contain_text('line 2: "not a setting" is not NAME=VALUE')
    expect(p.locator("#launch")).to_be_disabled()
    assert sent == []  # refused on the page

    form.locator("[name=topic_config]").fill("# kept forever\nretention.ms = -1\n\nx.y=a=b")
    form.locator("[name=no_source_config]").check()
    form.locator("[name=replication_factor]").fill("3")
    p.locator("#preview").click()
    rows = p.locator("#tc-configs tr:has(td)")
    expect(rows).to_have_count(2)
    assert [rows.nth(i).locator("td").all_inner_texts() for i in range(2)] == [
        ["retention.ms", "-1", "override"],
        ["x.y", "a=b", "override"],
    ]
    expect(p.locator("#topic-config-out")).to_contain_text("note: ")
    expect(p.locator("#launch")).to_be_enabled()
    body = sent[-1]
    assert body["topic_config"] == {"retention.ms": "-1", "x.y": "a=b"}
    assert body["no_source_config"] is True and body["replication_factor"] == 3

    # unchecked, the hidden fields are not sent
    form.locator("[name=create_topic]").uncheck()
    expect(p.locator("#create-opts")).to_be_hidden()
    p.locator("#preview").click()
    expect(p.locator("#tc-configs")).to_have_count(0)
    expect(p.locator("#launch")).to_be_enabled()
    assert sent[-1]["topic_config"] == {} and sent[-1]["replication_factor"] is None
    assert sent[-1]["create_topic"] is False and sent[-1]["no_source_config"] is False


def test_an_error_finding_keeps_launch_off_with_the_reason(
    page: tuple[Any, list[dict[str, Any]]], api: TestClient
) -> None:
    from kafka_archive.replay.planning.topic_config import (
        ConfigChoice,
        ConfigDiff,
        ConfigFinding,
        DroppedConfig,
        TopicSettings,
    )
    from kafka_archive.replay.target.topic import TopicConfigCheck
    from playwright.sync_api import expect

    p, _sent = page
    expect(p.locator("#offsets tbody tr").first).to_be_visible()
    p.locator("#replay [name=target_servers]").fill("localhost:9")
    p.locator("#replay [name=check_target]").uncheck()
    p.locator("#preview").click()
    expect(p.locator("#launch")).to_be_enabled()
    real = p.evaluate("() => document.getElementById('preview-out').textContent")
    assert "Plan" in real

    check = TopicConfigCheck(
        settings=TopicSettings(
            configs=[ConfigChoice(name="retention.ms", value="<b>-1</b>", source="source at T")],
            notes=["a note"],
        ),
        dropped=[DroppedConfig(name="confluent.x", value="1", reason="Confluent's")],
        diffs=[ConfigDiff(name="max.message.bytes", source="2000000", target=None)],
        findings=[
            ConfigFinding(
                level="error",
                name="max.message.bytes",
                message="batches up to 2000000 bytes exceed the target's 1048588",
                hint="set max.message.bytes=2000000",
            ),
            ConfigFinding(level="warning", name="retention.ms", message="old data"),
        ],
    )
    preview = api.post(
        f"{URL_PREFIX}/api/v1/replay/preview",
        params={"check_target": False},
        headers=OP,
        json={"cluster": C, "topic": "orders", "from": "earliest", "target": "localhost:9"},
    ).json()
    preview["topic_config"] = {**check.model_dump(mode="json"), "warnings": check.warnings()}
    p.canned["preview"] = preview
    p.locator("#preview").click()
    expect(p.locator("#launch-blocked")).to_contain_text("max.message.bytes")
    expect(p.locator("#launch")).to_be_disabled()
    out = p.locator("#topic-config-out")
    expect(out).to_contain_text("error: max.message.bytes: batches up to 2000000 bytes")
    expect(out).to_contain_text("warning: retention.ms: old data")
    # escaped: shown as text, not markup
    assert p.locator("#tc-configs td").nth(1).inner_text() == "<b>-1</b>"
    assert p.locator("#tc-dropped td").all_inner_texts() == ["confluent.x", "1", "Confluent's"]
    assert p.locator("#tc-diffs td").all_inner_texts() == ["max.message.bytes", "2000000", "-"]
