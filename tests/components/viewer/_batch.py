"""What the trainer trained on, read from the batch itself: the count the training view must show."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from components.core.storage import ArtifactStore, RunLayout


def trained_tokens_by_rollout(store: ArtifactStore, layout: RunLayout, iteration: int, scratch: Path) -> Counter[str]:
    """Each rollout's trained tokens in ``batch.pt`` (its rows' response-mask ones)."""
    from verl import DataProto

    (scratch / "batch.pt").write_bytes(store.get_bytes(layout.batch(iteration)))
    batch = DataProto.load_from_disk(scratch / "batch.pt")
    counts: Counter[str] = Counter()
    for row, rollout_id in enumerate(batch.non_tensor_batch["rollout_id"]):
        counts[str(rollout_id)] += int(batch.batch["response_mask"][row].sum())
    return counts
