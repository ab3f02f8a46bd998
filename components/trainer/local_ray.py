"""The Ray the train step's veRL workers run on, for the length of one update.

- Ray already initialised in this process (a test, a notebook): used as it is.
- ``trainer.device: cuda``: ``ray.init`` joins the cluster it finds (a RayJob's head sets
  ``RAY_ADDRESS``), else starts one node with this machine's GPUs.
- ``trainer.device: cpu``, one node: a fresh local Ray whose logical GPUs are the workers
  (``ray_init_options``).
- ``trainer.device: cpu`` with ``trainer.nnodes`` above 1: that many Ray nodes on this
  machine, each its own raylet and worker processes with ``n_gpus_per_node`` logical GPUs
  (Ray's ``cluster_utils.Cluster``, its documented mini-cluster), so veRL places its
  workers across nodes as on a RayJob's pods, and the same placement check counts them.
  The nodes share this machine's cores: this shows the multi-node path works, not speed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from components.core.trainer_config import TrainerConfig
from components.trainer.ray_placement import CPU_WORKER_ENV, CPUS_PER_WORKER, RayPlacementError, ray_init_options

# A worker node's raylet registers within seconds when idle; a loaded 2-core machine took ~30 s.
NODES_DEADLINE_S = 180.0


def runs_local_nodes(trainer: TrainerConfig) -> bool:
    """Whether the update starts ``trainer.nnodes`` Ray nodes on this machine itself."""
    return trainer.device == "cpu" and trainer.nnodes > 1


@contextmanager
def ray_for_update(trainer: TrainerConfig, runtime_env: Mapping[str, Any]) -> Iterator[None]:
    """Ray, initialised for veRL's workers as ``trainer`` says, shut down after (if started here)."""
    import ray

    if ray.is_initialized():
        yield
        return
    if not runs_local_nodes(trainer):
        _init_once_more_if_it_fails(ray_init_options(trainer, runtime_env))
        try:
            yield
        finally:
            ray.shutdown()
        return
    with _local_nodes(trainer) as address:
        env_vars = {**runtime_env.get("env_vars", {}), **CPU_WORKER_ENV}
        ray.init(address=address, runtime_env={**runtime_env, "env_vars": env_vars})
        try:
            _wait_for_nodes(trainer.nnodes)
            yield
        finally:
            ray.shutdown()


def _init_once_more_if_it_fails(options: Mapping[str, Any]) -> None:
    """``ray.init(**options)``, once more on a fresh Ray if the first start fails: on a loaded
    machine Ray's own start can time out ("The current node timed out during startup", seen
    in a CI run's train step), and a second start comes up. A lasting problem fails twice."""
    import ray

    try:
        ray.init(**options)
    except Exception as first:  # noqa: BLE001 - Ray raises a bare Exception for a node that never came up
        print(f"openforge: Ray did not start ({first}); starting a fresh one once more", flush=True)
        ray.shutdown()
        ray.init(**options)


@contextmanager
def _local_nodes(trainer: TrainerConfig) -> Iterator[str]:
    """``trainer.nnodes`` Ray nodes on this machine (a head and workers); yields the head's address."""
    from ray.cluster_utils import Cluster

    node = {"num_cpus": CPUS_PER_WORKER * trainer.n_gpus_per_node, "num_gpus": trainer.n_gpus_per_node}
    cluster = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False}, shutdown_at_exit=False)
    try:
        for _ in range(trainer.nnodes - 1):
            cluster.add_node(wait=False, **node)
        yield cluster.address
    finally:
        cluster.shutdown()


def _wait_for_nodes(count: int) -> None:
    import ray

    end = time.monotonic() + NODES_DEADLINE_S
    while (alive := sum(1 for node in ray.nodes() if node.get("Alive"))) < count:
        if time.monotonic() > end:
            raise RayPlacementError(
                f"{alive} of the {count} local Ray nodes (trainer.nnodes) registered within {NODES_DEADLINE_S:g} s; "
                "the machine is likely overloaded: retry, or set trainer.nnodes: 1 and n_gpus_per_node to the workers"
            )
        time.sleep(0.5)
