"""What the catalog holds, for people: ``catalog clusters`` and the text of ``catalog topics``.

The counts are named as :mod:`kafka_archive.catalog.holdings` defines them (``records``,
``offset_span``, problems by severity), in text and ``--json`` alike, so no two commands show
different numbers under one name.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

import typer

from kafka_archive.cli.catalog_options import DbOpt
from kafka_archive.cli.output import JSON_OPTION_HELP, console, emit_json
from kafka_archive.counts import IN_LOG
from kafka_archive.timeparse import format_ms

__all__ = ["print_topics", "register", "severity_summary"]


def severity_summary(counts: Mapping[str, int]) -> str:
    """``"2 error(s), 1 warning(s), 3 info"``: the per-severity totals both ``catalog gaps``
    and ``catalog topics`` print (worst first; warnings and info left out when there are
    none)."""
    from kafka_archive.catalog.gaps import SEVERITIES

    n = Counter(counts)
    parts = [
        f"{n[s]} {s}" + ("" if s == "info" else "(s)") for s in SEVERITIES if n[s] or s == "error"
    ]
    return ", ".join(parts)


def print_topics(cluster: str, held: Sequence[Any]) -> None:
    """The table of ``catalog topics`` (:class:`~kafka_archive.catalog.holdings.
    PartitionHoldings` rows) and a line of totals that ``catalog gaps`` repeats."""
    from kafka_archive.cli.catalog_options import print_catalog_table as _table

    _table(
        f"cluster {cluster}",
        [
            "topic",
            "partition",
            "segments",
            "offsets",
            "offset_span",
            "first time",
            "last time",
            IN_LOG,
            "bytes",
            "errors",
            "warnings",
            "info",
        ],
        [
            [
                h.topic,
                h.partition,
                h.segments,
                f"{h.first_offset}-{h.last_offset}",
                h.offset_span,
                format_ms(h.first_timestamp),
                format_ms(h.max_timestamp),
                h.records,
                h.bytes,
                h.errors,
                h.warnings,
                h.info,
            ]
            for h in held
        ],
    )
    totals = {
        "error": sum(h.errors for h in held),
        "warning": sum(h.warnings for h in held),
        "info": sum(h.info for h in held),
    }
    console.print(
        f"{sum(h.records for h in held)} {IN_LOG} (committed and aborted; transaction "
        f"markers are offsets, not records), {severity_summary(totals)}"
        + (" (details: `kafka-archive catalog gaps`)" if any(totals.values()) else ""),
        markup=False,
    )


def clusters(
    db: DbOpt = "",
    as_json: Annotated[bool, typer.Option("--json", help=JSON_OPTION_HELP)] = False,
) -> None:
    """The clusters the catalog holds: topics, partitions, segments, the archived time span
    and when a build last finished.

    Example: kafka-archive catalog clusters --db catalog.db
    """
    from kafka_archive.cli.catalog_options import print_catalog_table as _table
    from kafka_archive.cli.catalog_options import query_service as _service
    from kafka_archive.cli.catalog_options import run_query as _run

    with _service(db, as_json) as svc:
        found = _run(as_json, svc.clusters)
    if as_json:
        for c in found:
            emit_json(c.to_json())
        return
    if not found:
        console.print(
            "the catalog holds no cluster yet: run `kafka-archive catalog build`", markup=False
        )
        return
    _table(
        f"{len(found)} cluster(s)",
        ["cluster", "topics", "partitions", "segments", "first time", "last time", "last build"],
        [
            [
                c.cluster,
                c.topics,
                c.partitions,
                c.segments,
                format_ms(c.first_timestamp),
                format_ms(c.max_timestamp),
                format_ms(c.last_build_ms) if c.last_build_ms >= 0 else "never finished",
            ]
            for c in found
        ],
    )


def register(catalog_app: typer.Typer) -> None:
    """Add ``clusters`` to ``kafka-archive catalog``."""
    catalog_app.command("clusters")(clusters)
