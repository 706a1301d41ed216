"""The on-call page in a real browser, inside a real Airflow (issue 14, point 5).

A catalog of an archived history (cluster ``demo``, topic ``orders``: 3 partitions, every codec,
transactions with commits and aborts, producers with skewed clocks) is served by
``airflow standalone`` with the repository's plugins folder; librdkafka's mock cluster, in this
process, is the replay target. Headless Chromium (Debian's ``chromium``, driven by Playwright):

1. logs in to Airflow (simple auth manager) and opens "Kafka archive" from Airflow's Browse menu;
2. picks cluster and topic and types a time T; the resolved UTC instant is T;
3. the offsets shown per partition are the catalog service's answer at T (exact, with store);
4. the traffic chart is drawn (the canvas holds pixels of the records colour);
5. "Replay from here" into the mock's bootstrap servers: preview (the plan), then launch;
6. the DAG run the page links to reaches ``success`` in the page's own progress line;
7. the target holds exactly the source's committed records from each partition's offset at T.

Screenshots (PNG) of each step are kept under ``tests/artifacts/ui/`` (git-ignored); the user
guide's copies are in ``docs/images/`` (docs/oncall-page.md).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_support import (
    UI_PASSWORD,
    UI_USER,
    AirflowServer,
    committed_records,
    launch_chromium,
    require_browser,
)
from support.catalog_data import History, all_records, archived_catalog

pytestmark = pytest.mark.timeout(1500)

CLUSTER, TOPIC = "demo", "orders"
PARTITIONS = [0, 1, 2]
PROGRESS_TOPIC = "__kafka_archive_replay_progress"
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts" / "ui"
#: the page's records colour (oncall.html: the bars of the traffic chart)
RECORDS_RGB = (11, 107, 203)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    require_browser()
    from kafka_archive.embedded_kafka import EmbeddedKafka

    root = tmp_path_factory.mktemp("browser")
    hist, store, db = archived_catalog(root / "data", cluster=CLUSTER)
    server = AirflowServer(root / "airflow", {"KAFKA_ARCHIVE_DB": db, "KAFKA_ARCHIVE_STORE": store})
    with EmbeddedKafka(3) as target:
        target.create_topic(TOPIC, len(PARTITIONS))
        # the mock cannot serve CreateTopics: the replay's progress topic is made up front
        target.create_topic(PROGRESS_TOPIC, 4)
        try:
            server.start()
            yield {"hist": hist, "store": store, "db": db, "server": server, "target": target}
        finally:
            server.stop()


def _middle_time(hist: History) -> int:
    """A T in the middle of partition 1's records (the chart around it has traffic)."""
    stamps = sorted(r.timestamp for r in all_records(hist.dirs[(TOPIC, 1)]))
    return stamps[len(stamps) // 2]


def _catalog_offsets(db: str, store: str, at_ms: int) -> dict[int, int]:
    from kafka_archive.services.catalog_queries import CatalogQueryService
    from kafka_archive.settings import load_settings

    with CatalogQueryService(load_settings({"db": db, "store": store}, env={})) as svc:
        answers = svc.offsets(CLUSTER, TOPIC, at_ms, None)
    assert all(a.exact for a in answers)
    return {a.partition: a.offset for a in answers}


@contextlib.contextmanager
def _browser(profile: Path) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        ctx = launch_chromium(pw, profile)
        try:
            yield ctx
        finally:
            ctx.close()


def _shot(page: Any, name: str, show: Any = None) -> None:
    """A PNG of Airflow's window under :data:`ARTIFACTS`, the page's ``show`` element (inside
    the iframe) scrolled into view first."""
    if show is not None:
        show.scroll_into_view_if_needed()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def _table_offsets(frame: Any) -> dict[int, str]:
    rows = frame.locator("#offsets tbody tr")
    out: dict[int, str] = {}
    for i in range(rows.count()):
        cells = rows.nth(i).locator("td")
        out[int(cells.nth(0).inner_text())] = cells.nth(1).inner_text().strip()
    return out


CANVAS_RECORD_PIXELS = """([r, g, b]) => {
  const c = document.getElementById("chart");
  const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
  let n = 0;
  for (let i = 0; i < d.length; i += 4) if (d[i] === r && d[i + 1] === g && d[i + 2] === b) n++;
  return n;
}"""


def test_on_call_page_in_chromium(stack: dict[str, Any], tmp_path: Path) -> None:
    from kafka_archive.embedded_kafka import read_to_end
    from kafka_archive.timeparse import format_ms
    from playwright.sync_api import expect

    expect.set_options(timeout=120_000)
    server: AirflowServer = stack["server"]
    at_ms = _middle_time(stack["hist"])
    want_offsets = _catalog_offsets(stack["db"], stack["store"], at_ms)
    bootstrap = stack["target"].bootstrap_servers

    with _browser(tmp_path / "profile") as ctx:
        page = ctx.new_page()
        page.set_default_timeout(120_000)
        # 1. log in, then the page from Airflow's navigation
        page.goto(server.url + "/")
        page.locator("input[name=username]").fill(UI_USER)
        page.locator("input[name=password]").fill(UI_PASSWORD)
        _shot(page, "01-login")
        page.get_by_role("button", name="Sign in").click()
        page.get_by_role("button", name="Browse").click()
        page.get_by_role("menuitem", name="Kafka archive").click()
        frame = page.frame_locator("iframe")
        expect(frame.locator("#who")).to_contain_text(UI_USER)
        # the page opens on the first topic at its default time: wait for that first answer
        expect(frame.locator("#offsets tbody tr").first).to_be_visible()

        # 2. cluster, topic, time
        expect(frame.locator("#cluster option", has_text=CLUSTER)).to_have_count(1)
        if frame.locator("#cluster").input_value() != CLUSTER:
            frame.locator("#cluster").select_option(CLUSTER)  # the page reloads its topics
            page.wait_for_load_state("networkidle")
        frame.locator("#topic").select_option(TOPIC)
        expect(frame.locator("#topic")).to_have_value(TOPIC)
        iso = format_ms(at_ms)
        frame.locator("#at").fill(iso)
        frame.locator("#go").click()
        resolved = frame.locator("#resolved")
        expect(resolved).to_contain_text(re.sub(r"Z$", "", iso)[:19])

        # 3. the offsets shown are the catalog's
        expect(frame.locator("#offsets tbody tr")).to_have_count(len(PARTITIONS))
        assert _table_offsets(frame) == {p: str(o) for p, o in want_offsets.items()}
        assert frame.locator("#status").inner_text().strip() == ""

        # 4. the chart is drawn: bars of the records colour on the canvas
        expect(frame.locator("#window")).not_to_be_empty()
        chart = frame.locator("#chart")
        assert chart.evaluate(f"(c) => ({CANVAS_RECORD_PIXELS})({list(RECORDS_RGB)})") > 0
        _shot(page, "02-offsets-and-chart")

        # 5. replay from here: preview, then launch
        form = frame.locator("#replay")
        assert form.locator("[name=from]").input_value() == iso.replace("+00:00", "Z")
        form.locator("[name=target_servers]").fill(bootstrap)
        frame.locator("#preview").click()
        expect(frame.locator("#preview-out p, #status.error").first).to_be_visible()
        assert frame.locator("#status").inner_text().strip() == ""
        expect(frame.locator("#preview-out")).to_contain_text("Plan")
        expect(frame.locator("#preview-out")).to_contain_text("no holes")
        expect(frame.locator("#launch")).to_be_enabled()
        _shot(page, "03-replay-preview", frame.locator("#preview-out"))
        frame.locator("#launch").click()

        # 6. the DAG run succeeds, as the page's progress line shows
        state = frame.locator("#run-state")
        expect(state).to_have_text("success", timeout=900_000)
        expect(frame.locator("#run-out")).to_contain_text("partitions done")
        run_link = frame.locator("#run-out a")
        assert "/dags/kafka_archive_replay/runs/" in (run_link.get_attribute("href") or "")
        _shot(page, "04-replay-succeeded", frame.locator("#run-out"))

    # 7. the target holds the source's committed records from each offset at T
    got = read_to_end(bootstrap, TOPIC, PARTITIONS, timeout_s=60)
    for p in PARTITIONS:
        want = committed_records(stack["hist"].dirs[(TOPIC, p)], want_offsets[p])
        assert want, p
        assert [(r.key, r.value) for r in got[p]] == want, p
