"""Each step's spec against what its body does to the store: it reads and writes only what it declares.

One small iteration runs step body by step body, in process, on a local store whose every
access is recorded: prepare, serve (the engine itself not started), the rollouts' artifacts
put where the rollout spec's keys say (what the executor does), score, train, commit and
record-status; then an evaluation's prepare, serve, score and report. Each key touched is
named by the RunLayout method that makes it, and must be among the step's ``reads`` or
``writes``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from components.core.config import CONFIG_ENV, ExperimentConfig
from components.core.outcome import Outcome, RolloutStatus
from components.core.storage import LocalStore, RunLayout, run_layout
from components.core.trajectory import RecordedCall
from pipelines.steps import STEPS
from pipelines.steps._costs import run_step
from pipelines.steps._spec import ITERATION
from pipelines.steps.rollout import ROLLOUT_ID
from tests.pipelines.fake_openforge import write_task

_SENTINEL = "SENTINEL"
_VERSION = 987654  # formats as itself under the checkpoints' :05d


def _kinds(layout: RunLayout) -> dict[str, re.Pattern[str]]:
    """Each RunLayout key maker as a pattern over keys (a folder's pattern takes the files under it)."""
    patterns = {}
    for name in ("state", "task", "evaluated_checkpoint", "eval_summary", "plan", "choices", "trajectory", "images",
                 "outcome", "rewards", "batch", "metrics", "analytics", "costs", "checkpoint", "checkpoint_marker",
                 "sft_checkpoint", "sft_report", "sft_marker", "teacher_log_probs"):  # fmt: skip
        maker = getattr(layout, name)
        arguments = maker.__code__.co_varnames[1 : maker.__code__.co_argcount]
        key = maker(*(_VERSION if a == "version" else _SENTINEL for a in arguments))
        text = re.escape(key).replace(_SENTINEL, "[^/]+").replace(str(_VERSION), r"\d{5,}")
        folder = name in ("task", "images", "costs", "checkpoint", "sft_checkpoint")
        patterns[name] = re.compile(text + ("(/.+)?" if folder else ""))
    return patterns


class _Accesses:
    def __init__(self) -> None:
        self.reads: list[str] = []
        self.writes: list[str] = []

    def kinds(self, layout: RunLayout) -> tuple[set[str], set[str]]:
        patterns = _kinds(layout)

        def kind(key: str) -> str:
            # The most specific maker wins: a checkpoint's marker is also a file under the checkpoint.
            found = [name for name, pattern in patterns.items() if pattern.fullmatch(key)]
            assert found, f"{key} is made by no RunLayout method"
            return min(found, key=lambda n: len(patterns[n].pattern) if not n.endswith("checkpoint") else 10**6)

        return {kind(k) for k in self.reads}, {kind(k) for k in self.writes}


@pytest.fixture
def accesses(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Accesses]:
    seen = _Accesses()
    for method, into in (("get_bytes", seen.reads), ("exists", seen.reads), ("put_bytes", seen.writes)):
        original = getattr(LocalStore, method)

        def recorded(self, key, *args, _original=original, _into=into):
            _into.append(key)
            return _original(self, key, *args)

        monkeypatch.setattr(LocalStore, method, recorded)
    original_list = LocalStore.list
    # A listing reads the keys it finds (the run's checkpoints, a task folder).
    monkeypatch.setattr(LocalStore, "list", lambda self, prefix: _listed(seen, original_list(self, prefix)))
    yield seen


def _listed(seen: _Accesses, keys: list[str]) -> list[str]:
    seen.reads.extend(keys)
    return keys


def _run_step(name: str, config: ExperimentConfig, accesses: _Accesses, monkeypatch: pytest.MonkeyPatch, **flags) -> None:
    monkeypatch.setenv(CONFIG_ENV, yaml.safe_dump(config.model_dump(mode="json", exclude_none=True)))
    accesses.reads.clear(), accesses.writes.clear()
    try:
        run_step(STEPS[name], flags)  # as the step command runs it: metered, its cost recorded
    except SystemExit as ended:  # typer.Exit(0) from serve
        assert ended.code in (0, None)
    except Exception as exc:  # typer.Exit is not SystemExit
        assert getattr(exc, "exit_code", 1) == 0, exc
    reads, writes = accesses.kinds(run_layout(config))
    spec = STEPS[name]
    assert reads <= set(spec.reads) | set(spec.writes), f"{name} read {reads - set(spec.reads)} it does not declare"
    assert writes <= set(spec.writes), f"{name} wrote {writes - set(spec.writes)} it does not declare"


def _rollout_artifacts(config: ExperimentConfig, iteration: int, rollouts: list[dict], passed: set[str]) -> None:
    """What the executor uploads for each rollout pod, at the keys the rollout spec declares."""
    store, layout = LocalStore(Path(config.storage.uri.removeprefix("file://"))), run_layout(config)
    keys = {a.name: a.key(layout) for a in STEPS["rollout"].artifacts_out}
    for index, rollout in enumerate(rollouts):
        rid = rollout["rollout_id"]
        where = {name: key.replace(ITERATION, str(iteration)).replace(ROLLOUT_ID, rid) for name, key in keys.items()}
        task_id, _, sample = rid.rpartition("-s")
        ok = rid in passed
        outcome = Outcome(rollout_id=rid, task_id=task_id, sample_index=int(sample), iteration=iteration,
                          status=RolloutStatus.OK, reward=float(ok), passed=ok, num_calls=1)  # fmt: skip
        store.put_bytes(where["outcome"], outcome.model_dump_json().encode())
        call = RecordedCall(session_id=rid, call_index=0, api="chat.completions", request={},
                            prompt_token_ids=[1, 2, 3], completion_token_ids=[4 + index, 5], completion_logprobs=[-0.5, -0.7],
                            sampling={"temperature": 1.0}, started_at=0.0, latency_ms=1.0, upstream_status=200)  # fmt: skip
        store.put_bytes(where["trajectory"], (call.model_dump_json() + "\n").encode())


@pytest.fixture
def config(tmp_path: Path) -> ExperimentConfig:
    for task_id in ("alpha", "beta"):
        write_task(tmp_path / "tasks", task_id, 1.0)
    return ExperimentConfig(
        name="contract",
        tasks={"source": str(tmp_path / "tasks")},
        rollout={"samples_per_task": 2},
        storage={"uri": f"file://{tmp_path / 'store'}"},
        tracking={"uri": f"sqlite:///{tmp_path / 'mlflow.db'}"},
    )


def _serve_without_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """The serve step's store work happens before the engine starts; the engine itself is not under test here."""
    import components.engine.server as server

    monkeypatch.setattr(server, "serve", lambda *args, **kwargs: None)


def test_each_training_step_touches_only_the_keys_its_spec_declares(config, accesses, monkeypatch, tmp_path) -> None:
    _serve_without_engine(monkeypatch)
    _run_step("prepare", config, accesses, monkeypatch, iteration="next", stop_at=0, out_dir=tmp_path / "prepared")
    rollouts = json.loads((tmp_path / "prepared" / "rollouts.json").read_text())
    _run_step("serve", config, accesses, monkeypatch, iteration=0, host="127.0.0.1", port=0)
    _rollout_artifacts(config, 0, rollouts, passed={"alpha-s0", "beta-s1"})
    for step in ("score", "train", "commit"):
        _run_step(step, config, accesses, monkeypatch, iteration=0)
    _run_step("record-status", config, accesses, monkeypatch, workflow="contract-iteration-x1", status="Succeeded")

    assert LocalStore(tmp_path / "store").exists(RunLayout("contract").state())


def test_each_evaluation_step_touches_only_the_keys_its_spec_declares(config, accesses, monkeypatch, tmp_path) -> None:
    _serve_without_engine(monkeypatch)
    evaluation = ExperimentConfig.model_validate({**config.model_dump(), "evaluation": {"id": "e1", "checkpoint": "base"}})
    _run_step("prepare", evaluation, accesses, monkeypatch, iteration="0", stop_at=0, out_dir=tmp_path / "prepared")
    rollouts = json.loads((tmp_path / "prepared" / "rollouts.json").read_text())
    _run_step("serve", evaluation, accesses, monkeypatch, iteration=0, host="127.0.0.1", port=0)
    _rollout_artifacts(evaluation, 0, rollouts, passed={"alpha-s0"})
    for step in ("score", "report"):
        _run_step(step, evaluation, accesses, monkeypatch, iteration=0)

    assert LocalStore(tmp_path / "store").exists(run_layout(evaluation).eval_summary())


def test_each_distillation_step_touches_only_the_keys_its_spec_declares(config, accesses, monkeypatch, tmp_path) -> None:
    """serve-teacher and distill beside the training steps; the teacher's scoring itself is
    tests/components/trainer/test_distill_step.py's (here it answers zeros, as no engine runs)."""
    import torch

    import components.trainer.distill_step as distill_step
    from components.engine.tiny_model import init_tiny_model

    _serve_without_engine(monkeypatch)
    monkeypatch.setattr(distill_step, "teacher_log_probs_of_batch", lambda data, url, model: torch.zeros_like(data.batch["rollout_log_probs"]))
    raw = config.model_dump()
    teacher = init_tiny_model(tmp_path / "teacher", seed=1)
    distilling = ExperimentConfig.model_validate(
        {**raw, "algorithm": {**raw["algorithm"], "distillation": {"teacher_model": str(teacher)}}}
    )
    _run_step("prepare", distilling, accesses, monkeypatch, iteration="next", stop_at=0, out_dir=tmp_path / "prepared")
    rollouts = json.loads((tmp_path / "prepared" / "rollouts.json").read_text())
    _run_step("serve", distilling, accesses, monkeypatch, iteration=0, host="127.0.0.1", port=0)
    _rollout_artifacts(distilling, 0, rollouts, passed={"alpha-s0", "beta-s1"})
    _run_step("score", distilling, accesses, monkeypatch, iteration=0)
    _run_step("serve-teacher", distilling, accesses, monkeypatch, iteration=0, host="127.0.0.1", port=0)
    _run_step("distill", distilling, accesses, monkeypatch, iteration=0, teacher_address="127.0.0.1:9")
    for step in ("train", "commit"):
        _run_step(step, distilling, accesses, monkeypatch, iteration=0)

    assert LocalStore(tmp_path / "store").exists(RunLayout("contract").teacher_log_probs(0))


def test_the_sft_step_touches_only_the_keys_its_spec_declares(config, accesses, monkeypatch, tmp_path) -> None:
    _serve_without_engine(monkeypatch)
    _run_step("prepare", config, accesses, monkeypatch, iteration="next", stop_at=0, out_dir=tmp_path / "prepared")
    _rollout_artifacts(config, 0, json.loads((tmp_path / "prepared" / "rollouts.json").read_text()), passed={"alpha-s0"})
    fine_tuning = ExperimentConfig.model_validate(
        {**config.model_dump(), "sft": {"recordings": "contract", "max_epochs": 1, "held_out": 0.0}}
    )
    _run_step("sft", fine_tuning, accesses, monkeypatch)

    assert LocalStore(tmp_path / "store").exists(RunLayout("contract").sft_marker())


def test_an_undeclared_write_is_caught(config, accesses, monkeypatch, tmp_path) -> None:
    """The check itself can fail: a score step that also wrote the batch is named."""
    import dataclasses

    _serve_without_engine(monkeypatch)
    _run_step("prepare", config, accesses, monkeypatch, iteration="next", stop_at=0, out_dir=tmp_path / "prepared")
    _rollout_artifacts(config, 0, json.loads((tmp_path / "prepared" / "rollouts.json").read_text()), passed={"alpha-s0"})
    narrowed = dataclasses.replace(STEPS["score"], writes=("rewards", "costs"))
    monkeypatch.setitem(STEPS, "score", narrowed)

    with pytest.raises(AssertionError, match=r"score wrote \{'metrics'\} it does not declare"):
        _run_step("score", config, accesses, monkeypatch, iteration=0)
