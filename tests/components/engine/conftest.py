"""Fixtures for the engine's API tests: OpenAI clients and an independent re-scorer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests._servers import EngineServer

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
}


def openai_client(engine: EngineServer) -> Any:
    from openai import OpenAI

    return OpenAI(base_url=engine.base_url, api_key="unused", max_retries=0, timeout=120)


@pytest.fixture(scope="session")
def client(dev_engine: EngineServer) -> Any:
    return openai_client(dev_engine)


@pytest.fixture(scope="session")
def rescore(tiny_model_dir: Path) -> Callable[..., list[float]]:
    """``rescore(prompt_ids, completion_ids, temperature=1.0)``: the completion's logprobs from one
    plain forward pass over prompt + completion, independent of the engine's KV-cached loop;
    log-softmax(logits / temperature), what vLLM's processed logprobs are."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32).eval()

    def score(prompt_ids: list[int], completion_ids: list[int], temperature: float = 1.0) -> list[float]:
        with torch.inference_mode():
            logits = model(input_ids=torch.tensor([prompt_ids + completion_ids])).logits[0].float()
        logprobs = torch.log_softmax(logits / temperature, dim=-1)
        start = len(prompt_ids) - 1
        return [float(logprobs[start + i, token]) for i, token in enumerate(completion_ids)]

    return score
