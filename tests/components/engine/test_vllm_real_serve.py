"""The serve step on real vLLM (its CPU build), LoRA mode: each iteration serves its committed
checkpoint (base weights + adapter) through ``serve_iteration``, is admitted by the gate on
health and version, and stops on SIGTERM; the next iteration's restart reports the new
version; adapters are loaded and unloaded while vLLM runs.

Two vLLM starts (a minute or more each here): the cost of the only test that needs its own.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests._missing import missing
from tests._vllm import vllm_python, vllm_test_config

import components.engine.vllm_serve as vllm_serve
from components.core.checkpoints import LORA_ADAPTER_DIR, commit_checkpoint, write_checkpoint_info
from components.core.services import free_port
from components.core.storage import open_store, run_layout
from components.engine.cut_route import CUT_ROUTE
from components.engine.step import serve_iteration

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]  # vLLM starts and LoRA swaps: ~190 s in CI on loaded cores

PROMPT = [1, 2, 3, 4, 5]


def _adapter(base: Path, dest: Path, seed: int) -> Path:
    """A rank-8 adapter on q/v projections with random (non-zero) weights: it changes the policy."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    lora = LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    get_peft_model(model, lora).save_pretrained(dest)
    return dest


def _lora_checkpoint(tiny_model_dir: Path, dest: Path, version: int) -> Path:
    shutil.copytree(tiny_model_dir, dest)
    _adapter(tiny_model_dir, dest / LORA_ADAPTER_DIR, seed=version)
    write_checkpoint_info(dest, {"policy_version": str(version)})
    return dest


def _cards(url: str) -> list[tuple[str, str, str | None]]:
    return [(c["id"], c["root"], c["parent"]) for c in httpx.get(f"{url}/v1/models", timeout=30).json()["data"]]


def _greedy_logprobs(url: str, model: str) -> tuple[int, list[float]]:
    body = {"model": model, "prompt": PROMPT, "max_tokens": 4, "temperature": 0, "logprobs": 0, "ignore_eos": True}
    response = httpx.post(f"{url}/v1/completions", json=body, timeout=300)
    return response.status_code, response.json()["choices"][0]["logprobs"]["token_logprobs"] if response.is_success else []


def _post(url: str, path: str, body: dict[str, Any]) -> int:
    return httpx.post(f"{url}{path}", json=body, timeout=300).status_code


def _swap_adapters(url: str, extra: Path) -> dict[str, Any]:
    """Load ``extra`` as ``policy-next`` while vLLM runs, use it, unload it."""
    seen: dict[str, Any] = {"policy": _greedy_logprobs(url, "policy"), "base": _greedy_logprobs(url, "policy-base")}
    seen["load"] = _post(url, "/v1/load_lora_adapter", {"lora_name": "policy-next", "lora_path": str(extra)})
    seen["loaded_cards"] = _cards(url)
    seen["next"] = _greedy_logprobs(url, "policy-next")
    seen["unload"] = _post(url, "/v1/unload_lora_adapter", {"lora_name": "policy-next"})
    seen["unloaded_cards"] = _cards(url)
    seen["next_after_unload"] = _greedy_logprobs(url, "policy-next")[0]
    return seen


def test_each_iteration_serves_its_lora_checkpoint_and_adapters_swap_at_run_time(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    python, why = vllm_python()
    if python is None:
        missing(why)
    # A straggler cut too: vLLM must load its middleware and serve the serve step's decision.
    cut = {"finish_fraction": 0.5, "grace_s": 0}
    config = vllm_test_config(python, lora_rank=8, storage={"uri": f"file://{tmp_path / 'store'}"}, rollout=cut)
    store = open_store(config.storage.uri, None)
    # Iteration 1's one rollout has ended (its cut is due at once); iteration 2 has no plan yet.
    store.put_bytes(run_layout(config).plan(1), json.dumps({"rollouts": [{"rollout_id": "t-s0"}]}).encode())
    store.put_bytes(run_layout(config).outcome(1, "t-s0"), b"{}")
    for version in (1, 2):
        commit_checkpoint(store, run_layout(config), version, _lora_checkpoint(tiny_model_dir, tmp_path / f"c{version}", version))
    extra = _adapter(tiny_model_dir, tmp_path / "extra-adapter", seed=9)
    gate, served = vllm_serve.wait_until_serving, {}

    def gate_probe_then_stop(url: str, version: str, timeout_s: float, **kwargs: Any) -> str:
        model = gate(url, version, timeout_s, **kwargs)  # the real gate, on real vLLM
        served[version] = {"cards": _cards(url), **(_swap_adapters(url, extra) if version == "1" else {})}
        served[version]["cut"] = httpx.get(f"{url}{CUT_ROUTE}", timeout=30).json()
        os.kill(os.getpid(), signal.SIGTERM)  # Argo stopping the daemon: the step passes it on to vLLM
        return model

    monkeypatch.setattr(vllm_serve, "wait_until_serving", gate_probe_then_stop)

    codes = [serve_iteration(config, k, store, "127.0.0.1", free_port(), say=lambda _: None) for k in (1, 2)]

    assert codes == [0, 0]
    out = capfd.readouterr().out
    assert "vLLM serves policy version 1 as 'policy'" in out and "vLLM serves policy version 2 as 'policy'" in out
    # The adapter is listed after its base, named by the version folder it was staged in.
    assert served["1"]["cards"] == [("policy-base", "base", None), ("policy", "1", "policy-base")]
    assert served["2"]["cards"] == [("policy-base", "base", None), ("policy", "2", "policy-base")]
    first = served["1"]
    assert first["policy"][0] == first["base"][0] == 200 and first["policy"][1] != first["base"][1]  # the adapter acts
    assert first["load"] == first["unload"] == 200
    assert ("policy-next", str(extra), "policy-base") in first["loaded_cards"]
    assert first["next"][0] == 200 and first["next"][1] not in (first["policy"][1], first["base"][1])
    assert first["unloaded_cards"] == first["cards"] and first["next_after_unload"] == 404
    assert first["cut"]["cut"] is True and "1 of 1 rollouts had ended" in first["cut"]["reason"]
    assert served["2"]["cut"] == {"cut": False}
