"""`openforge sft` on the quickstart's real recordings: the passed sessions in, a committed policy out."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from components.core.config import ExperimentConfig
from components.core.storage import RunLayout, open_store
from components.core.tracking import ExperimentTracker
from components.core.trajectory import read_session
from components.trainer.sft import SftError
from components.trainer.sft_step import recorded_sessions, sft_from_store, sft_policy_path


def _config(store_uri: str, tracking: str, **sft) -> ExperimentConfig:
    return ExperimentConfig.model_validate(
        {
            "name": "cold",
            "tasks": {"source": "unused"},
            "model": {"tiny_seed": 5},
            "storage": {"uri": store_uri},
            "tracking": {"uri": tracking},
            "sft": {"recordings": "quickstart", "max_epochs": 2, "learning_rate": 3e-3, **sft},
        }
    )


@pytest.fixture
def recordings(quickstart_store: tuple[str, Path], tmp_path: Path) -> str:
    """A private copy of the quickstart's store (other tests read the shared one)."""
    _, work = quickstart_store
    shutil.copytree(work / "store", tmp_path / "store")
    return f"file://{tmp_path / 'store'}"


def _log_p(model_dir: str | Path, prompt: list[int], completion: list[int]) -> float:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    with torch.no_grad():
        logprobs = torch.log_softmax(model(input_ids=torch.tensor([prompt + completion])).logits[0].float(), dim=-1)
    return sum(float(logprobs[len(prompt) - 1 + i, t]) for i, t in enumerate(completion))


def test_sft_learns_the_passed_sessions_and_commits_a_policy_a_run_can_start_from(
    recordings: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from components.core.outcome import Outcome
    from components.engine.tiny_model import init_tiny_model
    from pipelines.cli import app

    config = _config(recordings, f"sqlite:///{tmp_path / 'mlflow.db'}")
    store, source = open_store(recordings), RunLayout("quickstart")
    outcomes = [Outcome.model_validate_json(store.get_bytes(k)) for k in store.list(source.outcomes(0))]
    passed = {o.rollout_id for o in outcomes if o.passed}
    assert passed and len(passed) < len(outcomes), "the quickstart's first iteration passes some rollouts, not all"

    sessions, left_out = recorded_sessions(config, store)
    assert {key.split("/", 1)[1] for key in sessions} == passed and left_out["not passed"] == len(outcomes) - len(passed)

    monkeypatch.chdir(tmp_path)  # the executor's folders go under ./.openforge
    result = CliRunner().invoke(app, ["sft", str(_write(config, tmp_path))])
    assert result.exit_code == 0, result.output
    # The SFT WorkflowTemplate ran through the local executor: its one step's log says what it kept.
    step_log = (tmp_path / ".openforge" / "executor" / "cold" / "sft" / "logs" / "cold-sft" / "main.log").read_text()
    assert "kept epoch" in step_log, step_log
    assert "sft epoch 1/2: loss " in step_log and "sft epoch 2/2: loss " in step_log, step_log  # progress, epoch by epoch
    layout = RunLayout("cold")
    path = sft_policy_path(store, layout)
    assert f"model.path: {path}" in result.output.replace("\n", "")
    assert store.exists(layout.sft_marker())
    report = json.loads(store.get_bytes(layout.sft_report()))
    assert report["sessions"] == len(passed) and 1 <= report["chosen_epoch"] <= 2
    logged = ExperimentTracker(config.tracking, "cold-sft", experiment="cold").logged()
    assert sorted(logged) == [1, 2] and {"sft/loss", "sft/token_accuracy", "sft/val_loss"} <= set(logged[1])

    # The policy it committed writes the passed sessions' turns more likely than the model it started from.
    base = init_tiny_model(tmp_path / "base", seed=5)
    rollout = sorted(passed)[0]
    scratch = tmp_path / f"{rollout}.jsonl"
    scratch.write_bytes(store.get_bytes(source.trajectory(0, rollout)))
    turns = [(c.prompt_token_ids, c.completion_token_ids) for c in read_session(scratch)]
    assert sum(_log_p(path, *turn) for turn in turns) > sum(_log_p(base, *turn) for turn in turns) + 5

    again = CliRunner().invoke(app, ["sft", str(_write(config, tmp_path))])
    assert again.exit_code == 0 and "nothing was redone" in again.output


def test_the_sft_workflow_compiles_to_a_template_that_passes_the_check(tmp_path: Path) -> None:
    import yaml

    from pipelines.cli import app

    config = _config(f"file://{tmp_path / 'store'}", "sqlite:///unused.db")
    result = CliRunner().invoke(app, ["sft", str(_write(config, tmp_path)), "--compile-only", "--check", "--out", str(tmp_path / "argo")])

    assert result.exit_code == 0, result.output
    doc = yaml.safe_load((tmp_path / "argo" / "cold" / "sft-template.yaml").read_text())
    assert doc["kind"] == "WorkflowTemplate" and doc["metadata"]["name"] == "cold-sft"
    (step,) = doc["spec"]["templates"]
    assert step["container"]["command"] == ["openforge", "step", "sft"]
    bare = config.model_copy(update={"sft": None})
    refused = CliRunner().invoke(app, ["sft", str(_write(bare, tmp_path)), "--compile-only"])
    assert refused.exit_code == 2 and "needs an `sft:` section" in refused.output


def test_recordings_that_hold_nothing_to_learn_are_refused_naming_what_was_found(
    recordings: str, tmp_path: Path
) -> None:
    store = open_store(recordings)
    with pytest.raises(SftError, match="no session to learn from") as err:
        recorded_sessions(_config(recordings, "sqlite:///unused.db", iterations=[7]), store)
    assert "no outcome at all" in str(err.value)
    with pytest.raises(SftError, match="no `sft:` section"):
        sft_from_store(_config(recordings, "sqlite:///unused.db").model_copy(update={"sft": None}), store)


def _write(config: ExperimentConfig, folder: Path) -> Path:
    import yaml

    path = folder / "cold.yaml"
    path.write_text(yaml.safe_dump(config.model_dump(mode="json", exclude={"evaluation"})))
    return path
