"""GUI iterations with a vision-language policy (``model.tiny_vision``): browser-use on a
web task (examples/web.yaml) and cua-agent on a desktop task (examples/desktop.yaml). Their
screenshots reach the tiny Qwen2-VL as pixels, the batch carries each row's images, the
CPU update trains the vision tower with the rest (web) or keeps it frozen (desktop,
``trainer.freeze_vision_tower``), and the committed checkpoint serves.

The same reward stand-in as test_iteration_web.py: the task's verifier judges, plus noise
below 0.01 so the group's two rollouts differ and the update runs."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from components.core.checkpoints import committed_versions
from components.core.storage import RunLayout, get_dir, open_store
from components.core.trajectory import RecordedCall
from tests._servers import start_dev_engine
from tests._vision_prompts import processor_prompt_ids
from tests.components.proxy._images import data_url, png
from tests.e2e._gui_runs import FROZEN_TOWER, GUI


@pytest.mark.slow
@pytest.mark.timeout(900)  # a whole iteration (Chromium or a desktop, ~12k-token VL rows); 170 s in CI, 300+ s on loaded cores
@pytest.mark.parametrize("example_name", list(GUI))
def test_a_gui_iteration_trains_a_vision_language_policy_on_its_screenshots(
    example_name: str, tmp_path: Path, gui_vl_run, request: pytest.FixtureRequest
) -> None:
    import torch
    from safetensors.torch import load_file
    from verl import DataProto

    run = gui_vl_run(example_name, request)  # the session's run, shared with test_viewer_browser.py
    config, logged = run.config, run.logged
    store, layout = open_store(config.storage.uri), RunLayout(config.name)
    metrics = logged[0]
    assert metrics["batch/trained_tokens"] > 0 and metrics["batch/dropped_rows"] == 0, metrics
    assert committed_versions(store, layout) == [0, 1]

    # Every call's prompt is the checkpoint's processor's expansion of the request rebuilt
    # from the store: the screenshots' vision tokens, exactly as the engine saw them.
    get_dir(store, layout.checkpoint(0), tmp_path / "ckpt0")
    images = tmp_path / "images"
    get_dir(store, layout.images(0), images)
    for rollout in json.loads(store.get_bytes(layout.plan(0)))["rollouts"]:
        lines = store.get_bytes(layout.trajectory(0, rollout["rollout_id"])).splitlines()
        calls = [RecordedCall.model_validate_json(line) for line in lines]
        assert calls and all(call.ok and call.images for call in calls)
        for call in calls:
            assert call.prompt_token_ids == processor_prompt_ids(call, images, tmp_path / "ckpt0"), call.call_index

    # Every row holds its screenshot as the processor's vision tokens, with its pixels beside it.
    (tmp_path / "batch.pt").write_bytes(store.get_bytes(layout.batch(0)))
    batch = DataProto.load_from_disk(tmp_path / "batch.pt")
    pad = json.loads((tmp_path / "ckpt0" / "config.json").read_text())["image_token_id"]
    inputs = batch.non_tensor_batch["multi_modal_inputs"]
    assert len(inputs) == len(batch) == metrics["batch/rows"] > 0
    for row, row_inputs in enumerate(inputs):
        assert int((row_inputs["image_grid_thw"].prod(-1) // 4).sum()) == int((batch.batch["input_ids"][row] == pad).sum()) > 0

    # Checkpoint 1: a Qwen2-VL with its vision tower trained or kept (trainer.freeze_vision_tower,
    # as the run's config says), its language model trained, its processor carried over.
    get_dir(store, layout.checkpoint(1), tmp_path / "ckpt1")
    before, after = (load_file(tmp_path / f"ckpt{v}" / "model.safetensors") for v in (0, 1))
    assert set(before) == set(after) and any("visual" in name for name in after)  # the tower is in the checkpoint
    moved = [name for name in after if not torch.equal(before[name], after[name])]
    # (saved under HF's checkpoint names: the language model's layers as model.layers.*)
    assert any(n.startswith("model.layers.") for n in moved), moved[:5]
    frozen = config.trainer.freeze_vision_tower
    assert frozen == FROZEN_TOWER[example_name] and (metrics.get("train/frozen_params", 0) > 0) == frozen, metrics
    assert any("visual" in name for name in moved) != frozen, moved[:5]
    assert (tmp_path / "ckpt1" / "preprocessor_config.json").read_bytes() == (tmp_path / "ckpt0" / "preprocessor_config.json").read_bytes()

    # The next iteration's engine serves it: a screenshot in, its vision tokens in the prompt.
    engine = start_dev_engine(tmp_path / "ckpt1", tmp_path / "logs", name="ckpt1-engine")
    try:
        message = {"role": "user", "content": [{"type": "text", "text": "What is shown?"}, {"type": "image_url", "image_url": {"url": data_url(png(280, 140))}}]}
        body = {"model": engine.model, "messages": [message], "max_tokens": 2, "return_token_ids": True}
        answer = httpx.post(f"{engine.url}/v1/chat/completions", json=body, timeout=120).json()
    finally:
        engine.stop()
    assert answer["prompt_token_ids"].count(pad) == (140 // 28) * (280 // 28)
