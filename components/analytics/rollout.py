"""The behaviour analytics of one rollout, from its recorded calls and its outcome.

Each value is None where the analytic does not apply to the rollout (no tool declared,
nothing written, no error met, not graded); docs/analytics.md defines each one.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Sequence

from pydantic import BaseModel, Field

from components.analytics.actions import Action, declared_tools, rollout_actions
from components.analytics.effects import Effects, effects, same_file
from components.core.outcome import Outcome, RolloutStatus
from components.core.trajectory import RecordedCall, latest_attempt
from components.reward.scoring import GRADED_STATUSES, judged_attempt

# The analytics each rollout has a value of, in the order reports list them.
ANALYTICS = (
    "tool_coverage",
    "self_verification",
    "error_recovery",
    "multi_step_completion",
    "turns",
    "prompt_tokens",
    "completion_tokens",
)
UNKNOWN_HARNESS = "unknown"


class RolloutAnalytics(BaseModel):
    """One rollout's analytics and the counts they come from."""

    rollout_id: str
    task_id: str
    harness: str = Field(description="outcome.extra.harness; 'unknown' for outcomes without it.")
    problem: str | None = Field(None, description="Why the records cannot be read; then every analytic is None.")
    status: str | None = None
    passed: bool | None = Field(None, description="The verifier passed it (False for every status but ok).")
    turns: int = Field(0, description="Model calls of the judged attempt.")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    declared_tools: list[str] = Field(default_factory=list)
    tool_calls: dict[str, int] = Field(default_factory=dict, description="Calls per tool (declared or not).")
    undeclared_calls: int = Field(0, description="Calls naming a tool no request declared.")
    writes: int = Field(0, description="Tool calls that write a file.")
    verified: bool | None = Field(None, description="A verification action follows the last write; None without writes.")
    errors: int = Field(0, description="Tool results that report an error.")
    recovered: int = Field(0, description="Errors after which the same command later succeeded.")
    repeated: int = Field(0, description="Errors whose very next tool call was the identical call.")

    def values(self) -> dict[str, float | None]:
        """Each analytic's value for this rollout (None: does not apply, or unreadable)."""
        if self.problem is not None:
            return dict.fromkeys(ANALYTICS)
        used = set(self.tool_calls) & set(self.declared_tools)
        graded = self.status in {s.value for s in GRADED_STATUSES}
        return {
            "tool_coverage": len(used) / len(self.declared_tools) if self.declared_tools else None,
            "self_verification": None if self.verified is None else float(self.verified),
            "error_recovery": self.recovered / self.errors if self.errors else None,
            "multi_step_completion": float(bool(self.passed)) if graded and self.turns >= 2 else None,
            "turns": float(self.turns),
            "prompt_tokens": float(self.prompt_tokens),
            "completion_tokens": float(self.completion_tokens),
        }


def rollout_analytics(rollout_id: str, task_id: str, calls: Sequence[RecordedCall], outcome: dict[str, Any] | None) -> RolloutAnalytics:
    """The analytics of one rollout; an outcome that is missing or invalid makes it unreadable."""
    if outcome is None:
        return RolloutAnalytics(rollout_id=rollout_id, task_id=task_id, harness=UNKNOWN_HARNESS, problem="no outcome record")
    try:
        parsed = Outcome.model_validate(outcome)
    except ValueError as exc:
        return RolloutAnalytics(
            rollout_id=rollout_id, task_id=task_id, harness=UNKNOWN_HARNESS, problem=f"invalid outcome: {str(exc).splitlines()[0]}"
        )
    judged = latest_attempt(calls, judged_attempt(parsed))
    actions = rollout_actions(judged)
    declared = declared_tools(judged)
    counts = Counter(action.tool for action in actions)
    done = [effects(a.tool, a.arguments) for a in actions]
    errors, recovered, repeated = _recovery(actions, done)
    return RolloutAnalytics(
        rollout_id=rollout_id,
        task_id=parsed.task_id,
        harness=str(parsed.extra.get("harness") or UNKNOWN_HARNESS),
        status=parsed.status.value,
        passed=bool(parsed.passed) if parsed.status is RolloutStatus.OK else False,
        turns=len(judged),
        prompt_tokens=sum(len(c.prompt_token_ids) for c in judged),
        completion_tokens=sum(len(c.completion_token_ids) for c in judged),
        declared_tools=sorted(declared),
        tool_calls=dict(sorted(counts.items())),
        undeclared_calls=sum(n for tool, n in counts.items() if tool not in declared),
        writes=sum(1 for e in done if e.writes),
        verified=_verified(done),
        errors=errors,
        recovered=recovered,
        repeated=repeated,
    )


def _verified(done: list[Effects]) -> bool | None:
    """Whether a verification step comes after the last write: a test run, or a read (or run)
    of a file the rollout wrote before that step. None when nothing was written."""
    steps = [step for e in done for step in e.steps]
    last_write = max((i for i, step in enumerate(steps) if step.writes), default=None)
    if last_write is None:
        return None
    written: list[str] = []
    for i, step in enumerate(steps):
        checks = step.runs_tests or any(same_file(r, w) for r in step.reads for w in written)
        if i > last_write and checks:
            return True
        written += step.writes
    return False


def _recovery(actions: list[Action], done: list[Effects]) -> tuple[int, int, int]:
    """(errors, recovered, repeated): an error is recovered when a later call of the same
    command (``Effects.identity``) succeeds; repeated when the very next call is identical."""
    errors = recovered = repeated = 0
    for i, action in enumerate(actions):
        if not action.failed:
            continue
        errors += 1
        following = actions[i + 1] if i + 1 < len(actions) else None
        if following is not None and (following.tool, following.arguments) == (action.tool, action.arguments):
            repeated += 1
        if any(
            done[j].identity == done[i].identity and actions[j].result is not None and not actions[j].failed
            for j in range(i + 1, len(actions))
        ):
            recovered += 1
    return errors, recovered, repeated
