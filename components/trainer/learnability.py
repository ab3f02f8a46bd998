"""Would GRPO learn from these rollouts? The learnability probe's analysis (docs/operations.md).

GRPO learns only from groups whose rewards differ: a group where every rollout passed, or
every one failed, has zero advantage everywhere and trains nothing. Which rollouts train is
decided by the trainer's own rule (``batch.groups_with_signal``) and which of their tokens
train by its own call filter (``rows.trainable_calls``), so the probe predicts with the
code that will train, not a copy of it. From one evaluation's scored rollouts it reports
the share of groups with mixed outcomes, the share of sampled tokens that would train,
the failure kinds, and a verdict with its reasons.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, Field

from components.core.outcome import Outcome, RewardRecord, RolloutStatus
from components.core.trajectory import RecordedCall
from components.trainer.batch import groups_with_signal
from components.trainer.rows import trainable_calls

# A group's kind. Only MIXED groups train.
MIXED = "mixed"
ALL_PASS = "all_pass"  # every usable rollout passed: nothing left to learn there
ALL_FAIL = "all_fail"  # none passed: no rollout to reinforce
EQUAL = "equal"  # equal rewards although verdicts differ (a verifier rewarding pass and fail alike)
MASKED = "masked"  # fewer than two usable rollouts of several: no GRPO baseline
GROUP_KINDS = (MIXED, ALL_PASS, ALL_FAIL, EQUAL, MASKED)

# Verdicts.
LEARNABLE = "learnable"
WEAK = "weak signal"
SOLVED = "already solved"
TOO_HARD = "too hard"
NO_SIGNAL = "no signal"
BROKEN = "broken"

# Failures that are not the policy's answer to the task: the harness crashed, the engine,
# proxy or storage failed, or the verifier did. Above this share the rewards mostly measure
# the setup, so the probe says "broken" whatever the groups look like.
SETUP_FAILURES = (RolloutStatus.HARNESS_ERROR, RolloutStatus.INFRA_ERROR, RolloutStatus.VERIFIER_ERROR)
BROKEN_SHARE = 0.5
# Under this share of mixed groups an iteration trains on a handful of tasks at best; with
# 4-sample groups it is one task in four, where one lucky draw decides the signal.
WEAK_SHARE = 0.25


class GroupFinding(BaseModel):
    """One task's group as the trainer would see it."""

    task_id: str
    kind: str = Field(description="One of GROUP_KINDS.")
    rollouts: int
    passed: int = Field(description="Usable rollouts the verifier passed.")
    rewards: list[float] = Field(description="Rewards of the usable rollouts, in rollout order.")
    sampled_tokens: int
    trainable_tokens: int


class Learnability(BaseModel):
    """The probe's findings on one harness and task set."""

    rollouts: int
    groups: int
    mixed_share: float | None = Field(description="Groups with mixed outcomes / groups; None without groups.")
    sampled_tokens: int = Field(description="Sampled (not forced) completion tokens of every recorded call, all attempts.")
    trainable_tokens: int = Field(description="Completion tokens the trainer would train on (mixed groups).")
    token_share: float | None = Field(description="trainable / sampled tokens; None when nothing was sampled.")
    group_kinds: dict[str, int] = Field(description="Groups by kind, every kind listed.")
    statuses: dict[str, int] = Field(description="Rollouts by status, every status listed.")
    unusable: dict[str, int] = Field(description="Rollouts training must mask, by the score step's reason code.")
    failure_examples: dict[str, str] = Field(description="One rollout's details per failing status.")
    verdict: str
    reasons: list[str]
    tasks: list[GroupFinding]

    @property
    def setup_failure_share(self) -> float:
        failed = sum(self.statuses[s.value] for s in SETUP_FAILURES)
        return failed / self.rollouts if self.rollouts else 0.0


def sampled_tokens(calls: Sequence[RecordedCall]) -> tuple[int, int]:
    """``(sampled, trainable)`` completion tokens of one rollout's calls (forced ones left out):
    every call of every attempt, and those of the calls the trainer merges into rows
    (``rows.trainable_calls``)."""
    every = sum(sum(call.sampled_mask()) for call in calls)
    kept = sum(sum(call.sampled_mask()) for call in trainable_calls(sorted(calls, key=lambda c: c.call_index)))
    return every, kept


def _kind(usable: list[RewardRecord], planned: int, passed: set[str], mixed: bool) -> str:
    if mixed:
        return MIXED
    if not usable or (planned > 1 and len(usable) < 2):
        return MASKED
    wins = sum(r.rollout_id in passed for r in usable)
    return ALL_PASS if wins == len(usable) else ALL_FAIL if wins == 0 else EQUAL


def _groups(
    records: Sequence[RewardRecord], passed: set[str], tokens: Mapping[str, tuple[int, int]], signal: set[str]
) -> list[GroupFinding]:
    members: dict[str, list[RewardRecord]] = defaultdict(list)
    for record in records:
        members[record.group_id].append(record)
    out = []
    for gid in sorted(members, key=lambda g: members[g][0].task_id):
        group = sorted(members[gid], key=lambda r: r.rollout_id)
        usable = [r for r in group if r.usable]
        mixed = gid in signal
        out.append(
            GroupFinding(
                task_id=group[0].task_id,
                kind=_kind(usable, len(group), passed, mixed),
                rollouts=len(group),
                passed=sum(r.rollout_id in passed for r in usable),
                rewards=[r.reward for r in usable],
                sampled_tokens=sum(tokens.get(r.rollout_id, (0, 0))[0] for r in group),
                trainable_tokens=sum(tokens.get(r.rollout_id, (0, 0))[1] for r in usable) if mixed else 0,
            )
        )
    return out


def _pct(share: float) -> str:
    return f"{100 * share:.0f}%"


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{name} {n}" for name, n in counts.items() if n) or "none"


def _verdict(found: Learnability) -> tuple[str, list[str]]:
    """The verdict and why, first match wins: broken, then no signal in any form, then weak or learnable."""
    kinds, n = found.group_kinds, found.groups
    measured = (
        f"{kinds[MIXED]} of {n} group(s) have mixed outcomes ({_pct(found.mixed_share or 0.0)}); "
        f"{_pct(found.token_share or 0.0)} of sampled tokens would train"
    )
    if found.rollouts == 0:
        return BROKEN, ["no rollout was scored: the evaluation ran nothing"]
    if found.setup_failure_share >= BROKEN_SHARE:
        failed = {s.value: found.statuses[s.value] for s in SETUP_FAILURES}
        example = next((found.failure_examples[s] for s in failed if s in found.failure_examples), "")
        why = [f"{_pct(found.setup_failure_share)} of rollouts ended in setup failures ({_counts(failed)})"]
        return BROKEN, why + ([f"for example: {example}"] if example else []) + [measured]
    unusable = sum(found.unusable.values())
    if unusable / found.rollouts >= BROKEN_SHARE:
        why = f"{_pct(unusable / found.rollouts)} of rollouts cannot be trained on ({_counts(found.unusable)})"
        return BROKEN, [why, measured]
    if kinds[MIXED] == 0:
        if kinds[ALL_PASS] == n:
            return SOLVED, [f"every rollout of all {n} task(s) passed: no group has signal"]
        if kinds[ALL_FAIL] == n:
            return TOO_HARD, [f"no rollout of any of the {n} task(s) passed: no group has signal"]
        return NO_SIGNAL, [f"every group agrees: {_counts({k: kinds[k] for k in GROUP_KINDS if k != MIXED})}"]
    if (found.mixed_share or 0.0) < WEAK_SHARE:
        return WEAK, [measured, f"under {_pct(WEAK_SHARE)} of groups train; the rest: {_counts(kinds)}"]
    return LEARNABLE, [measured]


def assess_learnability(
    records: Sequence[RewardRecord],
    outcomes: Sequence[Outcome],
    tokens: Mapping[str, tuple[int, int]],
    unusable: Mapping[str, int],
) -> Learnability:
    """The findings on one evaluation: its score step's ``records`` and ``unusable`` reason
    counts, its ``outcomes`` (verdicts and failure details), and each rollout's
    ``(sampled, trainable)`` tokens from ``sampled_tokens`` (absent: no trajectory, 0)."""
    passed = {o.rollout_id for o in outcomes if o.status is RolloutStatus.OK and o.passed}
    signal = {r.group_id for r in groups_with_signal(records)}
    groups = _groups(records, passed, tokens, signal)
    kinds = Counter(g.kind for g in groups)
    statuses = Counter(r.status.value for r in records)
    examples: dict[str, str] = {}
    for outcome in sorted(outcomes, key=lambda o: o.rollout_id):
        if outcome.status is not RolloutStatus.OK and outcome.details:
            examples.setdefault(outcome.status.value, f"{outcome.rollout_id}: {outcome.details[:300]}")
    sampled = sum(g.sampled_tokens for g in groups)
    trainable = sum(g.trainable_tokens for g in groups)
    found = Learnability(
        rollouts=len(records),
        groups=len(groups),
        mixed_share=kinds[MIXED] / len(groups) if groups else None,
        sampled_tokens=sampled,
        trainable_tokens=trainable,
        token_share=trainable / sampled if sampled else None,
        group_kinds={k: kinds[k] for k in GROUP_KINDS},
        statuses={s.value: statuses[s.value] for s in RolloutStatus},
        unusable=dict(sorted(unusable.items())),
        failure_examples=examples,
        verdict="",
        reasons=[],
        tasks=groups,
    )
    verdict, reasons = _verdict(found)
    return found.model_copy(update={"verdict": verdict, "reasons": reasons})


class ProbeReport(BaseModel):
    """What `openforge probe` writes to ``<name>/evals/<id>/probe.json`` and prints with --json."""

    experiment: str
    eval_id: str
    harness: str
    task_source: str
    checkpoint: dict = Field(description="What the evaluation served: requested, version, source.")
    samples_per_task: int
    findings: Learnability
