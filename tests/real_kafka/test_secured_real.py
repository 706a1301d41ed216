"""Issue 22 point 4: the platform's clients on a secured broker - SASL_SSL with SCRAM-SHA-512,
TLS from a CA made by the test (host names verified), ACLs enforced (StandardAuthorizer).

Each principal holds only the ACLs docs/security.md lists as the minimum for what it does
(:func:`replay_acls`, :data:`FOLLOW_ACLS`): a replay into the secured target by whole batches
and by records (the report says which, the records read back exactly), and ``catalog follow-offsets
--until-caught-up`` (librdkafka's consumer and kafka-python's raw reader) against it. A wrong
password is one clear error within seconds, exit 1, no traceback, the password nowhere in
stdout, stderr or the broker's log; a principal without the ACLs gets an authorization error
naming the resource.

The CLI runs as a child process (what a user runs: its real stdout and stderr). The records
are read back through the harness's PLAINTEXT listener (a super user).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition
from support.real_kafka import SECURED_USERS, SecuredCluster, unique_name

from tests.real_kafka import test_replay_real
from tests.real_kafka.test_replay_real import BULK, CLUSTER, Source, assert_exactly_once

pytestmark = pytest.mark.timeout(600)

# the writer-made source of test_replay_real (no cluster: only the secured one runs here)
src = test_replay_real.src

KAFKA_ARCHIVE = str(Path(sys.executable).parent / "kafka-archive")
PROGRESS = "__kafka_archive_replay_progress"
#: how long a refused password may take to be reported (librdkafka's or kafka-python's own
#: retries until a request timeout would take 30 s and more)
REFUSAL_S = 20.0

Acl = tuple[str, str, str, str]


def replay_acls(target: str) -> list[Acl]:
    """The minimum of a batch-level replay into ``target`` with ``--create-topic`` (the first
    replay into a cluster also creates the progress topic)."""
    return [
        ("TOPIC", target, "LITERAL", "WRITE"),
        ("TOPIC", target, "LITERAL", "DESCRIBE_CONFIGS"),
        ("TOPIC", target, "LITERAL", "CREATE"),  # only for --create-topic
        ("TOPIC", PROGRESS, "LITERAL", "WRITE"),
        ("TOPIC", PROGRESS, "LITERAL", "READ"),  # resume: the last committed progress
        ("TOPIC", PROGRESS, "LITERAL", "CREATE"),  # only for the first replay into a cluster
        # the progress reader's consumer looks its group's coordinator up (commits nothing)
        ("GROUP", "kafka-archive-replay-progress-reader", "LITERAL", "DESCRIBE"),
        ("TRANSACTIONAL_ID", "kafka-archive-replay.", "PREFIXED", "WRITE"),
    ]


#: the minimum of ``catalog follow-offsets`` (its consumer looks the coordinator of its group
#: up, commits nothing: without Describe on the group it works but warns)
FOLLOW_ACLS: list[Acl] = [
    ("TOPIC", "__consumer_offsets", "LITERAL", "READ"),
    ("GROUP", "kafka-archive-offsets-follower", "LITERAL", "DESCRIBE"),
]


def _settings(tmp: Path, sec: SecuredCluster, user: str, password: str | None = None) -> str:
    """``@FILE`` of ``user``'s client settings (the password stays off the command line)."""
    conf = sec.client_config(user, password)
    conf.pop("bootstrap.servers")
    path = tmp / f"{user}-{unique_name('conf')}.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in conf.items()))
    return f"@{path}"


def _run(*args: str) -> tuple[int, str, str, float]:
    start = time.monotonic()
    proc = subprocess.run(
        [KAFKA_ARCHIVE, *args], capture_output=True, text=True, timeout=300, check=False
    )
    return proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start


def _replay(src: Source, sec: SecuredCluster, target: str, settings: str, *extra: str) -> Any:
    return _run(
        "replay", "run", "--cluster", CLUSTER, "--topic", BULK, "--from", "earliest",
        "--target", sec.cluster.sasl_bootstrap_servers, "--target-topic", target,
        "--store", src.store.uri, "--db", src.db_url, "--json",
        "--target-config", settings, *extra,
    )  # fmt: skip


def _follow(sec: SecuredCluster, db: Path, settings: str) -> Any:
    return _run(
        "catalog", "follow-offsets", "--cluster", "secured",
        "--bootstrap", sec.cluster.sasl_bootstrap_servers, "--db", str(db),
        "--until-caught-up", "--json", "-X", settings,
    )  # fmt: skip


def _no_secret(*texts: str) -> None:
    for text in texts:
        for password in SECURED_USERS.values():
            assert password not in text
        assert "wrong-Pw-0" not in text
        assert "Traceback" not in text


def _broker_log(sec: SecuredCluster) -> str:
    node = sec.cluster.nodes[1]
    return "".join(
        f.read_text(errors="replace")
        for f in (node.log_file, node.home / "stdout.log")
        if f.exists()
    )


@pytest.mark.parametrize("path", ["batches", "records"])
def test_replay_into_a_sasl_ssl_target_with_the_minimum_acls(
    src: Source, secured_kafka_cluster: SecuredCluster, tmp_path: Path, path: str
) -> None:
    """Both paths: whole batches through kafka-python (``--replay-path batch``), record by
    record through librdkafka's transactional producer."""
    sec = secured_kafka_cluster
    target = unique_name(f"secured-replayed-{path}")
    sec.allow("replayer", replay_acls(target))
    settings = _settings(tmp_path, sec, "replayer")
    asked = "batch" if path == "batches" else "records"  # (small source batches: not auto)
    code, out, err, _ = _replay(
        src, sec, target, settings, "--create-topic", "--replay-path", asked
    )
    assert code == 0, out + err
    report = [json.loads(x) for x in out.splitlines() if x.startswith("{")][-1]
    assert report["status"] == "complete"
    assert report["replay_path"] == path, report.get("path_notes")
    assert report["records_sent"] == sum(len(v) for v in src.expected[BULK].values())
    assert "AUTHORIZATION" not in err.upper(), err
    assert_exactly_once(src, sec.cluster, BULK, target)
    _no_secret(out, err)
    # a re-run reads the progress back (READ on the progress topic) and sends nothing
    code, out, err, _ = _replay(src, sec, target, settings)
    assert code == 0, out + err
    assert json.loads(out.splitlines()[-1])["records_sent_this_run"] == 0


def test_replay_with_a_wrong_password_is_one_clear_error(
    src: Source, secured_kafka_cluster: SecuredCluster, tmp_path: Path
) -> None:
    sec = secured_kafka_cluster
    settings = _settings(tmp_path, sec, "replayer", "wrong-Pw-0")
    code, out, err, took = _replay(src, sec, unique_name("never"), settings, "--create-topic")
    assert code in (1, 2), out + err
    assert "authentication" in (out + err).lower(), out + err
    assert took < REFUSAL_S, took
    _no_secret(out, err, _broker_log(sec))


def test_replay_without_the_acls_names_the_resource(
    src: Source, secured_kafka_cluster: SecuredCluster, tmp_path: Path
) -> None:
    sec = secured_kafka_cluster
    target = unique_name("secured-denied")
    sec.cluster.create_topic(target, 4)
    code, out, err, _ = _replay(src, sec, target, _settings(tmp_path, sec, "nobody"))
    assert code in (1, 2), out + err
    text = (out + err).lower()
    assert "authoriz" in text, out + err
    assert target.lower() in text or PROGRESS in text, out + err
    _no_secret(out, err)


def _commit_a_group(sec: SecuredCluster) -> str:
    """A group commits offsets (through the harness's listener): something to follow."""
    topic = sec.cluster.create_topic(unique_name("secured-followed"), 1)
    group = unique_name("secured-group")
    consumer = Consumer({"bootstrap.servers": sec.cluster.bootstrap_servers, "group.id": group})
    deadline = time.monotonic() + 60
    try:
        while True:
            try:
                consumer.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
                return group
            except KafkaException as exc:
                # the first commit of a fresh cluster creates __consumer_offsets: its
                # coordinator is not there at once
                if not exc.args[0].retriable() and exc.args[0].code() not in (14, 15, 16):
                    raise
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
    finally:
        consumer.close()


def test_follow_offsets_on_a_sasl_ssl_cluster_with_the_minimum_acls(
    secured_kafka_cluster: SecuredCluster, tmp_path: Path
) -> None:
    sec = secured_kafka_cluster
    _commit_a_group(sec)
    sec.allow("follower", FOLLOW_ACLS)
    code, out, err, _ = _follow(sec, tmp_path / "cat.db", _settings(tmp_path, sec, "follower"))
    assert code == 0, out + err
    report = json.loads(out.splitlines()[-1])
    assert report["records_read"] > 0, report
    assert "AUTHORIZATION" not in err.upper(), err  # nothing refused, not even a warning
    _no_secret(out, err)


def test_follow_offsets_with_a_wrong_password_or_no_acl(
    secured_kafka_cluster: SecuredCluster, tmp_path: Path
) -> None:
    sec = secured_kafka_cluster
    db = tmp_path / "cat.db"
    code, out, err, took = _follow(sec, db, _settings(tmp_path, sec, "follower", "wrong-Pw-0"))
    assert code in (1, 2), out + err
    assert "authentication" in (out + err).lower(), out + err
    assert took < REFUSAL_S, took
    assert not db.exists()  # nothing made
    _no_secret(out, err, _broker_log(sec))
    _commit_a_group(sec)
    code, out, err, _ = _follow(sec, db, _settings(tmp_path, sec, "nobody"))
    assert code in (1, 2), out + err
    assert "__consumer_offsets" in out + err and "authoriz" in (out + err).lower(), out + err
    _no_secret(out, err)


# -- the protocol client (kafka-python) alone: what the librdkafka probe answers before it -------


def test_protocol_client_refusals_are_clear_and_quick(
    secured_kafka_cluster: SecuredCluster, tmp_path: Path
) -> None:
    """A wrong password and a CA the client does not trust end the bootstrap at once with
    :class:`ProtocolAuthenticationError` (kafka-python alone retries until its timeout); a
    principal without ACLs gets the raw reader's error naming ``__consumer_offsets``."""
    from kafka_archive.kafka_protocol.client import ProtocolAuthenticationError, ProtocolClient
    from kafka_archive.offsets_follower.raw_batches import KafkaRawBatchReader, RawFetchError
    from kafka_archive_dev.tls import make_tls

    sec = secured_kafka_cluster
    ok = ProtocolClient(sec.client_config("replayer"), client_id="t", timeout_ms=60_000)
    try:
        assert ok.any_node() == 1
    finally:
        ok.close()
    other_ca = make_tls(tmp_path / "other").ca_pem
    cases = [
        # (the broker's own reason, or - when kafka-python's transport drops the answer that
        # arrives with the close - the closes counted: ProtocolClient says which)
        (sec.client_config("replayer", "wrong-Pw-0"), "credentials"),
        ({**sec.client_config("replayer"), "ssl.ca.location": str(other_ca)}, "certificate"),
    ]
    for conf, says in cases:
        client = ProtocolClient(conf, client_id="t", timeout_ms=60_000)
        start = time.monotonic()
        try:
            with pytest.raises(ProtocolAuthenticationError) as err:
                client.any_node()
        finally:
            client.close()
        assert time.monotonic() - start < REFUSAL_S
        assert says in str(err.value), str(err.value)
        _no_secret(str(err.value))
    _commit_a_group(sec)
    reader = KafkaRawBatchReader(sec.client_config("nobody"))
    try:
        with pytest.raises(RawFetchError, match="__consumer_offsets: TOPIC_AUTHORIZATION_FAILED"):
            reader.fetch(0, 0)
    finally:
        reader.close()


# -- the fetch archiver ------------------------------------------------------------------------


def fetch_acls(topic: str) -> list[Acl]:
    """The minimum of ``archive fetch`` of ``topic`` (docs/archive.md, docs/security.md)."""
    return [("TOPIC", topic, "LITERAL", "READ"), ("TOPIC", topic, "LITERAL", "DESCRIBE_CONFIGS")]


def test_archive_fetch_on_a_sasl_ssl_cluster_with_the_minimum_acls(
    secured_kafka_cluster: SecuredCluster, tmp_path: Path
) -> None:
    """``archive fetch`` (kafka-python only) archives a topic through the SASL_SSL listener with
    Read and DescribeConfigs on it; a topic it may not read is not archived (the pattern only
    selects what the principal may describe), and a wrong password is one clear error."""
    from confluent_kafka import Producer

    sec = secured_kafka_cluster
    prefix = unique_name("secured-fetched")
    allowed = sec.cluster.create_topic(f"{prefix}-a", 2)
    sec.cluster.create_topic(f"{prefix}-b", 1)  # no ACL: invisible to the fetcher
    producer = Producer({"bootstrap.servers": sec.cluster.bootstrap_servers})
    for i in range(200):
        for topic in (allowed, f"{prefix}-b"):
            producer.produce(topic, key=str(i).encode(), value=b"v" * 50)
    assert producer.flush(30) == 0
    sec.allow("fetcher", fetch_acls(allowed))

    def fetch(settings: str) -> tuple[int, str, str, float]:
        return _run(
            "archive", "fetch", "--cluster", "secured",
            "--bootstrap", sec.cluster.sasl_bootstrap_servers,
            "--store", str(tmp_path / "store"), "--topics", f"{prefix}-*",
            "--until-caught-up", "--json", "-X", settings,
        )  # fmt: skip

    code, out, err, _ = fetch(_settings(tmp_path, sec, "fetcher"))
    assert code == 0, out + err
    report = json.loads(next(ln for ln in out.splitlines() if ln.startswith("{")))
    assert report["ok"] and report["segments"] > 0, report
    assert report["partitions"] and {p["topic"] for p in report["partitions"]} == {allowed}
    _no_secret(out, err)
    code, out, err, took = fetch(_settings(tmp_path, sec, "fetcher", "wrong-Pw-0"))
    assert code in (1, 2), out + err
    assert "credentials" in (out + err).lower(), out + err
    assert took < REFUSAL_S, took
    _no_secret(out, err)


def test_archive_fetch_group_needs_read_on_the_group_and_nothing_else(
    secured_kafka_cluster: SecuredCluster, tmp_path: Path
) -> None:
    """``archive fetch --group G`` through SASL_SSL with the fetch ACLs and Read on group G
    only (docs/archivers.md): it joins, gets the partitions and archives them; without Read on
    the group it stops with one error naming the group, exit 1, within seconds."""
    from confluent_kafka import Producer

    sec = secured_kafka_cluster
    prefix = unique_name("secured-group")
    topic = sec.cluster.create_topic(f"{prefix}-t", 2)
    producer = Producer({"bootstrap.servers": sec.cluster.bootstrap_servers})
    for i in range(200):
        producer.produce(topic, key=str(i).encode(), value=b"v" * 50)
    assert producer.flush(30) == 0
    group = f"{prefix}-archivers"
    sec.allow("fetcher", [*fetch_acls(topic), ("GROUP", group, "LITERAL", "READ")])

    def fetch(group_name: str) -> tuple[int, str, str, float]:
        return _run(
            "archive", "fetch", "--cluster", "secured-group",
            "--bootstrap", sec.cluster.sasl_bootstrap_servers,
            "--store", str(tmp_path / "store"), "--topics", topic, "--group", group_name,
            "--until-caught-up", "--json", "-X", _settings(tmp_path, sec, "fetcher"),
        )  # fmt: skip

    code, out, err, _ = fetch(group)
    assert code == 0, out + err
    report = json.loads(next(ln for ln in out.splitlines() if ln.startswith("{")))
    assert report["ok"] and {p["partition"] for p in report["partitions"]} == {0, 1}, report
    assert sum(p["to_offset"] for p in report["partitions"]) == 200
    _no_secret(out, err)
    code, out, err, took = fetch(f"{prefix}-not-allowed")
    assert code == 1, out + err
    assert f"group {prefix}-not-allowed" in out + err and "authorization" in (out + err).lower()
    assert took < 60, took
    _no_secret(out, err)
