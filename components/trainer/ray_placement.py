"""What veRL's worker placement asks of Ray, checked before it asks, and a deadline on the wait.

veRL places each actor worker in a placement-group bundle of ``{"CPU": 3, "GPU": 1}``
(``ResourcePoolManager.max_colocate_count`` is 3: actor, rollout and reward model may share
a GPU), all bundles of a node on one node. It checks the GPUs but not the CPUs, and then
waits on the placement group without a timeout: a node with fewer than three logical CPUs
per GPU worker, or a cluster whose resources other jobs hold, makes the train step hang
without a word. This module says so at once, with the numbers and the fix, and bounds the
wait for what it cannot check (resources taken between the check and the placement).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from components.core.trainer_config import TrainerConfig
from components.trainer.cpu_update import UpdateError

# veRL 0.9's ResourcePoolManager default; each worker's bundle asks this many logical CPUs.
CPUS_PER_WORKER = 3
# Starting the workers loads the model and builds FSDP: minutes on a large model, never hours.
WORKERS_DEADLINE_S = 900.0
# trainer.device cpu: the platform veRL's workers select, and the module that registers it.
CPU_PLATFORM = "cpu"
CPU_PLATFORM_MODULE = "components.trainer.verl_cpu_platform"
CPU_WORKER_ENV = {
    "VERL_USE_EXTERNAL_MODULES": CPU_PLATFORM_MODULE,  # veRL imports it in every process
    "VERL_PLATFORM": CPU_PLATFORM,
    # veRL's FSDP engine registers for cuda and npu only; on the cpu platform it runs as is.
    "VERL_ENGINE_DEVICE": "cuda",
}

T = TypeVar("T")


class RayPlacementError(UpdateError):
    """Ray cannot place veRL's workers as configured; the message gives the numbers and the fix."""


def placement_shortfall(nodes: Sequence[Mapping[str, float]], gpus_per_node: int, nnodes: int, gpu: str = "GPU") -> str | None:
    """Why ``nnodes`` nodes of ``gpus_per_node`` workers cannot be placed on ``nodes`` (each
    node's available Ray resources), or None when they can."""
    need_cpu = CPUS_PER_WORKER * gpus_per_node
    fitting = [n for n in nodes if n.get(gpu, 0) >= gpus_per_node and n.get("CPU", 0) >= need_cpu]
    if len(fitting) >= nnodes:
        return None
    have = "; ".join(f"{n.get(gpu, 0):g} {gpu}, {n.get('CPU', 0):g} CPU" for n in nodes) or "no node"
    return (
        f"veRL's placement needs {nnodes} node(s) with {gpus_per_node} {gpu} and {need_cpu} logical CPU "
        f"({CPUS_PER_WORKER} per worker) free each, but Ray has {len(fitting)} such node(s) (available: {have}); "
        f"lower trainer.n_gpus_per_node or trainer.nnodes, or start Ray with more resources "
        f"(ray start --num-cpus {need_cpu} --num-gpus {gpus_per_node} on each node)"
    )


def ray_init_options(trainer: TrainerConfig, runtime_env: Mapping[str, Any]) -> dict[str, Any]:
    """``ray.init`` arguments for the train step's own Ray start (veRL's ``runtime_env`` as given).

    On GPUs Ray counts the node's devices and CPUs itself. On ``trainer.device: cpu`` it
    must advertise one logical GPU per worker (veRL's bundles ask for one) and
    ``CPUS_PER_WORKER`` logical CPUs each, whatever the machine has (the work is not
    split by logical CPUs; a 2-core machine runs two workers), and every worker gets the
    CPU platform's variables. It is always a new instance (``address="local"``): a bare
    ``ray.init()`` joins any Ray already running on the machine, another run's included.
    """
    if trainer.device == "cuda":
        return {"runtime_env": dict(runtime_env)}
    env_vars = {**runtime_env.get("env_vars", {}), **CPU_WORKER_ENV}
    world = trainer.world_size
    return {
        "address": "local",
        "num_gpus": world,
        "num_cpus": CPUS_PER_WORKER * world,
        "runtime_env": {**runtime_env, "env_vars": env_vars},
    }


def check_placement(gpus_per_node: int, nnodes: int) -> None:
    """Refuse at once when the running Ray cluster cannot place the workers."""
    import ray

    nodes = [node["Resources"] for node in ray.nodes() if node.get("Alive")]
    available = ray.available_resources()
    if len(nodes) == 1:  # one node: what is free now, not what it has in all
        nodes = [available]
    problem = placement_shortfall(nodes, gpus_per_node, nnodes)
    if problem:
        raise RayPlacementError(problem)


def within_deadline(work: Callable[[], T], seconds: float, what: str) -> T:
    """``work()``'s result, or a RayPlacementError naming ``what`` once ``seconds`` have passed.

    The work runs on a daemon thread: on a timeout the step fails and the process exits,
    taking the abandoned wait with it.
    """
    result: dict[str, object] = {}

    def run() -> None:
        try:
            result["value"] = work()
        except BaseException as exc:  # re-raised in the caller's thread
            result["error"] = exc

    thread = threading.Thread(target=run, name=what, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise RayPlacementError(
            f"{what} did not finish within {seconds:g} s: Ray is most likely waiting for resources "
            "another job holds (`ray status` shows the pending placement groups); free them or give Ray more"
        )
    if "error" in result:
        raise result["error"]  # type: ignore[misc]
    return result["value"]  # type: ignore[return-value]
