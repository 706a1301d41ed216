"""Object-store credentials from an Airflow connection, as the standard AWS environment.

The store reads credentials the way every AWS SDK does (environment, profile, instance role,
IRSA). An Airflow connection of type ``aws`` (the Amazon provider's layout) is turned into that
same environment for the task process, so one mechanism serves the CLI, the DAG tasks and the
Spark executors they start, and no secret is ever passed as an argument, stored in the catalog,
or logged.

Mapping (Amazon provider conventions): login -> ``AWS_ACCESS_KEY_ID``, password ->
``AWS_SECRET_ACCESS_KEY``; extra ``aws_session_token``, ``region_name``, ``profile_name``,
``endpoint_url`` (or ``service_config.s3.endpoint_url``) -> ``AWS_SESSION_TOKEN``,
``AWS_REGION``/``AWS_DEFAULT_REGION``, ``AWS_PROFILE``, ``AWS_ENDPOINT_URL_S3``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka_archive.redact import SECRET_ENV_NAMES, register_secret

__all__ = ["SECRET_ENV_NAMES", "aws_env_from_connection"]


def aws_env_from_connection(
    login: str | None, password: str | None, extra: Mapping[str, Any] | None
) -> dict[str, str]:
    """The AWS environment variables an ``aws`` connection stands for (empty fields omitted).

    The secret key and session token are registered with :func:`kafka_archive.redact.
    register_secret`, so they are hidden from every output of this process from now on."""
    extra = extra or {}
    env: dict[str, str] = {}
    if login:
        env["AWS_ACCESS_KEY_ID"] = login
    if password:
        env["AWS_SECRET_ACCESS_KEY"] = password
        register_secret(password)
    token = extra.get("aws_session_token")
    if token:
        env["AWS_SESSION_TOKEN"] = str(token)
        register_secret(str(token))
    region = extra.get("region_name") or extra.get("region")
    if region:
        env["AWS_REGION"] = env["AWS_DEFAULT_REGION"] = str(region)
    profile = extra.get("profile_name")
    if profile:
        env["AWS_PROFILE"] = str(profile)
    service = extra.get("service_config") or {}
    endpoint = extra.get("endpoint_url") or (service.get("s3") or {}).get("endpoint_url")
    if endpoint:
        env["AWS_ENDPOINT_URL_S3"] = str(endpoint)
    return env
