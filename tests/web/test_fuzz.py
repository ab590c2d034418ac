"""Property-based fuzzing of the JSON API from its own OpenAPI schema: valid and invalid bodies,
every operation; no input may bring a server error or a library failure it does not name."""

from __future__ import annotations

import pytest

schemathesis = pytest.importorskip("schemathesis")

from hypothesis import HealthCheck, settings  # noqa: E402
from schemathesis.checks import (  # noqa: E402
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from paramcount.web.app import create_app  # noqa: E402

EXAMPLES = 40  # per operation and generation mode: the whole file runs in well under a minute

schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(hosts=None))
schema.config.generation.update(modes=[schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE])


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_no_input_brings_a_server_error(case):
    response = case.call()
    case.validate_response(
        response,
        checks=[not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance],
    )
    if response.status_code >= 400:
        body = response.json()
        assert body["error"] and not body["bug"], body  # every refusal is said, and none is a library crash


def _memory_settings():
    """Real catalog models with settings drawn from the planner's own tables, and junk among them."""
    from hypothesis import strategies as st

    from paramcount.frontends import catalog
    from paramcount.memory.context.kv_cache import CACHE_DTYPES
    from paramcount.memory.core.gpus import GPUS
    from paramcount.memory.weights.base import SCHEMES
    from paramcount.web.planner import PAGE_RUNTIMES as RUNTIMES  # the page's: MLX is not on it yet

    junk = st.text(max_size=6)
    return st.fixed_dictionaries(
        {
            "source": st.builds(
                lambda n: {"kind": "catalog", "name": n}, st.sampled_from([e.id for e in catalog.entries()])
            ),
            "model_class": st.none() | st.just("base"),
            "mode": st.sampled_from(["inference", "training", "lora"]),
            "scheme": st.sampled_from(SCHEMES) | junk,
            "kv_dtype": st.none() | st.sampled_from(list(CACHE_DTYPES)) | junk,
            "context": st.none() | st.integers(1, 1 << 30),
            "batch": st.integers(1, 1 << 20),
            "gpu": st.sampled_from([*GPUS, "24GB", "20GiB", "0.5MB", "99999TB"]) | junk,
            "runtime": st.none() | st.sampled_from(RUNTIMES),
            "tp": st.none() | st.sampled_from([1, 2, 3, 4, 8, 64]),
            "gpu_memory_utilization": st.none() | st.sampled_from([1e-9, 0.05, 0.9, 1.0]),
            "flash_attn": st.none() | st.sampled_from(["auto", "on", "off"]),
        }
    )


def test_real_models_with_any_planner_settings_never_fail_unnamed():
    from fastapi.testclient import TestClient
    from hypothesis import given

    client = TestClient(create_app(hosts=["testserver"]))

    @given(body=_memory_settings())
    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    def run(body):
        r = client.post("/api/memory", json=body)
        assert r.status_code in (200, 400, 422), r.text
        if r.status_code == 200:
            plan = r.json()
            assert plan["total"] == sum(t["bytes"] for t in plan["terms"])
        else:
            assert r.json()["error"] and not r.json()["bug"]

    run()
