"""Image parts on the dev engine: each image stands as a placeholder derived from its hash."""

from __future__ import annotations

import hashlib
from typing import Any

import httpx

from tests._servers import EngineServer
from tests.components.proxy._images import data_url, jpeg, png

SCREEN = png(32, 20)
BUTTON = jpeg(16, 16)


def _look(*images: str) -> list[dict[str, Any]]:
    parts = [{"type": "text", "text": "What is on screen?"}]
    parts += [{"type": "image_url", "image_url": {"url": url}} for url in images]
    return [{"role": "user", "content": parts}]


def _tokenize(engine: EngineServer, messages: list[dict[str, Any]]) -> httpx.Response:
    return httpx.post(f"{engine.url}/tokenize", json={"messages": messages}, timeout=60)


def test_each_image_becomes_its_hash_placeholder_and_token_ids_are_deterministic(dev_engine: EngineServer) -> None:
    screen, button = data_url(SCREEN), data_url(BUTTON, "image/jpeg")
    ids = _tokenize(dev_engine, _look(screen, button)).json()["tokens"]
    assert _tokenize(dev_engine, _look(screen, button)).json()["tokens"] == ids
    assert _tokenize(dev_engine, _look(button, screen)).json()["tokens"] != ids  # differs per image and place
    text = httpx.post(f"{dev_engine.url}/detokenize", json={"tokens": ids}).json()["prompt"]
    marks = [f"<|image:{hashlib.sha256(data).hexdigest()[:16]}|>" for data in (SCREEN, BUTTON)]
    assert f"What is on screen?\n{marks[0]}\n{marks[1]}<|im_end|>" in text


def test_a_chat_with_images_generates(client: Any, dev_engine: EngineServer) -> None:
    reply = client.chat.completions.create(
        model=dev_engine.model, messages=_look(data_url(SCREEN)), max_tokens=4, seed=1,
        extra_body={"return_token_ids": True},
    )  # fmt: skip
    assert reply.choices[0].finish_reason == "length"
    assert reply.model_extra["prompt_token_ids"] == _tokenize(dev_engine, _look(data_url(SCREEN))).json()["tokens"]


def test_an_image_it_cannot_read_is_a_400_naming_the_part(dev_engine: EngineServer) -> None:
    for url, problem in (("http://127.0.0.1:9/screen.png", "must hold a base64 data URL"), ("data:image/png;base64,@@", "not valid base64")):
        response = httpx.post(
            f"{dev_engine.url}/v1/chat/completions", json={"model": dev_engine.model, "messages": _look(url)}, timeout=60
        )
        assert response.status_code == 400
        error = response.json()["error"]
        assert problem in error["message"] and "messages[0].content[1]" in error["message"], error
