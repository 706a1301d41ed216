"""The chart's fetch archivers (helm/kafka-archive/templates/fetch-archivers): one long-running
``kafka-archive archive fetch`` Deployment per configured cluster, with the store's settings only,
the cluster's secrets from a mounted existing Secret, a grace period to upload open segments and
a NetworkPolicy to its brokers and the store. The example values file
(examples/fetch-archivers-msk.yaml) also goes through every generic check of
tests/test_helm_chart.py (valid Kubernetes objects, probes, security contexts, policies)."""

from __future__ import annotations

import re
from typing import Any

import helm_python
import jsonschema
import pytest

from tests.support.helm_chart import chart, load_example, render, selects, validate_k8s

FULL = "ka-kafka-archive"
SECRET_DIR = "/etc/kafka-archive/fetch-secret"


def _fetch_objects(r: Any, kind: str) -> list[dict[str, Any]]:
    return [
        o
        for o in r.of_kind(kind)
        if o["metadata"]["labels"]["app.kubernetes.io/component"] == "fetch-archiver"
    ]


def _example() -> Any:
    return render(load_example("fetch-archivers-msk.yaml"))


def test_nothing_is_rendered_by_default_or_without_clusters() -> None:
    for values in ({}, {"fetchArchivers": {"enabled": True}}):
        r = render(values)
        assert not [
            o
            for o in r.objects
            if o["metadata"]["labels"]["app.kubernetes.io/component"] == "fetch-archiver"
        ]
    assert "no fetch archiver runs" in render({"fetchArchivers": {"enabled": True}}).notes


def test_one_long_running_deployment_per_cluster_with_the_store_settings_only() -> None:
    r = _example()
    [dep] = _fetch_objects(r, "Deployment")
    validate_k8s(dep)
    assert dep["metadata"]["name"] == f"{FULL}-fetch-msk-prod"
    assert dep["spec"]["replicas"] == 1
    assert dep["spec"]["strategy"] == {"type": "Recreate"}  # never two archivers of one cluster
    pod = dep["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] == 300
    [c] = pod["containers"]
    # tini forwards SIGTERM (the image's entrypoint would run it as an airflow subcommand)
    assert c["command"] == ["/usr/bin/tini", "--", "kafka-archive"]
    assert c["args"] == [
        "archive", "fetch",
        "--cluster", "msk-prod",
        "--bootstrap",
        "b-1.prod.abc123.c2.kafka.eu-west-1.amazonaws.com:9096,"
        "b-2.prod.abc123.c2.kafka.eu-west-1.amazonaws.com:9096",
        "--topics", "orders.*", "--topics", "payments.*",
        "-X", "sasl.mechanism=SCRAM-SHA-512",
        "-X", "security.protocol=SASL_SSL",
        "-X", f"@{SECRET_DIR}/client.properties",
    ]  # fmt: skip
    # no stop flag: it runs until SIGTERM, which uploads the open segments
    assert "--until-caught-up" not in c["args"] and "--duration" not in c["args"]
    env = {e["name"]: e for e in c["env"]}
    assert env["KAFKA_ARCHIVE_STORE"]["value"] == "s3://acme-kafka-archive-prod/segments"
    assert env["AWS_REGION"]["value"] == "eu-west-1"
    # no catalog, no archive configuration file (not mounted here), no Airflow
    assert not {"KAFKA_ARCHIVE_DB", "KAFKA_ARCHIVE_CONFIG"} & set(env)
    assert not [n for n in env if n.startswith("AIRFLOW")]
    # open segments are built in the emptyDir (the root filesystem is read-only)
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert mounts["work"]["mountPath"] == env["TMPDIR"]["value"]
    assert volumes["work"]["emptyDir"] == {"sizeLimit": "20Gi"}
    assert mounts["client-secret"] == {
        "name": "client-secret",
        "mountPath": SECRET_DIR,
        "readOnly": True,
    }
    assert volumes["client-secret"]["secret"]["secretName"] == "msk-prod-client"
    for probe in (c["livenessProbe"], c["readinessProbe"]):
        assert "kafka-archive-fetch-" in probe["exec"]["command"][-1]


def test_the_service_account_has_workload_identity_and_no_api_token() -> None:
    r = _example()
    [dep] = _fetch_objects(r, "Deployment")
    pod = dep["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False
    sa = r.get("ServiceAccount", pod["serviceAccountName"])
    assert sa["metadata"]["name"] == f"{FULL}-fetch-archiver"
    assert sa["metadata"]["annotations"] == {
        "eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/kafka-archive-prod"
    }
    assert sa["automountServiceAccountToken"] is False


def test_no_secret_value_is_rendered_anywhere() -> None:
    r = _example()
    assert r.of_kind("Secret") == []
    text = "\n".join(r.manifests.values())
    assert "sasl.password" not in text and "sasl.username" not in text


def test_the_network_policy_reaches_its_brokers_and_the_store_only() -> None:
    r = _example()
    [dep] = _fetch_objects(r, "Deployment")
    [np] = _fetch_objects(r, "NetworkPolicy")
    validate_k8s(np)
    labels = dep["spec"]["template"]["metadata"]["labels"]
    assert selects(np["spec"]["podSelector"], labels)
    assert np["spec"]["policyTypes"] == ["Ingress", "Egress"] and "ingress" not in np["spec"]
    assert np["spec"]["egress"] == [
        {
            "ports": [{"port": 9096, "protocol": "TCP"}],
            "to": [{"ipBlock": {"cidr": "10.20.0.0/16"}}],
        },
        {"ports": [{"port": 443, "protocol": "TCP"}]},
    ]
    # another cluster's pod is not selected by it; without `egress`, networkPolicies.kafka
    values = load_example("fetch-archivers-msk.yaml")
    values["fetchArchivers"]["clusters"].append({"name": "legacy", "bootstrap": "k:9092"})
    r2 = render(values)
    legacy = r2.get("NetworkPolicy", f"{FULL}-fetch-legacy")
    assert legacy["spec"]["egress"][0]["ports"] == [
        {"port": 9092, "protocol": "TCP"},
        {"port": 9093, "protocol": "TCP"},
    ]
    assert not selects(legacy["spec"]["podSelector"], labels)
    assert f"{FULL}-fetch-legacy" in r2.notes


def test_the_chart_command_is_one_the_cli_accepts() -> None:
    """The rendered args parse as the real CLI's ``archive fetch`` options (--help exits 0)."""
    from kafka_archive.cli import _register_groups, app
    from typer.testing import CliRunner

    [dep] = _fetch_objects(_example(), "Deployment")
    args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    _register_groups()
    result = CliRunner().invoke(app, [*args, "--help"])
    assert result.exit_code == 0, result.output
    assert "--until-caught-up" in result.output  # the fetch command's own help


def test_the_store_options_reach_archive_fetch_as_the_disk_archivers_get_them() -> None:
    """SSE, the KMS key, the addressing style and the checksum rule: the archive
    configuration's store options for the disk archivers, --store-option for the fetch ones;
    and the real CLI takes them."""
    from kafka_archive.cli import app
    from typer.testing import CliRunner

    values = load_example("fetch-archivers-msk.yaml")
    values["objectStore"]["encryption"] = {"type": "aws:kms", "kmsKeyId": "alias/kafka-archive"}
    values["objectStore"]["addressingStyle"] = "path"
    [dep] = _fetch_objects(render(values), "Deployment")
    args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    given = [args[i + 1] for i, a in enumerate(args) if a == "--store-option"]
    assert given == [
        "addressing_style=path", "sse=aws:kms", "sse_kms_key_id=alias/kafka-archive"
    ]  # fmt: skip
    assert CliRunner().invoke(app, [*args, "--help"]).exit_code == 0


def _cluster(**over: Any) -> dict[str, Any]:
    return {"fetchArchivers": {"clusters": [{"name": "prod", "bootstrap": "k:9092", **over}]}}


BAD = [
    (
        "a secret in clientConfig",
        _cluster(clientConfig={"sasl.password": "hunter2"}),
        "clientConfig",
    ),
    (
        "a secret in clientConfig, other spelling",
        _cluster(clientConfig={"ssl.key.pem": "x"}),
        "clientConfig",
    ),
    ("a number in clientConfig", _cluster(clientConfig={"segment.bytes": 1000}), "clientConfig"),
    ("a properties file without its Secret", _cluster(propertiesKey="client.properties"), ""),
    ("bootstrap without a port", _cluster(bootstrap="kafka-1"), "bootstrap"),
    ("cluster name not a DNS label", _cluster(name="Prod_EU"), "name"),
    ("no replica", _cluster(replicas=0), "replicas"),
    ("a session timeout without unit", _cluster(replicas=2, sessionTimeout="30"), "sessionTimeout"),
    ("a group name with a space", _cluster(replicas=2, group="my group"), "group"),
]


@pytest.mark.parametrize(
    ("values", "field"), [(v, f) for _, v, f in BAD], ids=[i for i, _, _ in BAD]
)
def test_bad_values_are_rejected_by_helm_and_by_the_schema(values: Any, field: str) -> None:
    pointer = "/fetchArchivers/clusters/0" + (f"/{field}" if field else "")
    with pytest.raises(helm_python.HelmValuesError) as raised:
        render(values)
    assert "hunter2" not in str(raised.value)  # a refused secret is never echoed
    validator = jsonschema.Draft7Validator(chart().schema)
    errors = list(validator.iter_errors(chart().merge_values(values)))
    pointers = {"/" + "/".join(str(p) for p in e.absolute_path) for e in errors}
    assert any(p == pointer or p.startswith(pointer + "/") for p in pointers), pointers


def test_secret_free_client_settings_pass_the_schema() -> None:
    ok = _cluster(
        clientConfig={
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "ssl.ca.location": f"{SECRET_DIR}/ca.pem",
            "segment.bytes": "104857600",
        },
        existingSecret="prod-client",
        propertiesKey="client.properties",
    )
    ok["fetchArchivers"]["enabled"] = True
    [dep] = _fetch_objects(render(ok), "Deployment")
    assert "-X" in dep["spec"]["template"]["spec"]["containers"][0]["args"]


def test_replicas_share_the_partitions_through_a_group_and_roll_pod_by_pod() -> None:
    """replicas > 1: every pod a member of the cluster's consumer group (`--group`, default
    kafka-archive-fetch-<name>), a rolling update; the real CLI takes the arguments."""
    from kafka_archive.cli import _register_groups, app
    from typer.testing import CliRunner

    values = load_example("fetch-archivers-msk.yaml")
    values["fetchArchivers"]["clusters"][0]["replicas"] = 3
    [dep] = _fetch_objects(render(values), "Deployment")
    assert dep["spec"]["replicas"] == 3
    assert dep["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
    }
    args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    i = args.index("--group")
    assert args[i : i + 4] == [
        "--group", "kafka-archive-fetch-msk-prod", "--session-timeout", "30s"
    ]  # fmt: skip
    _register_groups()
    assert CliRunner().invoke(app, [*args, "--help"]).exit_code == 0
    values["fetchArchivers"]["clusters"][0].update(group="archivers", sessionTimeout="10s")
    [dep] = _fetch_objects(render(values), "Deployment")
    args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "archivers" in args and "10s" in args
    # one replica and no group: no group, and never two pods at once
    [one] = _fetch_objects(_example(), "Deployment")
    assert "--group" not in one["spec"]["template"]["spec"]["containers"][0]["args"]
    assert one["spec"]["strategy"] == {"type": "Recreate"}


def test_the_image_installs_the_tini_the_command_starts() -> None:
    """Debian's tini package installs /usr/bin/tini (what Spark's entrypoint runs too)."""
    from tests.support.helm_chart import CHART_DIR

    dockerfile = (CHART_DIR / "image" / "Dockerfile").read_text(encoding="utf-8")
    assert re.search(r"apt-get install -y --no-install-recommends [^\n]*\btini\b", dockerfile)
