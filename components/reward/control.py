"""The shuffled-reward control (``algorithm.shuffle_rewards``): cut the link between a
rollout and its reward, keep everything else.

Within each group the usable rollouts' rewards are permuted, so the group's reward
distribution (mean, std, whether all are equal) is what the verifier gave, while which
rollout got which reward is chance. A trainer that still improves the pass rate is
learning from something other than the reward (length, position, the candidates' priors).

The permutation is uniform, the identity included: forcing every group to change would
anti-correlate small groups (a group of two would always learn the inverse of its
verdict), which is a signal too. Unusable rollouts keep their reward: training masks them.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence

from components.core.outcome import RewardRecord


def control_rng(seed: int, iteration: int) -> random.Random:
    """The generator of one iteration's shuffle: a rerun of the score step draws the same one."""
    return random.Random(f"shuffle-rewards/{seed}/{iteration}")


def shuffle_within_groups(records: Sequence[RewardRecord], rng: random.Random) -> list[RewardRecord]:
    """``records`` (same order) with the usable rewards of each group permuted among themselves."""
    members: dict[str, list[int]] = defaultdict(list)
    for index, record in enumerate(records):
        if record.usable:
            members[record.group_id].append(index)
    out = list(records)
    for gid in sorted(members):  # a fixed order, so the draws do not depend on dict history
        indices = members[gid]
        rewards = [records[i].reward for i in indices]
        rng.shuffle(rewards)
        for i, reward in zip(indices, rewards):
            out[i] = records[i].model_copy(update={"reward": reward})
    return out
