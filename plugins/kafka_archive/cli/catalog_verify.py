"""``kafka-archive catalog verify``: re-check the store against the catalog
(:mod:`kafka_archive.catalog.verify`)."""

from __future__ import annotations

from typing import Annotated

import typer

from kafka_archive.cli.catalog_options import ClusterOpt, DbOpt, JsonOpt, StoreOpt
from kafka_archive.cli.errors import fail_error
from kafka_archive.cli.output import console, emit_json, err_console, fail

__all__ = ["register", "verify"]


def verify(
    cluster: ClusterOpt,
    deep: Annotated[
        bool,
        typer.Option(
            "--deep",
            help="Also re-read every byte: whole-object SHA-256 and every batch CRC "
            "(default: sizes and existence only, no data read).",
        ),
    ] = False,
    db: DbOpt = "",
    store: StoreOpt = "",
    as_json: JsonOpt = False,
) -> None:
    """Re-check every cataloged object against the store; exit 1 if any fails.

    Shallow (default): each object and its manifest still exist with the size and checksum
    the catalog recorded. --deep: also re-reads the bytes (whole-object SHA-256, every batch
    CRC). Failures are recorded: `catalog gaps` and `catalog topics` show them.

    Example: kafka-archive catalog verify --cluster prod --deep
    """
    from kafka_archive.cli.catalog_checks import check_store_or_fail
    from kafka_archive.cli.catalog_options import query_service as _service
    from kafka_archive.store import StoreError

    with _service(db, as_json, store=store, store_use="required") as svc:
        # a wrong --store would make every object "missing": refuse it before recording anything
        check_store_or_fail(svc.resources.store(), cluster, as_json)
        try:
            report = svc.verify(cluster, deep=deep)
        except StoreError as exc:
            fail_error(exc, as_json=as_json)
    if as_json:
        emit_json({"kind": "verify", **report.to_json()})
    else:
        how = "deep" if deep else "shallow"
        console.print(f"{how} verify of {cluster}: {report.checked} segment version(s) checked")
        for p in report.problems:
            at = f" at byte {p.position}" if p.position is not None else ""
            err_console.print(f"[red]{p.kind}:[/] {p.object_key}{at}: {p.reason}")
    if report.checked == 0:
        fail(
            f"the catalog holds no segment of cluster {cluster!r} to verify",
            hint="run `kafka-archive catalog build` first, or check --cluster",
            as_json=as_json,
        )
    if report.problems:
        fail(
            f"{len(report.problems)} of {report.checked} cataloged object(s) failed verification",
            hint="`kafka-archive catalog gaps` lists them; restore the objects from another "
            "copy and run verify again",
            as_json=as_json,
        )


def register(app: typer.Typer) -> None:
    """Add ``verify`` to ``kafka-archive catalog``."""
    app.command("verify")(verify)
