"""The on-call page in a real browser, inside a real Airflow (issue 14, point 5).

The demo's data (``kafka-archive demo``'s writer-made 3-broker cluster: topic ``orders`` and
others, records over the last half hour, every codec, transactions, compaction, a crashed
broker), archived and cataloged, is served by ``airflow standalone`` with the repository's
plugins folder; librdkafka's mock cluster, in this process, is the replay target (as in the
demo). Headless Chromium (Debian's ``chromium``, driven by Playwright):

1. logs in to Airflow (simple auth manager) and opens "Kafka archive" from Airflow's Browse menu;
2. picks cluster and topic and types a relative time (``-15m``); the page resolves it to T;
3. the offsets shown per partition are the catalog's answer at T, which is what the broker's
   own lookup gives on the original log dirs (the demo's check);
4. the traffic chart is drawn (the canvas holds pixels of the records colour);
5. "Replay from here" into the mock's bootstrap servers: preview (the plan), then launch;
6. the DAG run the page links to reaches ``success`` in the page's own progress line, and in
   Airflow's REST API it is a run triggered by the logged-in user with the form as Params;
7. the target holds exactly the source's records from each partition's offset at T to the end
   of the archive (keys, values, headers, timestamps: the demo's own check).

Screenshots (PNG) of each step are kept under ``tests/artifacts/ui/`` (git-ignored); the user
guide's copies are in ``docs/images/`` (docs/oncall-page.md).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from browser_support import UI_PASSWORD, UI_USER, AirflowServer, launch_chromium, require_browser
from kafka_archive.demo import (
    CLUSTER,
    TOPIC,
    DemoPaths,
    catalog_offsets,
    expected_records,
    read_target,
    write_cluster,
)

from segment_lib.writer import DemoCluster

pytestmark = pytest.mark.timeout(1500)

#: T as typed into the page: relative, in the middle of the demo's half hour of records
T_INPUT, T_OFFSET_MS = "-15m", -15 * 60_000
PROGRESS_TOPIC = "__kafka_archive_replay_progress"
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts" / "ui"
#: the page's records colour (oncall.html: the bars of the traffic chart)
RECORDS_RGB = (11, 107, 203)


def demo_catalog(root: Path) -> tuple[DemoPaths, DemoCluster]:
    """The demo's data (``kafka-archive demo``'s stage 1: a 3-broker cluster whose records
    span the last half hour), archived from every broker and cataloged in-process - what the
    demo's archive and catalog DAGs make, without running them."""
    from kafka_archive.archive import run_archive
    from kafka_archive.catalog.build import InProcessRunner, build_catalog
    from kafka_archive.catalog.db import open_catalog
    from kafka_archive.store import open_store

    paths = DemoPaths(root)
    cluster = write_cluster(paths)
    store = open_store(paths.store_uri)
    for broker, dirs in sorted(cluster.broker_dirs.items()):
        run_archive(cluster=CLUSTER, broker_id=broker, log_dirs=[str(d) for d in dirs], store=store)
    with open_catalog(paths.db_url, create=True) as cat:
        build_catalog(cat, store.uri, runner=InProcessRunner())
    return paths, cluster


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    require_browser()
    from kafka_archive.embedded_kafka import EmbeddedKafka

    root = tmp_path_factory.mktemp("browser")
    paths, cluster = demo_catalog(root / "demo")
    server = AirflowServer(
        root / "airflow",
        {"KAFKA_ARCHIVE_DB": paths.db_url, "KAFKA_ARCHIVE_STORE": paths.store_uri},
    )
    partitions = sorted(p for (t, p) in cluster.replicas if t == TOPIC)
    with EmbeddedKafka(3) as target:
        target.create_topic(TOPIC, len(partitions))
        # the mock cannot serve CreateTopics: the replay's progress topic is made up front
        target.create_topic(PROGRESS_TOPIC, 4)
        try:
            server.start()
            yield {"paths": paths, "cluster": cluster, "partitions": partitions,
                   "server": server, "target": target}  # fmt: skip
        finally:
            server.stop()


def _ms(iso: str) -> int:
    """Epoch ms of an ISO-8601 instant as the page shows one (``...Z`` or ``+00:00``)."""
    return round(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


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


def _open_from_airflow_nav(page: Any, url: str) -> Any:
    """Log in to Airflow, open Browse -> Kafka archive; the page's frame once it has answered
    (it opens on the first topic at its default time)."""
    from playwright.sync_api import expect

    page.goto(url + "/")
    page.locator("input[name=username]").fill(UI_USER)
    page.locator("input[name=password]").fill(UI_PASSWORD)
    _shot(page, "01-login")
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("button", name="Browse").click()
    page.get_by_role("menuitem", name="Kafka archive").click()
    frame = page.frame_locator("iframe")
    expect(frame.locator("#who")).to_contain_text(UI_USER)
    expect(frame.locator("#offsets tbody tr").first).to_be_visible()
    return frame


def _check_run_in_airflow(
    page: Any, url: str, run_link: Any, *, bootstrap: str, at_ms: int
) -> None:
    """The page's run, seen from Airflow: an ordinary DAG run that succeeded, triggered by the
    logged-in user, with the form as its Params (Airflow's REST API, the browser's session);
    then Airflow's own page of it, at the page's link."""
    from playwright.sync_api import expect

    run_id = run_link.inner_text().strip()
    answer = page.request.get(
        f"{url}/api/v2/dags/kafka_archive_replay/dagRuns/{quote(run_id, safe='')}"
    )
    assert answer.ok, answer.text()
    run = answer.json()
    assert (run["state"], run["triggering_user_name"]) == ("success", UI_USER), run
    assert run["conf"]["target"] == bootstrap and _ms(run["conf"]["from"]) == at_ms, run
    # Airflow 3.3 sandboxes plugin pages without allow-top-navigation, so the page's
    # target=_top link does not navigate from inside Airflow's UI: open its href the way a
    # user would (copy the link), and check it is Airflow's page of this run
    page.goto(url + run_link.get_attribute("href"))
    expect(page.get_by_text(run_id).first).to_be_visible()
    _shot(page, "05-dag-run-in-airflow")


def test_on_call_page_in_chromium(stack: dict[str, Any], tmp_path: Path) -> None:
    from playwright.sync_api import expect

    expect.set_options(timeout=120_000)
    server: AirflowServer = stack["server"]
    paths: DemoPaths = stack["paths"]
    partitions: list[int] = stack["partitions"]
    bootstrap = stack["target"].bootstrap_servers

    with _browser(tmp_path / "profile") as ctx:
        page = ctx.new_page()
        page.set_default_timeout(120_000)
        frame = _open_from_airflow_nav(page, server.url)

        # 2. cluster, topic, time
        expect(frame.locator("#cluster option", has_text=CLUSTER)).to_have_count(1)
        if frame.locator("#cluster").input_value() != CLUSTER:
            frame.locator("#cluster").select_option(CLUSTER)  # the page reloads its topics
            page.wait_for_load_state("networkidle")
        frame.locator("#topic").select_option(TOPIC)
        expect(frame.locator("#topic")).to_have_value(TOPIC)
        # type T, see it resolved (the page asks /time as one types), then Show
        resolved = frame.locator("#resolved")
        form = frame.locator("#replay")
        before, from_before = resolved.inner_text(), form.locator("[name=from]").input_value()
        frame.locator("#at").fill(T_INPUT)  # relative, as the CLI takes it
        expect(resolved).not_to_have_text(before)
        frame.locator("#go").click()
        # the answer shown: T is the offsets' instant, written into the replay form as From
        expect(form.locator("[name=from]")).not_to_have_value(from_before)
        expect(frame.locator("#offsets tbody tr")).to_have_count(len(partitions))
        at_ms = _ms(form.locator("[name=from]").input_value())
        assert _ms(resolved.inner_text().removeprefix("=").strip()) == at_ms
        assert abs(at_ms - (time.time() * 1000 + T_OFFSET_MS)) < 600_000, at_ms

        # 3. the offsets shown are the catalog's at that instant, which are the broker's
        want = catalog_offsets(paths, stack["cluster"], at_ms)
        assert all(w["offset"] == w["broker_lookup_offset"] for w in want), want
        assert _table_offsets(frame) == {w["partition"]: str(w["offset"]) for w in want}
        assert frame.locator("#status").inner_text().strip() == ""
        starts = {w["partition"]: w["offset"] for w in want}

        # 4. the chart is drawn: bars of the records colour on the canvas
        expect(frame.locator("#window")).not_to_be_empty()
        chart = frame.locator("#chart")
        assert chart.evaluate(f"(c) => ({CANVAS_RECORD_PIXELS})({list(RECORDS_RGB)})") > 0
        _shot(page, "02-offsets-and-chart")

        # 5. replay from here (From is T): preview, then launch
        form.locator("[name=target_servers]").fill(bootstrap)
        frame.locator("#preview").click()
        expect(frame.locator("#preview-out p, #status.error").first).to_be_visible()
        assert frame.locator("#status").inner_text().strip() == ""
        expect(frame.locator("#preview-out")).to_contain_text("Plan")
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
        _check_run_in_airflow(page, server.url, run_link, bootstrap=bootstrap, at_ms=at_ms)

    # 7. the target holds the source's records from each offset at T (the demo's own check)
    want_records = expected_records(paths, stack["cluster"], starts)
    assert sum(len(v) for v in want_records.values()) > 0
    assert read_target(bootstrap, partitions) == want_records
