"""A whole-cluster restore launched from the on-call page's "Restore" form (issue 24) runs the
``kafka_archive_restore`` DAG under a live Airflow into a **real** Kafka cluster, and the page
shows its run reaching ``success`` with the report.

A stack of its own (the other browser tests' target is librdkafka's mock, which cannot create
topics): ``airflow standalone`` with the repository's DAGs and plugins over the demo's data,
and a 1-broker Apache Kafka cluster as the target, named by the Airflow connection
:data:`DR_CONN`. The restored topic is read back ``read_committed`` with confluent-kafka (not
ours) and holds exactly the records the report says. Screenshot under tests/artifacts/ui/.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_support import launch_chromium, open_page, set_check, shot
from kafka_archive_dev.demo import CLUSTER, TOPIC

pytestmark = pytest.mark.timeout(1800)
#: the Airflow connection naming the real target cluster
DR_CONN = "dr_target"
PREFIX = "dr."


@pytest.fixture(scope="module")
def restore_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from browser_support import require_browser
    from conftest import demo_airflow
    from support.real_kafka import running_cluster

    require_browser()
    root = tmp_path_factory.mktemp("browser-restore")
    with (
        running_cluster(brokers=1) as target,
        demo_airflow(root, DR_CONN, target.bootstrap_servers) as (server, paths, _cluster),
    ):
        yield {"paths": paths, "server": server, "target": target}


def _committed_records(bootstrap: str, topic: str) -> int:
    """Records of ``topic`` a ``read_committed`` confluent-kafka consumer reads to its end."""
    from confluent_kafka.admin import AdminClient
    from kafka_archive_dev.embedded_kafka import read_to_end

    parts = sorted(
        AdminClient({"bootstrap.servers": bootstrap})
        .list_topics(topic, timeout=30)
        .topics[topic]
        .partitions
    )
    got = read_to_end(bootstrap, topic, parts, timeout_s=120)
    return sum(len(records) for records in got.values())


def test_a_restore_launched_from_the_page_runs_its_dag_to_success(
    restore_stack: dict[str, Any], tmp_path: Path
) -> None:
    """Preview (the target asked: a real cluster, its principal's permissions, no collision),
    Launch, then the DAG run's state on the page until it is final: ``success``, with the
    report (records, the topic restored as ``dr.<topic>``, complete), and the target topic
    holding exactly those records, committed."""
    from playwright.sync_api import expect, sync_playwright

    server = restore_stack["server"]
    expect.set_options(timeout=120_000)
    with sync_playwright() as pw:
        ctx = launch_chromium(pw, tmp_path / "profile")
        page = ctx.new_page()
        page.set_default_timeout(120_000)
        page.emulate_media(color_scheme="light")
        try:
            open_page(page, server.url, f"?cluster={CLUSTER}&topic={TOPIC}&at=-10m")
            form = page.locator("#restore")
            expect(form.locator("[name=rs-topics]")).to_have_value(TOPIC)
            expect(form.locator("[name=rs-at]")).not_to_have_value("")
            form.locator("[name=rs-target_conn]").select_option(DR_CONN)
            form.locator("[name=rs-prefix]").fill(PREFIX)
            form.locator("[name=rs-replication_factor]").fill("1")
            set_check(page, "rs-check_target", True)
            page.locator("#restore-preview").click()
            plan = page.locator("#restore-plan")
            expect(plan).to_be_visible()
            if page.locator("[data-testid=error-rs-allow_gaps]").count():
                set_check(page, "rs-allow_gaps", True)  # the demo's archive has holes
                page.locator("#restore-preview").click()
            expect(page.locator("#restore-verdict")).to_contain_text("Ready")
            expect(plan).not_to_contain_text("the target was not asked")
            expect(page.locator("#restore-topics tbody tr").first).to_contain_text(
                f"{PREFIX}{TOPIC}"
            )
            page.locator("#restore-launch").click()
            state = page.locator("#restore-run-line-state")
            expect(state).to_be_visible()
            # queued, running, then final: the DAG runs plan, restore and report
            expect(state).to_have_text("success", timeout=900_000)
            report = page.locator("#restore-report")
            expect(report).to_be_visible()
            rows = page.locator("#restore-report-topics tbody tr")
            expect(rows).to_have_count(1)
            expect(rows.first).to_contain_text(f"{PREFIX}{TOPIC}")
            expect(rows.first).to_contain_text("complete")
            expect(page.locator("#restore-run-line")).to_contain_text("1/1 topics done")
            shot(page, "22-restore-run", page.locator("#restore-run"))
            shown = int(rows.first.locator("td").nth(3).inner_text().replace(",", ""))
        finally:
            ctx.close()
    assert shown > 0
    assert _committed_records(restore_stack["target"].bootstrap_servers, PREFIX + TOPIC) == shown
