"""The dev engine as a teacher: it plays a book's reference turns, erring at the book's rate,
and, as vLLM with ``VLLM_API_KEY``, answers only calls that carry its key."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests._servers import EngineServer
from tests.components.engine.conftest import openai_client

from components.rollout.reference_harness import SHELL_TOOL

PROMPT = "Create a file named hello.txt containing exactly: hello"
RIGHT, WRONG = "echo hello > hello.txt", "echo howdy > hello.txt"
KEY = "sk-reference-teacher-test"
ERROR_RATE = 0.25


@pytest.fixture(scope="module")
def teacher(make_dev_engine: Callable[..., EngineServer], tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngineServer]:
    turns = [[{"tool_calls": [{"shell": RIGHT}]}, {"tool_calls": [{"shell": WRONG}]}]]
    path = tmp_path_factory.mktemp("teacher") / "book.json"
    path.write_text(json.dumps({"tasks": [{"task_id": "hello", "match": PROMPT, "turns": turns}], "error_rate": ERROR_RATE}))
    with pytest.MonkeyPatch.context() as env:
        env.setenv("VLLM_API_KEY", KEY)
        yield make_dev_engine(args=("--choices", str(path)))


def test_the_reference_is_played_unless_the_teacher_errs_at_its_rate(teacher: EngineServer) -> None:
    client = openai_client(teacher).with_options(api_key=KEY)
    drawn: Counter[str] = Counter()
    for seed in range(40):
        resp = client.chat.completions.create(
            model=teacher.model, messages=[{"role": "user", "content": PROMPT}], tools=[SHELL_TOOL], seed=seed
        )
        drawn[json.loads(resp.choices[0].message.tool_calls[0].function.arguments)["command"]] += 1
    # The policy's own odds between two same-length commands are near even; the teacher's are 3:1 (10 of 40 expected).
    assert set(drawn) == {RIGHT, WRONG} and 3 <= drawn[WRONG] <= 18, drawn


def test_calls_without_the_key_are_refused_and_the_health_probe_is_not(teacher: EngineServer) -> None:
    body = {"model": teacher.model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        refused = httpx.post(f"{teacher.base_url}/chat/completions", json=body, headers=headers, timeout=30)
        assert refused.status_code == 401 and refused.json()["error"]["message"] == "Unauthorized"
    assert httpx.get(f"{teacher.url}/health", timeout=30).status_code == 200
    ok = httpx.post(f"{teacher.base_url}/chat/completions", json=body, headers={"Authorization": f"Bearer {KEY}"}, timeout=30)
    assert ok.status_code == 200, ok.text
