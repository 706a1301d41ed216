"""The settings model (kafka_archive.settings): one precedence for every setting, and the CLI
and the Airflow task configurations following it."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from kafka_archive.settings import SETTINGS, Settings, SettingsError, load_settings
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parent.parent


def _file(tmp_path: Path, **keys: object) -> str:
    path = tmp_path / "config.yaml"
    path.write_text("".join(f"{k}: {json.dumps(v)}\n" for k, v in keys.items()))
    return str(path)


def test_each_layer_wins_over_the_ones_below(tmp_path: Path) -> None:
    config = _file(tmp_path, db_url="file.db", store_uri="file:///file")
    env = {"KAFKA_ARCHIVE_CONFIG": config, "KAFKA_ARCHIVE_DB": "env.db"}
    variables = {"kafka_archive_db": "variable.db", "kafka_archive_store": "file:///variable"}

    def full(**explicit: object) -> Settings:
        return load_settings(explicit, env=env, variables=variables.get, job_variable={})

    assert (full(db="cli.db").db, full(db="cli.db").sources["db"]) == ("cli.db", "explicit")
    assert (full().db, full().sources["db"]) == ("env.db", "environment")
    assert (full().store, full().sources["store"]) == ("file:///variable", "airflow")
    job = load_settings(env=env, job_variable={"store_uri": "file:///job"})
    assert (job.store, job.sources["store"]) == ("file:///job", "airflow")
    only_file = load_settings(env={"KAFKA_ARCHIVE_CONFIG": config})
    assert (only_file.db, only_file.sources["db"]) == ("file.db", "file")
    assert (only_file.spark_master, only_file.catalog_verify) == (None, "crc32c")
    assert "spark_master" not in only_file.sources  # the default


def test_an_empty_value_is_unset_and_bad_values_are_named(tmp_path: Path) -> None:
    config = _file(tmp_path, db_url="file.db")
    got = load_settings({"db": ""}, env={"KAFKA_ARCHIVE_CONFIG": config, "KAFKA_ARCHIVE_DB": ""})
    assert got.db == "file.db"
    assert load_settings(env={"KAFKA_ARCHIVE_SPARK_UI": "yes"}).spark_ui is True
    with pytest.raises(SettingsError, match="spark_ui from KAFKA_ARCHIVE_SPARK_UI"):
        load_settings(env={"KAFKA_ARCHIVE_SPARK_UI": "maybe"})
    with pytest.raises(SettingsError, match="catalog_verify") as err:
        load_settings(env={"KAFKA_ARCHIVE_CATALOG_VERIFY": "md5"})
    assert err.value.hint and "sha256" in err.value.hint
    with pytest.raises(SettingsError, match="cannot be read"):
        load_settings(env={"KAFKA_ARCHIVE_CONFIG": str(tmp_path / "missing.yaml")})
    (tmp_path / "list.yaml").write_text("- a\n- b\n")
    with pytest.raises(SettingsError, match="must be a mapping"):
        load_settings(env={"KAFKA_ARCHIVE_CONFIG": str(tmp_path / "list.yaml")})
    with pytest.raises(TypeError, match="unknown setting"):
        load_settings({"dbb": "x"})


def test_the_docs_list_every_setting() -> None:
    text = (REPO / "docs" / "settings.md").read_text()
    rows = re.findall(r"^\| `(\w+)` \| `(KAFKA_ARCHIVE_\w+)` \| `(\w+)` \| `(\w+)` \|", text, re.M)
    assert rows == [(s.name, s.env, s.variable, s.key) for s in SETTINGS]


def test_only_the_settings_module_names_a_settings_variable() -> None:
    """One place spells each setting's environment variable: the rest of the platform asks
    kafka_archive.settings (a literal "KAFKA_ARCHIVE_DB" elsewhere is a second definition,
    e.g. an option's envvar= or an os.environ.get that skips the precedence)."""
    names = {s.env for s in SETTINGS} | {"KAFKA_ARCHIVE_CONFIG"}
    offenders = []
    roots = [REPO / "plugins" / "kafka_archive", REPO / "dags", REPO / "spark_jobs"]
    for path in sorted(p for root in roots for p in root.rglob("*.py")):
        if path.name == "settings.py" and path.parent.name == "kafka_archive":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in names:
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno}: {node.value}")
    assert offenders == []


def test_the_cli_takes_the_catalog_from_the_configuration_file(tmp_path: Path) -> None:
    from kafka_archive.cli import _register_groups, app

    _register_groups()
    runner = CliRunner()
    config = _file(tmp_path, db_url=str(tmp_path / "from-file.db"))
    # the file names a catalog that does not exist: the error names it, so it was read
    result = runner.invoke(
        app, ["catalog", "topics", "--cluster", "c", "--json"], env={"KAFKA_ARCHIVE_CONFIG": config}
    )
    assert result.exit_code == 1, result.output
    assert "from-file.db" in result.output
    # an option still wins over the file
    result = runner.invoke(
        app,
        ["catalog", "topics", "--cluster", "c", "--json", "--db", str(tmp_path / "opt.db")],
        env={"KAFKA_ARCHIVE_CONFIG": config},
    )
    assert "opt.db" in result.output and "from-file.db" not in result.output
    shown = runner.invoke(app, ["settings", "--json"], env={"KAFKA_ARCHIVE_CONFIG": config})
    rows = {r["name"]: r for r in map(json.loads, shown.output.splitlines())}
    assert rows["db"]["source"] == "file" and rows["db"]["value"].endswith("from-file.db")


def test_a_catalog_password_is_masked_when_settings_are_shown() -> None:
    from kafka_archive.cli import _register_groups, app

    _register_groups()
    url = "postgresql://cat:s3cr3t-pw@db.example/catalog"
    shown = CliRunner().invoke(app, ["settings", "--json"], env={"KAFKA_ARCHIVE_DB": url})
    assert shown.exit_code == 0
    assert "s3cr3t-pw" not in shown.output and "db.example" in shown.output


def test_the_catalog_task_configuration_puts_the_environment_over_its_variable() -> None:
    """The catalog DAG used to put its Variable over the environment, unlike the others."""
    from kafka_archive.airflow.catalog_tasks import load_catalog_config

    variable = json.dumps({"store_uri": "file:///variable", "db_url": "variable.db"})
    got = load_catalog_config(variable, env={"KAFKA_ARCHIVE_DB": "env.db"})
    assert (got.db_url, got.store_uri) == ("env.db", "file:///variable")


def test_the_archive_configuration_file_may_hold_settings(tmp_path: Path) -> None:
    """docs/settings.md: the settings live next to the archive configuration in one file."""
    from kafka_archive.archive.config import ConfigError, load_config

    path = tmp_path / "archive.yaml"
    path.write_text(
        "store_uri: file:///srv/archive\n"
        "db_url: catalog.db\n"
        "spark_master: local[2]\n"
        "clusters:\n"
        "  - name: prod\n"
        "    brokers: [{id: 1, log_dirs: [/var/lib/kafka]}]\n"
    )
    config = load_config(environ={"KAFKA_ARCHIVE_CONFIG": str(path)})
    assert config.store_uri == "file:///srv/archive" and config.clusters[0].name == "prod"
    got = load_settings(env={"KAFKA_ARCHIVE_CONFIG": str(path)})
    assert (got.db, got.spark_master, got.store) == (
        "catalog.db",
        "local[2]",
        "file:///srv/archive",
    )
    # a key that is neither an archive field nor a setting is still refused
    path.write_text(path.read_text() + "stor_uri: typo\n")
    with pytest.raises(ConfigError, match="stor_uri"):
        load_config(environ={"KAFKA_ARCHIVE_CONFIG": str(path)})
