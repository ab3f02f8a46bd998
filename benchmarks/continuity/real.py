"""The real harness CLIs, where installed, run through the recording proxy and the scripted engine.

Each run is a few rollouts of the continuity task (``shapes.TASK``) by the rollout runner,
exactly as an iteration runs them, against an ``openforge proxy --training`` process with
token provenance on or off; what the session file records is then measured like the
simulated shapes. A harness that is not installed is reported, not run.
"""

from __future__ import annotations

import os
from pathlib import Path

from components.core.config import ExperimentConfig
from components.core.services import free_port, openforge_argv, start_service
from components.rollout.harnesses import get_harness
from components.rollout.runner import run_rollout

from benchmarks.continuity.measure import Continuity, read_continuity
from benchmarks.continuity.shapes import MAX_TURNS, TASK

REPO = Path(__file__).resolve().parents[2]
HARNESSES = ("reference", "claude-code", "codex", "mini-swe-agent", "openclaw")


def installed(name: str) -> bool:
    return get_harness(name).is_installed()


def run_real(
    name: str, engine_url: str, work: Path, *, provenance: bool, rollouts: int = 1, proxy_args: tuple[str, ...] = ()
) -> tuple[Continuity, list[str]]:
    """``rollouts`` rollouts of ``name`` through one proxy; returns their continuity and statuses."""
    out = work / "sessions"
    port = free_port()
    flag = "--token-provenance" if provenance else "--no-token-provenance"
    argv = openforge_argv(
        "proxy", "--upstream", engine_url, "--out", str(out), "--port", str(port), "--training", flag, *proxy_args
    )
    env = {"PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    statuses = []
    with start_service("proxy", argv, port=port, log_dir=work / "logs", env=env) as proxy:
        for index in range(rollouts):
            rollout_id = f"continuity-s{index}"
            outcome = run_rollout(
                _config(name),
                iteration=0,
                rollout_id=rollout_id,
                task_dir=_task(work / "tasks"),
                proxy_url=proxy.url,
                trajectory=out / f"{rollout_id}.jsonl",
                out_dir=work / f"outcome-{index}",
            )
            statuses.append(outcome.status.value)
    return read_continuity(name, provenance, out), statuses


def _config(name: str) -> ExperimentConfig:
    return ExperimentConfig.model_validate(
        {
            "name": "continuity",
            "tasks": {"source": "unused"},
            "harness": {"name": name, "max_turns": MAX_TURNS, "max_tokens": 512},
            "rollout": {"time_limit_s": 300},
        }
    )


def _task(root: Path) -> Path:
    task = root / "continuity"
    task.mkdir(parents=True, exist_ok=True)
    (task / "task.yaml").write_text(
        f'id: continuity\nprompt: "{TASK}"\nverifier: {{command: ["test", "-f", "notes.txt"], timeout_s: 10}}\n'
    )
    return task
