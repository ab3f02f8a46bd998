"""Chat completions through the official OpenAI client, as a harness would call vLLM."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests._servers import EngineServer

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say something."}]
TRACE = {"return_token_ids": True}


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir)


def test_answer_carries_prompt_and_completion_ids_that_match_template_and_text(
    client: Any, dev_engine: EngineServer, tokenizer: Any
) -> None:
    resp = client.chat.completions.create(
        model=dev_engine.model, messages=MESSAGES, max_tokens=12, seed=5, extra_body=TRACE
    )
    choice = resp.choices[0]
    expected_prompt = httpx.post(dev_engine.url + "/tokenize", json={"messages": MESSAGES}).json()["tokens"]
    assert resp.prompt_token_ids == expected_prompt
    assert expected_prompt == tokenizer.apply_chat_template(MESSAGES, add_generation_prompt=True, return_dict=False)
    assert len(choice.token_ids) == resp.usage.completion_tokens
    assert resp.usage.prompt_tokens == len(expected_prompt)
    assert resp.usage.total_tokens == resp.usage.prompt_tokens + resp.usage.completion_tokens
    ids = choice.token_ids[:-1] if choice.finish_reason == "stop" else choice.token_ids
    assert tokenizer.decode(ids, skip_special_tokens=True) == choice.message.content
    assert choice.finish_reason in ("stop", "length") and resp.object == "chat.completion"


def test_logprobs_equal_a_one_pass_rescoring_of_prompt_and_completion(
    client: Any, dev_engine: EngineServer, rescore: Callable[[list[int], list[int]], list[float]]
) -> None:
    resp = client.chat.completions.create(
        model=dev_engine.model, messages=MESSAGES, max_tokens=24, logprobs=True, top_logprobs=3, extra_body=TRACE
    )
    choice = resp.choices[0]
    engine = [entry.logprob for entry in choice.logprobs.content]
    expected = rescore(resp.prompt_token_ids, choice.token_ids)
    assert len(engine) == len(expected) == len(choice.token_ids)
    assert max(abs(a - b) for a, b in zip(engine, expected)) < 1e-4
    for entry in choice.logprobs.content:
        tops = [t.logprob for t in entry.top_logprobs]
        assert len(tops) == 3 and tops == sorted(tops, reverse=True) and entry.logprob <= tops[0] + 1e-6
        assert bytes(entry.bytes).decode("utf-8", errors="replace") == entry.token


def test_same_seed_gives_same_completion_and_greedy_is_deterministic(client: Any, dev_engine: EngineServer) -> None:
    def ids(**settings: Any) -> list[int]:
        resp = client.chat.completions.create(
            model=dev_engine.model, messages=MESSAGES, max_tokens=16, extra_body=TRACE, **settings
        )
        return resp.choices[0].token_ids

    assert ids(seed=11) == ids(seed=11)
    assert ids(seed=11) != ids(seed=12)
    assert ids(temperature=0) == ids(temperature=0)


def test_stop_string_ends_the_text_before_it(client: Any, dev_engine: EngineServer, tokenizer: Any) -> None:
    free = client.chat.completions.create(
        model=dev_engine.model, messages=MESSAGES, max_tokens=8, temperature=0, extra_body=TRACE
    )
    text = free.choices[0].message.content
    stop = tokenizer.decode(free.choices[0].token_ids[3:5])
    assert stop and stop in text
    cut = client.chat.completions.create(model=dev_engine.model, messages=MESSAGES, max_tokens=8, temperature=0, stop=[stop])
    assert cut.choices[0].message.content == text[: text.index(stop)]
    assert cut.choices[0].finish_reason == "stop"
    assert cut.choices[0].model_extra["stop_reason"] == stop


def test_request_without_max_tokens_stops_at_generation_config_default(client: Any, dev_engine: EngineServer) -> None:
    resp = client.chat.completions.create(model=dev_engine.model, messages=MESSAGES, temperature=0)
    assert resp.usage.completion_tokens <= 256
    assert resp.choices[0].finish_reason == "stop" or resp.usage.completion_tokens == 256


def test_stream_reassembles_to_the_non_streamed_answer(client: Any, dev_engine: EngineServer) -> None:
    settings: dict[str, Any] = dict(model=dev_engine.model, messages=MESSAGES, max_tokens=20, seed=3, logprobs=True)
    whole = client.chat.completions.create(**settings, extra_body=TRACE)
    chunks = list(
        client.chat.completions.create(**settings, stream=True, stream_options={"include_usage": True}, extra_body=TRACE)
    )
    first, last = chunks[0], chunks[-1]
    assert first.choices[0].delta.role == "assistant" and first.model_extra["prompt_token_ids"] == whole.prompt_token_ids
    body = [c for c in chunks[1:] if c.choices]
    assert "".join(c.choices[0].delta.content or "" for c in body) == whole.choices[0].message.content
    assert [t for c in body for t in c.choices[0].token_ids] == whole.choices[0].token_ids
    streamed_logprobs = [e.logprob for c in body for e in c.choices[0].logprobs.content]
    assert streamed_logprobs == pytest.approx([e.logprob for e in whole.choices[0].logprobs.content], abs=1e-4)
    assert body[-1].choices[0].finish_reason == whole.choices[0].finish_reason
    assert last.choices == [] and last.usage.completion_tokens == whole.usage.completion_tokens
    assert len({c.id for c in chunks}) == 1


def _in_flight(engine: EngineServer) -> int:
    return httpx.get(engine.url + "/health").json()["in_flight"]


def _wait_idle(engine: EngineServer) -> None:
    deadline = time.monotonic() + 30
    while _in_flight(engine) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _in_flight(engine) == 0


def test_stream_sends_tokens_while_generating_and_stops_when_the_client_leaves(
    client: Any, dev_engine: EngineServer
) -> None:
    stream = client.chat.completions.create(
        model=dev_engine.model, messages=MESSAGES, max_tokens=40000, stream=True, extra_body={"ignore_eos": True}
    )
    chunks = iter(stream)
    next(chunks)  # role chunk
    assert next(chunks).choices[0].delta.content is not None
    assert _in_flight(dev_engine) == 1  # a buffered stream would only arrive after generation ended
    stream.close()
    _wait_idle(dev_engine)


def test_a_client_that_gives_up_on_a_long_answer_cancels_its_generation(dev_engine: EngineServer) -> None:
    body = {"messages": MESSAGES, "max_tokens": 40000, "ignore_eos": True}
    with pytest.raises(httpx.TimeoutException):
        httpx.post(dev_engine.url + "/v1/chat/completions", json=body, timeout=1.0)
    _wait_idle(dev_engine)  # 40000 tokens would take minutes, far past the wait


def test_models_and_health_name_the_served_checkpoint(client: Any, dev_engine: EngineServer, tiny_model_dir: Path) -> None:
    [card] = client.models.list().data
    assert card.id == dev_engine.model and card.owned_by == "vllm"
    assert card.model_extra["max_model_len"] >= 32768 and card.model_extra["root"] == str(tiny_model_dir)
    assert card.model_extra["policy_version"] == tiny_model_dir.name
    health = httpx.get(dev_engine.url + "/health")
    assert health.status_code == 200 and health.json()["policy_version"] == tiny_model_dir.name


def test_health_counts_the_seconds_the_engine_spent_generating(client: Any, dev_engine: EngineServer) -> None:
    before = httpx.get(dev_engine.url + "/health").json()
    client.chat.completions.create(
        model=dev_engine.model, messages=MESSAGES, max_tokens=64, extra_body={"ignore_eos": True}
    )
    _wait_idle(dev_engine)
    after = httpx.get(dev_engine.url + "/health").json()
    generating = after["busy_s"] - before["busy_s"]
    assert generating > 0, "64 tokens were generated, so the generation thread was busy"
    # The process's CPU covers generation and more (the event loop, tokenizing), never less
    # than a small part of it: generation runs on the CPU.
    assert after["cpu_s"] > before["cpu_s"] and generating < 60


def test_tokenize_a_plain_prompt_and_detokenize_it_back(dev_engine: EngineServer, tokenizer: Any) -> None:
    tokens = httpx.post(dev_engine.url + "/tokenize", json={"prompt": "hello world"}).json()
    assert tokens["tokens"] == tokenizer.encode("hello world") and tokens["count"] == len(tokens["tokens"])
    back = httpx.post(dev_engine.url + "/detokenize", json={"tokens": tokens["tokens"]}).json()
    assert back == {"prompt": "hello world"}


def test_concurrent_requests_each_get_their_own_answer(client: Any, dev_engine: EngineServer) -> None:
    from concurrent.futures import ThreadPoolExecutor

    def ids(seed: int) -> list[int]:
        messages = [{"role": "user", "content": f"request {seed}"}]
        resp = client.chat.completions.create(
            model=dev_engine.model, messages=messages, max_tokens=30, seed=seed, extra_body=TRACE
        )
        return resp.choices[0].token_ids

    alone = [ids(seed) for seed in range(4)]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(ids, range(4)))
    assert together == alone
