"""Replay clients made with librdkafka's log captured (:mod:`kafka_archive.client_log`), and a
setting librdkafka refuses reported as a :class:`~.errors.ReplayConfigError`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from confluent_kafka import KafkaError, KafkaException

from kafka_archive.client_log import CLIENT_LOG, CLIENT_LOG_SETTINGS

__all__ = ["CLIENT_LOG", "CLIENT_LOG_SETTINGS", "new_client"]

T = TypeVar("T")


def new_client(factory: Callable[[dict[str, Any]], T], config: dict[str, Any]) -> T:
    """``factory(config)`` (a confluent-kafka Producer/Consumer/AdminClient), with a setting
    librdkafka rejects (unknown name, bad value) reported as a
    :class:`~.errors.ReplayConfigError` naming it, instead of a bare ``KafkaException``.
    Secret values never appear in the message."""
    from kafka_archive.kafka_protocol.config import librdkafka_config
    from kafka_archive.replay.errors import ReplayConfigError
    from kafka_archive.replay.planning.spec import REDACTED, is_secret_setting

    try:
        return factory(librdkafka_config(config))
    except (KafkaException, ValueError, TypeError) as exc:
        err = exc.args[0] if exc.args else exc
        text = err.str() if isinstance(err, KafkaError) else str(err)
        for name, value in config.items():
            if is_secret_setting(str(name)) and isinstance(value, str) and value:
                text = text.replace(value, REDACTED)
        raise ReplayConfigError(
            f"the target client settings are not valid: {text}",
            hint="Check each --target-config NAME=VALUE (Airflow: target_config or the "
            "connection's extras) against librdkafka's CONFIGURATION.md.",
        ) from None
