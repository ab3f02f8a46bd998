"""One seed of `make bench-free-learning`, stage by stage, each stored as it ends (results.py).

All of a seed's runs share one store under ``<workdir>/<harness>/seed-<s>/``, so a stage cut off
mid-way resumes too: an evaluation with the same id skips its stored rollouts, and a run
continues from its last committed iteration.

    record          the reference teacher through the harness (`openforge record`)
    untrained_*     the untrained student (checkpoint base) on the training and held-out tasks
    sft             `openforge sft` on the passed sessions (the epoch of lowest held-out loss)
    sft_held_out    the SFT checkpoint on the held-out tasks
    grpo            `openforge run`: GRPO by free sampling from the SFT checkpoint
    grpo_held_out   its last checkpoint on the held-out tasks
    control         the same from the same checkpoint, rewards shuffled within each group
    distill         pure on-policy distillation from the same checkpoint, on the same budget,
                    the teacher being GRPO's last checkpoint (the best policy the seed made)
"""

from __future__ import annotations

import posixpath
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel
from rich.console import Console

from benchmarks.doc_sections import commit_text
from benchmarks.free_learning.results import BARRED_HARNESS, PassRates, RunCurve, SeedResult, results_folder, save_stage
from benchmarks.harness_learning.curve import verdicts
from benchmarks.pipeline_runs import bench_config
from components.core.config import ExperimentConfig
from components.core.metrics import read_metrics
from components.core.storage import ArtifactStore, RunLayout, open_store, run_layout

CONFIG = Path("examples/cold-start.yaml")
HELD_OUT = "examples/tasks/cold-start/held-out"
UNTRAINED_SAMPLES = 1  # a random tiny model writes no tool call: one sample per task says so
HELD_OUT_SAMPLES = 2
STAGES = ("record", "untrained_train", "untrained_held_out", "sft", "sft_held_out", "grpo", "grpo_held_out",
          "control", "distill")  # fmt: skip


class SftStage(BaseModel):
    sessions: int
    target_tokens: int
    chosen_epoch: int
    epochs: int
    val_loss: float | None  # at the chosen epoch
    left_out: dict[str, int]
    wall_s: float


# The harnesses the protocol runs in: examples/cold-start.yaml is mini-swe-agent's; Claude
# Code runs it as shipped, its own system prompt and tools (mini-swe-agent's template is not its).
HARNESSES: dict[str, dict] = {
    BARRED_HARNESS: {},
    "claude-code": {"harness.name": "claude-code", "harness.settings": {}},
}


def seed_config(seed: int, root: Path, overrides: dict | None = None, harness: str = BARRED_HARNESS) -> ExperimentConfig:
    """examples/cold-start.yaml as shipped, in ``harness``, its seed and tiny seed set to ``seed``, its store in ``root``."""
    return bench_config(CONFIG, root, {"seed": seed, "model.tiny_seed": seed, **HARNESSES[harness], **(overrides or {})})


def run_seed(
    result: SeedResult, root: Path, log: Callable[[str], None], console: Console, harness: str = BARRED_HARNESS
) -> SeedResult:
    """Run every stage ``result`` lacks in ``harness``, storing each as it ends (under results_folder(harness))."""
    base = seed_config(result.seed, root, harness=harness)
    store = open_store(base.storage.uri)
    sft_folder = _local(store) / RunLayout(base.name).sft_checkpoint()
    # The control and distillation start where GRPO did: the SFT checkpoint, as a model folder.
    from_sft = {"model.path": str(sft_folder), "sft": None}
    stages: dict[str, Callable[[], BaseModel]] = {
        "record": lambda: _evaluate(base, "base", None, None, "teacher", root, console, recording=True),
        "untrained_train": lambda: _evaluate(base, "base", None, UNTRAINED_SAMPLES, "untrained-train", root, console),
        "untrained_held_out": lambda: _evaluate(base, "base", HELD_OUT, UNTRAINED_SAMPLES, "untrained-held-out", root,
                                                console),  # fmt: skip
        "sft": lambda: _fine_tune(base, root, console),
        "sft_held_out": lambda: _evaluate(base, str(sft_folder), HELD_OUT, HELD_OUT_SAMPLES, "sft-held-out", root,
                                          console),  # fmt: skip
        "grpo": lambda: _rl(base, root, console),
        "grpo_held_out": lambda: _evaluate(base, "latest", HELD_OUT, HELD_OUT_SAMPLES, "grpo-held-out", root,
                                           console),  # fmt: skip
        "control": lambda: _rl_from_grpo(seed_config(result.seed, root, {"name": f"{base.name}-control", **from_sft,
                                                                         "algorithm.shuffle_rewards": True}, harness),
                                         base, root, console),  # fmt: skip
        "distill": lambda: _rl_from_grpo(seed_config(result.seed, root, {"name": f"{base.name}-distill", **from_sft,
                                                                         "algorithm.distillation": _teacher(base, store)},
                                                     harness), base, root, console),  # fmt: skip
    }
    for stage in STAGES:
        if result.has(stage):
            continue
        log(f"{harness} seed {result.seed}: {stage}")
        commit = commit_text()
        value = stages[stage]()
        if commit != result.commit:
            result.stage_commits[stage] = commit
        save_stage(result, stage, value, results_folder(harness))
        log(f"{harness} seed {result.seed}: {stage} stored ({_brief(result, stage)})")
    return result


def recorded_and_fine_tuned(seed: int, root: Path, console: Console) -> ExperimentConfig:
    """The seed's config, its store in ``root`` holding the teacher's recording and the SFT checkpoint:
    the ``record`` and ``sft`` stages run where the store lacks them (~11 min here), and no stored
    result is touched. For tools that study a seed's SFT checkpoint (first_turn.py)."""
    base = seed_config(seed, root)
    _evaluate(base, "base", None, None, "teacher", root, console, recording=True)
    _fine_tune(base, root, console)
    return base


def _brief(result: SeedResult, stage: str) -> str:
    data = result.stages[stage]
    if "iterations" in data:
        rates = [result.curve(stage).iterations[i].rate for i in range(len(data["iterations"]))]
        return "pass rate by iteration " + ", ".join("-" if r is None else f"{r:.3f}" for r in rates)
    if "passed" in data:
        rate = result.pass_rates(stage).rate
        return f"pass rate {'-' if rate is None else f'{rate:.3f}'} over {len(data['passed'])} graded"
    return f"epoch {data['chosen_epoch']} of {data['epochs']} kept"


def _evaluate(config: ExperimentConfig, checkpoint: str, tasks: str | None, samples: int | None, eval_id: str,
              root: Path, console: Console, recording: bool = False) -> PassRates:  # fmt: skip
    from pipelines.evaluate import eval_config, evaluate_policy

    evaluation = eval_config(config, checkpoint, tasks, samples, eval_id, recording=recording)
    started = time.monotonic()
    evaluate_policy(evaluation, console, workdir=root)
    store = open_store(evaluation.storage.uri)
    return PassRates(passed=verdicts(store, run_layout(evaluation), 0), wall_s=time.monotonic() - started)


def _fine_tune(config: ExperimentConfig, root: Path, console: Console) -> SftStage:
    from pipelines.sft_workflow import run_sft_locally

    started = time.monotonic()
    report, _ = run_sft_locally(config, console, workdir=root, warm_start=True)
    chosen = report.epochs[report.chosen_epoch - 1]
    return SftStage(sessions=report.sessions, target_tokens=report.target_tokens, chosen_epoch=report.chosen_epoch,
                    epochs=len(report.epochs), val_loss=chosen.val_loss, left_out=report.left_out,
                    wall_s=time.monotonic() - started)  # fmt: skip


def _rl(config: ExperimentConfig, root: Path, console: Console) -> RunCurve:
    from pipelines.run import run_experiment

    started = time.monotonic()
    logged = run_experiment(config, console=console, workdir=root)  # MLflow's, earlier calls' iterations too
    store, layout = open_store(config.storage.uri), RunLayout(config.name)
    metrics = [read_metrics(store, layout.metrics(i)) for i in range(config.iterations)]
    walls = [logged.get(i, {}).get("time/iteration_s") for i in range(config.iterations)]
    return RunCurve(
        iterations=[PassRates(passed=verdicts(store, layout, i), wall_s=wall) for i, wall in enumerate(walls)],
        trained_tokens=[m.get("batch/trained_tokens") for m in metrics],
        forced_tokens=[m.get("batch/forced_tokens") for m in metrics],
        # A run resumed after a cut (or finished before) spent its iterations' time in earlier calls.
        wall_s=max(time.monotonic() - started, sum(w for w in walls if w is not None)),
    )


def _rl_from_grpo(config: ExperimentConfig, grpo: ExperimentConfig, root: Path, console: Console) -> RunCurve:
    """``_rl`` for a run from GRPO's own start (the SFT checkpoint, the same seeds), given GRPO's
    iteration-0 rollouts: sampled again they would be the same tokens, for ~12 min here."""
    store = open_store(config.storage.uri)
    source, target = RunLayout(grpo.name), RunLayout(config.name)
    if share_first_rollouts(store, source, target):
        # Its serve step would have committed its initial policy, but the executor skips
        # iteration 0's generate step whole once every rollout is stored.
        from components.engine.step import prepare_policy

        with tempfile.TemporaryDirectory(prefix="openforge-bench-") as scratch:
            prepare_policy(config, 0, store, Path(scratch) / "policy")
    curve = _rl(config, root, console)
    if store.get_bytes(target.plan(0)) != store.get_bytes(source.plan(0)):
        raise RuntimeError(
            f"{config.name}'s iteration-0 plan differs from {grpo.name}'s, so the rollouts it was given are not its "
            f"own: delete its run ({target.name}/ in {store.root}) and run the benchmark again"
        )
    return curve


def share_first_rollouts(store: ArtifactStore, source: RunLayout, target: RunLayout) -> int:
    """Copy ``source``'s iteration-0 outcomes and trajectories (images included) to ``target``, whose
    rollout pods the executor then skips; their cost records stay behind, since ``target`` spent
    nothing on them. Returns how many outcomes were copied (0 once ``target`` has any of its own)."""
    if store.list(target.outcomes(0)):
        return 0
    folders = (source.outcomes(0), posixpath.dirname(source.trajectory(0, "any")) + "/")
    keys = [key for folder in folders for key in store.list(folder)]
    theirs, ours = source.plan(0).rsplit("/", 1)[0], target.plan(0).rsplit("/", 1)[0]
    for key in keys:
        store.put_bytes(ours + key.removeprefix(theirs), store.get_bytes(key))
    return len(store.list(target.outcomes(0)))


def _local(store: ArtifactStore) -> Path:
    return Path(store.root.removeprefix("file://"))


def _teacher(base: ExperimentConfig, store: ArtifactStore) -> dict:
    """Pure distillation from GRPO's last committed checkpoint (a folder of the seed's store)."""
    layout = RunLayout(base.name)
    folder = _local(store) / layout.checkpoint(base.iterations)
    if not (folder / "COMMITTED").exists():
        raise RuntimeError(f"the distillation teacher {folder} is not committed: the grpo stage must finish first")
    return {"teacher_model": str(folder), "verifier_reward": False}
