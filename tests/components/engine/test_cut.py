"""The straggler cut on the engine's side: the serve step's watch declares it, the engines serve it.

vLLM's side is checked without vLLM: the launch the serve step builds must import the
middleware from vLLM's working directory in a bare interpreter and answer the route with
it (tests/e2e/test_straggler_cut.py runs the whole cut on the dev engine).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from components.core.config import ExperimentConfig
from components.core.outcome import Outcome, RolloutStatus
from components.core.storage import RunLayout, open_store
from components.engine import cut_route
from components.engine.cut_watch import CutRule, CutWatch


def test_the_rule_needs_the_fraction_rounded_up_and_waits_the_grace() -> None:
    rule = CutRule(total=10, fraction=0.8, grace_s=5)
    assert rule.needed == 8
    assert CutRule(total=3, fraction=0.5, grace_s=0).needed == 2
    assert CutRule(total=10, fraction=0.01, grace_s=0).needed == 1
    assert not rule.due(None, 1e9)
    assert not rule.due(100.0, 104.9)
    assert rule.due(100.0, 105.0)


def _config(tmp_path: Path, fraction: float, grace_s: float) -> ExperimentConfig:
    return ExperimentConfig.model_validate(
        {"name": "cut", "tasks": {"source": "unused"}, "storage": {"uri": f"file://{tmp_path / 'store'}"}, "rollout": {"finish_fraction": fraction, "grace_s": grace_s}}
    )


def _outcome(rollout_id: str) -> bytes:
    task, sample = rollout_id.rsplit("-s", 1)
    return Outcome(rollout_id=rollout_id, task_id=task, sample_index=int(sample), iteration=0, status=RolloutStatus.OK).model_dump_json().encode()


def _wait(predicate: Any, timeout_s: float = 10.0) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def test_the_watch_declares_the_cut_once_the_fraction_ended_and_the_grace_passed(tmp_path: Path) -> None:
    config = _config(tmp_path, fraction=0.5, grace_s=0.5)
    store, layout = open_store(config.storage.uri), RunLayout("cut")
    ids = ["a-s0", "a-s1", "b-s0", "b-s1"]
    state, said = tmp_path / "cut.json", []
    with CutWatch(config, 0, store, state, say=said.append, poll_s=0.02):
        time.sleep(0.1)  # no plan yet (prepare still writing): the watch waits for it
        store.put_bytes(layout.plan(0), json.dumps({"rollouts": [{"rollout_id": i} for i in ids]}).encode())
        store.put_bytes(layout.outcome(0, "a-s0"), _outcome("a-s0"))
        time.sleep(0.8)
        assert not state.exists(), "one of four ended: under the fraction, no cut however long"
        reached = time.time()
        store.put_bytes(layout.outcome(0, "b-s1"), _outcome("b-s1"))
        assert _wait(state.exists)
        cut_after = time.time() - reached
    assert 0.4 <= cut_after < 5, "the grace is waited, then the cut comes at the next poll"
    declared = json.loads(state.read_bytes())
    assert declared["cut"] is True and declared["total"] == 4 and declared["ended_at_threshold"] == 2
    assert "2 of 4 rollouts had ended" in declared["reason"]
    assert json.loads(store.get_bytes(layout.straggler_cut(0))) == declared, "the store keeps the record"
    assert any("the rest are cut in 0.5s" in line for line in said)


def test_a_watch_that_cannot_read_the_plan_says_so_and_never_cuts(tmp_path: Path) -> None:
    config = _config(tmp_path, fraction=0.5, grace_s=0)
    store, layout = open_store(config.storage.uri), RunLayout("cut")
    store.put_bytes(layout.plan(0), b"not json")
    said: list[str] = []
    with CutWatch(config, 0, store, tmp_path / "cut.json", say=said.append, poll_s=0.02):
        assert _wait(lambda: said)
    assert "waits for every rollout" in said[0]
    assert not (tmp_path / "cut.json").exists()


async def _asgi_get(app: Any, path: str) -> tuple[int, bytes]:
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app({"type": "http", "method": "GET", "path": path}, None, send)
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


def test_the_middleware_answers_the_route_from_the_file_and_passes_the_rest_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def inner(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 418, "headers": []})
        await send({"type": "http.response.body", "body": scope["path"].encode()})

    app = cut_route.CutRoute(inner)
    state = tmp_path / "cut.json"
    monkeypatch.setenv(cut_route.CUT_FILE_ENV, str(state))
    assert asyncio.run(_asgi_get(app, cut_route.CUT_ROUTE)) == (200, cut_route.NOT_CUT), "no cut until the file exists"
    state.write_text('{"cut": true, "reason": "r"}')
    assert asyncio.run(_asgi_get(app, cut_route.CUT_ROUTE)) == (200, b'{"cut": true, "reason": "r"}')
    assert asyncio.run(_asgi_get(app, "/v1/models")) == (418, b"/v1/models")


def test_vllm_is_launched_with_the_middleware_it_can_import_from_its_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_model_dir: Path
) -> None:
    from components.engine import vllm_serve

    launches = []
    monkeypatch.setattr(vllm_serve, "run_engine", lambda launch, *args: launches.append(launch) or 0)
    state = tmp_path / "cut.json"
    state.write_text('{"cut": true, "reason": "from the watch"}')
    vllm_serve.serve_vllm(_config(tmp_path, 0.5, 0), tiny_model_dir, tmp_path / "work", host="127.0.0.1", port=1, cut_file=state)
    (launch,) = launches
    assert launch.argv[launch.argv.index("--middleware") + 1] == cut_route.VLLM_MIDDLEWARE
    assert launch.env[cut_route.CUT_FILE_ENV] == str(state)
    # What vLLM does with --middleware: import the class by name from its cwd, in an interpreter without OpenForge.
    probe = (
        "import asyncio, importlib; module, name = %r.rsplit('.', 1); cls = getattr(importlib.import_module(module), name);"
        "sent = []; send = lambda m: sent.append(m) or asyncio.sleep(0);"
        "asyncio.run(cls(None)({'type': 'http', 'method': 'GET', 'path': %r}, None, send)); print(sent[1]['body'].decode())"
    ) % (cut_route.VLLM_MIDDLEWARE, cut_route.CUT_ROUTE)
    out = subprocess.run([sys.executable, "-I", "-c", probe], cwd=launch.cwd, env={**launch.env, "PYTHONSAFEPATH": ""}, capture_output=True, text=True)
    assert out.returncode != 0, "-I leaves the working directory off the path: the probe below adds it as python -m does"
    out = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, ''); exec({probe!r})"], cwd=launch.cwd, env=launch.env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["reason"] == "from the watch"


def test_without_a_cut_file_vllm_gets_no_middleware(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_model_dir: Path) -> None:
    from components.engine import vllm_serve

    launches = []
    monkeypatch.setattr(vllm_serve, "run_engine", lambda launch, *args: launches.append(launch) or 0)
    vllm_serve.serve_vllm(_config(tmp_path, 0.5, 0), tiny_model_dir, tmp_path / "work", host="127.0.0.1", port=1)
    assert "--middleware" not in launches[0].argv and cut_route.CUT_FILE_ENV not in launches[0].env
