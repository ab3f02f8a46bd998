"""What a local run's warm-start server imports, and the `openforge` its forks become.

The executor forks containers from a server (pipelines/executor/_warm.py) but knows
nothing of the CLI it serves: the modules to import and the entry point are named here,
beside the CLI, and handed to it.
"""

from __future__ import annotations

from pathlib import Path

from pipelines.executor import WarmStarts

OPENFORGE_ENTRY = "pipelines.warm_start:run_openforge"

# What the steps, the proxy sidecar and the rollout runner import before or during their
# work (found by listing the modules each warm container imported after its fork). A
# module missing from a later version of a library is skipped by the server, not fatal.
WARM_MODULES = (
    "pipelines.cli",
    "typer._click",  # typer builds its click commands lazily, on the first call
    "typer._adapters",
    "components.core.config",
    "components.costs.record",  # every step's cost record (pipelines/steps/_costs.py)
    # The steps' component modules: their commands load them only when they run.
    "pipelines.prepare",
    "pipelines.commit",
    "pipelines.run_status",
    "pipelines.eval_report",
    "components.engine.step",
    "components.rollout.prepare",
    "components.rollout.runner",
    "components.proxy.serve",
    "components.reward.step",  # not the package: its face loads nothing until asked
    "components.engine.server",
    "components.core.tracking",
    "mlflow",
    "mlflow.store.tracking.sqlalchemy_store",  # the sqlite tracking store: 3-8 s on its own
    "alembic.command",  # MLflow checks the database's schema version on every connection
    "matplotlib.figure",
    "matplotlib.backends.backend_agg",
    "torch",
    "torch.profiler",
    "transformers",
    "transformers.models.qwen2.modeling_qwen2",
    "components.trainer.step",
    "verl.trainer.ppo.core_algos",
    "verl.workers.config",
)


def run_openforge(args: list[str]) -> None:
    """``openforge ARGS`` in a fork of the server (named as the installed script names itself)."""
    from pipelines.cli import app

    app(args=args, prog_name="openforge")


def openforge_warm_starts(log_path: Path | None = None) -> WarmStarts:
    """A warm-start server for this checkout's `openforge` containers."""
    return WarmStarts(WARM_MODULES, OPENFORGE_ENTRY, log_path)
