"""Session-wide fixtures: the tiny model and dev engines running in subprocesses."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests._servers import EngineServer, start_dev_engine

from components.engine import init_tiny_model


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The seed-0 tiny Qwen2 model, written once per test session."""
    return init_tiny_model(tmp_path_factory.mktemp("models") / "tiny-seed0", seed=0)


@pytest.fixture(scope="session")
def make_dev_engine(
    tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[..., EngineServer]]:
    """Factory: ``make_dev_engine(script=None, model_dir=None)`` starts one more dev engine.

    ``script`` is the scripted-mode JSON (a dict, written to a file for the engine);
    every engine started here is stopped at the end of the session.
    """
    started: list[EngineServer] = []
    logs = tmp_path_factory.mktemp("engine-logs")

    def start(script: dict[str, Any] | None = None, *, model_dir: Path | None = None) -> EngineServer:
        script_path = None
        if script is not None:
            script_path = logs / f"script-{len(started)}.json"
            script_path.write_text(json.dumps(script))
        engine = start_dev_engine(
            model_dir or tiny_model_dir, logs, script=script_path, name=f"dev-engine-{len(started)}"
        )
        started.append(engine)
        return engine

    yield start
    for engine in started:
        engine.stop()


@pytest.fixture(scope="session")
def dev_engine(make_dev_engine: Callable[..., EngineServer]) -> EngineServer:
    """A dev engine serving the tiny model freely (no script)."""
    return make_dev_engine()
