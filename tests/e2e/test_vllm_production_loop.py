"""The production loop on CPU: ``examples/vllm.yaml`` serves with real vLLM (its CPU build)
and trains with veRL's own workers (Ray, FSDP over gloo) for two iterations.

Checkpoint 1 is exported by veRL's merger in iteration 0 and served by vLLM in iteration 1:
every call recorded there carries policy version 1, with vLLM's token ids and logprobs.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from tests._missing import missing
from tests._vllm import vllm_python

from components.core.checkpoints import committed_versions
from components.core.config import load_config
from components.core.storage import RunLayout, open_store
from components.core.trajectory import RecordedCall
from pipelines.run import run_experiment
from tests._runtime import PIPELINE_RUNTIME

REPO = Path(__file__).resolve().parents[2]


def _calls(store, layout: RunLayout, iteration: int) -> list[RecordedCall]:
    plan = json.loads(store.get_bytes(layout.plan(iteration)))
    return [
        RecordedCall.model_validate_json(line)
        for rollout in plan["rollouts"]
        for line in store.get_bytes(layout.trajectory(iteration, rollout["rollout_id"])).splitlines()
    ]


@pytest.mark.slow
@pytest.mark.timeout(1800)  # two vLLM starts (~2 min each here) and two veRL updates (~100 s each)
def test_vllm_serves_and_verl_trains_two_iterations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    python, why = vllm_python()
    if python is None:
        missing(why)
    monkeypatch.chdir(REPO)  # the example's task set is relative to the repository
    config = load_config(REPO / "examples" / "vllm.yaml").model_copy(deep=True)
    config.engine.vllm.python = python
    config.storage.uri = f"file://{tmp_path / 'store'}"
    config.tracking.uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    out = io.StringIO()

    logged = run_experiment(config, console=Console(file=out, width=100), workdir=tmp_path / ".openforge", runtime=PIPELINE_RUNTIME)

    store, layout = open_store(config.storage.uri), RunLayout(config.name)
    assert committed_versions(store, layout) == [0, 1, 2], out.getvalue()
    for iteration in (0, 1):
        metrics = logged[iteration]
        calls = _calls(store, layout, iteration)
        assert calls and all(call.ok for call in calls), out.getvalue()
        assert {call.policy_version for call in calls} == {str(iteration)}  # vLLM's /v1/models root
        for call in calls:
            assert call.prompt_token_ids and call.completion_token_ids
            assert len(call.completion_logprobs) == len(call.completion_token_ids)
        assert metrics["batch/trained_tokens"] > 0 and metrics["batch/dropped_rows"] == 0
        # veRL's workers made the update: its own metric names, and its rollout-correction
        # figures comparing vLLM's logprobs with the workers' recompute (bf16 there).
        assert metrics["train/verl/actor/grad_norm"] > 0
        assert metrics["train/verl/rollout_corr/log_ppl_abs_diff"] < 0.05
