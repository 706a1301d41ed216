"""A real Apache Kafka cluster on loopback: KRaft, several brokers, Kafka's own jars.

The jars come from Maven Central through ``scripts/ensure-kafka.sh`` (a pom kept in the repo,
cached per version); this module formats KRaft storage and starts one JVM per node. Every node is
a combined broker + controller (``process.roles=broker,controller``) and the controllers form a
static quorum, so killing one node of three leaves a working cluster (a quorum of two voters,
leaders moving to the other brokers).

Segments roll quickly (``log.roll.ms``, small ``log.segment.bytes`` where the release allows it),
so tests see rolled segments within seconds, and the log dirs (:attr:`LocalKafkaCluster.log_dirs`)
are plain folders the archiver can read while the brokers run.

A cluster may also get a secured listener (:class:`SaslSslListener`): SASL_SSL with SCRAM-SHA-512
users created at format time, TLS from a keystore, and ACLs enforced by KRaft's
``StandardAuthorizer``. The PLAINTEXT and controller listeners stay for the brokers themselves and
the harness (their principal, ``User:ANONYMOUS``, is a super user): what a test checks about
permissions goes through the SASL_SSL listener (:attr:`LocalKafkaCluster.sasl_bootstrap_servers`).

Used by the tests (a session fixture), the demo (the source and the target cluster) and the
benchmarks. Everything lives under ``workdir``; :meth:`LocalKafkaCluster.stop` kills the JVMs
(also at interpreter exit), and the folder can be removed afterwards.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from kafka_archive.errors import KafkaArchiveError

from kafka_archive_dev import repo_path

__all__ = [
    "DEFAULT_KAFKA_VERSION",
    "KafkaUnavailableError",
    "LocalKafkaCluster",
    "SaslSslListener",
    "ensure_kafka_jars",
    "kafka_unavailable_reason",
]

#: the current 4.x release (also the default of scripts/ensure-kafka.sh)
DEFAULT_KAFKA_VERSION = "4.4.0"


_LOG4J2 = """\
status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = {level}
rootLogger.appenderRef.file.ref = file
logger.kafka.name = kafka
logger.kafka.level = {level}
logger.state.name = state.change.logger
logger.state.level = WARN
"""


class KafkaUnavailableError(KafkaArchiveError, RuntimeError):
    """Java, Maven or the jars are missing, or the cluster did not come up."""


def kafka_unavailable_reason() -> str | None:
    """Why a real cluster cannot be started here (``None`` if Java and Maven are present)."""
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            return f"'{tool}' is not on PATH (a real Kafka cluster needs Java 17+ and Maven)"
    return None


def ensure_kafka_jars(version: str = DEFAULT_KAFKA_VERSION) -> Path:
    """The folder of Kafka ``version``'s jars, resolved from Maven Central on first use."""
    reason = kafka_unavailable_reason()
    if reason:
        raise KafkaUnavailableError(reason)
    proc = subprocess.run(
        ["bash", str(repo_path("scripts", "ensure-kafka.sh")), version],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise KafkaUnavailableError(
            f"scripts/ensure-kafka.sh {version} failed: {proc.stderr.strip()[-2000:]}"
        )
    return Path(proc.stdout.strip().splitlines()[-1])


def _free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _port_open(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
        return True
    return False


@dataclass(frozen=True)
class SaslSslListener:
    """A SASL_SSL listener (SCRAM-SHA-512) on every node, with ACLs enforced.

    ``keystore``: the brokers' PKCS12 keystore (:func:`kafka_archive_dev.tls.make_tls`);
    ``users``: SCRAM-SHA-512 user name -> password, created when the storage is formatted;
    ``super_users``: user names allowed everything (besides ``ANONYMOUS``, the PLAINTEXT and
    controller listeners' principal).
    """

    keystore: Path
    keystore_password: str
    users: Mapping[str, str]
    super_users: Sequence[str] = ("admin",)


@dataclass
class _Node:
    node_id: int
    port: int
    controller_port: int
    home: Path
    log_dir: Path
    sasl_port: int = 0
    proc: subprocess.Popen[bytes] | None = None
    log_file: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log_file = self.home / "server.log"


class LocalKafkaCluster:
    """``brokers`` combined KRaft nodes (ids 1..N) on loopback free ports, under ``workdir``.

    ``broker_config`` overrides/extends the server properties of every node (e.g. the offsets
    topic's segment size). Start with :meth:`start` (or a ``with`` block); :attr:`bootstrap_servers`
    and :attr:`log_dirs` (node id -> its single ``log.dirs`` folder) are then valid.
    """

    def __init__(
        self,
        workdir: Path,
        *,
        brokers: int = 3,
        version: str = DEFAULT_KAFKA_VERSION,
        broker_config: Mapping[str, str] | None = None,
        heap: str = "384m",
        log_level: str = "WARN",
        sasl_ssl: SaslSslListener | None = None,
    ) -> None:
        self.workdir = Path(workdir)
        self.version = version
        self.heap = heap
        self.log_level = log_level
        self.sasl_ssl = sasl_ssl
        self.cluster_id = ""
        self._libs: Path | None = None
        ports = _free_ports(3 * brokers)
        self.nodes = {
            i: _Node(
                node_id=i,
                port=ports[3 * (i - 1)],
                controller_port=ports[3 * (i - 1) + 1],
                home=self.workdir / f"node-{i}",
                log_dir=self.workdir / f"node-{i}" / "data",
                sasl_port=ports[3 * (i - 1) + 2] if sasl_ssl else 0,
            )
            for i in range(1, brokers + 1)
        }
        rf = min(3, brokers)
        self.config: dict[str, str] = {
            "offsets.topic.replication.factor": str(rf),
            "offsets.topic.num.partitions": "4",
            "transaction.state.log.replication.factor": str(rf),
            "transaction.state.log.min.isr": str(min(2, rf)),
            "transaction.state.log.num.partitions": "4",
            "default.replication.factor": str(rf),
            "min.insync.replicas": str(min(2, rf)),
            "num.partitions": "3",
            "group.initial.rebalance.delay.ms": "0",
            # segments roll within seconds (the next append after log.roll.ms starts a new one)
            "log.roll.ms": "3000",
            "log.retention.check.interval.ms": "2000",
            "log.cleaner.backoff.ms": "1000",
            "log.initial.task.delay.ms": "1000",
            # the archiver reads the recovery point and high watermark from these checkpoint
            # files; Kafka writes them every 60 s / 5 s by default, which would hold every
            # rolled segment back from the archive for up to a minute
            "log.flush.offset.checkpoint.interval.ms": "1000",
            "replica.high.watermark.checkpoint.interval.ms": "1000",
            "auto.create.topics.enable": "false",
            "unclean.leader.election.enable": "false",
            # transactions abandoned by a killed producer are aborted quickly
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": "2000",
            "transaction.max.timeout.ms": "900000",
            # a combined node of three: leaders move off a killed node quickly
            "controller.quorum.election.timeout.ms": "1000",
            "controller.quorum.fetch.timeout.ms": "2000",
            "broker.session.timeout.ms": "6000",
            "broker.heartbeat.interval.ms": "500",
            "share.coordinator.state.topic.replication.factor": str(rf),
            "share.coordinator.state.topic.min.isr": str(min(2, rf)),
        }
        self.config.update(broker_config or {})
        atexit.register(self.stop)

    # -- facts -------------------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{n.port}" for n in self.nodes.values())

    @property
    def sasl_bootstrap_servers(self) -> str:
        """The SASL_SSL listeners (only with ``sasl_ssl``)."""
        if self.sasl_ssl is None:
            raise KafkaUnavailableError("this cluster has no SASL_SSL listener")
        return ",".join(f"127.0.0.1:{n.sasl_port}" for n in self.nodes.values())

    @property
    def log_dirs(self) -> dict[int, Path]:
        """Node id -> that broker's ``log.dirs`` folder (one per broker)."""
        return {i: n.log_dir for i, n in self.nodes.items()}

    @property
    def libs(self) -> Path:
        if self._libs is None:
            self._libs = ensure_kafka_jars(self.version)
        return self._libs

    def running(self, node_id: int) -> bool:
        proc = self.nodes[node_id].proc
        return proc is not None and proc.poll() is None

    # -- lifecycle ---------------------------------------------------------------------------

    def _properties(self, node: _Node) -> str:
        voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in self.nodes.values())
        props = {
            "process.roles": "broker,controller",
            "node.id": str(node.node_id),
            "controller.quorum.voters": voters,
            "listeners": f"PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:"
            f"{node.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(node.log_dir),
            **self._security(node),
            **self.config,
        }
        return "".join(f"{k}={v}\n" for k, v in props.items())

    def _security(self, node: _Node) -> dict[str, str]:
        """The SASL_SSL listener's and the authorizer's settings (none without ``sasl_ssl``)."""
        sec = self.sasl_ssl
        if sec is None:
            return {}
        sasl = f"SASL_SSL://127.0.0.1:{node.sasl_port}"
        supers = ["User:ANONYMOUS", *(f"User:{u}" for u in sec.super_users)]
        return {
            "listeners": f"PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:"
            f"{node.controller_port},{sasl}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port},{sasl}",
            "listener.security.protocol.map": (
                "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL"
            ),
            "sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": (
                "org.apache.kafka.common.security.scram.ScramLoginModule required;"
            ),
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(sec.keystore),
            "ssl.keystore.password": sec.keystore_password,
            "ssl.key.password": sec.keystore_password,
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "allow.everyone.if.no.acl.found": "false",
            "super.users": ";".join(supers),
        }

    def _java(self, main: str, args: Sequence[str], *, node: _Node | None = None) -> list[str]:
        log = (node.log_file if node else self.workdir / "tools.log").as_posix()
        log4j = (node.home if node else self.workdir) / "log4j2.properties"
        log4j.parent.mkdir(parents=True, exist_ok=True)
        log4j.write_text(_LOG4J2.format(log=log, level=self.log_level))
        return [
            "java",
            f"-Xmx{self.heap}",
            "-Xms64m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-Djava.awt.headless=true",
            "-Dfile.encoding=UTF-8",
            "-Dstdout.encoding=UTF-8",
            "-Dstderr.encoding=UTF-8",
            f"-Dlog4j2.configurationFile={log4j}",
            f"-Dlog4j.configuration=file:{log4j}",
            f"-Dkafka.logs.dir={log4j.parent}",
            "-cp",
            f"{self.libs}/*",
            main,
            *args,
        ]

    def run_tool(
        self, main: str, args: Sequence[str], *, timeout: float = 300.0, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Run one of Kafka's own command-line tools (its main class) from the same jars.

        Its output is read as UTF-8 (the JVM is told to print UTF-8) exactly as printed:
        no newline translation, which would turn a printed payload's ``\\r`` followed by the
        tool's line end into one ``\\n`` and lose a byte of the payload."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        raw = subprocess.run(
            self._java(main, args), capture_output=True, timeout=timeout, check=False
        )
        proc = subprocess.CompletedProcess(
            raw.args,
            raw.returncode,
            raw.stdout.decode("utf-8", errors="replace"),
            raw.stderr.decode("utf-8", errors="replace"),
        )
        if check and proc.returncode != 0:
            raise KafkaUnavailableError(
                f"{main} {' '.join(args)} exited {proc.returncode}: {proc.stderr[-2000:]}"
            )
        return proc

    def create_topic(
        self,
        name: str,
        partitions: int,
        *,
        replication: int | None = None,
        config: Mapping[str, str] | None = None,
        timeout_s: float = 30.0,
    ) -> str:
        """Create topic ``name`` (replication: every broker, at most 3), wait for the
        controller's answer and then until every running broker's metadata shows each partition
        with a leader; returns the name.

        The controller answers before the brokers apply the new metadata: a client asking
        another broker right after used to hear "unknown topic" (a flaky replay test).
        """
        from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

        rf = replication or min(3, len(self.nodes))
        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})
        new = NewTopic(name, partitions, rf, config=dict(config or {}))
        admin.create_topics([new])[name].result(timeout_s)
        deadline = time.monotonic() + timeout_s
        pending = [n for i, n in self.nodes.items() if self.running(i)]
        while pending and time.monotonic() < deadline:
            node = pending[0]
            one = AdminClient({"bootstrap.servers": f"127.0.0.1:{node.port}"})
            with contextlib.suppress(Exception):  # not there yet: ask again
                topic = one.list_topics(name, timeout=5).topics.get(name)
                if (
                    topic is not None
                    and topic.error is None
                    and len(topic.partitions) == partitions
                    and all(p.leader >= 0 for p in topic.partitions.values())
                ):
                    pending.pop(0)
                    continue
            time.sleep(0.1)
        return name

    def _format(self) -> None:
        if not self.cluster_id:
            self.cluster_id = _kraft_cluster_id()
        for node in self.nodes.values():
            if (node.log_dir / "meta.properties").exists():
                continue
            node.home.mkdir(parents=True, exist_ok=True)
            props = node.home / "server.properties"
            props.write_text(self._properties(node))
            # "--cluster-id=ID": a random id may start with "-", which argparse reads as an option
            scram = [
                arg
                for user, password in (self.sasl_ssl.users.items() if self.sasl_ssl else ())
                for arg in ("--add-scram", f"SCRAM-SHA-512=[name={user},password={password}]")
            ]
            self.run_tool(
                "kafka.tools.StorageTool",
                ["format", f"--cluster-id={self.cluster_id}", "-c", str(props), *scram],
            )

    def start(self, timeout_s: float = 90.0) -> LocalKafkaCluster:
        """Format (first time) and start every node; wait until all brokers serve metadata."""
        self._format()
        for node_id in self.nodes:
            self._spawn(node_id)
        self.wait_ready(timeout_s=timeout_s)
        return self

    def _spawn(self, node_id: int) -> None:
        node = self.nodes[node_id]
        if self.running(node_id):
            return
        (node.home / "server.properties").write_text(self._properties(node))
        out = (node.home / "stdout.log").open("ab")
        node.proc = subprocess.Popen(
            self._java("kafka.Kafka", [str(node.home / "server.properties")], node=node),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        out.close()

    def wait_ready(self, timeout_s: float = 90.0, nodes: Sequence[int] | None = None) -> None:
        """Wait until the given (default: all running) brokers are registered and serving."""
        from confluent_kafka.admin import AdminClient  # type: ignore[attr-defined]

        wanted = set(nodes or [i for i in self.nodes if self.running(i)])
        deadline = time.monotonic() + timeout_s
        last = "no answer"
        while time.monotonic() < deadline:
            for i in wanted:
                if not self.running(i):
                    raise KafkaUnavailableError(
                        f"Kafka node {i} exited; its log: {self.nodes[i].log_file}\n"
                        + self._tail(i)
                    )
            if all(_port_open(self.nodes[i].port) for i in wanted):
                try:
                    admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})
                    md = admin.list_topics(timeout=5)
                    up = set(md.brokers)
                    if wanted <= up:
                        return
                    last = f"brokers registered: {sorted(up)}"
                except Exception as exc:
                    last = str(exc)
            time.sleep(0.3)
        raise KafkaUnavailableError(f"Kafka cluster not ready in {timeout_s:g} s ({last})")

    def _tail(self, node_id: int, lines: int = 30) -> str:
        node = self.nodes[node_id]
        text = ""
        for f in (node.home / "stdout.log", node.log_file):
            if f.exists():
                text += "\n".join(f.read_text(errors="replace").splitlines()[-lines:]) + "\n"
        return text

    def kill(self, node_id: int) -> None:
        """``kill -9`` one node (broker and controller); its files stay as a crash leaves them."""
        node = self.nodes[node_id]
        if node.proc is not None and node.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(node.proc.pid, signal.SIGKILL)
            node.proc.wait(timeout=30)
        node.proc = None

    def restart(self, node_id: int, timeout_s: float = 90.0) -> None:
        """Start a killed/stopped node again and wait until it serves."""
        self._spawn(node_id)
        self.wait_ready(timeout_s=timeout_s, nodes=[node_id])

    def stop(self) -> None:
        """Stop every node (SIGTERM, then SIGKILL after a grace period)."""
        for node in self.nodes.values():
            if node.proc is not None and node.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(node.proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        for node_id, node in self.nodes.items():
            if node.proc is None:
                continue
            try:
                node.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.kill(node_id)
            node.proc = None

    def __enter__(self) -> LocalKafkaCluster:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _kraft_cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding (22 chars)."""
    import base64

    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
