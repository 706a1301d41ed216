"""librdkafka settings mapped to kafka-python's: one set of client settings (``-X KEY=VALUE``)
for every client of a cluster, whichever library speaks to it.

The platform's Kafka clients are librdkafka's (confluent-kafka) except where the protocol's raw
record bytes are needed - the offsets follower's raw Fetch, batch-level replay's Produce - which
go through kafka-python's protocol layer (:mod:`kafka_archive.kafka_protocol`). Users give
librdkafka's setting names everywhere; :func:`kafka_python_config` maps the connection's, drops
the ones only librdkafka's own consumer/producer use, and refuses the rest by name (never by
value: it may be a secret).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kafka_archive.errors import KafkaArchiveError

__all__ = ["UnsupportedRawSetting", "kafka_python_config"]


class UnsupportedRawSetting(KafkaArchiveError, ValueError):
    """A client setting the kafka-python protocol client cannot apply (the message names the
    setting, never its value)."""


#: librdkafka settings that concern only librdkafka's own consumer or producer (group, commits,
#: isolation, batching, queues, logging, timeouts of its own): nothing a protocol client needs
_CLIENT_ONLY: Final = frozenset(
    {
        "group.id",
        "group.instance.id",
        "enable.auto.commit",
        "enable.auto.offset.store",
        "auto.offset.reset",
        "isolation.level",
        "enable.partition.eof",
        "logger",
        "error_cb",
        "stats_cb",
        "throttle_cb",
        "log_level",
        "debug",
        "log.connection.close",
        "session.timeout.ms",
        "heartbeat.interval.ms",
        "max.poll.interval.ms",
        "fetch.wait.max.ms",
        "fetch.min.bytes",
        "fetch.max.bytes",
        "max.partition.fetch.bytes",
        "queued.min.messages",
        "queued.max.messages.kbytes",
        "statistics.interval.ms",
        "socket.keepalive.enable",
        "ssl.endpoint.identification.algorithm",
        # the replay producer's (batch-level replay sends its own requests)
        "enable.idempotence",
        "acks",
        "linger.ms",
        "batch.size",
        "batch.num.messages",
        "compression.type",
        "compression.codec",
        "queue.buffering.max.messages",
        "queue.buffering.max.kbytes",
        "queue.buffering.max.ms",
        "transaction.timeout.ms",
        "transactional.id",
        "message.timeout.ms",
        "delivery.timeout.ms",
        "message.max.bytes",
        "retries",
        "retry.backoff.ms",
        "topic.metadata.refresh.interval.ms",
        "api.version.request",
        "broker.address.family",
    }
)

#: librdkafka setting -> kafka-python argument, values passed as they are
_DIRECT: Final = {
    "bootstrap.servers": "bootstrap_servers",
    "client.id": "client_id",
    "ssl.ca.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.key.password": "ssl_password",
    "ssl.crl.location": "ssl_crlfile",
    "sasl.username": "sasl_plain_username",
    "sasl.password": "sasl_plain_password",
}
_INTS: Final = {
    "request.timeout.ms": "request_timeout_ms",
    "socket.timeout.ms": "request_timeout_ms",
    "reconnect.backoff.ms": "reconnect_backoff_ms",
    "reconnect.backoff.max.ms": "reconnect_backoff_max_ms",
    "metadata.max.age.ms": "metadata_max_age_ms",
    "connections.max.idle.ms": "connections_max_idle_ms",
}
_PROTOCOLS: Final = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
#: (GSSAPI and OAUTHBEARER need settings librdkafka spells differently - keytab, token
#: endpoint - that are not mapped: refused, not half applied)
_MECHANISMS: Final = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


def kafka_python_config(conf: Mapping[str, Any]) -> dict[str, Any]:
    """kafka-python arguments equivalent to the librdkafka settings ``conf`` (a follower's
    consumer, a replay target's producer).

    Settings of librdkafka's own consumer or producer (group, commits, isolation, batching,
    logging) are dropped; the connection's (servers, client id, security protocol, SASL, SSL
    files) are mapped.

    Raises:
        UnsupportedRawSetting: a setting (or a value of ``security.protocol``,
            ``sasl.mechanism(s)``, ``ssl.endpoint.identification.algorithm``) with no
            kafka-python equivalent; the message names the setting, never a value of a secret.
    """
    out: dict[str, Any] = {}
    for key, value in conf.items():
        if key in _DIRECT:
            out[_DIRECT[key]] = value
        elif key in _INTS:
            out[_INTS[key]] = _int_setting(key, value)
        elif key == "security.protocol":
            proto = str(value).upper()
            if proto not in _PROTOCOLS:
                raise UnsupportedRawSetting(
                    f"security.protocol {value!r} is not one of {', '.join(_PROTOCOLS)}"
                )
            out["security_protocol"] = proto
        elif key in ("sasl.mechanism", "sasl.mechanisms"):
            mech = str(value).upper()
            if mech not in _MECHANISMS:
                raise UnsupportedRawSetting(
                    f"{key} {value!r} is not one the protocol client supports "
                    f"({', '.join(_MECHANISMS)})"
                )
            out["sasl_mechanism"] = mech
        elif key in _CLIENT_ONLY:
            if key == "ssl.endpoint.identification.algorithm":
                out["ssl_check_hostname"] = str(value).lower() == "https"
        else:
            raise UnsupportedRawSetting(
                f"the setting {key!r} cannot be applied to the Kafka protocol client "
                "(kafka-python) of the offsets follower's raw reader or of batch-level replay; "
                "pass only connection settings (see docs/catalog.md, 'The raw reader's settings')"
            )
    return out


def _int_setting(key: str, value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise UnsupportedRawSetting(f"the setting {key!r} must be an integer") from None
