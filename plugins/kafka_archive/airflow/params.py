"""The trigger forms' fields, declared once: what a replay and an export of an archived range
share, and the one check of a run's Params against a form.

A form is ``name -> (default, JSON Schema, description)`` (:data:`ParamsSchema`):
:func:`kafka_archive.airflow.dag_params` turns it into the DAG's ``Param`` objects (Airflow
checks a run's conf against them before the run is stored), and :func:`validate_params` checks
it again in the task, for runs made some other way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "NULLABLE_STR",
    "ParamsSchema",
    "archived_range_params",
    "validate_params",
    "wait_for_open_transactions_param",
]

#: name -> (default, JSON Schema, description); a default of ``""``: the form requires it
ParamsSchema = dict[str, tuple[Any, dict[str, Any], str]]

NULLABLE_STR: dict[str, Any] = {"type": ["null", "string"]}


def archived_range_params(*, from_default: str, from_help: str) -> ParamsSchema:
    """The fields that name a range of an archived topic: cluster, topic, partitions (ids
    bounded as the CLI bounds ``--partitions``), ``from`` and ``to``."""
    return {
        "cluster": ("", {"type": "string", "minLength": 1}, "Source cluster name in the archive."),
        "topic": ("", {"type": "string", "minLength": 1}, "Source topic."),
        "partitions": (
            [],
            {
                "type": "array",
                "items": {"type": "integer", "minimum": 0, "maximum": 2**31 - 1},
                "maxItems": 10_000,
            },
            "Source partitions (empty: all).",
        ),
        "from": (from_default, {"type": "string", "minLength": 1}, from_help),
        "to": (None, NULLABLE_STR, "End (exclusive), same forms; empty: the end of the archive."),
    }


def wait_for_open_transactions_param() -> ParamsSchema:
    """``wait_for_open_transactions_s``: how long a run waits for the outcome of a transaction
    open where the archive ends (the CLI's ``--wait-for-open-transactions``)."""
    return {
        "wait_for_open_transactions_s": (
            0,
            {"type": "integer", "minimum": 0},
            "When a transaction was still open where the archive ends, inside the range: wait "
            "at most this many seconds (the catalog is looked at every 10 s) for the archive to "
            "hold its outcome; 0: do not wait (the run then ends incomplete, and runs again "
            "complete it).",
        )
    }


def validate_params(
    params: Mapping[str, Any], schema: ParamsSchema, required: Iterable[str]
) -> dict[str, Any]:
    """``params`` checked against the form ``schema`` (raises ``jsonschema.ValidationError``),
    with every field present (absent ones at their default)."""
    import jsonschema

    jsonschema.validate(
        dict(params),
        {
            "type": "object",
            "properties": {k: v[1] for k, v in schema.items()},
            "required": list(required),
        },
    )
    return {k: params.get(k, v[0]) for k, v in schema.items()}
