"""The DataProto layout: what veRL expects, with the policy's tokens alone unmasked."""

from __future__ import annotations

import math

import pytest
import torch
import typer
from typer.testing import CliRunner

from components.core.config import AlgorithmConfig
from components.trainer.batch import build_batch
from components.trainer.cli import batch_app


def test_batch_passes_verls_no_padding_conversion_and_aligns_responses(two_turn_group):
    from verl.workers.utils.padding import left_right_2_no_padding, no_padding_2_padding

    calls, records = two_turn_group
    data, _ = build_batch(calls, records, AlgorithmConfig())

    packed = left_right_2_no_padding(data.batch.clone())

    lengths = data.batch["attention_mask"].sum(dim=1)
    assert packed["input_ids"].offsets().diff().tolist() == lengths.tolist()
    assert packed["input_ids"].values().tolist() == [1, 2, 3, 4, 5, 20, 21, 6, 7, 8, 1, 2, 9, 10]
    # veRL slices a packed model output back to responses shifted by one (position t
    # predicts t+1): fed the packed inputs, it must return each response's preceding token.
    shifted = no_padding_2_padding(packed["input_ids"].values(), packed)
    prompt_width = data.batch["prompts"].shape[1]
    expected = data.batch["input_ids"][:, prompt_width - 1 : -1]
    valid = data.batch["attention_mask"][:, prompt_width:].bool()
    assert torch.equal(shifted[valid], expected[valid])


def test_only_sampled_tokens_are_unmasked_and_reward_sits_on_the_last_one(two_turn_group):
    calls, records = two_turn_group
    data, stats = build_batch(calls, records, AlgorithmConfig(), pad_token_id=0)
    batch = data.batch

    assert batch["prompts"].tolist() == [[1, 2, 3], [0, 1, 2]]  # left-padded
    assert batch["responses"].tolist() == [[4, 5, 20, 21, 6, 7, 8], [9, 10, 0, 0, 0, 0, 0]]  # right-padded
    assert batch["response_mask"].tolist() == [[1, 1, 0, 0, 1, 1, 1], [1, 1, 0, 0, 0, 0, 0]]
    assert batch["rollout_log_probs"][0].tolist() == [-0.5, -0.5, 0.0, 0.0, -0.5, -0.5, -0.5]
    assert batch["token_level_scores"].tolist() == [[0, 0, 0, 0, 0, 0, 1.0], [0, 0, 0, 0, 0, 0, 0]]
    assert batch["position_ids"][1].tolist()[:5] == [0, 0, 1, 2, 3]
    assert list(data.non_tensor_batch["uid"]) == ["it0-t", "it0-t"]
    assert data.meta_info["temperature"] == 1.0
    assert (stats.rows, stats.merge_continuations, stats.merge_breaks) == (2, 1, 0)


def test_advantage_is_computed_per_rollout_and_broadcast_to_all_its_rows(call, record):
    # s0 is split into two rows by a break; it must still count once in the group's statistics.
    calls = {
        "t-s0": [call(0, [1, 2], [3]), call(1, [5, 6], [7])],
        "t-s1": [call(0, [1, 2], [4], session="t-s1")],
    }
    data, stats = build_batch(calls, [record("t-s0", 1.0), record("t-s1", 0.0)], AlgorithmConfig())

    assert stats.merge_breaks == 1 and stats.rows == 3
    metrics = stats.metrics()
    assert (metrics["batch/merge_breaks"], metrics["batch/merge_branches/subagent"], metrics["batch/merge_branches/rewrite"]) == (1, 0, 0)
    advantage = data.batch["advantages"][:, 0].tolist()
    # Two rollouts with rewards 1 and 0: mean 0.5, sample std 1/sqrt(2).
    expected = 0.5 / (1 / math.sqrt(2) + 1e-6)
    assert advantage == pytest.approx([expected, expected, -expected], rel=1e-5)
    assert torch.all(data.batch["advantages"][data.batch["response_mask"] == 0] == 0)


def test_groups_with_equal_rewards_and_unusable_rollouts_are_skipped_and_counted(call, record):
    calls = {rid: [call(0, [1, 2], [3], session=rid)] for rid in ("a-s0", "a-s1", "b-s0", "b-s1", "b-s2")}
    records = [
        record("a-s0", 1.0, task="a"),
        record("a-s1", 1.0, task="a"),  # all equal: no signal
        record("b-s0", 1.0, task="b"),
        record("b-s1", 0.0, task="b"),
        record("b-s2", 1.0, task="b", usable=False),
    ]

    data, stats = build_batch(calls, records, AlgorithmConfig())

    assert stats.skipped_groups == 1 and stats.unusable_rollouts == 1
    assert list(data.non_tensor_batch["rollout_id"]) == ["b-s0", "b-s1"]


def test_only_equal_groups_give_an_empty_batch(call, record):
    calls = {"t-s0": [call(0, [1], [2])], "t-s1": [call(0, [1], [3], session="t-s1")]}

    data, stats = build_batch(calls, [record("t-s0", 0.0), record("t-s1", 0.0)], AlgorithmConfig())

    assert len(data) == 0 and stats.skipped_groups == 1


def test_long_rows_are_split_and_only_calls_over_the_limits_alone_dropped(call, record):
    calls = {
        "t-s0": [call(0, [1, 2, 3, 4, 5, 9], [6])],  # its prompt alone is over the limit: dropped
        "t-s1": [call(0, [1, 2], [6, 7]), call(1, [1, 2, 6, 7, 30], [8, 9])],  # response 5 > 3: split
        "t-s2": [call(0, [1, 2], [6], session="t-s2")],
    }
    records = [record("t-s0", 1.0), record("t-s1", 0.0), record("t-s2", 1.0)]
    sampled = sum(len(c.completion_token_ids) for rollout in calls.values() for c in rollout)

    data, stats = build_batch(calls, records, AlgorithmConfig(max_prompt_tokens=5, max_response_tokens=3))

    assert (stats.dropped_rows, stats.dropped, stats.split_rows, stats.rows) == (1, {"prompt_too_long": 1}, 1, 3)
    assert list(data.non_tensor_batch["rollout_id"]) == ["t-s1", "t-s1", "t-s2"]
    assert data.batch["prompts"].tolist() == [[0, 0, 0, 1, 2], [1, 2, 6, 7, 30], [0, 0, 0, 1, 2]]
    assert data.batch["responses"].tolist() == [[6, 7], [8, 9], [6, 0]]
    assert stats.trained_tokens == int(data.batch["response_mask"].sum()) == sampled - 1  # the dropped call's
    # Both pieces of s1 carry its advantage and its reward on their last token.
    assert data.batch["advantages"][0, 0] == data.batch["advantages"][1, 0] < 0
    assert data.batch["token_level_scores"][:, 1].tolist() == [0.0, 0.0, 0.0] and data.batch["token_level_scores"][2, 0] == 1.0
    metrics = stats.metrics()
    assert metrics["batch/trained_tokens"] == stats.trained_tokens and metrics["batch/dropped/prompt_too_long"] == 1


def test_unset_row_limits_follow_the_engine_context(call, record):
    prompt = list(range(1, 61)) * 400  # a 24k-token harness prompt, over the old 8192 default
    calls = {"t-s0": [call(0, prompt, [6])], "t-s1": [call(0, prompt, [7], session="t-s1")]}

    data, stats = build_batch(calls, [record("t-s0", 1.0), record("t-s1", 0.0)], AlgorithmConfig())

    assert (stats.rows, stats.dropped_rows, stats.trained_tokens) == (2, 0, 2)
    _, small = build_batch(calls, [record("t-s0", 1.0), record("t-s1", 0.0)], AlgorithmConfig(), max_model_len=16384)
    assert small.dropped == {"prompt_too_long": 2} and small.trained_tokens == 0


def test_batch_build_cli_writes_a_file_dataproto_loads(tmp_path, two_turn_group):
    from verl import DataProto

    calls, records = two_turn_group
    trajectories = tmp_path / "trajectories"
    trajectories.mkdir()
    for rollout_id, session in calls.items():
        (trajectories / f"{rollout_id}.jsonl").write_text("".join(c.model_dump_json() + "\n" for c in session))
    rewards = tmp_path / "rewards.json"
    rewards.write_text('{"records": [' + ",".join(r.model_dump_json() for r in records) + '], "metrics": {}}')
    out = tmp_path / "out" / "batch.pt"

    app = typer.Typer()
    app.add_typer(batch_app, name="batch")  # mounted as the openforge CLI does

    result = CliRunner().invoke(
        app, ["batch", "build", "--trajectories", str(trajectories), "--rewards", str(rewards), "--out", str(out)],
        env={"OPENFORGE_CONFIG_YAML": ""},
    )

    assert result.exit_code == 0, result.output
    loaded = DataProto.load_from_disk(out)
    assert len(loaded) == 2
    assert loaded.batch["response_mask"].tolist()[0] == [1, 1, 0, 0, 1, 1, 1]
    assert list(loaded.non_tensor_batch["uid"]) == ["it0-t", "it0-t"]


def test_group_with_one_usable_rollout_left_is_masked_whole_and_counted(call, record):
    calls = {rid: [call(0, [1, 2], [3], session=rid)] for rid in ("a-s0", "b-s0", "b-s1", "c-s0")}
    records = [
        record("a-s0", 1.0, task="a"),
        record("a-s1", 0.0, task="a", usable=False),  # masked: a-s0 has no baseline left
        record("b-s0", 1.0, task="b"),
        record("b-s1", 0.0, task="b"),
        record("c-s0", 1.0, task="c"),  # sampled once: no signal, as before
    ]

    data, stats = build_batch(calls, records, AlgorithmConfig())

    assert list(data.non_tensor_batch["rollout_id"]) == ["b-s0", "b-s1"]
    assert stats.no_baseline_groups == 1 and stats.skipped_groups == 1
    assert stats.metrics()["batch/no_baseline_groups"] == 1 and stats.unusable_rollouts == 2


def test_a_forced_turn_is_masked_counted_and_the_reward_sits_before_it(call, record):
    calls = {
        "t-s0": [call(0, [1, 2, 3], [4, 5]), call(1, [1, 2, 3, 4, 5, 20], [6, 7], forced_from=0)],
        "t-s1": [call(0, [1, 2], [9, 10], session="t-s1")],
    }
    data, stats = build_batch(calls, [record("t-s0", 1.0), record("t-s1", 0.0)], AlgorithmConfig())

    assert data.batch["response_mask"][0].tolist() == [1, 1, 0, 0, 0]
    assert data.batch["token_level_scores"][0].tolist() == [0, 1.0, 0, 0, 0]
    assert data.batch["advantages"][0, 2:].abs().sum() == 0
    assert (stats.trained_tokens, stats.forced_tokens) == (4, 2)
    assert stats.metrics()["batch/forced_tokens"] == 2.0
