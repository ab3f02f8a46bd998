"""The straggler cut in a real local iteration: one task whose rollouts sleep, the rest quick.

``rollout.finish_fraction: 0.5`` with a grace of one second: once the quick task's
rollouts have ended, the serve step declares the cut, the slow rollouts' runners learn it
through their proxies and stop their harnesses, and scoring masks them with status
``cut``, counted for their task, while the quick ones train.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from components.core.config import load_config
from components.core.outcome import Outcome, RolloutStatus
from components.core.storage import RunLayout, open_store
from tests._runtime import PIPELINE_RUNTIME

REPO = Path(__file__).resolve().parents[2]
SLEEP_S = 28  # under the reference harness's 30 s limit on one command
SLOW_TASK = {
    "id": "slow",
    "prompt": "Wait, then answer.",
    "time_limit_s": 300,
    "verifier": {"command": ["python3", "{task_dir}/verify.py"], "timeout_s": 10},
    # Three forced sleeps, then an answer: ~84 s unless something stops it.
    "choices": [[{"tool_calls": [{"shell": f"sleep {SLEEP_S}"}]}]] * 3 + [[{"content": "yes"}]],
}


@pytest.mark.slow
@pytest.mark.timeout(900)  # one local iteration with training: ~90 s idle, more on CI's loaded cores
def test_the_cut_stops_the_slow_task_masks_it_and_trains_on_the_rest(tmp_path: Path) -> None:
    from pipelines.run import run_experiment

    tasks = tmp_path / "tasks"
    shutil.copytree(REPO / "examples" / "tasks" / "quickstart" / "say-yes", tasks / "say-yes")
    (tasks / "slow").mkdir()
    (tasks / "slow" / "task.yaml").write_text(yaml.safe_dump(SLOW_TASK))
    shutil.copy(tasks / "say-yes" / "verify.py", tasks / "slow" / "verify.py")
    config = load_config(REPO / "examples" / "quickstart.yaml").model_copy(deep=True)
    config.iterations = 1
    config.tasks.source = str(tasks)
    config.harness.max_turns = 4
    config.rollout.samples_per_task = 2
    config.rollout.time_limit_s = 300
    config.rollout.finish_fraction = 0.5
    config.rollout.grace_s = 1.0
    config.rollout.min_usable_fraction = 0.25
    config.storage.uri = f"file://{tmp_path / 'store'}"
    config.tracking.uri = f"sqlite:///{tmp_path / 'mlflow.db'}"

    metrics = run_experiment(config, console=Console(file=io.StringIO()), workdir=tmp_path / ".openforge", runtime=PIPELINE_RUNTIME)

    store, layout = open_store(config.storage.uri), RunLayout(config.name)
    outcomes = [Outcome.model_validate_json(store.get_bytes(k)) for k in store.list(layout.outcomes(0))]
    slow = [o for o in outcomes if o.task_id == "slow"]
    quick = [o for o in outcomes if o.task_id == "say-yes"]
    assert len(slow) == len(quick) == 2
    assert all(o.status is RolloutStatus.CUT for o in slow), [(o.status, o.details) for o in slow]
    assert all("straggler cut" in o.details for o in slow)
    assert all(o.duration_s < 3 * SLEEP_S - 4 for o in slow), "stopped, not run to their end"
    assert all(o.status is not RolloutStatus.CUT for o in quick)
    assert all(store.exists(layout.trajectory(0, o.rollout_id)) for o in slow), "what they did before the cut is kept"

    cut = json.loads(store.get_bytes(layout.straggler_cut(0)))
    assert cut["total"] == 4 and cut["finish_fraction"] == 0.5 and cut["ended_at_threshold"] >= 2
    rewards = json.loads(store.get_bytes(layout.rewards(0)))
    assert {r["rollout_id"] for r in rewards["records"] if not r["usable"]} >= {o.rollout_id for o in slow}
    assert rewards["unusable_reasons"]["cut"] == 2
    assert {t["task_id"]: t["cut"] for t in rewards["tasks"]} == {"say-yes": 0, "slow": 2}
    assert metrics[0]["rollouts/cut"] == 2
