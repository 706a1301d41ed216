"""A Kafka cluster's client settings from an Airflow connection (secrets resolved server side).

The connection's host (``host[:port][,host[:port]...]``, with the connection's port for a host
without one) is the bootstrap servers, its extra holds librdkafka settings (TLS, SASL), its login
and password become ``sasl.username`` / ``sasl.password``. Used by the replay DAG for its target
(:func:`kafka_archive.airflow.replay_tasks.resolve_target`) and by the fetch archiver's DAG for
its source clusters (:mod:`kafka_archive.airflow.fetch_tasks`): the secrets stay in Airflow's
connection store and never go through a Variable, XCom or the catalog.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["airflow_connection", "connection_client_settings"]


def airflow_connection(conn_id: str) -> Any:
    """The Airflow connection ``conn_id`` (inside a task; imports Airflow)."""
    from airflow.sdk import BaseHook

    return BaseHook.get_connection(conn_id)


def connection_client_settings(
    conn: Any, config: Mapping[str, str] | None = None
) -> tuple[str, dict[str, str]]:
    """``(bootstrap servers, librdkafka settings)`` of the connection ``conn``; ``config`` (the
    secret-free settings given with the request) wins over the connection's extra, the
    connection's login and password fill ``sasl.username`` / ``sasl.password`` when unset."""
    extra = conn.extra_dejson if hasattr(conn, "extra_dejson") else {}
    host = str(conn.host or "")
    servers = ",".join(
        h if ":" in h or not conn.port else f"{h}:{conn.port}" for h in host.split(",") if h
    )
    merged = {str(k): str(v) for k, v in (extra or {}).items()} | dict(config or {})
    if conn.login:
        merged.setdefault("sasl.username", str(conn.login))
    if conn.password:
        merged.setdefault("sasl.password", str(conn.password))
    return servers, merged
