"""``kafka-archive status`` (one screen: is the platform healthy?) and ``kafka-archive metrics
serve`` (the Prometheus exporter), thin over :class:`kafka_archive.services.status.StatusService`
and :mod:`kafka_archive.metrics`."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kafka_archive.cli.catalog_options import DbOpt, JsonOpt, parse_duration_ms
from kafka_archive.cli.client_settings import SETTINGS_FILE_HELP, parse_settings
from kafka_archive.cli.output import console, emit_json, fail, print_error

if TYPE_CHECKING:
    from kafka_archive.metrics.cluster import ClusterTarget
    from kafka_archive.services.status import StatusReport, Thresholds

STATUS_HELP = """Is the platform healthy? One screen: last archive per broker or fetcher, archive lag, catalog freshness, the offsets follower's position vs __consumer_offsets' end, open integrity problems, running replays, prunes.

Exit code 0: nothing needs a human now (warnings may be shown); 1: a check failed (or the catalog could not be read). With --cluster NAME=HOST:PORT the live cluster is asked for its ends (archive lag in offsets and seconds, follower lag); without it the catalog alone answers.

Examples:

  kafka-archive status --db catalog.db

  kafka-archive status --db postgresql://archive@db/catalog --cluster prod=kafka-1:9092 --json
"""  # noqa: E501 - paragraphs are one line each: the help formatter wraps them

METRICS_HELP = "Prometheus metrics of the archive: serve them for scraping (docs/operations.md)."

SERVE_HELP = """Serve the platform's Prometheus metrics at http://ADDR:PORT/metrics, computed from the catalog on every scrape (and, with --cluster, from the live cluster's end offsets).

Runs until interrupted. The metrics, their labels and the alerts built on them: docs/operations.md.

Example:

  kafka-archive metrics serve --db postgresql://archive@db/catalog --port 9464 --cluster prod=kafka-1:9092
"""  # noqa: E501

ClusterTargetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--cluster",
        help="NAME=HOST:PORT[,...]: ask this archived cluster for its end offsets; repeatable.",
    ),
]
ConfigOpt = Annotated[
    list[str] | None,
    typer.Option(
        "-X",
        "--client-config",
        help="librdkafka setting KEY=VALUE for every --cluster (security); repeatable. "
        + SETTINGS_FILE_HELP,
    ),
]


def parse_targets(
    items: list[str] | None, config: list[str] | None, as_json: bool
) -> list[ClusterTarget]:
    """``--cluster NAME=BOOTSTRAP`` options as targets (exit 2 on a malformed one)."""
    from kafka_archive.metrics.cluster import ClusterTarget

    extra = parse_settings(config, "-X", as_json)
    targets = []
    for item in items or []:
        name, sep, bootstrap = item.partition("=")
        if not sep or not name.strip() or not bootstrap.strip():
            fail(
                f"--cluster: cannot read {item!r}",
                hint="give NAME=HOST:PORT[,HOST:PORT...], NAME as archived, e.g. prod=kafka-1:9092",
                code=2,
                as_json=as_json,
            )
        targets.append(ClusterTarget(name.strip(), bootstrap.strip(), extra))
    return targets


def _seconds(text: str, option: str, as_json: bool) -> float:
    try:
        return parse_duration_ms(text) / 1000.0
    except ValueError as exc:
        fail(f"{option}: {exc}", code=2, as_json=as_json)


_DUR = "Duration like 30m, 6h, 1d."


def status_command(
    db: DbOpt = "",
    cluster: ClusterTargetOpt = None,
    config: ConfigOpt = None,
    archive_max_age: Annotated[
        str, typer.Option(help="Fail when a broker archived nothing for this long. " + _DUR)
    ] = "6h",
    lag_max: Annotated[
        str, typer.Option(help="Fail when a partition's archive is this far behind. " + _DUR)
    ] = "1h",
    catalog_max_age: Annotated[
        str, typer.Option(help="Fail when the newest successful catalog build is older. " + _DUR)
    ] = "6h",
    replay_stall: Annotated[
        str, typer.Option(help="Fail when a running replay made no progress this long. " + _DUR)
    ] = "15m",
    as_json: JsonOpt = False,
) -> None:
    from kafka_archive.cli.context import open_catalog_or_fail
    from kafka_archive.services.status import StatusService, Thresholds

    targets = parse_targets(cluster, config, as_json)
    th = Thresholds(
        archive_max_age_s=_seconds(archive_max_age, "--archive-max-age", as_json),
        lag_max_s=_seconds(lag_max, "--lag-max", as_json),
        catalog_max_age_s=_seconds(catalog_max_age, "--catalog-max-age", as_json),
        replay_stall_s=_seconds(replay_stall, "--replay-stall", as_json),
    )
    catalog = open_catalog_or_fail(db, as_json)
    try:
        with StatusService(catalog=catalog) as svc:
            report = svc.status(targets, thresholds=th)
    except Exception as exc:  # a catalog that opens but cannot be read: that needs a human
        fail(
            f"the catalog could not be read: {exc}",
            hint="check the catalog database (`kafka-archive settings` names it), then run again",
            as_json=as_json,
        )
    if as_json:
        emit_json({"kind": "status", **report.to_json()})
    else:
        show_report(report, th)
    if report.needs_human:
        if not as_json:
            failed = sum(1 for c in report.checks if c.level == "fail")
            print_error(f"{failed} check(s) need a human", hint="see the failed rows above")
        raise typer.Exit(1)


def _when(ms: int | None, now_ms: int) -> str:
    if not ms:
        return "never"
    return f"{time.strftime('%Y-%m-%d %H:%M:%SZ', time.gmtime(ms / 1000))} ({_ago(now_ms - ms)})"


def _ago(ms: float) -> str:
    from kafka_archive.services.status import format_duration

    return f"{format_duration(max(ms, 0) / 1000)} ago"


def show_report(report: StatusReport, th: Thresholds) -> None:
    """The report as rich tables: the checks (worst first), then the facts."""
    from kafka_archive.cli.tables import print_table

    style = {"ok": "[green]ok[/]", "warn": "[yellow]WARN[/]", "fail": "[bold red]FAIL[/]"}
    head = {"ok": "[green]healthy[/]", "warn": "[yellow]healthy, with warnings[/]",
            "fail": "[bold red]needs a human[/]"}  # fmt: skip
    console.print(f"kafka-archive status: {head[report.level]}")
    from rich.markup import escape
    from rich.table import Table

    t = Table(title="checks", title_justify="left")
    for col in ("level", "area", "subject", "what"):
        t.add_column(col, no_wrap=col != "what")
    for c in report.checks:
        t.add_row(style[c.level], c.area, escape(c.subject), escape(c.message))
    console.print(t)
    now = report.now_ms
    if report.brokers:
        print_table(
            "last archive",
            ["cluster", "broker", "last archived", "segments"],
            [[b["cluster"], b["broker"] or "fetcher", _when(b["last_archived_ms"], now),
              b["segments"]] for b in report.brokers],
            left={"cluster", "broker", "last archived"},
        )  # fmt: skip
    if report.lag:
        print_table(
            "archive lag (worst partition per topic)",
            ["cluster", "topic", "partitions", "lag offsets", "lag", "worst partition"],
            [[r["cluster"], r["topic"], r["partitions"], r["lag_offsets"],
              _ago(r["lag_seconds"] * 1000).removesuffix(" ago"), r["worst_partition"]]
             for r in report.lag],
            left={"cluster", "topic"},
        )  # fmt: skip
    cat = report.catalog
    console.print(
        f"catalog: last good build {_when(cat.get('last_success_ms'), now)}; last failed "
        f"{_when(cat.get('last_failure_ms'), now)}; running {cat.get('running', 0)}",
        markup=False,
        highlight=False,
    )
    if report.follower:
        print_table(
            "offsets follower",
            ["cluster", "partitions", "position", "end", "lag", "last stored"],
            [[f["cluster"], f["partitions"], f["position"], _dash(f["end"]),
              _dash(f["lag_offsets"]), _ago(f["age_s"] * 1000)] for f in report.follower],
            left={"cluster", "last stored"},
        )  # fmt: skip
    if report.replays:
        print_table(
            "running replays",
            ["replay", "source", "status", "sent", "remaining", "partitions", "idle", "eta"],
            [[r["replay_id"], f"{r['cluster']}/{r['topic']}", r["status"], r["records_sent"],
              r["offsets_remaining"], f"{r['partitions_done']}/{r['partitions']}",
              _ago(r["idle_s"] * 1000).removesuffix(" ago"),
              "-" if r["eta_s"] is None else _ago(r["eta_s"] * 1000).removesuffix(" ago")]
             for r in report.replays],
            left={"replay", "source", "status"},
        )  # fmt: skip
    if report.prunes:
        print_table(
            "prunes",
            ["cluster", "ranges done", "unfinished", "last finished", "bytes pruned"],
            [[p["cluster"], p["done"], p["unfinished"], _when(p["last_done_ms"], now),
              p["bytes_pruned"]] for p in report.prunes],
            left={"cluster", "last finished"},
        )  # fmt: skip


def _dash(value: Any) -> str:
    return "-" if value is None else str(value)


def serve_command(
    db: DbOpt = "",
    port: Annotated[
        int, typer.Option("--port", help="Port to listen on.", min=0, max=65535)
    ] = 9464,
    addr: Annotated[str, typer.Option("--addr", help="Address to listen on.")] = "0.0.0.0",
    cluster: ClusterTargetOpt = None,
    config: ConfigOpt = None,
) -> None:
    import threading

    from kafka_archive.catalog.db import open_catalog
    from kafka_archive.cli.context import cli_settings, open_catalog_or_fail
    from kafka_archive.metrics.exposition import MetricsServerError, catalog_registry, serve_http
    from kafka_archive.redact import redact_url

    targets = parse_targets(cluster, config, False)
    url = cli_settings(False, db=db).db or ""
    open_catalog_or_fail(url, False).close()  # a wrong --db fails now, not at the first scrape
    registry = catalog_registry(lambda: open_catalog(url), targets)
    try:
        server = serve_http(registry, port, addr)
    except MetricsServerError as exc:
        fail(str(exc), hint=exc.hint)
    console.print(
        f"serving metrics of {redact_url(url)} at http://{addr}:{server.server_port}/metrics",
        markup=False,
        highlight=False,
    )
    stop = threading.Event()
    import signal

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    server.shutdown()


def register_status(root: typer.Typer) -> None:
    """Add ``status`` to the ``kafka-archive`` command line."""
    root.command(name="status", help=STATUS_HELP)(status_command)


def register_metrics(root: typer.Typer) -> None:
    """Add the ``metrics`` group (``metrics serve``) to the ``kafka-archive`` command line."""
    app = typer.Typer(help=METRICS_HELP, no_args_is_help=True, add_completion=False)
    app.command(name="serve", help=SERVE_HELP)(serve_command)
    root.add_typer(app, name="metrics")
