"""A Kafka protocol client for the requests librdkafka does not let us make: kafka-python's
connection layer (bootstrap, API version negotiation, SSL, SASL) with its generated request and
response classes, wrapped in the few calls the platform needs.

:class:`ProtocolClient` looks partition leaders up (Metadata), finds coordinators
(FindCoordinator), and sends requests to a broker, waiting for the answer
(:meth:`~ProtocolClient.request`) or not (:meth:`~ProtocolClient.send`, then
:meth:`~ProtocolClient.wait`: requests to one broker are answered in the order they were sent,
so a caller may keep several in flight).

Thread safety: one client per thread (kafka-python's selector is driven by the thread that
polls it); the platform makes one per replayed partition or per reader.

Errors: a broker that cannot be reached, a request that times out or a connection that fails is
a :class:`ProtocolConnectionError`; an error code the broker answers is the caller's to judge
(:func:`error_name` names it).
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Mapping
from typing import Any, Final

from kafka_archive.errors import KafkaArchiveError
from kafka_archive.kafka_protocol.config import kafka_python_config

__all__ = [
    "COORDINATOR_TRANSACTION",
    "MAX_RESPONSE_BYTES",
    "ProtocolAuthenticationError",
    "ProtocolClient",
    "ProtocolConnectionError",
    "error_name",
    "fail_fast_on_authentication",
]

#: the largest response accepted (see ProtocolClient.__init__)
MAX_RESPONSE_BYTES: Final = 256 << 20

#: FindCoordinator key types
COORDINATOR_TRANSACTION: Final = 1

#: error codes worth asking for a new coordinator (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
#: COORDINATOR_LOAD_IN_PROGRESS)
_COORDINATOR_MOVED: Final = frozenset({14, 15, 16})


class ProtocolConnectionError(KafkaArchiveError, ConnectionError):
    """A broker could not be reached or did not answer in time (the message says which)."""


class ProtocolAuthenticationError(ProtocolConnectionError):
    """The brokers refused the client's credentials (SASL) or its TLS handshake: retrying
    cannot help (the message is the broker's reason, never a credential)."""


def error_name(code: int) -> str:
    """Kafka's name of a protocol error code (``NOT_LEADER_OR_FOLLOWER (6)``)."""
    import kafka.errors as errors

    cls = errors.for_code(code)
    name = getattr(cls, "message", "") or cls.__name__
    return f"{name} ({code})"


def retriable(code: int) -> bool:
    """Whether Kafka marks the error code retriable (a leader moving, a replica or an offset not
    available yet: asking again, after Metadata, may succeed)."""
    import kafka.errors as errors

    return bool(getattr(errors.for_code(code), "retriable", False))


class ProtocolClient:
    """kafka-python's network client for the cluster that ``conf`` (librdkafka settings, mapped
    by :func:`~kafka_archive.kafka_protocol.config.kafka_python_config`) reaches.

    Creating it connects to nothing; the first call bootstraps.

    Raises (construction): :class:`~kafka_archive.kafka_protocol.config.UnsupportedRawSetting`
    for a setting kafka-python cannot apply.
    """

    def __init__(
        self,
        conf: Mapping[str, Any],
        *,
        client_id: str,
        timeout_ms: int = 30_000,
        max_in_flight: int = 5,
    ) -> None:
        from kafka.net.compat import KafkaNetClient

        args = kafka_python_config(conf)
        args.setdefault("client_id", client_id)
        args["max_in_flight_requests_per_connection"] = max_in_flight
        # kafka-python's connection refuses any response over 1,000,000 bytes by default
        # ("Invalid frame length"): a Fetch answer is up to its max_bytes (64 MiB here) plus a
        # first batch larger than the limits, which a broker always returns whole
        args["receive_message_max_bytes"] = MAX_RESPONSE_BYTES
        self.timeout_ms = timeout_ms
        self._client: Any = KafkaNetClient(**args)
        fail_fast_on_authentication(self._client)
        self._bootstrapped = False

    def close(self) -> None:
        self._client.close()

    def bootstrap(self) -> None:
        """Connect to a bootstrap server and learn the brokers and API versions (once)."""
        if self._bootstrapped:
            return
        import kafka.errors as errors

        try:
            self._client.check_version(timeout_ms=self.timeout_ms)
        except errors.SaslAuthenticationFailedError as exc:
            raise ProtocolAuthenticationError(f"authentication failed: {_reason(exc)}") from None
        except Exception as exc:  # kafka-python's connection errors
            if _tls_refused(exc):
                raise ProtocolAuthenticationError(
                    f"TLS: the broker's certificate was not accepted: {exc} (check "
                    "ssl.ca.location and the host name in --bootstrap)"
                ) from None
            raise ProtocolConnectionError(f"no bootstrap server answered: {exc}") from None
        self._bootstrapped = True

    # -- requests ---------------------------------------------------------------------------------

    def send(self, node: int, request: Any) -> Any:
        """Send ``request`` to broker ``node``; a kafka-python future of the response."""
        self.bootstrap()
        try:
            self._client.await_ready(node, timeout_ms=self.timeout_ms)
        except Exception as exc:
            raise ProtocolConnectionError(f"broker {node} is not reachable: {exc}") from None
        return self._client.send(node, request)

    def wait(self, future: Any, what: str) -> Any:
        """The response of a :meth:`send` future (``what`` names the request in errors)."""
        deadline = time.monotonic() + self.timeout_ms / 1000
        while not future.is_done:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ProtocolConnectionError(f"{what}: no answer within {self.timeout_ms} ms")
            self._client.poll(timeout_ms=left * 1000, future=future)
        if future.failed():
            raise ProtocolConnectionError(f"{what} failed: {future.exception}")
        return future.value

    def request(self, node: int, request: Any, what: str) -> Any:
        """Send ``request`` to ``node`` and wait for its response."""
        return self.wait(self.send(node, request), what)

    def any_node(self) -> int:
        """A broker to ask cluster-wide questions (the least loaded one)."""
        self.bootstrap()
        node = self._client.least_loaded_node(bootstrap_fallback=True)
        if node is None:
            raise ProtocolConnectionError("no broker is reachable")
        return int(node)

    # -- lookups ----------------------------------------------------------------------------------

    def leaders(self, topic: str) -> dict[int, int]:
        """Partition -> leader broker id of ``topic`` (a partition with no leader: -1).

        Raises:
            ProtocolConnectionError: no broker answered.
            KeyError: the topic does not exist (or may not be described), with its error name.
        """
        from kafka.protocol.metadata import MetadataRequest

        md = self.request(
            self.any_node(),
            MetadataRequest(
                topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
                allow_auto_topic_creation=False,
                max_version=12,
            ),
            f"Metadata of {topic}",
        )
        for t in md.topics:
            if t.name == topic:
                if t.error_code:
                    raise KeyError(f"{topic}: {error_name(t.error_code)}")
                return {p.partition_index: p.leader_id for p in t.partitions}
        raise KeyError(f"{topic}: not in the Metadata answer")

    def coordinator(self, key: str, key_type: int = COORDINATOR_TRANSACTION) -> int:
        """The broker id coordinating ``key`` (a transactional id by default), asked again
        while the coordinator is loading or moving (up to the client's timeout)."""
        from kafka.protocol.metadata import FindCoordinatorRequest

        deadline = time.monotonic() + self.timeout_ms / 1000
        while True:
            resp = self.request(
                self.any_node(),
                FindCoordinatorRequest(key=key, key_type=key_type, coordinator_keys=[key]),
                "FindCoordinator",
            )
            result = resp.coordinators[0] if getattr(resp, "coordinators", None) else resp
            if not result.error_code:
                return int(result.node_id)
            if result.error_code not in _COORDINATOR_MOVED or time.monotonic() > deadline:
                raise ProtocolConnectionError(
                    f"FindCoordinator answered {error_name(result.error_code)}"
                )
            time.sleep(0.1)


def _tls_refused(exc: BaseException) -> bool:
    """Whether ``exc`` is (kafka-python's wrapping of) a certificate the client does not trust
    or whose host name does not match: a retry cannot mend it."""
    return isinstance(exc, ssl.SSLCertVerificationError) or isinstance(
        exc.__context__, ssl.SSLCertVerificationError
    )


def _reason(exc: BaseException) -> str:
    """kafka-python's error text without its repeated class name
    (``[Error 58] SaslAuthenticationFailedError: SaslAuthenticationFailedError: reason``)."""
    return str(exc).rsplit(f"{type(exc).__name__}: ", 1)[-1]


#: a SASL connection the broker closes this many times in a row while it is being set up is
#: taken as refused (see :func:`fail_fast_on_authentication`)
CLOSED_DURING_SASL_STRIKES: Final = 3


def fail_fast_on_authentication(client: Any) -> None:
    """Make a connection refused for its credentials or its TLS handshake end the bootstrap at
    once.

    kafka-python 3.0 retries a bootstrap server that refused the credentials until the whole
    timeout has passed, then says only "Unable to bootstrap" (its own "sticky" record of an
    authentication failure is cleared again once the connect coroutine returns). Remembering
    the failure here and raising it at the next connect to that node - which the bootstrap loop
    does not catch - makes a wrong password one clear error within a second.

    The broker answers a refused SaslAuthenticate and then closes the connection; when both
    reach kafka-python in one read, its transport drops the answer and reports only "socket
    disconnected" (seen on a loaded machine about one time in three). A SASL connection closed
    while being set up :data:`CLOSED_DURING_SASL_STRIKES` times in a row, with no connection
    set up in between, is therefore taken as refused too, and said so.

    (Internals of kafka-python 3.x, pinned below 4; if they change, this does nothing and the
    bootstrap times out as before.)"""
    import kafka.errors as errors

    manager: Any = getattr(client, "_manager", None)
    original = getattr(manager, "get_connection", None)
    if original is None:
        return
    config = getattr(manager, "config", {})
    sasl = str(config.get("security_protocol", "")).startswith("SASL_")
    lasting = (errors.SaslAuthenticationFailedError, errors.AuthorizationError)
    refused: dict[Any, BaseException] = {}
    closed: dict[Any, int] = {}

    def get_connection(node_id: Any, *args: Any, **kwargs: Any) -> Any:
        if node_id in refused:
            raise refused[node_id]
        conn = original(node_id, *args, **kwargs)
        future = getattr(conn, "init_future", None)
        if future is not None:

            def record(exc: BaseException) -> None:
                if isinstance(exc, lasting) or _tls_refused(exc):
                    refused[node_id] = exc
                elif sasl and "socket disconnected" in str(exc):
                    closed[node_id] = closed.get(node_id, 0) + 1
                    if closed[node_id] >= CLOSED_DURING_SASL_STRIKES:
                        refused[node_id] = errors.SaslAuthenticationFailedError(
                            f"the broker closed the connection during SASL authentication "
                            f"{closed[node_id]} times in a row: most likely it refused the "
                            f"credentials ({config.get('sasl_mechanism')})"
                        )

            def reset(_: Any) -> None:
                closed.pop(node_id, None)

            future.add_errback(record)
            future.add_callback(reset)
        return conn

    manager.get_connection = get_connection
