"""A teacher recorded as text, through the real harness and proxy: tokenized with the student's
chat template it is what the student's engine sees, and SFT on it teaches the student its turns."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import pytest
import torch

from components.core.config import AlgorithmConfig, ExperimentConfig
from components.core.outcome import RolloutStatus
from components.core.services import free_port, openforge_argv, start_service
from components.core.trajectory import read_session
from components.rollout.runner import run_rollout
from components.trainer.sft import sft_update
from components.trainer.text_calls import TextCallError, with_student_tokens

REPO = Path(__file__).resolve().parents[3]
TASK = REPO / "examples" / "tasks" / "quickstart" / "write-hello"
COMMAND = "printf hello > hello.txt"
# The teacher: a scripted engine on another checkpoint, which answers with text only when asked so.
SCRIPT = {"turns": [{"tool_calls": [{"name": "shell", "arguments": {"command": COMMAND}}]}, {"content": "hello.txt is written"}]}
KEY = "teacher-key-0123456789abcdef"


@pytest.fixture(scope="module")
def student(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from components.engine.tiny_model import init_tiny_model

    return init_tiny_model(tmp_path_factory.mktemp("student"), seed=11)


@pytest.fixture(scope="module")
def teacher(make_dev_engine, student: Path, tmp_path_factory: pytest.TempPathFactory):
    from components.engine.tiny_model import init_tiny_model

    # Same tokenizer as the student (every tiny seed shares it), other weights.
    model = init_tiny_model(tmp_path_factory.mktemp("teacher"), seed=12)
    return make_dev_engine(SCRIPT, model_dir=model)


@contextmanager
def _proxy(upstream: str, out: Path, *flags: str, env: dict[str, str] | None = None):
    port = free_port()
    argv = openforge_argv("proxy", "--upstream", upstream, "--out", str(out), "--port", str(port), *flags)
    with start_service("proxy", argv, port=port, log_dir=out.parent / "logs", env={"PYTHONPATH": str(REPO), **(env or {})}) as proxy:
        yield proxy


def _record(proxy_url: str, out: Path, rollout_id: str):
    config = ExperimentConfig.model_validate(
        {"name": "teach", "tasks": {"source": "unused"}, "harness": {"max_turns": 4, "max_tokens": 256}, "rollout": {"time_limit_s": 60}}
    )
    outcome = run_rollout(
        config, iteration=0, rollout_id=rollout_id, task_dir=TASK, proxy_url=proxy_url, trajectory=out / f"{rollout_id}.jsonl",
        out_dir=out.parent / f"out-{rollout_id}",
    )  # fmt: skip
    assert outcome.status is RolloutStatus.OK and outcome.passed, outcome.details
    return read_session(out / f"{rollout_id}.jsonl")


@pytest.mark.slow
def test_a_text_only_teacher_tokenized_is_what_the_students_engine_sees_and_sft_learns_it(
    teacher, student: Path, tmp_path: Path
) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    # The same harness conversation, recorded twice: token for token, and from the teacher as text.
    with _proxy(teacher.url, tmp_path / "ids") as proxy:
        with_ids = _record(proxy.url, tmp_path / "ids", "write-hello-s0")
    with _proxy(teacher.url, tmp_path / "text", "--teacher", env={"OPENFORGE_UPSTREAM_API_KEY": KEY}) as proxy:
        as_text = _record(proxy.url, tmp_path / "text", "write-hello-s1")
        log = proxy.log_tail()

    assert len(with_ids) == len(as_text) == 2
    assert all(c.text_only and not c.completion_token_ids and not c.prompt_token_ids and not c.ok for c in as_text)
    tokenizer = AutoTokenizer.from_pretrained(student)
    tokenized = [with_student_tokens(c, tokenizer) for c in as_text]
    for engine_saw, ours in zip(with_ids, tokenized, strict=True):
        assert ours.prompt_token_ids == engine_saw.prompt_token_ids
        assert ours.completion_token_ids == engine_saw.completion_token_ids
    # The key the proxy sends the teacher is written nowhere.
    for path in (tmp_path / "text").rglob("*"):
        assert not path.is_file() or KEY not in path.read_text(errors="replace"), path
    assert KEY not in log

    # SFT on the text-only session raises the student's log-probability of the teacher's command turn.
    model = AutoModelForCausalLM.from_pretrained(student, dtype=torch.float32)
    first = tokenized[0]

    def log_p() -> float:
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([first.prompt_token_ids + first.completion_token_ids])).logits[0]
        logprobs = torch.log_softmax(logits.float(), dim=-1)
        start = len(first.prompt_token_ids) - 1
        return sum(float(logprobs[start + i, t]) for i, t in enumerate(first.completion_token_ids))

    before = log_p()
    sft_update(
        model, {"write-hello-s1": tokenized}, AlgorithmConfig(learning_rate=3e-3), max_epochs=3, held_out=0.0, seed=0,
        pad_token_id=tokenizer.pad_token_id, max_model_len=8192,
    )  # fmt: skip
    assert log_p() - before > 20.0, (before, log_p())


def test_text_calls_of_another_api_are_refused_naming_the_ones_that_tokenize(tmp_path: Path) -> None:
    from components.core.trajectory import RecordedCall

    call = RecordedCall(
        session_id="s", call_index=0, api="completions", request={}, text_only=True, started_at=0.0,
        latency_ms=1.0, upstream_status=200,
    )  # fmt: skip
    with pytest.raises(TextCallError, match="only chat-completions, Anthropic Messages and Responses calls"):
        with_student_tokens(call, tokenizer=None)


def test_a_responses_output_that_is_not_one_assistant_turn_is_refused_naming_the_call() -> None:
    from components.core.trajectory import RecordedCall

    output = [{"type": "function_call_output", "call_id": "c1", "output": "done"}]
    call = RecordedCall(
        session_id="s", call_index=3, api="responses", request={}, response={"output": output}, text_only=True,
        started_at=0.0, latency_ms=1.0, upstream_status=200,
    )  # fmt: skip
    with pytest.raises(TextCallError, match="session s call 3's response output is not one assistant turn"):
        with_student_tokens(call, tokenizer=None)


def _messages_session(proxy_url: str, session: str) -> None:
    """Two Messages calls as Claude Code makes them: the task, then the tool's result."""
    import anthropic

    client = anthropic.Anthropic(base_url=f"{proxy_url}/s/{session}", api_key="unused", max_retries=0, timeout=60)
    tools = [{"name": "shell", "description": "Run a shell command.",
              "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}]  # fmt: skip
    messages: list[dict] = [{"role": "user", "content": "Write hello to hello.txt."}]
    first = client.messages.create(model="m", max_tokens=256, system="You run commands.", tools=tools, messages=messages)
    (use,) = [block for block in first.content if block.type == "tool_use"]
    messages += [
        {"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in first.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": ""}]},
    ]
    client.messages.create(model="m", max_tokens=256, system="You run commands.", tools=tools, messages=messages)


def test_a_text_only_teacher_behind_the_messages_surface_tokenizes_as_the_students_engine_sees_it(
    teacher, student: Path, tmp_path: Path
) -> None:
    """What Claude Code's recordings hold: the request translated to chat, the answer a Message."""
    _assert_recorded_both_ways_alike(_messages_session, "anthropic.messages", teacher, student, tmp_path)


def _assert_recorded_both_ways_alike(session, api: str, teacher, student: Path, tmp_path: Path) -> None:
    """``session`` recorded token for token and from the teacher as text: tokenized with the
    student's template, the text-only calls hold the ids the student's engine saw and wrote."""
    from transformers import AutoTokenizer

    for name, flags in (("ids", ()), ("text", ("--teacher",))):
        with _proxy(teacher.url, tmp_path / name, *flags) as proxy:
            session(proxy.url, f"write-hello-{name}")
    with_ids = read_session(tmp_path / "ids" / "write-hello-ids.jsonl")
    as_text = read_session(tmp_path / "text" / "write-hello-text.jsonl")

    assert [c.api for c in as_text] == [api] * 2 and all(c.text_only for c in as_text)
    tokenizer = AutoTokenizer.from_pretrained(student)
    for engine_saw, ours in zip(with_ids, (with_student_tokens(c, tokenizer) for c in as_text), strict=True):
        assert ours.prompt_token_ids == engine_saw.prompt_token_ids
        assert ours.completion_token_ids == engine_saw.completion_token_ids


def _responses_session(proxy_url: str, session: str) -> None:
    """Two Responses calls as Codex makes them: the task streamed, then the tool's output replayed with the items."""
    import openai

    client = openai.OpenAI(base_url=f"{proxy_url}/s/{session}/v1", api_key="unused", max_retries=0, timeout=60)
    tools = [{"type": "function", "name": "shell", "description": "Run a shell command.",
              "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}]  # fmt: skip
    items: list[dict] = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Write hello to hello.txt."}]}]
    events = client.responses.create(model="m", instructions="You run commands.", input=items, tools=tools, stream=True)
    (first,) = [event.response for event in events if event.type == "response.completed"]
    (call,) = [item for item in first.output if item.type == "function_call"]
    items += [item.model_dump(exclude_none=True) for item in first.output]
    items.append({"type": "function_call_output", "call_id": call.call_id, "output": ""})
    client.responses.create(model="m", instructions="You run commands.", input=items, tools=tools)


def test_a_text_only_teacher_behind_the_responses_surface_tokenizes_as_the_students_engine_sees_it(
    teacher, student: Path, tmp_path: Path
) -> None:
    """What Codex's recordings hold: the request translated to chat, the answer a Response (streamed or not)."""
    _assert_recorded_both_ways_alike(_responses_session, "responses", teacher, student, tmp_path)
