"""What every step's body needs: its config, its store, and a clean stop.

A step stopped for a reason it can name (a missing file, a batch with nothing to train)
prints that reason and exits with a code; a traceback is kept for what nobody foresaw.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

import typer

if TYPE_CHECKING:
    from components.core.config import ExperimentConfig
    from components.core.storage import ArtifactStore
    from pipelines.steps._spec import StepSpec

# Exit codes: 1 the step ran and refused (it says why), 2 it could not start as given.
REFUSED = 1
UNUSABLE = 2


def step_config() -> ExperimentConfig:
    """The config the workflow put in the step's environment; a bad one is a usage error naming the problem."""
    from components.core.config import config_for_step

    return config_for_step()


def step_store(config: ExperimentConfig) -> ArtifactStore:
    from components.core.storage import open_store

    return open_store(config.storage.uri, config.storage.endpoint_url)


def stop(message: str, code: int = REFUSED) -> NoReturn:
    """End the step with ``message`` on stderr and no traceback."""
    typer.echo(message, err=True)
    raise typer.Exit(code)


def call_on_store(spec: StepSpec, iteration: int, refusals: tuple[type[Exception], ...] = ()) -> Any:
    """The spec's component on (config, iteration, store); a refusal ends the step with its message."""
    return call_on_store_with(spec, iteration, (), refusals)


def call_on_store_with(
    spec: StepSpec, iteration: int, extra: tuple[Any, ...], refusals: tuple[type[Exception], ...] = ()
) -> Any:
    """``call_on_store`` with the step's own arguments after the store."""
    config = step_config()
    try:
        return spec.component()(config, iteration, step_store(config), *extra)
    except refusals as exc:
        stop(f"error: {exc}")
