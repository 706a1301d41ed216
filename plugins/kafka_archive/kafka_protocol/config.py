"""librdkafka settings mapped to kafka-python's: one set of client settings (``-X KEY=VALUE``)
for every client of a cluster, whichever library speaks to it.

The platform's Kafka clients are librdkafka's (confluent-kafka) except where the protocol's raw
record bytes are needed - the offsets follower's raw Fetch, batch-level replay's Produce - which
go through kafka-python's protocol layer (:mod:`kafka_archive.kafka_protocol`). Users give
librdkafka's setting names everywhere; :func:`kafka_python_config` maps the connection's, drops
the ones only librdkafka's own consumer/producer use, and refuses the rest by name (never by
value: it may be a secret).

Security (docs/security.md): PLAINTEXT, SSL (CA, client certificate and key, key password,
host name verification), SASL PLAIN and SCRAM-SHA-256/512, OAUTHBEARER with librdkafka's OIDC
settings (``sasl.oauthbearer.method=oidc``: a token provider of
:mod:`kafka_archive.kafka_protocol.oauth` fetches and keeps the token), and Amazon MSK IAM,
which librdkafka does not have: ``sasl.mechanism=AWS_MSK_IAM`` with ``sasl.aws.region`` (or
``AWS_REGION``), optionally ``sasl.aws.profile`` or ``sasl.aws.role.arn``, sent as the
OAUTHBEARER token AWS's signer makes (how MSK takes IAM from non-Java clients).
:func:`librdkafka_config` does the same for the librdkafka clients (an ``oauth_cb``) and passes
every other setting unchanged: every librdkafka client of the platform is made through it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Final

from kafka_archive.errors import KafkaArchiveError

__all__ = ["MSK_IAM", "UnsupportedRawSetting", "kafka_python_config", "librdkafka_config"]


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
    "ssl.cipher.suites": "ssl_ciphers",
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
#: AWS_MSK_IAM is this platform's name (librdkafka has no IAM mechanism): an OAUTHBEARER token
#: signed by AWS's MSK signer. (GSSAPI needs a keytab librdkafka spells differently: refused,
#: not half applied.)
MSK_IAM: Final = "AWS_MSK_IAM"
_MECHANISMS: Final = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", MSK_IAM)
#: librdkafka's OIDC settings (sasl.oauthbearer.method=oidc) and this platform's MSK IAM ones:
#: read into a token provider (:mod:`kafka_archive.kafka_protocol.oauth`)
_OAUTH: Final = frozenset(
    {
        "sasl.oauthbearer.method",
        "sasl.oauthbearer.token.endpoint.url",
        "sasl.oauthbearer.client.id",
        "sasl.oauthbearer.client.secret",
        "sasl.oauthbearer.scope",
        "sasl.oauthbearer.extensions",
        "sasl.aws.region",
        "sasl.aws.profile",
        "sasl.aws.role.arn",
    }
)


def kafka_python_config(conf: Mapping[str, Any]) -> dict[str, Any]:
    """kafka-python arguments equivalent to the librdkafka settings ``conf`` (a follower's
    consumer, a replay target's producer).

    Settings of librdkafka's own consumer or producer (group, commits, isolation, batching,
    logging) are dropped; the connection's (servers, client id, security protocol, SASL, SSL
    files, host name verification) are mapped. ``sasl.mechanism=OAUTHBEARER`` (with
    ``sasl.oauthbearer.method=oidc``) and ``sasl.mechanism=AWS_MSK_IAM`` become an OAUTHBEARER
    token provider (docs/security.md lists the settings).

    Raises:
        UnsupportedRawSetting: a setting (or a value of ``security.protocol``,
            ``sasl.mechanism(s)``, ``ssl.endpoint.identification.algorithm``,
            ``sasl.oauthbearer.method``) with no kafka-python equivalent, or a mechanism
            missing a setting it needs; the message names settings, never a value of a secret.
    """
    out: dict[str, Any] = {}
    oauth: dict[str, str] = {}
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
        elif key == "ssl.endpoint.identification.algorithm":
            algo = str(value).lower()
            if algo not in ("https", "none"):
                raise UnsupportedRawSetting(f"{key} {value!r} is not one of https, none")
            out["ssl_check_hostname"] = algo == "https"
        elif key in _OAUTH:
            oauth[key] = str(value)
        elif key not in _CLIENT_ONLY:
            raise UnsupportedRawSetting(
                f"the setting {key!r} cannot be applied to the Kafka protocol client "
                "(kafka-python) of the offsets follower's raw reader or of batch-level replay; "
                "pass only connection settings (see docs/security.md)"
            )
    _add_token_provider(out, oauth)
    return out


def librdkafka_config(conf: Mapping[str, Any]) -> dict[str, Any]:
    """``conf`` as librdkafka takes it: the same settings, except this platform's
    ``sasl.mechanism=AWS_MSK_IAM``, which librdkafka does not know: it becomes ``OAUTHBEARER``
    with an ``oauth_cb`` that returns AWS's signed token (AWS's documented way for librdkafka
    clients), and the ``sasl.aws.*`` settings are taken out. Every librdkafka client of the
    platform is made from its settings through this.

    Raises:
        UnsupportedRawSetting: ``AWS_MSK_IAM`` without SASL_SSL or without a region.
    """
    mech_key = next(
        (
            k
            for k in ("sasl.mechanism", "sasl.mechanisms")
            if str(conf.get(k, "")).upper() == MSK_IAM
        ),
        None,
    )
    if mech_key is None:
        return dict(conf)
    if str(conf.get("security.protocol", "")).upper() != "SASL_SSL":
        raise UnsupportedRawSetting(
            f"sasl.mechanism {MSK_IAM} needs security.protocol=SASL_SSL (MSK IAM is TLS only)"
        )
    provider = _msk_iam_provider({k: str(v) for k, v in conf.items() if k in _OAUTH})
    out = {k: v for k, v in conf.items() if not k.startswith("sasl.aws.")}
    out[mech_key] = "OAUTHBEARER"
    out["oauth_cb"] = provider.oauth_cb
    return out


def _add_token_provider(out: dict[str, Any], oauth: Mapping[str, str]) -> None:
    """The OAUTHBEARER token provider of ``out``'s mechanism, from the ``oauth`` settings."""
    if out.get("sasl_mechanism") == "OAUTHBEARER":
        out["sasl_oauth_token_provider"] = _oidc_provider(oauth)
    elif out.get("sasl_mechanism") == MSK_IAM:
        if out.get("security_protocol") != "SASL_SSL":
            raise UnsupportedRawSetting(
                f"sasl.mechanism {MSK_IAM} needs security.protocol=SASL_SSL (MSK IAM is TLS only)"
            )
        # MSK takes the signer's token over OAUTHBEARER from non-Java clients
        out["sasl_mechanism"] = "OAUTHBEARER"
        out["sasl_oauth_token_provider"] = _msk_iam_provider(oauth)
    elif oauth:
        raise UnsupportedRawSetting(
            f"the setting(s) {', '.join(sorted(oauth))} apply only to sasl.mechanism "
            f"OAUTHBEARER or {MSK_IAM}"
        )


def _oidc_provider(oauth: Mapping[str, str]) -> Any:
    method = oauth.get("sasl.oauthbearer.method", "default").lower()
    if method != "oidc":
        raise UnsupportedRawSetting(
            "sasl.mechanism OAUTHBEARER needs sasl.oauthbearer.method=oidc (a token endpoint); "
            f"the method {method!r} (unsecured tokens or a callback) is not supported here"
        )
    needed = (
        "sasl.oauthbearer.token.endpoint.url",
        "sasl.oauthbearer.client.id",
        "sasl.oauthbearer.client.secret",
    )
    missing = [k for k in needed if not oauth.get(k)]
    if missing:
        raise UnsupportedRawSetting(
            f"sasl.oauthbearer.method=oidc needs the setting(s) {', '.join(missing)}"
        )
    from kafka_archive.kafka_protocol.oauth import OidcTokenProvider

    return OidcTokenProvider(
        oauth["sasl.oauthbearer.token.endpoint.url"],
        oauth["sasl.oauthbearer.client.id"],
        oauth["sasl.oauthbearer.client.secret"],
        scope=oauth.get("sasl.oauthbearer.scope") or None,
        extensions=_extensions(oauth.get("sasl.oauthbearer.extensions", "")),
    )


def _extensions(text: str) -> dict[str, str]:
    """librdkafka's ``sasl.oauthbearer.extensions``: ``key=value`` pairs, comma separated."""
    out: dict[str, str] = {}
    for pair in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UnsupportedRawSetting(
                "sasl.oauthbearer.extensions must be key=value pairs separated by commas"
            )
        out[key.strip()] = value.strip()
    return out


def _msk_iam_provider(oauth: Mapping[str, str]) -> Any:
    region = (
        oauth.get("sasl.aws.region")
        or os.environ.get("AWS_REGION")
        or os.environ.get("AWS_DEFAULT_REGION")
    )
    if not region:
        raise UnsupportedRawSetting(
            f"sasl.mechanism {MSK_IAM} needs the cluster's AWS region: "
            "-X sasl.aws.region=REGION, or AWS_REGION in the environment"
        )
    from kafka_archive.kafka_protocol.oauth import MskIamTokenProvider

    return MskIamTokenProvider(
        region,
        profile=oauth.get("sasl.aws.profile") or None,
        role_arn=oauth.get("sasl.aws.role.arn") or None,
    )


def _int_setting(key: str, value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise UnsupportedRawSetting(f"the setting {key!r} must be an integer") from None
