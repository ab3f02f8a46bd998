"""veRL's worker placement checked before Ray is asked, and a deadline on what cannot be checked."""

from __future__ import annotations

import time

import pytest

from components.core.trainer_config import TrainerConfig
from components.trainer.ray_placement import (
    CPU_WORKER_ENV,
    RayPlacementError,
    placement_shortfall,
    ray_init_options,
    within_deadline,
)

VERL_ENV = {"env_vars": {"TOKENIZERS_PARALLELISM": "true"}}


def test_a_node_with_three_cpus_per_gpu_worker_places_them() -> None:
    assert placement_shortfall([{"GPU": 8, "CPU": 24}], gpus_per_node=8, nnodes=1) is None
    assert placement_shortfall([{"GPU": 2, "CPU": 6}, {"GPU": 2, "CPU": 8}], gpus_per_node=2, nnodes=2) is None


def test_too_few_cpus_per_worker_is_named_with_the_numbers_and_the_fix() -> None:
    problem = placement_shortfall([{"GPU": 8.0, "CPU": 16.0}], gpus_per_node=8, nnodes=1)

    assert problem is not None
    assert "1 node(s) with 8 GPU and 24 logical CPU (3 per worker)" in problem
    assert "available: 8 GPU, 16 CPU" in problem
    assert "trainer.n_gpus_per_node" in problem and "ray start --num-cpus 24 --num-gpus 8" in problem


def test_no_gpu_or_too_few_nodes_is_refused() -> None:
    assert "Ray has 0 such node(s)" in placement_shortfall([{"CPU": 2.0}], gpus_per_node=1, nnodes=1)
    assert "Ray has 1 such node(s)" in placement_shortfall([{"GPU": 1, "CPU": 4}], gpus_per_node=1, nnodes=2)


def test_on_gpus_ray_counts_the_node_itself() -> None:
    assert ray_init_options(TrainerConfig(backend="verl", n_gpus_per_node=8), VERL_ENV) == {"runtime_env": VERL_ENV}


def test_on_cpu_ray_advertises_a_logical_gpu_and_three_cpus_per_worker_and_every_worker_gets_the_platform() -> None:
    options = ray_init_options(TrainerConfig(backend="verl", device="cpu", n_gpus_per_node=2), VERL_ENV)

    assert (options["num_gpus"], options["num_cpus"]) == (2, 6)
    assert options["address"] == "local"  # never another run's Ray that happens to be up on this machine
    assert options["runtime_env"]["env_vars"] == {"TOKENIZERS_PARALLELISM": "true", **CPU_WORKER_ENV}
    assert CPU_WORKER_ENV["VERL_PLATFORM"] == "cpu" and CPU_WORKER_ENV["VERL_ENGINE_DEVICE"] == "cuda"
    assert VERL_ENV == {"env_vars": {"TOKENIZERS_PARALLELISM": "true"}}  # veRL's runtime_env is not changed
    # What Ray is started with is what the placement check then finds.
    assert placement_shortfall([{"GPU": options["num_gpus"], "CPU": options["num_cpus"]}], 2, 1) is None


def test_within_deadline_returns_the_result_and_raises_the_works_error() -> None:
    assert within_deadline(lambda: 7, 5, "adding") == 7
    with pytest.raises(ZeroDivisionError):
        within_deadline(lambda: 1 / 0, 5, "dividing")


def test_a_wait_past_its_deadline_fails_naming_it() -> None:
    started = time.monotonic()
    with pytest.raises(RayPlacementError, match=r"starting veRL's workers did not finish within 0.2 s.*ray status"):
        within_deadline(lambda: time.sleep(30), 0.2, "starting veRL's workers")
    assert time.monotonic() - started < 5


def test_a_train_step_on_a_machine_without_room_for_verls_workers_fails_within_seconds(tmp_path, two_turn_group) -> None:
    """The real thing: veRL's update on this machine's own Ray (no GPU, few CPUs) stops at once, not hangs."""
    import ray
    import torch

    from components.core.config import ExperimentConfig
    from components.engine.tiny_model import init_tiny_model
    from components.trainer.batch import build_batch
    from components.trainer.verl_step import verl_update

    if torch.cuda.is_available():
        pytest.skip("a GPU machine can place the worker: the GPU test covers the update there")
    config = ExperimentConfig(name="unit", tasks={"source": "t"}, trainer={"backend": "verl"})
    calls, records = two_turn_group
    data, _ = build_batch(calls, records, config.algorithm)
    policy = init_tiny_model(tmp_path / "v0", seed=2)
    ray.init(address="local", num_cpus=2, num_gpus=0, include_dashboard=False)  # what this 2-core machine offers
    try:
        started = time.monotonic()
        with pytest.raises(RayPlacementError) as refused:
            verl_update(config, data, policy, tmp_path, {"policy_version": "1"})
        assert time.monotonic() - started < 60
    finally:
        ray.shutdown()
    assert "1 node(s) with 1 GPU and 3 logical CPU" in str(refused.value)
    assert "available: 0 GPU, 2 CPU" in str(refused.value)
