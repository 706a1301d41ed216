"""What the ``kafka_archive_catalog`` DAG's tasks do, without Airflow (so tests call it directly).

Configuration (:class:`CatalogJobConfig`), from the Airflow Variable ``kafka_archive_catalog``
(JSON) when set, else the environment::

    {"store_uri": "s3://bucket/archive",          # or $KAFKA_ARCHIVE_STORE
     "db_url": "postgresql://catalog@db/catalog",  # or $KAFKA_ARCHIVE_DB
     "spark_master": "spark://spark:7077",         # or $KAFKA_ARCHIVE_SPARK_MASTER; default local
     "interval_bytes": 1048576,
     "verify": "crc32c",                           # or crc32c-only, sha256
     "catalog_engine": "auto",                     # or in-process, spark
     "catalog_spark_threshold_bytes": "4GiB",      # auto: Spark from this many new bytes
     "catalog_spark_threshold_segments": 1000,     # ... or this many new segments
     "spark_conf": {"spark.executor.memory": "4g"},
     "spark_submit": "/opt/spark/bin/spark-submit", # default $SPARK_HOME/bin or pyspark's own
     "application": "/opt/kafka-archive/spark_jobs/build_catalog.py",  # see default_application
     "py_files": "/opt/airflow/kafka_archive.zip"}

The engine (``engine``: ``auto`` by default, or ``in-process``/``spark``; the setting
``catalog_engine``) is chosen as ``kafka-archive catalog build`` chooses it
(:mod:`kafka_archive.catalog.build.engine`): under ``auto`` the build lists the new segments
first and extracts them in the task's own process unless they reach the Spark threshold
(settings ``catalog_spark_threshold_bytes`` / ``_segments``); the report (the task's log and
XCom) has ``engine`` and ``engine_reason``. Where Spark runs, chosen per run by
:meth:`CatalogJobConfig.mode`:

* ``local`` (no master, or a ``local[...]`` one): the build runs inside the task, with a local
  Spark session only when the engine is Spark - the embedded, single-machine default;
* ``submit`` (any other master URL): under ``auto`` the task measures the increment first
  (:func:`increment_of`) and builds a small one itself, in-process; otherwise (or with
  ``spark``) ``spark-submit`` runs ``spark_jobs/build_catalog.py`` on the cluster; the task
  waits for it and reads the JSON report it prints. (This is what
  Airflow's ``SparkSubmitOperator`` does; the provider package is not used because it installs
  ``pyspark-client``, which overwrites the ``pyspark`` package the job itself needs.) The catalog
  URL, which may hold a password, reaches the job through its environment (``KAFKA_ARCHIVE_DB``),
  never its command line (visible to every local user in ``ps`` and in Spark's UI). The job's
  driver writes the catalog, so in ``--deploy-mode cluster`` pass it to the driver yourself
  (e.g. ``spark.kubernetes.driverEnv.KAFKA_ARCHIVE_DB`` from a secret).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from kafka_archive.catalog.extract import DEFAULT_INTERVAL_BYTES
from kafka_archive.errors import KafkaArchiveError
from kafka_archive.frozen import FrozenModel
from kafka_archive.settings import (
    CATALOG_SPARK_THRESHOLD_BYTES,
    CATALOG_SPARK_THRESHOLD_SEGMENTS,
    Settings,
    SettingsError,
    VariableReader,
    env_var,
    load_settings,
)

if TYPE_CHECKING:
    from kafka_archive.catalog.build import EngineChoice

__all__ = [
    "CONFIG_VARIABLE",
    "CatalogJobConfig",
    "CatalogJobError",
    "default_application",
    "increment_of",
    "load_catalog_config",
    "run_local_build",
    "run_spark_submit",
    "spark_submit_command",
    "spark_submit_env",
]

CONFIG_VARIABLE = "kafka_archive_catalog"
#: where the DAGs and Spark jobs are installed (the platform image sets /opt/kafka-archive)
HOME_ENV = env_var("home")
_JOB = Path("spark_jobs") / "build_catalog.py"


class CatalogJobError(KafkaArchiveError, RuntimeError):
    """The build could not run, or finished with failed segments (``report`` says which)."""

    def __init__(self, message: str, report: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.report = dict(report or {})


class CatalogJobConfig(FrozenModel):
    """Where the archive and the catalog are, and where Spark runs."""

    store_uri: str
    db_url: str
    spark_master: str | None = None
    #: ``auto``, ``in-process`` or ``spark`` (the setting ``catalog_engine``)
    engine: Literal["auto", "in-process", "spark"] = "auto"
    #: under ``auto``, Spark from this many new bytes / segments (the settings)
    spark_threshold_bytes: int = Field(default=CATALOG_SPARK_THRESHOLD_BYTES, gt=0)
    spark_threshold_segments: int = Field(default=CATALOG_SPARK_THRESHOLD_SEGMENTS, gt=0)
    cluster: str | None = None
    interval_bytes: int = Field(default=DEFAULT_INTERVAL_BYTES, ge=256)
    #: integrity check of each object (see kafka_archive.catalog.integrity); ``None``: the
    #: build's default ($KAFKA_ARCHIVE_CATALOG_VERIFY, else crc32c)
    verify: Literal["crc32c", "crc32c-only", "sha256"] | None = None
    store_options: dict[str, Any] = Field(default_factory=dict)
    spark_conf: dict[str, str] = Field(default_factory=dict)
    spark_submit: str | None = None
    application: str | None = None
    py_files: str | None = None

    def mode(self) -> str:
        """``local`` (in-process Spark) or ``submit`` (spark-submit to a cluster)."""
        m = self.spark_master
        return "local" if not m or m.startswith("local") else "submit"


def load_catalog_config(
    variable: str | None = None,
    env: Mapping[str, str] | None = None,
    variables: VariableReader | None = None,
) -> CatalogJobConfig:
    """The job configuration: the Variable's JSON text (``variable``) for the job's own
    fields; ``store_uri``, ``db_url`` and ``spark_master`` are settings, resolved with the
    platform's one precedence (:mod:`kafka_archive.settings`: environment over Airflow
    Variables, the job Variable's keys included, over the configuration file)."""
    raw: dict[str, Any] = {}
    if variable:
        try:
            raw = json.loads(variable)
        except json.JSONDecodeError as exc:
            raise CatalogJobError(f"Variable {CONFIG_VARIABLE} is not JSON: {exc}") from None
        if not isinstance(raw, dict):
            raise CatalogJobError(f"Variable {CONFIG_VARIABLE} must be a JSON object")
    try:
        settings = load_settings(env=env, variables=variables, job_variable=raw)
    except SettingsError as exc:
        raise CatalogJobError(f"{exc} ({exc.hint})" if exc.hint else str(exc)) from None
    raw.update(
        store_uri=settings.store,
        db_url=settings.db,
        spark_master=settings.spark_master,
        engine=settings.catalog_engine,
        spark_threshold_bytes=settings.catalog_spark_threshold_bytes,
        spark_threshold_segments=settings.catalog_spark_threshold_segments,
    )
    for key in (
        "catalog_engine",
        "catalog_spark_threshold_bytes",
        "catalog_spark_threshold_segments",
    ):
        raw.pop(key, None)  # resolved into the fields above
    missing = [k for k in ("store_uri", "db_url") if not raw.get(k)]
    if missing:
        raise CatalogJobError(
            f"catalog job not configured: {', '.join(missing)} missing; set the Airflow "
            f"Variable {CONFIG_VARIABLE} or KAFKA_ARCHIVE_STORE / KAFKA_ARCHIVE_DB"
        )
    return CatalogJobConfig.model_validate(raw)


def _settings(config: CatalogJobConfig) -> Settings:
    return Settings(
        store=config.store_uri,
        db=config.db_url,
        spark_master=config.spark_master,
        catalog_engine=config.engine,
        catalog_spark_threshold_bytes=config.spark_threshold_bytes,
        catalog_spark_threshold_segments=config.spark_threshold_segments,
    )


def run_local_build(config: CatalogJobConfig) -> dict[str, Any]:
    """Build inside this process: in-process or with a local Spark session, as the engine
    decides (a session it starts is stopped at the end); return the report (raise if segments
    failed, so the task retries them)."""
    from kafka_archive.services.catalog_build import CatalogBuildService

    with CatalogBuildService(_settings(config)) as service:
        report = service.build(
            spark_master=config.spark_master or "local[*]",
            spark_conf=config.spark_conf,
            cluster=config.cluster,
            store_options=config.store_options,
            interval_bytes=config.interval_bytes,
            verify=config.verify,
        ).to_json()
    _raise_for(report, "the build")
    return report


def _raise_for(report: Mapping[str, Any], what: str) -> None:
    """Fail the task when segments failed or manifests were refused (never a silent
    success; see :func:`kafka_archive.services.catalog_build.raise_for_failures`)."""
    from kafka_archive.services.catalog_build import BuildFailed, raise_for_failures

    try:
        raise_for_failures(report, what)
    except BuildFailed as exc:
        raise CatalogJobError(str(exc), exc.report) from None


def _spark_submit_binary(config: CatalogJobConfig) -> str:
    if config.spark_submit:
        return config.spark_submit
    home = os.environ.get("SPARK_HOME")
    if home and Path(home, "bin", "spark-submit").exists():
        return str(Path(home, "bin", "spark-submit"))
    found = shutil.which("spark-submit")
    if found:
        return found
    import pyspark

    return str(Path(pyspark.__file__).parent / "bin" / "spark-submit")


def default_application(env: Mapping[str, str] | None = None) -> Path:
    """``spark_jobs/build_catalog.py`` under ``$KAFKA_ARCHIVE_HOME`` (the setting ``home``: the
    platform image sets ``/opt/kafka-archive``; ``./dev`` and the tests a source checkout).

    The package does not guess where the jobs are from where it is installed itself (an
    installed wheel has no ``spark_jobs/`` beside it): the location is configuration.

    Raises:
        CatalogJobError: ``home`` is not set, or holds no job.
    """
    env = os.environ if env is None else env
    how = (
        f"set {HOME_ENV} to the directory holding spark_jobs/ (the platform image sets "
        "/opt/kafka-archive; a source checkout: its root), or the configuration's "
        "`application` to the job's path"
    )
    home = env.get(HOME_ENV)
    if not home:
        raise CatalogJobError(f"where the catalog Spark job is installed is not configured: {how}")
    path = Path(home) / _JOB
    if not path.is_file():
        raise CatalogJobError(f"the catalog Spark job was not found (looked for {path}): {how}")
    return path


def spark_submit_env(
    config: CatalogJobConfig, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment of ``spark-submit``: ``base`` (default: this process's) with the catalog
    URL in ``KAFKA_ARCHIVE_DB`` (kept off the command line) and the executors' Python."""
    env = dict(os.environ if base is None else base)
    env[env_var("db")] = config.db_url
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    return env


def spark_submit_command(
    config: CatalogJobConfig, properties_file: Path | None = None
) -> list[str]:
    """The ``spark-submit`` command line of the catalog job for ``config``.

    Settings naming a secret are never on it: they must be in ``properties_file``
    (:func:`~kafka_archive.spark.submit_secrets.write_properties_file`, as
    :func:`run_spark_submit` does); without one such settings are a :class:`CatalogJobError`.
    """
    from kafka_archive.spark.submit_secrets import split_secret_conf

    public, secret = split_secret_conf(config.spark_conf)
    if secret and properties_file is None:
        raise CatalogJobError(
            f"spark_conf {', '.join(sorted(secret))} hold secrets and need a properties file"
        )
    cmd = [
        _spark_submit_binary(config),
        "--master",
        config.spark_master or "local[*]",
        "--name",
        "kafka-archive-catalog",
    ]
    if secret and properties_file is not None:
        cmd += ["--properties-file", str(properties_file)]
    for k, v in sorted(public.items()):
        cmd += ["--conf", f"{k}={v}"]
    if config.py_files:
        cmd += ["--py-files", config.py_files]
    cmd.append(config.application or str(default_application()))
    # the catalog URL goes in the environment (spark_submit_env), not here
    cmd += [
        "--store",
        config.store_uri,
        "--interval-bytes",
        str(config.interval_bytes),
    ]
    if config.cluster:
        cmd += ["--cluster", config.cluster]
    if config.verify:
        cmd += ["--verify", config.verify]
    return cmd


def run_spark_submit(
    config: CatalogJobConfig, log: Callable[[str], None] = print
) -> dict[str, Any]:
    """Run the job with ``spark-submit``, stream its output to ``log``, return its report."""
    import tempfile

    from kafka_archive.spark.submit_secrets import split_secret_conf, write_properties_file

    _public, secret = split_secret_conf(config.spark_conf)
    with tempfile.TemporaryDirectory(prefix="kafka-archive-submit-") as tmp:
        # secret settings go in a 0600 file, never on the (world-readable) command line
        props = write_properties_file(secret, Path(tmp) / "secret.properties") if secret else None
        return _run_spark_submit(config, spark_submit_command(config, props), log)


def _run_spark_submit(
    config: CatalogJobConfig, cmd: list[str], log: Callable[[str], None]
) -> dict[str, Any]:
    log("running: " + " ".join(c if "://" not in c else "<uri>" for c in cmd))
    env = spark_submit_env(config)
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    report: dict[str, Any] | None = None
    assert proc.stdout is not None
    for line in proc.stdout:
        line = line.rstrip("\n")
        if line.startswith('{"kind": "build"'):
            report = json.loads(line)
        else:
            log(line)
    code = proc.wait()
    if report is None:
        raise CatalogJobError(f"spark-submit exited with {code} without a report")
    _raise_for(report, f"spark-submit exited with {code}")
    if code != 0:
        raise CatalogJobError(f"spark-submit exited with {code}", report)
    return report


def task_config() -> CatalogJobConfig:
    """The job configuration as a running task reads it: the Variable
    ``kafka_archive_catalog`` and the settings with Airflow Variables (see
    :func:`load_catalog_config`)."""
    from airflow.sdk import Variable

    from kafka_archive.settings import airflow_variable_reader

    return load_catalog_config(
        Variable.get(CONFIG_VARIABLE, default=None), variables=airflow_variable_reader()
    )


def increment_of(config: CatalogJobConfig) -> EngineChoice:
    """What a build of ``config`` would find new, and the engine it calls for (reads the
    catalog and the new manifests; writes nothing)."""
    from kafka_archive.catalog.build import choose_engine, list_increment
    from kafka_archive.catalog.db import open_catalog

    with open_catalog(config.db_url, create=True) as catalog:
        increment = list_increment(
            catalog, config.store_uri, cluster=config.cluster, store_options=config.store_options
        )
    return choose_engine(
        config.engine,
        increment,
        threshold_bytes=config.spark_threshold_bytes,
        threshold_segments=config.spark_threshold_segments,
    )


def build_in_task(mode: str, log: Callable[[str], None]) -> dict[str, Any]:
    """The build task's body: the store's credentials from the Airflow connection, then the
    build in this process (``local``, or ``submit`` with an increment below the Spark threshold
    under ``auto``) or through ``spark-submit`` (its output logged)."""
    from kafka_archive.airflow.store_connection import use_store_connection

    use_store_connection()  # spark-submit and its local executors inherit the environment
    config = task_config()
    if mode == "submit" and config.engine != "spark":
        choice = increment_of(config)
        log(f"catalog build engine: {choice.engine} ({choice.reason})")
        if choice.engine == "in-process":
            # no spark-submit for a few segments: the build lists again and decides the same
            return run_local_build(config.model_copy(update={"spark_master": None}))
    return run_local_build(config) if mode == "local" else run_spark_submit(config, log)


def report_task(results: list[Any]) -> dict[str, Any]:
    """Log what the build added (from whichever build task ran) and return it."""
    import logging

    found = [r for r in results if r]
    result = dict(found[0]) if found else {}
    logging.getLogger("kafka_archive.catalog").info(
        "catalog build: %s segment(s) added, %s already cataloged, %s interval(s), "
        "%s commit(s), %s byte(s) read in %ss; engine %s (%s)",
        result.get("segments_added"),
        result.get("already_cataloged"),
        result.get("intervals_added"),
        result.get("commits_added"),
        result.get("bytes_read"),
        result.get("seconds"),
        result.get("engine"),
        result.get("engine_reason"),
    )
    return result
