"""The prefix-keyed KV cache store: answers stay exact whether a request hits or not,
sessions keep their own entries, the budget holds, and the counters tell what happened."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from components.engine._generation import Job, ModelRunner, ScriptedReply, Step
from components.engine._kv_cache import common_prefix, worth_reusing
from components.engine._sampling import SamplingParams
from tests._servers import EngineServer


def _runner(model_dir: Path, **kwargs: int) -> ModelRunner:
    return ModelRunner(model_dir, threads=1, **kwargs)


@pytest.fixture(scope="module")
def runner(tiny_model_dir: Path) -> ModelRunner:
    return _runner(tiny_model_dir)


def _answer(runner: ModelRunner, prompt: list[int], forced: list[int] | None = None, **params: int) -> list[Step]:
    steps: list[Step] = []
    sampling = SamplingParams(**{"max_tokens": 12, "seed": 7, **params})
    runner.run(Job(prompt_ids=prompt, params=sampling, emit=steps.append, reply=ScriptedReply(forced or [])))
    return steps


def _prompt(runner: ModelRunner, text: str, tokens: int) -> list[int]:
    ids = runner.tokenizer.encode(text)
    return (ids * (tokens // len(ids) + 1))[:tokens]


def _same(cold: list[Step], warm: list[Step]) -> None:
    assert [s.token_id for s in warm] == [s.token_id for s in cold]
    assert max(abs(w.logprob - c.logprob) for w, c in zip(warm, cold, strict=True)) < 1e-4


def test_a_request_answered_cold_and_warm_gives_the_same_tokens_and_logprobs(tiny_model_dir: Path) -> None:
    runner = _runner(tiny_model_dir)
    system = _prompt(runner, "You are an agent. Use the tools to read and edit files. ", 4500)
    first = system + runner.tokenizer.encode("Task one: list the files.")
    cold = _answer(runner, first)
    assert runner.cache.snapshot()["misses"] == 1
    again = _answer(runner, first)  # a retry: the whole prompt but its last token is cached
    _same(cold, again)
    turn = first + [s.token_id for s in cold] + runner.tokenizer.encode(" Now read README.md.") * 80
    fresh = _answer(_runner(tiny_model_dir), turn)  # more than one chunk after the cached part
    continued = _answer(runner, turn)
    _same(fresh, continued)
    stats = runner.cache.snapshot()
    assert stats["hits"] == 2 and stats["reused_tokens"] > 2 * len(first) - 2


def test_forced_tokens_keep_the_models_logprobs_after_a_hit(runner: ModelRunner) -> None:
    prompt = _prompt(runner, "Read the config and report the port. ", 600)
    forced = runner.tokenizer.encode("The port is 8000.<|im_end|>")
    cold = _answer(runner, prompt + [11], forced, max_tokens=50)
    warm = _answer(runner, prompt + [11], forced, max_tokens=50)
    assert [s.token_id for s in cold] == forced
    _same(cold, warm)


def test_a_session_sharing_only_the_prefix_leaves_the_other_sessions_entry_whole(tiny_model_dir: Path) -> None:
    runner = _runner(tiny_model_dir)
    system = _prompt(runner, "System prompt and tool schemas. ", 900)
    alice = system + runner.tokenizer.encode("Alice asks for the logs.")
    alice_answer = [s.token_id for s in _answer(runner, alice)]
    _answer(runner, system + runner.tokenizer.encode("Bob asks for the tests."))
    stats = runner.cache.snapshot()
    assert (stats["hits"], stats["copies"], stats["entries"]) == (1, 1, 2)
    # Alice's next turn finds her whole history (prompt and answer but its last token).
    before = stats["reused_tokens"]
    _answer(runner, alice + alice_answer + runner.tokenizer.encode(" Thanks."))
    stats = runner.cache.snapshot()
    assert stats["reused_tokens"] - before == len(alice) + len(alice_answer) - 1
    assert (stats["copies"], stats["entries"]) == (1, 2)


def test_a_continuation_that_re_encodes_the_answer_differently_extends_its_entry_in_place(
    tiny_model_dir: Path,
) -> None:
    runner = _runner(tiny_model_dir)
    prompt = _prompt(runner, "Fix the failing test. ", 300)
    answer = [s.token_id for s in _answer(runner, prompt, max_tokens=8)]
    _answer(runner, prompt, max_tokens=8, seed=8)  # a sibling: same prompt, its own answer (a copy)
    resent = prompt + answer[:3] + [7, 7] + runner.tokenizer.encode(" Done?")  # the answer re-encoded
    _answer(runner, resent)
    stats = runner.cache.snapshot()
    assert (stats["copies"], stats["entries"]) == (1, 2)
    assert stats["reused_tokens"] == len(prompt) - 1 + len(prompt) + 3


def test_a_short_shared_prefix_is_recomputed_not_reused(runner: ModelRunner) -> None:
    runner.run(Job(prompt_ids=[5] * 300, params=SamplingParams(max_tokens=1), emit=lambda _: None))
    before = runner.cache.snapshot()
    _answer(runner, [5] * 10 + [6] * 290)
    after = runner.cache.snapshot()
    assert after["misses"] == before["misses"] + 1 and after["reused_tokens"] == before["reused_tokens"]
    assert not worth_reusing(10, 300) and worth_reusing(225, 300) and not worth_reusing(0, 1)


def test_least_recently_used_entries_go_first_within_the_entry_limit(tiny_model_dir: Path) -> None:
    runner = _runner(tiny_model_dir, cache_entries=2)
    prompts = [[t] * 50 for t in (20, 21, 22)]
    for prompt in prompts:
        _answer(runner, prompt, max_tokens=2)
    _answer(runner, prompts[0] + [9], max_tokens=2)  # evicted: no entry left to continue
    _answer(runner, prompts[2] + [9], max_tokens=2)  # still there
    stats = runner.cache.snapshot()
    assert (stats["misses"], stats["hits"], stats["entries"], stats["evictions"]) == (4, 1, 2, 3)


def test_the_byte_budget_bounds_the_store(tiny_model_dir: Path) -> None:
    runner = _runner(tiny_model_dir, cache_budget_bytes=3 * 2**20)  # 3 entries of 1024 tokens at 1 KiB
    for token in range(30, 36):
        _answer(runner, [token] * 600, max_tokens=2)
    stats = runner.cache.snapshot()
    assert 0 < stats["bytes"] <= stats["budget_bytes"] and stats["entries"] == 3 and stats["evictions"] == 3


def test_an_entry_over_the_whole_budget_is_not_kept(tiny_model_dir: Path) -> None:
    runner = _runner(tiny_model_dir, cache_budget_bytes=0)
    _answer(runner, [40] * 20, max_tokens=2)
    assert runner.cache.snapshot()["entries"] == 0


def _score(last: Any, every: Any, candidate: list[int]) -> float:
    import torch

    rows = torch.cat([last[None], every[:-1]]).log_softmax(-1)
    return float(rows[torch.arange(len(candidate)), torch.tensor(candidate)].sum())


def test_forward_all_and_rewind_serve_a_choice_between_continuations(
    runner: ModelRunner, tiny_model_dir: Path
) -> None:
    import torch

    prompt = _prompt(runner, "Pick the next step: ", 200)
    candidates = [runner.tokenizer.encode(" run the tests"), runner.tokenizer.encode(" open the file")]
    with torch.inference_mode():
        last = runner._prefill(prompt)
        scores, rows = [], []
        for candidate in candidates:
            every = runner._forward_all(candidate)
            assert every.shape == (len(candidate), last.shape[-1])
            scores.append(_score(last, every, candidate))
            rows.append(every[-1])
            runner._rewind(len(prompt))
        assert torch.allclose(runner._forward(candidates[0]), rows[0], atol=1e-5)
        fresh = _runner(tiny_model_dir)
        expected = _score(fresh._prefill(prompt), fresh._forward_all(candidates[1]), candidates[1])
    assert scores[1] == pytest.approx(expected, abs=1e-4)  # scored after a rewind as from scratch


def test_common_prefix_finds_the_first_difference() -> None:
    long = list(range(5000))
    assert common_prefix(long, long[:3000] + [-1] + long[3001:]) == 3000
    assert common_prefix(long, long[:10]) == 10
    assert common_prefix([1, 2], [2, 1]) == 0
    assert common_prefix([], long) == 0


def test_a_prefix_copy_is_independent_of_its_source(runner: ModelRunner) -> None:
    import torch

    from components.engine._kv_layer import GrowingCache

    source = GrowingCache()
    keys = torch.randn(1, 2, 10, 4)
    source.update(keys, keys * 2, 0)
    copy = source.prefix_copy(6)
    copy.update(torch.zeros(1, 2, 3, 4), torch.zeros(1, 2, 3, 4), 0)
    assert copy.get_seq_length() == 9 and source.get_seq_length() == 10
    assert torch.equal(source.layers[0].keys, keys) and torch.equal(copy.layers[0].keys[..., :6, :], keys[..., :6, :])


def test_health_reports_the_caches_counters_and_the_flags_size_it(make_dev_engine: Callable[..., EngineServer]) -> None:
    import httpx

    engine = make_dev_engine(args=("--kv-cache-mib", "64", "--kv-cache-entries", "1"))
    messages = [{"role": "user", "content": "List the files in the workspace, then read README.md."}]
    body = {"model": engine.model, "messages": messages, "max_tokens": 4, "return_token_ids": True}
    first = httpx.post(engine.url + "/v1/chat/completions", json=body, timeout=60).json()
    answer = {"role": "assistant", "content": first["choices"][0]["message"]["content"]}
    follow = {**body, "messages": [*messages, answer, {"role": "user", "content": "Go on."}]}
    httpx.post(engine.url + "/v1/chat/completions", json=follow, timeout=60).raise_for_status()
    cache = httpx.get(engine.url + "/health").json()["kv_cache"]
    assert (cache["budget_bytes"], cache["max_entries"], cache["entries"]) == (64 * 2**20, 1, 1)
    assert (cache["misses"], cache["hits"]) == (1, 1) and cache["reused_tokens"] >= len(first["prompt_token_ids"])
    assert cache["hit_rate"] == 0.5
