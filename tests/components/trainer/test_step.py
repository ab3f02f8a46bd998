"""The train step against a real (local) store: batch, checkpoint k+1 committed last, metrics."""

from __future__ import annotations

import json

import pytest

from components.core.checkpoints import commit_checkpoint
from components.core.config import ExperimentConfig
from components.core.storage import LocalStore, RunLayout
from components.trainer.cpu_update import UpdateError
from components.trainer.step import policy_lag, train_iteration


class _RecordingStore(LocalStore):
    """A local store that remembers the order of its writes."""

    def __init__(self, root):
        super().__init__(root)
        self.writes: list[str] = []

    def put_bytes(self, key, data):
        self.writes.append(key)
        super().put_bytes(key, data)


@pytest.fixture
def run(tmp_path, tiny_model_dir, two_turn_group):
    config = ExperimentConfig(
        name="unit",
        tasks={"source": str(tmp_path / "tasks")},
        model={"path": str(tiny_model_dir)},
        storage={"uri": f"file://{tmp_path / 'store'}"},
        algorithm={"learning_rate": 1e-3},
    )
    store = _RecordingStore(tmp_path / "store")
    layout = RunLayout(config.name)
    calls, records = two_turn_group
    for rollout_id, session in calls.items():
        store.put_bytes(layout.trajectory(0, rollout_id), "".join(c.model_dump_json() + "\n" for c in session).encode())
    rewards = {"records": [r.model_dump(mode="json") for r in records], "metrics": {}}
    store.put_bytes(layout.rewards(0), json.dumps(rewards).encode())
    store.put_bytes(layout.metrics(0), b'{"reward/mean": 0.5}')
    commit_checkpoint(store, layout, 0, tiny_model_dir)  # what the serve step does first
    store.writes.clear()
    return config, store, layout


def _copy_iteration(store, layout, calls, source, target):
    keys = {layout.rewards(source): layout.rewards(target)}
    keys |= {layout.trajectory(source, r): layout.trajectory(target, r) for r in calls}
    for key, copy in keys.items():
        store.put_bytes(copy, store.get_bytes(key))


def test_train_writes_batch_metrics_and_commits_checkpoint_last(run):
    config, store, layout = run

    metrics = train_iteration(config, 0, store)

    assert store.writes[-1] == layout.checkpoint_marker(1)
    assert layout.batch(0) in store.writes
    info = json.loads(store.get_bytes(f"{layout.checkpoint(1)}/openforge_checkpoint.json"))
    assert info["policy_version"] == "1" and info["parent_version"] == "0"
    assert store.get_bytes(f"{layout.checkpoint(1)}/tokenizer.json") == b'{"stand-in": true}\n'
    assert store.exists(f"{layout.checkpoint(1)}/model.safetensors")
    written = json.loads(store.get_bytes(layout.metrics(0)))
    assert written["reward/mean"] == 0.5  # the score step's keys survive
    assert written["batch/rows"] == 2 and written["batch/merge_continuations"] == 1
    assert written["batch/trained_tokens"] == 7 and written["batch/empty_update"] == 0  # 2 + 3 + 2 sampled
    assert {"train/loss", "train/kl", "train/grad_norm"} <= set(written)
    assert metrics["train/loss"] == written["train/loss"]


def test_rerun_after_commit_recomputes_nothing(run):
    config, store, layout = run
    first = train_iteration(config, 0, store)
    store.writes.clear()

    again = train_iteration(config, 0, store)

    assert store.writes == []
    assert again == first


def test_too_few_usable_rollouts_stop_the_step_with_the_reason(run):
    config, store, layout = run
    rewards = json.loads(store.get_bytes(layout.rewards(0)))
    for record in rewards["records"]:
        record["usable"] = False
    store.put_bytes(layout.rewards(0), json.dumps(rewards).encode())

    with pytest.raises(UpdateError, match="min_usable_fraction") as caught:
        train_iteration(config, 0, store)
    assert not store.exists(layout.checkpoint_marker(1))
    message = str(caught.value)
    assert "only 0 of 2 rollouts (0%) are usable, below rollout.min_usable_fraction 0.5" in message
    assert "ok x2" in message and "Fix:" in message  # no reason codes: the statuses summarise


def test_usable_share_stop_names_the_reasons_and_their_fixes(run):
    config, store, layout = run
    rewards = json.loads(store.get_bytes(layout.rewards(0)))
    for record in rewards["records"]:
        record["usable"] = False
    rewards["unusable_reasons"] = {"infra_error": 1, "group_no_baseline": 1}
    store.put_bytes(layout.rewards(0), json.dumps(rewards).encode())

    with pytest.raises(UpdateError) as caught:
        train_iteration(config, 0, store)

    message = str(caught.value)
    assert "infra_error x1" in message and "group_no_baseline x1" in message
    assert "rollout.infra_retries" in message and "lower rollout.min_usable_fraction" in message


def test_next_iteration_trains_from_the_checkpoint_the_previous_one_committed(run, two_turn_group):
    config, store, layout = run
    train_iteration(config, 0, store)
    _copy_iteration(store, layout, two_turn_group[0], 0, 1)

    train_iteration(config, 1, store)

    info = json.loads(store.get_bytes(f"{layout.checkpoint(2)}/openforge_checkpoint.json"))
    assert (info["policy_version"], info["parent_version"]) == ("2", "1")
    assert store.get_bytes(f"{layout.checkpoint(2)}/model.safetensors") != store.get_bytes(
        f"{layout.checkpoint(1)}/model.safetensors"
    )


def test_train_command_trains_from_the_config_in_the_environment(run, tmp_path):
    import typer
    import yaml
    from typer.testing import CliRunner

    from pipelines.steps.cli import step_app

    config, store, layout = run
    app = typer.Typer()
    app.add_typer(step_app, name="step")

    result = CliRunner().invoke(
        app,
        ["step", "train", "--iteration", "0"],
        env={"OPENFORGE_CONFIG_YAML": yaml.safe_dump(config.model_dump(mode="json"))},
    )

    assert result.exit_code == 0, result.output
    assert "train/loss=" in result.output
    assert store.exists(layout.checkpoint_marker(1))


def _equal_rewards(store, layout, reasons=None):
    rewards = json.loads(store.get_bytes(layout.rewards(0)))
    for record in rewards["records"]:
        record["reward"] = 1.0
    if reasons:
        rewards["unusable_reasons"] = reasons
    store.put_bytes(layout.rewards(0), json.dumps(rewards).encode())


def test_iteration_without_signal_stops_with_the_counts_and_the_fix(run):
    config, store, layout = run
    _equal_rewards(store, layout, reasons={"infra_error": 1})

    with pytest.raises(UpdateError) as caught:
        train_iteration(config, 0, store)

    message = str(caught.value)
    assert "iteration 0: the batch has no sampled token to train on" in message
    assert "1 group(s) skipped because every reward was equal (batch/skipped_groups)" in message
    assert "unusable rollouts: infra_error x1" in message and "rollout.infra_retries" in message
    assert "rollout.samples_per_task" in message and "algorithm.allow_empty_update: true" in message
    assert not store.exists(layout.checkpoint_marker(1))


def test_rows_all_too_long_name_the_limit_to_raise(run):
    config, store, layout = run
    config = config.model_copy(update={"algorithm": config.algorithm.model_copy(update={"max_prompt_tokens": 1})})

    with pytest.raises(UpdateError) as caught:
        train_iteration(config, 0, store)

    message = str(caught.value)
    assert "3 call(s) dropped as too long (prompt_too_long x3; batch/dropped_rows)" in message
    assert "raise algorithm.max_prompt_tokens, or unset it to follow engine.max_model_len" in message


def test_train_command_reports_a_stop_as_an_error_without_a_traceback(run):
    import yaml
    from typer.testing import CliRunner

    from pipelines.steps.cli import step_app

    config, store, layout = run
    _equal_rewards(store, layout)

    result = CliRunner().invoke(
        step_app, ["train", "--iteration", "0"], env={"OPENFORGE_CONFIG_YAML": yaml.safe_dump(config.model_dump(mode="json"))}
    )

    assert result.exit_code == 1 and "error: iteration 0: the batch has no sampled token" in result.output
    assert "Traceback" not in result.output


def test_allowed_empty_update_commits_the_unchanged_model_and_says_so(run, tiny_model_dir, capsys):
    config, store, layout = run
    config = config.model_copy(update={"algorithm": config.algorithm.model_copy(update={"allow_empty_update": True})})
    _equal_rewards(store, layout)

    metrics = train_iteration(config, 0, store)

    assert metrics["batch/rows"] == 0 and metrics["batch/skipped_groups"] == 1
    assert metrics["batch/trained_tokens"] == 0 and metrics["batch/empty_update"] == 1
    assert not any(name.startswith("train/") for name in metrics)
    assert store.get_bytes(f"{layout.checkpoint(1)}/model.safetensors") == (tiny_model_dir / "model.safetensors").read_bytes()
    assert store.exists(layout.checkpoint_marker(1))
    assert "iteration 0 trained nothing" in capsys.readouterr().err


def test_adamw_state_is_saved_with_the_checkpoint_and_resumed_by_the_next_update(run, two_turn_group, monkeypatch, tmp_path):
    import torch

    import components.trainer.step as step

    config, store, layout = run
    seen = []  # the optimizer state each update starts from

    def recording_update(model, data, algorithm, seed, optimizer):
        seen.append({i: {k: v.clone() for k, v in s.items()} for i, s in optimizer.state_dict()["state"].items()})
        return real_update(model, data, algorithm, seed=seed, optimizer=optimizer)

    real_update = step.cpu_update
    monkeypatch.setattr(step, "cpu_update", recording_update)
    train_iteration(config, 0, store)
    (tmp_path / "optimizer.pt").write_bytes(store.get_bytes(f"{layout.checkpoint(1)}/optimizer.pt"))
    saved = torch.load(tmp_path / "optimizer.pt", weights_only=True)
    _copy_iteration(store, layout, two_turn_group[0], 0, 1)

    train_iteration(config, 1, store)

    assert seen[0] == {}  # checkpoint 0 has no optimizer.pt: a fresh AdamW
    assert saved["state"] and set(seen[1]) == set(saved["state"])
    for index, moments in saved["state"].items():
        assert torch.equal(seen[1][index]["exp_avg"], moments["exp_avg"])
        assert torch.equal(seen[1][index]["exp_avg_sq"], moments["exp_avg_sq"])
        assert int(seen[1][index]["step"]) == 1
    assert store.exists(f"{layout.checkpoint(2)}/optimizer.pt")


def test_a_resumed_optimizer_takes_its_hyperparameters_from_the_config(tiny_model_dir):
    import torch
    from transformers import AutoModelForCausalLM

    from components.core.config import AlgorithmConfig
    from components.trainer.cpu_update import UpdateError as Refused, build_optimizer

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    first = build_optimizer(model, AlgorithmConfig(learning_rate=1e-3))
    model(input_ids=torch.tensor([[1, 2, 3]]), labels=torch.tensor([[1, 2, 3]])).loss.backward()
    first.step()

    resumed = build_optimizer(model, AlgorithmConfig(learning_rate=5e-4), first.state_dict())

    assert resumed.param_groups[0]["lr"] == 5e-4 and len(resumed.state) == len(first.state)
    other = torch.nn.Linear(3, 2)
    with pytest.raises(Refused, match="delete optimizer.pt"):
        build_optimizer(other, AlgorithmConfig(), first.state_dict())


def test_policy_lag_says_how_far_behind_the_trained_checkpoint_each_call_was_sampled(call):
    calls = {
        "a-s0": [call(0, [1, 2], [3], policy_version="2"), call(1, [1, 2, 3], [4], policy_version="3")],
        # vLLM reports the path it loaded; its last part is the version. No version: left out.
        "a-s1": [call(0, [1], [2], session="a-s1", policy_version="/tmp/served/2"), call(1, [1], [2], session="a-s1")],
    }
    assert policy_lag(calls, trained_from=3) == {"batch/policy_lag_mean": 2 / 3, "batch/policy_lag_max": 1.0}
    assert policy_lag({"b-s0": [call(0, [1], [2])]}, trained_from=3) == {}


def test_a_batch_sampled_one_version_back_trains_and_reports_its_lag(run, two_turn_group):
    config, store, layout = run
    train_iteration(config, 0, store)
    calls, _ = two_turn_group
    # Iteration 1 of an overlapped run: its calls were sampled from checkpoint 0, it trains checkpoint 1.
    _copy_iteration(store, layout, calls, 0, 1)
    for rollout_id, session in calls.items():
        sampled = "".join(c.model_copy(update={"policy_version": "0"}).model_dump_json() + "\n" for c in session)
        store.put_bytes(layout.trajectory(1, rollout_id), sampled.encode())
    metrics = train_iteration(config, 1, store)
    assert metrics["batch/policy_lag_mean"] == 1.0 and metrics["batch/trained_tokens"] > 0
    assert json.loads(store.get_bytes(f"{layout.checkpoint(2)}/openforge_checkpoint.json"))["parent_version"] == "1"
