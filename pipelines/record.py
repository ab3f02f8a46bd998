"""`openforge record CONFIG`: record a teacher through the real harness, for SFT.

A recording is an evaluation (pipelines/evaluate.py: the iteration's DAG ending in report,
no training) whose rollouts the config's ``teacher`` answers instead of the policy:

- ``teacher.kind: reference``: the serve step runs the dev engine on the student's model
  and plays each task's ``reference`` turns, erring at ``teacher.error_rate``; the records
  carry the student's own token ids.
- ``teacher.kind: endpoint``: no serve step; each rollout's proxy sidecar calls the
  endpoint in teacher mode (``openforge proxy --teacher``) and records text, which SFT
  tokenizes with the student's chat template. Its key reaches that sidecar alone.
- ``teacher.kind: checkpoint``: the serve step serves ``teacher.path`` with the config's
  engine, and the proxies call it in teacher mode: recorded as text, as an endpoint's.

Every session is kept with its verifier verdict under ``<name>/evals/<id>/``; `openforge
sft` then reads them (``sft.recordings: <name>``, ``sft.evaluation: <id>``; ``sft.keep:
passed`` is the rejection sampling). Reusing ``--id`` resumes a recording.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from pipelines.evaluate import CONFIG_ARGUMENT, RUNTIME_OPTION, TASKS_OPTION, WARM_START_OPTION, exits_on_failure
from pipelines.run import Runtime, warn_if_unsandboxed

if TYPE_CHECKING:
    from components.core.config import ExperimentConfig

RECORD_ID_OPTION = typer.Option(None, "--id", help="Names <name>/evals/<id>/ (default: record-<time>); reuse to resume.")


def record_command(
    config: Path = CONFIG_ARGUMENT,
    tasks: str | None = TASKS_OPTION,
    samples: int | None = typer.Option(None, "--samples", min=1, help="Sessions per task (default: rollout.samples_per_task)."),
    record_id: str | None = RECORD_ID_OPTION,
    compile_only: bool = typer.Option(False, "--compile-only", help="Write the recording's Argo Workflow to OUT (default argo/) and stop."),
    check: bool = typer.Option(False, "--check", help="With --compile-only: validate it as `openforge compile --check` does."),
    out: Path = typer.Option(Path("argo"), "--out", help="Where --compile-only writes the Workflow."),
    warm_start: bool = WARM_START_OPTION,
    runtime: Runtime = RUNTIME_OPTION,
) -> None:
    """Record the config's `teacher:` solving the tasks through the real harness, for `openforge sft`."""
    from rich.console import Console

    from components.core.config import ConfigError, load_config
    from pipelines.evaluate import eval_config, evaluate_policy

    try:
        experiment = load_config(config)
        if experiment.teacher is None:
            raise ConfigError(f"{config}: `openforge record` needs a `teacher:` section (docs/trainer.md, \"Recording a teacher\")")
        recording = eval_config(experiment, "base", tasks, samples, record_id, recording=True)
    except ConfigError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from None
    if compile_only:
        from pipelines.compile import check_or_exit, compile_config, write_manifests

        for path in write_manifests(recording, out):
            typer.echo(f"wrote {path}")
        if recording.endpoint_teacher is not None:
            typer.echo(f"wrote {_write_egress_policy(recording, out)} (apply it with the Workflow: rollout pods reach only the serve step otherwise)")
        if check:
            check_or_exit(compile_config(recording))
        return
    console = Console()
    warn_if_unsandboxed(console, runtime)
    with exits_on_failure(console, recording):
        evaluate_policy(recording, console, warm_start=warm_start, runtime=runtime)
    sessions, tokens = teacher_tokens(recording)
    prices = experiment.teacher.usd_per_million_tokens
    cost = "" if prices is None else f"; ${prices.cost(tokens):,.2f} at teacher.usd_per_million_tokens"
    console.print(f"The teacher's tokens over {sessions} sessions: {tokens['prompt']:,} prompt, {tokens['completion']:,} completion{cost}")
    record_id = recording.evaluation.id
    console.print(f"Fine-tune on it: sft: {{recordings: {experiment.name}, evaluation: {record_id}}}", soft_wrap=True)


def _write_egress_policy(recording: ExperimentConfig, out: Path) -> Path:
    from pipelines.manifest_yaml import dump_manifest
    from pipelines.teacher_egress import POLICY_FILE, teacher_egress_policy

    path = out / recording.name / POLICY_FILE
    path.write_text(dump_manifest(teacher_egress_policy(recording)))
    return path


def teacher_tokens(recording: ExperimentConfig) -> tuple[int, dict[str, int]]:
    """(sessions, tokens the teacher billed): each outcome keeps its own in ``extra["model_tokens"]``."""
    from components.core.outcome import Outcome
    from components.core.storage import open_store, run_layout

    store, layout = open_store(recording.storage.uri, recording.storage.endpoint_url), run_layout(recording)
    totals, sessions = {"prompt": 0, "completion": 0}, 0
    for key in store.list(layout.outcomes(0)):
        spent = Outcome.model_validate_json(store.get_bytes(key)).extra.get("model_tokens") or {}
        sessions += 1
        for name in totals:
            totals[name] += int(spent.get(name, 0))
    return sessions, totals
