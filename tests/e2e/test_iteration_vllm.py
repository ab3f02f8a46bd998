"""``examples/vllm.yaml`` end to end: two iterations of the quickstart's loop with vLLM's CPU
build serving each committed checkpoint through the serve step (two vLLM starts, minutes)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from tests._vllm import vllm_python

from components.core.checkpoints import committed_versions
from components.core.config import ExperimentConfig, load_config
from components.core.storage import RunLayout, open_store
from components.core.trajectory import RecordedCall
from pipelines.run import run_experiment

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "vllm.yaml"


@pytest.mark.slow
def test_the_vllm_example_serves_each_iteration_its_checkpoint_and_records_vllms_tokens(
    tmp_path: Path, tracking_uri: str
) -> None:
    python, why = vllm_python()
    if python is None:
        pytest.skip(why)
    settings = load_config(EXAMPLE).model_dump()
    settings["engine"]["vllm"]["python"] = python  # the example's .venv-vllm, or $OPENFORGE_VLLM_PYTHON
    settings["storage"] = {"uri": f"file://{tmp_path / 'store'}"}
    settings["tracking"] = {"uri": tracking_uri}
    settings["tasks"]["source"] = str(EXAMPLE.parent / "tasks" / "quickstart")
    config = ExperimentConfig.model_validate(settings)

    logged = run_experiment(config, console=Console(file=io.StringIO(), width=160), workdir=tmp_path / ".openforge")

    store, layout = open_store(config.storage.uri), RunLayout(config.name)
    assert sorted(logged) == [0, 1] and committed_versions(store, layout) == [0, 1, 2]
    for iteration in (0, 1):
        rollouts = json.loads(store.get_bytes(layout.plan(iteration)))["rollouts"]
        calls = [
            RecordedCall.model_validate_json(line)
            for rollout in rollouts
            for line in store.get_bytes(layout.trajectory(iteration, rollout["rollout_id"])).splitlines()
        ]
        assert len(calls) >= 8 and all(call.ok for call in calls)
        # Iteration k is served by checkpoint k, which vLLM reports as the root of its model.
        assert {call.policy_version for call in calls} == {str(iteration)}
        assert all(call.prompt_token_ids for call in calls)
        assert all(len(call.completion_token_ids) == len(call.completion_logprobs) > 0 for call in calls)
