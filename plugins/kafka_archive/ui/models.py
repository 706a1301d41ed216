"""The request bodies of the on-call API (their JSON Schema is the OpenAPI description's).

:class:`ReplayRequest` has the replay DAG's Params, the same names, types and defaults as
:data:`kafka_archive.airflow.replay_tasks.PARAMS_SCHEMA` (a test keeps them equal); a launch
passes it to Airflow as the run's ``conf``, where the DAG validates it once more.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from kafka_archive.redact import SECRET_KEY_PATTERN

__all__ = ["GroupRequest", "ReplayRequest", "RestoreRequestBody"]

INT32_MAX = 2**31 - 1
Partition = Annotated[int, Field(ge=0, le=INT32_MAX)]
Text = Annotated[str, Field(min_length=1, max_length=1000)]
Pattern = Annotated[str, Field(min_length=1, max_length=1000)]


class ReplayRequest(BaseModel):
    """A replay as the page's "Replay from here" form fills it (the DAG's Params)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    cluster: Text
    topic: Text
    partitions: list[Partition] = Field(default_factory=list, max_length=10_000)
    from_: Text = Field(
        alias="from",
        description="ISO-8601, epoch ms, -2h / now-30m, offset:N, offset:P=N,..., earliest.",
    )
    to: str | None = Field(None, max_length=1000, description="End (exclusive), same forms.")
    target: Text = Field(description="An Airflow connection id, or bootstrap servers.")
    target_config: dict[str, str] = Field(
        default_factory=dict,
        description="librdkafka settings (no secrets: put them in the Airflow connection; "
        "a secret-named key is refused, 422).",
        json_schema_extra={"propertyNames": {"not": {"pattern": SECRET_KEY_PATTERN}}},
    )
    target_topic: str | None = Field(None, max_length=249)
    partition_mapping: Literal["same", "murmur2", "round-robin"] = "same"
    replay_path: Literal["auto", "records", "batch"] = "auto"
    preserve_timestamps: bool = True
    provenance_headers: bool = False
    key_filter: str | None = Field(None, max_length=1000)
    rate_limit_mb: float | None = Field(None, gt=0, le=1e9)
    rate_limit_records: float | None = Field(None, gt=0, le=1e12)
    create_topic: bool = False
    topic_config: dict[str, str] = Field(
        default_factory=dict,
        description="With create_topic: configs of the created topic, over the source's at T.",
        json_schema_extra={"propertyNames": {"not": {"pattern": SECRET_KEY_PATTERN}}},
    )
    no_source_config: bool = False
    replication_factor: int | None = Field(None, ge=1, le=INT32_MAX)
    allow_same_topic: bool = False
    force: bool = False
    allow_gaps: bool = False
    wait_for_open_transactions_s: int = Field(
        0,
        ge=0,
        le=86_400,
        description="Seconds to wait for the outcome of a transaction open where the archive "
        "ends (0: the run ends incomplete and a later run delivers the rest).",
    )
    execution: Literal["auto", "in-process", "spark"] = "auto"

    def params(self) -> dict[str, Any]:
        """The DAG run's ``conf`` (Params by their DAG names)."""
        return self.model_dump(mode="json", by_alias=True)


class GroupRequest(BaseModel):
    """ "Start group G at T on the target": the replay whose offset map translates it. The
    group-offsets DAG's Params (the same names as
    :data:`kafka_archive.airflow.group_tasks.PARAMS_SCHEMA`; a test keeps them equal)."""

    model_config = ConfigDict(extra="forbid")

    cluster: Text
    topic: Text
    group: Text
    at: str | None = Field(
        None, max_length=100, description="Start at this source time (any CLI time form)."
    )
    commits_at: str | None = Field(
        None,
        max_length=100,
        description="Else: the group's archived commits as of this time (default latest).",
    )
    replay_id: str | None = Field(None, max_length=200)
    target_topic: str | None = Field(None, max_length=249)
    target: str | None = Field(
        None,
        max_length=1000,
        description="Airflow connection id of the target (its servers and secrets, read by the "
        "apply run, server side); empty: the replay's own target (its connection, if it was "
        "launched to one).",
    )


class RestoreRequestBody(BaseModel):
    """A whole-cluster restore as the page's "Restore" form fills it: the restore DAG's Params
    (the same names as :data:`kafka_archive.airflow.restore_tasks.PARAMS_SCHEMA`; a test keeps
    them equal)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    cluster: Text
    topics: list[Pattern] = Field(default_factory=list, max_length=10_000)
    all_topics: bool = False
    exclude: list[Pattern] = Field(default_factory=list, max_length=10_000)
    at: Text = Field(description="The moment T: ISO-8601 or epoch ms.")
    from_: Text = Field("earliest", alias="from")
    prefix: str = Field("", max_length=200)
    suffix: str = Field("", max_length=200)
    rename_regex: str | None = Field(None, max_length=1000)
    rename_to: str = Field("", max_length=1000)
    groups: list[Pattern] | None = Field(None, max_length=10_000)
    acls: bool = False
    principal_map: dict[str, str] = Field(default_factory=dict)
    target: Text = Field(description="An Airflow connection id, or bootstrap servers.")
    target_config: dict[str, str] = Field(
        default_factory=dict,
        description="librdkafka settings (no secrets: put them in the Airflow connection).",
        json_schema_extra={"propertyNames": {"not": {"pattern": SECRET_KEY_PATTERN}}},
    )
    target_principal: str | None = Field(None, max_length=1000)
    replication_factor: int | None = Field(None, ge=1, le=INT32_MAX)
    parallelism: int = Field(4, ge=1, le=256)
    allow_gaps: bool = False
    unverified_permissions: bool = False
    dry_run: bool = False
    execution: Literal["in-process", "spark"] = "in-process"

    def params(self) -> dict[str, Any]:
        """The DAG run's ``conf`` (Params by their DAG names)."""
        return self.model_dump(mode="json", by_alias=True)
