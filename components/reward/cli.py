"""``openforge step score``: read the config from the environment, score one iteration."""

from __future__ import annotations

from typing import Annotated

import typer


def score_command(
    iteration: Annotated[int, typer.Option(min=0, help="The iteration to score.")],
) -> None:
    """Turn the iteration's verifier outcomes into rewards, group statistics and pass@k."""
    from components.core.config import config_for_step
    from components.core.storage import open_store
    from components.reward.step import score_iteration

    config = config_for_step()
    report = score_iteration(config, iteration, open_store(config.storage.uri, config.storage.endpoint_url))
    usable = sum(r.usable for r in report.records)
    typer.echo(f"scored {len(report.records)} rollouts ({usable} usable): " + ", ".join(
        f"{name}={value:.3g}" for name, value in sorted(report.metrics.items()) if name.startswith(("reward/", "pass"))
    ))
