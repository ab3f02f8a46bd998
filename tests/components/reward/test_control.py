"""The shuffled-reward control: each group keeps its rewards, loses which rollout earned which."""

from __future__ import annotations

from collections import Counter

from components.core.outcome import RewardRecord, RolloutStatus
from components.reward.control import control_rng, shuffle_within_groups


def _records(rewards: dict[str, list[float]], unusable: set[str] = frozenset()) -> list[RewardRecord]:
    return [
        RewardRecord(rollout_id=f"{task}-s{i}", task_id=task, group_id=f"it0-{task}", reward=reward,
                     usable=f"{task}-s{i}" not in unusable, status=RolloutStatus.OK)
        for task, values in rewards.items() for i, reward in enumerate(values)
    ]  # fmt: skip


def _by_group(records: list[RewardRecord]) -> dict[str, Counter]:
    groups: dict[str, Counter] = {}
    for record in records:
        groups.setdefault(record.group_id, Counter())[record.reward] += 1
    return groups


def test_each_group_keeps_its_multiset_of_rewards() -> None:
    records = _records({"a": [1.0, 0.0, 0.0, 1.0, 0.5], "b": [0.2, 0.9, 0.9], "c": [1.0]})

    shuffled = shuffle_within_groups(records, control_rng(0, 3))

    assert _by_group(shuffled) == _by_group(records)
    assert [r.rollout_id for r in shuffled] == [r.rollout_id for r in records]
    assert [r.usable for r in shuffled] == [r.usable for r in records]


def test_a_group_with_differing_rewards_is_reassigned_deterministically() -> None:
    records = _records({"a": [1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0]})

    first = [r.reward for r in shuffle_within_groups(records, control_rng(0, 0))]
    again = [r.reward for r in shuffle_within_groups(records, control_rng(0, 0))]
    next_iteration = [r.reward for r in shuffle_within_groups(records, control_rng(0, 1))]

    assert first != [r.reward for r in records]  # 1 chance in 70 of the same assignment: seed 0 is not it
    assert first == again
    assert next_iteration != first


def test_unusable_rollouts_keep_their_reward_and_take_no_part() -> None:
    records = _records({"a": [1.0, 0.0, 0.3, 0.7]}, unusable={"a-s0"})

    for iteration in range(10):
        shuffled = shuffle_within_groups(records, control_rng(0, iteration))
        assert shuffled[0].reward == 1.0 and not shuffled[0].usable
        assert sorted(r.reward for r in shuffled[1:]) == [0.0, 0.3, 0.7]
