"""veRL's own workers on CPU: a ``cpu`` platform for veRL's platform registry.

veRL 0.9 asks a platform object (``verl.plugin.platform``) for everything device-specific:
the torch device, the collective backend, the Ray resource its workers ask for, memory and
RNG calls. It ships CUDA, NPU and ROCm platforms only. veRL imports each module named in
``VERL_USE_EXTERNAL_MODULES`` whenever ``verl`` is imported, in the driver and in every Ray
worker, and ``VERL_PLATFORM`` then picks a registered platform by name: this module is
that external module (``trainer.device: cpu`` sets both variables in Ray's runtime_env,
``components/trainer/ray_placement.py``). Nothing in veRL's files is edited.

Importing it registers ``CpuPlatform`` under ``CPU_PLATFORM`` and, when ``VERL_PLATFORM``
selects it, makes veRL's worker process group gloo-only (``_gloo_process_group``). It imports veRL, so only
processes that import veRL should import it.
"""

from __future__ import annotations

import os
import types
from contextlib import contextmanager
from typing import Any, Optional

import torch
from verl.plugin.platform import PlatformBase, PlatformRegistry

from components.trainer.ray_placement import CPU_PLATFORM


def _no_op(*_args: Any, **_kwargs: Any) -> None:
    return None


def _zero(*_args: Any, **_kwargs: Any) -> int:
    return 0


class _CpuDeviceModule(types.ModuleType):
    """``torch.cpu`` plus the ``torch.cuda`` calls veRL makes on its device module.

    veRL calls ``empty_cache``, ``memory_allocated``, ``mem_get_info`` ... on whatever
    ``get_torch_device()`` returns; ``torch.cpu`` has none of them. Memory figures are 0:
    there is no device memory, and veRL reports them as ``perf/*_memory_*`` metrics only.
    """

    def __init__(self) -> None:
        super().__init__("openforge_cpu_device")
        for name in ("empty_cache", "ipc_collect", "reset_peak_memory_stats", "set_per_process_memory_fraction"):
            setattr(self, name, _no_op)
        for name in ("memory_allocated", "memory_reserved", "max_memory_allocated", "max_memory_reserved"):
            setattr(self, name, _zero)
        # Seeds and RNG state: the CPU generator is the device's generator.
        self.manual_seed = self.manual_seed_all = torch.manual_seed
        self.get_rng_state, self.set_rng_state = torch.get_rng_state, torch.set_rng_state

    def __getattr__(self, name: str) -> Any:
        return getattr(torch.cpu, name)  # synchronize, Stream, Event, current_stream, device_count ...

    @staticmethod
    def mem_get_info(*_args: Any) -> tuple[int, int]:
        return 0, 0

    @staticmethod
    def get_device_name(*_args: Any) -> str:
        # veRL's flops counter looks this name up in its table of peak flops; "CPU" is its
        # entry for CPUs (it would otherwise divide by infinity and report 0 MFU silently).
        return "CPU"


_DEVICE_MODULE = _CpuDeviceModule()


@PlatformRegistry.register(platform=CPU_PLATFORM)
class CpuPlatform(PlatformBase):
    """The process's CPU as veRL's one accelerator per worker."""

    @property
    def device_name(self) -> str:
        return "cpu"  # FSDP's device mesh, tensors' .to(device), the engine's device type

    @property
    def vendor_name(self) -> str:
        return "cpu"

    @property
    def device_module(self) -> types.ModuleType:
        return _DEVICE_MODULE

    def is_available(self) -> bool:
        return True

    def current_device(self) -> Any:
        # veRL passes this to torch.device(...) and .to(...): a CPU has no index, "cpu" is the device.
        return "cpu"

    def device_count(self) -> int:
        return 1

    def set_device(self, device_index: int) -> None:
        return None  # every worker owns "the" CPU; Ray gives each one logical GPU only to place it

    def synchronize(self, device_index: Optional[int] = None) -> None:
        return None

    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        torch.manual_seed(seed)

    def set_allocator_settings(self, settings: str) -> None:
        return None  # expandable segments are a CUDA caching-allocator setting

    def empty_cache(self) -> None:
        return None

    def get_device_capability(self, device_index: int = 0) -> tuple[Optional[int], Optional[int]]:
        return None, None  # what veRL's CUDA platform says without a GPU: no arch-specific paths

    def communication_backend_name(self) -> str:
        return "gloo"  # NCCL needs GPUs; gloo runs FSDP's collectives on CPU tensors

    def visible_devices_envvar(self) -> str:
        return "CUDA_VISIBLE_DEVICES"  # Ray sets it per worker from its logical GPU; harmless on CPU

    @contextmanager
    def nvtx_range(self, msg: str):
        yield

    def profiler_start(self) -> None:
        return None

    def profiler_stop(self) -> None:
        return None

    def ray_resource_name(self) -> str:
        # veRL's placement asks each worker's bundle for one of these. Ray started with
        # num_gpus=world advertises that many logical GPUs, so the same placement code runs.
        return "GPU"

    def ray_noset_envvars(self) -> list[str]:
        return []

    def is_ipc_supported(self) -> bool:
        return False  # CUDA IPC hands weights to a colocated rollout; there is none here

    def cudart(self) -> Any:
        return None


def _gloo_process_group() -> None:
    """Make veRL's workers start their process group on gloo alone.

    ``initialize_global_process_group_ray`` builds ``"cpu:gloo,<device>:<backend>"``, which
    on this platform is ``"cpu:gloo,cpu:gloo"`` and torch refuses ("Duplicate device type
    cpu"). It takes a ``backend`` argument, so the worker module gets a wrapper passing
    ``backend="gloo"``. ``verl.workers.engine_workers`` binds the function by name at import,
    and this module runs when ``verl`` is imported, before any worker module.
    """
    import verl.utils.distributed as distributed

    if os.environ.get("VERL_PLATFORM") != CPU_PLATFORM:
        return  # imported in a process that runs another platform: leave NCCL alone
    original = distributed.initialize_global_process_group_ray
    if getattr(original, "_openforge_gloo", False):
        return

    def initialize_gloo(timeout_second: Any = None, backend: Any = None) -> None:
        original(timeout_second=timeout_second, backend=backend or "gloo")

    initialize_gloo._openforge_gloo = True  # type: ignore[attr-defined]
    distributed.initialize_global_process_group_ray = initialize_gloo


_gloo_process_group()
