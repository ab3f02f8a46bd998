"""Where the config's engine and trainer settings must agree with the pods it asks for.

The engine and the trainer say how many GPUs they span; ``cluster.resources`` says how
many each pod requests. Apart, they could disagree silently: a vLLM server with tensor
parallelism 4 in a pod of one GPU, or veRL's 8 workers per node in a pod of one, fails
on the cluster after the rollouts, or waits forever. ExperimentConfig refuses them at
load time, with the setting to change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from components.core.config import ExperimentConfig


def cluster_fit_problem(config: "ExperimentConfig") -> str | None:
    """Why the config's pods cannot hold its engine or trainer; None when they can."""
    resources, trainer = config.cluster.resources, config.trainer
    if config.engine.kind == "vllm" and resources.serve.gpu != config.engine.vllm.tensor_parallel_size:
        tp = config.engine.vllm.tensor_parallel_size
        return (
            f"engine.vllm.tensor_parallel_size {tp} spans {tp} GPU(s) but the serve pod requests "
            f"cluster.resources.serve.gpu {resources.serve.gpu}: set cluster.resources.serve.gpu to {tp}"
        )
    if trainer.backend == "verl" and trainer.device == "cuda" and resources.train.gpu != trainer.n_gpus_per_node:
        return (
            f"trainer.n_gpus_per_node {trainer.n_gpus_per_node} places that many veRL workers on each train pod but "
            f"it requests cluster.resources.train.gpu {resources.train.gpu}: set cluster.resources.train.gpu to "
            f"{trainer.n_gpus_per_node}"
        )
    if trainer.nnodes > 1 and config.cluster.train_shared_claim is None:
        # Every node's workers read the checkpoint and write their shards at the driver's paths.
        return (
            f"trainer.nnodes {trainer.nnodes} trains across nodes, whose workers must see one folder: "
            "set cluster.train_shared_claim to a ReadWriteMany PersistentVolumeClaim (docs/trainer.md, "
            "'Training across nodes')"
        )
    return None
