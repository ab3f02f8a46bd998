"""The generation loop in-process: cache reuse, forced tokens and stop handling stay exact."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from components.engine._generation import Job, ModelRunner, ScriptedReply, Step
from components.engine._sampling import SamplingParams


@pytest.fixture(scope="module")
def runner(tiny_model_dir: Path) -> ModelRunner:
    return ModelRunner(tiny_model_dir, threads=1)


def _run(
    runner: ModelRunner, prompt: list[int], params: SamplingParams, forced: list[int] | None = None, sampled_first: int = 0
) -> list[Step]:
    steps: list[Step] = []
    runner.run(Job(prompt_ids=prompt, params=params, emit=steps.append, reply=ScriptedReply(forced or [], sampled_first)))
    return steps


def test_logprobs_stay_exact_when_the_kv_cache_of_a_previous_request_is_reused(
    runner: ModelRunner, rescore: Callable[[list[int], list[int]], list[float]]
) -> None:
    base = runner.tokenizer.encode("The agent opened the file and read it.")
    for prompt in (base, base + [17, 99], base[:4] + [5], [9, 8, 7]):  # extend, branch, unrelated
        steps = _run(runner, prompt, SamplingParams(max_tokens=6, seed=1))
        expected = rescore(prompt, [s.token_id for s in steps])
        assert max(abs(s.logprob - e) for s, e in zip(steps, expected, strict=True)) < 1e-4


def test_forced_tokens_are_emitted_verbatim_with_the_models_logprobs(
    runner: ModelRunner, rescore: Callable[[list[int], list[int]], list[float]]
) -> None:
    tokenizer = runner.tokenizer
    prompt = tokenizer.encode("Question?")
    forced = tokenizer.encode("Answer.<|im_end|>")
    steps = _run(runner, prompt, SamplingParams(max_tokens=50), forced)
    assert [s.token_id for s in steps] == forced
    assert "".join(s.text for s in steps) == "Answer."
    assert steps[-1].finish_reason == "stop" and steps[-1].stop_reason is None
    assert [s.logprob for s in steps] == pytest.approx(rescore(prompt, forced), abs=1e-4)


def test_sampled_text_comes_first_then_the_forced_tokens(runner: ModelRunner) -> None:
    tokenizer = runner.tokenizer
    forced = tokenizer.encode("<tool_call>{}</tool_call><|im_end|>")
    steps = _run(runner, tokenizer.encode("Go."), SamplingParams(max_tokens=80, seed=5), forced, sampled_first=30)
    sampled, rest = [s.token_id for s in steps[:30]], [s.token_id for s in steps[30:]]
    assert rest == forced and steps[-1].finish_reason == "stop"
    # Plain text only while the model samples: no special or tool tokens, no end of turn.
    assert not set(sampled) & set(tokenizer.added_tokens_decoder)


def test_stop_token_ids_end_generation_and_name_the_token(runner: ModelRunner) -> None:
    forced = runner.tokenizer.encode("one two three")
    steps = _run(runner, [1, 2, 3], SamplingParams(max_tokens=50, stop_token_ids=(forced[1],)), forced)
    assert [s.token_id for s in steps] == forced[:2]
    assert steps[-1].finish_reason == "stop" and steps[-1].stop_reason == forced[1]


def test_forced_tokens_past_a_stop_leave_the_cache_and_the_next_call_stays_exact(
    runner: ModelRunner, rescore: Callable[[list[int], list[int]], list[float]]
) -> None:
    prompt = runner.tokenizer.encode("Count with me:")
    forced = runner.tokenizer.encode(" one two three four five")
    steps = _run(runner, prompt, SamplingParams(max_tokens=50, stop_token_ids=(forced[2],)), forced)
    assert [s.token_id for s in steps] == forced[:3]
    # The forced tokens run as one pass; those after the stop are no part of the conversation.
    [entry] = [e for e in runner.cache._entries.values() if e.ids[: len(prompt)] == prompt]
    assert entry.ids == prompt + forced[:3]
    follow = prompt + forced[:3] + runner.tokenizer.encode(" six")
    again = _run(runner, follow, SamplingParams(max_tokens=4, seed=3))
    assert [s.logprob for s in again] == pytest.approx(rescore(follow, [s.token_id for s in again]), abs=1e-4)


def test_ignore_eos_generates_past_the_end_of_turn(runner: ModelRunner) -> None:
    end = runner.tokenizer.convert_tokens_to_ids("<|im_end|>")
    steps = _run(runner, [1, 2, 3], SamplingParams(max_tokens=4, ignore_eos=True), [40, end, 41])
    assert [s.token_id for s in steps][:3] == [40, end, 41] and len(steps) == 4
    assert steps[-1].finish_reason == "length"


def test_top_logprobs_are_the_best_alternatives_in_order(runner: ModelRunner) -> None:
    [step] = _run(runner, [5, 6, 7], SamplingParams(max_tokens=1, temperature=0, top_logprobs=5))
    values = [lp for _, lp in step.top_logprobs]
    assert len(values) == 5 and values == sorted(values, reverse=True)
    assert step.top_logprobs[0] == (step.token_id, pytest.approx(step.logprob))  # greedy picks the best
