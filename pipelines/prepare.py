"""What the prepare step decides: which iteration, which tasks, which rollouts are left.

``prepare_step`` (run by pipelines/steps/prepare.py) reads the run's state from the store and
decides what this run of the iteration template does:

- ``next`` is the first iteration not yet committed (what the CronWorkflow asks for);
- an iteration that is already committed is *not pending*: the DAG skips everything
  after prepare, so repeating a run (a resubmitted bounded workflow, a retried cron run)
  never trains twice;
- an iteration beyond the next one is refused (it would leave a gap in the history);
- the tasks come from the state's task cursor; a plan already written for this
  iteration (an interrupted attempt) is reused as it is, so a resumed iteration keeps
  its tasks even if the task set changed meanwhile;
- rollouts whose outcome is already stored are left out of the fan-out, so a resumed
  iteration never reruns (and overwrites) a finished rollout;
- with overlapped iterations (``algorithm.max_staleness: 1``) it also plans iteration
  k + 1 (its tasks from where iteration k's plan leaves the cursor), whose rollouts the DAG
  runs while k trains; not past ``stop_at``, the end of a bounded run, which would sample
  an iteration nobody trains.
"""

from __future__ import annotations

import json

from pydantic import BaseModel

from components.core.config import ExperimentConfig
from components.core.storage import ArtifactStore, RunLayout, run_layout
from pipelines.state import read_state
from pipelines.steps.prepare import NEXT


class PrepareError(RuntimeError):
    """An iteration that cannot be prepared now; the message says why and what to submit instead."""


class Prepared(BaseModel):
    """What the prepare step tells the rest of the DAG."""

    iteration: int
    pending: bool
    rollouts: list[dict]
    reason: str
    # Overlapped iterations: the next iteration's rollouts left, run while this one trains.
    next_rollouts: list[dict] = []

    @property
    def generate(self) -> bool:
        return self.pending and bool(self.rollouts)

    @property
    def generate_next(self) -> bool:
        return self.pending and bool(self.next_rollouts)


def parse_iteration(value: str) -> int | None:
    """``next`` -> None, a non-negative number -> itself; anything else is a clear error."""
    if value == NEXT:
        return None
    if not value.isdigit():
        raise PrepareError(f"--iteration {value!r}: give a non-negative number or {NEXT!r}")
    return int(value)


def prepare_step(config: ExperimentConfig, requested: int | None, store: ArtifactStore, stop_at: int = 0) -> Prepared:
    """Resolve the iteration against the run's state (an evaluation: none) and plan what is left of it.

    ``stop_at`` (0: none) is the iteration a bounded run stops before: nothing is planned ahead into it.
    """
    layout = run_layout(config)
    if config.evaluation is not None:
        return _prepare_evaluation(config, requested or 0, store, layout)
    state = read_state(store, layout)
    first_open = 0 if state is None else state.last_committed_iteration + 1
    iteration = first_open if requested is None else requested
    if iteration < first_open:
        return Prepared(
            iteration=iteration,
            pending=False,
            rollouts=[],
            reason=f"iteration {iteration} is already committed (last committed: {first_open - 1}); nothing to do",
        )
    if iteration > first_open:
        raise PrepareError(
            f"iteration {iteration} cannot run before iteration {first_open} is committed "
            f"({store.root}/{layout.state()}); submit iteration={NEXT} instead"
        )
    prepared = _plan_left(config, iteration, store, layout, cursor=0 if state is None else state.task_cursor)
    if config.algorithm.max_staleness and (not stop_at or iteration + 1 < stop_at):
        prepared = _plan_next(config, prepared, store, layout)
    return prepared


def _plan_next(config: ExperimentConfig, prepared: Prepared, store: ArtifactStore, layout: RunLayout) -> Prepared:
    """Plan iteration k + 1 too: its tasks start where iteration k's plan leaves the task cursor."""
    plan = json.loads(store.get_bytes(layout.plan(prepared.iteration)))
    ahead = _plan_left(config, prepared.iteration + 1, store, layout, cursor=int(plan["next_task_cursor"]))
    reason = f"{prepared.reason}; overlapped: {ahead.reason}, on checkpoint {config.algorithm.sampled_version(ahead.iteration)}"
    return prepared.model_copy(update={"next_rollouts": ahead.rollouts, "reason": reason})


def _prepare_evaluation(config: ExperimentConfig, iteration: int, store: ArtifactStore, layout: RunLayout) -> Prepared:
    """An evaluation is never committed and trains nothing: the run's state does not apply."""
    prepared = _plan_left(config, iteration, store, layout, cursor=0)
    return prepared.model_copy(update={"reason": f"evaluation {config.evaluation.id}: {prepared.reason}"})


def _plan_left(config: ExperimentConfig, iteration: int, store: ArtifactStore, layout: RunLayout, cursor: int) -> Prepared:
    """The iteration's plan (reused when stored) and the rollouts whose outcome is not stored yet."""
    from components.rollout.prepare import fan_out, prepare_iteration

    plan_key = layout.plan(iteration)
    if store.exists(plan_key):
        plan, how = json.loads(store.get_bytes(plan_key)), "resumed"
    else:
        plan, how = prepare_iteration(config, iteration, store, cursor), "planned"
    planned = fan_out(plan)
    left = [r for r in planned if not store.exists(layout.outcome(iteration, r["rollout_id"]))]
    reason = f"iteration {iteration} {how}: {len(left)} of {len(planned)} rollouts to run over {len(plan['tasks'])} tasks"
    return Prepared(iteration=iteration, pending=True, rollouts=left, reason=reason)
