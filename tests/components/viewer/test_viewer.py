"""The trajectory viewer (`openforge view`, components/viewer/) as a real process over the
store of a real quickstart iteration: every page answers, the rollout page shows the
conversation, and the training view counts exactly the trained tokens of the batch."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest
from tests.components.viewer._batch import trained_tokens_by_rollout
from tests.components.viewer._serve import serve_and_get, start_viewer

from components.core.services import Service
from components.core.storage import RunLayout, open_store


@pytest.fixture(scope="module")
def viewer(quickstart_store: tuple[str, Path]) -> Iterator[Service]:
    uri, work = quickstart_store
    with start_viewer(uri, work / "logs") as service:
        yield service


def _get(viewer: Service, path: str, status: int = 200) -> str:
    response = httpx.get(f"{viewer.url}{path}", timeout=120)
    assert response.status_code == status, (path, response.text[-500:])
    return response.text


def test_the_pages_walk_from_the_run_to_a_rollout_and_what_the_trainer_saw(
    viewer: Service, quickstart_store: tuple[str, Path], tmp_path: Path
) -> None:
    uri, _ = quickstart_store
    store = open_store(uri)
    layout = RunLayout("quickstart")
    plan = json.loads(store.get_bytes(layout.plan(0)))
    rewards = {r["rollout_id"]: r for r in json.loads(store.get_bytes(layout.rewards(0)))["records"]}

    assert 'href="/runs/quickstart"' in _get(viewer, "/")
    assert 'href="/runs/quickstart/iterations/0"' in _get(viewer, "/runs/quickstart")
    iteration = _get(viewer, "/runs/quickstart/iterations/0")
    for rollout in plan["rollouts"]:
        assert f"/rollouts/{rollout['rollout_id']}\"" in iteration

    trained = trained_tokens_by_rollout(store, layout, 0, tmp_path)
    in_batch = [rid for rid, r in rewards.items() if r["usable"] and trained[rid]]
    assert in_batch, "the quickstart's first iteration trains on some rollout"
    rollout_id = in_batch[0]
    page = _get(viewer, f"/runs/quickstart/iterations/0/rollouts/{rollout_id}")
    calls = [json.loads(line) for line in store.get_bytes(layout.trajectory(0, rollout_id)).splitlines()]
    prompt = calls[-1]["request"]["messages"][0]["content"]
    assert _visible(prompt) in " ".join(page.split()) and f"{len(calls)} call(s)" in page

    training = _get(viewer, f"/runs/quickstart/iterations/0/rollouts/{rollout_id}/training")
    shown = int(re.search(r"trained tokens: <b id='trained'>(\d+)</b>", training).group(1))
    assert shown == trained[rollout_id] > 0


def test_what_the_store_does_not_hold_is_a_404_and_the_viewer_keeps_answering(viewer: Service) -> None:
    assert "does not exist" in _get(viewer, "/runs/quickstart/iterations/7", status=404)
    assert "does not exist" in _get(viewer, "/runs/quickstart/iterations/0/images/missing.png", status=404)
    _get(viewer, "/runs/quickstart/iterations/0/images/..%2Fplan.json", status=404)
    assert "No recorded call" in _get(viewer, "/runs/quickstart/iterations/0/rollouts/no-such-rollout")
    assert 'href="/runs/quickstart"' in _get(viewer, "/")


def test_a_screenshot_in_a_call_is_shown_from_the_image_store(tmp_path: Path) -> None:
    """A hand-made store: one web rollout whose call holds a stored screenshot."""
    from components.viewer.app import Viewer
    from tests.components.proxy._images import png

    store = open_store(f"file://{tmp_path / 'store'}")
    layout = RunLayout("web")
    shot = png(40, 20)
    digest = hashlib.sha256(shot).hexdigest()
    store.put_bytes(f"{layout.images(0)}/{digest}.png", shot)
    store.put_bytes("web/state.json", b"{}")
    store.put_bytes(layout.plan(0), json.dumps({"rollouts": [{"rollout_id": "w-s0", "task_id": "w", "group_id": "g"}]}).encode())
    ref = {"sha256": digest, "mime": "image/png", "bytes": len(shot), "width": 40, "height": 20,
           "file": f"images/{digest}.png", "data_url_prefix": "data:image/png;base64,"}  # fmt: skip
    call = _call_with_image(ref)
    store.put_bytes(layout.trajectory(0, "w-s0"), (json.dumps(call) + "\n").encode())

    page, image = serve_and_get(Viewer(store).app(), ["/runs/web/iterations/0/rollouts/w-s0", f"/runs/web/iterations/0/images/{digest}.png"])
    assert f"src='/runs/web/iterations/0/images/{digest}.png'" in page.text
    assert image.content == shot


def _call_with_image(ref: dict[str, Any]) -> dict[str, Any]:
    content = [{"type": "text", "text": "What is on screen?"}, {"type": "image_url", "image_url": {"url": ref}}]
    return {
        "session_id": "w-s0", "call_index": 0, "api": "chat.completions", "started_at": 0.0, "latency_ms": 5.0,
        "upstream_status": 200, "request": {"model": "m", "messages": [{"role": "user", "content": content}]},
        "response": {"choices": [{"message": {"role": "assistant", "content": "A button."}}]},
        "images": ["/request/messages/0/content/1/image_url/url"],
    }  # fmt: skip


def _visible(text: str) -> str:
    """Text as a page shows it: HTML entities for the characters escape() changes, spaces folded."""
    from html import escape

    return " ".join(escape(text).split())


def test_a_run_of_vision_tokens_shows_once_with_its_count_but_trained_tokens_each_alone() -> None:
    from components.viewer._rollout_html import _token_spans

    pads = ["<|image_pad|>"] * 96
    spans = _token_spans(["Look", *pads, "!"], ["prompt"] * 98, [None] * 98)
    assert spans[1] == "<span class='t-prompt'>&lt;|image_pad|&gt; ×96</span>" and len(spans) == 3
    trained = _token_spans(["ok"] * 9, ["trained"] * 9, [-0.5] * 9)
    assert len(trained) == 9 and "logprob -0.5000" in trained[0]
