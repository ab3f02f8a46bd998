"""``openforge batch build``: parse, validate, call one function."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from components.core.command_group import command_group

batch_app = command_group("Build and inspect veRL training batches.")


def _config(path: Path | None = None):  # -> ExperimentConfig, imported lazily
    from components.core.config import ConfigError, config_from_env, load_config

    try:
        return load_config(path) if path is not None else config_from_env()
    except ConfigError as exc:
        raise typer.BadParameter(str(exc)) from None


@batch_app.command("build")
def build_command(
    trajectories: Annotated[Path, typer.Option(help="Folder of <rollout_id>.jsonl files recorded by the proxy.")],
    rewards: Annotated[Path, typer.Option(help="rewards.json written by the score step.")],
    out: Annotated[Path, typer.Option(help="Where to write the DataProto (DataProto.save_to_disk).")],
    config: Annotated[
        Optional[Path], typer.Option(help="Experiment config for the algorithm settings (default: $OPENFORGE_CONFIG_YAML, else defaults).")
    ] = None,
    pad_token_id: Annotated[int, typer.Option(help="Padding token id (the model's pad_token_id).")] = 0,
) -> None:
    """Turn recorded calls plus rewards into the veRL batch the trainer consumes."""
    import os

    from components.core.config import CONFIG_ENV
    from components.trainer.build import build_batch_file

    experiment = _config(config) if config is not None or os.environ.get(CONFIG_ENV) else None
    stats = build_batch_file(trajectories, rewards, out, experiment, pad_token_id)
    typer.echo(f"wrote {out}: " + ", ".join(f"{k}={v}" for k, v in stats.model_dump().items()))
