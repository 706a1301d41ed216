"""Secrets never shown: the redaction facility and its choke points, one by one.

The end-to-end scan of a whole run is tests/test_secrets_e2e.py.
"""

from __future__ import annotations

import io
import json
import logging
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka_archive.catalog.db import CatalogUnavailable, open_catalog
from kafka_archive.cli import _register_groups, app
from kafka_archive.cli.output import emit_json, fail
from kafka_archive.redact import (
    MASK,
    SECRET_KEY_PATTERN,
    install_log_redaction,
    is_secret_key,
    redact_mapping,
    redact_text,
    redact_url,
    register_env_secrets,
)
from kafka_archive.store.errors import StoreUnavailable
from typer.testing import CliRunner

DB_PW = "pgPw7c1f9e2aHunter2"
SASL_PW = "saslPw3d4c5b6a7f8e9d0c"
AWS_SECRET = "aWsSecretKey/9f8e7d6c5b4a+TESTkey"
TOKEN = "sessTok-0a1b2c3d4e5f"


@pytest.mark.parametrize(
    "text",
    [
        f"postgresql://catalog:{DB_PW}@db.internal:5432/catalog",
        f"postgresql+psycopg://catalog:{DB_PW}@db/catalog?sslmode=require",
        f"sasl.password={SASL_PW}",
        f"{{'sasl.password': '{SASL_PW}', 'bootstrap.servers': 'k:9092'}}",
        f'{{"ssl.key.password": "{SASL_PW}"}}',
        f"aws_secret_access_key: {AWS_SECRET}",
        f"secret_key={AWS_SECRET} region=eu-west-1",
        f"https://host/path?user=x&password={DB_PW}&x=1",
        f"token={TOKEN}",
        f"AWS_SESSION_TOKEN={TOKEN}",
    ],
)
def test_redact_text_hides_every_secret_form(text: str) -> None:
    out = redact_text(text)
    for secret in (DB_PW, SASL_PW, AWS_SECRET, TOKEN):
        assert secret not in out
    assert MASK in out
    assert redact_text(out) == out  # idempotent


def test_redact_keeps_ordinary_text() -> None:
    text = "partition 3 at offset 42: tokens_count=5, key 'east/orders/3/00.log' (hint: retry)"
    assert redact_text(text) == text
    assert redact_url("sqlite:////tmp/catalog.db") == "sqlite:////tmp/catalog.db"
    assert redact_url(f"postgresql://u:{DB_PW}@h/db") == "postgresql://u:***@h/db"


def test_secret_keys_and_mappings() -> None:
    for key in (
        "sasl.password",
        "ssl.key.password",
        "aws_secret_access_key",
        "spark.ssl.keyPassword",
    ):
        assert is_secret_key(key)
    for key in ("sasl.username", "bootstrap.servers", "security.protocol", "tokens_count"):
        assert not is_secret_key(key)
    conf = {"sasl.password": SASL_PW, "sasl.username": "alice", "nested": {"token": TOKEN}}
    assert redact_mapping(conf) == {
        "sasl.password": MASK,
        "sasl.username": "alice",
        "nested": {"token": MASK},
    }


def test_environment_secret_values_are_hidden_anywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET)
    register_env_secrets()  # what every CLI command and Airflow task does first
    assert AWS_SECRET not in redact_text(f"signature mismatch for {AWS_SECRET!r} in a repr")


def test_fail_and_emit_json_redact(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"postgresql://catalog:{DB_PW}@db/catalog"
    emit_json({"kind": "x", "db": url, "config": {"sasl.password": SASL_PW}, "n": 1})
    with pytest.raises(typer.Exit):
        fail(f"cannot open {url}", hint=f"password={DB_PW}", as_json=True)
    with pytest.raises(typer.Exit):
        fail(f"cannot open {url}", hint=f"retry with sasl.password={SASL_PW}")
    out = capsys.readouterr()
    text = out.out + out.err
    assert DB_PW not in text and SASL_PW not in text
    first = json.loads(out.out.splitlines()[0])
    assert first == {
        "kind": "x",
        "db": "postgresql://catalog:***@db/catalog",
        "config": {"sasl.password": MASK},
        "n": 1,
    }


def test_store_errors_redact() -> None:
    err = StoreUnavailable(f"refused: secret_key={AWS_SECRET}", uri=f"s3://k:{DB_PW}@bucket/x")
    shown = f"{err} {err.to_dict()} {err!r}"
    assert AWS_SECRET not in shown and DB_PW not in shown


def test_unreachable_catalog_error_hides_the_password() -> None:
    """The reported leak: 'cannot open the catalog' printed the URL with its password."""
    url = f"postgresql://catalog:{DB_PW}@127.0.0.1:1/catalog?connect_timeout=2"
    with pytest.raises(CatalogUnavailable) as err:
        open_catalog(url)
    assert DB_PW not in str(err.value) and DB_PW not in repr(err.value)
    assert "catalog:***@127.0.0.1:1" in str(err.value)


@pytest.fixture
def cli_app() -> Any:
    if not app.registered_groups:
        _register_groups()
    return app


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_cli_unreachable_catalog_text_and_json(cli_app: Any, as_json: bool) -> None:
    url = f"postgresql://catalog:{DB_PW}@127.0.0.1:1/catalog?connect_timeout=2"
    args = ["catalog", "topics", "--cluster", "c", "--db", url] + (["--json"] if as_json else [])
    result = CliRunner().invoke(cli_app, args)
    out = result.stdout + (result.stderr or "")
    assert result.exit_code == 1, out
    assert DB_PW not in out
    assert "catalog:***@127.0.0.1:1" in out


@pytest.fixture
def restore_log_factory() -> Iterator[None]:
    factory = logging.getLogRecordFactory()
    yield
    logging.setLogRecordFactory(factory)


def test_log_redaction_covers_handlers_added_later(restore_log_factory: None) -> None:
    """Like Airflow's task log handler, added after the redaction was installed."""
    install_log_redaction()
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("kafka_archive.test_secrets")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        logger.info("target %s", {"sasl.password": SASL_PW})
        logger.info("catalog postgresql://c:%s@db/x", DB_PW)
        try:
            raise RuntimeError(f"boom sasl.password={SASL_PW}")
        except RuntimeError:
            logger.exception("failed")
    finally:
        logger.removeHandler(handler)
    text = stream.getvalue()
    assert "target" in text and "boom" in text
    assert SASL_PW not in text and DB_PW not in text


def test_airflow_store_connection_protects_task_logs(
    monkeypatch: pytest.MonkeyPatch, restore_log_factory: None
) -> None:
    pytest.importorskip("airflow.sdk")
    from airflow.sdk.bases.hook import BaseHook
    from kafka_archive.airflow import store_connection

    class _Conn:
        login = "AKIAEXAMPLE"
        password = AWS_SECRET
        extra_dejson: ClassVar[dict[str, str]] = {
            "aws_session_token": TOKEN,
            "region_name": "eu-west-1",
        }

    monkeypatch.setenv(store_connection.CONN_ID_ENV, "aws_test")
    monkeypatch.setattr(BaseHook, "get_connection", classmethod(lambda cls, conn_id: _Conn()))
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    store_connection.use_store_connection()
    # the task log handler Airflow attaches, and a task that logs what it should not
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    root = logging.getLogger()
    root.addHandler(handler)
    old_level = root.level
    root.setLevel(logging.INFO)
    try:
        logging.getLogger("airflow.task").info("boto said: %s / %s", AWS_SECRET, TOKEN)
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
        for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
            monkeypatch.delenv(name, raising=False)
    text = stream.getvalue()
    assert "boto said" in text
    assert AWS_SECRET not in text and TOKEN not in text


def test_spark_submit_gets_secret_settings_in_a_0600_file(tmp_path: Path) -> None:
    """The catalog DAG's spark-submit: a secret Spark setting never on its argument list."""
    from kafka_archive.airflow.catalog_tasks import (
        CatalogJobConfig,
        CatalogJobError,
        run_spark_submit,
        spark_submit_command,
    )

    seen = tmp_path / "seen.json"
    fake = tmp_path / "spark-submit"
    fake.write_text(
        f"#!{sys.executable}\n"
        "import json, os, stat, sys\n"
        "props = sys.argv[sys.argv.index('--properties-file') + 1]\n"
        f"json.dump({{'argv': sys.argv, 'props': open(props).read(),\n"
        "           'mode': stat.S_IMODE(os.stat(props).st_mode), 'path': props},\n"
        f"          open({str(seen)!r}, 'w'))\n"
        "print(json.dumps({'kind': 'build', 'failed': 0}))\n"
    )
    fake.chmod(0o755)
    conf = {
        "spark.executorEnv.AWS_SECRET_ACCESS_KEY": AWS_SECRET,
        "spark.ssl.keyPassword": SASL_PW,
        "spark.executor.memory": "1g",
    }
    config = CatalogJobConfig(
        store_uri="s3://b/p",
        db_url=f"postgresql://u:{DB_PW}@h/db",
        spark_master="local[1]",
        spark_submit=str(fake),
        spark_conf=conf,
        application=str(tmp_path / "build_catalog.py"),  # the fake spark-submit runs nothing
    )
    logged: list[str] = []
    assert run_spark_submit(config, logged.append) == {"kind": "build", "failed": 0}
    got = json.loads(seen.read_text())
    argv = " ".join(got["argv"])
    assert AWS_SECRET not in argv and SASL_PW not in argv and DB_PW not in argv
    assert "spark.executor.memory=1g" in argv
    assert f"spark.executorEnv.AWS_SECRET_ACCESS_KEY={AWS_SECRET}" in got["props"]
    assert f"spark.ssl.keyPassword={SASL_PW}" in got["props"]
    assert got["mode"] == 0o600
    assert not Path(got["path"]).exists()  # removed when spark-submit is done
    assert not any(AWS_SECRET in line or SASL_PW in line for line in logged)
    with pytest.raises(CatalogJobError, match="need a properties file"):
        spark_submit_command(config)


def test_emit_json_stays_valid_json(capsys: pytest.CaptureFixture[str]) -> None:
    """Masking works on values, never on the JSON text: odd secret-named values stay JSON."""
    emit_json({"password": 12345, "credentials": {"a": 1}, "msg": f"x sasl.password={SASL_PW}"})
    obj = json.loads(capsys.readouterr().out)
    assert obj == {"password": MASK, "credentials": MASK, "msg": f"x sasl.password={MASK}"}


DAGS = sorted((Path(__file__).resolve().parent.parent / "dags").glob("*.py"))


@pytest.mark.parametrize("dag_file", DAGS, ids=lambda p: p.name)
def test_every_dag_file_protects_its_task_logs(dag_file: Path) -> None:
    """A task runs in the process that parsed its DAG file: a module-level call there covers
    every log record of the task (the offsets DAG opens no store, so the call in
    use_store_connection would not)."""
    import ast

    tree = ast.parse(dag_file.read_text())
    calls = [
        n.value.func.id
        for n in tree.body
        if isinstance(n, ast.Expr)
        and isinstance(n.value, ast.Call)
        and isinstance(n.value.func, ast.Name)
    ]
    assert "protect_task_logs" in calls


def test_protect_task_logs_redacts_records(restore_log_factory: None) -> None:
    from kafka_archive.airflow import protect_task_logs

    protect_task_logs()
    record = logging.getLogRecordFactory()(
        "airflow.task",
        logging.INFO,
        __file__,
        1,
        "consumer %s",
        ({"sasl.password": SASL_PW},),
        None,
    )
    assert SASL_PW not in record.getMessage()


_KEY_WORDS = st.sampled_from(
    ["sasl", "ssl", "key", "pem", "password", "Password", "passwd", "pwd", "secret", "token",
     "TOKEN", "credential", "credentials", "apikey", "api", "passphrase", "private", "access",
     "oauthbearer", "config", "client", "keystore", "xpassword", "pwdx", "tokens", "count",
     "ssl_key", "mechanism", "bootstrap", "servers", " ", '"', "'", "\n", "x"]
)  # fmt: skip


@given(st.lists(st.tuples(_KEY_WORDS, st.sampled_from([".", "_", "-", ""])), max_size=6))
@settings(max_examples=600, deadline=None)
def test_the_schema_pattern_calls_secret_exactly_what_is_secret_key_does(
    parts: list[tuple[str, str]],
) -> None:
    """SECRET_KEY_PATTERN (the DAG Params' and the API's JSON Schema refusal, issue 20.6) and
    is_secret_key agree on every name."""
    key = "".join(w + sep for w, sep in parts)
    assert bool(re.search(SECRET_KEY_PATTERN, key)) == is_secret_key(key), repr(key)


def test_librdkafka_secret_settings_are_secret() -> None:
    for key in (
        "sasl.password",
        "sasl.oauthbearer.client.secret",
        "ssl.key.password",
        "ssl.keystore.password",
        "ssl.key.pem",
        "ssl_key",
        "sasl.oauthbearer.config",
        "sasl.oauthbearer.assertion.private.key.pem",
        "sasl.oauthbearer.assertion.private.key.passphrase",
    ):
        assert is_secret_key(key) and re.search(SECRET_KEY_PATTERN, key), key
    for key in ("ssl.certificate.pem", "ssl.ca.location", "sasl.username", "security.protocol"):
        assert not is_secret_key(key) and not re.search(SECRET_KEY_PATTERN, key), key
