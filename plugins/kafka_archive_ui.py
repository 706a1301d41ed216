"""Airflow plugin: kafka-archive's on-call page and JSON API in Airflow's UI (issue 14).

The one module Airflow's plugin loader should import from ``plugins/`` (the package
``kafka_archive`` beside it is a library). Airflow 3's plugin interface: ``fastapi_apps`` (the
app mounted by the API server at ``/kafka-archive``) and ``react_apps`` (the page, a React
app that Airflow's UI renders in its own shell at ``/plugin/kafka-archive``); see
:mod:`kafka_archive.ui`. The class is defined here and nowhere else (a plugin defined twice is
an import error).
"""

from typing import Any, ClassVar

from airflow.plugins_manager import AirflowPlugin
from kafka_archive.ui import fastapi_app_spec, react_app_spec


class KafkaArchiveUiPlugin(AirflowPlugin):
    name = "kafka_archive_ui"
    fastapi_apps: ClassVar[list[dict[str, Any]]] = [fastapi_app_spec()]
    react_apps: ClassVar[list[dict[str, Any]]] = [react_app_spec()]
