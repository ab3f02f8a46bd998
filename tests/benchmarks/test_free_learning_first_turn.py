"""benchmarks/free_learning/first_turn.py: GRPO offline on each task's first turn."""

from __future__ import annotations

import pytest
import torch

from benchmarks.free_learning.first_turn import FirstTurn, command_of, first_turns, grpo_batch, same_command, train
from components.core.config import AlgorithmConfig
from components.core.trajectory import RecordedCall


def _model() -> torch.nn.Module:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=16, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=1, max_position_embeddings=64, tie_word_embeddings=True, pad_token_id=0,
        eos_token_id=1, bos_token_id=0,
    )  # fmt: skip
    return Qwen2ForCausalLM(config).float().eval()


def _call(session: str, index: int, prompt: list[int]) -> RecordedCall:
    return RecordedCall(
        session_id=session, call_index=index, api="chat.completions", request={}, prompt_token_ids=prompt,
        completion_token_ids=[9], completion_logprobs=[-0.1], started_at=0.0, latency_ms=1.0, upstream_status=200,
    )  # fmt: skip


def test_the_command_is_read_from_the_first_hermes_tool_call_whatever_its_spacing() -> None:
    call = '<tool_call>\n{"name": "bash", "arguments": {"command": "head -n 1 letters-24.txt > line.txt"}}\n</tool_call>'
    as_string = '<tool_call>{"name": "bash", "arguments": "{\\"command\\": \\"wc -w  notes.txt\\"}"}</tool_call>'

    assert command_of(call) == "head -n 1 letters-24.txt > line.txt"
    assert command_of(as_string) == "wc -w  notes.txt"
    assert same_command(command_of(as_string), "wc -w notes.txt")
    assert not same_command(command_of(call), "head -n 1 memo-24.txt > line.txt")
    for broken in ("head -n 1 letters-24.txt", '<tool_call>{"name": "bash", "arguments": {"command": </tool_call>',
                   '<tool_call>{"name": "bash", "arguments": {"cmd": "ls"}}</tool_call>'):  # fmt: skip
        assert command_of(broken) is None
        assert not same_command(command_of(broken), "ls")


def test_each_task_takes_its_first_calls_prompt_and_a_task_never_recorded_is_refused() -> None:
    sessions = {
        "0/sort-s1": [_call("sort-s1", 1, [2, 3, 4, 9, 5]), _call("sort-s1", 0, [2, 3, 4])],
        "0/count-s0": [_call("count-s0", 0, [2, 6])],
    }

    turns = first_turns(sessions, {"count": "wc -l f", "sort": "sort f"})

    assert turns == [FirstTurn("count", [2, 6], "wc -l f"), FirstTurn("sort", [2, 3, 4], "sort f")]
    with pytest.raises(SystemExit, match="no recorded session of head"):
        first_turns(sessions, {"count": "wc -l f", "head": "head f"})


def test_only_groups_with_a_signal_are_trained_with_grpo_advantages() -> None:
    algorithm = AlgorithmConfig()
    mixed, flat = FirstTurn("a", [2, 3], "x"), FirstTurn("b", [2, 4], "y")
    groups = [
        (mixed, [([5, 1], [-0.1, -0.2]), ([6, 1], [-0.3, -0.4])], [1.0, 0.0]),
        (flat, [([5, 1], [-0.1, -0.2]), ([7, 7, 1], [-0.3, -0.4, -0.5])], [0.0, 0.0]),
    ]

    data = grpo_batch(groups, algorithm, pad=0)

    assert data.batch["responses"].tolist() == [[5, 1], [6, 1]]
    advantages = data.batch["advantages"]
    assert advantages[0, 0] > 0 > advantages[1, 0] and advantages[0, 0] == advantages[0, 1]
    assert torch.allclose(data.batch["rollout_log_probs"], torch.tensor([[-0.1, -0.2], [-0.3, -0.4]]))
    assert grpo_batch(groups[1:], algorithm, pad=0) is None


def test_rewarding_a_first_token_raises_how_often_it_is_written_and_the_control_does_not() -> None:
    turns = [FirstTurn("a", [2, 3, 4], "unused"), FirstTurn("b", [2, 5, 4], "unused")]
    algorithm = AlgorithmConfig(learning_rate=3e-2, epochs=2, temperature=1.0)

    def grade(task_id: str, ids: list[int]) -> float:
        return float(ids[:1] == [7])

    lines: list[str] = []

    def run(shuffle: bool) -> list[float]:
        curve = train(_model(), turns, algorithm, grade, iterations=4, group=8, eval_samples=32, max_new_tokens=2,
                      stop={1}, pad=0, seed=0, shuffle=shuffle, log=lines.append)  # fmt: skip
        return [point.rate for point in curve]

    learned, control = run(False), run(True)
    # Each update says how far PPO's clip held it, so a reader can tell the clip from the learning rate.
    assert len(lines) == 8 and all("update: clip_frac" in line or "no update" in line for line in lines)
    assert any("update: clip_frac" in line for line in lines)

    assert len(learned) == 5 and learned[0] == control[0] < 0.2  # 1 token in 16, untrained
    assert learned[-1] > learned[0] + 0.3
    assert control[-1] < learned[-1] - 0.2
