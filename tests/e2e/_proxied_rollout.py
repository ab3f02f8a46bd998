"""One rollout of a real harness through a real recording proxy (training mode) to an engine.

Shared by the end-to-end tests that vary the engine (the scripted dev engine, real vLLM)
or what they check of the records; the task is test_harnesses.py's write-greeting task.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests._missing import require_harness
from tests.e2e.test_harnesses import _task

from components.core.config import ExperimentConfig
from components.core.outcome import Outcome
from components.core.services import openforge_argv, start_on_free_port
from components.core.trajectory import RecordedCall, read_session
from components.rollout.harnesses import get_harness
from components.rollout.runner import run_rollout

REPO = Path(__file__).resolve().parents[2]
ROLLOUT_ID = "write-greeting-s0"


@dataclass(frozen=True)
class ProxiedRollout:
    outcome: Outcome
    calls: list[RecordedCall]
    proxy_log: str  # the tail, for a failure message


def run_proxied_rollout(harness: str, upstream: str, tmp_path: Path, name: str, settings: dict[str, Any]) -> ProxiedRollout:
    """Run ``harness`` (skipped, or failed under CI=true, when missing: tests/_missing.py) with ``settings``
    (the config's ``harness`` and ``rollout`` sections) against ``upstream``."""
    require_harness(harness)
    adapter = get_harness(harness)
    sessions = tmp_path / "sessions"
    config = ExperimentConfig.model_validate(
        {
            "name": name,
            "tasks": {"source": "unused"},
            "harness": {"name": harness, **settings["harness"]},
            "rollout": settings["rollout"],
        }
    )
    def argv(port: int) -> list[str]:
        return openforge_argv("proxy", "--upstream", upstream, "--out", str(sessions), "--port", str(port), "--training")

    with start_on_free_port("proxy", argv, log_dir=tmp_path / "logs", env={"PYTHONPATH": str(REPO)}) as proxy:
        outcome = run_rollout(
            config,
            iteration=0,
            rollout_id=ROLLOUT_ID,
            task_dir=_task(tmp_path / "tasks"),
            proxy_url=proxy.url,
            trajectory=sessions / f"{ROLLOUT_ID}.jsonl",
            out_dir=tmp_path / "out",
            adapter=adapter,
        )
        proxy_log = proxy.log_tail()
    return ProxiedRollout(outcome, read_session(sessions / f"{ROLLOUT_ID}.jsonl"), proxy_log)
