"""Reading what the train step consumes: reward records and the usable rollouts' calls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Mapping

from pydantic import ValidationError

from components.core.images import prompt_images, read_image
from components.core.outcome import RewardRecord
from components.core.rollout_identity import trajectory_file
from components.core.storage import ArtifactStore, RunLayout
from components.core.trajectory import RecordedCall, read_session, read_sessions
from components.trainer.row_images import ImagesOf
from components.trainer.rows import BatchError


def parse_rewards(raw: bytes, origin: str) -> list[RewardRecord]:
    """The records of a rewards.json written by the score step ({"records": [...], ...})."""
    try:
        records = json.loads(raw)["records"]
        return [RewardRecord.model_validate(record) for record in records]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise BatchError(f"{origin}: not a rewards file with a 'records' list ({exc}); rerun the score step") from None
    except ValidationError as exc:
        raise BatchError(f"{origin}: invalid reward record ({exc.errors()[0]['msg']}); rerun the score step") from None


def store_trajectories(
    store: ArtifactStore, layout: RunLayout, iteration: int, rollout_ids: Iterable[str], scratch: Path
) -> dict[str, list[RecordedCall]]:
    """Calls of the given rollouts, validated by ``read_session`` (which needs a file)."""
    calls = {}
    for rollout_id in rollout_ids:
        key = layout.trajectory(iteration, rollout_id)
        if not store.exists(key):
            raise BatchError(f"{store.root}/{key} is missing but rewards.json marks {rollout_id} usable; rescore")
        path = scratch / trajectory_file(rollout_id)
        path.write_bytes(store.get_bytes(key))
        calls[rollout_id] = read_session(path)
    return calls


def folder_trajectories(directory: Path) -> dict[str, list[RecordedCall]]:
    """Calls of every ``<rollout_id>.jsonl`` in a folder."""
    if not directory.is_dir():
        raise BatchError(f"{directory} is not a folder of <rollout_id>.jsonl trajectory files")
    return dict(read_sessions(directory))


def store_images(
    store: ArtifactStore, layout: RunLayout, iteration: int, calls: Mapping[str, list[RecordedCall]], scratch: Path
) -> ImagesOf:
    """``images_of`` for a vision-language batch: a call's prompt images, fetched from the
    iteration's image store once each (row_images.py)."""
    by_index = {(rollout_id, call.call_index): call for rollout_id, group in calls.items() for call in group}
    scratch.mkdir(parents=True, exist_ok=True)

    def images_of(rollout_id: str, call_index: int) -> list[bytes]:
        refs = prompt_images(by_index[(rollout_id, call_index)])
        for ref in refs:
            name = Path(ref.file).name
            if not (scratch / name).exists():
                key = f"{layout.images(iteration)}/{name}"
                if not store.exists(key):
                    raise FileNotFoundError(f"{store.root}/{key} is missing: the rollout's image was not uploaded")
                (scratch / name).write_bytes(store.get_bytes(key))
        return [read_image(ref, scratch) for ref in refs]

    return images_of
