"""Checks ``catalog build`` makes at the CLI boundary, each ending in a clean error (exit 1,
no traceback): a store that does not exist or holds nothing, a bogus Spark master, and a build
that refused or failed some manifests (a Spark that does not start is the build service's
:class:`~kafka_archive.services.catalog_build.SparkStartFailed`)."""

from __future__ import annotations

from typing import Any, NoReturn

from kafka_archive.cli.errors import fail_error
from kafka_archive.cli.output import fail

__all__ = [
    "check_spark_master_or_fail",
    "check_store_or_fail",
    "exit_for_build",
]


def check_store_or_fail(store: Any, cluster: str | None, as_json: bool) -> None:
    """The store must exist and hold something (of ``cluster``, when given).

    An empty store is an error rather than a build of nothing: a build that catalogs nothing
    from a store that holds nothing is, in practice, a mistyped path, bucket, prefix or
    cluster, and a success exit would let a scheduled build look healthy forever."""
    from kafka_archive.archive.layout import cluster_prefix
    from kafka_archive.store import LocalStore, StoreError

    if isinstance(store, LocalStore) and not store.root.is_dir():
        fail(
            f"the archive store {store.uri} does not exist"
            + (" (it is a file, not a directory)" if store.root.exists() else ""),
            hint="check --store (or KAFKA_ARCHIVE_STORE): it names the directory the archiver "
            "writes to",
            as_json=as_json,
        )
    try:
        prefix = cluster_prefix(cluster) if cluster is not None else ""
    except ValueError as exc:
        fail(f"--cluster: {exc}", as_json=as_json)
    try:
        first = next(iter(store.list(prefix)), None)
    except StoreError as exc:
        fail_error(exc, as_json=as_json)
    if first is None:
        what = f"nothing of cluster {cluster!r}" if cluster is not None else "nothing"
        fail(
            f"the archive store {store.uri} holds {what}",
            hint="check --store and --cluster; run `kafka-archive archive` to fill the store",
            as_json=as_json,
        )


def check_spark_master_or_fail(master: str, as_json: bool) -> str:
    from kafka_archive.spark.master import InvalidSparkMaster, check_spark_master

    try:
        return check_spark_master(master)
    except InvalidSparkMaster as exc:
        fail(f"--spark-master: {exc}", hint=exc.hint, as_json=as_json)


def exit_for_build(report: Any, store_uri: str, cluster: str | None, as_json: bool) -> None:
    """Exit non-zero, naming them, when the build found no manifest at all or could not
    catalog some (store failures, refused manifests and objects)."""
    if report.manifests == 0:
        what = f" of cluster {cluster!r}" if cluster is not None else ""
        fail(
            f"no segment manifests{what} found in the archive store {store_uri}",
            hint="check --store and --cluster; manifests live under "
            "<cluster>/<topic>/<partition>/manifests/",
            as_json=as_json,
        )
    bad = {str(f.get("manifest_key")): str(f.get("manifest_key")) for f in report.failed}
    # a corrupt or missing object is both a failure (retried) and a problem (recorded): once
    bad.update({p["manifest_key"]: f"{p['manifest_key']} ({p['kind']})" for p in report.problems})
    if bad:
        _fail_naming(list(bad.values()), as_json)


def _fail_naming(bad: list[str], as_json: bool) -> NoReturn:
    shown = ", ".join(bad[:10]) + (f" and {len(bad) - 10} more" if len(bad) > 10 else "")
    fail(
        f"{len(bad)} manifest(s) could not be cataloged: {shown}",
        hint="everything else was cataloged; `kafka-archive catalog gaps` shows each problem "
        "with its key, byte position and reason",
        as_json=as_json,
        details={"failures": bad},
    )
