"""A real Apache Kafka cluster for the tests (pytest plugin).

The session starts one 3-node KRaft cluster of the current 4.x release
(:class:`kafka_archive_dev.local_kafka.LocalKafkaCluster`, jars from Maven Central through
``scripts/ensure-kafka.sh``) the first time a test asks for it, and stops it at the end. Tests
share it and keep to topics and groups of their own (:func:`unique_name`); a test that kills a
broker restarts it before it returns (:func:`broker_down`).

Fixtures:

* ``kafka_cluster`` (session): the running cluster (3 brokers, RF 3, min.insync.replicas 2,
  segments rolling every 3 s, ``__consumer_offsets`` in 1 MiB segments (the least Kafka 4.x
  accepts) that also roll every 3 s, with the cleaner on, so
  compaction happens as it does in production, only sooner);
* ``kafka_cluster_39`` (session): a smaller cluster of Kafka 3.9 for the compatibility pass;
* ``secured_kafka_cluster`` (module, opt-in): one broker with a SASL_SSL listener (SCRAM-SHA-512,
  TLS from a CA the test makes, ACLs enforced), :class:`SecuredCluster`.

Without Java or Maven the tests that need a cluster skip with the reason; with
``KAFKA_ARCHIVE_REQUIRE_KAFKA=1`` (set by ``.ci/run``) that is a failure instead.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from kafka_archive_dev.local_kafka import (
    KafkaUnavailableError,
    LocalKafkaCluster,
    kafka_unavailable_reason,
)

#: broker settings every test cluster shares (on top of LocalKafkaCluster's fast-roll defaults)
TEST_BROKER_CONFIG = {
    # the offsets topic rolls (log.roll.ms, 3 s) and is compacted within seconds: what
    # production does in hours. Kafka 4.x refuses segments under 1 MiB (KIP-1030): with 64 KiB
    # the broker cannot create __consumer_offsets at all and no group can commit.
    "offsets.topic.segment.bytes": str(1024 * 1024),
    "log.cleaner.min.compaction.lag.ms": "0",
    "log.cleaner.min.cleanable.ratio": "0.01",
}

_counter = itertools.count(1)


def unique_name(prefix: str) -> str:
    """A topic/group name no other test of this session uses."""
    return f"{prefix}-{os.getpid()}-{next(_counter)}"


def _require() -> None:
    reason = kafka_unavailable_reason()
    if reason:
        if os.environ.get("KAFKA_ARCHIVE_REQUIRE_KAFKA") == "1":
            pytest.fail(reason + " (required by KAFKA_ARCHIVE_REQUIRE_KAFKA=1)")
        pytest.skip(reason)


@contextlib.contextmanager
def running_cluster(
    version: str | None = None, brokers: int = 3, broker_config: dict[str, str] | None = None
) -> Iterator[LocalKafkaCluster]:
    """A cluster of its own for the block (``broker_config`` on top of
    :data:`TEST_BROKER_CONFIG`), stopped after it; a cluster that does not start fails the
    test (skips it where Java or Maven is missing, see :func:`_require`)."""
    _require()
    with tempfile.TemporaryDirectory(prefix="kafka-archive-kafka-") as tmp:
        kwargs = {"version": version} if version else {}
        cluster = LocalKafkaCluster(
            Path(tmp),
            brokers=brokers,
            broker_config={**TEST_BROKER_CONFIG, **(broker_config or {})},
            **kwargs,
        )
        try:
            cluster.start()
        except KafkaUnavailableError as exc:
            cluster.stop()
            pytest.fail(f"the real Kafka cluster did not start: {exc}")
        try:
            yield cluster
        finally:
            cluster.stop()


def _start(version: str | None, brokers: int) -> Iterator[LocalKafkaCluster]:
    with running_cluster(version, brokers) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def kafka_available() -> None:
    """For tests that start clusters of their own (the demo): skip, or in CI fail, where Java
    or Maven is missing."""
    _require()


@pytest.fixture(scope="session")
def kafka_cluster() -> Iterator[LocalKafkaCluster]:
    yield from _start(None, 3)


@pytest.fixture(scope="session")
def kafka_cluster_39() -> Iterator[LocalKafkaCluster]:
    yield from _start("3.9.1", 1)


@contextlib.contextmanager
def broker_down(cluster: LocalKafkaCluster, node_id: int) -> Iterator[None]:
    """``kill -9`` one node for the body of the block, then restart it and wait for it."""
    cluster.kill(node_id)
    try:
        yield
    finally:
        cluster.restart(node_id)


# -- a secured cluster (SASL_SSL, SCRAM-SHA-512, TLS, ACLs) --------------------------------------

#: the secured cluster's SCRAM-SHA-512 users and their passwords; ``admin`` is a super user, the
#: others have only the ACLs a test grants them
SECURED_USERS = {
    "admin": "admin-Pw-1",
    "replayer": "replayer-Pw-2",
    "follower": "follower-Pw-3",
    "fetcher": "fetcher-Pw-4",
    "nobody": "nobody-Pw-5",
}


@dataclass
class SecuredCluster:
    """A one-broker cluster with a SASL_SSL listener (SCRAM-SHA-512, a CA made for the test,
    ACLs enforced by StandardAuthorizer); ``cluster``'s PLAINTEXT listener is the harness's own
    (a super user)."""

    cluster: LocalKafkaCluster
    ca_pem: Path

    def client_config(self, user: str, password: str | None = None) -> dict[str, str]:
        """librdkafka settings of ``user`` on the SASL_SSL listener (``password``: another one
        than the user's)."""
        return {
            "bootstrap.servers": self.cluster.sasl_bootstrap_servers,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": user,
            "sasl.password": SECURED_USERS[user] if password is None else password,
            "ssl.ca.location": str(self.ca_pem),
            "ssl.endpoint.identification.algorithm": "https",
        }

    def allow(self, user: str, acls: Sequence[tuple[str, str, str, str]]) -> None:
        """Grant ``user`` the ACLs ``(resource type, name, pattern, operation)`` (types,
        patterns and operations by confluent-kafka's enum names: ``TOPIC``, ``LITERAL``,
        ``WRITE``...), waiting for the broker's answer."""
        from confluent_kafka.admin import (  # type: ignore[attr-defined]
            AclBinding,
            AclOperation,
            AclPermissionType,
            AdminClient,
            ResourcePatternType,
            ResourceType,
        )

        admin = AdminClient({"bootstrap.servers": self.cluster.bootstrap_servers})
        bindings = [
            AclBinding(
                ResourceType[rtype],
                name,
                ResourcePatternType[pattern],
                f"User:{user}",
                "*",
                AclOperation[op],
                AclPermissionType.ALLOW,
            )
            for rtype, name, pattern, op in acls
        ]
        for fut in admin.create_acls(bindings).values():
            fut.result(30)


@pytest.fixture(scope="module")
def secured_kafka_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredCluster]:
    """One broker with SASL_SSL (:class:`SecuredCluster`), for the module that asks for it."""
    from kafka_archive_dev.local_kafka import SaslSslListener
    from kafka_archive_dev.tls import make_tls

    _require()
    tls = make_tls(tmp_path_factory.mktemp("secured-tls"))
    with tempfile.TemporaryDirectory(prefix="kafka-archive-secured-") as tmp:
        cluster = LocalKafkaCluster(
            Path(tmp),
            brokers=1,
            broker_config=TEST_BROKER_CONFIG,
            sasl_ssl=SaslSslListener(tls.keystore, tls.keystore_password, SECURED_USERS),
        )
        try:
            cluster.start()
        except KafkaUnavailableError as exc:
            cluster.stop()
            pytest.fail(f"the secured Kafka cluster did not start: {exc}")
        try:
            yield SecuredCluster(cluster, tls.ca_pem)
        finally:
            cluster.stop()
