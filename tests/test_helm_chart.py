"""The Helm chart helm/kafka-archive, rendered by Helm's own engine (helm-python-sdk).

What is proved here, for the default values and for every example values file (the files
docs/deploy.md quotes):

* the chart renders, passes ``helm lint --strict``, and every object (plus the Spark pod
  templates it ships inside a ConfigMap) is valid against the strict Kubernetes 1.30 schemas;
* the deployment properties the chart promises: secrets only through ``secretKeyRef`` to the
  configured existing Secrets, probes/resources/non-root/read-only root fs on every long-running
  container, read-only broker log volumes, queue names that agree between the archive
  configuration (read back by kafka-archive's own parser) and the archivers, workload-identity
  annotations, Spark settings and RBAC, NetworkPolicies;
* values.schema.json is current, documents every key, and rejects bad values both when Helm
  renders and when checked with ``jsonschema`` directly;
* every ``helm`` command in docs/deploy.md renders to valid objects.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import cache
from typing import Any

import helm_python
import jsonschema
import kubernetes_validate
import pytest
import yaml
from kafka_archive.archive.config import ArchiveConfig, parse_config_text

from tests.support.helm_chart import (
    CHART_DIR,
    REPO,
    Obj,
    Rendered,
    chart,
    documented_helm_commands,
    embedded_yaml,
    env_of,
    example_names,
    k8s_version,
    load_example,
    q,
    render,
    schema_generator,
    selects,
    validate_k8s,
)

CASES = ["defaults", *example_names()]
RELEASE = "ka"
NAMESPACE = "kafka"
FULLNAME = "ka-kafka-archive"
SCHEMA_PATH = CHART_DIR / "values.schema.json"


def values_for(case: str) -> Obj:
    return {} if case == "defaults" else load_example(case)


@cache
def rendered(case: str) -> Rendered:
    return render(values_for(case), release=RELEASE, namespace=NAMESPACE)


@cache
def merged(case: str) -> Obj:
    """The values a release would use (chart defaults coalesced with the case's values)."""
    return chart().merge_values(values_for(case))


@cache
def schema() -> Obj:
    loaded: Obj = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return loaded


def name(suffix: str) -> str:
    return f"{FULLNAME}-{suffix}"


def containers(pod_spec: Obj, *, init: bool = True) -> list[Obj]:
    found = list(pod_spec["containers"])
    if init:
        found += pod_spec.get("initContainers", [])
    return found


def archive_config(r: Rendered) -> ArchiveConfig:
    """The rendered archive configuration, parsed by kafka-archive itself."""
    cm = r.get("ConfigMap", name("archive-config"))
    return parse_config_text(cm["data"]["archive.yaml"], source="rendered ConfigMap")


def spark_defaults(r: Rendered) -> dict[str, str]:
    text = r.get("ConfigMap", name("spark-conf"))["data"]["spark-defaults.conf"]
    pairs = (line.split(None, 1) for line in text.splitlines() if line.strip())
    return {k: v for k, v in pairs}


def long_running(r: Rendered) -> Iterator[tuple[Obj, Obj]]:
    """(workload, container) of every container that is meant to keep running."""
    for workload in r.workloads():
        for c in workload["spec"]["template"]["spec"]["containers"]:
            yield workload, c


# ------------------------------------------------------------------------ schema and values


def test_values_schema_is_current_with_values_yaml_and_its_generator() -> None:
    # values.schema.json is generated (descriptions and defaults from values.yaml, Kubernetes
    # types from kubernetes-validate); a hand edit or a values change without regeneration fails.
    assert schema_generator().build_schema() == schema(), (
        "run .venv/bin/python helm/kafka-archive/hack/values_schema.py"
    )


def _walk_keys(node: Obj, path: str) -> Iterator[tuple[str, Obj]]:
    for key, sub in node.get("properties", {}).items():
        yield f"{path}.{key}".lstrip("."), sub
        yield from _walk_keys(sub, f"{path}.{key}")


def test_values_schema_is_draft07_and_every_key_has_type_description_default() -> None:
    s = schema()
    jsonschema.Draft7Validator.check_schema(s)
    assert s["$schema"] == "http://json-schema.org/draft-07/schema#"
    values = yaml.safe_load((CHART_DIR / "values.yaml").read_text(encoding="utf-8"))
    keys = dict(_walk_keys(s, ""))
    assert set(values) <= set(keys)
    for path, sub in keys.items():
        assert sub.get("description"), path
        assert "default" in sub, path
        assert {"type", "allOf", "oneOf"} & set(sub), f"{path}: no type"
        if sub.get("type") == "object":
            # a closed object, or a free-form map whose keys are constrained
            closed = sub.get("additionalProperties") is False and "properties" in sub
            assert closed or "propertyNames" in sub, path
            if closed:
                assert set(sub["required"]) == set(sub["properties"]), path
    # the defaults recorded in the schema are the values.yaml values
    for key in values:
        assert keys[key]["default"] == values[key], key


def test_default_values_and_every_example_pass_the_schema_directly() -> None:
    validator = jsonschema.Draft7Validator(schema(), format_checker=jsonschema.FormatChecker())
    for case in CASES:
        errors = [e.message for e in validator.iter_errors(merged(case))]
        assert errors == [], case


def test_vendored_kubernetes_types_are_the_kubernetes_validate_schemas() -> None:
    # The Kubernetes object types inside values.schema.json were copied, not written by hand:
    # each equals the strict schema kubernetes-validate ships (with refs rewritten to draft-07).
    from importlib import resources

    source = json.loads(
        resources.files("kubernetes_validate")
        .joinpath(f"kubernetes-json-schema/v{k8s_version()}-local-strict/_definitions.json")
        .read_text(encoding="utf-8")
    )["$defs"]
    vendored = schema()["definitions"]
    assert "io.k8s.api.core.v1.Affinity" in vendored
    for key, definition in vendored.items():
        expected = json.loads(json.dumps(source[key]).replace('"#/$defs/', '"#/definitions/'))
        assert definition == expected, key


# ------------------------------------------------------------------------------ rendering


@pytest.mark.parametrize("case", CASES)
def test_every_rendered_object_is_valid_kubernetes(case: str) -> None:
    r = rendered(case)
    assert len(r.objects) >= 20
    for obj in r.objects:
        validate_k8s(obj)
    if merged(case)["spark"]["enabled"]:
        # the pod templates Spark merges into driver/executor pods are Pods too
        cm = r.get("ConfigMap", name("spark-conf"))
        for key in ("driver-pod-template.yaml", "executor-pod-template.yaml"):
            validate_k8s(embedded_yaml(cm, key))


def test_kubernetes_validation_used_here_rejects_unknown_fields_and_wrong_types() -> None:
    # Guard for the test above: strict mode must fail objects with unknown fields.
    deployment = json.loads(json.dumps(rendered("defaults").get("Deployment", name("worker"))))
    deployment["spec"]["template"]["spec"]["containers"][0]["livenessProb"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        validate_k8s(deployment)
    deployment = json.loads(json.dumps(rendered("defaults").get("Deployment", name("worker"))))
    deployment["spec"]["replicas"] = "two"
    with pytest.raises(kubernetes_validate.ValidationError):
        validate_k8s(deployment)


@pytest.mark.parametrize("case", CASES)
def test_helm_lint_strict_passes(case: str) -> None:
    report = helm_python.lint(
        CHART_DIR, values_for(case), strict=True, kube_version=f"v{k8s_version()}"
    )
    problems = [m for m in report["messages"] if m["severity"] >= 2]
    assert problems == [] and report["errors"] == []


@pytest.mark.parametrize("case", CASES)
def test_objects_carry_standard_labels_and_no_secret_is_rendered(case: str) -> None:
    r = rendered(case)
    assert r.of_kind("Secret") == []  # credentials only ever come from existing Secrets
    for obj in r.objects:
        labels = obj["metadata"]["labels"]
        assert labels["app.kubernetes.io/name"] == "kafka-archive"
        assert labels["app.kubernetes.io/instance"] == RELEASE
        assert labels["app.kubernetes.io/managed-by"] == "Helm"
        assert labels["app.kubernetes.io/part-of"] == "kafka-archive"
        assert labels["app.kubernetes.io/component"]
        assert labels["helm.sh/chart"] == "kafka-archive-0.1.0"
        assert len(obj["metadata"]["name"]) <= 63
    for workload in r.workloads():
        selector = workload["spec"]["selector"]
        assert selects(selector, workload["spec"]["template"]["metadata"]["labels"])


# ------------------------------------------------------------------- workload properties


@pytest.mark.parametrize("case", CASES)
def test_long_running_containers_have_probes_resources_and_locked_down_security(
    case: str,
) -> None:
    r = rendered(case)
    for workload, c in long_running(r):
        where = f"{workload['kind']}/{workload['metadata']['name']}/{c['name']}"
        assert c.get("livenessProbe") and c.get("readinessProbe"), where
        assert c["resources"]["requests"] and c["resources"]["limits"], where
        sc = c["securityContext"]
        assert sc["allowPrivilegeEscalation"] is False, where
        assert sc["readOnlyRootFilesystem"] is True, where
        assert sc["capabilities"]["drop"] == ["ALL"], where
        assert workload["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"], where


@pytest.mark.parametrize("case", CASES)
def test_env_references_resolve_in_order_and_secrets_come_from_existing_secrets(
    case: str,
) -> None:
    r = rendered(case)
    v = merged(case)
    existing = {
        v["airflow"]["secrets"]["existingSecret"],
        v["postgresql"]["auth"]["existingSecret"],
        v["redis"]["auth"]["existingSecret"],
        v["catalog"]["database"]["external"]["existingSecret"],
        v["airflow"]["metadataDatabase"]["external"]["existingSecret"],
        v["airflow"]["celery"]["broker"]["external"]["existingSecret"],
        v["objectStore"]["credentials"]["existingSecret"],
    } - {""}
    secret_vars = {
        "AIRFLOW__CORE__FERNET_KEY",
        "AIRFLOW__API_AUTH__JWT_SECRET",
        "AIRFLOW__API__SECRET_KEY",
        "AIRFLOW_DB_PASSWORD",
        "KAFKA_ARCHIVE_DB_PASSWORD",
        "REDIS_PASSWORD",
        "REDISCLI_AUTH",
        "POSTGRES_PASSWORD",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
    }
    pod_specs = [spec for _, spec in r.pod_specs()]
    if v["spark"]["enabled"]:
        cm = r.get("ConfigMap", name("spark-conf"))
        pod_specs += [
            embedded_yaml(cm, k)["spec"]
            for k in ("driver-pod-template.yaml", "executor-pod-template.yaml")
        ]
    seen_refs = set()
    for spec in pod_specs:
        for c in containers(spec):
            defined: set[str] = set()
            for e in c.get("env", []):
                # Kubernetes expands $(VAR) only from variables defined earlier in the list
                for ref in re.findall(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", e.get("value", "")):
                    assert ref in defined, f"{c['name']}: {e['name']} uses $({ref}) before it"
                ref = q("valueFrom.secretKeyRef", e)
                if ref is not None:
                    assert ref["name"] in existing, (c["name"], e["name"], ref)
                    seen_refs.add(ref["name"])
                if e["name"] in secret_vars:
                    assert ref is not None and "value" not in e, (c["name"], e["name"])
                defined.add(e["name"])
    # every Secret the values name is used by something
    used = {v["airflow"]["secrets"]["existingSecret"]}
    assert used <= seen_refs


@pytest.mark.parametrize("case", CASES)
def test_mounts_service_accounts_and_selectors_point_at_rendered_objects(case: str) -> None:
    r = rendered(case)
    v = merged(case)
    configmaps = {o["metadata"]["name"] for o in r.of_kind("ConfigMap")}
    accounts = {o["metadata"]["name"] for o in r.of_kind("ServiceAccount")}
    pod_labels = [w["spec"]["template"]["metadata"]["labels"] for w in r.workloads()]
    for owner, spec in r.pod_specs():
        volumes = {vol["name"]: vol for vol in spec.get("volumes", [])}
        claims = q("spec.volumeClaimTemplates[].metadata.name", owner) or []
        volumes.update({claim: {"name": claim} for claim in claims})
        for c in containers(spec):
            for m in c.get("volumeMounts", []):
                assert m["name"] in volumes, (owner["metadata"]["name"], m["name"])
        for vol in volumes.values():
            if "configMap" in vol:
                assert vol["configMap"]["name"] in configmaps
        if "serviceAccountName" in spec:
            assert spec["serviceAccountName"] in accounts
        # only the workers (spark-submit) talk to the Kubernetes API
        token = spec.get("automountServiceAccountToken")
        is_worker = owner["metadata"]["name"] == name("worker")
        assert token is (is_worker and v["spark"]["enabled"]), owner["metadata"]["name"]
    for svc in r.of_kind("Service"):
        assert any(selects({"matchLabels": svc["spec"]["selector"]}, lab) for lab in pod_labels)
    for pdb in r.of_kind("PodDisruptionBudget"):
        assert any(selects(pdb["spec"]["selector"], lab) for lab in pod_labels)


@pytest.mark.parametrize("case", CASES)
def test_network_policies_deny_by_default_and_cover_every_pod(case: str) -> None:
    r = rendered(case)
    policies = r.of_kind("NetworkPolicy")
    deny = r.get("NetworkPolicy", name("default-deny"))
    assert deny["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert "ingress" not in deny["spec"] and "egress" not in deny["spec"]
    component_policies = [
        p
        for p in policies
        if p["metadata"]["name"] not in (name("default-deny"), name("allow-dns"))
    ]
    for owner, _ in r.pod_specs():
        labels = owner["spec"]["template"]["metadata"]["labels"]
        assert selects(deny["spec"]["podSelector"], labels)
        assert any(selects(p["spec"]["podSelector"], labels) for p in component_policies), owner[
            "metadata"
        ]["name"]


# ---------------------------------------------------------------------- the default values


def test_defaults_run_everything_in_cluster_and_archive_nothing_yet() -> None:
    r = rendered("defaults")
    assert {o["metadata"]["name"] for o in r.of_kind("StatefulSet")} == {
        name("postgresql"),
        name("redis"),
    }
    worker = r.get("Deployment", name("worker"))
    c = worker["spec"]["template"]["spec"]["containers"][0]
    assert c["args"][:3] == ["airflow", "celery", "worker"]
    assert c["args"][c["args"].index("--queues") + 1] == "default"
    env = env_of(c)
    assert env["KAFKA_ARCHIVE_STORE"]["value"] == "s3://kafka-archive/segments"
    assert env["KAFKA_ARCHIVE_DB"]["value"] == (
        "postgresql+psycopg://kafka_archive:$(KAFKA_ARCHIVE_DB_PASSWORD)"
        f"@{name('postgresql')}:5432/kafka_archive"
    )
    assert q("valueFrom.secretKeyRef", env["KAFKA_ARCHIVE_DB_PASSWORD"]) == {
        "name": "kafka-archive-postgresql",
        "key": "password",
    }
    assert "KAFKA_ARCHIVE_CONFIG" not in env  # no clusters: no configuration file
    assert "archive.clusters is empty" in r.notes
    assert {p["metadata"]["name"] for p in r.of_kind("PodDisruptionBudget")} == {
        name(c) for c in ("api-server", "scheduler", "dag-processor", "triggerer", "worker")
    }
    assert r.of_kind("Ingress") == [] and r.of_kind("DaemonSet") == []
    # the airflow.cfg every component mounts: Celery, the execution API, health checks
    cfg = r.get("ConfigMap", name("airflow-config"))["data"]["airflow.cfg"]
    assert "executor = CeleryExecutor" in cfg
    assert f"execution_api_server_url = http://{name('api-server')}:8080/execution/" in cfg
    assert "enable_health_check = True" in cfg
    # the only file Airflow writes at start-up goes to a writable volume
    assert "simple_auth_manager_passwords_file = /tmp/" in cfg
    scheduler = r.get("Deployment", name("scheduler"))
    probe = q("spec.template.spec.containers[0].livenessProbe.httpGet", scheduler)
    assert probe == {"path": "/health", "port": "health"}


def test_postgresql_creates_the_airflow_database_owned_by_the_chart_role() -> None:
    r = rendered("minio-inchart-postgres.yaml")
    sql = r.get("ConfigMap", name("postgresql-init"))["data"]["10-airflow-database.sql"]
    assert sql.strip() == 'CREATE DATABASE "airflow" OWNER "kafka_archive";'
    sts = r.get("StatefulSet", name("postgresql"))
    env = env_of(sts["spec"]["template"]["spec"]["containers"][0])
    assert env["POSTGRES_DB"]["value"] == "kafka_archive"
    assert q("spec.volumeClaimTemplates[0].spec", sts) == {
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": "fast-ssd",
        "resources": {"requests": {"storage": "50Gi"}},
    }


# ------------------------------------------------------------------------ example: AWS


def test_aws_example_irsa_sse_kms_and_external_databases() -> None:
    r = rendered("aws-irsa-kms.yaml")
    role = "arn:aws:iam::123456789012:role/kafka-archive-prod"
    annotated = {
        sa["metadata"]["name"]
        for sa in r.of_kind("ServiceAccount")
        if q('metadata.annotations."eks.amazonaws.com/role-arn"', sa) == role
    }
    # exactly the accounts of pods that touch the store (no archivers in mode none)
    assert annotated == {name("worker"), name("spark")}
    assert q("metadata.annotations", r.get("ServiceAccount", name("airflow"))) is None
    config = archive_config(r)
    assert config.store_uri == "s3://acme-kafka-archive-prod/segments"
    assert config.store_options == {
        "region": "eu-west-1",
        "sse": "aws:kms",
        "sse_kms_key_id": "arn:aws:kms:eu-west-1:123456789012:key/"
        "0f2c9c8e-4b5a-4f0e-9d6b-3f1e2a7c5d10",
    }
    assert config.queues() == [f"kafka-archive-prod-eu-broker-{i}" for i in (1, 2, 3)]
    assert r.of_kind("StatefulSet") == []  # no in-chart PostgreSQL or Redis
    assert not [w for w in r.workloads() if "archiver" in w["metadata"]["name"]]
    env = env_of(q("spec.template.spec.containers[0]", r.get("Deployment", name("worker"))))
    refs = {k: q("valueFrom.secretKeyRef", e) for k, e in env.items()}
    assert refs["KAFKA_ARCHIVE_DB"] == {"name": "kafka-archive-catalog-db", "key": "url"}
    assert refs["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] == {
        "name": "kafka-archive-airflow-db",
        "key": "url",
    }
    assert refs["AIRFLOW__CELERY__BROKER_URL"] == {
        "name": "kafka-archive-celery-broker",
        "key": "url",
    }
    assert env["AWS_REGION"]["value"] == "eu-west-1"
    assert "AWS_ACCESS_KEY_ID" not in env  # IRSA, no static keys
    policy = r.get("NetworkPolicy", name("worker"))
    assert {"ipBlock": {"cidr": "10.20.64.0/20"}} in q("spec.egress[].to[]", policy)
    assert q("spec.ingressClassName", r.get("Ingress", name("api-server"))) == "alb"


# ---------------------------------------------------------------------- example: MinIO


def test_minio_example_endpoint_static_keys_and_egress_to_minio_only() -> None:
    r = rendered("minio-inchart-postgres.yaml")
    env = env_of(q("spec.template.spec.containers[0]", r.get("Deployment", name("worker"))))
    assert env["AWS_ENDPOINT_URL_S3"]["value"] == "http://minio.minio.svc.cluster.local:9000"
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        assert q("valueFrom.secretKeyRef", env[var]) == {"name": "kafka-archive-minio", "key": var}
    minio = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "minio"}},
        "podSelector": {"matchLabels": {"app": "minio"}},
    }
    for component in ("worker", "api-server", "spark"):
        rules = q("spec.egress", r.get("NetworkPolicy", name(component)))
        to_minio = [rule for rule in rules if rule.get("to") == [minio]]
        assert [rule["ports"] for rule in to_minio] == [[{"port": 9000, "protocol": "TCP"}]]
    # the api-server needs nothing else outside the cluster: no port-443-to-anywhere rule
    api_rules = q("spec.egress", r.get("NetworkPolicy", name("api-server")))
    assert not [x for x in api_rules if "to" not in x]
    # with a cluster configured, the store options reach kafka-archive's configuration
    values = load_example("minio-inchart-postgres.yaml")
    values["archive"] = {
        "clusters": [
            {
                "name": "onprem",
                "topics": ["orders-*", "payments"],
                "brokers": [
                    {
                        "id": 0,
                        "logDirs": ["/data/kafka/logs"],
                        "worker": {
                            "volumes": [
                                {
                                    "name": "data",
                                    "mountPath": "/data/kafka",
                                    "hostPath": "/data/kafka",
                                }
                            ]
                        },
                    }
                ],
            }
        ]
    }
    config = archive_config(render(values, release=RELEASE, namespace=NAMESPACE))
    assert config.store_uri == "s3://kafka-archive/prod"
    # ... and so does the cluster's topic selection, to every (broker, log dir) task
    assert [t.topics for t in config.targets()] == [["orders-*", "payments"]]
    assert config.store_options == {
        "region": "us-east-1",
        "endpoint_url": "http://minio.minio.svc.cluster.local:9000",
        "addressing_style": "path",
        "sse": "AES256",
    }


# ---------------------------------------------------------- example: per-broker archivers


def test_per_broker_example_one_archiver_per_broker_on_its_queue_with_read_only_pvc() -> None:
    r = rendered("per-broker-queues.yaml")
    config = archive_config(r)
    assert [t.queue for t in config.targets()] == [
        f"kafka-archive-prod-broker-{i}" for i in range(3)
    ]
    archivers = {
        w["metadata"]["labels"]["kafka-archive.io/broker"]: w
        for w in r.of_kind("Deployment")
        if w["metadata"]["labels"]["app.kubernetes.io/component"] == "archiver"
    }
    assert sorted(archivers) == ["prod-0", "prod-1", "prod-2"]
    served = set()
    for broker in config.cluster("prod").brokers:
        d = archivers[f"prod-{broker.id}"]
        pod = d["spec"]["template"]["spec"]
        c = pod["containers"][0]
        queue = c["args"][c["args"].index("--queues") + 1]
        assert queue == broker.queue
        served.add(queue)
        assert d["spec"]["replicas"] == 1 and d["spec"]["strategy"] == {"type": "Recreate"}
        # the broker's PVC, read-only both as a volume and as a mount
        claim = q("volumes[?persistentVolumeClaim].persistentVolumeClaim | [0]", pod)
        assert claim == {"claimName": f"data-0-prod-kafka-{broker.id}", "readOnly": True}
        mount = q("volumeMounts[?name=='log-data-0'] | [0]", c)
        assert mount == {
            "name": "log-data-0",
            "mountPath": "/var/lib/kafka/data-0",
            "readOnly": True,
        }
        assert all(d.startswith(mount["mountPath"] + "/") for d in broker.log_dirs)
        # on the broker's node, next to the broker pod
        term = q("affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]", pod)
        assert term == {
            "topologyKey": "kubernetes.io/hostname",
            "labelSelector": {"matchLabels": {"strimzi.io/pod-name": f"prod-kafka-{broker.id}"}},
        }
        assert pod["tolerations"] == [
            {"key": "dedicated", "operator": "Equal", "value": "kafka", "effect": "NoSchedule"}
        ]
        # never re-own the broker's files
        assert "fsGroup" not in pod["securityContext"]
        assert pod["automountServiceAccountToken"] is False
    assert served == {q for q in config.queues() if q is not None}
    # archivers upload; they never talk to Kafka or the Kubernetes API
    egress_ports = q("spec.egress[].ports[].port", r.get("NetworkPolicy", name("archiver")))
    assert not {9092, 6443} & set(egress_ports)


def test_per_broker_archiver_refuses_a_log_dir_outside_its_volumes() -> None:
    values = load_example("per-broker-queues.yaml")
    values["archive"]["clusters"][0]["brokers"][1]["logDirs"] = ["/var/lib/kafka/data-1/kafka-log1"]
    with pytest.raises(helm_python.HelmRenderError, match="/var/lib/kafka/data-1/kafka-log1"):
        render(values)


# -------------------------------------------------------------- example: DaemonSet archivers


def test_daemonset_example_reads_host_paths_read_only_on_per_node_queues() -> None:
    r = rendered("daemonset-archivers.yaml")
    ds = r.get("DaemonSet", name("archiver"))
    pod = ds["spec"]["template"]["spec"]
    c = pod["containers"][0]
    assert pod["nodeSelector"] == {"kafka-archive.io/archiver": "true"}
    assert q("volumes[?hostPath].hostPath", pod) == [{"path": "/data/kafka", "type": "Directory"}]
    assert q("volumeMounts[?name=='log-kafka-data'] | [0].readOnly", c) is True
    env = env_of(c)
    assert env["NODE_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    assert env["ARCHIVER_QUEUE"]["value"] == "kafka-archive-node-$(NODE_NAME)"
    assert c["args"][c["args"].index("--queues") + 1] == "$(ARCHIVER_QUEUE)"
    # the queue each node's pod will consume is the queue the config routes its broker to
    config = archive_config(r)
    nodes = {101: "kafka-node-a", 102: "kafka-node-b", 103: "kafka-node-c"}
    for t in config.targets():
        node_queue = env["ARCHIVER_QUEUE"]["value"].replace("$(NODE_NAME)", nodes[t.broker_id])
        assert t.queue == node_queue
        assert t.log_dir.startswith("/data/kafka/")
    assert len(config.targets()) == 6
    assert not [d for d in r.of_kind("Deployment") if "archiver" in d["metadata"]["name"]]


def test_daemonset_archiver_refuses_a_log_dir_outside_its_host_paths() -> None:
    values = load_example("daemonset-archivers.yaml")
    values["archive"]["clusters"][0]["brokers"][0]["logDirs"] = ["/srv/kafka/logs"]
    with pytest.raises(helm_python.HelmRenderError, match="/srv/kafka/logs"):
        render(values)


# ------------------------------------------------------------------------ example: Spark


def test_spark_example_settings_pod_templates_and_rbac() -> None:
    r = rendered("spark-on-k8s.yaml")
    conf = spark_defaults(r)
    assert conf["spark.master"] == "k8s://https://kubernetes.default.svc:443"
    assert conf["spark.submit.deployMode"] == "client"
    assert conf["spark.kubernetes.namespace"] == NAMESPACE
    assert conf["spark.kubernetes.container.image"] == "kafka-archive:0.1.0"
    assert conf["spark.kubernetes.authenticate.driver.serviceAccountName"] == name("spark")
    assert conf["spark.dynamicAllocation.enabled"] == "true"
    assert conf["spark.dynamicAllocation.shuffleTracking.enabled"] == "true"
    assert (
        conf["spark.dynamicAllocation.minExecutors"],
        conf["spark.dynamicAllocation.maxExecutors"],
    ) == ("2", "20")
    assert (conf["spark.executor.cores"], conf["spark.executor.memory"]) == ("4", "12g")
    assert conf["spark.sql.shuffle.partitions"] == "256"  # from spark.conf
    # executors: the chart's pod template (labels for the NetworkPolicies, placement, env)
    cm = r.get("ConfigMap", name("spark-conf"))
    path = conf["spark.kubernetes.executor.podTemplateFile"]
    assert path == "/opt/kafka-archive/spark-conf/executor-pod-template.yaml"
    executor = embedded_yaml(cm, "executor-pod-template.yaml")
    check_spark_pod_template(executor, conf, "executor")
    assert executor["spec"]["automountServiceAccountToken"] is False
    # client mode: the driver is the worker's task, so no driver pod template is used
    assert "spark.kubernetes.driver.podTemplateFile" not in conf
    worker = r.get("Deployment", name("worker"))
    c = worker["spec"]["template"]["spec"]["containers"][0]
    env = env_of(c)
    assert env["SPARK_CONF_DIR"]["value"] == "/opt/kafka-archive/spark-conf"
    assert (
        q("volumeMounts[?name=='spark-conf'] | [0].mountPath", c) == "/opt/kafka-archive/spark-conf"
    )
    # executors call back to the pod IP and are owned by the worker pod (deleted with it)
    assert env["POD_IP"]["valueFrom"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    assert env["POD_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    opts = env["SPARK_SUBMIT_OPTS"]["value"].split()
    assert opts == [
        "-Dspark.driver.host=$(POD_IP)",
        "-Dspark.kubernetes.driver.pod.name=$(POD_NAME)",
    ]
    ingress = q(
        "spec.ingress[].from[].podSelector.matchLabels", r.get("NetworkPolicy", name("worker"))
    )
    assert any(m.get("app.kubernetes.io/component") == "spark" for m in ingress)
    # RBAC: the worker (driver / spark-submit) and a driver pod manage pods in this namespace
    spark_role = r.get("Role", name("spark"))
    pod_rule = q("rules[?contains(resources, 'pods')] | [0]", spark_role)
    assert {"create", "get", "delete", "watch", "list"} <= set(pod_rule["verbs"])
    binding = r.get("RoleBinding", name("spark"))
    assert q("subjects[].name", binding) == [name("spark"), name("worker")]
    assert set(q("subjects[].namespace", binding)) == {NAMESPACE}
    assert r.of_kind("ClusterRole") == []
    policy = r.get("NetworkPolicy", name("spark"))
    assert {"ipBlock": {"cidr": "172.20.0.1/32"}} in q("spec.egress[].to[]", policy)


def check_spark_pod_template(template: Obj, conf: dict[str, str], role: str) -> None:
    spec = template["spec"]
    assert template["metadata"]["labels"]["app.kubernetes.io/component"] == "spark"
    assert template["metadata"]["labels"]["kafka-archive.io/spark-role"] == role
    assert spec["nodeSelector"] == {"workload": "spark"}
    assert spec["tolerations"][0]["key"] == "workload"
    container = spec["containers"][0]
    assert container["name"] == conf[f"spark.kubernetes.{role}.podTemplateContainerName"]
    assert container["command"] == ["/opt/spark-entrypoint.sh"]
    assert "KAFKA_ARCHIVE_DB" in env_of(container)


def test_spark_cluster_mode_starts_driver_pods_from_the_chart_template() -> None:
    values = load_example("spark-on-k8s.yaml")
    values["spark"]["deployMode"] = "cluster"
    r = render(values, release=RELEASE, namespace=NAMESPACE)
    conf = spark_defaults(r)
    assert conf["spark.submit.deployMode"] == "cluster"
    path = conf["spark.kubernetes.driver.podTemplateFile"]
    assert path == "/opt/kafka-archive/spark-conf/driver-pod-template.yaml"
    driver = embedded_yaml(r.get("ConfigMap", name("spark-conf")), "driver-pod-template.yaml")
    check_spark_pod_template(driver, conf, "driver")
    # the driver pod creates executors: it needs its token; executors do not
    assert driver["spec"]["automountServiceAccountToken"] is True
    assert driver["spec"]["serviceAccountName"] == name("spark")
    # the submitting worker is not the driver: no driver identity, no ingress from executors
    env = env_of(r.get("Deployment", name("worker"))["spec"]["template"]["spec"]["containers"][0])
    assert "SPARK_SUBMIT_OPTS" not in env
    ingress = q(
        "spec.ingress[].from[].podSelector.matchLabels", r.get("NetworkPolicy", name("worker"))
    )
    assert not any(m.get("app.kubernetes.io/component") == "spark" for m in ingress)
    for obj in r.objects:
        validate_k8s(obj)


# -------------------------------------------------------------------------- example: GCS


def test_gcs_example_hmac_keys_workload_identity_and_checksum_setting() -> None:
    r = rendered("gcs-interop.yaml")
    gsa = "kafka-archive@acme-data.iam.gserviceaccount.com"
    for sa in (name("worker"), name("archiver"), name("spark")):
        annotations = r.get("ServiceAccount", sa)["metadata"]["annotations"]
        assert annotations == {"iam.gke.io/gcp-service-account": gsa}
    env = env_of(q("spec.template.spec.containers[0]", r.get("Deployment", name("worker"))))
    assert env["AWS_ENDPOINT_URL_S3"]["value"] == "https://storage.googleapis.com"
    assert env["AWS_RESPONSE_CHECKSUM_VALIDATION"]["value"] == "when_required"
    assert q("valueFrom.secretKeyRef", env["AWS_ACCESS_KEY_ID"]) == {
        "name": "kafka-archive-gcs-hmac",
        "key": "access-id",
    }
    # catalog external, Airflow metadata on the in-chart PostgreSQL
    assert q("valueFrom.secretKeyRef.name", env["KAFKA_ARCHIVE_DB"]) == "kafka-archive-catalog-db"
    assert "postgresql" in env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]["value"]


# -------------------------------------------------------------------------- other switches


def test_migrations_without_helm_hooks_are_per_revision_jobs() -> None:
    hooked = rendered("defaults").of_kind("Job")
    assert {j["metadata"]["annotations"]["helm.sh/hook"] for j in hooked} == {
        "post-install,post-upgrade"
    }
    manifests = chart().render(
        values={"migrations": {"useHelmHooks": False}},
        name=RELEASE,
        namespace=NAMESPACE,
        revision=7,
    )
    jobs = [
        d
        for t, txt in manifests.items()
        if "migrations" in t and t.endswith(".yaml")
        for d in yaml.safe_load_all(txt)
        if d and d["kind"] == "Job"
    ]
    assert sorted(j["metadata"]["name"] for j in jobs) == [
        name("migrate-airflow-7"),
        name("migrate-catalog-7"),
    ]
    for j in jobs:
        assert "annotations" not in j["metadata"] and j["spec"]["ttlSecondsAfterFinished"] == 3600
        validate_k8s(j)


def test_switches_turn_components_off() -> None:
    r = render(
        {
            "networkPolicies": {"enabled": False},
            "spark": {"enabled": False},
            "triggerer": {"enabled": False},
            "apiServer": {"pdb": {"enabled": False}},
            "migrations": {"enabled": False},
        },
        release=RELEASE,
        namespace=NAMESPACE,
    )
    kinds = {o["kind"] for o in r.objects}
    assert "NetworkPolicy" not in kinds and "Role" not in kinds and "Job" not in kinds
    names = {o["metadata"]["name"] for o in r.objects}
    assert name("triggerer") not in names and name("spark-conf") not in names
    assert name("api-server") not in {
        p["metadata"]["name"] for p in r.of_kind("PodDisruptionBudget")
    }
    worker = r.get("Deployment", name("worker"))["spec"]["template"]["spec"]
    assert worker["automountServiceAccountToken"] is False
    assert "SPARK_CONF_DIR" not in env_of(worker["containers"][0])


def test_airflow_config_values_override_the_charts_airflow_cfg() -> None:
    auth = "airflow.providers.fab.auth_manager.fab_auth_manager.FabAuthManager"
    r = render(
        {
            "airflow": {
                "config": {
                    "core": {"auth_manager": auth, "load_examples": True},
                    "celery": {"worker_prefetch_multiplier": 1},
                }
            }
        }
    )
    cfg = r.get("ConfigMap", name("airflow-config"))["data"]["airflow.cfg"]
    core = cfg.split("[core]", 1)[1].split("[", 1)[0]
    assert f"auth_manager = {auth}" in core
    assert "load_examples = true" in core and "load_examples = False" not in core
    assert "executor = CeleryExecutor" in core  # the chart's own settings stay
    assert "worker_prefetch_multiplier = 1" in cfg


def test_release_named_like_the_chart_is_not_repeated_in_names() -> None:
    r = render({}, release="kafka-archive", namespace="kafka-archive")
    assert r.get("Deployment", "kafka-archive-worker")
    assert "svc/kafka-archive-api-server" in r.notes


def test_image_dockerfile_provides_the_paths_the_chart_uses() -> None:
    # The chart points Airflow, spark-submit and Spark pods at paths inside the image; the
    # Dockerfile must create exactly those.
    dockerfile = (CHART_DIR / "image" / "Dockerfile").read_text(encoding="utf-8")
    r = rendered("spark-on-k8s.yaml")
    cfg = r.get("ConfigMap", name("airflow-config"))["data"]["airflow.cfg"]
    dags_folder = re.search(r"^dags_folder = (\S+)$", cfg, re.M)
    assert dags_folder is not None
    assert f"COPY --chown=airflow:0 dags {dags_folder[1]}" in dockerfile
    plugins_folder = re.search(r"^plugins_folder = (\S+)$", cfg, re.M)
    assert plugins_folder is not None  # the on-call page's plugin, and nothing else of plugins/
    assert (
        f"COPY --chown=airflow:0 plugins/kafka_archive_ui.py "
        f"{plugins_folder[1]}/kafka_archive_ui.py" in dockerfile
    )
    template = embedded_yaml(r.get("ConfigMap", name("spark-conf")), "driver-pod-template.yaml")
    entrypoint = template["spec"]["containers"][0]["command"][0]
    assert re.search(
        rf"COPY --from=spark-dist .*/opt/entrypoint.sh {entrypoint}$", dockerfile, re.M
    )
    assert "pip install" in dockerfile and "/tmp/wheels/kafka_archive-*.whl" in dockerfile
    # the packaged chart leaves the build files, generator and examples out (the Grafana
    # dashboard stays: the monitoring ConfigMap reads it with .Files.Get)
    assert [f["name"] for f in chart().files] == [".helmignore", "dashboards/kafka-archive.json"]
    assert chart().schema == schema()


# ----------------------------------------------------------------------- bad values


BAD_VALUES: list[tuple[str, Obj, str]] = [
    ("unknown key", {"objectStore": {"bukket": "x"}}, "/objectStore"),
    ("unknown top-level key", {"sparkk": {"enabled": True}}, ""),
    ("wrong type", {"workers": {"replicas": "three"}}, "/workers/replicas"),
    (
        "wrong type in a Kubernetes object",
        {"workers": {"tolerations": [{"keyy": "a"}]}},
        "/workers/tolerations/0",
    ),
    ("invalid enum", {"archivers": {"mode": "sidecar"}}, "/archivers/mode"),
    (
        "invalid encryption",
        {"objectStore": {"encryption": {"type": "aws:kms:dsse"}}},
        "/objectStore/encryption/type",
    ),
    (
        "missing required (null removes it)",
        {"airflow": {"secrets": {"existingSecret": None}}},
        "/airflow/secrets",
    ),
    (
        "empty required secret name",
        {"airflow": {"secrets": {"existingSecret": ""}}},
        "/airflow/secrets/existingSecret",
    ),
    ("bucket name", {"objectStore": {"bucket": "Not_A_Bucket"}}, "/objectStore/bucket"),
    ("minimum", {"apiServer": {"replicas": 0}}, "/apiServer/replicas"),
    (
        "IRSA without a role",
        {"objectStore": {"workloadIdentity": {"type": "aws-irsa"}}},
        "/objectStore/workloadIdentity/awsRoleArn",
    ),
    (
        "malformed role ARN",
        {
            "objectStore": {
                "workloadIdentity": {"type": "aws-irsa", "awsRoleArn": "arn:aws:iam::12:user/x"}
            }
        },
        "/objectStore/workloadIdentity/awsRoleArn",
    ),
    (
        "KMS key without SSE-KMS",
        {"objectStore": {"encryption": {"kmsKeyId": "alias/archive"}}},
        "/objectStore/encryption/type",
    ),
    (
        "internal catalog without PostgreSQL",
        {"postgresql": {"enabled": False}},
        "/postgresql/enabled",
    ),
    (
        "external catalog without its Secret",
        {"catalog": {"database": {"type": "external"}}},
        "/catalog/database/external/existingSecret",
    ),
    (
        "a secret in airflow.config",
        {"airflow": {"config": {"database": {"sql_alchemy_conn": "postgresql://u:p@db/airflow"}}}},
        "/airflow/config/database",
    ),
    (
        "per-broker archiver without volumes",
        {
            "archive": {
                "clusters": [
                    {"name": "prod", "brokers": [{"id": 0, "logDirs": ["/var/lib/kafka"]}]}
                ]
            }
        },
        "/archive/clusters/0/brokers/0",
    ),
    (
        "DaemonSet broker without its node",
        {
            "archivers": {"mode": "daemonSet"},
            "archive": {
                "clusters": [
                    {"name": "prod", "brokers": [{"id": 0, "logDirs": ["/var/lib/kafka/x"]}]}
                ]
            },
        },
        "/archive/clusters/0/brokers/0",
    ),
    (
        "volume with both a claim and a host path",
        {
            "archive": {
                "clusters": [
                    {
                        "name": "prod",
                        "brokers": [
                            {
                                "id": 0,
                                "logDirs": ["/d/x"],
                                "worker": {
                                    "volumes": [
                                        {
                                            "name": "d",
                                            "mountPath": "/d",
                                            "claimName": "c",
                                            "hostPath": "/d",
                                        }
                                    ]
                                },
                            }
                        ],
                    }
                ]
            }
        },
        "/archive/clusters/0/brokers/0/worker/volumes/0",
    ),
    (
        "relative log dir",
        {
            "archive": {
                "clusters": [{"name": "prod", "brokers": [{"id": 0, "logDirs": ["kafka-logs"]}]}]
            }
        },
        "/archive/clusters/0/brokers/0/logDirs/0",
    ),
    (
        "cluster name not a DNS label",
        {"archive": {"clusters": [{"name": "Prod_EU", "brokers": [{"id": 0, "logDirs": ["/d"]}]}]}},
        "/archive/clusters/0/name",
    ),
]


def _error_pointers(error: jsonschema.ValidationError) -> Iterator[str]:
    yield "/" + "/".join(str(p) for p in error.absolute_path) if error.absolute_path else ""
    for sub in error.context or ():
        yield from _error_pointers(sub)


@pytest.mark.parametrize(
    ("values", "pointer"), [(v, p) for _, v, p in BAD_VALUES], ids=[i for i, _, _ in BAD_VALUES]
)
def test_bad_values_are_rejected_by_helm_and_by_the_schema(values: Obj, pointer: str) -> None:
    # 1. Helm's own validation, on render (what `helm install` does)
    with pytest.raises(helm_python.HelmValuesError) as raised:
        render(values)
    message = str(raised.value)
    assert f"at '{pointer}" in message or "invalid propertyName 'sql_alchemy_conn'" in message
    # 2. the same schema with jsonschema, on the values Helm would use
    validator = jsonschema.Draft7Validator(schema(), format_checker=jsonschema.FormatChecker())
    errors = list(validator.iter_errors(chart().merge_values(values)))
    pointers = {p for e in errors for p in _error_pointers(e)}
    assert any(p == pointer or p.startswith(pointer + "/") for p in pointers), pointers


# ---------------------------------------------------------------------- the documentation


def test_docs_quote_every_example_values_file() -> None:
    commands = documented_helm_commands()
    files = {f for c in commands for f in c.value_files}
    assert files == {f"helm/kafka-archive/examples/{n}" for n in example_names()}
    assert all((REPO / f).is_file() for f in files)


@pytest.mark.parametrize("command", documented_helm_commands(), ids=lambda c: c.text[:90])
def test_documented_helm_commands_render_valid_objects(command: Any) -> None:
    r = render(command.values(), release=command.release, namespace=command.namespace)
    for obj in r.objects:
        if obj["kind"] == "PrometheusRule":  # a CRD: promtool checks it (test_monitoring_chart)
            continue
        validate_k8s(obj)
    images = {c["image"] for _, spec in r.pod_specs() for c in containers(spec)}
    for expr in command.set_values:
        key, value = expr.split("=", 1)
        if key == "images.platform.repository":
            assert any(i.startswith(value + ":") for i in images)
        if key == "images.platform.tag":
            assert any(i.endswith(":" + value) for i in images)
