"""`openforge eval CONFIG`: evaluate a policy on a task set with the training machinery, no training.

The evaluation is the iteration's DAG with report in place of train and commit
(pipelines/iteration.py, ``build_eval_workflow``), compiled from the experiment config plus
an ``evaluation`` section and run by the same local executor as `openforge run`: the
same serve step, rollout pods (harness, runner, recording-proxy sidecar) and verifiers,
so every session is recorded as in training. Results land in ``<name>/evals/<id>/`` in the
run's store and in an MLflow run of their own (pipelines/eval_report.py). Reusing an
``--id`` resumes that evaluation: stored rollouts are not run again.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from components.core.storage import open_store, run_layout
from pipelines.run import (
    DEFAULT_RUNTIME,
    RUNTIME_HELP,
    Runtime,
    RunError,
    executor_folder,
    local_executor,
    resume_rule,
    warn_if_unsandboxed,
)

# pydantic, the config's models and rich load in the functions that use them: `openforge
# --help` imports this module and needs none of them.
if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from components.core.config import ExperimentConfig
    from components.reward.summary import EvalSummary

_CHECKPOINT_HELP = (
    "latest: the run's newest committed checkpoint; base: the configured model; a number: that committed "
    "version; a folder: a HuggingFace checkpoint (or s3:// prefix) served as the base model."
)


def eval_config(
    config: ExperimentConfig,
    checkpoint: str = "latest",
    tasks: str | None = None,
    samples: int | None = None,
    eval_id: str | None = None,
    recording: bool = False,
) -> ExperimentConfig:
    """The experiment config as the evaluation's steps receive it (every task, no sampling of tasks).

    ``recording``: the config's ``teacher`` answers instead of the policy (`openforge record`).
    """
    from pydantic import ValidationError

    from components.core.config import ConfigError, ExperimentConfig
    from components.core.validation import join_errors

    choice: str | int = checkpoint
    model, label = config.model, checkpoint
    teacher = config.teacher if recording else None
    if teacher is not None and teacher.kind == "checkpoint":
        # The recording's serve step serves the teacher, exactly as a base model would be.
        if checkpoint != "base":
            raise ConfigError(f"a recording serves its teacher.path ({teacher.path}), not checkpoint {checkpoint!r}")
        if not _is_model_source(teacher.path):
            raise ConfigError(f"teacher.path {teacher.path!r} is neither a folder nor an s3:// prefix")
        model, label = model.model_copy(update={"path": teacher.path}), "teacher"
    elif checkpoint.isdigit():
        choice = int(checkpoint)
    elif checkpoint not in ("latest", "base"):
        # A checkpoint folder outside the run: served exactly as a base model would be.
        if not _is_model_source(checkpoint):
            raise ConfigError(f"--checkpoint {checkpoint!r} is not latest, base, a version number or a folder")
        model, choice, label = model.model_copy(update={"path": checkpoint}), "base", "path"
    update = {
        "model": model.model_dump(),
        "evaluation": {
            "id": eval_id or f"{'record' if recording else label}-{time.strftime('%Y%m%d-%H%M%S')}",
            "checkpoint": choice,
            "recording": recording,
        },
        "tasks": {"source": tasks or config.tasks.source, "per_iteration": None},
        "rollout": {**config.rollout.model_dump(), "samples_per_task": samples or config.rollout.samples_per_task},
    }
    try:  # validated as a whole, as the steps will read it
        return ExperimentConfig.model_validate({**config.model_dump(), **update})
    except ValidationError as exc:
        raise ConfigError(f"invalid evaluation: {join_errors(exc)}") from None


def _is_model_source(path: str | None) -> bool:
    return path is not None and (path.startswith("s3://") or Path(path).is_dir())


def evaluate_policy(
    config: ExperimentConfig,
    console: Console | None = None,
    *,
    workdir: Path = Path(".openforge"),
    programs: Mapping[str, list[str]] | None = None,
    warm_start: bool = True,
    runtime: Runtime = DEFAULT_RUNTIME,
) -> EvalSummary:
    """Run the evaluation ``config.evaluation`` describes and return its summary (also in the store)."""
    from rich.console import Console

    from components.reward.summary import EvalSummary
    from pipelines.compile import compile_config
    from pipelines.executor import execute_workflow
    from pipelines.iteration import config_yaml
    from pipelines.run_view import RunView

    if config.evaluation is None:
        raise RunError("evaluate_policy needs a config with an `evaluation` section (see eval_config)")
    console = console or Console()
    store = open_store(config.storage.uri, config.storage.endpoint_url)
    layout = run_layout(config)
    (manifest,) = compile_config(config)
    workflow = f"eval-{config.evaluation.id}"
    with local_executor(config, workdir, programs, warm_start, runtime, workflow=workflow) as options, RunView(console) as view:
        execute_workflow(
            [manifest],
            parameters={"config": config_yaml(config)},
            store=store,
            workdir=executor_folder(workdir, config) / workflow,
            options=options(resume_rule(store, layout, 0)),
            observer=view.observe,
        )
    key = layout.eval_summary()
    if not store.exists(key):
        raise RunError(f"the evaluation finished without a summary ({store.root}/{key}); see the report step's log")
    summary = EvalSummary.model_validate_json(store.get_bytes(key))
    console.print(eval_table(summary))
    console.print(f"Summary, sessions and outcomes: {store.root}/{key.rsplit('/', 1)[0]}", soft_wrap=True)
    return summary


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def eval_table(summary: EvalSummary) -> Table:
    """One row per task and a total: pass rate, mean reward, pass@k; then the status counts."""
    from rich.table import Table

    ks = sorted(summary.pass_at)
    version = summary.checkpoint.get("version")
    table = Table(title=f"Evaluation {summary.eval_id}: checkpoint {summary.checkpoint.get('requested')} ({version})")
    for column in ("task", "rollouts", "passed", "pass rate", "reward mean", *(f"pass@{k}" for k in ks)):
        table.add_column(column, justify="left" if column == "task" else "right")
    for task in summary.tasks:
        cells = [str(task.rollouts), f"{task.passed}/{task.graded}", _fmt(task.pass_rate), _fmt(task.reward_mean)]
        table.add_row(task.task_id, *cells, *(_fmt(task.pass_at[k]) for k in ks))
    total = sum(t.rollouts for t in summary.tasks)
    passed = f"{sum(t.passed for t in summary.tasks)}/{sum(t.graded for t in summary.tasks)}"
    overall = [str(total), passed, _fmt(summary.pass_rate), _fmt(summary.reward_mean)]
    table.add_row("all", *overall, *(_fmt(summary.pass_at[k]) for k in ks), style="bold")
    counts = ", ".join(f"{status} {n}" for status, n in summary.status_counts.items() if n)
    table.caption = f"rollouts by status: {counts or 'none'}"
    return table


@contextmanager
def exits_on_failure(console: Console, config: ExperimentConfig) -> Iterator[None]:
    """A failed or stopped local workflow as the command's exit: the error in red, or how to resume
    (an evaluation resumes by its id; SFT by running again, which keeps what it committed)."""
    from pipelines.executor import ManifestError, WorkflowFailed

    try:
        yield
    except (WorkflowFailed, RunError, ManifestError) as exc:
        console.print(str(exc), style="red", markup=False, highlight=False)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        resume = f"Resume with --id {config.evaluation.id}" if config.evaluation is not None else "Run it again to resume"
        console.print(f"[yellow]Stopped. {resume}.[/yellow]")
        raise typer.Exit(130) from None


# The options `openforge eval` shares with `openforge probe` (pipelines/probe.py), an evaluation too.
CONFIG_ARGUMENT = typer.Argument(..., help="Experiment config (YAML) whose run, store and MLflow the evaluation uses.")
CHECKPOINT_OPTION = typer.Option("latest", "--checkpoint", help=_CHECKPOINT_HELP)
TASKS_OPTION = typer.Option(None, "--tasks", help="Task set to evaluate on (default: the config's tasks.source).")
ID_OPTION = typer.Option(None, "--id", help="Names <name>/evals/<id>/ (default: checkpoint and time); reuse to resume.")
WARM_START_OPTION = typer.Option(True, help="Fork the steps from a process that imported them once.")
RUNTIME_OPTION = typer.Option(DEFAULT_RUNTIME, help=RUNTIME_HELP)


def eval_command(
    config: Path = CONFIG_ARGUMENT,
    checkpoint: str = CHECKPOINT_OPTION,
    tasks: str | None = TASKS_OPTION,
    samples: int | None = typer.Option(None, "--samples", min=1, help="Rollouts per task, the k of pass@k (default: the config's)."),
    out: Path | None = typer.Option(None, "--out", help="Also write summary.json into this folder."),
    eval_id: str | None = ID_OPTION,
    compile_only: bool = typer.Option(False, "--compile-only", help="Write the evaluation's Argo Workflow to OUT (default argo/) and stop."),
    submit: bool = typer.Option(False, "--submit", help="Submit the evaluation's Workflow to the Argo Server (ARGO_SERVER, as `openforge submit`) instead of running it here."),
    warm_start: bool = WARM_START_OPTION,
    runtime: Runtime = RUNTIME_OPTION,
) -> None:
    """Evaluate a policy on a task set: the iteration's DAG without train and commit."""
    from rich.console import Console

    from components.core.config import ConfigError, load_config

    try:
        evaluation = eval_config(load_config(config), checkpoint, tasks, samples, eval_id)
    except ConfigError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from None
    if compile_only and submit:
        typer.echo("--compile-only and --submit exclude each other: write the Workflow, or send it", err=True)
        raise typer.Exit(2)
    if submit:
        from pipelines.cluster.cli import submit_and_echo

        submit_and_echo(evaluation)
        store = evaluation.storage.uri.rstrip("/")
        typer.echo(f"Results: {store}/{run_layout(evaluation).eval_summary()} (`openforge status NAME` follows it)")
        return
    if compile_only:
        from pipelines.compile import write_manifests

        for path in write_manifests(evaluation, out or Path("argo")):
            typer.echo(f"wrote {path}")
        return
    console = Console()
    warn_if_unsandboxed(console, runtime)
    with exits_on_failure(console, evaluation):
        summary = evaluate_policy(evaluation, console, warm_start=warm_start, runtime=runtime)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "summary.json").write_text(summary.model_dump_json(indent=2) + "\n")
