"""Stagehand, installed at its pinned version, registers a person on the seeded form app
(examples/tasks/web/web-form-submit-1) in each of its three computer-use modes, through the
rollout runner and the real recording proxy: the verifier passes, every call is recorded
with its screenshots stored once by hash and rebuilt to the JSON Stagehand sent, and
nothing leaves 127.0.0.1.

The model is a scripted upstream behind the proxy (tests/e2e/_scripted_model.py), so in
the Responses and Anthropic modes it receives what the proxy translated: the computer tool
as a function ``computer``, earlier computer calls as assistant tool calls, screenshots as
image parts. A computer-use model acts by coordinates and keys; the script fills the form
from the keyboard alone (Tab from the top of the page to each field), so it needs no
element coordinates: the form's tab order is fixed by the app's HTML.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests._missing import require_harness
from tests.e2e._scripted_model import REPO, check_recorded_calls, run_web_rollout, scripted_model

from components.core.config import ExperimentConfig
from components.core.images import referenced_images
from components.core.outcome import RolloutStatus
from components.environments.webapps.form import SIZES
from components.rollout.harnesses import get_harness

TASK = REPO / "examples" / "tasks" / "web" / "web-form-submit-1"
PERSON = json.loads((TASK / "goal.json").read_text())["state"]["submissions"][0]
ANSWER = f"Registered {PERSON['name']}"

# The whole form from the keyboard: name, email, session (a select's type-ahead), the size
# radio group (a space checks the first, arrows move the check), the newsletter box, submit.
# The space is typed: Stagehand's keypress of "space" sends the text alone, without the key
# code Chromium toggles a checkbox on (measured: the box stayed unticked).
FILL = [("key", "Tab"), ("type", PERSON["name"]), ("key", "Tab"), ("type", PERSON["email"]),
        ("key", "Tab"), ("type", PERSON["session"])]  # fmt: skip
SUBMIT = [
    ("key", "Tab"), ("type", " "), *[("key", "ArrowRight")] * SIZES.index(PERSON["size"]),
    ("key", "Tab"), *([("type", " ")] if PERSON["newsletter"] else []), ("key", "Tab"), ("key", "Enter"),
]  # fmt: skip


def _responses_call(kind: str, value: str) -> dict[str, Any]:
    action = {"type": "keypress", "keys": [value]} if kind == "key" else {"type": "type", "text": value}
    return {"name": "computer", "arguments": action}


def _anthropic_call(kind: str, value: str) -> dict[str, Any]:
    return {"name": "computer", "arguments": {"action": kind, "text": value}}


def _batched(encode: Any) -> Any:
    """Responses and Anthropic: the form in two turns of several computer calls, then the answer."""

    def reply(step: int, body: dict[str, Any]) -> dict[str, Any]:
        if not any(tool["function"]["name"] == "computer" for tool in body.get("tools") or ()):
            raise LookupError("the engine was not given the computer tool as a function")
        if step > 0 and not any(m["role"] == "tool" for m in body["messages"]):
            raise LookupError("the earlier computer calls did not reach the engine as tool calls and results")
        if step < 2:
            return {"content": None, "tool_calls": [encode(kind, value) for kind, value in (FILL, SUBMIT)[step]]}
        return {"content": ANSWER}

    return reply


def _fara(step: int, body: dict[str, Any]) -> dict[str, Any]:
    """Chat mode (Fara-7B): one ``<tool_call>`` a turn, its arguments in Qwen's text format."""
    plan = [*FILL, *SUBMIT]
    if step < len(plan):
        kind, value = plan[step]
        arguments = {"action": "key", "keys": [value]} if kind == "key" else {"action": "type", "text": value}
        thoughts = ""
    else:
        arguments, thoughts = {"action": "terminate", "status": "success"}, ANSWER
    call = json.dumps({"name": "computer_use", "arguments": arguments})
    return {"content": f"{thoughts}\n<tool_call>\n{call}\n</tool_call>"}


MODES = {  # mode: (the script, the model calls it makes)
    "responses": (_batched(_responses_call), 3),
    "messages": (_batched(_anthropic_call), 3),
    "chat": (_fara, len(FILL) + len(SUBMIT) + 1),
}


def _config(mode: str, steps: int) -> ExperimentConfig:
    return ExperimentConfig.model_validate(
        {
            "name": f"stagehand-{mode}-e2e",
            "tasks": {"source": "unused"},
            "harness": {"name": "stagehand", "mode": mode, "max_turns": steps + 2, "max_tokens": 1024},
            "rollout": {"time_limit_s": 300},
        }
    )


@pytest.mark.slow
@pytest.mark.parametrize("mode", list(MODES))
def test_stagehand_submits_the_form_through_proxy(chromium_ready: None, mode: str, tmp_path: Path) -> None:
    require_harness("stagehand")
    adapter = get_harness("stagehand")
    reply, steps = MODES[mode]
    config = _config(mode, steps)
    adapter.configure(config.harness)

    with scripted_model(reply) as model:
        rollout = run_web_rollout(config, adapter, model, TASK, tmp_path)

    outcome = rollout.outcome
    assert not model.problems, model.problems
    assert outcome.status is RolloutStatus.OK, f"{outcome.details}\n--- proxy ---\n{rollout.proxy_log}"
    assert (outcome.passed, outcome.reward) == (True, 1.0), outcome.verifier_output
    assert ANSWER in (outcome.final_answer or "")
    assert len(rollout.calls) == outcome.num_calls == model.steps == steps
    api = {"responses": "responses", "messages": "anthropic.messages", "chat": "chat.completions"}[mode]
    assert {call.api for call in rollout.calls} == {api}
    check_recorded_calls(rollout)
    # A screenshot in every call (Anthropic's first call has the instruction alone), each
    # image file stored once by hash however often the harness resends it.
    first = 0 if mode == "messages" else 1
    assert [min(len(call.images), 1) for call in rollout.calls] == [first] + [1] * (steps - 1)
    referenced = [name for call in rollout.calls for name in referenced_images(call)]
    assert sorted(p.name for p in (rollout.sessions / "images").iterdir()) == sorted({Path(n).name for n in referenced})
    assert outcome.extra["egress_refused"] == [], outcome.extra["egress_refused"]
    if rollout.outside is not None:
        assert not rollout.outside, "connections off loopback:\n" + "\n".join(rollout.outside)

