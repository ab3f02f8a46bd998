"""The config's cluster section refuses what Kubernetes or Argo would refuse later, naming the fix."""

from __future__ import annotations

import pytest

from components.core.cluster_config import sibling_image
from components.core.config import ConfigError, config_from_text

BASE = "name: demo\ntasks: {source: examples/tasks/quickstart}\n"


def _cluster(text: str):
    return config_from_text(BASE + "cluster:\n" + "".join(f"  {line}\n" for line in text.splitlines())).cluster


def test_defaults_fit_one_gpu_node_and_a_cpu_pool() -> None:
    cluster = config_from_text(BASE).cluster
    assert cluster.resources.serve.gpu == 1 and cluster.resources.train.gpu == 1
    assert cluster.resources.rollout.gpu == 0 and cluster.resources.proxy.gpu == 0
    assert cluster.gpu_semaphore.config_map == "openforge-semaphores"
    assert cluster.cron.schedules == ["0 */4 * * *"]


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [
        ("resources: {train: {memory: 64GB}}", r"cluster\.resources\.train\.memory", "not a Kubernetes quantity"),
        ("resources: {rollout: {gpu: -1}}", r"cluster\.resources\.rollout\.gpu", "greater than or equal to 0"),
        ("namespace: Team_A", r"cluster\.namespace", "not a Kubernetes name"),
        ("service_account: ''", r"cluster\.service_account", "not a Kubernetes name"),
        ("image: 'openforge/runtime :1'", r"cluster\.image", "without spaces"),
        ("cron: {schedules: ['every hour']}", r"cluster\.cron\.schedules", "5 fields"),
        ("cron: {schedules: []}", r"cluster\.cron\.schedules", "at least 1"),
        ("gpu_nodes: {tolerations: [{key: gpu, operator: Exists, value: 'yes'}]}", r"cluster\.gpu_nodes\.tolerations\.0", "takes no value"),
        ("gpu_nodes: {tolerations: [{key: gpu, effect: NoSchedul}]}", r"cluster\.gpu_nodes\.tolerations\.0\.effect", "NoSchedule"),
        ("gpu_semaphore: {config_map: GPU, key: gpu}", r"cluster\.gpu_semaphore\.config_map", "not a Kubernetes name"),
        ("run_as_user: 0", r"cluster\.run_as_user", "greater than or equal to 1"),
        ("ttl_after_sucess_s: 10", r"cluster\.ttl_after_sucess_s", "unknown field"),
    ],
)
def test_bad_cluster_settings_are_named(text: str, field: str, words: str) -> None:
    with pytest.raises(ConfigError, match=field) as raised:
        _cluster(text)
    assert words in str(raised.value)


def test_cron_macros_and_ranges_are_accepted() -> None:
    cron = _cluster("cron: {schedules: ['@hourly', '*/15 9-17 * * MON-FRI', '@every 90m']}").cron
    assert len(cron.schedules) == 3


@pytest.mark.parametrize(
    ("image", "kwargs", "expected"),
    [
        ("openforge/runtime:0.1.0", {"suffix": "-codex"}, "openforge/runtime-codex:0.1.0"),
        ("openforge/runtime:0.1.0", {"name": "trainer"}, "openforge/trainer:0.1.0"),
        ("registry.local:5000/team/runtime:2", {"name": "trainer"}, "registry.local:5000/team/trainer:2"),
        ("registry.local:5000/runtime", {"suffix": "-openclaw"}, "registry.local:5000/runtime-openclaw"),
        ("runtime", {"name": "trainer"}, "trainer"),
    ],
)
def test_sibling_images_keep_registry_and_tag(image: str, kwargs: dict, expected: str) -> None:
    assert sibling_image(image, **kwargs) == expected


def test_step_images_follow_harness_and_trainer_backend_unless_set() -> None:
    config = config_from_text(BASE + "harness: {name: codex}\ntrainer: {backend: verl}\ncluster: {image: 'reg.local/of/runtime:3'}\n")
    assert config.cluster.harness_image(config.harness.name) == "reg.local/of/runtime-codex:3"
    assert config.cluster.train_image(config.trainer.backend) == "reg.local/of/trainer:3"
    reference = config_from_text(BASE)
    assert reference.cluster.harness_image("reference") == reference.cluster.image
    assert reference.cluster.train_image("cpu") == reference.cluster.image
    pinned = _cluster("image: r:1\nrollout_image: 'mine/harness@sha256:ab'\ntrainer_image: mine/train:9")
    assert pinned.harness_image("codex") == "mine/harness@sha256:ab"
    assert pinned.train_image("verl") == "mine/train:9"


def test_a_digest_pinned_image_needs_explicit_siblings() -> None:
    text = BASE + "harness: {name: codex}\ncluster: {image: 'of/runtime@sha256:0123'}\n"
    with pytest.raises(ConfigError, match="pinned by digest") as raised:
        config_from_text(text)
    assert "cluster.rollout_image" in str(raised.value)
