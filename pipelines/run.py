"""`openforge run CONFIG`: chain RL iterations on this machine, each one the compiled Argo DAG.

Every iteration executes the very manifest `openforge compile` writes, with the config
text and the iteration number as its parameters. The run's ``state.json`` (written last
by each iteration's commit step) says where to start, so a run stopped anywhere resumes
from the last committed checkpoint: rollouts whose outcome is stored, a score whose
rewards are stored and a train step whose checkpoint is committed are not run again.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import typer

from components.core.storage import ArtifactStore, RunLayout, open_store
from pipelines.run_view import RunView, rise_line, summary_table

# The config's pydantic models, the executor and rich load in the functions that use them:
# `openforge --help` imports this module and needs none of them.
if TYPE_CHECKING:
    from rich.console import Console

    from components.core.config import ExperimentConfig
    from pipelines.executor import ExecutorOptions, PodmanOptions, SandboxOptions

ITERATION_TIME = "time/iteration_s"
Runtime = Literal["process", "sandbox", "podman"]
# The CLI's default: a rollout runs model-written commands, so on Linux it is contained.
DEFAULT_RUNTIME: Runtime = "sandbox" if sys.platform.startswith("linux") else "process"
RUNTIME_HELP = (
    "sandbox (the default on Linux): each rollout in namespaces of its own, no host files or network "
    "(docs/executor.md); process: every container a plain process on this machine; podman: each rollout "
    "a real pod (make podman-base)."
)
PROCESS_WARNING = (
    "--runtime process: rollouts run as plain processes, as you. The commands the model writes can read "
    "your files and keys, rewrite this run's store (rewards, checkpoints) and reach every service on "
    "loopback (the engine, MLflow, other rollouts). Use --runtime sandbox (the default on Linux) to contain them."
)


class RunError(RuntimeError):
    """An iteration that ended without being committed."""


def executor_folder(workdir: Path, config: ExperimentConfig) -> Path:
    """Where the local executor keeps an experiment's workflows (their pods' folders and logs) and their locks."""
    return workdir / "executor" / config.name


def resume_rule(store: ArtifactStore, layout: RunLayout, iteration: int) -> Callable[[str], str | None]:
    """Steps without output artifacts that already finished in an earlier, interrupted attempt.

    (Rollouts need no rule: the executor skips a pod whose output artifacts are stored.)
    """
    done_when = {"score": layout.rewards(iteration), "train": layout.checkpoint_marker(iteration + 1)}

    def rule(task: str) -> str | None:
        key = done_when.get(task)
        return f"already done: {key} exists" if key and store.exists(key) else None

    return rule


def run_experiment(
    config: ExperimentConfig,
    iterations: int | None = None,
    console: Console | None = None,
    *,
    workdir: Path = Path(".openforge"),
    programs: Mapping[str, list[str]] | None = None,
    warm_start: bool = True,
    runtime: Runtime = DEFAULT_RUNTIME,
) -> dict[int, dict[str, float]]:
    """Run iterations until ``iterations`` (default ``config.iterations``) are committed.

    Returns the logged metrics by iteration (MLflow names). The steps receive the config
    as the compiler writes it (every default spelled out), which MLflow also keeps.
    ``programs`` maps the images' program names to local command lines (default: the
    ``openforge`` of this checkout). ``warm_start`` forks the `openforge` containers from
    a server that imported them once (pipelines/executor/_warm.py) instead of starting
    each from a fresh interpreter. ``runtime`` is `openforge run`'s default (the sandbox on
    Linux, so a library caller contains model-written commands as the CLI does);
    ``"process"`` runs rollouts as plain processes (``PROCESS_WARNING``) and ``"podman"``
    runs each rollout pod with `podman kube play` (pipelines/executor/_podman.py); every
    other step stays a process.
    """
    from rich.console import Console

    if config.evaluation is not None:
        raise RunError("this config has an `evaluation` section: that is for `openforge eval`; remove it to train")
    if config.trainer.nnodes > 1:
        # Its train step creates a KubeRay RayJob (pipelines/ray_job.py), which only a cluster runs.
        raise RunError(
            f"trainer.nnodes {config.trainer.nnodes} trains across nodes on a KubeRay RayJob: submit it to a cluster "
            "(openforge deploy/submit, docs/trainer.md 'Training across nodes'); on this machine set trainer.nnodes: 1"
        )
    with local_executor(config, workdir, programs, warm_start, runtime, workflow="run") as options:
        return _run_iterations(config, iterations, console or Console(), workdir, options)


@contextmanager
def local_executor(
    config: ExperimentConfig,
    workdir: Path,
    programs: Mapping[str, list[str]] | None,
    warm_start: bool,
    runtime: Runtime,
    needs_harness: bool = True,
    *,
    workflow: str,
) -> Iterator[Callable[[Callable[[str], str | None]], ExecutorOptions]]:
    """What every local workflow of this config shares (a run's iterations, an evaluation, SFT).

    Refuses a second ``workflow`` of this experiment in ``workdir`` while one runs
    (pipelines/workflow_lock.py), checks the harness (where the workflow runs rollouts) and
    podman before any step starts, starts the warm-start server for the duration, and yields
    a function making the executor's options from a resume rule.
    """
    from pipelines.workflow_lock import workflow_lock

    with workflow_lock(executor_folder(workdir, config), workflow):
        yield from _local_executor(config, workdir, programs, warm_start, runtime, needs_harness)


def _local_executor(
    config: ExperimentConfig,
    workdir: Path,
    programs: Mapping[str, list[str]] | None,
    warm_start: bool,
    runtime: Runtime,
    needs_harness: bool,
) -> Iterator[Callable[[Callable[[str], str | None]], ExecutorOptions]]:
    from pipelines.executor import ExecutorOptions, podman_problem, sandbox_problem
    from pipelines.warm_start import openforge_warm_starts

    if programs is None and needs_harness:  # this checkout's steps will run the harness on this machine
        _require_harness(config)
    podman, sandbox = None, None
    if runtime == "sandbox":
        sandbox = local_sandbox_options(config, workdir)
        problem = sandbox_problem()
        if problem:
            raise RunError(
                f"--runtime sandbox cannot run here: {problem}. Or pass --runtime process to run the rollouts "
                "unsandboxed (they can then read your files, the store and every loopback service)."
            )
    if runtime == "podman":
        podman = local_podman_options()
        problem = podman_problem(podman)
        if problem:
            raise RunError(f"--runtime podman cannot run here: {problem}")
    # First, so its imports overlap the set-up below and the first steps (which start cold).
    warm = None
    if warm_start and programs is None:
        warm = openforge_warm_starts(log_path=executor_folder(workdir, config) / "warm-start.log")
    extra = {"programs": programs} if programs is not None else {"warm": warm}

    def options(skip: Callable[[str], str | None]) -> ExecutorOptions:
        return ExecutorOptions(skip_existing_outputs=True, skip=skip, podman=podman, sandbox=sandbox, **extra)

    try:
        yield options
    finally:
        if warm is not None:
            warm.close()


def warn_if_unsandboxed(console: Console, runtime: Runtime) -> None:
    """Say what `--runtime process` gives up, before anything runs."""
    if runtime == "process":
        console.print(PROCESS_WARNING, style="yellow", markup=False, highlight=False)


def local_sandbox_options(config: ExperimentConfig, workdir: Path) -> SandboxOptions:
    """The sandbox runtime on this machine: the run's file store, its MLflow database and the
    executor's folders hidden from the rollouts; the harness installs readable."""
    from components.rollout.harnesses import HOME_ENV, harness_home
    from pipelines.executor import SandboxOptions

    hidden = [workdir.absolute()]
    if config.storage.uri.startswith("file://"):
        hidden.append(Path(config.storage.uri.removeprefix("file://")).absolute())
    if config.tracking.uri.startswith("sqlite:///"):
        hidden.append(Path(config.tracking.uri.removeprefix("sqlite:///")).absolute().parent)
    home = harness_home()
    return SandboxOptions(hidden=tuple(hidden), readable=(home,), env={HOME_ENV: str(home)}, tmp_mb=config.rollout.tmp_mb)


def local_podman_options() -> PodmanOptions:
    """The podman runtime on this machine: the installed agent harnesses (npm ones with their
    pinned Node) mounted into every pod where the rollout step looks for them, as a
    harness image carries them on a cluster."""
    from components.rollout.harnesses import HOME_ENV, harness_home
    from pipelines.executor import PodmanOptions

    home = harness_home()
    if not home.is_dir():
        return PodmanOptions()
    return PodmanOptions(mounts={"openforge-harnesses": home}, env={HOME_ENV: str(home)})


def _require_harness(config: ExperimentConfig) -> None:
    """Refuse a run whose harness is not installed before any step starts, not in every rollout."""
    from components.rollout.harnesses import HarnessNotInstalledError, get_harness

    try:
        get_harness(config.harness.name).require_installed()
    except HarnessNotInstalledError as exc:
        raise RunError(str(exc)) from None


def _run_iterations(
    config: ExperimentConfig,
    iterations: int | None,
    console: Console,
    workdir: Path,
    options: Callable[[Callable[[str], str | None]], ExecutorOptions],
) -> dict[int, dict[str, float]]:
    from components.core.tracking import ExperimentTracker, ui_command
    from pipelines.compile import compile_config, manifest_of_kind
    from pipelines.executor import execute_workflow
    from pipelines.iteration import config_yaml
    from pipelines.state import next_iteration, read_state
    from pipelines.steps.prepare import STOP_AT

    text = config_yaml(config)
    total = iterations or config.iterations
    store = open_store(config.storage.uri, config.storage.endpoint_url)
    layout = RunLayout(config.name)
    first = next_iteration(store, layout)
    if first:
        console.print(f"Resuming {config.name!r} at iteration {first} (state: {store.root}/{layout.state()})", soft_wrap=True)
    # One iteration per call, as the CronWorkflow runs it: the WorkflowTemplate alone.
    manifests = [manifest_of_kind(compile_config(config), "WorkflowTemplate")]
    tracker = ExperimentTracker(config.tracking, config.name)
    times: dict[int, float] = {}
    with RunView(console) as view:
        for iteration in range(first, total):
            view.start_iteration(iteration)
            started = time.monotonic()
            execute_workflow(
                manifests,
                # stop-at: overlapped iterations sample nothing past the run's end.
                parameters={"config": text, "iteration": str(iteration), STOP_AT: str(total)},
                store=store,
                workdir=executor_folder(workdir, config) / f"iteration-{iteration:05d}",
                options=options(resume_rule(store, layout, iteration)),
                observer=view.observe,
            )
            state = read_state(store, layout)
            if state is None or state.last_committed_iteration < iteration:
                raise RunError(f"iteration {iteration} finished but was not committed ({store.root}/{layout.state()})")
            times[iteration] = time.monotonic() - started
            tracker.log_iteration(iteration, {ITERATION_TIME: times[iteration]})
    logged = {k: v for k, v in tracker.logged().items() if k < total}
    if first < total:
        tracker.finish()
    console.print(summary_table(logged, config.rollout.samples_per_task, times))
    console.print(rise_line(logged))
    # soft_wrap: the paths and the command stay on one line, ready to copy.
    console.print(f"Artifacts and checkpoints: {store.root}/{config.name}", soft_wrap=True)
    console.print(f"See the metrics: {ui_command(config.tracking.uri, config.tracking.ui_url)}", soft_wrap=True)
    return logged


def load_config_or_exit(path: Path) -> "ExperimentConfig":
    """The experiment config at ``path``; a command's exit 2 with the problem and its fix when invalid."""
    from components.core.config import ConfigError, load_config

    try:
        return load_config(path)
    except ConfigError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from None


def run_command(
    config: Path = typer.Argument(..., help="Experiment config (YAML), e.g. examples/quickstart.yaml."),
    iterations: int | None = typer.Option(
        None, "--iterations", min=1, help="Iterations the run should reach in total (default: the config's)."
    ),
    warm_start: bool = typer.Option(
        True, help="Fork the steps from a process that imported them once (--no-warm-start: a fresh Python each)."
    ),
    runtime: Runtime = typer.Option(DEFAULT_RUNTIME, help=RUNTIME_HELP),
) -> None:
    """Run RL iterations on this machine; rerun the same command to resume after a stop."""
    from rich.console import Console

    from pipelines.executor import ManifestError, WorkflowFailed

    experiment = load_config_or_exit(config)
    console = Console()
    warn_if_unsandboxed(console, runtime)
    try:
        run_experiment(experiment, iterations, console, warm_start=warm_start, runtime=runtime)
    except (WorkflowFailed, RunError, ManifestError) as exc:
        console.print(str(exc), style="red", markup=False, highlight=False)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        console.print("[yellow]Stopped. Run the same command again to resume from the last committed iteration.[/yellow]")
        raise typer.Exit(130) from None
