"""Property-based tests of the on-call API: schemathesis generates requests from the API's own
OpenAPI description (valid and edge-case values of every parameter and body) and checks that
no answer is a server error, with an operator's token (so every endpoint's body runs)."""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from kafka_archive.settings import load_settings
from kafka_archive.ui.api import URL_PREFIX, build_app
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode
from support.catalog_data import archived_catalog
from ui_fakes import Conn, RecordingLauncher, TokenAccess

OP = {"Authorization": "Bearer op-token"}


@pytest.fixture(scope="module")
def api_schema(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from fastapi import FastAPI

    _hist, store, db = archived_catalog(tmp_path_factory.mktemp("ui_props"), cluster="c1")
    app = build_app(
        settings=lambda: load_settings({"db": db, "store": store}, env={}),
        access=TokenAccess(),
        launcher=RecordingLauncher(connections={"target_kafka": Conn("localhost", 1)}),
    )
    root = FastAPI()
    root.mount(URL_PREFIX, app)
    return schemathesis.openapi.from_asgi(f"{URL_PREFIX}/api/v1/openapi.json", root, headers=OP)


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_no_request_makes_a_server_error(api_schema: Any, mode: GenerationMode) -> None:
    """Valid requests (positive) and requests the schema refuses (negative) of every
    operation: each answer is a success or a 4xx, never a 5xx."""

    @given(case=api_schema.as_strategy(mode))
    @settings(
        max_examples=150,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    def check(case: Any) -> None:
        # check_target=false: a preview must not wait on a Kafka target that does not exist
        if case.path.endswith("/replay/preview"):
            case.query = {**(case.query or {}), "check_target": False}
        case.call_and_validate(headers=OP, checks=[not_a_server_error])

    check()
