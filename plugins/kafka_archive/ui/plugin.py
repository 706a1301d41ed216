"""The Airflow plugin that mounts the on-call page and API (Airflow 3's plugin interface).

Airflow loads it from the top-level module ``kafka_archive_ui`` in its plugins folder (the
repository's ``plugins/kafka_archive_ui.py``, which only imports this class); an installation
whose plugins folder is elsewhere adds that one-line file there. (Not an ``airflow.plugins``
entry point as well: Airflow reports a plugin registered twice as an import error.)
"""

from __future__ import annotations

from typing import Any

from airflow.plugins_manager import AirflowPlugin

from kafka_archive.ui import airflow_app
from kafka_archive.ui.api import URL_PREFIX

__all__ = ["KafkaArchiveUiPlugin"]


class KafkaArchiveUiPlugin(AirflowPlugin):  # type: ignore[misc]  # Airflow's class is untyped
    """``fastapi_apps``: the app at ``/kafka-archive``; ``external_views``: "Kafka archive"
    in Airflow's Browse menu, the page shown inside Airflow's UI."""

    name = "kafka_archive_ui"
    fastapi_apps: list[dict[str, Any]] = [  # noqa: RUF012 - the plugin interface
        {"app": airflow_app(), "url_prefix": URL_PREFIX, "name": "kafka-archive on-call"}
    ]
    external_views: list[dict[str, Any]] = [  # noqa: RUF012
        {
            "name": "Kafka archive",
            "href": f"{URL_PREFIX}/",
            "destination": "nav",
            "url_route": "kafka-archive",
            "category": "browse",
        }
    ]
