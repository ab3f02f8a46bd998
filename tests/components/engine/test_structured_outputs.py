"""`response_format` on the dev engine: refused by default (it cannot constrain decoding),
served unconstrained with `--unconstrained-json` (browser-use asks for a schema every call)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from tests._servers import EngineServer

AGENT_OUTPUT = {
    "type": "json_schema",
    "json_schema": {"name": "agent_output", "strict": True, "schema": {"type": "object", "properties": {}}},
}


def _chat(engine: EngineServer, **extra: Any) -> httpx.Response:
    body = {
        "model": engine.model,
        "messages": [{"role": "user", "content": "Reply in JSON."}],
        "max_tokens": 6,
        "seed": 3,
        "return_token_ids": True,
        **extra,
    }
    return httpx.post(f"{engine.url}/v1/chat/completions", json=body, timeout=120)


def test_a_json_schema_is_a_400_naming_the_field_by_default(dev_engine: EngineServer) -> None:
    response = _chat(dev_engine, response_format=AGENT_OUTPUT)
    assert response.status_code == 400
    assert "`response_format`" in response.json()["error"]["message"]


def test_unconstrained_json_samples_as_if_no_format_was_asked(
    make_dev_engine: Callable[..., EngineServer],
) -> None:
    engine = make_dev_engine(args=("--unconstrained-json",))
    asked = {fmt["type"]: _chat(engine, response_format=fmt) for fmt in (AGENT_OUTPUT, {"type": "json_object"})}
    plain = _chat(engine).json()["choices"][0]["token_ids"]
    for kind, response in asked.items():
        assert response.status_code == 200, (kind, response.text)
        # Same seed, same prompt: the format changed nothing the model sampled.
        assert response.json()["choices"][0]["token_ids"] == plain, kind
    # Only the JSON formats are dropped: any other value is still refused by name.
    refused = _chat(engine, response_format={"type": "regex", "pattern": "a+"})
    assert refused.status_code == 400 and "`response_format`" in refused.json()["error"]["message"]
