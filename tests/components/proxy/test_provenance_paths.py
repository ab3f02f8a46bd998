"""Which path each call takes with token provenance, and why, as its record says (fake engine).

The fake engine serves chat completions only (no ``/tokenize``), so every call here stays
on the chat path; what is checked is the reason recorded, for each case that must not
be spliced.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import httpx
import openai

from components.core import read_session
from components.proxy.provenance._memory import EDITED_HISTORY, UNKNOWN_ANSWER
from components.proxy.provenance._route import FIRST_TURN

USER = {"role": "user", "content": "hi"}


def _call(proxy: str, messages: list[dict[str, Any]], **extra: Any) -> Any:
    client = openai.OpenAI(base_url=f"{proxy}/s/s1/v1", api_key="unused", max_retries=0)
    return client.chat.completions.create(model="m", messages=messages, **extra).choices[0].message


def _echo(message: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": message.content}


def _provenance(tmp_path: Path) -> list[Any]:
    return [call.provenance for call in read_session(tmp_path / "out" / "s1.jsonl")]


def test_calls_that_cannot_be_spliced_take_the_chat_path_and_say_why(
    fake_engine, make_proxy: Callable[..., str], tmp_path: Path
) -> None:
    proxy = make_proxy(fake_engine.url, training=True)  # provenance is on in training mode
    answer = _echo(_call(proxy, [USER]))
    _call(proxy, [USER, {"role": "assistant", "content": "never said"}, USER])
    _call(proxy, [{"role": "user", "content": "edited"}, answer, USER])
    _call(proxy, [USER, answer, USER], tools=[{"type": "function", "function": {"name": "f"}}], tool_choice="required")
    _call(proxy, [USER, answer, USER])  # the answer, echoed as it was sampled: on to the token path...
    first, unknown, edited, constrained, echoed = _provenance(tmp_path)
    assert (first.path, first.reason) == ("chat", FIRST_TURN)
    assert (unknown.path, unknown.reason) == ("chat", UNKNOWN_ANSWER)
    assert (edited.path, edited.reason) == ("chat", EDITED_HISTORY)
    assert constrained.path == "chat" and "constrained decoding" in constrained.reason
    # ...which needs the engine's /tokenize: an engine without it leaves the call on the chat path.
    assert echoed.path == "chat" and echoed.reason.startswith("the engine's /tokenize failed")
    assert all(call.ok for call in read_session(tmp_path / "out" / "s1.jsonl"))


def test_provenance_is_off_outside_training_mode_unless_asked(
    fake_engine, make_proxy: Callable[..., str], tmp_path: Path
) -> None:
    plain = make_proxy(fake_engine.url, out=tmp_path / "out")
    _call(plain, [USER])
    assert _provenance(tmp_path) == [None] and httpx.get(f"{plain}/health").json()["token_provenance"] is False
    _call(make_proxy(fake_engine.url, out=tmp_path / "out", training=True, token_provenance=False), [USER])
    assert _provenance(tmp_path) == [None, None]
    asked = make_proxy(fake_engine.url, out=tmp_path / "out", token_provenance=True)
    _call(asked, [USER])
    assert _provenance(tmp_path)[-1].path == "chat" and httpx.get(f"{asked}/health").json()["token_provenance"] is True
