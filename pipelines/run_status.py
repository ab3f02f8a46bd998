"""The workflow's exit hook: record how a run of the workflow ended in the experiment's MLflow run.

Argo runs `openforge step record-status --workflow NAME --status STATUS` after every run
(``onExit``), whether it succeeded, failed or was stopped, so the MLflow run shows every
cron run and submission next to the metrics: tags with the last workflow, its status and
the last committed iteration, and one JSON artifact per workflow under ``workflows/``.
A workflow that ends and commits nothing is visible there, not only in the Argo UI.
"""

from __future__ import annotations

import json
import time

from pydantic import BaseModel

from components.core.config import ExperimentConfig
from components.core.storage import RunLayout, open_store
from pipelines.state import read_state
from pipelines.steps.record_status import STATUSES

TAG_WORKFLOW = "openforge.workflow.last"
TAG_STATUS = "openforge.workflow.last_status"
TAG_COMMITTED = "openforge.last_committed_iteration"


class RunStatus(BaseModel):
    workflow: str
    status: str
    last_committed_iteration: int | None
    recorded_at: float


def record_run_status(config: ExperimentConfig, workflow: str, status: str) -> RunStatus:
    """Tag the experiment's MLflow run with this workflow's ending and keep it as ``workflows/<name>.json``."""
    from components.core.tracking import ExperimentTracker

    if status not in STATUSES:
        raise ValueError(f"status {status!r} is not one of {', '.join(STATUSES)} (Argo's workflow phases)")
    store = open_store(config.storage.uri, config.storage.endpoint_url)
    state = read_state(store, RunLayout(config.name))
    record = RunStatus(
        workflow=workflow,
        status=status,
        last_committed_iteration=None if state is None else state.last_committed_iteration,
        recorded_at=time.time(),
    )
    tracker = ExperimentTracker(config.tracking, config.name)
    tags = {TAG_WORKFLOW: workflow, TAG_STATUS: status}
    if record.last_committed_iteration is not None:
        tags[TAG_COMMITTED] = str(record.last_committed_iteration)
    for key, value in tags.items():
        tracker.client.set_tag(tracker.run_id, key, value)
    tracker.log_text(json.dumps(record.model_dump(), indent=2), f"workflows/{workflow}.json")
    return record
