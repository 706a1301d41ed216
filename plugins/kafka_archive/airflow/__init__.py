"""Airflow glue of the platform: thin helpers that DAG tasks call (Airflow SDK imports only
inside functions, so the platform imports without Airflow)."""
