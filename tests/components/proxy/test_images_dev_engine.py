"""Images end to end on the CPU: harness API -> proxy -> dev engine (placeholders) -> record -> rebuild."""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path
from typing import Any, Callable

import httpx
import pytest

from components.core import read_session, rebuild_request
from tests.components.proxy._images import b64, data_url, jpeg, png

SCREEN = png(32, 24)
BUTTON = jpeg(16, 16)


def _mark(data: bytes) -> str:
    return f"<|image:{hashlib.sha256(data).hexdigest()[:16]}|>"


def _chat() -> tuple[str, dict[str, Any]]:
    return "chat/completions", {"max_tokens": 3, "messages": [{"role": "user", "content": [
        {"type": "text", "text": "Where?"}, {"type": "image_url", "image_url": {"url": data_url(SCREEN)}},
        {"type": "image_url", "image_url": {"url": data_url(BUTTON, "image/jpeg")}},
    ]}]}  # fmt: skip


def _messages() -> tuple[str, dict[str, Any]]:
    image = lambda data, mime: {"type": "image", "source": {"type": "base64", "media_type": mime, "data": b64(data)}}  # noqa: E731
    return "messages", {"max_tokens": 3, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "Where?"}, image(SCREEN, "image/png")]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "computer", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [image(BUTTON, "image/jpeg")]}]},
    ]}  # fmt: skip


def _responses() -> tuple[str, dict[str, Any]]:
    return "responses", {"max_output_tokens": 3, "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "Where?"}, {"type": "input_image", "image_url": data_url(SCREEN)}]},
        {"type": "computer_call_output", "call_id": "c1", "output": {"type": "computer_screenshot", "image_url": data_url(BUTTON, "image/jpeg")}},
    ]}  # fmt: skip


@pytest.mark.parametrize("make", [_chat, _messages, _responses], ids=["chat", "messages", "responses"])
def test_every_api_sends_images_through_to_the_dev_engine_and_records_them(
    make: Callable[[], tuple[str, dict[str, Any]]], dev_engine, make_proxy, tiny_model_dir: Path, tmp_path: Path
) -> None:
    from transformers import AutoTokenizer

    route, body = make()
    body = {"model": "policy", **body}
    sent = copy.deepcopy(body)
    proxy = make_proxy(dev_engine.url, training=True)
    response = httpx.post(f"{proxy}/s/gui/v1/{route}", json=body, timeout=120)
    assert response.status_code == 200, response.text
    out = tmp_path / "out"
    [call] = read_session(out / "gui.jsonl")
    assert call.ok and len(call.images) >= 2
    prompt = AutoTokenizer.from_pretrained(tiny_model_dir).decode(call.prompt_token_ids)
    assert prompt.index(_mark(SCREEN)) < prompt.index(_mark(BUTTON))  # the policy saw both images, in order
    assert rebuild_request(call, out / "images") == sent
    assert sorted(p.name for p in (out / "images").iterdir()) == sorted(
        [f"{hashlib.sha256(SCREEN).hexdigest()}.png", f"{hashlib.sha256(BUTTON).hexdigest()}.jpg"]
    )


def test_a_body_of_tens_of_mb_with_twelve_screenshots_fits_the_default_cap(dev_engine, make_proxy, tmp_path: Path) -> None:
    screens = [png(900, 800, noise=True) for _ in range(6)]  # incompressible: ~2.2 MB each, as real screenshots are
    parts = [{"type": "image_url", "image_url": {"url": data_url(screens[i % 6])}} for i in range(12)]
    body = {"model": "policy", "max_tokens": 2, "messages": [{"role": "user", "content": [{"type": "text", "text": "Go."}, *parts]}]}
    raw = httpx.Request("POST", "http://127.0.0.1", json=body).read()
    assert 30 * 2**20 < len(raw) < 50 * 2**20
    proxy = make_proxy(dev_engine.url)  # default max_request_mb (64)
    response = httpx.post(f"{proxy}/s/big/v1/chat/completions", content=raw,
                          headers={"Content-Type": "application/json"}, timeout=300)  # fmt: skip
    assert response.status_code == 200, response.text[:500]
    out = tmp_path / "out"
    assert len(list((out / "images").iterdir())) == 6  # six distinct screenshots, each once
    assert (out / "big.jsonl").stat().st_size < 200_000  # references, not 35 MB of base64
    [call] = read_session(out / "big.jsonl")
    assert len(call.images) == 12 and rebuild_request(call, out / "images") == body
