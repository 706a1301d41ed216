"""Airflow glue of the platform: thin helpers that DAG tasks call (Airflow SDK imports only
inside functions, so the platform imports without Airflow).

:func:`protect_task_logs` is called at the top of every DAG file: a task runs in the process
that parsed its DAG file, so from then on every log record of the task (Airflow's task log
included, whatever handler writes it) has its secrets redacted.
"""

from __future__ import annotations

__all__ = ["protect_task_logs"]


def protect_task_logs() -> None:
    """Install log redaction for this process (idempotent; see
    :func:`kafka_archive.redact.install_log_redaction`): passwords, secret keys and tokens never
    reach a task log, and the secret values of the environment are registered."""
    from kafka_archive.redact import install_log_redaction

    install_log_redaction()
