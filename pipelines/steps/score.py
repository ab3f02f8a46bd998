"""score: the iteration's verifier outcomes to rewards, group statistics and pass@k.

Calls ``components.reward.step.score_iteration``; a rollout whose outcome is missing is
scored as lost (counted), not skipped.
"""

from __future__ import annotations

import typer

from pipelines.steps._context import call_on_store
from pipelines.steps._spec import StepSpec, iteration_flag


def run(iteration: int) -> None:
    report = call_on_store(SPEC, iteration)
    usable = sum(r.usable for r in report.records)
    typer.echo(f"scored {len(report.records)} rollouts ({usable} usable): " + ", ".join(
        f"{name}={value:.3g}" for name, value in sorted(report.metrics.items()) if name.startswith(("reward/", "pass"))
    ))  # fmt: skip


SPEC = StepSpec(
    name="score",
    summary="Turn the iteration's verifier outcomes into rewards, group statistics and pass@k.",
    calls="components.reward.step:score_iteration",
    run=run,
    flags=(iteration_flag("The iteration to score."),),
    reads=("plan", "outcome", "trajectory", "metrics"),
    writes=("rewards", "metrics", "costs"),
)
