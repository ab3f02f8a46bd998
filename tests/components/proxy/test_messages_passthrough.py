"""A Messages teacher (`--teacher --teacher-api messages`): Claude Code's calls pass through as sent.

The teacher here is a real Messages server on loopback: another proxy, without --teacher, in
front of a scripted dev engine. It records its calls token for token, so the passed-through
sessions can be checked against what the student's engine saw, and it holds a per-session
secret, so it answers only if the teacher's key arrived as x-api-key.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from components.core.services import free_port, openforge_argv, start_service
from components.core.trajectory import read_session
from components.proxy.auth import SECRET_ENV, session_token
from components.proxy.sessions import DEFAULT_SESSION
from components.trainer.text_calls import with_student_tokens

REPO = Path(__file__).resolve().parents[3]
COMMAND = "printf hello > hello.txt"
SCRIPT = {"turns": [{"tool_calls": [{"name": "shell", "arguments": {"command": COMMAND}}]}, {"content": "hello.txt is written"}]}
SESSION = "write-hello-s0"
SECRET = "teacher-side-secret-0123456789"
TOOLS = [{"name": "shell", "description": "Run a shell command.",
          "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}]  # fmt: skip


@contextmanager
def _proxy(upstream: str, out: Path, *flags: str, env: dict[str, str] | None = None):
    port = free_port()
    argv = openforge_argv("proxy", "--upstream", upstream, "--out", str(out), "--port", str(port), *flags)
    with start_service(f"proxy-{out.name}", argv, port=port, log_dir=out.parent / "logs", env={"PYTHONPATH": str(REPO), **(env or {})}) as proxy:
        yield proxy


@pytest.fixture
def proxies(make_dev_engine, tmp_path: Path):
    """(the recording proxy the harness calls, the teacher's folders): teacher = proxy + engine."""
    engine = make_dev_engine(SCRIPT)
    # The teacher is called at /v1/messages, as Anthropic's API is: its proxy files the calls under its default session.
    key = session_token(SECRET.encode(), DEFAULT_SESSION)
    with _proxy(engine.url, tmp_path / "teacher", env={SECRET_ENV: SECRET}) as teacher, _proxy(
        teacher.url, tmp_path / "recorded", "--teacher", "--teacher-api", "messages", "--served-model", "teacher-model",
        env={"OPENFORGE_UPSTREAM_API_KEY": key},
    ) as recording:  # fmt: skip
        yield recording, tmp_path, key


def test_messages_pass_through_to_the_teacher_and_record_as_text_the_student_tokenizes(proxies, tiny_model_dir: Path) -> None:
    import anthropic
    from transformers import AutoTokenizer

    recording, tmp_path, key = proxies
    client = anthropic.Anthropic(base_url=f"{recording.url}/s/{SESSION}", api_key="harness-key", max_retries=0, timeout=60)
    messages: list[dict] = [{"role": "user", "content": "Write hello to hello.txt."}]
    first = client.messages.create(model="claude", max_tokens=256, system="You run commands.", tools=TOOLS, messages=messages)
    (use,) = [block for block in first.content if block.type == "tool_use"]
    messages += [
        {"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in first.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": ""}]},
    ]
    with client.messages.stream(model="claude", max_tokens=256, system="You run commands.", tools=TOOLS, messages=messages) as stream:
        second = stream.get_final_message()

    teacher_saw = read_session(tmp_path / "teacher" / f"{DEFAULT_SESSION}.jsonl")
    recorded = read_session(tmp_path / "recorded" / f"{SESSION}.jsonl")
    # The teacher's Messages came back as it sent them; the harness's key stayed behind.
    assert first.id == teacher_saw[0].response["id"] and second.id == teacher_saw[1].response["id"]
    assert use.input == {"command": COMMAND} and second.content[0].text == "hello.txt is written"
    assert [c.request["model"] for c in teacher_saw] == ["teacher-model"] * 2 and teacher_saw[1].stream
    # Recorded as text: the Message as the teacher sent it (a stream's reassembled), no token ids.
    assert [c.api for c in recorded] == ["anthropic.messages"] * 2 and all(c.text_only and not c.prompt_token_ids for c in recorded)
    assert recorded[0].response == teacher_saw[0].response
    assert recorded[1].response["content"] == teacher_saw[1].response["content"]
    assert recorded[1].response["stop_reason"] == "end_turn" and recorded[1].finish_reason == "stop"
    assert recorded[1].response["usage"]["output_tokens"] == teacher_saw[1].response["usage"]["output_tokens"] > 0
    # SFT sees what the student's engine saw for the same conversation.
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)  # the engine's model
    for engine_saw, ours in zip(teacher_saw, (with_student_tokens(c, tokenizer) for c in recorded), strict=True):
        assert ours.prompt_token_ids == engine_saw.prompt_token_ids
        assert ours.completion_token_ids == engine_saw.completion_token_ids
    for path in (tmp_path / "recorded").rglob("*"):
        assert not path.is_file() or key not in path.read_text(errors="replace"), path
    assert key not in recording.log_tail()


def test_a_call_of_another_api_is_refused_saying_what_to_record_instead(proxies) -> None:
    recording, tmp_path, _ = proxies
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    request = urllib.request.Request(
        f"{recording.url}/s/{SESSION}/v1/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 400
    assert "record a harness that speaks Messages" in refused.value.read().decode()
    assert not (tmp_path / "teacher" / f"{DEFAULT_SESSION}.jsonl").exists()  # the teacher never saw it

