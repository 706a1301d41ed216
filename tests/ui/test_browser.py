"""The on-call page in a real browser, inside a real Airflow (issue 14, points 5 and Done-when):
the three runbook scenarios answered on the page, without the CLI.

The demo's data (``./dev demo``'s writer-made 3-broker cluster: topic ``orders`` and
others, every codec, transactions, compaction, a crashed broker, consumer groups committing;
here 900 writer steps, records over the last ~43 minutes), archived and cataloged, is served
by ``airflow standalone`` with the repository's plugins folder; librdkafka's mock cluster, in
this process, is "the other cluster" (the replay target, as in the demo). Headless Chromium
(Debian's ``chromium``, driven by Playwright) logs in to Airflow, opens "Kafka archive" from
Airflow's Browse menu, and:

(a) "a consumer bug ate the last orders": T typed as ``-40m``; the offsets shown per partition
    are the catalog's answer at T, which is the broker's own lookup on the original log dirs;
    the chart is drawn; "Replay from here" into the other cluster: preview, launch; the DAG
    run reaches ``success`` in the page's progress line; the target then holds exactly the
    source's records from each offset at T (keys, values, headers, timestamps);
(b) "the region failed over, consumers must resume 30 minutes back on the other cluster":
    T ``-30m``, group ``billing``: its committed position at T (the archived commits) is the
    catalog's; "Start group G at T on the target" from its archived commits at T: preview,
    apply (a run of ``kafka_archive_group_offsets``, followed on the page to ``success``,
    triggered by the logged-in user); the group's committed offsets on the target
    (AdminClient) are the preview's, and each is the target offset of the source record at the
    group's position (the replay's offset map, checked against the target's records);
(c) "start the new group 10 minutes ago": T ``-10m``, a group that never existed, "at T":
    preview, apply (a DAG run again); its committed offsets on the target are the preview's,
    and the record each points at is the source's record at the offsets-at-T table on screen;

then clicks the page's link to the DAG run and lands on Airflow's own page of that run (an
ordinary run triggered by the logged-in user with the form as its Params, read back through
Airflow's REST API).

Screenshots (PNG) of each step are kept under ``tests/artifacts/ui/`` (git-ignored); the user
guide's copies are in ``docs/images/`` (docs/oncall-page.md).
"""

from __future__ import annotations

import contextlib
import re
import time
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from browser_support import UI_PASSWORD, UI_USER, AirflowServer, launch_chromium, require_browser
from kafka_archive_dev.demo import (
    CLUSTER,
    TOPIC,
    DemoPaths,
    catalog_offsets,
    expected_records,
    group_position_at,
    read_target,
    write_cluster,
)
from kafka_archive_dev.writer import DemoCluster

pytestmark = pytest.mark.timeout(1500)

#: the demo's writer steps: ~43 minutes of records ending a minute before they are written,
#: so that -40m, -30m and -10m all fall inside them while the test runs
DEMO_STEPS = 900
#: the three scenarios' T as typed into the page (relative, as the CLI takes them)
T_REPLAY, T_FAILOVER, T_NEW = "-40m", "-30m", "-10m"
#: the demo group that "fails over" (it commits on orders and payments all along)
FAILOVER_GROUP = "billing"
PROGRESS_TOPIC = "__kafka_archive_replay_progress"
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts" / "ui"
#: the page's records colour (oncall.html: the bars of the traffic chart)
RECORDS_RGB = (11, 107, 203)


def demo_catalog(root: Path) -> tuple[DemoPaths, DemoCluster]:
    """The demo's data (``./dev demo``'s stage 1: a 3-broker cluster whose records
    end a minute ago), archived from every broker and cataloged in-process - what the demo's
    archive and catalog DAGs make, without running them."""
    from kafka_archive.archive import run_archive
    from kafka_archive.catalog.build import InProcessRunner, build_catalog
    from kafka_archive.catalog.db import open_catalog
    from kafka_archive.store import open_store

    paths = DemoPaths(root)
    cluster = write_cluster(paths, steps=DEMO_STEPS)
    store = open_store(paths.store_uri)
    for broker, dirs in sorted(cluster.broker_dirs.items()):
        run_archive(cluster=CLUSTER, broker_id=broker, log_dirs=[str(d) for d in dirs], store=store)
    with open_catalog(paths.db_url, create=True) as cat:
        build_catalog(cat, store.uri, runner=InProcessRunner())
    return paths, cluster


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    require_browser()
    from kafka_archive_dev.embedded_kafka import EmbeddedKafka

    root = tmp_path_factory.mktemp("browser")
    paths = DemoPaths(root / "demo")
    server = AirflowServer(
        root / "airflow",
        {"KAFKA_ARCHIVE_DB": paths.db_url, "KAFKA_ARCHIVE_STORE": paths.store_uri},
    )
    with EmbeddedKafka(3) as target:
        try:
            server.start()
            # the data is written once Airflow is up: its records end a minute before the
            # browser starts, so the scenarios' relative times fall inside them
            paths, cluster = demo_catalog(root / "demo")
            partitions = sorted(p for (t, p) in cluster.replicas if t == TOPIC)
            target.create_topic(TOPIC, len(partitions))
            # the mock cannot serve CreateTopics: the replay's progress topic is made up front
            target.create_topic(PROGRESS_TOPIC, 4)
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


def _rows(table: Any, key: int, value: int) -> dict[int, str]:
    """``{int(cell key): cell value}`` over a table's rows of cells (header rows skipped)."""
    rows = table.locator("tr:has(td)")
    out: dict[int, str] = {}
    for i in range(rows.count()):
        cells = rows.nth(i).locator("td")
        out[int(cells.nth(key).inner_text())] = cells.nth(value).inner_text().strip()
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


def _show_at(
    frame: Any, typed: str, stack: dict[str, Any], *, wait_resolved: bool = True
) -> tuple[int, dict[int, int]]:
    """Type ``typed`` as T, see it resolved as one types, press Show: T (epoch ms, the replay
    form's From) and the offsets table, checked to be the catalog's answer at T and the
    broker's own lookup on the original log dirs."""
    from playwright.sync_api import expect

    resolved, form = frame.locator("#resolved"), frame.locator("#replay")
    before, from_before = resolved.inner_text(), form.locator("[name=from]").input_value()
    frame.locator("#at").fill(typed)
    if wait_resolved:  # the page asks /time as one types (unless held back by the test)
        expect(resolved).not_to_have_text(before)
    frame.locator("#go").click()
    expect(form.locator("[name=from]")).not_to_have_value(from_before)
    expect(frame.locator("#offsets tbody tr")).to_have_count(len(stack["partitions"]))
    at_ms = _ms(form.locator("[name=from]").input_value())
    # a late /time answer must not overwrite Show's T
    assert _ms(resolved.inner_text().removeprefix("=").strip()) == at_ms
    minutes = int(typed.removeprefix("-").removesuffix("m"))
    assert abs(at_ms - (time.time() * 1000 - minutes * 60_000)) < 120_000, (typed, at_ms)
    want = catalog_offsets(stack["paths"], stack["cluster"], at_ms)
    assert all(w["offset"] == w["broker_lookup_offset"] >= 0 for w in want), want
    shown = _rows(frame.locator("#offsets tbody"), 0, 1)
    assert shown == {w["partition"]: str(w["offset"]) for w in want}
    # holes come after the table: every row is marked once /holes has answered
    expect(frame.locator("#offsets td.holes", has_text="checking")).to_have_count(0)
    assert frame.locator("#status").inner_text().strip() == ""
    return at_ms, {w["partition"]: w["offset"] for w in want}


def _late_time_answer_is_dropped(page: Any, frame: Any, stack: dict[str, Any]) -> None:
    """The /time answer to what was typed, held back until after Show has answered, does not
    overwrite Show's T (a relative time resolves to another millisecond each time it is asked,
    so an overwrite would show)."""
    held: list[Any] = []
    pattern = "**/kafka-archive/api/v1/time*"

    def hold(route: Any) -> None:
        held.append(route)

    page.context.route(pattern, hold)
    try:
        frame.locator("#at").fill(T_NEW)
        for _ in range(100):  # until the page has asked (it waits for typing to pause)
            if held:
                break
            page.wait_for_timeout(100)
        assert held, "the page asked no /time while T was typed"
        shown_at, _ = _show_at(frame, T_NEW, stack, wait_resolved=False)
        with page.expect_response(lambda r: "/api/v1/time" in r.url):
            for route in held:
                route.continue_()
        page.wait_for_timeout(500)  # let the page's script handle the late answer
    finally:
        page.context.unroute(pattern, hold)
    resolved = frame.locator("#resolved").inner_text().removeprefix("=").strip()
    assert _ms(resolved) == shown_at


def _target_positions(
    stack: dict[str, Any], starts: dict[int, int], positions: dict[int, int]
) -> dict[int, tuple[int, Any]]:
    """Per partition, where a group at source ``positions`` must start on the target after
    the replay from ``starts``: the target offset of the first replayed record at or past
    the position (one past the last replayed record when none is) and that record's
    (key, value, headers, timestamp) (None past the end). Worked out from the records, not
    from the catalog's offset map: the i-th record replayed is the i-th record the target
    holds (their offsets differ: the replay's transaction markers take offsets too)."""
    from kafka_archive_dev.embedded_kafka import read_to_end

    paths, cluster = stack["paths"], stack["cluster"]
    held = read_to_end(stack["target"].bootstrap_servers, TOPIC, stack["partitions"])
    out: dict[int, tuple[int, Any]] = {}
    for p, start in starts.items():
        replayed = expected_records(paths, cluster, {p: start})[p]
        rest = expected_records(paths, cluster, {p: max(start, positions.get(p, start))})[p]
        i = len(replayed) - len(rest)
        rec = held[p][i] if i < len(held[p]) else None
        offset = rec.offset if rec is not None else held[p][-1].offset + 1
        out[p] = (offset, rest[0] if rest else None)
        if rec is not None:  # the target's record there is the source's at the position
            assert (rec.key, rec.value, list(rec.headers), rec.timestamp) == rest[0], p
    return out


def _committed_on_target(bootstrap: str, group: str, partitions: list[int]) -> dict[int, int]:
    """``group``'s committed offsets on the target's ``orders``, from Kafka's AdminClient
    (OffsetFetch; the partitions are named: the mock answers no group-wide fetch)."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    asked = ConsumerGroupTopicPartitions(group, [TopicPartition(TOPIC, p) for p in partitions])
    answer = admin.list_consumer_group_offsets([asked])[group].result(30)
    return {tp.partition: tp.offset for tp in answer.topic_partitions if tp.offset >= 0}


def _start_group(
    page: Any, frame: Any, stack: dict[str, Any], group: str, basis: str, shot: str
) -> dict[int, int]:
    """ "Start group G at T on the target": preview, apply (with the page's own confirmation):
    a run of kafka_archive_group_offsets, triggered by the logged-in user with the group as its
    Params (Airflow's REST API), followed on the page until it succeeds; the offsets shown as
    committed (checked equal to the preview's)."""
    from playwright.sync_api import expect

    frame.locator("#tg-group").fill(group)
    frame.locator(f"[name=tg-basis][value={basis}]").check()
    frame.locator("#tg-preview").click()
    out = frame.locator("#tg-out")
    expect(out).to_contain_text("would commit")
    expect(out).to_contain_text(group)
    previewed = {p: int(o) for p, o in _rows(out, 2, 3).items()}
    assert frame.locator("#status").inner_text().strip() == ""
    frame.locator("#tg-apply").click()
    expect(frame.locator("#tg-confirm")).to_be_visible()
    frame.locator("#tg-commit").click()
    run_link = frame.locator("#tg-run a")
    expect(run_link).to_have_attribute(
        "href", re.compile(re.escape("/dags/kafka_archive_group_offsets/runs/"))
    )
    expect(frame.locator("#tg-run-state")).to_have_text("success", timeout=900_000)
    expect(out).to_contain_text("committed")
    assert frame.locator("#status").inner_text().strip() == ""
    applied = {p: int(o) for p, o in _rows(out, 2, 3).items()}
    assert applied == previewed
    expect(frame.locator("#tg-apply")).to_be_disabled()  # one apply per preview
    _shot(page, shot, out)  # the run line is just above the table
    run_id = quote(run_link.inner_text().strip(), safe="")
    answer = page.request.get(
        f"{stack['server'].url}/api/v2/dags/kafka_archive_group_offsets/dagRuns/{run_id}"
    )
    assert answer.ok, answer.text()
    run = answer.json()
    assert (run["state"], run["triggering_user_name"]) == ("success", UI_USER), run
    assert (run["conf"]["group"], run["conf"]["topic"]) == (group, TOPIC), run
    return previewed


def _replay_from_here(page: Any, frame: Any, stack: dict[str, Any]) -> tuple[int, dict[int, int]]:
    """(a): offsets at T, the chart, "Replay from here" into the other cluster, run to success
    (a double click on Launch: one run); the target then holds the source's records from each
    offset at T. T and those offsets."""
    from playwright.sync_api import expect

    at_ms, starts = _show_at(frame, T_REPLAY, stack)
    expect(frame.locator("#window")).not_to_be_empty()
    chart = frame.locator("#chart")
    assert chart.evaluate(f"(c) => ({CANVAS_RECORD_PIXELS})({list(RECORDS_RGB)})") > 0
    _shot(page, "02-offsets-and-chart")
    bootstrap = stack["target"].bootstrap_servers
    frame.locator("#replay [name=target_servers]").fill(bootstrap)
    # the created topic's fields: a preview (target unchecked: the mock target cannot create
    # topics) shows the planned configs' table; then back to the existing target topic
    form = frame.locator("#replay")
    form.locator("[name=check_target]").uncheck()
    form.locator("[name=create_topic]").check()
    form.locator("[name=topic_config]").fill("retention.ms=-1")
    frame.locator("#preview").click()
    expect(frame.locator("#tc-configs")).to_be_visible()
    expect(frame.locator("#tc-configs")).to_contain_text("override")
    form.locator("[name=create_topic]").uncheck()
    form.locator("[name=check_target]").check()
    frame.locator("#preview").click()
    expect(frame.locator("#preview-out")).to_contain_text("Plan")
    expect(frame.locator("#topic-config-out")).to_be_visible()  # the target check's answer
    assert frame.locator("#status").inner_text().strip() == ""
    expect(frame.locator("#launch")).to_be_enabled()
    _shot(page, "03-replay-preview", frame.locator("#preview-out"))
    frame.locator("#launch").dblclick()
    expect(frame.locator("#run-state")).to_have_text("success", timeout=900_000)
    expect(frame.locator("#run-out")).to_contain_text("partitions done")
    _shot(page, "04-replay-succeeded", frame.locator("#run-out"))
    want = expected_records(stack["paths"], stack["cluster"], starts)
    assert sum(len(v) for v in want.values()) > 0
    assert read_target(bootstrap, stack["partitions"]) == want
    return at_ms, starts


def _group_table_is_the_catalogs(frame: Any, stack: dict[str, Any], at_ms: int) -> dict[int, int]:
    """The page's "Consumer group at T" rows of :data:`TOPIC` are the catalog's committed
    offsets of :data:`FAILOVER_GROUP` at ``at_ms``; those offsets."""
    from playwright.sync_api import expect

    archived = {
        o["partition"]: o["offset"]
        for o in group_position_at(stack["paths"], FAILOVER_GROUP, at_ms)["offsets"]
        if o["topic"] == TOPIC
    }
    assert archived, f"{FAILOVER_GROUP} had no archived commits on {TOPIC} at {at_ms}"
    want = {str(p): str(o) for p, o in archived.items()}
    table = frame.locator("#group-table tbody")
    for p, o in want.items():  # the table answers asynchronously: wait for these cells
        row = table.locator("tr", has_text=TOPIC).filter(
            has=frame.locator(f"td:nth-child(2):text-is('{p}')")
        )
        expect(row.locator("td").nth(2)).to_have_text(o)
    expect(table.locator("tr", has_text=TOPIC)).to_have_count(len(archived))
    return archived


def _failover(page: Any, frame: Any, stack: dict[str, Any], starts: dict[int, int]) -> int:
    """(b): group G's committed position 30 minutes back (the archive's), then G started there
    on the other cluster from its archived commits at T. T."""
    from playwright.sync_api import expect

    at_b, _ = _show_at(frame, T_FAILOVER, stack)
    frame.locator("#group").fill(FAILOVER_GROUP)
    frame.locator("#group-go").click()
    archived = _group_table_is_the_catalogs(frame, stack, at_b)
    _shot(page, "05-failover-group-at-T", frame.locator("#group-table"))
    expect(frame.locator("#tg-group")).to_have_value(FAILOVER_GROUP)  # pre-filled from above
    failover = _start_group(page, frame, stack, FAILOVER_GROUP, "commits", "06-failover-applied")
    want = _target_positions(stack, starts, archived)
    assert failover == {p: off for p, (off, _rec) in want.items()}
    bootstrap = stack["target"].bootstrap_servers
    assert _committed_on_target(bootstrap, FAILOVER_GROUP, stack["partitions"]) == failover
    return at_b


def _new_group(page: Any, frame: Any, stack: dict[str, Any], starts: dict[int, int]) -> int:
    """(c): a group that never existed starts 10 minutes ago: on the other cluster, at the
    records of the offsets-at-T table on screen. T."""
    at_c, table = _show_at(frame, T_NEW, stack)
    _group_table_is_the_catalogs(frame, stack, at_c)  # the group's table followed T
    new_group = f"oncall-new-{uuid.uuid4().hex[:8]}"
    fresh = _start_group(page, frame, stack, new_group, "at", "07-new-group-applied")
    want = _target_positions(stack, starts, table)
    assert all(rec is not None for _off, rec in want.values()), want
    assert fresh == {p: off for p, (off, _rec) in want.items()}
    bootstrap = stack["target"].bootstrap_servers
    assert _committed_on_target(bootstrap, new_group, stack["partitions"]) == fresh
    return at_c


def _follow_run_link(page: Any, frame: Any, server: AirflowServer, at_ms: int, target: str) -> None:
    """The page's link to the DAG run, clicked inside Airflow's sandboxed frame, lands on
    Airflow's own page of the run: an ordinary run that succeeded, triggered by the logged-in
    user with the form as its Params (Airflow's REST API, the browser's session), the only one
    (the double click launched one)."""
    from playwright.sync_api import expect

    run_link = frame.locator("#run-out a")
    run_id = run_link.inner_text().strip()
    run_link.scroll_into_view_if_needed()
    run_link.click()
    quoted = quote(run_id, safe="")
    expect(page).to_have_url(re.compile(re.escape(f"/dags/kafka_archive_replay/runs/{quoted}")))
    expect(page.get_by_text(run_id).first).to_be_visible()
    # Airflow's page of the run has loaded its task instances (the replay DAG's last task)
    expect(page.get_by_text("report", exact=True).first).to_be_visible()
    _shot(page, "08-dag-run-in-airflow")
    answer = page.request.get(f"{server.url}/api/v2/dags/kafka_archive_replay/dagRuns/{quoted}")
    assert answer.ok, answer.text()
    run = answer.json()
    assert (run["state"], run["triggering_user_name"]) == ("success", UI_USER), run
    assert run["conf"]["target"] == target and _ms(run["conf"]["from"]) == at_ms, run
    runs = page.request.get(f"{server.url}/api/v2/dags/kafka_archive_replay/dagRuns")
    assert runs.ok and runs.json()["total_entries"] == 1, runs.text()


def test_three_runbook_scenarios_in_chromium(stack: dict[str, Any], tmp_path: Path) -> None:
    from playwright.sync_api import expect

    expect.set_options(timeout=120_000)
    server: AirflowServer = stack["server"]
    with _browser(tmp_path / "profile") as ctx:
        page = ctx.new_page()
        page.set_default_timeout(120_000)
        frame = _open_from_airflow_nav(page, server.url)
        # cluster and topic (picking the cluster again keeps the topic)
        expect(frame.locator("#cluster option", has_text=CLUSTER)).to_have_count(1)
        frame.locator("#topic").select_option(TOPIC)
        frame.locator("#cluster").select_option(CLUSTER)
        frame.locator("#cluster").dispatch_event("change")
        expect(frame.locator("#topic")).to_have_value(TOPIC)

        _late_time_answer_is_dropped(page, frame, stack)
        at_a, starts = _replay_from_here(page, frame, stack)
        at_b = _failover(page, frame, stack, starts)
        at_c = _new_group(page, frame, stack, starts)
        assert at_a < at_b < at_c
        _follow_run_link(page, frame, server, at_a, stack["target"].bootstrap_servers)
