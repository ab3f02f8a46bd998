"""The `trainer` and `engine.vllm` config sections: defaults, and the mistakes they refuse."""

from __future__ import annotations

import pytest

from components.core.config import ConfigError, config_from_text

BASE = "name: demo\ntasks: {source: examples/tasks/quickstart}\n"


def test_defaults_keep_the_embedded_cpu_path():
    config = config_from_text(BASE)

    assert config.trainer.backend == "cpu" and not config.trainer.lora.enabled
    assert config.engine.vllm.served_model_name == "policy"
    assert config.trainer.overrides == []


def test_malformed_override_names_the_hydra_syntax():
    with pytest.raises(ConfigError, match="not Hydra syntax"):
        config_from_text(BASE + "trainer: {overrides: ['actor_rollout_ref.actor clip 0.2']}\n")


def test_hydra_add_and_delete_overrides_are_accepted():
    config = config_from_text(BASE + "trainer: {overrides: ['+trainer.foo=1', '~trainer.bar', 'a.b=[1,2]']}\n")

    assert config.trainer.overrides == ["+trainer.foo=1", "~trainer.bar", "a.b=[1,2]"]


def test_verls_workers_run_on_gpus_unless_the_config_says_cpu():
    assert config_from_text(BASE).trainer.device == "cuda"
    assert config_from_text(BASE + "trainer: {backend: verl, device: cpu}\n").trainer.device == "cpu"


def test_the_cpu_device_without_verls_backend_is_refused_with_the_fix():
    with pytest.raises(ConfigError, match="trainer.device 'cpu' places veRL's workers and needs trainer.backend 'verl'"):
        config_from_text(BASE + "trainer: {device: cpu}\n")
    with pytest.raises(ConfigError, match="device"):
        config_from_text(BASE + "trainer: {backend: verl, device: tpu}\n")


def test_lora_on_the_cpu_backend_is_refused():
    with pytest.raises(ConfigError, match="backend 'verl'"):
        config_from_text(BASE + "trainer: {lora: {rank: 8}}\n")


def test_lora_served_by_the_dev_engine_is_refused():
    with pytest.raises(ConfigError, match="engine.kind 'vllm'"):
        config_from_text(BASE + "trainer: {backend: verl, lora: {rank: 8}}\n")


def test_lora_rank_above_the_engines_limit_names_both():
    text = BASE + "engine: {kind: vllm, vllm: {max_lora_rank: 16}}\ntrainer: {backend: verl, lora: {rank: 32}}\n"

    with pytest.raises(ConfigError, match="rank 32 exceeds engine.vllm.max_lora_rank 16"):
        config_from_text(text)
