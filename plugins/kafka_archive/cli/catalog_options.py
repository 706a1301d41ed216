"""What the ``catalog`` commands share: their options, time and duration parsing, the query
service opened with clean failures, the one call that turns a query's typed failure into a clean
exit, and the tables.

A module of its own (not :mod:`kafka_archive.cli.catalog`, which registers the commands) so that
the command modules (:mod:`~kafka_archive.cli.catalog_history`, ``catalog_verify``,
``catalog_views``, ``follow``) import these without importing the module that imports them.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

import typer

from kafka_archive.cli.context import open_catalog_or_fail, open_store_or_fail
from kafka_archive.cli.errors import fail_error
from kafka_archive.cli.output import JSON_OPTION_HELP, fail
from kafka_archive.timeparse import TimeParseError, parse_time_ms

__all__ = [
    "INT32_MAX",
    "INT64_MAX",
    "ClusterOpt",
    "DbOpt",
    "JsonOpt",
    "OptionalStoreOpt",
    "PartitionNum",
    "StoreOpt",
    "TopicOpt",
    "open_catalog",
    "open_store",
    "parse_duration_ms",
    "parse_time_or_fail",
    "print_catalog_table",
    "query_service",
    "run_query",
]

DbOpt = Annotated[
    str,
    typer.Option(
        "--db",
        help="Catalog database: a SQLite file path, sqlite:///path or postgresql://user@host/db "
        "(env KAFKA_ARCHIVE_DB).",
    ),
]
StoreOpt = Annotated[
    str,
    typer.Option(
        "--store",
        help="Archive store: file:///dir, a path, or s3://bucket/prefix (env KAFKA_ARCHIVE_STORE). "
        "Required: this command reads archived bytes.",
    ),
]
OptionalStoreOpt = Annotated[
    str,
    typer.Option(
        "--store",
        help="Archive store (file:///dir, a path, or s3://bucket/prefix), env "
        "KAFKA_ARCHIVE_STORE. Optional: without it the catalog alone answers an offset range; "
        "with it one ranged read per partition makes the answer exact.",
    ),
]
ClusterOpt = Annotated[str, typer.Option("--cluster", help="Cluster name, as archived.")]
TopicOpt = Annotated[str, typer.Option("--topic", help="Topic name.")]
JsonOpt = Annotated[bool, typer.Option("--json", help=JSON_OPTION_HELP)]

#: SQL BIGINT (SQLite INTEGER) bounds: every number an option hands to a query must fit
INT64_MAX = (1 << 63) - 1
INT32_MAX = (1 << 31) - 1
PartitionNum = Annotated[
    int, typer.Option("--partition", "-p", help="Partition.", min=0, max=INT32_MAX)
]

_DURATION = re.compile(r"(\d+)(ms|s|m|h|d|w)")
_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}


def parse_duration_ms(text: str) -> int:
    """``5m``, ``1h30m``, ``90s``, ``1d`` -> milliseconds (ValueError otherwise)."""
    value = text.strip().lower()
    parts = _DURATION.findall(value)
    if not parts or "".join(n + u for n, u in parts) != value:
        raise ValueError(f"cannot read {text!r} as a duration; use e.g. 1m, 5m, 1h, 1d")
    return sum(int(n) * _UNITS[u] for n, u in parts)


def parse_time_or_fail(text: str, option: str, as_json: bool) -> int:
    """``text`` (the value of ``option``) as epoch milliseconds in SQL BIGINT range, or a
    clean exit 1 naming the option."""
    try:
        ms = parse_time_ms(text)
    except TimeParseError as exc:
        fail(f"{option}: {exc}", as_json=as_json)
    if not -INT64_MAX <= ms <= INT64_MAX:
        fail(
            f"{option}: {text!r} is out of range (epoch milliseconds must fit in 64 bits)",
            hint="give a date such as 2026-11-20T03:00Z, epoch ms, or a relative time like -2h",
            as_json=as_json,
        )
    return ms


def open_catalog(db: str | None, as_json: bool, *, create: bool = False) -> Any:
    """The catalog (see :func:`kafka_archive.cli.context.open_catalog_or_fail`)."""
    return open_catalog_or_fail(db, as_json, create=create)


def open_store(uri: str | None, as_json: bool) -> Any:
    """The archive store, required (see :func:`kafka_archive.cli.context.open_store_or_fail`)."""
    return open_store_or_fail(uri, as_json)


def query_service(
    db: str | None, as_json: bool, *, store: str | None = None, store_use: str = "none"
) -> Any:
    """The catalog query service, its catalog (and store) opened here so that failures exit
    cleanly. ``store_use``: ``none`` (the question reads no archived bytes), ``optional``
    (exact answers when a store is configured) or ``required``."""
    from kafka_archive.services.catalog_queries import CatalogQueryService

    catalog = open_catalog(db, as_json)
    st = None
    if store_use != "none":
        st = open_store_or_fail(store, as_json, required=store_use == "required")
    return CatalogQueryService(catalog=catalog, store=st)


def run_query(as_json: bool, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Call a query, turning its typed failures into a clean exit
    (:func:`kafka_archive.cli.errors.fail_error`; damaged archived bytes say what lists them)."""
    from kafka_archive.errors import KafkaArchiveError
    from segment_lib.errors import SegmentError

    try:
        return fn(*args, **kwargs)
    except KafkaArchiveError as exc:
        fail_error(exc, as_json=as_json)
    except SegmentError as exc:
        fail_error(exc, as_json=as_json, hint=_DAMAGED_HINT)


_DAMAGED_HINT = "the archived bytes are damaged; `catalog gaps` lists known problems"


_LEFT = {
    "topic",
    "object",
    "kind",
    "severity",
    "detail",
    "time",
    "start",
    "first time",
    "last time",
    "what",
    "offsets",
    "note",
    "cluster",
}


def print_catalog_table(title: str, columns: list[str], rows: list[list[Any]]) -> None:
    """A table, or ``key: value`` blocks when it would not fit the terminal
    (:func:`kafka_archive.cli.tables.print_table`)."""
    from kafka_archive.cli.tables import print_table

    print_table(title, columns, rows, left=_LEFT)
