"""Images through the proxy (real HTTP on 127.0.0.1, fake engine): stored once, referenced, rebuilt exactly."""

from __future__ import annotations

import base64
import binascii
import copy
import hashlib
import stat
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.core import ImageRef, read_session, rebuild_request, rebuild_upstream_request, referenced_images
from components.proxy import images
from components.proxy.errors import ProxyError
from tests.components.proxy._images import b64, data_url, jpeg, opened_size, png

SCREEN = png(64, 40)  # the screenshot that recurs across calls
BUTTON = jpeg(48, 32)
OTHER = png(30, 20, color=(0, 120, 0))


def _post(proxy: str, route: str, body: dict[str, Any], session: str = "img") -> httpx.Response:
    response = httpx.post(f"{proxy}/s/{session}/v1/{route}", json=body, timeout=60)
    assert response.status_code == 200, response.text
    return response


def _check_store(out: Path, expected: dict[bytes, str]) -> None:
    """Each image once, named by its hash, 0600, byte for byte, and a valid file of the right size."""
    files = sorted((out / "images").iterdir())
    assert [f.name for f in files] == sorted(
        f"{hashlib.sha256(data).hexdigest()}.{ext}" for data, ext in expected.items()
    )
    for data, ext in expected.items():
        path = out / "images" / f"{hashlib.sha256(data).hexdigest()}.{ext}"
        assert path.read_bytes() == data
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert opened_size(path.read_bytes()) == {id(SCREEN): (64, 40), id(BUTTON): (48, 32), id(OTHER): (30, 20)}[id(data)]


def _refs(call: Any) -> list[ImageRef]:
    record = {"request": call.request}
    if call.translation is not None:
        record["translation"] = {"upstream_request": call.translation.upstream_request}
    refs = []
    for pointer in call.images:
        node: Any = record
        for part in pointer.strip("/").split("/"):
            node = node[int(part)] if isinstance(node, list) else node[part]
        refs.append(ImageRef.model_validate(node))
    return refs


def test_chat_images_are_stored_once_and_the_request_rebuilt_byte_for_byte(fake_proxy: str, fake_engine, tmp_path: Path) -> None:
    screen_url, button_url = data_url(SCREEN), data_url(BUTTON, "image/jpeg")
    first = {"model": "m", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "Click the button."},
        {"type": "image_url", "image_url": {"url": screen_url, "detail": "high"}},
    ]}]}  # fmt: skip
    second = {"model": "m", "messages": [*first["messages"], {"role": "assistant", "content": "ok"}, {"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": screen_url}}, {"type": "image_url", "image_url": {"url": button_url}},
    ]}]}  # fmt: skip
    sent = [copy.deepcopy(first), copy.deepcopy(second)]
    _post(fake_proxy, "chat/completions", first)
    assert fake_engine.requests[-1]["messages"] == first["messages"]  # the engine needs the images themselves
    _post(fake_proxy, "chat/completions", {**second, "stream": True})
    sent[1]["stream"] = True
    assert fake_engine.requests[-1]["messages"] == second["messages"]

    out = tmp_path / "out"
    _check_store(out, {SCREEN: "png", BUTTON: "jpg"})
    calls = read_session(out / "img.jsonl")
    assert calls[0].images == ["/request/messages/0/content/1/image_url/url"]
    assert calls[1].images == [
        "/request/messages/0/content/1/image_url/url",
        "/request/messages/2/content/0/image_url/url",
        "/request/messages/2/content/1/image_url/url",
    ]
    screen_ref = calls[0].request["messages"][0]["content"][1]["image_url"]["url"]
    assert screen_ref == {
        "sha256": hashlib.sha256(SCREEN).hexdigest(), "mime": "image/png", "bytes": len(SCREEN), "width": 64,
        "height": 40, "file": f"images/{hashlib.sha256(SCREEN).hexdigest()}.png", "data_url_prefix": "data:image/png;base64,",
    }  # fmt: skip
    assert calls[0].request["messages"][0]["content"][1]["image_url"]["detail"] == "high"
    line = (out / "img.jsonl").read_text()
    assert b64(SCREEN) not in line and b64(BUTTON) not in line  # the record holds references, not base64
    for call, original in zip(calls, sent):
        rebuilt = rebuild_request(call, out / "images")
        assert rebuilt == original
        assert [part["image_url"]["url"] for m in rebuilt["messages"] if isinstance(m["content"], list)
                for part in m["content"] if part["type"] == "image_url"] == [
            part["image_url"]["url"] for m in original["messages"] if isinstance(m["content"], list)
            for part in m["content"] if part["type"] == "image_url"]  # fmt: skip
        assert call.translation is None and rebuild_upstream_request(call, out / "images") is None
    assert referenced_images(calls[1]) == {f"images/{hashlib.sha256(d).hexdigest()}.{e}" for d, e in ((SCREEN, "png"), (BUTTON, "jpg"))}


def test_anthropic_images_in_blocks_and_tool_results_reach_the_engine_as_data_urls(fake_proxy: str, fake_engine, tmp_path: Path) -> None:
    def image(data: bytes, mime: str) -> dict[str, Any]:
        return {"type": "image", "source": {"type": "base64", "media_type": mime, "data": b64(data)}}

    body = {"model": "claude-x", "max_tokens": 32, "tools": [{"name": "computer", "input_schema": {"type": "object"}}], "messages": [
        {"role": "user", "content": [{"type": "text", "text": "Open the menu."}, image(SCREEN, "image/png")]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "computer", "input": {"action": "screenshot"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "done"}, image(BUTTON, "image/jpeg")]},
            {"type": "text", "text": "next"},
        ]},
    ]}  # fmt: skip
    original = copy.deepcopy(body)
    _post(fake_proxy, "messages", body)
    engine_got = fake_engine.requests[-1]
    assert engine_got["messages"][0]["content"] == [
        {"type": "text", "text": "Open the menu."}, {"type": "image_url", "image_url": {"url": data_url(SCREEN)}},
    ]  # fmt: skip
    assert engine_got["messages"][2] == {"role": "tool", "tool_call_id": "toolu_1", "content": "done"}
    assert engine_got["messages"][3] == {"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": data_url(BUTTON, "image/jpeg")}}, {"type": "text", "text": "next"},
    ]}  # fmt: skip

    out = tmp_path / "out"
    _check_store(out, {SCREEN: "png", BUTTON: "jpg"})
    [call] = read_session(out / "img.jsonl")
    assert call.images == [
        "/request/messages/0/content/1/source/data",
        "/request/messages/2/content/0/content/1/source/data",
        "/translation/upstream_request/messages/0/content/1/image_url/url",
        "/translation/upstream_request/messages/3/content/0/image_url/url",
    ]
    refs = _refs(call)
    assert [ref.data_url_prefix for ref in refs] == [None, None, "data:image/png;base64,", "data:image/jpeg;base64,"]
    assert [ref.sha256 for ref in refs[:2]] == [ref.sha256 for ref in refs[2:]]
    assert rebuild_request(call, out / "images") == original
    assert rebuild_upstream_request(call, out / "images") == engine_got
    assert "content[1] image in tool_result -> image_url part of the next user message" in call.translation.mapped[0]


def test_responses_input_images_and_computer_screenshots_are_recorded_by_reference(fake_proxy: str, fake_engine, tmp_path: Path) -> None:
    body = {"model": "computer-use", "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "Find the price."}, {"type": "input_image", "image_url": data_url(SCREEN)}]},
        {"type": "computer_call", "call_id": "cu_1", "action": {"type": "click", "x": 3, "y": 4}, "pending_safety_checks": []},
        {"type": "computer_call_output", "call_id": "cu_1", "output": {"type": "computer_screenshot", "image_url": data_url(BUTTON, "image/jpeg")}},
    ]}  # fmt: skip
    original = copy.deepcopy(body)
    _post(fake_proxy, "responses", body)
    engine_got = fake_engine.requests[-1]
    assert engine_got["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Find the price."}, {"type": "image_url", "image_url": {"url": data_url(SCREEN)}}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "cu_1", "type": "function", "function": {"name": "computer", "arguments": '{"type": "click", "x": 3, "y": 4}'}},
        ]},
        {"role": "tool", "tool_call_id": "cu_1", "content": ""},
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": data_url(BUTTON, "image/jpeg")}}]},
    ]  # fmt: skip
    out = tmp_path / "out"
    _check_store(out, {SCREEN: "png", BUTTON: "jpg"})
    [call] = read_session(out / "img.jsonl")
    assert call.images[:2] == ["/request/input/0/content/1/image_url", "/request/input/2/output/image_url"]
    assert rebuild_request(call, out / "images") == original
    assert rebuild_upstream_request(call, out / "images") == engine_got
    assert "input[1] computer_call -> assistant tool call 'computer'" in call.translation.mapped


def test_a_body_without_images_is_recorded_as_before(fake_proxy: str, tmp_path: Path) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "data:image/png;base64,AAAA is how a data URL looks"}]}
    _post(fake_proxy, "chat/completions", body)  # a string that starts like a data URL: walked, no image part found
    [call] = read_session(tmp_path / "out" / "img.jsonl")
    assert call.images == [] and call.request == body
    assert not (tmp_path / "out" / "images").exists()


JPEG_URL = data_url(BUTTON, "image/jpeg")


@pytest.mark.parametrize(
    ("route", "body", "expected"),
    [
        ("chat/completions", {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png,rawtext"}}]}]},
         "is a data URL that is not base64-encoded"),
        ("chat/completions", {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,@@@@"}}]}]},
         "is not valid base64"),
        ("chat/completions", {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": JPEG_URL.replace("jpeg", "png", 1)}}]}]},
         "is declared 'image/png' but its bytes are image/jpeg data"),
        ("chat/completions", {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": data_url(b"not an image at all")}}]}]},
         "not an image of any known type"),
        ("chat/completions", {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": data_url(SCREEN, "image/tiff")}}]}]},
         "records PNG, JPEG, GIF and WebP"),
        ("chat/completions", {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": data_url(SCREEN[:20])}}]}]},
         "not a readable image/png"),
        ("responses", {"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "data:image/jpeg;base64,aGl="}]}]},
         "non-canonical base64"),
        ("messages", {"max_tokens": 8, "messages": [{"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": b64(SCREEN)}}]}]},
         "is declared 'image/jpeg' but its bytes are image/png data"),
    ],
)  # fmt: skip
def test_a_bad_image_is_a_clear_400_in_the_api_shape_and_reaches_nobody(
    fake_proxy: str, fake_engine, tmp_path: Path, route: str, body: dict[str, Any], expected: str
) -> None:
    response = httpx.post(f"{fake_proxy}/s/bad/v1/{route}", json={"model": "m", **body})
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert expected in error["message"] and " at /" in error["message"], error  # names where the image is
    assert (response.json().get("type") == "error") == (route == "messages")  # Anthropic's shape for Messages
    assert fake_engine.requests == [] and not (tmp_path / "out" / "bad.jsonl").exists()
    assert httpx.post(f"{fake_proxy}/s/ok/v1/chat/completions", json={"messages": [{"role": "user", "content": "hi"}]}).status_code == 200


def test_an_image_already_stored_is_not_written_again(fake_engine, make_proxy, tmp_path: Path) -> None:
    out = tmp_path / "out"
    body = {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": data_url(OTHER)}}]}]}
    _post(make_proxy(fake_engine.url), "chat/completions", body)
    [stored] = (out / "images").iterdir()
    before = stored.stat()
    _post(make_proxy(fake_engine.url), "chat/completions", body)  # a restarted proxy, same directory
    assert [p.name for p in (out / "images").iterdir()] == [stored.name]  # no temporary files left either
    assert stored.stat().st_ino == before.st_ino and stored.stat().st_mtime_ns == before.st_mtime_ns
    assert len(read_session(out / "img.jsonl")) == 2


def test_images_are_on_disk_before_the_engine_sees_the_call_with_fsync_too(
    fake_engine, make_proxy, loop_thread, tmp_path: Path
) -> None:
    from aiohttp import web

    from tests.components.proxy.conftest import _serve

    out = tmp_path / "out"
    seen_at_arrival: list[list[str]] = []

    @web.middleware
    async def snapshot(request: web.Request, handler: Any) -> web.StreamResponse:
        if request.path.endswith("/chat/completions"):
            seen_at_arrival.append(sorted(p.name for p in (out / "images").glob("*")))
        return await handler(request)

    app = web.Application(middlewares=[snapshot], client_max_size=2**26)
    app.router.add_get("/v1/models", fake_engine._models)
    app.router.add_post("/v1/chat/completions", fake_engine._chat)
    runner, url = loop_thread.run(_serve(app))
    try:
        proxy = make_proxy(url, fsync=True)
        body = {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": data_url(BUTTON, "image/jpeg")}}]}]}
        _post(proxy, "chat/completions", body)
    finally:
        loop_thread.run(runner.cleanup())
    assert seen_at_arrival == [[f"{hashlib.sha256(BUTTON).hexdigest()}.jpg"]]
    assert rebuild_request(read_session(out / "img.jsonl")[0], out / "images") == body


def _strict_reference(text: str) -> bytes | None:
    """What the proxy accepted before its fast path: binascii's strict mode, then canonical padding bits."""
    try:
        data = binascii.a2b_base64(text, strict_mode=True)
    except (binascii.Error, ValueError):
        return None
    tail = text[-4:]
    return data if not tail or base64.b64encode(base64.b64decode(tail)).decode("ascii") == tail else None


@settings(max_examples=500, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=40).map(lambda raw: base64.b64encode(raw).decode("ascii")),
        st.text(alphabet="AQgw+/=\n é-_", max_size=12),
        # Padding with other bits in the last character's unused low bits ("aGl=" for "aGk="):
        # strict mode alone accepts these.
        st.tuples(st.binary(min_size=1, max_size=12).filter(lambda raw: len(raw) % 3), st.sampled_from("AQgwBRhx")).map(
            lambda pair: base64.b64encode(pair[0]).decode("ascii").rstrip("=")[:-1] + pair[1] + "=" * (-len(pair[0]) % 3)
        ),
    )
)
def test_the_fast_base64_path_accepts_exactly_what_the_strict_decoder_accepts(text: str) -> None:
    expected = _strict_reference(text)
    try:
        got = images._decode("$.image", text)
    except ProxyError:
        got = None
    assert got == expected
