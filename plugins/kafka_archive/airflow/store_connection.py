"""Give a DAG task the object store's credentials from an Airflow connection.

Set the connection id with the environment variable ``KAFKA_ARCHIVE_AWS_CONN_ID`` or the Airflow
Variable ``kafka_archive_aws_conn_id`` (e.g. ``aws_default``). Unset, nothing happens and the
store uses the worker's own AWS environment, profile or instance role (IRSA). Call
:func:`use_store_connection` first thing in every task that opens the store.

Either way it first installs log redaction for the task process
(:func:`kafka_archive.redact.install_log_redaction`), so no log record of the task (its
Airflow task log included) shows a password, secret key or token.
"""

from __future__ import annotations

import logging
import os

from kafka_archive.redact import install_log_redaction
from kafka_archive.store.credentials import aws_env_from_connection

__all__ = ["CONN_ID_ENV", "CONN_ID_VARIABLE", "use_store_connection"]

CONN_ID_ENV = "KAFKA_ARCHIVE_AWS_CONN_ID"
CONN_ID_VARIABLE = "kafka_archive_aws_conn_id"

log = logging.getLogger(__name__)


def _conn_id() -> str | None:
    value = os.environ.get(CONN_ID_ENV)
    if value:
        return value
    try:
        from airflow.sdk import Variable

        got = Variable.get(CONN_ID_VARIABLE, default=None)
    except Exception as exc:  # outside a task (CLI, unit tests) there are no Variables to read
        log.debug("no Airflow Variable %s: %s", CONN_ID_VARIABLE, exc)
        return None
    return str(got) if got else None


def use_store_connection() -> str | None:
    """Export the configured connection's credentials to this task's environment; returns the
    connection id used (None when none is configured). The secret is never logged: log
    redaction is installed for the whole task first, and the secret values are registered."""
    install_log_redaction()
    conn_id = _conn_id()
    if not conn_id:
        return None
    from airflow.sdk.bases.hook import BaseHook

    conn = BaseHook.get_connection(conn_id)
    env = aws_env_from_connection(conn.login, conn.password, conn.extra_dejson)
    os.environ.update(env)
    log.info(
        "object store credentials from Airflow connection %r (%s)", conn_id, ", ".join(sorted(env))
    )
    return conn_id
