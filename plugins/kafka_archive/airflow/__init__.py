"""Airflow glue of the platform: thin helpers that DAG tasks call (Airflow SDK imports only
inside functions, so the platform imports without Airflow).

:func:`protect_task_logs` is called at the top of every DAG file: a task runs in the process
that parsed its DAG file, so from then on every log record of the task (Airflow's task log
included, whatever handler writes it) has its secrets redacted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["dag_params", "protect_task_logs"]


def protect_task_logs() -> None:
    """Install log redaction for this process (idempotent; see
    :func:`kafka_archive.redact.install_log_redaction`): passwords, secret keys and tokens never
    reach a task log, and the secret values of the environment are registered."""
    from kafka_archive.redact import install_log_redaction

    install_log_redaction()


def dag_params(schema: Mapping[str, tuple[Any, dict[str, Any], str]]) -> dict[str, Any]:
    """A trigger form's Airflow ``Param`` objects from ``name -> (default, JSON Schema,
    description)``; a field whose default is ``""`` has none, so the form requires it."""
    from airflow.sdk import Param

    return {
        name: (
            Param(description=description, **json_schema)
            if default == ""
            else Param(default, description=description, **json_schema)
        )
        for name, (default, json_schema, description) in schema.items()
    }
