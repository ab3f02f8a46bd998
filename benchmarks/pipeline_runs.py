"""Run an experiment for a benchmark: its own store, tracking and executor folders under .bench/.

A benchmark never writes into the user's .openforge/: the config's storage and tracking
URIs are pointed into the benchmark's folder, which starts empty on every run.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from components.core.config import ExperimentConfig, load_config


@dataclass(frozen=True)
class FinishedRun:
    config: ExperimentConfig
    root: Path
    logged: dict[int, dict[str, float]]  # MLflow metrics by iteration, as run_experiment returns them
    wall_s: float  # the whole run_experiment call: tracker set-up, every iteration, the summary


def with_overrides(config: ExperimentConfig, overrides: Mapping[str, Any]) -> ExperimentConfig:
    """``config`` with dotted fields replaced (``{"rollout.concurrency": 32}``), validated again."""
    data = config.model_dump(mode="json")
    for dotted, value in overrides.items():
        *parents, leaf = dotted.split(".")
        node = data
        for part in parents:
            node = node[part]
        if leaf not in node:
            raise KeyError(f"override {dotted!r}: the config has no such field")
        node[leaf] = value
    return ExperimentConfig.model_validate(data)


def bench_config(path: Path, root: Path, overrides: Mapping[str, Any] | None = None) -> ExperimentConfig:
    """The config at ``path`` with its store and MLflow database inside ``root``."""
    overrides = {
        "storage.uri": (root / "runs").resolve().as_uri(),
        "storage.endpoint_url": None,
        "tracking.uri": f"sqlite:///{(root / 'mlflow.db').resolve()}",
        **(overrides or {}),
    }
    return with_overrides(load_config(path), overrides)


def run_fresh(config: ExperimentConfig, root: Path, console: Console | None = None, runtime: str | None = None) -> FinishedRun:
    """Empty ``root``, then run every iteration of ``config`` through ``run_experiment``, on
    ``runtime`` (default: `openforge run`'s, so a benchmark measures what users run)."""
    from pipelines.run import DEFAULT_RUNTIME, run_experiment

    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    started = time.monotonic()
    # it adds executor/<name>/ itself
    logged = run_experiment(config, console=console, workdir=root, runtime=runtime or DEFAULT_RUNTIME)
    return FinishedRun(config=config, root=root, logged=logged, wall_s=time.monotonic() - started)


def config_summary(config: ExperimentConfig, seeded: bool = False) -> str:
    """What a benchmark's doc section says about the run: tasks, sizes, harness, GRPO settings
    (and the config's seed, unless the benchmark sets one per run: ``seeded``)."""
    a, r, h = config.algorithm, config.rollout, config.harness
    seed = "" if seeded else f"seed {config.seed}, "
    return (
        f"tasks `{config.tasks.source}`, {seed}{config.iterations} iterations, {r.samples_per_task} "
        f"samples per task, concurrency {r.concurrency}, harness `{h.name}` with {h.max_turns} model call(s) of at "
        f"most {h.max_tokens} tokens, GRPO learning rate {a.learning_rate:g}, {a.epochs} epoch(s), micro batch "
        f"{a.micro_batch_size}, loss aggregation {a.loss_agg_mode}"
    )


def decisions_text(config: ExperimentConfig) -> str:
    """What the policy decides in choice mode, read from the tasks' ``choices``: decisions per
    task and candidates per decision (a turn with one candidate is forced, not decided)."""
    from collections import Counter

    from components.rollout.tasks import load_task_set

    tasks = load_task_set(config.tasks.source)
    per_task = Counter(sum(len(turn) > 1 for turn in task.choices or []) for task in tasks)
    per_decision = Counter(len(turn) for task in tasks for turn in task.choices or [] if len(turn) > 1)

    def spread(counts: Counter, unit: str) -> str:
        if len(counts) == 1:
            [(value, _)] = counts.items()
            return f"each {unit.format(value)}"
        return ", ".join(f"{n} {unit.format(value)}" for value, n in sorted(counts.items()))

    decisions = sum(per_decision.values())
    return (
        f"in choice mode the policy draws among the candidate turns its tasks list: {len(tasks)} tasks, "
        f"{spread(per_task, 'with {} decision(s)')}; {decisions} decisions, {spread(per_decision, 'between {} candidates')}. "
        "A turn with one candidate is forced and not trained on"
    )
