"""What is recorded is what was applied: the proxy's ``sampling`` record against the dev
engine's own report of the settings it sampled with (its ``x-openforge-sampling`` header).

The engine serves a checkpoint whose generation_config.json sets top_k 20, top_p 0.9 and
temperature 0.7: defaults a request that leaves them out gets, as from vLLM.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Callable

import httpx
import openai
import pytest
from aiohttp import web

from components.core import read_session
from components.core.choices import CHOICE_HEADER, FORCED_FROM_HEADER
from components.core.sampling import APPLIED_SAMPLING_HEADER, NEUTRAL_SAMPLING, same_setting

MESSAGES = [{"role": "user", "content": "Hello."}]
CHECKPOINT_DEFAULTS = {"top_k": 20, "top_p": 0.9, "temperature": 0.7}


def _checkpoint(tiny_model_dir: Path, target: Path, **defaults: Any) -> Path:
    shutil.copytree(tiny_model_dir, target)
    config_path = target / "generation_config.json"
    config = json.loads(config_path.read_text())
    config_path.write_text(json.dumps({**config, **defaults}))
    return target


@pytest.fixture(scope="module")
def opinionated_engine(make_dev_engine, tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    model = _checkpoint(tiny_model_dir, tmp_path_factory.mktemp("ckpt") / "tiny-topk", **CHECKPOINT_DEFAULTS)
    return make_dev_engine(model_dir=model)


def _client(proxy: str, session: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{proxy}/s/{session}/v1", api_key="unused", max_retries=0, timeout=60)


def _assert_recorded_as_applied(call: Any) -> dict[str, Any]:
    sampling = call.sampling.model_dump()
    applied = sampling["applied"]
    assert applied is not None, "the dev engine reports what it applied"
    assert set(applied) == set(NEUTRAL_SAMPLING)
    for knob in NEUTRAL_SAMPLING:
        assert sampling[knob] is not None, f"{knob} is recorded"
        assert same_setting(knob, sampling[knob], applied[knob]), (knob, sampling[knob], applied[knob])
    return applied


def test_training_records_the_sampling_the_engine_applied(opinionated_engine, make_proxy, tmp_path: Path) -> None:
    proxy = make_proxy(opinionated_engine.url, training=True)
    client = _client(proxy, "train")
    # The harness asks for its own settings; training replaces every one.
    first = client.chat.completions.create(
        model="m", messages=MESSAGES, max_tokens=6, seed=1, temperature=0.3, extra_body={"top_k": 5}
    )
    followup = MESSAGES + [{"role": "assistant", "content": first.choices[0].message.content}]
    followup += [{"role": "user", "content": "And?"}]
    chunks = client.chat.completions.create(model="m", messages=followup, max_tokens=6, seed=2, stream=True)
    assert [chunk for chunk in chunks]
    calls = read_session(tmp_path / "out" / "train.jsonl")
    assert [call.provenance.path for call in calls] == ["chat", "tokens"]  # both engine endpoints
    for call in calls:
        assert call.ok, call.error
        applied = _assert_recorded_as_applied(call)
        # The checkpoint's top_k 20, top_p 0.9, temperature 0.7 did not slip in under the record.
        assert same_setting("top_k", applied["top_k"], -1) and applied["top_p"] == applied["temperature"] == 1.0
        assert call.sampling.overridden
    assert calls[0].sampling.dropped == ["temperature", "top_k"]  # what the harness asked for instead


def test_serving_mode_records_the_checkpoint_defaults_the_engine_applied(
    opinionated_engine, make_proxy, tmp_path: Path
) -> None:
    proxy = make_proxy(opinionated_engine.url)
    stream = _client(proxy, "serve").chat.completions.create(model="m", messages=MESSAGES, max_tokens=4, stream=True)
    assert [chunk for chunk in stream]
    (call,) = read_session(tmp_path / "out" / "serve.jsonl")
    assert call.ok and call.sampling.temperature is None  # the harness set nothing: engine defaults
    assert {knob: call.sampling.applied[knob] for knob in CHECKPOINT_DEFAULTS} == CHECKPOINT_DEFAULTS


def test_engine_refuses_a_checkpoint_setting_it_cannot_apply(
    make_dev_engine, tiny_model_dir: Path, tmp_path: Path
) -> None:
    engine = make_dev_engine(model_dir=_checkpoint(tiny_model_dir, tmp_path / "tiny-rp", repetition_penalty=1.05))
    url = f"{engine.url}/v1/chat/completions"
    body = {"messages": MESSAGES, "max_tokens": 2}
    refused = httpx.post(url, json=body, timeout=60)
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert error["param"] == "repetition_penalty" and "generation_config.json" in error["message"]
    accepted = httpx.post(url, json={**body, "repetition_penalty": 1.0}, timeout=60)
    assert accepted.status_code == 200
    assert json.loads(accepted.headers[APPLIED_SAMPLING_HEADER])["repetition_penalty"] == 1.0


def _recorded_with_headers(loop_thread, fake_engine, make_proxy, out: Path, session: str, headers: dict[str, str]):
    """The record of one call to an engine whose answers carry ``headers`` whatever it was sent."""

    @web.middleware
    async def claims(request: web.Request, handler: Any) -> web.StreamResponse:
        response = await handler(request)
        response.headers.update(headers)
        return response

    app = web.Application(middlewares=[claims])
    app.router.add_get("/v1/models", fake_engine._models)
    app.router.add_post("/v1/chat/completions", fake_engine._chat)
    runner = web.AppRunner(app)
    loop_thread.run(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0)
    loop_thread.run(site.start())
    try:
        host, port = runner.addresses[0][:2]
        proxy = make_proxy(f"http://{host}:{port}", training=True, token_provenance=False)
        _client(proxy, session).chat.completions.create(model="m", messages=MESSAGES, max_tokens=4)
    finally:
        loop_thread.run(runner.cleanup())
    (call,) = read_session(out / f"{session}.jsonl")
    return call


def test_a_mismatch_between_record_and_engine_marks_the_call(loop_thread, fake_engine, make_proxy, tmp_path: Path) -> None:
    # An engine that says it sampled with top_k 20 whatever it was sent.
    claims_top_k = {APPLIED_SAMPLING_HEADER: json.dumps({**NEUTRAL_SAMPLING, "top_k": 20})}
    call = _recorded_with_headers(loop_thread, fake_engine, make_proxy, tmp_path / "out", "mismatch", claims_top_k)
    assert not call.ok and "top_k=20 (recorded -1)" in call.error
    assert call.sampling.applied["top_k"] == 20


@pytest.mark.parametrize(
    ("headers", "forced_from", "problem"),
    [
        ({FORCED_FROM_HEADER: "3"}, 3, None),
        ({FORCED_FROM_HEADER: "three"}, 0, "not a token index"),  # forced from where? train on none of it
        ({CHOICE_HEADER: "guessed"}, None, "not one of"),
    ],
)
def test_the_engines_forced_and_choice_marks_reach_the_record(
    loop_thread, fake_engine, make_proxy, tmp_path: Path, headers: dict[str, str], forced_from, problem
) -> None:
    call = _recorded_with_headers(loop_thread, fake_engine, make_proxy, tmp_path / "out", "marks", headers)
    assert call.forced_from == forced_from
    assert call.choice == headers.get(CHOICE_HEADER)
    if problem is None:
        assert call.ok
    else:
        assert not call.ok and problem in call.error


def test_a_training_temperature_is_sent_applied_recorded_and_its_logprobs_are_the_sampled_distributions(
    opinionated_engine, make_proxy, tiny_model_dir: Path, tmp_path: Path
) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    proxy = make_proxy(opinionated_engine.url, training=True, training_temperature=0.5)
    _client(proxy, "cool").chat.completions.create(model="m", messages=MESSAGES, max_tokens=6, temperature=0.9)
    (call,) = read_session(tmp_path / "out" / "cool.jsonl")

    assert call.ok, call.error
    applied = _assert_recorded_as_applied(call)
    assert call.sampling.temperature == applied["temperature"] == 0.5 and call.sampling.dropped == ["temperature"]
    assert same_setting("top_k", applied["top_k"], -1) and applied["top_p"] == 1.0  # the rest stays neutral
    # The trainer scores the policy at algorithm.temperature: the engine's logprobs must be of that same distribution.
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    ids = call.prompt_token_ids + call.completion_token_ids
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0, len(call.prompt_token_ids) - 1 : -1].float()
    expected = torch.log_softmax(logits / 0.5, dim=-1).gather(1, torch.tensor(call.completion_token_ids)[:, None])[:, 0]
    assert call.completion_logprobs == pytest.approx(expected.tolist(), abs=2e-3)
