"""Fixtures for the rollout tests: the fake OpenAI server, task folders and configs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from tests.components.rollout._fake_openai import FakeOpenAI, LoopThread, Turn

from components.core.config import ExperimentConfig


@pytest.fixture
def fake_openai(tmp_path: Path) -> Iterator[Callable[..., FakeOpenAI]]:
    """Factory: ``fake_openai(turns, record_dir=None, fail_status=None)`` starts one fake server."""
    loop = LoopThread()
    runners: list[web.AppRunner] = []

    async def start(fake: FakeOpenAI) -> None:
        runner = web.AppRunner(fake.app(), shutdown_timeout=1.0)  # do not wait out a scripted delay
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        fake.url = f"http://127.0.0.1:{port}"
        runners.append(runner)

    def make(turns: list[Turn], **options: Any) -> FakeOpenAI:
        fake = FakeOpenAI(turns=turns, **options)
        loop.run(start(fake))
        return fake

    yield make
    for runner in runners:
        loop.run(runner.cleanup())
    loop.close()


@pytest.fixture
def rollout_config() -> Callable[..., ExperimentConfig]:
    """Factory for a small experiment config; keyword sections override the defaults."""

    def make(**sections: Any) -> ExperimentConfig:
        raw: dict[str, Any] = {
            "name": "rollout-test",
            "tasks": {"source": "unused"},
            "harness": {"max_turns": 4, "max_tokens": 16},
            "rollout": {"time_limit_s": 30},
        }
        for key, value in sections.items():
            raw[key] = {**raw.get(key, {}), **value} if isinstance(value, dict) else value
        return ExperimentConfig.model_validate(raw)

    return make


def write_task(root: Path, task_id: str, *, verify: str = "import sys; sys.exit(0)", **fields: Any) -> Path:
    """Write a task folder ``root/task_id`` with a task.yaml and a verify.py; returns the folder."""
    import yaml

    task_dir = root / task_id
    task_dir.mkdir(parents=True, exist_ok=True)
    spec: dict[str, Any] = {
        "id": task_id,
        "prompt": f"do {task_id}",
        "verifier": {"command": ["python3", "{task_dir}/verify.py"], "timeout_s": 10},
        **fields,
    }
    (task_dir / "task.yaml").write_text(yaml.safe_dump({k: v for k, v in spec.items() if v is not None}))
    (task_dir / "verify.py").write_text(verify + "\n")
    return task_dir


@pytest.fixture
def proxy(fake_openai, tmp_path: Path):
    """A fake proxy that records calls into tmp_path/trajectories and answers 'done'."""
    (tmp_path / "trajectories").mkdir()
    return fake_openai([Turn(content="done")], record_dir=tmp_path / "trajectories")


@pytest.fixture
def make_task(tmp_path: Path) -> Callable[..., Path]:
    """Factory: ``make_task(task_id, verify=..., **task_yaml_fields)`` writes a task under tmp_path/tasks."""
    return lambda task_id, **kw: write_task(tmp_path / "tasks", task_id, **kw)


@pytest.fixture
def gui_rollout(fake_openai, rollout_config, tmp_path: Path) -> Callable[..., tuple[Any, FakeOpenAI]]:
    """Factory: ``gui_rollout(adapter, task_dir, max_turns=4)`` runs sample 0 of the task with a
    scripted GUI harness against the fake proxy (which records each call); (outcome, fake)."""
    from components.rollout.runner import run_rollout

    def run(adapter: Any, task_dir: Path, max_turns: int = 4) -> tuple[Any, FakeOpenAI]:
        rollout_id = f"{task_dir.name}-s0"
        sessions = tmp_path / "sessions"
        sessions.mkdir()
        fake = fake_openai([Turn(content="next")], record_dir=sessions)
        outcome = run_rollout(
            rollout_config(harness={"max_turns": max_turns}, rollout={"time_limit_s": 60}),
            iteration=0,
            rollout_id=rollout_id,
            task_dir=task_dir,
            proxy_url=fake.url,
            trajectory=sessions / f"{rollout_id}.jsonl",
            out_dir=tmp_path / "out",
            adapter=adapter,
        )
        return outcome, fake

    return run
