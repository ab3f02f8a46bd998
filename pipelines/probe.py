"""`openforge probe CONFIG`: would training learn here? Sample, score, and say, before training.

The probe is an evaluation (pipelines/evaluate.py: serve, rollout pods, verifiers, scoring;
no training) with the run's GRPO group size as samples per task, followed by the trainer's
own view of its rollouts (components/trainer/learnability.py): the share of groups with
mixed outcomes, the share of sampled tokens that would train, the failure kinds, and a
verdict with its reasons. It probes the policy the run would train next: the newest
committed checkpoint, or the configured model when nothing is committed yet (before the
first iteration). Its report lands beside the evaluation's summary, in
``<name>/evals/<id>/probe.json``. docs/operations.md, "Learnability probe", says how to read it.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from components.core.storage import ArtifactStore, RunLayout, open_store, run_layout
from pipelines.evaluate import (
    CHECKPOINT_OPTION,
    CONFIG_ARGUMENT,
    ID_OPTION,
    RUNTIME_OPTION,
    TASKS_OPTION,
    WARM_START_OPTION,
    eval_config,
    evaluate_policy,
    exits_on_failure,
)
from pipelines.run import Runtime, warn_if_unsandboxed

# pydantic, rich and the analysis load in the functions that use them: `openforge --help` imports this module.
if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from components.core.config import ExperimentConfig
    from components.trainer.learnability import Learnability, ProbeReport


def probe_config(
    config: ExperimentConfig, checkpoint: str = "latest", tasks: str | None = None, samples: int | None = None,
    probe_id: str | None = None,
) -> ExperimentConfig:  # fmt: skip
    """The evaluation a probe runs. ``latest`` with nothing committed probes the configured
    model: what the run's first iteration would train."""
    from components.core.checkpoints import committed_versions

    if checkpoint == "latest":
        store = open_store(config.storage.uri, config.storage.endpoint_url)
        if not committed_versions(store, RunLayout(config.name)):
            checkpoint = "base"
    return eval_config(config, checkpoint, tasks, samples, probe_id)


def _tokens(store: ArtifactStore, key: str, scratch: Path) -> tuple[int, int] | None:
    """A rollout's (sampled, trainable) tokens; None when its trajectory is missing or unreadable
    (the score step already counted it unusable, with its reason)."""
    from components.core.trajectory import TrajectoryError, read_session
    from components.trainer.learnability import sampled_tokens

    if not store.exists(key):
        return None
    path = scratch / "session.jsonl"
    path.write_bytes(store.get_bytes(key))
    try:
        return sampled_tokens(read_session(path))
    except TrajectoryError:
        return None


def read_findings(config: ExperimentConfig, store: ArtifactStore) -> Learnability:
    """The learnability of a scored evaluation, from what its steps stored."""
    from components.core.outcome import Outcome
    from components.reward.step import ScoreReport
    from components.trainer.learnability import assess_learnability
    from pipelines.iteration import EVAL_ITERATION

    layout = run_layout(config)
    scored = ScoreReport.model_validate_json(store.get_bytes(layout.rewards(EVAL_ITERATION)))
    outcomes, tokens = [], {}
    with tempfile.TemporaryDirectory(prefix="openforge-probe-") as scratch:
        for record in scored.records:
            key = layout.outcome(EVAL_ITERATION, record.rollout_id)
            # A lost outcome is scored as an infra error: the record says so, the outcome has nothing to add.
            if store.exists(key):
                outcomes.append(Outcome.model_validate_json(store.get_bytes(key)))
            found = _tokens(store, layout.trajectory(EVAL_ITERATION, record.rollout_id), Path(scratch))
            if found is not None:
                tokens[record.rollout_id] = found
    return assess_learnability(scored.records, outcomes, tokens, scored.unusable_reasons)


def probe_policy(
    config: ExperimentConfig,
    console: Console | None = None,
    *,
    workdir: Path = Path(".openforge"),
    programs: Mapping[str, list[str]] | None = None,
    warm_start: bool = True,
    runtime: Runtime = "process",
) -> ProbeReport:
    """Run the probe's evaluation (``probe_config``), judge it, store the report and return it."""
    from components.trainer.learnability import ProbeReport

    summary = evaluate_policy(config, console, workdir=workdir, programs=programs, warm_start=warm_start, runtime=runtime)
    store = open_store(config.storage.uri, config.storage.endpoint_url)
    report = ProbeReport(
        experiment=config.name,
        eval_id=config.evaluation.id,
        harness=config.harness.name,
        task_source=config.tasks.source,
        checkpoint=summary.checkpoint,
        samples_per_task=config.rollout.samples_per_task,
        findings=read_findings(config, store),
    )
    store.put_bytes(run_layout(config).probe_report(), report.model_dump_json(indent=2).encode() + b"\n")
    return report


def _share(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def probe_table(report: ProbeReport) -> Table:
    """One row per task's group, a total, and the verdict with its reasons as the caption."""
    from rich.table import Table

    found = report.findings
    table = Table(
        title=f"Learnability probe {report.eval_id}: harness {report.harness} on {report.task_source}, "
        f"checkpoint {report.checkpoint.get('version')}, {report.samples_per_task} samples per task"
    )
    for column in ("task", "group", "passed", "rewards", "trainable tokens"):
        table.add_column(column, justify="left" if column in ("task", "group", "rewards") else "right")
    for group in found.tasks:
        rewards = " ".join(f"{r:.2f}" for r in group.rewards) or "-"
        table.add_row(group.task_id, group.kind, f"{group.passed}/{group.rollouts}", rewards,
                      f"{group.trainable_tokens}/{group.sampled_tokens}")  # fmt: skip
    table.add_row("all", f"{_share(found.mixed_share)} mixed", "", "",
                  f"{found.trainable_tokens}/{found.sampled_tokens} ({_share(found.token_share)})", style="bold")  # fmt: skip
    failures = {s: n for s, n in found.statuses.items() if n and s != "ok"}
    lines = [f"verdict: {found.verdict}", *found.reasons]
    lines.append("failures: " + (", ".join(f"{s} {n}" for s, n in failures.items()) or "none"))
    if found.unusable:
        lines.append("masked for training: " + ", ".join(f"{c} {n}" for c, n in found.unusable.items()))
    table.caption = "\n".join(lines)
    return table


def probe_command(
    config: Path = CONFIG_ARGUMENT,
    samples: int | None = typer.Option(None, "--samples", min=2, help="Rollouts per task, the GRPO group size (default: the config's)."),
    checkpoint: str = CHECKPOINT_OPTION,
    tasks: str | None = TASKS_OPTION,
    probe_id: str | None = ID_OPTION,
    json_out: bool = typer.Option(False, "--json", help="Print the report as JSON on stdout (progress goes to stderr)."),
    warm_start: bool = WARM_START_OPTION,
    runtime: Runtime = RUNTIME_OPTION,
) -> None:
    """Sample a few rollouts per task, train nothing, and say whether GRPO would learn from them.

    It probes what the run would train next: with nothing committed yet, `latest` is the configured model.
    """
    from rich.console import Console

    from components.core.config import ConfigError, load_config

    try:
        evaluation = probe_config(load_config(config), checkpoint, tasks, samples, probe_id)
    except ConfigError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from None
    console = Console(stderr=json_out)
    warn_if_unsandboxed(console, runtime)
    with exits_on_failure(console, evaluation):
        report = probe_policy(evaluation, console, warm_start=warm_start, runtime=runtime)
    if json_out:
        typer.echo(report.model_dump_json(indent=2))
    else:
        console.print(probe_table(report))
    store = open_store(evaluation.storage.uri, evaluation.storage.endpoint_url)
    console.print(f"Probe report: {store.root}/{run_layout(evaluation).probe_report()}", soft_wrap=True)
