"""The CLI's way into the settings and the services: options over the other sources, and
typed failures turned into one clean error (exit 1, or 2 for a usage error) with a hint.

Every command resolves ``--db``/``--store`` (and the other settings) through
:func:`cli_settings`: an option given on the command line wins, then the environment, then the
configuration file (:mod:`kafka_archive.settings`; the CLI reads no Airflow Variables).
"""

from __future__ import annotations

from typing import Any

from kafka_archive.cli.errors import fail_error
from kafka_archive.cli.output import fail
from kafka_archive.settings import Settings, SettingsError, load_settings

__all__ = [
    "cli_settings",
    "fail_archive_read",
    "open_catalog_or_fail",
    "open_store_or_fail",
    "parse_partitions",
]


def cli_settings(as_json: bool, **explicit: object) -> Settings:
    """The effective settings with the command's options (``None``/empty: not given) on top."""
    try:
        return load_settings(explicit)
    except SettingsError as exc:  # exit 2: a usage error (SettingsError.exit_code)
        fail_error(exc, as_json=as_json)


def open_catalog_or_fail(db: str | None, as_json: bool, *, create: bool = False) -> Any:
    """The catalog that ``--db`` or the settings name, or a clean exit 1 naming it (password
    hidden) with a hint.

    ``create`` only for writers (``catalog build``, the offsets follower): query commands
    never create a catalog (a mistyped ``--db`` is "no catalog at PATH", not an empty answer).
    """
    from kafka_archive.catalog.db import CatalogError, open_catalog
    from kafka_archive.redact import redact_text, redact_url

    url = cli_settings(as_json, db=db).db
    if not url:
        fail(
            "no catalog given",
            hint="pass --db PATH_OR_URL or set KAFKA_ARCHIVE_DB",
            as_json=as_json,
        )
    try:
        return open_catalog(url, create=create)
    except CatalogError as exc:
        fail_error(exc, as_json=as_json, details={"error": type(exc).__name__})
    except Exception as exc:  # a migration or driver error not classified above
        fail(
            f"cannot open the catalog {redact_url(url)}: {redact_text(exc)}",
            hint="check the URL, that the database server runs, and your credentials",
            as_json=as_json,
        )


def open_store_or_fail(uri: str | None, as_json: bool, *, required: bool = True) -> Any:
    """The store that ``--store`` or the settings name (``None`` when none is and it is not
    ``required``), or a clean exit 1 with a hint."""
    from kafka_archive.store import StoreError, open_store

    uri = cli_settings(as_json, store=uri).store
    if not uri:
        if not required:
            return None
        fail(
            "no archive store given",
            hint="pass --store URI or set KAFKA_ARCHIVE_STORE",
            as_json=as_json,
        )
    try:
        return open_store(uri)
    except StoreError as exc:
        fail_error(exc, as_json=as_json)


#: the most partitions one ``--partitions`` may select (a topic's partitions are counted in
#: thousands at most; a typo such as 0-99999999999 must not build a list of billions)
MAX_LISTED_PARTITIONS = 100_000
#: the largest partition id Kafka has (an int32)
MAX_PARTITION_ID = 2**31 - 1


def parse_partitions(text: str | None, as_json: bool) -> list[int] | None:
    """``--partitions`` as users write it (``0,1,2``, ``0-5`` or both), ``None`` for all;
    anything else is a usage error (exit 2): not a number, an inverted range, an id beyond
    Kafka's int32, or more than :data:`MAX_LISTED_PARTITIONS` partitions (checked before any
    list is built). Ids beyond the topic's own partitions are the planner's to refuse."""
    if not text:
        return None
    pieces: list[tuple[int, int]] = []
    try:
        for part in text.split(","):
            if "-" in part:
                lo, hi = part.split("-", 1)
                pieces.append((int(lo), int(hi)))
            else:
                pieces.append((int(part), int(part)))
    except ValueError:
        fail(f"cannot read partitions {text!r}", hint="use 0,1,2 or 0-5", code=2, as_json=as_json)
    for a, b in pieces:
        if not 0 <= a <= MAX_PARTITION_ID or not 0 <= b <= MAX_PARTITION_ID:
            fail(
                f"--partitions {text!r}: a partition id is 0..{MAX_PARTITION_ID}",
                hint="list the topic's partitions (kafka-archive catalog topics)",
                code=2,
                as_json=as_json,
            )
        if a > b:
            fail(
                f"--partitions {text!r}: the range {a}-{b} is inverted",
                hint=f"write it {b}-{a}",
                code=2,
                as_json=as_json,
            )
    if sum(b - a + 1 for a, b in pieces) > MAX_LISTED_PARTITIONS:
        fail(
            f"--partitions {text!r} selects more than {MAX_LISTED_PARTITIONS} partitions",
            hint="give the topic's own partitions (kafka-archive catalog topics), or leave "
            "--partitions out for all of them",
            code=2,
            as_json=as_json,
        )
    out: list[int] = []
    for a, b in pieces:
        out += range(a, b + 1)
    return out


def fail_archive_read(exc: BaseException, as_json: bool, *, bad_bytes_hint: str) -> None:
    """One clear exit for the errors of commands that read the archive through the replay's
    planner and reader (``replay``, ``export``): a ``ReplayError`` with its own fields (e.g. a
    gaps error's holes, for ``--json``), bad bytes naming the object and the byte (with
    ``bad_bytes_hint``: what the command does on a re-run), a store failure. Returns when
    ``exc`` is none of these (the caller handles its own, then re-raises)."""
    from kafka_archive.replay.errors import ReplayError
    from kafka_archive.store import StoreError
    from segment_lib.errors import SegmentError

    if isinstance(exc, ReplayError):
        details = {k: v for k, v in exc.to_dict().items() if k not in ("message", "hint")}
        fail_error(exc, as_json=as_json, details=details)
    if isinstance(exc, SegmentError):
        fail(
            f"bad bytes in the archive: {exc}",
            hint=bad_bytes_hint,
            as_json=as_json,
            details=exc.to_dict(),
        )
    if isinstance(exc, StoreError):
        fail_error(exc, as_json=as_json)
