"""Overlapped iterations in a real local run: the quickstart with ``algorithm.max_staleness: 1``
on the dev engine and the CPU update. Iteration 1's rollouts sample checkpoint 0 while
iteration 0 trains checkpoint 1; iteration 1 then trains checkpoint 1 on them, its ratio
taken against the recorded behaviour logprobs. (Resume after a failure:
tests/pipelines/test_run_overlap.py.)"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from components.core.checkpoints import committed_versions
from components.core.storage import RunLayout, open_store
from components.core.trajectory import RecordedCall
from tests.e2e._quickstart import local_quickstart
from tests._runtime import PIPELINE_RUNTIME


@pytest.mark.slow
@pytest.mark.timeout(900)  # two local iterations with training: ~2 min idle, more on CI's loaded cores
def test_an_overlapped_run_samples_one_version_behind_and_trains_each_batch_once(tmp_path: Path) -> None:
    from pipelines.run import run_experiment

    config = local_quickstart(tmp_path, iterations=2)
    config.algorithm.max_staleness = 1
    out = io.StringIO()

    metrics = run_experiment(config, console=Console(file=out, width=160), workdir=tmp_path / ".openforge", runtime=PIPELINE_RUNTIME)

    store, layout = open_store(config.storage.uri), RunLayout(config.name)
    assert committed_versions(store, layout) == [0, 1, 2]
    for iteration in (0, 1):
        keys = [k for k in store.list(layout.outcomes(iteration)) if k.endswith(".json")]
        assert len(keys) == 16, f"iteration {iteration}: {len(keys)} outcomes"
        versions = set()
        folder = layout.trajectory(iteration, "x").rsplit("/", 1)[0] + "/"
        for rollout_key in (k for k in store.list(folder) if k.endswith(".jsonl")):
            for line in store.get_bytes(rollout_key).decode().splitlines():
                versions.add(RecordedCall.model_validate_json(line).policy_version)
        # Both iterations sampled checkpoint 0: iteration 1 while iteration 0 trained.
        assert versions == {"0"}, f"iteration {iteration} sampled {versions}"
    assert not store.exists(layout.plan(2)), "the run's last iteration sampled past its end"
    assert metrics[0]["batch/policy_lag_mean"] == 0.0 and metrics[1]["batch/policy_lag_mean"] == 1.0
    assert metrics[0]["batch/trained_tokens"] > 0 and metrics[1]["batch/trained_tokens"] > 0
    # Iteration 0's update starts on the weights that sampled it: recorded and recomputed logprobs
    # agree. Iteration 1's starts one update later: the gap is what the behaviour logprobs correct.
    assert metrics[0]["train/logprob_gap_mean"] < 1e-3 < metrics[1]["train/logprob_gap_mean"]
    assert "it 0 · generate-next.rollout (16 rollouts): running" in out.getvalue()
