"""The on-call view inside Airflow's UI: a JSON API over the catalog and the replay launcher,
and the page that uses it, a React app rendered in Airflow 3's own UI shell (issues 14, 23).

* :mod:`.api` - :func:`~.api.build_app`, the FastAPI app Airflow's API server mounts at
  ``/kafka-archive`` (page at ``/``, API under ``/api/v1``, OpenAPI at
  ``/api/v1/openapi.json``);
* :mod:`.access` - who may read and who may launch, through Airflow's auth manager; CSRF;
* :mod:`.launcher` - DAG runs and connection ids through Airflow's own models;
* :mod:`.catalog_routes`, :mod:`.replay_routes` - the endpoints, thin over the services;
* :mod:`.page` - the page's bundle (``static/oncall-app.js``, built from ``frontend/`` at the
  repository's root; docs/ui.md says how and why it is committed).

The Airflow plugin that mounts it is the class ``KafkaArchiveUiPlugin`` of the top-level module
``kafka_archive_ui`` (the file ``plugins/kafka_archive_ui.py``; an installation whose plugins
folder is elsewhere copies that file there): :func:`fastapi_app_spec` and
:func:`react_app_spec` are what it declares. The class lives in that file only: Airflow's
plugin loader may import any ``.py`` under its plugins folder as a module of its own, and a
second module defining the plugin would be a "plugin already registered" import error. (Not an
``airflow.plugins`` entry point either, for the same reason.)
"""

from __future__ import annotations

from typing import Any

__all__ = ["PAGE_ROUTE", "airflow_app", "fastapi_app_spec", "react_app_spec"]

#: the page's route in Airflow's UI: ``/plugin/kafka-archive`` (Airflow's ``plugin/<url_route>``)
PAGE_ROUTE = "kafka-archive"


def fastapi_app_spec() -> dict[str, Any]:
    """The plugin's ``fastapi_apps`` entry: :func:`airflow_app` at ``/kafka-archive``."""
    from kafka_archive.ui.api import URL_PREFIX

    return {"app": airflow_app(), "url_prefix": URL_PREFIX, "name": "kafka-archive on-call"}


def react_app_spec() -> dict[str, Any]:
    """The plugin's ``react_apps`` entry: "Kafka archive" in Airflow's Browse menu, the page
    rendered by Airflow's own UI at ``/plugin/kafka-archive`` (no iframe).

    Airflow's UI imports ``bundle_url`` (resolved against its ``<base href>``, so relative: it
    works under a base path too) and renders the component the bundle puts on
    ``globalThis.AirflowPlugin``; the query string carries the bundle's content hash so that a
    new bundle is never taken from a browser's cache."""
    from kafka_archive.ui.api import URL_PREFIX
    from kafka_archive.ui.page import BUNDLE_PATH, bundle_version

    return {
        "name": "Kafka archive",
        "bundle_url": f"{URL_PREFIX.lstrip('/')}{BUNDLE_PATH}?v={bundle_version()}",
        "destination": "nav",
        "url_route": PAGE_ROUTE,
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
