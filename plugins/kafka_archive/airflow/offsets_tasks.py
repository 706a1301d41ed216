"""What the ``kafka_archive_offsets`` DAG's task does, without Airflow (tests call it directly).

Configuration (:class:`FollowJobConfig`), from the Airflow Variable ``kafka_archive_offsets``
(JSON) when set, else the environment::

    {"db_url": "postgresql://catalog@db/catalog",      # or $KAFKA_ARCHIVE_DB
     "clusters": [{"cluster": "prod",                  # or $KAFKA_ARCHIVE_OFFSETS_CLUSTER
                   "bootstrap": "kafka-1:9092",         # or $KAFKA_ARCHIVE_OFFSETS_BOOTSTRAP
                   "consumer_config": {"security.protocol": "SSL"}}],
     "max_seconds": 300}

Each run follows every cluster's ``__consumer_offsets`` until caught up (at most
``max_seconds`` per cluster), exactly once into the catalog
(:func:`kafka_archive.offsets_follower.loop.follow_offsets`). A run killed at any point loses
nothing: the next resumes from the positions stored with the rows.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pydantic import Field

from kafka_archive.frozen import FrozenModel
from kafka_archive.settings import VariableReader, env_var, load_settings

__all__ = [
    "BOOTSTRAP_ENV",
    "CLUSTER_ENV",
    "CONFIG_VARIABLE",
    "FollowJobConfig",
    "FollowedCluster",
    "load_follow_config",
    "run_follow",
]

CONFIG_VARIABLE = "kafka_archive_offsets"
DB_ENV = env_var("db")
CLUSTER_ENV = env_var("offsets_cluster")
BOOTSTRAP_ENV = env_var("offsets_bootstrap")


class FollowedCluster(FrozenModel):
    """One cluster whose ``__consumer_offsets`` is followed."""

    cluster: str
    bootstrap: str
    consumer_config: dict[str, str] = Field(default_factory=dict)


class FollowJobConfig(FrozenModel):
    """Where the catalog is, which clusters to follow, and how long one run may take."""

    db_url: str
    clusters: list[FollowedCluster]
    max_seconds: float = Field(default=300.0, gt=0)


def load_follow_config(
    raw: str | None, *, variables: VariableReader | None = None
) -> FollowJobConfig:
    """The configuration from the Variable's JSON text (``raw``) for the job's own fields;
    the catalog (``db_url``) and the single cluster of ``KAFKA_ARCHIVE_OFFSETS_CLUSTER`` /
    ``..._BOOTSTRAP`` are settings, with the platform's one precedence
    (:mod:`kafka_archive.settings`: environment over Airflow Variables, the job Variable's keys
    included, over the configuration file).

    Raises:
        ValueError: nothing configured, or an invalid configuration.
    """
    data: dict[str, Any] = json.loads(raw) if raw else {}
    settings = load_settings(variables=variables, job_variable=data)
    data["db_url"] = settings.db or ""
    if "clusters" not in data and settings.offsets_cluster and settings.offsets_bootstrap:
        data["clusters"] = [
            {"cluster": settings.offsets_cluster, "bootstrap": settings.offsets_bootstrap}
        ]
    if not data["db_url"]:
        raise ValueError(f"no catalog: set db_url in Variable {CONFIG_VARIABLE} or {DB_ENV}")
    if not data.get("clusters"):
        raise ValueError(
            f"no cluster to follow: set clusters in Variable {CONFIG_VARIABLE} or "
            f"{CLUSTER_ENV} and {BOOTSTRAP_ENV}"
        )
    return FollowJobConfig.model_validate(data)


def follow_in_task(log: Callable[[str], None]) -> list[dict[str, Any]]:
    """The follow task's body: the configuration as a running task reads it, then
    :func:`run_follow`."""
    from airflow.sdk import Variable

    from kafka_archive.settings import airflow_variable_reader

    raw = Variable.get(CONFIG_VARIABLE, default=None)
    return run_follow(load_follow_config(raw, variables=airflow_variable_reader()), log)


def run_follow(
    config: FollowJobConfig, log: Callable[[str], None] = lambda _m: None
) -> list[dict[str, Any]]:
    """Follow every configured cluster until caught up; one report (JSON-able) per cluster.

    Raises:
        RuntimeError: a cluster did not catch up within ``max_seconds`` (what was read is
            stored; the next run goes on from there), after every cluster had its turn.
    """
    from kafka_archive.services.offsets_follower import OffsetsFollowerService
    from kafka_archive.settings import Settings

    targets = [(c.cluster, c.bootstrap, c.consumer_config) for c in config.clusters]
    with OffsetsFollowerService(Settings(db=config.db_url)) as service:
        reports = service.follow_each(targets, max_seconds=config.max_seconds, log=log)
    behind = [r.cluster for r in reports if not r.caught_up]
    if behind:
        raise RuntimeError(
            f"not caught up within {config.max_seconds}s: {', '.join(behind)} (what was read "
            "is stored; the next run continues)"
        )
    return [r.to_json() for r in reports]
