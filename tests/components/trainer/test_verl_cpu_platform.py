"""The CPU platform module as veRL finds it: by the name the train step puts in the workers' environment."""

from __future__ import annotations

import importlib

from components.trainer.ray_placement import CPU_PLATFORM, CPU_WORKER_ENV


def test_the_module_named_in_the_workers_environment_registers_the_platform_veRL_selects():
    from verl.plugin.platform import PlatformRegistry

    module = importlib.import_module(CPU_WORKER_ENV["VERL_USE_EXTERNAL_MODULES"])
    platform = PlatformRegistry.get(CPU_WORKER_ENV["VERL_PLATFORM"])()

    assert isinstance(platform, module.CpuPlatform) and CPU_WORKER_ENV["VERL_PLATFORM"] == CPU_PLATFORM
    assert (platform.device_name, platform.current_device(), platform.communication_backend_name()) == ("cpu", "cpu", "gloo")
    assert platform.ray_resource_name() == "GPU"  # what Ray advertises as logical GPUs


def test_the_device_module_answers_veRLs_cuda_calls_on_cpu():
    from verl.utils.flops_counter import get_device_flops

    from components.trainer.verl_cpu_platform import CpuPlatform

    device = CpuPlatform().device_module
    device.empty_cache()
    device.synchronize()  # torch.cpu's own

    assert (device.memory_allocated(), device.max_memory_reserved(), device.mem_get_info()) == (0, 0, (0, 0))
    assert device.get_device_name() == "CPU"
    assert get_device_flops(device_name=device.get_device_name()) != float("inf")  # veRL's table has a CPU entry


def test_the_process_group_wrapper_is_installed_only_where_the_cpu_platform_is_selected():
    import verl.utils.distributed as distributed

    import components.trainer.verl_cpu_platform  # noqa: F401  (this process runs no cpu platform)

    assert not getattr(distributed.initialize_global_process_group_ray, "_openforge_gloo", False)
