"""The on-call page in a real browser, inside a real Airflow (issues 14 and 23): the three
runbook scenarios answered on the page, without the CLI, in light and in dark mode.

The demo's data (``./dev demo``'s writer-made 3-broker cluster: topic ``orders`` and
others, every codec, transactions, compaction, a crashed broker, consumer groups committing;
here 900 writer steps, records over the last ~43 minutes), archived and cataloged, is served
by ``airflow standalone`` with the repository's plugins folder; librdkafka's mock cluster, in
this process, is "the other cluster" (the replay target, as in the demo; also the Airflow
connection ``kafka_target``): tests/ui/conftest.py. Headless Chromium (Debian's
``chromium``, driven by Playwright) logs in to Airflow, opens "Kafka archive" from Airflow's
Browse menu (a React app in Airflow's own UI, no iframe), and:

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

each read step (the offsets, the chart, the group's table, the previews) is looked at in light
and in dark mode (the page's own background follows Airflow's theme), then the page's link to
the DAG run is clicked and lands on Airflow's own page of that run (an ordinary run triggered
by the logged-in user with the form as its Params, read back through Airflow's REST API).

Screenshots (PNG) of each step are kept under ``tests/artifacts/ui/`` (git-ignored); the user
guide's copies are in ``docs/images/oncall/`` (docs/ui.md).
"""

from __future__ import annotations

import re
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from browser_support import (
    UI_PASSWORD,
    UI_USER,
    AirflowServer,
    launch_chromium,
    no_error_shown,
    set_check,
    set_mode,
    shot,
    table_rows,
)
from kafka_archive_dev.demo import (
    CLUSTER,
    TOPIC,
    catalog_offsets,
    expected_records,
    group_position_at,
    read_target,
)

pytestmark = pytest.mark.timeout(1800)

#: the three scenarios' T as typed into the page (relative, as the CLI takes them)
T_REPLAY, T_FAILOVER, T_NEW = "-40m", "-30m", "-10m"
#: the demo group that "fails over" (it commits on orders and payments all along)
FAILOVER_GROUP = "billing"
MODES = ("light", "dark")

LUMINANCE = """(el) => {
  const [r, g, b] = getComputedStyle(el).backgroundColor.match(/[\\d.]+/g).map(Number);
  return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
}"""


def in_both_modes(page: Any, name: str, show: Any) -> None:
    """Look at the page in light and in dark mode (a screenshot of each, ``show`` in view):
    its sections' background follows Airflow's theme; back to light after."""
    for mode in MODES:
        set_mode(page, mode)
        lum = page.locator("#offsets-section").evaluate(LUMINANCE)
        assert (lum > 0.8) if mode == "light" else (lum < 0.25), (mode, lum)
        shot(page, f"{name}-{mode}", show)
    set_mode(page, "light")


def _ms(iso: str) -> int:
    """Epoch ms of an ISO-8601 instant as the page shows one (``...Z`` or ``+00:00``)."""
    return round(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


def _open_from_airflow_nav(page: Any, url: str) -> None:
    """Log in to Airflow, open Browse -> Kafka archive: the page, rendered by Airflow's own
    UI (no iframe), once it has answered (it opens on the first topic at its default T)."""
    from playwright.sync_api import expect

    page.goto(url + "/")
    page.locator("input[name=username]").fill(UI_USER)
    page.locator("input[name=password]").fill(UI_PASSWORD)
    shot(page, "01-login")
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("button", name="Browse").click()
    page.get_by_role("menuitem", name="Kafka archive").click()
    expect(page).to_have_url(re.compile(r"/plugin/kafka-archive"))
    assert page.locator("iframe").count() == 0
    expect(page.locator("#who")).to_contain_text(UI_USER)
    expect(page.locator("#offsets tbody tr").first).to_be_visible()


def _resolved(page: Any) -> int:
    return _ms(page.locator("#resolved").inner_text().removeprefix("=").strip())


def _show_at(
    page: Any, typed: str, stack: dict[str, Any], *, wait_resolved: bool = True
) -> tuple[int, dict[int, int]]:
    """Type ``typed`` as T, see it resolved as one types, press Show: T (epoch ms, the replay
    form's From) and the offsets table, checked to be the catalog's answer at T and the
    broker's own lookup on the original log dirs."""
    from playwright.sync_api import expect

    resolved, form = page.locator("#resolved"), page.locator("#replay")
    before, from_before = resolved.inner_text(), form.locator("[name=from]").input_value()
    page.locator("input[name=at]").fill(typed)
    if wait_resolved:  # the page asks /time as one types (unless held back by the test)
        expect(resolved).not_to_have_text(before)
    page.locator("#go").click()
    expect(form.locator("[name=from]")).not_to_have_value(from_before)
    expect(page.locator("#offsets tbody tr")).to_have_count(len(stack["partitions"]))
    at_ms = _ms(form.locator("[name=from]").input_value())
    # a late /time answer must not overwrite Show's T
    assert _resolved(page) == at_ms
    minutes = int(typed.removeprefix("-").removesuffix("m"))
    assert abs(at_ms - (time.time() * 1000 - minutes * 60_000)) < 120_000, (typed, at_ms)
    want = catalog_offsets(stack["paths"], stack["cluster"], at_ms)
    assert all(w["offset"] == w["broker_lookup_offset"] >= 0 for w in want), want
    shown = table_rows(page.locator("#offsets"), 0, 1)
    assert shown == {w["partition"]: str(w["offset"]) for w in want}
    # holes come after the table: every row is marked once /holes has answered
    expect(page.locator("#offsets .checking")).to_have_count(0)
    # the link in the address bar is what is shown
    assert f"at={quote(typed)}" in page.url and f"topic={TOPIC}" in page.url, page.url
    no_error_shown(page)
    return at_ms, {w["partition"]: w["offset"] for w in want}


def _late_time_answer_is_dropped(page: Any, stack: dict[str, Any]) -> None:
    """The /time answer to what was typed, held back until after Show has answered, does not
    overwrite Show's T (a relative time resolves to another millisecond each time it is asked,
    so an overwrite would show)."""
    held: list[Any] = []
    pattern = "**/kafka-archive/api/v1/time*"

    def hold(route: Any) -> None:
        held.append(route)

    page.context.route(pattern, hold)
    try:
        page.locator("input[name=at]").fill(T_NEW)
        for _ in range(100):  # until the page has asked (it waits for typing to pause)
            if held:
                break
            page.wait_for_timeout(100)
        assert held, "the page asked no /time while T was typed"
        shown_at, _ = _show_at(page, T_NEW, stack, wait_resolved=False)
        with page.expect_response(lambda r: "/api/v1/time" in r.url):
            for route in held:
                route.continue_()
        page.wait_for_timeout(500)  # let the page's script handle the late answer
    finally:
        page.context.unroute(pattern, hold)
    assert _resolved(page) == shown_at


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


def committed_on_target(
    bootstrap: str, group: str, partitions: list[int], topic: str = TOPIC
) -> dict[int, int]:
    """``group``'s committed offsets on the target's ``topic``, from Kafka's AdminClient
    (OffsetFetch; the partitions are named: the mock answers no group-wide fetch)."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    asked = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in partitions])
    answer = admin.list_consumer_group_offsets([asked])[group].result(30)
    return {tp.partition: tp.offset for tp in answer.topic_partitions if tp.offset >= 0}


def start_group(
    page: Any, stack: dict[str, Any], group: str, basis: str, name: str, **form: str
) -> dict[int, int]:
    """ "Start group G at T on the target": preview (looked at in both modes), apply (with
    the page's own confirmation): a run of kafka_archive_group_offsets, triggered by the
    logged-in user with the group as its Params (Airflow's REST API), followed on the page
    until it succeeds; the offsets shown as committed (checked equal to the preview's).
    ``form``: other fields of the form by input name (e.g. ``tg-conn``, a select)."""
    from playwright.sync_api import expect

    page.locator("input[name=tg-group]").fill(group)
    page.locator(f"[data-testid=tg-basis-{basis}]").click()
    for field, value in form.items():
        page.locator(f"[name={field}]").select_option(value)
    page.locator("#tg-preview").click()
    out = page.locator("#tg-out")
    expect(out).to_contain_text("would commit")
    expect(out).to_contain_text(group)
    previewed = {p: int(o) for p, o in table_rows(out, 2, 3).items()}
    no_error_shown(page)
    in_both_modes(page, f"{name}-preview", out)
    page.locator("#tg-apply").click()
    expect(page.locator("#tg-confirm")).to_be_visible()
    page.locator("#tg-commit").click()
    run_link = page.locator("#tg-run a")
    expect(run_link).to_have_attribute(
        "href", re.compile(re.escape("/dags/kafka_archive_group_offsets/runs/"))
    )
    expect(page.locator("#tg-run-state")).to_have_text("success", timeout=900_000)
    expect(out).to_contain_text("committed")
    no_error_shown(page)
    applied = {p: int(o) for p, o in table_rows(out, 2, 3).items()}
    assert applied == previewed
    expect(page.locator("#tg-apply")).to_be_disabled()  # one apply per preview
    shot(page, f"{name}-applied", out)
    run_id = quote(run_link.inner_text().strip(), safe="")
    answer = page.request.get(
        f"{stack['server'].url}/api/v2/dags/kafka_archive_group_offsets/dagRuns/{run_id}"
    )
    assert answer.ok, answer.text()
    run = answer.json()
    assert (run["state"], run["triggering_user_name"]) == ("success", UI_USER), run
    assert run["conf"]["group"] == group, run
    return previewed


def _replay_from_here(page: Any, stack: dict[str, Any]) -> tuple[int, dict[int, int]]:
    """(a): offsets at T, the chart, "Replay from here" into the other cluster, run to success
    (a double click on Launch: one run); the target then holds the source's records from each
    offset at T. T and those offsets."""
    from playwright.sync_api import expect

    at_ms, starts = _show_at(page, T_REPLAY, stack)
    expect(page.locator("#window")).not_to_be_empty()
    expect(page.locator("#chart rect.bar").first).to_be_attached()
    in_both_modes(page, "02-offsets-and-chart", page.locator("#offsets-section"))
    bootstrap = stack["target"].bootstrap_servers
    form = page.locator("#replay")
    form.locator("[name=target_servers]").fill(bootstrap)
    # the created topic's fields: a preview (target unchecked: the mock target cannot create
    # topics) shows the planned configs' table; then back to the existing target topic
    set_check(page, "check_target", False)
    set_check(page, "create_topic", True)
    form.locator("[name=topic_config]").fill("retention.ms=-1")
    page.locator("#preview").click()
    expect(page.locator("#tc-configs")).to_be_visible()
    expect(page.locator("#tc-configs")).to_contain_text("override")
    set_check(page, "create_topic", False)
    set_check(page, "check_target", True)
    page.locator("#preview").click()
    out = page.locator("#preview-out")
    expect(out).to_contain_text("records the replay will send")
    # the target's answer in readable fields, not JSON
    expect(page.locator("#preview-fields")).to_contain_text("target cluster id")
    assert "{" not in out.inner_text(), out.inner_text()
    expect(page.locator("#topic-config-out")).to_be_visible()
    no_error_shown(page)
    expect(page.locator("#launch")).to_be_enabled()
    in_both_modes(page, "03-replay-preview", out)
    page.locator("#launch").dblclick()
    expect(page.locator("#run-out-state")).to_have_text("success", timeout=900_000)
    expect(page.locator("#run-out")).to_contain_text("partitions done")
    shot(page, "04-replay-succeeded", page.locator("#run-out"))
    want = expected_records(stack["paths"], stack["cluster"], starts)
    assert sum(len(v) for v in want.values()) > 0
    assert read_target(bootstrap, stack["partitions"]) == want
    return at_ms, starts


def _group_table_is_the_catalogs(page: Any, stack: dict[str, Any], at_ms: int) -> dict[int, int]:
    """The page's "Consumer group at T" rows of :data:`TOPIC` are the catalog's committed
    offsets of :data:`FAILOVER_GROUP` at ``at_ms``; those offsets."""
    from playwright.sync_api import expect

    archived = {
        o["partition"]: o["offset"]
        for o in group_position_at(stack["paths"], FAILOVER_GROUP, at_ms)["offsets"]
        if o["topic"] == TOPIC
    }
    assert archived, f"{FAILOVER_GROUP} had no archived commits on {TOPIC} at {at_ms}"
    table = page.locator("#group-table tbody")
    for p, o in archived.items():  # the table answers asynchronously: wait for these cells
        row = table.locator("tr", has_text=TOPIC).filter(
            has=page.locator(f"td:nth-child(2):text-is('{p}')")
        )
        expect(row.locator("td").nth(2)).to_have_text(str(o))
    expect(table.locator("tr", has_text=TOPIC)).to_have_count(len(archived))
    return archived


def _failover(page: Any, stack: dict[str, Any], starts: dict[int, int]) -> int:
    """(b): group G's committed position 30 minutes back (the archive's), then G started there
    on the other cluster from its archived commits at T. T."""
    from playwright.sync_api import expect

    at_b, _ = _show_at(page, T_FAILOVER, stack)
    page.locator("input[name=group]").fill(FAILOVER_GROUP)
    page.locator("#group-go").click()
    archived = _group_table_is_the_catalogs(page, stack, at_b)
    assert f"group={FAILOVER_GROUP}" in page.url  # the link keeps the group
    in_both_modes(page, "05-failover-group-at-T", page.locator("#group-table"))
    expect(page.locator("input[name=tg-group]")).to_have_value(FAILOVER_GROUP)  # from above
    failover = start_group(page, stack, FAILOVER_GROUP, "commits", "06-failover")
    want = _target_positions(stack, starts, archived)
    assert failover == {p: off for p, (off, _rec) in want.items()}
    bootstrap = stack["target"].bootstrap_servers
    assert committed_on_target(bootstrap, FAILOVER_GROUP, stack["partitions"]) == failover
    return at_b


def _new_group(page: Any, stack: dict[str, Any], starts: dict[int, int]) -> int:
    """(c): a group that never existed starts 10 minutes ago: on the other cluster, at the
    records of the offsets-at-T table on screen. T."""
    at_c, table = _show_at(page, T_NEW, stack)
    _group_table_is_the_catalogs(page, stack, at_c)  # the group's table followed T
    new_group = f"oncall-new-{uuid.uuid4().hex[:8]}"
    fresh = start_group(page, stack, new_group, "at", "07-new-group")
    want = _target_positions(stack, starts, table)
    assert all(rec is not None for _off, rec in want.values()), want
    assert fresh == {p: off for p, (off, _rec) in want.items()}
    bootstrap = stack["target"].bootstrap_servers
    assert committed_on_target(bootstrap, new_group, stack["partitions"]) == fresh
    return at_c


def _follow_run_link(page: Any, server: AirflowServer, at_ms: int, target: str) -> None:
    """The page's link to the DAG run lands on Airflow's own page of the run (a route of
    Airflow's UI): an ordinary run that succeeded, triggered by the logged-in user with the
    form as its Params (Airflow's REST API, the browser's session), the only one to that
    target (the double click launched one)."""
    from playwright.sync_api import expect

    run_link = page.locator("#run-out a")
    run_id = run_link.inner_text().strip()
    run_link.scroll_into_view_if_needed()
    run_link.click()
    quoted = quote(run_id, safe="")
    expect(page).to_have_url(re.compile(re.escape(f"/dags/kafka_archive_replay/runs/{quoted}")))
    expect(page.get_by_text(run_id).first).to_be_visible()
    # Airflow's page of the run has loaded its task instances (the replay DAG's last task)
    expect(page.get_by_text("report", exact=True).first).to_be_visible()
    shot(page, "08-dag-run-in-airflow")
    answer = page.request.get(f"{server.url}/api/v2/dags/kafka_archive_replay/dagRuns/{quoted}")
    assert answer.ok, answer.text()
    run = answer.json()
    assert (run["state"], run["triggering_user_name"]) == ("success", UI_USER), run
    assert run["conf"]["target"] == target and _ms(run["conf"]["from"]) == at_ms, run
    runs = page.request.get(f"{server.url}/api/v2/dags/kafka_archive_replay/dagRuns")
    assert runs.ok, runs.text()
    # (tests/ui/test_browser_page.py may have launched one to another target in this session)
    mine = [r for r in runs.json()["dag_runs"] if r["conf"].get("target") == target]
    assert len(mine) == 1, runs.text()


def test_three_runbook_scenarios_in_chromium(stack: dict[str, Any], tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=120_000)
    server: AirflowServer = stack["server"]
    with sync_playwright() as pw:
        ctx = launch_chromium(pw, tmp_path / "profile")
        page = ctx.new_page()
        page.set_default_timeout(120_000)
        page.emulate_media(color_scheme="light")
        _open_from_airflow_nav(page, server.url)
        # cluster and topic (picking the cluster again keeps the topic)
        expect(page.locator("select[name=cluster] option", has_text=CLUSTER)).to_have_count(1)
        page.locator("select[name=topic]").select_option(TOPIC)
        page.locator("select[name=cluster]").select_option(CLUSTER)
        expect(page.locator("select[name=topic]")).to_have_value(TOPIC)

        _late_time_answer_is_dropped(page, stack)
        at_a, starts = _replay_from_here(page, stack)
        at_b = _failover(page, stack, starts)
        at_c = _new_group(page, stack, starts)
        assert at_a < at_b < at_c
        _follow_run_link(page, server, at_a, stack["target"].bootstrap_servers)
        ctx.close()
