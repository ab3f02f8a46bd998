"""Text completions: a token-id prompt continues a chat exactly where it left off."""

from __future__ import annotations

from typing import Any

import pytest

from tests._servers import EngineServer

MESSAGES = [{"role": "user", "content": "Count with me."}]
TRACE = {"return_token_ids": True}


def test_token_id_prompt_continues_a_greedy_chat_token_for_token(client: Any, dev_engine: EngineServer) -> None:
    chat = client.chat.completions.create(
        model=dev_engine.model, messages=MESSAGES, max_tokens=12, temperature=0, logprobs=True, extra_body=TRACE
    )
    prompt, completion = chat.prompt_token_ids, chat.choices[0].token_ids
    assert len(completion) > 4
    cont = client.completions.create(
        model=dev_engine.model,
        prompt=prompt + completion[:3],
        max_tokens=len(completion) - 3,
        temperature=0,
        logprobs=0,
        extra_body=TRACE,
    )
    choice = cont.choices[0]
    assert choice.model_extra["token_ids"] == completion[3:]
    assert choice.model_extra["prompt_token_ids"] == prompt + completion[:3]
    chat_logprobs = [e.logprob for e in chat.choices[0].logprobs.content][3:]
    assert choice.logprobs.token_logprobs == pytest.approx(chat_logprobs, abs=1e-4)
    assert choice.logprobs.text_offset[0] == 0 and len(choice.logprobs.tokens) == len(completion) - 3


def test_string_prompt_streams_the_same_tokens_as_the_whole_answer(client: Any, dev_engine: EngineServer) -> None:
    settings: dict[str, Any] = dict(model=dev_engine.model, prompt="Once upon a time", max_tokens=10, seed=7)
    whole = client.completions.create(**settings, extra_body=TRACE)
    stream = client.completions.create(**settings, stream=True, stream_options={"include_usage": True}, extra_body=TRACE)
    chunks = list(stream)
    body = [c for c in chunks if c.choices]
    assert "".join(c.choices[0].text for c in body) == whole.choices[0].text
    assert [t for c in body for t in c.choices[0].model_extra["token_ids"]] == whole.choices[0].model_extra["token_ids"]
    assert body[0].choices[0].model_extra["prompt_token_ids"] == whole.choices[0].model_extra["prompt_token_ids"]
    assert chunks[-1].usage.completion_tokens == whole.usage.completion_tokens == 10
    assert whole.object == "text_completion" and whole.choices[0].finish_reason == "length"


def test_default_max_tokens_is_sixteen_like_vllm(client: Any, dev_engine: EngineServer) -> None:
    resp = client.completions.create(model=dev_engine.model, prompt="a", extra_body={"ignore_eos": True})
    assert resp.usage.completion_tokens == 16


def test_explicit_null_max_tokens_means_the_chat_default_like_vllm(client: Any, dev_engine: EngineServer) -> None:
    # vLLM drops a null limit and takes the context left, capped by generation_config.json
    # (256 for the tiny model): what a chat request without max_tokens gets.
    resp = client.completions.create(
        model=dev_engine.model, prompt="a", max_tokens=None, extra_body={"ignore_eos": True}
    )
    assert resp.usage.completion_tokens == 256


def test_prompt_logprobs_score_each_prompt_token_as_a_teacher_would(
    client: Any, dev_engine: EngineServer, rescore: Any
) -> None:
    """vLLM's shape: None first, then each prompt token's raw logprob, rank and the top ones."""
    chat = client.chat.completions.create(model=dev_engine.model, messages=MESSAGES, max_tokens=6, extra_body=TRACE)
    tokens = chat.prompt_token_ids + chat.choices[0].token_ids
    body: dict[str, Any] = dict(model=dev_engine.model, prompt=tokens, max_tokens=1)
    whole = client.completions.create(**body, extra_body={"prompt_logprobs": 2})
    scored = whole.choices[0].model_extra["prompt_logprobs"]

    assert len(scored) == len(tokens) and scored[0] is None
    expected = rescore(tokens[:1], tokens[1:])
    assert [entry[str(token)]["logprob"] for entry, token in zip(scored[1:], tokens[1:])] == pytest.approx(expected, abs=1e-4)
    for entry, token in zip(scored[1:], tokens[1:]):
        ranks = sorted(e["rank"] for e in entry.values())
        assert ranks[0] == 1 and len(entry) in (2, 3)  # the prompt token's own entry, plus the top 2
        best = min(entry.values(), key=lambda e: e["rank"])["logprob"]
        assert entry[str(token)]["logprob"] <= best + 1e-6
    streamed = list(client.completions.create(**body, stream=True, extra_body={"prompt_logprobs": 0}))
    first = streamed[0].choices[0].model_extra["prompt_logprobs"]
    assert [e and list(e) for e in first] == [None] + [[str(t)] for t in tokens[1:]]  # 0: the prompt's tokens alone


def test_prompt_logprobs_on_a_chat_are_refused_rather_than_ignored(client: Any, dev_engine: EngineServer) -> None:
    import openai

    with pytest.raises(openai.BadRequestError, match="prompt_logprobs"):
        client.chat.completions.create(
            model=dev_engine.model, messages=MESSAGES, max_tokens=1, extra_body={"prompt_logprobs": 0}
        )
