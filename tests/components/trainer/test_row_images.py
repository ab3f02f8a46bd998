"""A vision-language policy trains on its rows' images (components/trainer/row_images.py).

Real recordings: the tiny Qwen2-VL served by the dev engine behind the recording proxy in
training mode, screenshots in every call. The recorded prompt ids must be the processor's
expansion of the request rebuilt from the store, the batch must carry each row's images in
veRL's layout, and the CPU update must re-score the engine's logprobs and train the model,
vision tower included."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from components.core.outcome import RewardRecord, RolloutStatus
from components.core.trajectory import RecordedCall, read_session
from tests._servers import start_dev_engine, start_proxy_process
from tests._vision_prompts import processor_prompt_ids
from tests.components.proxy._images import data_url, png

SCREENS = [png(300, 180, (200, 40, 40)), png(300, 180, (40, 200, 40)), png(120, 200, (40, 40, 200))]
PROMPT = "Click the button that opens the menu."
SESSIONS = {"menu-s0": 1.0, "menu-s1": 0.0, "menu-s2": 1.0, "menu-s3": 0.0}


def _user(*parts: Any) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [
            {"type": "image_url", "image_url": {"url": data_url(p)}} if isinstance(p, bytes) else {"type": "text", "text": p}
            for p in parts
        ],
    }


def _record(model: Path, work: Path, system: str | None = None, turns: int = 2) -> tuple[Path, dict[str, list[RecordedCall]]]:
    """``SESSIONS`` through the dev engine and the recording proxy: each ``turns`` calls, a
    later one with the answer before it and a new screenshot; ``system``, a system message first."""
    engine = start_dev_engine(model, work / "logs", name="vl-engine")
    proxy = start_proxy_process(engine.url, work / "out", work / "logs", "--training")
    try:
        for n, session in enumerate(SESSIONS):
            history = [{"role": "system", "content": system}] if system else []
            history.append(_user(PROMPT, SCREENS[n % 2]))
            for turn in range(turns):
                body = {"model": "tiny", "messages": history, "max_tokens": 8, "seed": n * 10 + turn}
                answer = httpx.post(f"{proxy.url}/s/{session}/v1/chat/completions", json=body, timeout=120)
                assert answer.status_code == 200, answer.text
                history += [answer.json()["choices"][0]["message"], _user(SCREENS[2], "Did the menu open?")]
    finally:
        proxy.stop()
        engine.stop()
    out = work / "out"
    return out, {session: read_session(out / f"{session}.jsonl") for session in SESSIONS}


@pytest.fixture(scope="module")
def recorded(tiny_vl_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, list[RecordedCall]]]:
    """Four rollouts of two calls each, the second with the first's answer and a new screenshot."""
    return _record(tiny_vl_model_dir, tmp_path_factory.mktemp("vl-recordings"))


def _images_of(out: Path, calls: dict[str, list[RecordedCall]]) -> Any:
    from components.core.images import prompt_images, read_image

    def images_of(rollout_id: str, call_index: int) -> list[bytes]:
        call = next(c for c in calls[rollout_id] if c.call_index == call_index)
        return [read_image(ref, out / "images") for ref in prompt_images(call)]

    return images_of


def _records() -> list[RewardRecord]:
    return [
        RewardRecord(rollout_id=s, task_id="menu", group_id="it0-menu", reward=r, usable=True, status=RolloutStatus.OK)
        for s, r in SESSIONS.items()
    ]


def test_recorded_prompt_ids_are_the_processors_expansion_of_the_rebuilt_request(
    recorded: tuple[Path, dict[str, list[RecordedCall]]], tiny_vl_model_dir: Path
) -> None:
    """Rebuilt from the record and the image store, rendered by the checkpoint's template and
    expanded by its image processor, every call's prompt is exactly what the engine saw."""
    out, calls = recorded
    every = [c for group in calls.values() for c in group]
    assert len(every) == 2 * len(SESSIONS)
    for call in every:
        assert call.ok and call.provenance.path == "chat", call.provenance
        assert call.prompt_token_ids == processor_prompt_ids(call, out / "images", tiny_vl_model_dir), call.call_index


def test_the_batch_carries_each_rows_images_and_the_cpu_update_rescores_and_trains_the_vision_tower_unless_frozen(
    recorded: tuple[Path, dict[str, list[RecordedCall]]], tiny_vl_model_dir: Path
) -> None:
    import torch
    from transformers import AutoModelForImageTextToText

    from components.core.config import AlgorithmConfig
    from components.trainer.batch import build_batch
    from components.trainer.cpu_update import build_optimizer, cpu_update, freeze_vision_tower
    from components.trainer.row_images import RowVision

    out, calls = recorded
    algorithm = AlgorithmConfig(learning_rate=1e-2)
    vision = RowVision(tiny_vl_model_dir)
    data, stats = build_batch(calls, _records(), algorithm, pad_token_id=0, vision=vision, images_of=_images_of(out, calls))
    assert stats.rows >= len(SESSIONS) and stats.trained_tokens > 0 and stats.dropped_rows == 0, stats
    images = data.non_tensor_batch["multi_modal_inputs"]
    tokens = data.batch["input_ids"]
    for row, inputs in enumerate(images):
        pads = int((tokens[row] == vision.pad_id).sum())
        assert pads > 0 and int((inputs["image_grid_thw"].prod(-1) // 4).sum()) == pads
    assert tuple(data.batch["position_ids"].shape) == (len(images), 4, tokens.shape[1])

    model = AutoModelForImageTextToText.from_pretrained(tiny_vl_model_dir, dtype=torch.float32)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    metrics = cpu_update(model, data, algorithm, seed=0)
    # Re-scored by the trainer's own forward (its positions, its pixels) before any step.
    assert metrics["train/logprob_gap_max"] < 1e-4, metrics
    changed = {name for name, p in model.named_parameters() if not torch.equal(p, before[name])}
    assert any(name.startswith("model.visual.") for name in changed), sorted(changed)[:5]
    assert any(name.startswith("model.language_model.") for name in changed)

    # trainer.freeze_vision_tower: the same update leaves the tower as it was.
    model = AutoModelForImageTextToText.from_pretrained(tiny_vl_model_dir, dtype=torch.float32)
    frozen = freeze_vision_tower(model)
    assert frozen == sum(p.numel() for name, p in model.named_parameters() if name.startswith("model.visual."))
    cpu_update(model, data, algorithm, seed=0, optimizer=build_optimizer(model, algorithm))
    changed = {name for name, p in model.named_parameters() if not torch.equal(p, before[name])}
    assert changed and not any(name.startswith("model.visual.") for name in changed), sorted(changed)[:5]


def test_freezing_a_vision_tower_is_refused_where_there_is_none_or_where_it_would_not_hold(tiny_model_dir: Path) -> None:
    import torch
    from pydantic import ValidationError
    from transformers import AutoModelForCausalLM

    from components.core.trainer_config import TrainerConfig
    from components.trainer.cpu_update import UpdateError, freeze_vision_tower

    text_model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    with pytest.raises(UpdateError, match="has no vision tower: unset it for a text model"):
        freeze_vision_tower(text_model)
    with pytest.raises(ValidationError, match="do not apply it, so the tower would train anyway"):
        TrainerConfig(backend="verl", freeze_vision_tower=True)


def test_a_row_whose_images_do_not_match_its_tokens_is_left_out_with_its_reason(
    recorded: tuple[Path, dict[str, list[RecordedCall]]], tiny_vl_model_dir: Path
) -> None:
    from components.core.config import AlgorithmConfig
    from components.trainer.batch import build_batch
    from components.trainer.row_images import IMAGE_MISSING, VISION_TOKEN_MISMATCH, RowVision

    out, calls = recorded
    honest = _images_of(out, calls)

    def swapped(rollout_id: str, call_index: int) -> list[bytes]:
        found = honest(rollout_id, call_index)
        if rollout_id == "menu-s0":
            return [png(600, 600)] * len(found)  # other sizes: other vision-token counts
        if rollout_id == "menu-s1":
            raise FileNotFoundError("images/....png is missing")
        return found

    _, stats = build_batch(calls, _records(), AlgorithmConfig(), vision=RowVision(tiny_vl_model_dir), images_of=swapped)
    assert stats.dropped.get(VISION_TOKEN_MISMATCH, 0) >= 1 and stats.dropped.get(IMAGE_MISSING, 0) >= 1, stats
    assert stats.rows > 0


def test_verl_cpu_workers_refuse_a_vision_language_policy_naming_the_backend_that_trains_it(
    tiny_vl_model_dir: Path, tmp_path: Path
) -> None:
    from components.core.config import ExperimentConfig
    from components.trainer.cpu_update import UpdateError
    from components.trainer.verl_step import verl_update

    config = ExperimentConfig(name="vl", tasks={"source": "t"}, trainer={"backend": "verl", "device": "cpu"})
    with pytest.raises(UpdateError, match="trainer.backend: cpu"):
        verl_update(config, data=None, parent=tiny_vl_model_dir, work=tmp_path, info={})


def test_rows_share_the_text_before_their_first_image_once_with_the_same_update_as_row_by_row(
    tiny_vl_model_dir: Path, tmp_path: Path
) -> None:
    """A GUI harness's long system prompt, then each rollout's own screenshot: the prompt runs
    once per micro-batch, the pixels stay each row's own (shared_prefix.py)."""
    import torch
    from transformers import AutoModelForImageTextToText

    from components.core.config import AlgorithmConfig
    from components.trainer.batch import build_batch
    from components.trainer.cpu_update import cpu_update, micro_batches, response_log_probs
    from components.trainer.row_images import RowVision
    from components.trainer.shared_prefix import MIN_SHARED

    system = " ".join(f"rule {n}: click what the task names." for n in range(120))  # a harness's system prompt, in small
    out, calls = _record(tiny_vl_model_dir, tmp_path, system=system, turns=1)
    algorithm = AlgorithmConfig(learning_rate=1e-2, micro_batch_size=8)
    vision = RowVision(tiny_vl_model_dir)
    data, stats = build_batch(calls, _records(), algorithm, pad_token_id=0, vision=vision, images_of=_images_of(out, calls))
    assert stats.rows == len(SESSIONS) and stats.dropped_rows == 0, stats
    images = data.non_tensor_batch["multi_modal_inputs"]

    model = AutoModelForImageTextToText.from_pretrained(tiny_vl_model_dir, dtype=torch.float32)
    (micro,) = micro_batches(data.batch, 8, 10**6, images, vision.pad_id)
    shared = micro["shared_prefix"]
    first_image = [row.tolist().index(vision.pad_id) for row in micro["prompts"][:, -int(micro["attention_mask"][:, : micro["prompts"].shape[1]].sum(1).min()) :]]
    assert shared >= MIN_SHARED and shared <= min(first_image), (shared, first_image)
    assert micro_batches(data.batch, 8, 10**6, images)[0]["shared_prefix"] == 0  # no image id: nothing shared
    mask = micro["response_mask"].bool()

    def gradients(shared: int) -> tuple[Any, list[Any]]:
        model.zero_grad()
        log_prob, _ = response_log_probs(model, {**micro, "shared_prefix": shared}, temperature=1.0)
        log_prob[mask].sum().backward()
        return log_prob.detach()[mask], [p.grad.clone() for p in model.parameters()]

    (once, once_grads), (whole, whole_grads) = gradients(shared), gradients(0)
    assert torch.allclose(once, whole, atol=1e-5)
    assert all(torch.allclose(x, y, rtol=1e-3, atol=1e-6) for x, y in zip(once_grads, whole_grads))

    def updated(**settings: int) -> tuple[float, list[Any]]:
        model = AutoModelForImageTextToText.from_pretrained(tiny_vl_model_dir, dtype=torch.float32)
        metrics = cpu_update(model, data, algorithm.model_copy(update=settings), seed=0)
        return metrics["train/loss"], [p.detach().clone() for p in model.parameters()]

    (loss_a, a), (loss_b, b) = updated(), updated(micro_batch_size=1)  # together, prefix once; every row alone
    assert loss_a == pytest.approx(loss_b, abs=1e-6)
    # AdamW turns float noise in a near-zero gradient into a step of up to ~lr: rows batched
    # without the shared prefix already differ from row by row by ~1e-4 here. A wrong
    # gradient through the shared keys and values would move weights by ~lr (1e-2).
    assert all(torch.allclose(x, y, atol=1e-3) for x, y in zip(a, b))
