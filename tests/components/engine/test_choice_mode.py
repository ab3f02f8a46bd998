"""Choice mode: each turn the engine draws one of the task's candidate turns by its
probability under the model, and answers with that candidate's tokens and real logprobs."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests._servers import EngineServer
from tests.components.engine.conftest import openai_client

from components.core.choices import CHOICE_HEADER, DRAWN, FORCED, FORCED_FROM_HEADER, MISS
from components.rollout.reference_harness import SHELL_TOOL  # a shell tool with a `command`, as harnesses declare

PROMPT = "Create a file named hello.txt containing exactly: hello"
RIGHT = "echo hello > hello.txt"
WRONG = "echo howdy > hello.txt"  # as many tokens as RIGHT: a random model then gives both similar odds
BOOK = {
    "tasks": [
        {
            "task_id": "write-hello",
            "match": PROMPT,
            "turns": [
                [{"tool_calls": [{"shell": RIGHT}]}, {"tool_calls": [{"shell": WRONG}]}],
                [{"content": "Done."}],
            ],
        }
    ]
}
TRACE = {"return_token_ids": True}


@pytest.fixture(scope="module")
def chooser(make_dev_engine: Callable[..., EngineServer], tmp_path_factory: pytest.TempPathFactory) -> EngineServer:
    path = tmp_path_factory.mktemp("choices") / "choices.json"
    path.write_text(json.dumps(BOOK))
    return make_dev_engine(args=("--choices", str(path)))


def _ask(engine: EngineServer, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
    return openai_client(engine).chat.completions.create(
        model=engine.model, messages=messages, tools=[SHELL_TOOL], logprobs=True, extra_body=TRACE, **kwargs
    )


def _command(resp: Any) -> str | None:
    calls = resp.choices[0].message.tool_calls
    return json.loads(calls[0].function.arguments)["command"] if calls else None


def test_draws_follow_the_candidates_probabilities_and_carry_real_logprobs(
    chooser: EngineServer, rescore: Callable[[list[int], list[int]], list[float]]
) -> None:
    user = [{"role": "user", "content": f"Please help. {PROMPT}"}]
    seen: dict[str, Any] = {}
    counts: Counter[str] = Counter()
    for seed in range(40):
        resp = _ask(chooser, user, seed=seed)
        command = _command(resp)
        assert command in (RIGHT, WRONG), f"the answer is not a candidate: {resp.choices[0].message}"
        counts[command] += 1
        choice = resp.choices[0]
        engine = [entry.logprob for entry in choice.logprobs.content]
        expected = rescore(resp.prompt_token_ids, choice.token_ids)
        assert max(abs(a - b) for a, b in zip(engine, expected, strict=True)) < 1e-4
        seen[command] = (resp.prompt_token_ids, choice.token_ids)
    assert set(seen) == {RIGHT, WRONG}, f"one candidate was never drawn in 40 tries: {counts}"
    # The draw probability is the candidates' sequence probabilities, renormalised.
    total = {c: sum(rescore(*seen[c])) for c in seen}
    p_right = 1 / (1 + math.exp(total[WRONG] - total[RIGHT]))
    sigma = math.sqrt(p_right * (1 - p_right) / 40)
    assert abs(counts[RIGHT] / 40 - p_right) < 4 * sigma + 0.02, (counts, p_right)


def test_greedy_choice_takes_the_more_probable_candidate(
    chooser: EngineServer, rescore: Callable[[list[int], list[int]], list[float]]
) -> None:
    user = [{"role": "user", "content": PROMPT}]
    drawn = {}
    for seed in range(30):
        resp = _ask(chooser, user, seed=seed)
        drawn.setdefault(_command(resp), (resp.prompt_token_ids, resp.choices[0].token_ids))
        if len(drawn) == 2:
            break
    assert len(drawn) == 2
    best = max(drawn, key=lambda c: sum(rescore(*drawn[c])))
    assert {_command(_ask(chooser, user, temperature=0, seed=s)) for s in range(3)} == {best}


def test_later_turns_follow_the_book_and_unknown_conversations_sample_freely(chooser: EngineServer) -> None:
    after = [
        {"role": "user", "content": PROMPT},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "shell", "arguments": json.dumps({"command": RIGHT})}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": ""},
    ]
    resp = _ask(chooser, after, seed=1)
    assert resp.choices[0].message.content == "Done." and resp.choices[0].finish_reason == "stop"
    other = _ask(chooser, [{"role": "user", "content": "Something else entirely"}], seed=1, max_tokens=8)
    assert other.choices[0].finish_reason == "length"  # the random model rambles: no candidate was forced


def _marks(engine: EngineServer, messages: list[dict[str, Any]]) -> tuple[str | None, str | None]:
    raw = openai_client(engine).chat.completions.with_raw_response.create(
        model=engine.model, messages=messages, tools=[SHELL_TOOL], seed=2, max_tokens=8, extra_body=TRACE
    )
    return raw.headers.get(CHOICE_HEADER), raw.headers.get(FORCED_FROM_HEADER)


def test_answers_say_whether_the_turn_was_drawn_forced_or_missed(chooser: EngineServer) -> None:
    """The proxy records these marks; training masks forced tokens by them, never by the book."""
    assert _marks(chooser, [{"role": "user", "content": PROMPT}]) == (DRAWN, None)
    after = [
        {"role": "user", "content": PROMPT},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "go on"},
    ]
    assert _marks(chooser, after) == (FORCED, "0")  # turn 1 has one candidate
    assert _marks(chooser, [{"role": "user", "content": "Something else entirely"}]) == (MISS, None)


def test_token_prompts_are_matched_like_chats(chooser: EngineServer) -> None:
    """The recording proxy sends rendered prompts as token ids; the book applies the same."""
    import urllib.request

    chat = _ask(chooser, [{"role": "user", "content": PROMPT}], seed=3)
    body = {"model": chooser.model, "prompt": chat.prompt_token_ids, "max_tokens": 200, "seed": 5, **TRACE}
    request = urllib.request.Request(
        chooser.url + "/v1/completions", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        answer = json.loads(response.read())["choices"][0]
    assert answer["finish_reason"] == "stop"
    assert RIGHT in answer["text"] or WRONG in answer["text"], answer["text"]


def test_a_book_and_a_script_together_are_refused(tiny_model_dir: Path, tmp_path: Path) -> None:
    from components.core.choices import ChoiceBook
    from components.engine._script import Script
    from components.engine.server import EngineStartError, build_app

    with pytest.raises(EngineStartError, match="exclude each other"):
        build_app(tiny_model_dir, script=Script(turns=[]), choices=ChoiceBook.model_validate(BOOK))


def test_draws_are_logged_even_where_an_earlier_import_configured_logging() -> None:
    """A warm-started engine is a fork of a process that imported veRL, whose core_algos
    sets the root logger to WARNING: the engine's INFO lines (each draw) must still reach its log."""
    import subprocess
    import sys

    code = (
        "import logging, verl.trainer.ppo.core_algos\n"
        "from components.engine.server import log_to_stderr\n"
        "log_to_stderr()\n"
        "logging.getLogger('openforge.engine.choice').info('choice t turn 0: drew 1 of 2')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    assert "openforge.engine.choice choice t turn 0: drew 1 of 2" in result.stderr, result.stderr[-2000:]
