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
from kafka_archive.settings import env_var
from kafka_archive.store.credentials import aws_env_from_connection

__all__ = ["CONN_ID_ENV", "CONN_ID_VARIABLE", "use_store_connection"]

CONN_ID_ENV = env_var("aws_conn_id")
CONN_ID_VARIABLE = "kafka_archive_aws_conn_id"

log = logging.getLogger(__name__)


def _conn_id() -> str | None:
    """The ``aws_conn_id`` setting (environment over the Airflow Variable over the file)."""
    from kafka_archive.settings import airflow_variable_reader, load_settings

    try:
        reader = airflow_variable_reader()
    except ImportError:  # no Airflow (unit tests): the environment and the file only
        reader = None
    return load_settings(variables=reader).aws_conn_id


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
