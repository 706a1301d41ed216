"""Render helm/kafka-archive with the real Helm engine and inspect the result.

Rendering goes through ``helm-python-sdk``, which embeds Helm's own Go SDK (``libhelm_c``): the
same template engine, value merging (``null`` deletes a default) and ``values.schema.json``
validation as the ``helm`` binary, offline. Objects are validated against the strict
Kubernetes JSON schemas vendored by ``kubernetes-validate`` (no network).

Also here: the ``helm template`` / ``helm upgrade --install`` commands of docs/deploy.md,
parsed so that tests render exactly what the documentation tells people to run.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import helm_python
import jmespath
import kubernetes_validate
import kubernetes_validate.utils
import yaml

REPO = Path(__file__).resolve().parents[2]
CHART_DIR = REPO / "helm" / "kafka-archive"
EXAMPLES_DIR = CHART_DIR / "examples"
DEPLOY_DOC = REPO / "docs" / "deploy.md"

Obj = dict[str, Any]


@cache
def schema_generator() -> ModuleType:
    """hack/values_schema.py (not a package: loaded by path)."""
    path = CHART_DIR / "hack" / "values_schema.py"
    spec = importlib.util.spec_from_file_location("kafka_archive_values_schema", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def k8s_version() -> str:
    """The Kubernetes version objects are validated against (the schema vendors its types)."""
    version: str = schema_generator().K8S_VERSION
    return version


@cache
def chart() -> helm_python.Chart:
    # Loaded once per session: the native handle is immutable and thread-safe.
    return helm_python.Chart.load(CHART_DIR)


@dataclass
class Rendered:
    """One ``helm template`` result: manifests by template path, and the parsed objects."""

    manifests: dict[str, str]
    objects: list[Obj] = field(default_factory=list)

    @property
    def notes(self) -> str:
        return next((t for p, t in self.manifests.items() if p.endswith("NOTES.txt")), "")

    def of_kind(self, kind: str) -> list[Obj]:
        return [o for o in self.objects if o["kind"] == kind]

    def get(self, kind: str, name: str) -> Obj:
        found = [o for o in self.of_kind(kind) if o["metadata"]["name"] == name]
        if len(found) != 1:
            names = sorted(o["metadata"]["name"] for o in self.of_kind(kind))
            raise LookupError(f"{kind}/{name}: found {len(found)}; {kind} objects: {names}")
        return found[0]

    def workloads(self) -> list[Obj]:
        return [o for o in self.objects if o["kind"] in ("Deployment", "StatefulSet", "DaemonSet")]

    def pod_specs(self) -> list[tuple[Obj, Obj]]:
        """(owner, pod spec) of every workload and Job."""
        owners = self.workloads() + self.of_kind("Job")
        return [(o, o["spec"]["template"]["spec"]) for o in owners]


def render(values: Obj | None = None, *, release: str = "ka", namespace: str = "kafka") -> Rendered:
    """Render the chart (raises helm_python.HelmValuesError / HelmRenderError like helm does)."""
    manifests = chart().render(values=values or {}, name=release, namespace=namespace)
    objects = [
        doc
        for path, text in sorted(manifests.items())
        if path.endswith((".yaml", ".yml"))
        for doc in yaml.safe_load_all(text)
        if doc
    ]
    return Rendered(manifests, objects)


def load_example(name: str) -> Obj:
    values: Obj = yaml.safe_load((EXAMPLES_DIR / name).read_text(encoding="utf-8"))
    return values


def example_names() -> list[str]:
    return sorted(p.name for p in EXAMPLES_DIR.glob("*.yaml"))


# kubernetes-validate re-reads and re-parses its schema files (the shared definitions are 1.2 MB
# of JSON) for every object it validates; the files never change, so read each one once. The
# validation itself is still the library's own.
if not hasattr(kubernetes_validate.utils.schema_contents, "cache_info"):
    kubernetes_validate.utils.schema_contents = cache(kubernetes_validate.utils.schema_contents)


def validate_k8s(obj: Obj) -> None:
    """Strict schema validation of one object (unknown fields are errors)."""
    kubernetes_validate.validate(obj, k8s_version(), strict=True)


def q(expression: str, data: Any) -> Any:
    return jmespath.search(expression, data)


def env_of(container: Obj) -> dict[str, Obj]:
    """Env vars of a container by name (the last definition wins, as in Kubernetes)."""
    return {e["name"]: e for e in container.get("env", [])}


def embedded_yaml(configmap: Obj, key: str) -> Any:
    return yaml.safe_load(configmap["data"][key])


def selects(selector: Obj, labels: dict[str, str]) -> bool:
    """Does a LabelSelector (matchLabels + matchExpressions In/NotIn/Exists) match ``labels``?"""
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, vals = expr["key"], expr["operator"], expr.get("values", [])
        if op == "In" and labels.get(key) not in vals:
            return False
        if op == "NotIn" and labels.get(key) in vals:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


# ------------------------------------------------------------------ documented helm commands


@dataclass(frozen=True)
class HelmCommand:
    """A ``helm template|install|upgrade --install`` command from the docs."""

    text: str
    release: str
    namespace: str
    value_files: tuple[str, ...]
    set_values: tuple[str, ...]

    def values(self) -> Obj:
        """Values as Helm computes them: -f files in order, then --set (later wins)."""
        merged: Obj = {}
        for f in self.value_files:
            _deep_merge(merged, yaml.safe_load((REPO / f).read_text(encoding="utf-8")) or {})
        for expr in self.set_values:
            _deep_merge(merged, helm_python.parse_set_string(expr))
        return merged


def _deep_merge(into: Obj, new: Obj) -> None:
    for k, v in new.items():
        if isinstance(v, dict) and isinstance(into.get(k), dict):
            _deep_merge(into[k], v)
        else:
            into[k] = v


_CODE_BLOCK = re.compile(r"```(?:bash|sh|console)?\n(.*?)```", re.S)


def documented_helm_commands(doc: Path = DEPLOY_DOC) -> list[HelmCommand]:
    """Every helm template/install/upgrade command in the doc's code blocks, for this chart."""
    commands = []
    for block in _CODE_BLOCK.findall(doc.read_text(encoding="utf-8")):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            # the helm part of a shell line: stop at redirections, pipes and command lists
            for i, w in enumerate(words):
                if w in (">", ">>", "|", "&&", ";", "2>&1"):
                    words = words[:i]
                    break
            if len(words) < 3 or words[0] != "helm":
                continue
            if words[1] not in ("template", "install", "upgrade"):
                continue
            commands.append(_parse_helm(line.strip(), words))
    return commands


def _parse_helm(text: str, words: list[str]) -> HelmCommand:
    positional: list[str] = []
    files: list[str] = []
    sets: list[str] = []
    namespace = "default"
    i = 2
    while i < len(words):
        w = words[i]
        if w in ("-f", "--values"):
            files.append(words[i + 1])
            i += 2
        elif w == "--set":
            sets.append(words[i + 1])
            i += 2
        elif w in ("-n", "--namespace"):
            namespace = words[i + 1]
            i += 2
        elif w.startswith("-"):
            i += 1  # flags without a value we need: --install, --wait, --create-namespace
        else:
            positional.append(w)
            i += 1
    if len(positional) != 2:
        raise ValueError(f"expected RELEASE CHART in {text!r}, got {positional}")
    release, chart_ref = positional
    if (REPO / chart_ref).resolve() != CHART_DIR:
        raise ValueError(f"{text!r} does not install helm/kafka-archive")
    return HelmCommand(text, release, namespace, tuple(files), tuple(sets))
