"""Airflow plugin: kafka-archive's on-call page and JSON API in Airflow's UI (issue 14).

The one module Airflow's plugin loader imports from ``plugins/`` (the package
``kafka_archive`` beside it is a library, skipped by ``plugins/.airflowignore``); the plugin
itself is :class:`kafka_archive.ui.plugin.KafkaArchiveUiPlugin`.
"""

from kafka_archive.ui.plugin import KafkaArchiveUiPlugin

__all__ = ["KafkaArchiveUiPlugin"]
