"""The on-call view inside Airflow's UI: a JSON API over the catalog and the replay launcher,
and one self-contained page that uses it (issue 14).

* :mod:`.api` - :func:`~.api.build_app`, the FastAPI app Airflow's API server mounts at
  ``/kafka-archive`` (page at ``/``, API under ``/api/v1``, OpenAPI at
  ``/api/v1/openapi.json``);
* :mod:`.access` - who may read and who may launch, through Airflow's auth manager; CSRF;
* :mod:`.launcher` - DAG runs and connection ids through Airflow's own models;
* :mod:`.catalog_routes`, :mod:`.replay_routes` - the endpoints, thin over the services;
* :mod:`.page` - the page (``static/oncall.html``, no build step, no CDN).

The Airflow plugin that mounts it is the top-level module ``kafka_archive_ui`` (the file
``plugins/kafka_archive_ui.py``), so that Airflow's plugin loader needs to import one file.
"""

from __future__ import annotations

__all__ = ["airflow_app"]


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
