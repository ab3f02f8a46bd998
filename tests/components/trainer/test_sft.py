"""SFT on recorded sessions: the student comes to write what the recorded teacher wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from components.core.config import AlgorithmConfig
from components.core.trajectory import RecordedCall
from components.trainer.sft import SftError, held_out_shortfall, split_sessions, sft_update

FILES = ["notes.txt", "poem.md", "data.csv", "todo.list", "report.log", "words.txt"]
SETTINGS = AlgorithmConfig(learning_rate=3e-3, micro_batch_size=4)


@pytest.fixture(scope="module")
def student(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from components.engine.tiny_model import init_tiny_model

    return init_tiny_model(tmp_path_factory.mktemp("student"), seed=3)


def _teacher_turn(tokenizer, name: str) -> tuple[list[int], list[int]]:
    """(prompt ids, completion ids) of a teacher's `cat` call, rendered as the student's engine renders them."""
    from components.engine._chat_render import encode, render_chat, scripted_reply_ids
    from components.rollout.reference_harness import SHELL_TOOL

    messages = [{"role": "user", "content": f"Show me what {name} holds."}]
    prompt = encode(tokenizer, render_chat(tokenizer, messages, [SHELL_TOOL]))
    call = {"id": "c0", "type": "function", "function": {"name": "shell", "arguments": json.dumps({"command": f"cat {name}"})}}
    reply = scripted_reply_ids(tokenizer, messages, [SHELL_TOOL], {"role": "assistant", "content": "", "tool_calls": [call]})
    return prompt, reply


def _session(name: str, prompt: list[int], completion: list[int]) -> RecordedCall:
    # forced_from 0: a scripted teacher forced the turn; SFT imitates it all the same.
    return RecordedCall(
        session_id=name, call_index=0, api="chat.completions", request={}, prompt_token_ids=prompt,
        completion_token_ids=completion, completion_logprobs=[0.0] * len(completion), forced_from=0,
        sampling={"temperature": 0.7}, started_at=0.0, latency_ms=1.0, upstream_status=200,
    )  # fmt: skip


def _key(i: int) -> str:
    return f"0/task-{i // 2}-s{i % 2}"


def _log_p(model, prompt: list[int], completion: list[int]) -> float:
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([prompt + completion])).logits[0]
    logprobs = torch.log_softmax(logits.float(), dim=-1)
    return sum(float(logprobs[len(prompt) - 1 + i, t]) for i, t in enumerate(completion))


def test_sft_raises_the_students_log_probability_of_the_teachers_command(student: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(student)
    model = AutoModelForCausalLM.from_pretrained(student, dtype=torch.float32)
    # Keyed as recorded sessions are (<iteration>/<rollout id>): three tasks, two sessions each.
    turns = {_key(i): _teacher_turn(tokenizer, name) for i, name in enumerate(FILES)}
    sessions = {sid: [_session(sid, *turn)] for sid, turn in turns.items()}
    before = {sid: _log_p(model, *turn) for sid, turn in turns.items()}

    report = sft_update(
        model, sessions, SETTINGS, max_epochs=4, held_out=0.34, seed=0, pad_token_id=tokenizer.pad_token_id,
        max_model_len=4096,
    )  # fmt: skip

    after = {sid: _log_p(model, *turn) for sid, turn in turns.items()}
    held = report.held_out_sessions
    assert len(held) == 2 and report.sessions == 6 and report.rows == 4
    for sid in turns:
        # Trained sessions by a wide margin; the held-out ones share all but the file name.
        assert after[sid] - before[sid] > 20.0, (sid, before[sid], after[sid])
    assert report.target_tokens == sum(len(turns[s][1]) for s in turns if s not in held)  # forced tokens are targets
    assert [e.epoch for e in report.epochs] == [1, 2, 3, 4]
    best = min(report.epochs, key=lambda e: e.val_loss)
    assert report.chosen_epoch == best.epoch
    assert report.epochs[-1].token_accuracy > report.epochs[0].token_accuracy
    assert [m["sft/val_loss"] for m in report.metrics()] == [e.val_loss for e in report.epochs]


def test_the_kept_epoch_is_the_one_with_the_lowest_validation_loss(student: Path) -> None:
    """Epochs past the best are undone: the returned weights give the chosen epoch's validation loss."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from components.trainer.batch import row_tensors
    from components.trainer.sft import _pass, sft_rows

    tokenizer = AutoTokenizer.from_pretrained(student)
    model = AutoModelForCausalLM.from_pretrained(student, dtype=torch.float32)
    sessions = {_key(i): [_session(_key(i), *_teacher_turn(tokenizer, n))] for i, n in enumerate(FILES)}
    report = sft_update(
        model, sessions, AlgorithmConfig(learning_rate=3e-2, micro_batch_size=4), max_epochs=5, held_out=0.34,
        seed=1, pad_token_id=tokenizer.pad_token_id, max_model_len=4096,
    )  # fmt: skip
    held = row_tensors(sft_rows({s: sessions[s] for s in report.held_out_sessions}, (4096, 4096)), tokenizer.pad_token_id)
    with torch.no_grad():
        val_loss, _ = _pass(model.eval(), held, SETTINGS, None)
    assert val_loss == pytest.approx(report.epochs[report.chosen_epoch - 1].val_loss, rel=1e-4)


def test_sessions_split_whole_reproducibly_with_something_on_each_side() -> None:
    ids = [f"0/task-{i}-s{sample}" for i in range(5) for sample in range(2)]
    train, held = split_sessions(ids, 0.2, seed=0)
    assert len(held) == 2 and not set(train) & set(held) and sorted(train + held) == sorted(ids)
    assert split_sessions(list(reversed(ids)), 0.2, seed=0) == (train, held)
    assert split_sessions(ids, 0.2, seed=1) != (train, held)
    assert split_sessions(ids[:2], 0.01, seed=0)[1] != []  # a held-out share asks for one at least
    assert split_sessions(ids, 0.0, seed=0) == (sorted(ids), [])


@pytest.mark.parametrize("seed", range(5))
def test_every_task_keeps_a_training_session(seed: int) -> None:
    ids = ["0/one-s0", "0/two-s0", "1/two-s1", "0/three-s0", "0/three-s1", "1/three-s2"]
    train, held = split_sessions(ids, 0.5, seed=seed)
    assert len(held) == 3
    assert {sid.split("/")[1].rsplit("-", 1)[0] for sid in train} == {"one", "two", "three"}
    # One session a task: the share cannot be met, but something is still held out.
    assert len(split_sessions(["0/a-s0", "0/b-s0", "0/c-s0"], 0.5, seed=seed)[1]) == 1


def test_a_held_out_share_cut_to_half_or_less_is_named_with_the_fix() -> None:
    one_each = [f"0/task{i}-s0" for i in range(82)]
    _, held = split_sessions(one_each, 0.2, seed=0)
    warning = held_out_shortfall(len(one_each), len(held), 0.2)
    assert len(held) == 1 and warning is not None
    assert "held out 1 of 82 sessions" in warning and "asks for 16" in warning and "--samples" in warning
    assert held_out_shortfall(80, 16, 0.2) is None and held_out_shortfall(80, 9, 0.2) is None  # met, or near it
    assert held_out_shortfall(80, 0, 0.0) is None  # none asked for


def test_nothing_to_learn_from_is_refused_with_the_fix(student: Path) -> None:
    with pytest.raises(SftError, match="record some first"):
        sft_update(object(), {}, SETTINGS, max_epochs=1, held_out=0.2, seed=0, pad_token_id=0, max_model_len=64)


def test_the_loss_is_verls_sft_loss_the_mean_nll_of_the_target_tokens() -> None:
    from components.trainer.sft import _sft_loss

    log_prob = torch.tensor([[-1.0, -2.0, -9.0], [-0.5, -7.0, -7.0]])
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    assert float(_sft_loss(log_prob, mask)) == pytest.approx((1.0 + 2.0 + 0.5) / 3)
