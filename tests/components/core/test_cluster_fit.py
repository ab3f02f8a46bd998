"""The config refuses pods that cannot hold its engine or trainer (components/core/cluster_fit.py)."""

from __future__ import annotations

import pytest

from components.core.config import ExperimentConfig


def _config(**sections) -> ExperimentConfig:
    return ExperimentConfig(name="fit", tasks={"source": "tasks"}, **sections)


def _resources(step: str, gpu: int) -> dict:
    return {"resources": {step: {"cpu": "4", "memory": "32Gi", "gpu": gpu}}}


@pytest.mark.parametrize(
    ("sections", "message"),
    [
        (
            {"engine": {"kind": "vllm", "vllm": {"tensor_parallel_size": 4}}},
            "engine.vllm.tensor_parallel_size 4 spans 4 GPU(s) but the serve pod requests cluster.resources.serve.gpu 1: "
            "set cluster.resources.serve.gpu to 4",
        ),
        (
            {"trainer": {"backend": "verl", "n_gpus_per_node": 8}},
            "trainer.n_gpus_per_node 8 places that many veRL workers on each train pod but it requests "
            "cluster.resources.train.gpu 1: set cluster.resources.train.gpu to 8",
        ),
        (
            {"trainer": {"backend": "verl", "nnodes": 2}},
            "trainer.nnodes 2 trains across nodes, whose workers must see one folder: set cluster.train_shared_claim",
        ),
    ],
)
def test_a_pod_that_cannot_hold_its_engine_or_trainer_is_refused_with_the_setting_to_change(sections: dict, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        _config(**sections)
    assert message in str(caught.value)


def test_pods_that_fit_load() -> None:
    _config(engine={"kind": "vllm", "vllm": {"tensor_parallel_size": 4}}, cluster=_resources("serve", 4))
    _config(trainer={"backend": "verl", "n_gpus_per_node": 8}, cluster=_resources("train", 8))
    # veRL's workers on the CPU take no GPU, and the dev engine none either: no pod's GPUs to match.
    _config(trainer={"backend": "verl", "device": "cpu", "n_gpus_per_node": 2}, engine={"kind": "dev"})
