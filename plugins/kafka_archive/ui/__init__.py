"""The on-call view inside Airflow's UI: a JSON API over the catalog and the replay launcher,
and one self-contained page that uses it (issue 14).

* :mod:`.api` - :func:`~.api.build_app`, the FastAPI app Airflow's API server mounts at
  ``/kafka-archive`` (page at ``/``, API under ``/api/v1``, OpenAPI at
  ``/api/v1/openapi.json``);
* :mod:`.access` - who may read and who may launch, through Airflow's auth manager; CSRF;
* :mod:`.launcher` - DAG runs and connection ids through Airflow's own models;
* :mod:`.catalog_routes`, :mod:`.replay_routes` - the endpoints, thin over the services;
* :mod:`.page` - the page (``static/oncall.html`` + ``static/oncall.js``, no build step, no CDN).

The Airflow plugin that mounts it is the class ``KafkaArchiveUiPlugin`` of the top-level module
``kafka_archive_ui`` (the file ``plugins/kafka_archive_ui.py``; an installation whose plugins
folder is elsewhere copies that file there): :func:`fastapi_app_spec` and
:func:`external_view_spec` are what it declares. The class lives in that file only: Airflow's
plugin loader may import any ``.py`` under its plugins folder as a module of its own, and a
second module defining the plugin would be a "plugin already registered" import error. (Not an
``airflow.plugins`` entry point either, for the same reason.)
"""

from __future__ import annotations

from typing import Any

__all__ = ["airflow_app", "external_view_spec", "fastapi_app_spec"]


def fastapi_app_spec() -> dict[str, Any]:
    """The plugin's ``fastapi_apps`` entry: :func:`airflow_app` at ``/kafka-archive``."""
    from kafka_archive.ui.api import URL_PREFIX

    return {"app": airflow_app(), "url_prefix": URL_PREFIX, "name": "kafka-archive on-call"}


def external_view_spec() -> dict[str, Any]:
    """The plugin's ``external_views`` entry: "Kafka archive" in Airflow's Browse menu, the
    page shown inside Airflow's UI."""
    from kafka_archive.ui.api import URL_PREFIX

    return {
        "name": "Kafka archive",
        "href": f"{URL_PREFIX}/",
        "destination": "nav",
        "url_route": "kafka-archive",
        "category": "browse",
    }


def airflow_app() -> object:
    """The app as Airflow's API server mounts it: Airflow's auth manager, connections and DAG
    runs; settings read per request (environment > Airflow Variables > file > default)."""
    from kafka_archive.settings import load_settings
    from kafka_archive.ui.access import AirflowAccess
    from kafka_archive.ui.api import build_app
    from kafka_archive.ui.launcher import AirflowLauncher

    return build_app(
        settings=lambda: load_settings(variables=_api_server_variables),
        access=AirflowAccess(),
        launcher=AirflowLauncher(),
    )


def _api_server_variables(name: str) -> str | None:
    """An Airflow Variable, read the way the API server reads them (its metadata database;
    the task SDK's reader of :func:`kafka_archive.settings.airflow_variable_reader` needs a
    running task). Unreadable or missing: unset."""
    from airflow.models.variable import Variable

    try:
        got = Variable.get(name, default_var=None)
    except Exception:  # no metadata database: the lower layers decide
        return None
    return None if got is None else str(got)
