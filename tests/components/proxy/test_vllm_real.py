"""The recording proxy in front of real vLLM (its CPU build): the chat path, and token
provenance's path through vLLM's ``/tokenize`` and ``/v1/completions``.

vLLM is the session's (``vllm_engine``, tests/conftest.py). The records must carry vLLM's
own token ids and logprobs (re-scored with a forward pass), the policy version vLLM
reports, and ids that decode to the text the harness saw.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import openai
import pytest
from tests.conftest import VLLM_POLICY_VERSION

from components.core import read_session

pytestmark = pytest.mark.slow

MESSAGES = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "List the files here."}]
LOGPROB_TOLERANCE = 1e-3  # fp32 on both sides (tests/components/engine/test_vllm_real.py)


def _rescored(tiny_model_dir: Path, prompt_ids: list[int], completion_ids: list[int]) -> list[float]:
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32).eval()
    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([prompt_ids + completion_ids])).logits[0]
    logprobs = torch.log_softmax(logits[len(prompt_ids) - 1 : -1], dim=-1)
    return logprobs.gather(1, torch.tensor(completion_ids)[:, None])[:, 0].tolist()


def test_a_second_turn_takes_the_token_path_and_records_vllms_ids_and_logprobs(
    vllm_engine: Any, make_proxy: Callable[..., str], tiny_model_dir: Path, tmp_path: Path
) -> None:
    from transformers import AutoTokenizer

    proxy = make_proxy(vllm_engine.url, training=True)  # training mode: token provenance on
    client = openai.OpenAI(base_url=f"{proxy}/s/real/v1", api_key="unused", max_retries=0, timeout=300)
    first = client.chat.completions.create(model="any", messages=MESSAGES, max_tokens=12)
    history = [*MESSAGES, {"role": "assistant", "content": first.choices[0].message.content}]
    history.append({"role": "user", "content": "And then?"})
    second = client.chat.completions.create(model="any", messages=history, max_tokens=12, stream=True)
    streamed = "".join(chunk.choices[0].delta.content or "" for chunk in second if chunk.choices)

    one, two = read_session(tmp_path / "out" / "real.jsonl")
    assert one.ok and two.ok and (one.provenance.path, two.provenance.path) == ("chat", "tokens")
    assert one.policy_version == two.policy_version == VLLM_POLICY_VERSION
    # The row continues: the second prompt starts with the first prompt and the ids vLLM sampled.
    sampled = one.prompt_token_ids + one.completion_token_ids
    assert two.prompt_token_ids[: len(sampled)] == sampled and two.provenance.continues_call == 0
    for call in (one, two):
        assert len(call.completion_token_ids) == len(call.completion_logprobs) > 0
        rescored = _rescored(tiny_model_dir, call.prompt_token_ids, call.completion_token_ids)
        assert max(abs(a - b) for a, b in zip(call.completion_logprobs, rescored)) < LOGPROB_TOLERANCE
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    # Ids and text agree: the answers decode to what the harness saw, the first prompt is the
    # template's text re-tokenized, and the spliced prompt reads as the conversation it holds.
    # vLLM leaves special tokens (a sampled end of turn) out of the text, as skip_special_tokens does.
    assert tokenizer.decode(one.completion_token_ids, skip_special_tokens=True) == first.choices[0].message.content
    assert tokenizer.decode(two.completion_token_ids, skip_special_tokens=True) == streamed
    rendered = tokenizer.apply_chat_template(MESSAGES, tokenize=False, add_generation_prompt=True)
    assert tokenizer.encode(rendered, add_special_tokens=False) == one.prompt_token_ids
    rendered_history = tokenizer.apply_chat_template(history, tokenize=False, add_generation_prompt=True)
    assert tokenizer.decode(two.prompt_token_ids) == rendered_history
