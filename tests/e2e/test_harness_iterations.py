"""A whole RL iteration inside each real harness: Claude Code, Codex, OpenClaw and
mini-swe-agent run through the proxy sidecar against the dev engine in choice mode, and
the iteration records, scores, trains and commits a checkpoint whose weights moved.

Each runs the harness's own example config (examples/<harness>.yaml) with its storage and
tracking moved into the test's folder, under `openforge run`'s default runtime: each
rollout pod sandboxed (docs/executor.md). To keep the file's CI time down it runs one of
the example's 4 tasks of examples/tasks/shell (one GRPO group of 2 rollouts, not 8) and one
training epoch, not 2: on 2 CPU cores every training row of a ~16k-token prompt costs
~15-30 s a pass, and OpenClaw's iteration took 781 s with the example's full settings (18
rows, 2 epochs). Seeded sampling makes each draw reproducible (its seed comes from the
rollout and its message count); sorted-names is the task whose group passes one rollout
and fails the other under every harness, with a wide margin (its right command's
probability ~0.42 at checkpoint 0; the draws pick it below ~0.28 and above ~0.80), so
every run has a passing, a failing rollout and a group to train on.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from rich.console import Console
from tests._missing import require_harness

from components.core.checkpoints import committed_versions
from components.core.config import load_config
from components.core.storage import RunLayout, get_dir, open_store
from components.core.trajectory import RecordedCall
from pipelines.executor import sandbox_problem
from pipelines.run import run_experiment

REPO = Path(__file__).resolve().parents[2]
# The default row limit the trainer once had: these harnesses' prompts exceed it.
OLD_PROMPT_LIMIT = 8192
# What each harness's history allows: OpenClaw moves a message to the end of every
# request (docs/harnesses.md), so each of its calls is a rewrite branch, not a continuation.
CONTINUES = {"claude-code": True, "codex": True, "openclaw": False, "mini-swe-agent": True}
LONG_PROMPTS = {"claude-code", "codex", "openclaw"}
# The tasks the test runs, of the example's task set (module docstring).
TASKS = ("sorted-names",)
# Where namespaces cannot be made, the harness is still worth testing, as plain processes.
RUNTIME = "process" if sandbox_problem() else "sandbox"


def _weights(store, layout: RunLayout, version: int, dest: Path) -> dict:
    from safetensors.torch import load_file

    get_dir(store, layout.checkpoint(version), dest)
    return load_file(dest / "model.safetensors")


@pytest.mark.slow
@pytest.mark.timeout(1500)  # 700 s seen for Claude Code in CI's clean run at 8 rollouts and 2 epochs; OpenClaw ~50 s a rollout on 2 busy cores
@pytest.mark.parametrize("harness", list(CONTINUES))
def test_one_iteration_in_the_real_harness_records_scores_and_trains(
    harness: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_harness(harness)
    monkeypatch.chdir(REPO)  # the harnesses are installed under the repository's .openforge
    config = load_config(REPO / "examples" / f"{harness}.yaml").model_copy(deep=True)
    config.storage.uri = f"file://{tmp_path / 'store'}"
    config.tracking.uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    for task_id in TASKS:
        shutil.copytree(REPO / config.tasks.source / task_id, tmp_path / "tasks" / task_id)
    config.tasks.source, config.algorithm.epochs = str(tmp_path / "tasks"), 1
    out = io.StringIO()

    logged = run_experiment(config, console=Console(file=out, width=100), workdir=tmp_path / ".openforge", runtime=RUNTIME)

    store, layout = open_store(config.storage.uri), RunLayout(config.name)
    assert committed_versions(store, layout) == [0, 1], out.getvalue()
    plan = json.loads(store.get_bytes(layout.plan(0)))
    assert len(plan["rollouts"]) == len(TASKS) * config.rollout.samples_per_task
    statuses, prompt_lengths = {}, []
    for rollout in plan["rollouts"]:
        outcome = json.loads(store.get_bytes(layout.outcome(0, rollout["rollout_id"])))
        statuses[rollout["rollout_id"]] = (outcome["status"], outcome["passed"])
        assert outcome["extra"]["harness"] == harness and outcome["extra"]["harness_confined"] == (RUNTIME == "sandbox")
        calls = [RecordedCall.model_validate_json(line) for line in store.get_bytes(layout.trajectory(0, rollout["rollout_id"])).splitlines()]
        assert calls and all(c.sampling.seed is not None for c in calls if c.ok)
        prompt_lengths += [len(c.prompt_token_ids) for c in calls if c.ok]
    assert all(status == "ok" for status, _ in statuses.values()), statuses
    passed = [p for _, p in statuses.values()]
    assert any(passed) and not all(passed), f"choice mode should both pass and fail some rollouts: {statuses}"

    metrics = logged[0]
    print(f"{harness}: {metrics}")  # continuity per harness, in the test log
    assert metrics["batch/trained_tokens"] > 0
    assert metrics["batch/dropped_rows"] == 0
    if harness in LONG_PROMPTS:
        assert max(prompt_lengths) > OLD_PROMPT_LIMIT  # and yet no row was dropped
    assert metrics["batch/merge_breaks"] == 0
    if CONTINUES[harness]:
        assert metrics["batch/merge_continuations"] > 0
    else:
        assert metrics["batch/merge_branches/rewrite"] > 0
    before = _weights(store, layout, 0, tmp_path / "v0")
    after = _weights(store, layout, 1, tmp_path / "v1")
    assert any(not before[name].equal(after[name]) for name in before), "the committed checkpoint did not change"
