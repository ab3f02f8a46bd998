"""A vision-language model on the dev engine (components/engine/_vision.py): image parts
become the processor's vision tokens, the model reads the pixels, and the logprobs it
returns are those of HuggingFace's own multimodal forward pass."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests._servers import EngineServer
from tests.components.proxy._images import data_url, png

SCREEN = png(320, 200, (200, 30, 30))
OTHER_SCREEN = png(320, 200, (30, 200, 30))  # same size, other pixels
TALL = png(56, 112, (20, 20, 220))  # small: the new part of the prompt is worth a cached prefix


@pytest.fixture(scope="module")
def vl_engine(make_dev_engine: Any, tiny_vl_model_dir: Path) -> EngineServer:
    return make_dev_engine(model_dir=tiny_vl_model_dir)


@pytest.fixture(scope="module")
def reference(tiny_vl_model_dir: Path) -> Any:
    """An independent scorer: one uncached forward of HuggingFace's Qwen2-VL over the whole
    sequence, pixels through its own processor call path."""
    import torch
    from transformers import AutoModelForImageTextToText, Qwen2VLImageProcessorPil

    model = AutoModelForImageTextToText.from_pretrained(tiny_vl_model_dir, dtype=torch.float32).eval()
    processor = Qwen2VLImageProcessorPil.from_pretrained(tiny_vl_model_dir)
    pad = model.config.image_token_id

    def score(prompt_ids: list[int], completion_ids: list[int], images: list[bytes]) -> list[float]:
        import io

        from PIL import Image

        pixels = processor(images=[Image.open(io.BytesIO(b)).convert("RGB") for b in images], return_tensors="pt")
        ids = torch.tensor([prompt_ids + completion_ids])
        with torch.inference_mode():
            model.model.rope_deltas = None
            logits = model(
                input_ids=ids,
                pixel_values=pixels["pixel_values"],
                image_grid_thw=pixels["image_grid_thw"],
                mm_token_type_ids=(ids == pad).to(torch.int32),
            ).logits[0]
        logprobs = torch.log_softmax(logits.float(), dim=-1)
        start = len(prompt_ids) - 1
        return [float(logprobs[start + i, t]) for i, t in enumerate(completion_ids)]

    score.pad = pad
    return score


def _user(*parts: Any) -> dict[str, Any]:
    content = [{"type": "image_url", "image_url": {"url": data_url(p)}} if isinstance(p, bytes) else {"type": "text", "text": p} for p in parts]
    return {"role": "user", "content": content}


def _chat(engine: EngineServer, messages: list[dict[str, Any]], max_tokens: int = 6, seed: int = 1) -> dict[str, Any]:
    body = {"model": engine.model, "messages": messages, "max_tokens": max_tokens, "seed": seed, "logprobs": True, "return_token_ids": True}
    response = httpx.post(f"{engine.url}/v1/chat/completions", json=body, timeout=120)
    assert response.status_code == 200, response.text
    return response.json()


def _sampled(answer: dict[str, Any]) -> tuple[list[int], list[float]]:
    choice = answer["choices"][0]
    return choice["token_ids"], [entry["logprob"] for entry in choice["logprobs"]["content"]]


def test_the_tiny_vl_model_is_deterministic_and_bounds_a_screenshots_tokens(tmp_path: Path, tiny_vl_model_dir: Path) -> None:
    import io
    import json

    from PIL import Image
    from transformers import AutoTokenizer, Qwen2VLImageProcessorPil

    from components.engine.tiny_vl_model import IMAGE_PAD, MAX_IMAGE_TOKENS, init_tiny_vl_model

    again = init_tiny_vl_model(tmp_path / "again", seed=0)
    other = init_tiny_vl_model(tmp_path / "other", seed=1)
    for name in ("model.safetensors", "tokenizer.json", "preprocessor_config.json", "config.json"):
        assert (again / name).read_bytes() == (tiny_vl_model_dir / name).read_bytes(), name
    assert (other / "model.safetensors").read_bytes() != (again / "model.safetensors").read_bytes()
    processor = Qwen2VLImageProcessorPil.from_pretrained(tiny_vl_model_dir)
    grid = processor(images=[Image.open(io.BytesIO(png(1280, 800)))], return_tensors="pt")["image_grid_thw"][0]
    assert 0 < int(grid.prod()) // 4 <= MAX_IMAGE_TOKENS
    image_token_id = json.loads((tiny_vl_model_dir / "config.json").read_text())["image_token_id"]
    assert AutoTokenizer.from_pretrained(tiny_vl_model_dir).convert_tokens_to_ids(IMAGE_PAD) == image_token_id


def test_image_parts_become_the_processors_vision_tokens_and_logprobs_are_the_models(vl_engine: EngineServer, reference: Any) -> None:
    answer = _chat(vl_engine, [_user("Click the red button.", SCREEN)])
    prompt = answer["prompt_token_ids"]
    assert prompt.count(reference.pad) == (200 // 28) * (320 // 28)  # 7 x 11 merged patches, the processor's grid
    ids, logprobs = _sampled(answer)
    assert logprobs == pytest.approx(reference(prompt, ids, [SCREEN]), abs=1e-4)
    tokenized = httpx.post(f"{vl_engine.url}/tokenize", json={"messages": [_user("Click the red button.", SCREEN)]}).json()
    assert tokenized["tokens"] == prompt


def test_the_model_sees_the_pixels_not_only_the_shape(vl_engine: EngineServer) -> None:
    red = _chat(vl_engine, [_user("Which colour?", SCREEN)], seed=5)
    green = _chat(vl_engine, [_user("Which colour?", OTHER_SCREEN)], seed=5)
    assert red["prompt_token_ids"] == green["prompt_token_ids"]  # equal ids: only the pixels differ
    assert _sampled(red)[1][0] != _sampled(green)[1][0]


def test_a_later_turn_with_a_new_screenshot_reuses_the_cache_and_keeps_the_models_logprobs(
    vl_engine: EngineServer, reference: Any
) -> None:
    first = _chat(vl_engine, [_user("Open the menu.", SCREEN)], seed=2)
    before = httpx.get(f"{vl_engine.url}/health").json()
    history = [_user("Open the menu.", SCREEN), {"role": "assistant", "content": "Done."}, _user(TALL, "And now?")]
    second = _chat(vl_engine, history, seed=3)
    after = httpx.get(f"{vl_engine.url}/health").json()
    ids2, logprobs2 = _sampled(second)
    assert logprobs2 == pytest.approx(reference(second["prompt_token_ids"], ids2, [SCREEN, TALL]), abs=1e-4)
    reused = _reused(after) - _reused(before)
    assert reused >= len(first["prompt_token_ids"]), (before, after)
    # The same conversation with another first screenshot must not take the cached one's attention.
    swapped = _chat(vl_engine, [_user("Open the menu.", OTHER_SCREEN), *history[1:]], seed=3)
    assert _sampled(swapped)[1] == pytest.approx(
        reference(swapped["prompt_token_ids"], _sampled(swapped)[0], [OTHER_SCREEN, TALL]), abs=1e-4
    )


def _reused(health: dict[str, Any]) -> int:
    return health["kv_cache"]["reused_tokens"]


@pytest.mark.parametrize(
    ("path", "body", "problem"),
    [
        ("/v1/completions", {"prompt": "<|vision_start|><|image_pad|><|vision_end|> what is this?"}, "carries no images"),
        ("/v1/chat/completions", {"messages": [{"role": "user", "content": "<|image_pad|> here"}]}, "1 image marker(s)"),
        (
            "/v1/chat/completions",
            {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,aGVsbG8="}}]}]},
            "cannot be read as an image",
        ),
    ],
)
def test_images_it_cannot_pair_with_their_tokens_are_a_400(vl_engine: EngineServer, path: str, body: dict[str, Any], problem: str) -> None:
    response = httpx.post(f"{vl_engine.url}{path}", json={"model": vl_engine.model, "max_tokens": 2, **body}, timeout=60)
    assert response.status_code == 400, response.text
    assert problem in response.json()["error"]["message"]
