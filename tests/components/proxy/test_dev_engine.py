"""The proxy in front of the real dev engine, driven by the official OpenAI client.

These check fidelity end to end: what the harness sees, what is recorded, and that the
recorded tokens and logprobs are exactly the model's (decode and re-score them).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import openai
import pytest

from components.core import read_session

# One scripted engine serves every test here (an engine start costs seconds): its script
# plays a tool call as the first assistant turn; a conversation that already has an
# assistant turn has spent the script, so the model generates freely.
MESSAGES = [
    {"role": "user", "content": "Hello."},
    {"role": "assistant", "content": "Hi."},
    {"role": "user", "content": "Say something."},
]
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
SCRIPT = {"turns": [{"content": "", "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}]}


def _client(proxy: str, session: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{proxy}/s/{session}/v1", api_key="unused", max_retries=0, timeout=60)


def _stream_text(chunks: Any) -> tuple[str, str | None]:
    text, finish = "", None
    for chunk in chunks:
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
    return text, finish


@pytest.fixture(scope="module")
def scripted_engine(make_dev_engine):
    return make_dev_engine(script=SCRIPT)


@pytest.fixture
def engine_proxy(scripted_engine, make_proxy: Callable[..., str]) -> str:
    return make_proxy(scripted_engine.url, training=True)


def test_plain_and_streamed_calls_record_the_same_completion(engine_proxy: str, tmp_path: Path) -> None:
    client = _client(engine_proxy, "plain")
    reply = client.chat.completions.create(model="anything", messages=MESSAGES, max_tokens=12, seed=7)
    text, finish = _stream_text(
        client.chat.completions.create(model="anything", messages=MESSAGES, max_tokens=12, seed=7, stream=True)
    )
    plain, streamed = read_session(tmp_path / "out" / "plain.jsonl")
    assert plain.ok and streamed.ok and streamed.stream
    assert reply.choices[0].message.content == plain.response["choices"][0]["message"]["content"] == text
    assert reply.choices[0].finish_reason == finish == plain.finish_reason == streamed.finish_reason
    assert streamed.prompt_token_ids == plain.prompt_token_ids
    assert streamed.completion_token_ids == plain.completion_token_ids
    assert streamed.completion_logprobs == pytest.approx(plain.completion_logprobs, abs=1e-5)
    assert plain.policy_version and streamed.policy_version == plain.policy_version
    assert reply.choices[0].logprobs is None  # not asked for, not shown
    assert plain.forced_from is None and streamed.forced_from is None  # sampled: every token trains


def test_recorded_tokens_decode_to_the_returned_text(engine_proxy: str, tiny_model_dir: Path, tmp_path: Path) -> None:
    from transformers import AutoTokenizer, GenerationConfig

    reply = _client(engine_proxy, "decode").chat.completions.create(model="m", messages=MESSAGES, max_tokens=16, seed=3)
    [call] = read_session(tmp_path / "out" / "decode.jsonl")
    ids = list(call.completion_token_ids)
    eos = GenerationConfig.from_pretrained(tiny_model_dir).eos_token_id
    eos_ids = set(eos if isinstance(eos, list) else [eos])
    if call.finish_reason == "stop" and ids and ids[-1] in eos_ids:
        ids = ids[:-1]  # the end-of-turn token is sampled and recorded, but not part of the text
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    assert tokenizer.decode(ids, skip_special_tokens=False) == reply.choices[0].message.content


def test_recorded_logprobs_match_a_rescoring_forward_pass(engine_proxy: str, tiny_model_dir: Path, tmp_path: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    _client(engine_proxy, "rescore").chat.completions.create(model="m", messages=MESSAGES, max_tokens=16, seed=5)
    [call] = read_session(tmp_path / "out" / "rescore.jsonl")
    assert call.ok and call.sampling.temperature == 1.0
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32).eval()
    ids = call.prompt_token_ids + call.completion_token_ids
    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([ids])).logits[0].float()
    start = len(call.prompt_token_ids)
    logprobs = torch.log_softmax(logits[start - 1 : -1], dim=-1)
    rescored = logprobs.gather(1, torch.tensor(call.completion_token_ids)[:, None])[:, 0].tolist()
    assert rescored == pytest.approx(call.completion_logprobs, abs=1e-4)


@pytest.mark.parametrize("stream", [False, True])
def test_tool_call_reaches_the_client_and_the_record(engine_proxy: str, tmp_path: Path, stream: bool) -> None:
    client = _client(engine_proxy, "tools")
    request = {"model": "m", "messages": [{"role": "user", "content": "Weather in Paris?"}], "tools": [WEATHER_TOOL]}
    if stream:
        names, arguments = "", ""
        for chunk in client.chat.completions.create(**request, stream=True):
            for choice in chunk.choices:
                for call in choice.delta.tool_calls or ():
                    names += call.function.name or ""
                    arguments += call.function.arguments or ""
    else:
        [tool_call] = client.chat.completions.create(**request).choices[0].message.tool_calls
        names, arguments = tool_call.function.name, tool_call.function.arguments
    assert names == "get_weather" and json.loads(arguments) == {"city": "Paris"}
    [call] = read_session(tmp_path / "out" / "tools.jsonl")
    assert call.ok and call.finish_reason == "tool_calls"
    # The engine's mark, streamed or not: the script forced the whole turn, so none of it trains.
    assert call.forced_from == 0 and call.choice is None and call.sampled_mask() == [0] * len(call.completion_token_ids)
    [recorded] = call.response["choices"][0]["message"]["tool_calls"]
    assert recorded["function"]["name"] == "get_weather" and json.loads(recorded["function"]["arguments"]) == {"city": "Paris"}


def test_a_seeded_proxy_replays_the_same_sample_for_the_same_session_and_turn(
    dev_engine, make_proxy: Callable[..., str], tmp_path: Path
) -> None:
    proxy = make_proxy(dev_engine.url, training=True, sampling_seed="0/0", out=tmp_path / "seeded")
    answers = {}
    for session in ("replay-a", "replay-b"):
        for _ in range(2):
            resp = _client(proxy, session).chat.completions.create(model="any", messages=MESSAGES, max_tokens=12)
            answers.setdefault(session, set()).add(resp.choices[0].message.content)
    assert all(len(texts) == 1 for texts in answers.values()), answers  # same session and turn: same draw
    assert answers["replay-a"] != answers["replay-b"]  # another rollout draws its own
    seeds = {call.sampling.seed for call in read_session(tmp_path / "seeded" / "replay-a.jsonl")}
    assert len(seeds) == 1 and None not in seeds
