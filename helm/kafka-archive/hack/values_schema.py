"""Generate the chart's values.schema.json (JSON Schema draft-07, as Helm validates it).

Run from the repository root after changing values.yaml or this file::

    .venv/bin/python helm/kafka-archive/hack/values_schema.py          # rewrite the schema
    .venv/bin/python helm/kafka-archive/hack/values_schema.py --check  # exit 1 if stale

Where each part of the schema comes from, so that nothing is written twice:

* structure, types and constraints (enums, patterns, minimums, required keys, conditionals):
  ``SPEC`` below;
* ``description`` of every values key: its ``# --`` comment in values.yaml (``values_doc``);
* ``default`` of every values key: its value in values.yaml;
* Kubernetes object types (affinity, tolerations, resources, security contexts, env vars,
  NetworkPolicy peers and ports): copied verbatim from the strict Kubernetes JSON schemas that
  ``kubernetes-validate`` ships (``K8S_VERSION``), under ``definitions``.

Every object the chart defines has ``additionalProperties: false`` and lists all its keys as
required (Helm merges the defaults in, so a key is only missing when a user sets it to null, which
would break the templates). Free-form maps (labels, annotations, extra Spark or Airflow settings)
constrain their keys and value types instead.

The build fails if a values key has no description, no ``SPEC`` entry, or a ``SPEC`` key has no
value in values.yaml.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from values_doc import read_key_descriptions

CHART_DIR = Path(__file__).resolve().parents[1]
VALUES = CHART_DIR / "values.yaml"
SCHEMA = CHART_DIR / "values.schema.json"
#: Kubernetes version whose object schemas are vendored (and that the tests validate against).
K8S_VERSION = "1.30.0"

Schema = dict[str, Any]

# ---------------------------------------------------------------------------------- builders


def _secret_key_pattern() -> str:
    """kafka_archive.redact's pattern of secret setting names (importable from the repository's
    plugins/ folder when the package is not installed)."""
    plugins = str(Path(__file__).resolve().parents[3] / "plugins")
    if plugins not in sys.path:
        sys.path.append(plugins)
    from kafka_archive.redact import SECRET_KEY_PATTERN

    return SECRET_KEY_PATTERN


#: Kubernetes object names (DNS-1123 subdomain) and labels.
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
SECRET_KEY = r"^[-._a-zA-Z0-9]+$"
ABS_PATH = r"^/[^\s]*$"
QUANTITY = r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$"
#: Celery queue names kafka-archive accepts (archive/config.py).
QUEUE = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$"
#: Label keys with an optional DNS prefix (kubernetes.io/..., app).
LABEL_KEY = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
#: "not empty", for conditionals.
MIN1: Schema = {"minLength": 1}
LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$"


def obj(
    properties: dict[str, Schema], *, required: list[str] | None = None, extra: Schema | None = None
) -> Schema:
    """A closed object; every key is required unless ``required`` says otherwise. ``extra``
    adds keywords such as conditionals."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": list(properties) if required is None else required,
        "properties": properties,
        **(extra or {}),
    }


def string(
    *,
    pattern: str | None = None,
    enum: list[str] | None = None,
    min_length: int | None = None,
    max_length: int | None = None,
    **extra: Any,
) -> Schema:
    s: Schema = {"type": "string", **extra}
    if pattern is not None:
        s["pattern"] = pattern
    if enum is not None:
        s["enum"] = enum
    if min_length is not None:
        s["minLength"] = min_length
    if max_length is not None:
        s["maxLength"] = max_length
    return s


#: a deadline setting's duration (kafka_archive.services.notify.parse_deadline)
DEADLINE = r"^[0-9]+(ms|s|m|h|d|w)$"


def optional(pattern: str) -> str:
    """A pattern that also accepts "" (unset)."""
    return f"^$|{pattern}"


def integer(minimum: int | None = None, maximum: int | None = None) -> Schema:
    s: Schema = {"type": "integer"}
    if minimum is not None:
        s["minimum"] = minimum
    if maximum is not None:
        s["maximum"] = maximum
    return s


def boolean() -> Schema:
    return {"type": "boolean"}


def array(items: Schema, **extra: Any) -> Schema:
    return {"type": "array", "items": items, **extra}


def string_map(key_pattern: str = LABEL_KEY, value: Schema | None = None) -> Schema:
    """A free-form map with constrained keys (labels, annotations, selectors)."""
    return {
        "type": "object",
        "propertyNames": {"pattern": key_pattern},
        "additionalProperties": value or {"type": "string"},
    }


def k8s(name: str) -> Schema:
    """A vendored Kubernetes type (``allOf`` so description/default may sit beside the $ref)."""
    return {"allOf": [{"$ref": f"#/definitions/{name}"}]}


def described(schema: Schema, description: str) -> Schema:
    """For array items and other schemas that have no values.yaml comment of their own."""
    return {"description": description, **schema}


AFFINITY = "io.k8s.api.core.v1.Affinity"
TOLERATION = "io.k8s.api.core.v1.Toleration"
RESOURCES = "io.k8s.api.core.v1.ResourceRequirements"
POD_SECURITY = "io.k8s.api.core.v1.PodSecurityContext"
CONTAINER_SECURITY = "io.k8s.api.core.v1.SecurityContext"
ENV_VAR = "io.k8s.api.core.v1.EnvVar"
NP_PEER = "io.k8s.api.networking.v1.NetworkPolicyPeer"
NP_PORT = "io.k8s.api.networking.v1.NetworkPolicyPort"
K8S_ROOTS = [
    AFFINITY,
    TOLERATION,
    RESOURCES,
    POD_SECURITY,
    CONTAINER_SECURITY,
    ENV_VAR,
    NP_PEER,
    NP_PORT,
]


def image() -> Schema:
    return obj(
        {
            "repository": string(
                pattern=r"^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)*$"
            ),
            "tag": string(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$"),
            "pullPolicy": string(enum=["Always", "IfNotPresent", "Never"]),
        }
    )


def service_account() -> Schema:
    return obj(
        {
            "create": boolean(),
            "name": string(pattern=optional(DNS_SUBDOMAIN), max_length=253),
            "annotations": string_map(),
        }
    )


def secret_name(*, allow_empty: bool = False) -> Schema:
    if allow_empty:
        return string(pattern=optional(DNS_SUBDOMAIN), max_length=253)
    return string(pattern=DNS_SUBDOMAIN, min_length=1, max_length=253)


def probe() -> Schema:
    return obj(
        {
            "initialDelaySeconds": described(integer(0), "Seconds before the first probe."),
            "periodSeconds": described(integer(1), "Seconds between probes."),
            "timeoutSeconds": described(integer(1), "Seconds a probe may take."),
            "failureThreshold": described(integer(1), "Consecutive failures that count as failed."),
        }
    )


def pdb() -> Schema:
    return obj(
        {
            "enabled": boolean(),
            "maxUnavailable": {"oneOf": [integer(1), string(pattern=r"^[0-9]{1,3}%$")]},
        }
    )


def placement() -> dict[str, Schema]:
    return {
        "nodeSelector": string_map(value=string(pattern=LABEL_VALUE)),
        "tolerations": array(k8s(TOLERATION)),
        "affinity": k8s(AFFINITY),
    }


def airflow_component(*, extra: dict[str, Schema] | None = None) -> Schema:
    return obj(
        {
            "enabled": boolean(),
            "replicas": integer(1),
            **(extra or {}),
            "resources": k8s(RESOURCES),
            **placement(),
            "podAnnotations": string_map(),
            "livenessProbe": probe(),
            "readinessProbe": probe(),
            "pdb": pdb(),
        }
    )


def external_url_secret() -> Schema:
    return obj(
        {"existingSecret": secret_name(allow_empty=True), "urlKey": string(pattern=SECRET_KEY)}
    )


def database_choice() -> Schema:
    """internal | external; external needs the Secret's name."""
    return obj(
        {"type": string(enum=["internal", "external"]), "external": external_url_secret()},
        extra={
            "if": {"properties": {"type": {"const": "external"}}},
            "then": {"properties": {"external": {"properties": {"existingSecret": MIN1}}}},
        },
    )


def egress_rule() -> Schema:
    return obj(
        {
            "to": array(k8s(NP_PEER)),
            "ports": array(k8s(NP_PORT), minItems=1),
        }
    )


def persistence() -> Schema:
    return obj(
        {
            "enabled": boolean(),
            "size": string(pattern=QUANTITY),
            "storageClass": string(pattern=optional(DNS_SUBDOMAIN)),
        }
    )


ARCHIVER_VOLUME = described(
    {
        "type": "object",
        "additionalProperties": False,
        "required": ["name", "mountPath"],
        "properties": {
            "name": described(
                string(pattern=DNS_LABEL, max_length=59), "Volume name (unique within the broker)."
            ),
            "mountPath": described(
                string(pattern=ABS_PATH),
                "Where the volume is mounted read-only; log dirs live under it.",
            ),
            "claimName": described(
                string(pattern=DNS_SUBDOMAIN),
                "The broker's PersistentVolumeClaim (same namespace as the release).",
            ),
            "hostPath": described(
                string(pattern=ABS_PATH),
                "A directory on the broker's node (local disks, local PVs).",
            ),
        },
        "oneOf": [{"required": ["claimName"]}, {"required": ["hostPath"]}],
    },
    "A broker volume: exactly one of claimName or hostPath.",
)

BROKER = described(
    {
        "type": "object",
        "additionalProperties": False,
        "required": ["id", "logDirs"],
        "properties": {
            "id": described(integer(0, 2**31 - 1), "The broker's node.id / broker.id."),
            "logDirs": described(
                array(string(pattern=ABS_PATH), minItems=1, uniqueItems=True),
                "The broker's log.dirs, as absolute paths seen by its archiver.",
            ),
            "queue": described(
                string(pattern=optional(QUEUE)),
                "Explicit Celery queue for this broker (default: derived from the mode).",
            ),
            "node": described(
                string(pattern=optional(DNS_SUBDOMAIN)),
                "archivers.mode=daemonSet: the node whose archiver reads these log dirs.",
            ),
            "worker": described(
                {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "volumes": described(
                            array(ARCHIVER_VOLUME, minItems=1),
                            "The broker's volumes, mounted read-only.",
                        ),
                        "podAffinityLabels": described(
                            string_map(value=string(pattern=LABEL_VALUE)),
                            "Labels of the broker pod to schedule next to.",
                        ),
                        "podAffinityNamespaces": described(
                            array(string(pattern=DNS_LABEL)),
                            "Namespaces of the broker pod (default: the release's).",
                        ),
                        "nodeSelector": described(
                            string_map(value=string(pattern=LABEL_VALUE)),
                            "Node selector (instead of, or with, pod affinity).",
                        ),
                        "tolerations": described(
                            array(k8s(TOLERATION)), "Extra tolerations for this broker's archiver."
                        ),
                        "resources": described(
                            k8s(RESOURCES), "Resources (default: archivers.resources)."
                        ),
                    },
                },
                "archivers.mode=perBroker: how to run this broker's archiver.",
            ),
        },
    },
    "A broker of the cluster.",
)

CLUSTER = described(
    {
        "type": "object",
        "additionalProperties": False,
        "required": ["name", "brokers"],
        "properties": {
            # stricter than kafka-archive's own rule: the name becomes part of object names
            "name": described(
                string(pattern=r"^[a-z0-9]([a-z0-9-]{0,28}[a-z0-9])?$"),
                "Cluster name: first key segment in the store, part of object names.",
            ),
            "storeUri": described(
                string(pattern=optional(r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/\S*)?$")),
                "Overrides the store URI for this cluster.",
            ),
            "topics": described(
                array(string(min_length=1)),
                "Archive only the topics matching these globs (case-sensitive, whole name; "
                "empty: every topic). __consumer_offsets and __cluster_metadata are archived "
                "whatever the selection.",
            ),
            "brokers": described(array(BROKER, minItems=1), "The cluster's brokers."),
        },
    },
    "A Kafka cluster to archive.",
)

#: librdkafka settings whose names hold secrets (kafka_archive.redact, the same rule as the
#: replay DAG's Params): refused in fetchArchivers.clusters[].clientConfig
SECRET_SETTING_NAMES = _secret_key_pattern()

FETCH_CLUSTER = described(
    {
        "type": "object",
        "additionalProperties": False,
        "required": ["name", "bootstrap"],
        "properties": {
            "name": described(
                string(pattern=r"^[a-z0-9]([a-z0-9-]{0,28}[a-z0-9])?$"),
                "Cluster name: first key segment in the store, part of object names.",
            ),
            "bootstrap": described(
                string(pattern=r"^[^\s,:]+:[0-9]{1,5}(,[^\s,:]+:[0-9]{1,5})*$"),
                "Bootstrap servers, HOST:PORT[,HOST:PORT...].",
            ),
            "topics": described(
                array(string(min_length=1)),
                "Archive only the topics matching these globs (case-sensitive, whole name, as "
                "`archive fetch --topics`; empty: every non-internal topic; internal topics "
                "only by their exact name).",
            ),
            "clientConfig": described(
                {
                    "type": "object",
                    "propertyNames": {
                        "pattern": r"^[a-z][a-z0-9._-]*$",
                        "not": {"pattern": SECRET_SETTING_NAMES},
                    },
                    "additionalProperties": {"type": "string"},
                },
                "librdkafka settings given as -X NAME=VALUE (strings); secrets are refused: "
                "put them in existingSecret.",
            ),
            "existingSecret": described(
                secret_name(allow_empty=True),
                "Existing Secret mounted read-only at /etc/kafka-archive/fetch-secret (client "
                "properties, certificates).",
            ),
            "propertiesKey": described(
                string(pattern=optional(SECRET_KEY)),
                "Key of that Secret holding NAME=VALUE client settings, given as -X @FILE.",
            ),
            "egress": described(
                egress_rule(),
                "NetworkPolicy egress to the brokers (default: networkPolicies.kafka).",
            ),
            "replicas": described(
                integer(minimum=1, maximum=64),
                "Archiver processes sharing the cluster's partitions (default 1). Above 1 they "
                "are members of one Kafka consumer group (`archive fetch --group`): each "
                "partition is archived by one pod, a dead pod's partitions go to the others "
                "after sessionTimeout; the principal needs Read on the group.",
            ),
            "group": described(
                string(pattern=r"^[A-Za-z0-9._-]{1,249}$"),
                "The consumer group of the replicas (default kafka-archive-fetch-<name>).",
            ),
            "sessionTimeout": described(
                string(pattern=r"^[0-9]+(ms|s|m)$"),
                "How long a replica may be silent before its partitions go to the others "
                "(`--session-timeout`, default 30s).",
            ),
        },
        # the properties file is read from the Secret
        "if": {"required": ["propertiesKey"], "properties": {"propertiesKey": MIN1}},
        "then": {"required": ["existingSecret"], "properties": {"existingSecret": MIN1}},
    },
    "A Kafka cluster archived over the Kafka protocol.",
)

#: airflow.cfg keys that hold secrets: refused in airflow.config (use extraEnv + secretKeyRef).
SECRET_AIRFLOW_KEYS = [
    "fernet_key",
    "sql_alchemy_conn",
    "broker_url",
    "result_backend",
    "jwt_secret",
    "secret_key",
    "password",
]

SPEC: Schema = obj(
    {
        "nameOverride": string(pattern=optional(DNS_LABEL), max_length=40),
        "fullnameOverride": string(pattern=optional(DNS_LABEL), max_length=40),
        "commonLabels": string_map(value=string(pattern=LABEL_VALUE)),
        "images": obj({"platform": image(), "postgresql": image(), "redis": image()}),
        "imagePullSecrets": array(string(pattern=DNS_SUBDOMAIN), uniqueItems=True),
        "securityContexts": obj({"pod": k8s(POD_SECURITY), "container": k8s(CONTAINER_SECURITY)}),
        "serviceAccounts": obj(
            {
                k: service_account()
                for k in ("airflow", "worker", "archiver", "fetchArchiver", "spark")
            }
        ),
        "objectStore": obj(
            {
                "bucket": string(pattern=r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$"),
                "prefix": string(pattern=r"^[A-Za-z0-9!_.*'()/-]*$"),
                "region": string(pattern=optional(r"^[a-z0-9]+(-[a-z0-9]+)*$")),
                "endpointUrl": string(pattern=optional(r"^https?://[^\s/?#@]+(/[^\s?#]*)?$")),
                "addressingStyle": string(enum=["", "auto", "path", "virtual"]),
                "requireStoreChecksum": boolean(),
                "encryption": obj(
                    {
                        "type": string(enum=["none", "AES256", "aws:kms"]),
                        "kmsKeyId": string(
                            pattern=optional(
                                r"^(arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:(key|alias)/\S+|alias/\S+|[0-9a-f-]{36})$"
                            )
                        ),
                    },
                    # a key id only means something with SSE-KMS (as S3Options enforces)
                    extra={
                        "if": {"properties": {"kmsKeyId": MIN1}},
                        "then": {"properties": {"type": {"const": "aws:kms"}}},
                    },
                ),
                "credentials": obj(
                    {
                        "existingSecret": secret_name(allow_empty=True),
                        "accessKeyIdKey": string(pattern=SECRET_KEY),
                        "secretAccessKeyKey": string(pattern=SECRET_KEY),
                    }
                ),
                "workloadIdentity": obj(
                    {
                        "type": string(enum=["none", "aws-irsa", "gke"]),
                        "awsRoleArn": string(
                            pattern=optional(
                                r"^arn:aws[a-z-]*:iam::[0-9]{12}:role/[A-Za-z0-9+=,.@_/-]+$"
                            )
                        ),
                        "gcpServiceAccount": string(
                            pattern=optional(
                                r"^[a-z][a-z0-9-]{4,28}[a-z0-9]@[a-z0-9-]+\.iam\.gserviceaccount\.com$"
                            )
                        ),
                    },
                    extra={
                        "allOf": [
                            {
                                "if": {"properties": {"type": {"const": "aws-irsa"}}},
                                "then": {"properties": {"awsRoleArn": MIN1}},
                            },
                            {
                                "if": {"properties": {"type": {"const": "gke"}}},
                                "then": {"properties": {"gcpServiceAccount": MIN1}},
                            },
                        ]
                    },
                ),
            },
        ),
        "catalog": obj({"database": database_choice()}),
        "archive": obj(
            {
                "schedule": string(
                    pattern=(
                        r"^(@(once|continuous|hourly|daily|weekly|monthly|quarterly|yearly|annually)"
                        r"|P([0-9]+D)?(T([0-9]+H)?([0-9]+M)?([0-9]+S)?)?"
                        r"|[0-9*/,A-Za-z?LW#-]+( [0-9*/,A-Za-z?LW#-]+){4,5})$"
                    )
                ),
                "concurrency": integer(1, 64),
                "clusters": array(CLUSTER),
            }
        ),
        "archivers": obj(
            {
                "mode": string(enum=["perBroker", "daemonSet", "none"]),
                "concurrency": integer(1, 64),
                "resources": k8s(RESOURCES),
                "podSecurityContext": k8s(POD_SECURITY),
                "terminationGracePeriodSeconds": integer(0),
                "podAnnotations": string_map(),
                "livenessProbe": probe(),
                "readinessProbe": probe(),
                "perBroker": obj(
                    {
                        "queuePrefix": string(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,100}$"),
                        "topologyKey": string(pattern=LABEL_KEY),
                        "tolerations": array(k8s(TOLERATION)),
                    }
                ),
                "daemonSet": obj(
                    {
                        "queuePrefix": string(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,100}$"),
                        "nodeSelector": string_map(value=string(pattern=LABEL_VALUE)),
                        "tolerations": array(k8s(TOLERATION)),
                        "hostPaths": array(
                            described(
                                obj(
                                    {
                                        "name": described(
                                            string(pattern=DNS_LABEL, max_length=59), "Volume name."
                                        ),
                                        "path": described(
                                            string(pattern=ABS_PATH),
                                            "Host directory, mounted read-only.",
                                        ),
                                    }
                                ),
                                "A host directory holding broker log dirs.",
                            ),
                            minItems=1,
                        ),
                        "maxUnavailable": {"oneOf": [integer(1), string(pattern=r"^[0-9]{1,3}%$")]},
                    }
                ),
            }
        ),
        "fetchArchivers": obj(
            {
                "enabled": boolean(),
                "clusters": array(FETCH_CLUSTER),
                "resources": k8s(RESOURCES),
                "terminationGracePeriodSeconds": integer(30),
                "workDirSizeLimit": string(pattern=QUANTITY),
                "podAnnotations": string_map(),
                **placement(),
                "livenessProbe": probe(),
                "readinessProbe": probe(),
            }
        ),
        "airflow": obj(
            {
                "secrets": obj(
                    {
                        "existingSecret": secret_name(),
                        "fernetKeyKey": string(pattern=SECRET_KEY),
                        "jwtSecretKey": string(pattern=SECRET_KEY),
                        "apiSecretKeyKey": string(pattern=SECRET_KEY),
                    }
                ),
                "metadataDatabase": database_choice(),
                "celery": obj({"broker": database_choice()}),
                "defaultQueue": string(pattern=QUEUE),
                "logLevel": string(enum=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]),
                "config": {
                    "type": "object",
                    "propertyNames": {"pattern": r"^[a-z][a-z0-9_.]*$"},
                    "additionalProperties": {
                        "type": "object",
                        "propertyNames": {
                            "pattern": r"^[a-z][a-z0-9_]*$",
                            "not": {"enum": SECRET_AIRFLOW_KEYS},
                        },
                        "additionalProperties": {"type": ["string", "number", "boolean"]},
                    },
                },
                "extraEnv": array(k8s(ENV_VAR)),
            }
        ),
        "apiServer": airflow_component(
            extra={
                "baseUrl": string(pattern=optional(r"^https?://\S+$")),
                "service": obj(
                    {
                        "type": string(enum=["ClusterIP", "NodePort", "LoadBalancer"]),
                        "port": integer(1, 65535),
                        "annotations": string_map(),
                    }
                ),
                "ingress": obj(
                    {
                        "enabled": boolean(),
                        "className": string(pattern=optional(DNS_SUBDOMAIN)),
                        "host": string(pattern=DNS_SUBDOMAIN),
                        "annotations": string_map(),
                        "tlsSecretName": secret_name(allow_empty=True),
                    }
                ),
            }
        ),
        "scheduler": airflow_component(),
        "dagProcessor": airflow_component(),
        "triggerer": airflow_component(),
        "workers": airflow_component(
            extra={
                "extraQueues": array(string(pattern=QUEUE), uniqueItems=True),
                "concurrency": integer(1, 256),
                "terminationGracePeriodSeconds": integer(0),
            }
        ),
        "migrations": obj(
            {
                "enabled": boolean(),
                "useHelmHooks": boolean(),
                "activeDeadlineSeconds": integer(60),
                "resources": k8s(RESOURCES),
            }
        ),
        "spark": obj(
            {
                "enabled": boolean(),
                "master": string(pattern=r"^k8s://https?://[^\s/]+(:[0-9]+)?/?$"),
                "deployMode": string(enum=["cluster", "client"]),
                "image": obj(
                    {
                        "repository": string(
                            pattern=optional(
                                r"^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)*$"
                            )
                        ),
                        "tag": string(pattern=optional(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")),
                    }
                ),
                "driver": obj(
                    {"cores": integer(1, 64), "memory": string(pattern=r"^[0-9]+[kKmMgGtT]?$")}
                ),
                "executor": obj(
                    {
                        "instances": integer(0),
                        "cores": integer(1, 64),
                        "memory": string(pattern=r"^[0-9]+[kKmMgGtT]?$"),
                    }
                ),
                "dynamicAllocation": obj(
                    {
                        "enabled": boolean(),
                        "minExecutors": integer(0),
                        "maxExecutors": integer(1),
                    }
                ),
                "conf": string_map(key_pattern=r"^spark\.[A-Za-z0-9._-]+$"),
                "nodeSelector": string_map(value=string(pattern=LABEL_VALUE)),
                "tolerations": array(k8s(TOLERATION)),
                "podSecurityContext": k8s(POD_SECURITY),
                "containerSecurityContext": k8s(CONTAINER_SECURITY),
            }
        ),
        "postgresql": obj(
            {
                "enabled": boolean(),
                "auth": obj(
                    {
                        "username": string(pattern=r"^[a-z_][a-z0-9_]{0,62}$"),
                        "existingSecret": secret_name(),
                        "passwordKey": string(pattern=SECRET_KEY),
                    }
                ),
                "databases": obj(
                    {
                        "catalog": string(pattern=r"^[a-z_][a-z0-9_]{0,62}$"),
                        "airflow": string(pattern=r"^[a-z_][a-z0-9_]{0,62}$"),
                    }
                ),
                "persistence": persistence(),
                "resources": k8s(RESOURCES),
                "podSecurityContext": k8s(POD_SECURITY),
                **placement(),
                "livenessProbe": probe(),
                "readinessProbe": probe(),
            }
        ),
        "redis": obj(
            {
                "enabled": boolean(),
                "auth": obj(
                    {"existingSecret": secret_name(), "passwordKey": string(pattern=SECRET_KEY)}
                ),
                "persistence": persistence(),
                "resources": k8s(RESOURCES),
                "podSecurityContext": k8s(POD_SECURITY),
                **placement(),
                "livenessProbe": probe(),
                "readinessProbe": probe(),
            }
        ),
        "networkPolicies": obj(
            {
                "enabled": boolean(),
                "apiServerFrom": array(k8s(NP_PEER)),
                "dns": egress_rule(),
                "kubeApiServer": egress_rule(),
                "objectStore": egress_rule(),
                "kafka": egress_rule(),
                "externalDatabase": egress_rule(),
                "externalBroker": egress_rule(),
                "webhook": egress_rule(),
            }
        ),
        "monitoring": obj(
            {
                "prometheusRule": obj({"enabled": boolean(), "labels": string_map()}),
                "dashboard": obj({"enabled": boolean(), "labels": string_map()}),
                "exporter": obj(
                    {
                        "enabled": boolean(),
                        "port": integer(1, 65535),
                        "clusters": array(string(pattern=r"^[^=\s]+=[^=\s]+$")),
                        "scrapeFrom": array(k8s(NP_PEER)),
                        "resources": k8s(RESOURCES),
                        "serviceMonitor": obj(
                            {
                                "enabled": boolean(),
                                "interval": string(pattern=r"^([0-9]+(ms|s|m|h))+$"),
                                "labels": string_map(),
                            }
                        ),
                    }
                ),
                "alerts": obj(
                    {
                        "archiveLagSeconds": integer(1),
                        "archiveMaxAgeSeconds": integer(1),
                        "catalogMaxAgeSeconds": integer(1),
                        "followerMaxLagOffsets": integer(0),
                        "followerStalledSeconds": integer(1),
                        "pruneUnfinishedSeconds": integer(1),
                        "replayStallSeconds": integer(1),
                        "for": string(pattern=r"^([0-9]+(ms|s|m|h|d|w|y))+$"),
                        "labels": string_map(),
                    }
                ),
                "notifications": obj(
                    {
                        "webhook": external_url_secret(),
                        "archiveDeadline": string(pattern=optional(DEADLINE)),
                        "catalogDeadline": string(pattern=optional(DEADLINE)),
                    }
                ),
            }
        ),
    }
)

#: Rules across sections (JSON Schema if/then at the root).
CROSS_RULES: list[Schema] = [
    # an internal database needs the in-chart PostgreSQL, an internal broker the in-chart Redis
    {
        "if": {
            "properties": {
                "catalog": {
                    "properties": {"database": {"properties": {"type": {"const": "internal"}}}}
                }
            }
        },
        "then": {"properties": {"postgresql": {"properties": {"enabled": {"const": True}}}}},
    },
    {
        "if": {
            "properties": {
                "airflow": {
                    "properties": {
                        "metadataDatabase": {"properties": {"type": {"const": "internal"}}}
                    }
                }
            }
        },
        "then": {"properties": {"postgresql": {"properties": {"enabled": {"const": True}}}}},
    },
    {
        "if": {
            "properties": {
                "airflow": {
                    "properties": {
                        "celery": {
                            "properties": {
                                "broker": {"properties": {"type": {"const": "internal"}}}
                            }
                        }
                    }
                }
            }
        },
        "then": {"properties": {"redis": {"properties": {"enabled": {"const": True}}}}},
    },
    # perBroker: every broker says where its volumes are; daemonSet: every broker names its node
    {
        "if": {"properties": {"archivers": {"properties": {"mode": {"const": "perBroker"}}}}},
        "then": {
            "properties": {
                "archive": {
                    "properties": {
                        "clusters": {
                            "items": {
                                "properties": {
                                    "brokers": {
                                        "items": {
                                            "required": ["worker"],
                                            "properties": {"worker": {"required": ["volumes"]}},
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        },
    },
    {
        "if": {"properties": {"archivers": {"properties": {"mode": {"const": "daemonSet"}}}}},
        "then": {
            "properties": {
                "archive": {
                    "properties": {
                        "clusters": {
                            "items": {
                                "properties": {
                                    "brokers": {
                                        "items": {
                                            "anyOf": [
                                                {
                                                    "required": ["node"],
                                                    "properties": {"node": {"minLength": 1}},
                                                },
                                                {
                                                    "required": ["queue"],
                                                    "properties": {"queue": {"minLength": 1}},
                                                },
                                            ]
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        },
    },
]


# ------------------------------------------------------------------------------- assembling


def vendored_k8s_definitions(version: str = K8S_VERSION) -> dict[str, Schema]:
    """The closure of ``K8S_ROOTS`` in kubernetes-validate's strict schemas, refs rewritten from
    draft 2020-12's ``#/$defs/`` to draft-07's ``#/definitions/``."""
    path = resources.files("kubernetes_validate").joinpath(
        f"kubernetes-json-schema/v{version}-local-strict/_definitions.json"
    )
    defs: dict[str, Schema] = json.loads(path.read_text(encoding="utf-8"))["$defs"]
    picked: dict[str, Schema] = {}
    todo = list(K8S_ROOTS)
    while todo:
        name = todo.pop()
        if name in picked:
            continue
        picked[name] = defs[name]
        todo.extend(re.findall(r'"#/\$defs/([^"]+)"', json.dumps(defs[name])))
    text = json.dumps(dict(sorted(picked.items()))).replace('"#/$defs/', '"#/definitions/')
    result: dict[str, Schema] = json.loads(text)
    return result


def _annotate(
    spec: Schema, values: Any, docs: dict[str, str], path: str, errors: list[str]
) -> Schema:
    """Copy ``spec`` adding description and default of every values key below ``path``."""
    out = copy.deepcopy(spec)
    props = spec.get("properties")
    if spec.get("type") != "object" or props is None or not isinstance(values, dict):
        return out
    for key in sorted(set(values) - set(props)):
        errors.append(f"{_join(path, key)}: in values.yaml but not in SPEC")
    for key, sub in props.items():
        full = _join(path, key)
        if key not in values:
            errors.append(f"{full}: in SPEC but not in values.yaml")
            continue
        annotated = _annotate(sub, values[key], docs, full, errors)
        if full in docs:
            annotated = {"description": docs[full], "default": values[key], **annotated}
        elif "description" in annotated:  # a key documented in the spec (flow-style values)
            annotated = {**annotated, "default": values[key]}
        else:
            errors.append(f"{full}: no description")
        out["properties"][key] = annotated
    return out


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def build_schema() -> Schema:
    values = yaml.safe_load(VALUES.read_text(encoding="utf-8"))
    docs = read_key_descriptions(VALUES)
    errors: list[str] = []
    body = _annotate(SPEC, values, docs, "", errors)
    if errors:
        raise SystemExit("values.schema.json cannot be built:\n  " + "\n  ".join(errors))
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Values of the kafka-archive Helm chart",
        "description": "Generated by hack/values_schema.py from values.yaml; do not edit by hand.",
        **body,
        "allOf": CROSS_RULES,
        "definitions": vendored_k8s_definitions(),
    }


def render(schema: Schema) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the schema is stale")
    args = parser.parse_args(argv)
    text = render(build_schema())
    if args.check:
        if SCHEMA.read_text(encoding="utf-8") != text:
            print(f"{SCHEMA} is stale: run {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    SCHEMA.write_text(text, encoding="utf-8")
    print(f"wrote {SCHEMA}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
