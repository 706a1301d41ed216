"""The platform's settings: one name per setting, one precedence, for every entry point.

Every setting the CLI, the DAGs, the Spark jobs and the UI read is declared once, in
:data:`SETTINGS`, with its spellings in each source: the environment variable, the Airflow
Variable, and the key in the configuration file. Whoever needs a value calls
:func:`load_settings` and reads the attribute of the returned :class:`Settings`; nothing else in
the platform reads ``KAFKA_ARCHIVE_*`` variables.

Precedence, highest first (the same for every setting and every entry point):

1. **explicit**: a command-line option or a function argument (``explicit=``);
2. **environment**: ``KAFKA_ARCHIVE_<NAME>``;
3. **Airflow**: the Airflow Variable ``kafka_archive_<name>`` (only where a ``variables``
   reader is given, i.e. inside Airflow tasks), then the same key of a job's JSON Variable
   (``kafka_archive_catalog``, ``kafka_archive_offsets``: ``job_variable=``);
4. **config file**: the YAML/JSON file named by ``KAFKA_ARCHIVE_CONFIG`` (the archive
   configuration file; its top-level keys ``store_uri``, ``db_url``, ``spark_master``, ...);
5. **default**.

An empty value counts as unset at every level (``KAFKA_ARCHIVE_DB=`` does not hide the file).

Why not pydantic-settings: its import alone costs ~140 ms, which every CLI command would pay
(the query commands must answer within 0.5 s, see docs/performance.md), and it has no Airflow
Variable source, which would have to be written anyway; the chain here is a loop over five
mappings. Values are plain strings, booleans, choices and structured values (``json``: a JSON
text from the environment or a Variable, a YAML/JSON value in the configuration file), checked
in :func:`_coerce`; a structured value's own schema is validated by the package that uses it
(e.g. ``retention``: :mod:`kafka_archive.catalog.retention`).

``kafka-archive settings`` prints each setting's value and the source it came from (secrets
masked); ``docs/settings.md`` is the reference (a test keeps it in step with :data:`SETTINGS`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Final, Literal

from kafka_archive.errors import KafkaArchiveError

__all__ = [
    "CONFIG_FILE_ENV",
    "SETTINGS",
    "Setting",
    "Settings",
    "SettingsError",
    "VariableReader",
    "airflow_variable_reader",
    "env_var",
    "load_settings",
]

#: the environment variable naming the configuration file (layer 4); it cannot itself come
#: from the file, so it is read from explicit > environment only
CONFIG_FILE_ENV: Final = "KAFKA_ARCHIVE_CONFIG"
_ENV_PREFIX: Final = "KAFKA_ARCHIVE_"
_VARIABLE_PREFIX: Final = "kafka_archive_"

Kind = Literal["str", "secret", "bool", "choice", "json", "percent", "bytes", "count"]
Source = Literal["explicit", "environment", "airflow", "file", "default"]
#: the defaults of ``catalog_spark_threshold_bytes`` / ``_segments``: where ``catalog build``
#: under ``auto`` starts Spark (why these: :mod:`kafka_archive.catalog.build.engine`)
CATALOG_SPARK_THRESHOLD_BYTES: Final = 4 * 2**30
CATALOG_SPARK_THRESHOLD_SEGMENTS: Final = 1000
#: reads one Airflow Variable by name (``None`` when it is not set)
VariableReader = Callable[[str], str | None]


class SettingsError(KafkaArchiveError, ValueError):
    """A setting has a value it cannot take, or the configuration file cannot be read; the
    message names the setting and the source it came from. The CLI exits 2 (a usage error)."""

    exit_code = 2
    http_status = 503
    api_error = "not_configured"

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)


@dataclass(frozen=True, slots=True)
class Setting:
    """One setting: its name (the attribute of :class:`Settings`) and how each source spells it.

    ``env`` is ``KAFKA_ARCHIVE_<NAME>``, the Airflow Variable ``kafka_archive_<name>``; only the
    file key differs where the archive configuration file had its own spelling first
    (``store_uri``, ``db_url``).
    """

    name: str
    help: str
    kind: Kind = "str"
    file_key: str | None = None
    choices: tuple[str, ...] = ()
    #: where the setting is read (for ``kafka-archive settings`` and docs/settings.md)
    used_by: str = ""

    @property
    def env(self) -> str:
        return _ENV_PREFIX + self.name.upper()

    @property
    def variable(self) -> str:
        return _VARIABLE_PREFIX + self.name

    @property
    def key(self) -> str:
        return self.file_key or self.name


#: Every setting of the platform. Adding one: a field of :class:`Settings` with its default,
#: an entry here, a row in docs/settings.md.
SETTINGS: Final[tuple[Setting, ...]] = (
    Setting(
        "store",
        "Archive store URI: s3://bucket/prefix, file:///dir or a path.",
        file_key="store_uri",
        used_by="archive, catalog, replay, export",
    ),
    Setting(
        "db",
        "Catalog database: a SQLite path, sqlite:///path or postgresql://user@host/db.",
        kind="secret",
        file_key="db_url",
        used_by="catalog, replay, offsets follower, UI",
    ),
    Setting(
        "spark_master",
        "Spark master for catalog builds, large replays and exports (local[*], "
        "spark://host:7077, ...); unset: in-process local Spark.",
        used_by="catalog build, replay, export",
    ),
    Setting(
        "iceberg_jars",
        "Folder of Iceberg's Spark runtime jars (what scripts/ensure-iceberg.sh prints); unset: "
        "that script's default cache folder for this PySpark's Spark line.",
        used_by="export --format iceberg",
    ),
    Setting(
        "spark_ui",
        "Start Spark's web UI for local builds (off by default: it would listen on a port).",
        kind="bool",
        used_by="catalog build, replay on Spark",
    ),
    Setting(
        "catalog_verify",
        "Integrity check of each archived object during catalog builds.",
        kind="choice",
        choices=("crc32c", "crc32c-only", "sha256"),
        used_by="catalog build",
    ),
    Setting(
        "catalog_engine",
        "Where catalog builds extract: auto (in-process unless the new segments reach a Spark "
        "threshold), in-process or spark.",
        kind="choice",
        choices=("auto", "in-process", "spark"),
        used_by="catalog build, catalog DAG",
    ),
    Setting(
        "catalog_spark_threshold_bytes",
        "Under catalog_engine auto, the new bytes (a size: 4GiB, 500MB, 1048576) from which a "
        "build runs on Spark rather than in-process.",
        kind="bytes",
        used_by="catalog build, catalog DAG",
    ),
    Setting(
        "catalog_spark_threshold_segments",
        "Under catalog_engine auto, the number of new segments from which a build runs on "
        "Spark rather than in-process (whichever threshold is reached first).",
        kind="count",
        used_by="catalog build, catalog DAG",
    ),
    Setting(
        "state_dir",
        "Directory of the archiver's digest cache (default: the XDG cache directory).",
        used_by="archive",
    ),
    Setting(
        "schedule",
        "Schedule of the archive DAG: cron, preset (@hourly) or ISO 8601 duration (PT10M).",
        used_by="archive DAG",
    ),
    Setting(
        "home",
        "Where the DAGs and Spark jobs are installed (the platform image sets "
        "/opt/kafka-archive; from a source checkout: its root); needed by a spark-submit "
        "of the catalog build without an `application`.",
        used_by="catalog and replay spark-submit",
    ),
    Setting(
        "aws_conn_id",
        "Airflow connection holding the object store's credentials (e.g. aws_default); unset: "
        "the worker's own AWS environment, profile or role.",
        used_by="every DAG task that opens the store",
    ),
    Setting(
        "offsets_cluster",
        "Cluster name whose __consumer_offsets the offsets DAG follows.",
        used_by="offsets DAG",
    ),
    Setting(
        "offsets_bootstrap",
        "Bootstrap servers of that cluster.",
        used_by="offsets DAG",
    ),
    Setting(
        "fetch_cluster",
        "Cluster name the fetch archiver's DAG archives (when its Variable kafka_archive_fetch "
        "names no clusters).",
        used_by="fetch DAG",
    ),
    Setting(
        "fetch_bootstrap",
        "Bootstrap servers of that cluster.",
        used_by="fetch DAG",
    ),
    Setting(
        "fetch_topics",
        "Globs of the topics the fetch DAG archives from that cluster, comma-separated, as "
        "`archive fetch --topics` (unset: every topic).",
        used_by="fetch DAG",
    ),
    Setting(
        "retention",
        "Retention policies of the archive: a list of {name, cluster, topic, max_age, "
        "max_bytes, keep_all} (YAML in the configuration file, JSON in the environment); "
        "unset or no matching policy: keep everything.",
        kind="json",
        used_by="archive prune, prune DAG",
    ),
    Setting(
        "prune_max_share",
        "The largest share of a topic's archived bytes one prune may delete without being "
        "confirmed (--yes, the prune DAG's Param yes): a whole percentage 0-100 (50 or 50%); "
        "100: never ask.",
        kind="percent",
        used_by="archive prune, prune DAG",
    ),
    Setting(
        "metadata_snapshots",
        "Clusters the metadata snapshot DAG snapshots through the Admin API: a list of "
        "{cluster, bootstrap, client_config} (client_config: librdkafka NAME: VALUE settings); "
        "unset: none.",
        kind="json",
        used_by="metadata snapshot DAG",
    ),
    Setting(
        "error_log_dir",
        "Where the CLI writes the full report of an internal error (default: "
        "$XDG_STATE_HOME/kafka-archive).",
        used_by="CLI",
    ),
    Setting(
        "notify_webhook",
        "Webhook URL that DAG task failures, retries and missed deadlines are POSTed to "
        "(JSON with a Slack-compatible text field); unset: the log only.",
        kind="secret",
        used_by="every DAG (failure and retry callbacks), archive and catalog deadlines",
    ),
    Setting(
        "archive_deadline",
        "Deadline of an archive DAG run from when it was queued (45m, 2h, 1d); a run still "
        "going then is notified; unset: no deadline.",
        used_by="archive DAG",
    ),
    Setting(
        "catalog_deadline",
        "Deadline of a catalog DAG run from when it was queued (2h, 12h); unset: no deadline.",
        used_by="catalog DAG",
    ),
)
_BY_NAME: Final = {s.name: s for s in SETTINGS}
_TRUE: Final = frozenset({"1", "true", "yes", "on"})
_FALSE: Final = frozenset({"0", "false", "no", "off", ""})


@dataclass(frozen=True, slots=True)
class Settings:
    """The effective settings (see the module docstring for where each value comes from).

    ``sources`` maps each setting's name to the layer its value came from; ``config_file`` is
    the file layer 4 read (``None``: none configured).
    """

    store: str | None = None
    db: str | None = None
    spark_master: str | None = None
    iceberg_jars: str | None = None
    spark_ui: bool = False
    catalog_verify: str = "crc32c"
    catalog_engine: str = "auto"
    catalog_spark_threshold_bytes: int = CATALOG_SPARK_THRESHOLD_BYTES
    catalog_spark_threshold_segments: int = CATALOG_SPARK_THRESHOLD_SEGMENTS
    state_dir: str | None = None
    schedule: str | None = None
    home: str | None = None
    aws_conn_id: str | None = None
    offsets_cluster: str | None = None
    offsets_bootstrap: str | None = None
    fetch_cluster: str | None = None
    fetch_bootstrap: str | None = None
    fetch_topics: str | None = None
    error_log_dir: str | None = None
    notify_webhook: str | None = None
    archive_deadline: str | None = None
    catalog_deadline: str | None = None
    retention: Any = None
    prune_max_share: int = 50
    metadata_snapshots: Any = None
    config_file: str | None = None
    sources: Mapping[str, Source] = field(default_factory=dict, compare=False)

    def describe(self) -> list[dict[str, Any]]:
        """One row per setting: name, value (secrets masked), source, env, Variable, file key."""
        from kafka_archive.redact import redact_url

        rows = []
        for s in SETTINGS:
            value = getattr(self, s.name)
            if s.kind == "secret" and isinstance(value, str):
                value = _mask_secret(value, redact_url)
            rows.append(
                {
                    "name": s.name,
                    "value": value,
                    "source": self.sources.get(s.name, "default"),
                    "env": s.env,
                    "airflow_variable": s.variable,
                    "file_key": s.key,
                    "help": s.help,
                }
            )
        return rows


def _mask_secret(value: str, redact_url: Callable[[object], str]) -> str:
    """A secret setting as shown: a database URL without its password; an http(s) URL (a
    webhook, whose path is its token) as its scheme and host only."""
    if value.lower().startswith(("http://", "https://")):
        from urllib.parse import urlsplit

        from kafka_archive.redact import MASK

        try:
            return f"{value.split('://', 1)[0]}://{urlsplit(value).hostname or ''}/{MASK}"
        except ValueError:
            return MASK
    return redact_url(value)


def _coerce(setting: Setting, raw: object, source: str) -> object:
    if setting.kind == "bool":
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise SettingsError(
            f"{setting.name} from {source}: {raw!r} is not a boolean",
            hint="use 1/true/yes/on or 0/false/no/off",
        )
    if setting.kind == "json":
        return _coerce_json(setting, raw, source)
    if setting.kind == "percent":
        return _coerce_percent(setting, raw, source)
    if setting.kind in ("bytes", "count"):
        return _coerce_positive(setting, raw, source)
    text = str(raw).strip()
    if setting.kind == "choice" and text not in setting.choices:
        raise SettingsError(
            f"{setting.name} from {source}: {text!r} is not one of {', '.join(setting.choices)}",
            hint=f"set {setting.env} to one of {', '.join(setting.choices)}",
        )
    return text


def _coerce_percent(setting: Setting, raw: object, source: str) -> int:
    """A whole percentage 0-100: an integer (YAML), or its digits with an optional ``%``;
    strict (no boolean, no fraction, nothing outside 0-100: a guard's limit is not guessed)."""
    text = raw.strip().removesuffix("%").strip() if isinstance(raw, str) else None
    if isinstance(raw, int) and not isinstance(raw, bool):
        value: int | None = raw
    elif text is not None and text.isascii() and text.isdigit():
        value = int(text)
    else:
        value = None
    if value is None or not 0 <= value <= 100:
        raise SettingsError(
            f"{setting.name} from {source}: {raw!r} is not a whole percentage from 0 to 100",
            hint=f"set {setting.env} to e.g. 50 (or 50%); 100 never asks",
        )
    return value


def _coerce_positive(setting: Setting, raw: object, source: str) -> int:
    """A size (``bytes``: 4GiB, 500MB, 1048576; see :func:`kafka_archive.sizes.parse_bytes`) or
    a count (``count``: digits), positive; strict like the sizes of retention policies."""
    from kafka_archive.sizes import parse_bytes

    try:
        if setting.kind == "bytes":
            return parse_bytes(raw)
        text = raw.strip() if isinstance(raw, str) else None
        if isinstance(raw, int) and not isinstance(raw, bool) and raw > 0:
            return raw
        if text is not None and text.isascii() and text.isdigit() and int(text) > 0:
            return int(text)
        raise ValueError(f"{raw!r} is not a positive whole number")
    except ValueError as exc:
        example = "4GiB, 500MB or 1048576" if setting.kind == "bytes" else "e.g. 1000"
        raise SettingsError(
            f"{setting.name} from {source}: {exc}", hint=f"set {setting.env} to {example}"
        ) from None


def _coerce_json(setting: Setting, raw: object, source: str) -> object:
    """A structured value: parsed from JSON text (environment, Variable), or taken as the
    configuration file gave it (already a list or mapping)."""
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise SettingsError(
            f"{setting.name} from {source}: not valid JSON ({exc.msg} at character {exc.pos})",
            hint=f"{setting.env} takes JSON, e.g. "
            '[{"name": "30-days", "topic": "*", "max_age": "30d"}]',
        ) from None


def _read_config_file(path: str) -> Mapping[str, object]:
    """The top-level mapping of the YAML/JSON configuration file (JSON is YAML)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise SettingsError(
            f"{CONFIG_FILE_ENV}={path!r} cannot be read: {exc.strerror or exc}",
            hint=f"point {CONFIG_FILE_ENV} at a readable YAML or JSON file, or unset it",
        ) from None
    try:
        raw = json.loads(text)
    except ValueError:
        import yaml  # only when the file is YAML: JSON needs no parser import

        try:
            raw = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise SettingsError(f"{path}: not valid YAML/JSON: {exc}") from None
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise SettingsError(f"{path}: the configuration must be a mapping (YAML/JSON object)")
    return raw


def _blank(value: object) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def load_settings(
    explicit: Mapping[str, object] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    variables: VariableReader | None = None,
    job_variable: Mapping[str, object] | None = None,
    config_file: str | None = None,
) -> Settings:
    """Resolve every setting through the five layers (module docstring).

    Args:
        explicit: values given on the command line or by the caller, by setting name; ``None``
            or empty entries are ignored (an option that was not given).
        env: the environment (default ``os.environ``).
        variables: reads Airflow Variables; only Airflow tasks pass it
            (:func:`airflow_variable_reader`), so the CLI never imports Airflow.
        job_variable: the parsed JSON of a job's Variable, read by file key after the
            individual Variables (e.g. ``kafka_archive_catalog``'s ``db_url``).
        config_file: the configuration file (default: explicit ``config_file``, else
            ``$KAFKA_ARCHIVE_CONFIG``).

    Raises:
        SettingsError: a value a setting cannot take, or an unreadable configuration file.
    """
    explicit = dict(explicit or {})
    unknown = set(explicit) - set(_BY_NAME) - {"config_file"}
    if unknown:
        raise TypeError(f"unknown setting(s): {', '.join(sorted(unknown))}")
    env = os.environ if env is None else env
    path = config_file or explicit.get("config_file") or env.get(CONFIG_FILE_ENV) or None
    file_values = _read_config_file(str(path)) if path else {}
    values: dict[str, object] = {}
    sources: dict[str, Source] = {}

    def candidates(s: Setting) -> Iterator[tuple[Source, str, object]]:
        # lazily, highest first: a Variable is read only when nothing above it is set
        yield "explicit", "the command line", explicit.get(s.name)
        yield "environment", s.env, env.get(s.env)
        if variables is not None:
            yield "airflow", f"Airflow Variable {s.variable}", variables(s.variable)
        if job_variable is not None:
            yield "airflow", "the job's Airflow Variable", job_variable.get(s.key)
        yield "file", str(path), file_values.get(s.key)

    for s in SETTINGS:
        for source, where, raw in candidates(s):
            if not _blank(raw):
                values[s.name] = _coerce(s, raw, where)
                sources[s.name] = source
                break
    return Settings(
        **values,  # type: ignore[arg-type]
        config_file=str(path) if path else None,
        sources=sources,
    )


def airflow_variable_reader() -> VariableReader:
    """A :data:`VariableReader` over Airflow's Variables (inside a task; imports Airflow).

    A Variable that cannot be read (no metadata database outside a task) reads as unset."""
    from airflow.sdk import Variable

    def read(name: str) -> str | None:
        try:
            got = Variable.get(name, default=None)
        except Exception:  # outside a task there are no Variables to read
            return None
        return None if got is None else str(got)

    return read


def env_var(name: str) -> str:
    """The environment variable of setting ``name`` (e.g. ``db`` -> ``KAFKA_ARCHIVE_DB``), for
    code that hands a setting to a child process through its environment."""
    return _BY_NAME[name].env


def setting_names() -> list[str]:
    """The names of every setting, in declaration order (for help texts and tests)."""
    return [f.name for f in fields(Settings) if f.name in _BY_NAME]
