"""The train step's own Ray start: tried once more when Ray's start fails, as it can on a loaded machine."""

from __future__ import annotations

import pytest

from components.core.trainer_config import TrainerConfig
from components.trainer import local_ray

VERL_ENV = {"env_vars": {"TOKENIZERS_PARALLELISM": "true"}}


@pytest.fixture
def fake_ray(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """ray.init failing ``failures`` times before it starts; the calls made, in order."""
    import ray

    calls: list[str] = []
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "shutdown", lambda: calls.append("shutdown"))
    return calls


def _failing_init(calls: list[str], failures: int):
    def init(**options):
        calls.append(f"init {options['address']}")
        if calls.count(f"init {options['address']}") <= failures:
            raise Exception("The current node timed out during startup.")  # what Ray raises

    return init


def test_a_ray_that_fails_to_start_once_is_started_again(fake_ray, monkeypatch, capsys) -> None:
    import ray

    monkeypatch.setattr(ray, "init", _failing_init(fake_ray, failures=1))
    with local_ray.ray_for_update(TrainerConfig(backend="verl", device="cpu"), VERL_ENV):
        fake_ray.append("update")

    assert fake_ray == ["init local", "shutdown", "init local", "update", "shutdown"]
    assert "Ray did not start (The current node timed out during startup.)" in capsys.readouterr().out


def test_a_ray_that_fails_twice_fails_the_step(fake_ray, monkeypatch) -> None:
    import ray

    monkeypatch.setattr(ray, "init", _failing_init(fake_ray, failures=2))
    with pytest.raises(Exception, match="timed out during startup"):
        with local_ray.ray_for_update(TrainerConfig(backend="verl", device="cpu"), VERL_ENV):
            fake_ray.append("update")
    assert "update" not in fake_ray
