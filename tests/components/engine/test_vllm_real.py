"""The upstream contract the proxy and the trainer rely on, against real vLLM (its CPU build).

One vLLM serves the whole session (``vllm_engine``, tests/conftest.py): started with the
serve step's command line on a committed checkpoint and admitted by its gate. Where the
dev engine imitates vLLM, these are the answers it imitates.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.conftest import VLLM_POLICY_VERSION

from tests.components.engine.conftest import WEATHER_TOOL

pytestmark = pytest.mark.slow

MESSAGES = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "List the files here."}]
# fp32 on both sides; vLLM's CPU kernels sum in another order than transformers' forward pass.
LOGPROB_TOLERANCE = 1e-3


def _post(engine: Any, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = httpx.post(f"{engine.url}{path}", json=body, timeout=300)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir)


def _template_ids(tokenizer: Any, messages: list[dict[str, Any]], **kwargs: Any) -> list[int]:
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True, **kwargs)
    return tokenizer.encode(text, add_special_tokens=False)


def test_models_reports_the_staged_version_folder_as_root(vllm_engine):
    cards = httpx.get(f"{vllm_engine.url}/v1/models", timeout=30).json()["data"]

    assert [(card["id"], card["root"], card["owned_by"]) for card in cards] == [("policy", VLLM_POLICY_VERSION, "vllm")]
    assert vllm_engine.version == VLLM_POLICY_VERSION


def test_chat_returns_prompt_and_completion_token_ids_with_one_logprob_each(vllm_engine, tokenizer):
    body = {"model": vllm_engine.model, "messages": MESSAGES, "max_tokens": 12, "seed": 3, "temperature": 1.0}
    answer = _post(vllm_engine, "/v1/chat/completions", {**body, "logprobs": True, "top_logprobs": 2, "return_token_ids": True})
    choice = answer["choices"][0]
    ids, entries = choice["token_ids"], choice["logprobs"]["content"]

    assert answer["prompt_token_ids"] == _template_ids(tokenizer, MESSAGES)
    assert len(ids) == len(entries) == answer["usage"]["completion_tokens"] > 0
    # A sampled end of turn (a special token) is returned as an id but is not text.
    assert tokenizer.decode(ids, skip_special_tokens=True) == choice["message"]["content"]
    assert all(len(entry["top_logprobs"]) == 2 and entry["logprob"] <= 0 for entry in entries)
    plain = _post(vllm_engine, "/v1/chat/completions", body)  # token ids only when asked
    assert "prompt_token_ids" not in plain or plain["prompt_token_ids"] is None


@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_logprobs_are_those_of_the_distribution_sampled_from(vllm_engine, rescore, temperature):
    """--logprobs-mode processed_logprobs: log-softmax(logits / T), what the trainer recomputes;
    at T=0.5 raw logprobs would miss by far more than the tolerance."""
    body = {
        "model": vllm_engine.model, "messages": MESSAGES, "max_tokens": 24, "seed": 11, "temperature": temperature,
        "logprobs": True, "return_token_ids": True, "ignore_eos": True,
    }  # fmt: skip
    answer = _post(vllm_engine, "/v1/chat/completions", body)
    choice = answer["choices"][0]
    reported = [entry["logprob"] for entry in choice["logprobs"]["content"]]

    rescored = rescore(answer["prompt_token_ids"], choice["token_ids"], temperature)

    assert len(reported) == 24
    assert max(abs(a - b) for a, b in zip(reported, rescored)) < LOGPROB_TOLERANCE
    if temperature != 1.0:
        raw = rescore(answer["prompt_token_ids"], choice["token_ids"])
        assert max(abs(a - b) for a, b in zip(reported, raw)) > 10 * LOGPROB_TOLERANCE


def test_tokenize_with_tools_renders_as_the_chat_endpoint_does(vllm_engine, tokenizer):
    request = {"model": vllm_engine.model, "messages": MESSAGES, "tools": [WEATHER_TOOL], "add_generation_prompt": True}
    tokenized = _post(vllm_engine, "/tokenize", request)
    chat = _post(vllm_engine, "/v1/chat/completions", {**request, "max_tokens": 1, "return_token_ids": True})

    assert tokenized["tokens"] == chat["prompt_token_ids"] == _template_ids(tokenizer, MESSAGES, tools=[WEATHER_TOOL])
    assert tokenized["count"] == len(tokenized["tokens"]) and tokenized["max_model_len"] == 32768
    assert tokenized["tokens"] != _template_ids(tokenizer, MESSAGES)  # the tools are in the prompt


def test_completions_take_a_token_prompt_and_return_its_ids_and_logprobs(vllm_engine, tokenizer):
    """The proxy's token path: /v1/completions with the prompt as ids, logprobs as legacy lists."""
    prompt = _template_ids(tokenizer, MESSAGES)
    body = {"model": vllm_engine.model, "prompt": prompt, "max_tokens": 8, "logprobs": 0, "seed": 5, "return_token_ids": True}
    choice = _post(vllm_engine, "/v1/completions", body)["choices"][0]

    assert choice["prompt_token_ids"] == prompt
    assert len(choice["token_ids"]) == len(choice["logprobs"]["token_logprobs"]) > 0
    assert tokenizer.decode(choice["token_ids"], skip_special_tokens=True) == choice["text"]
