"""No secret in a replay request: the guard of the on-call API and the replay DAG's Params.

A request's client settings (``target_config``: librdkafka settings; ``topic_config``: the
created topic's configs) end up in the Airflow DAG run's ``conf``, which every viewer of the
DAG can read through Airflow's REST API. Secrets (``sasl.password``, ``ssl.key.password``,
``ssl.key.pem``, ``sasl.oauthbearer.client.secret``, ... : every name
:func:`kafka_archive.redact.is_secret_key` calls secret) belong in the Airflow connection named
by ``target``, which the task resolves server side. So they are refused in three places, each
before anything is stored or done:

* the on-call API (422, :func:`secret_settings`);
* Airflow itself when a run is created: :data:`SECRET_FREE_SETTINGS` is the Params' JSON
  Schema (``propertyNames`` must not match :data:`kafka_archive.redact.SECRET_KEY_PATTERN`),
  and Airflow validates a run's conf against it before storing the run (a trigger through
  Airflow's REST API with such a conf is answered 400, the value never echoed: the schema
  refuses the key's *name*);
* the DAG's tasks (:func:`refuse_secret_settings`, for a run created some other way).

Messages name the offending keys, never their values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kafka_archive.redact import SECRET_KEY_PATTERN, is_secret_key
from kafka_archive.replay.errors import ReplayConfigError

__all__ = [
    "CLIENT_SETTINGS_FIELDS",
    "SECRET_FREE_SETTINGS",
    "SECRET_HINT",
    "refuse_secret_settings",
    "secret_settings",
]

#: the request fields that hold NAME -> VALUE settings
CLIENT_SETTINGS_FIELDS: Final = ("target_config", "topic_config")

#: JSON Schema of a settings object without secret-named keys (string values)
SECRET_FREE_SETTINGS: Final[dict[str, Any]] = {
    "type": "object",
    "additionalProperties": {"type": "string"},
    "propertyNames": {"not": {"pattern": SECRET_KEY_PATTERN}},
}

SECRET_HINT: Final = (
    "put secrets (passwords, keys, tokens) in an Airflow connection and give its id as "
    "'target': its login/password become sasl.username/sasl.password and its extra holds the "
    "other librdkafka settings; a run's settings are readable by every viewer of the DAG"
)


def secret_settings(params: Mapping[str, Any]) -> list[str]:
    """``field.key`` of every secret-named key in ``params``' settings fields (sorted; empty
    when there is none). Anything that is not a mapping is left to the schema."""
    found: list[str] = []
    for field in CLIENT_SETTINGS_FIELDS:
        value = params.get(field)
        if isinstance(value, Mapping):
            found.extend(f"{field}.{k}" for k in value if is_secret_key(str(k)))
    return sorted(found)


def refuse_secret_settings(params: Mapping[str, Any]) -> None:
    """Raise :class:`ReplayConfigError` (naming the keys, not their values, with
    :data:`SECRET_HINT`) when ``params`` carries a secret-named setting."""
    found = secret_settings(params)
    if found:
        raise ReplayConfigError(
            f"secret settings are refused in a replay request: {', '.join(found)}",
            hint=SECRET_HINT,
        )
