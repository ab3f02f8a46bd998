"""The run's state in the store (``state.json``): where the next iteration starts.

Written last by the commit step, so it only ever names an iteration whose rollouts,
rewards, checkpoint and metrics are all in place. Every run of the iteration template
starts from it (pipelines/prepare.py): the iteration number, the checkpoint to serve and
the task cursor all come from here, so a failed run changes nothing and a repeated one
finds its iteration committed.
"""

from __future__ import annotations

import json

from pydantic import BaseModel, ConfigDict, Field

from components.core.storage import ArtifactStore, RunLayout


class RunState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    last_committed_iteration: int = Field(ge=0)
    checkpoint: int = Field(ge=1, description="The checkpoint the next iteration serves (last + 1).")
    # A default, so state files written before the cursor existed still read.
    task_cursor: int = Field(0, ge=0, description="Where the next iteration's tasks start in the task stream.")


def read_state(store: ArtifactStore, layout: RunLayout) -> RunState | None:
    """The committed state, or None before the first iteration is committed."""
    key = layout.state()
    if not store.exists(key):
        return None
    return RunState.model_validate_json(store.get_bytes(key))


def write_state(store: ArtifactStore, layout: RunLayout, state: RunState) -> None:
    store.put_bytes(layout.state(), json.dumps(state.model_dump(), indent=2).encode())


def next_iteration(store: ArtifactStore, layout: RunLayout) -> int:
    """The first iteration not yet committed."""
    state = read_state(store, layout)
    return 0 if state is None else state.last_committed_iteration + 1
