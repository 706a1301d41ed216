"""docs/archivers.md's recipes are runnable as written: every ``kafka-archive`` command of its
```bash blocks parses with the real CLI (unknown options fail), every client properties file
it writes is mapped by the protocol client and by librdkafka's settings, and its Helm values
render with the chart and pass the values schema. (What needs a provider account - MSK, Confluent
Cloud, Aiven - is not run: the doc says so.)"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

DOC = Path(__file__).resolve().parents[1] / "docs" / "archivers.md"


def _blocks() -> list[str]:
    return re.findall(r"```bash\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def _heredocs() -> dict[str, str]:
    """file name -> the text a ``cat > NAME <<'EOF'`` of the doc writes."""
    found: dict[str, str] = {}
    for block in _blocks():
        for name, body in re.findall(r"cat > (\S+) <<'EOF'\n(.*?)\nEOF\n", block, flags=re.S):
            found[name] = body
    return found


def _commands() -> list[list[str]]:
    out = []
    for block in _blocks():
        text = re.sub(r"cat > \S+ <<'EOF'\n.*?\nEOF\n", "", block, flags=re.S)
        text = text.replace("\\\n", " ")
        for line in text.splitlines():
            line = line.split(" #", 1)[0].strip()
            if line.startswith("kafka-archive "):
                out.append(shlex.split(line)[1:])
    return out


def test_the_doc_has_the_recipes() -> None:
    assert {"msk.properties", "confluent.properties", "aiven.properties", "values-fetch.yaml"} <= (
        set(_heredocs())
    )
    assert len(_commands()) >= 4


@pytest.mark.parametrize("args", _commands(), ids=lambda a: " ".join(a[:4]))
def test_every_command_parses_with_the_real_cli(args: list[str]) -> None:
    from kafka_archive.cli import _register_groups, app
    from typer.testing import CliRunner

    _register_groups()
    result = CliRunner().invoke(app, [*args, "--help"])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("name", ["msk.properties", "confluent.properties", "aiven.properties"])
def test_every_properties_file_is_mapped_by_both_clients(name: str, tmp_path: Path) -> None:
    from kafka_archive.kafka_protocol.config import kafka_python_config, librdkafka_config

    settings = dict(line.split("=", 1) for line in _heredocs()[name].splitlines() if "=" in line)
    for path_setting in ("ssl.ca.location", "ssl.certificate.location", "ssl.key.location"):
        if path_setting in settings:  # the files the recipe downloads
            (tmp_path / Path(settings[path_setting]).name).write_text("x")
            settings[path_setting] = str(tmp_path / Path(settings[path_setting]).name)
    conf = {**settings, "bootstrap.servers": "broker:9092"}
    assert kafka_python_config(conf)
    assert librdkafka_config(conf)


def test_the_kubernetes_values_render_and_pass_the_schema() -> None:
    import jsonschema

    from tests.support.helm_chart import chart, render

    values = yaml.safe_load(_heredocs()["values-fetch.yaml"])
    jsonschema.Draft7Validator(chart().schema).validate(chart().merge_values(values))
    deployments = [
        o
        for o in render(values).of_kind("Deployment")
        if o["metadata"]["labels"]["app.kubernetes.io/component"] == "fetch-archiver"
    ]
    [dep] = deployments
    assert dep["spec"]["replicas"] == 3
    args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--group" in args and "kafka-archive-fetch-prod" in args
