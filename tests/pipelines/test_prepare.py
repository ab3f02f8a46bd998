"""The prepare step against the run's state: which iteration, which tasks, which rollouts are left."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from components.core.config import CONFIG_ENV, ExperimentConfig
from components.core.storage import LocalStore, RunLayout
from pipelines.prepare import PrepareError, parse_iteration, prepare_step
from pipelines.state import RunState, write_state
from tests.pipelines.fake_openforge import write_task


@pytest.fixture
def config(tmp_path: Path) -> ExperimentConfig:
    for index, task_id in enumerate(("alpha", "beta", "gamma")):
        write_task(tmp_path / "tasks", task_id, reward=float(index))
    return ExperimentConfig.model_validate(
        {
            "name": "prep",
            "tasks": {"source": str(tmp_path / "tasks"), "per_iteration": 2},
            "rollout": {"samples_per_task": 2},
            "storage": {"uri": f"file://{tmp_path / 'store'}"},
        }
    )


@pytest.fixture
def store(tmp_path: Path) -> LocalStore:
    return LocalStore(tmp_path / "store")


def _commit(store: LocalStore, last: int, cursor: int) -> None:
    write_state(store, RunLayout("prep"), RunState(last_committed_iteration=last, checkpoint=last + 1, task_cursor=cursor))


def test_next_is_the_first_uncommitted_iteration(config: ExperimentConfig, store: LocalStore) -> None:
    assert prepare_step(config, None, store).iteration == 0
    _commit(store, last=4, cursor=10)
    prepared = prepare_step(config, None, store)
    assert prepared.iteration == 5 and prepared.pending and prepared.generate
    assert len(prepared.rollouts) == 4 and set(prepared.rollouts[0]) == {"rollout_id", "task_id", "deadline_s"}


def test_the_tasks_start_at_the_committed_cursor(config: ExperimentConfig, store: LocalStore) -> None:
    _commit(store, last=0, cursor=3)
    prepare_step(config, None, store)
    plan = json.loads(store.get_bytes(RunLayout("prep").plan(1)))
    assert plan["task_cursor"] == 3 and plan["next_task_cursor"] >= 5


def test_a_committed_iteration_is_not_pending_and_runs_nothing(config: ExperimentConfig, store: LocalStore) -> None:
    _commit(store, last=2, cursor=6)
    prepared = prepare_step(config, 1, store)
    assert (prepared.iteration, prepared.pending, prepared.generate, prepared.rollouts) == (1, False, False, [])
    assert "already committed" in prepared.reason
    assert not store.exists(RunLayout("prep").plan(1))


def test_an_iteration_beyond_the_next_is_refused(config: ExperimentConfig, store: LocalStore) -> None:
    with pytest.raises(PrepareError, match="cannot run before iteration 0 is committed.*iteration=next"):
        prepare_step(config, 2, store)


def test_a_resumed_iteration_keeps_its_plan_and_skips_finished_rollouts(
    config: ExperimentConfig, store: LocalStore, tmp_path: Path
) -> None:
    layout = RunLayout("prep")
    first = prepare_step(config, 0, store)
    done = first.rollouts[0]["rollout_id"]
    store.put_bytes(layout.outcome(0, done), b"{}")
    write_task(tmp_path / "tasks", "delta", reward=1.0)  # the task set changes meanwhile
    again = prepare_step(config, 0, store)
    assert [r["rollout_id"] for r in again.rollouts] == [r["rollout_id"] for r in first.rollouts[1:]]
    assert "resumed" in again.reason
    for rollout_id in [r["rollout_id"] for r in first.rollouts]:
        store.put_bytes(layout.outcome(0, rollout_id), b"{}")
    last = prepare_step(config, 0, store)
    assert last.pending and not last.generate and last.rollouts == []


def test_overlapped_iterations_plan_the_next_one_where_this_one_leaves_the_cursor(
    config: ExperimentConfig, store: LocalStore
) -> None:
    overlapped = config.model_copy(update={"algorithm": config.algorithm.model_copy(update={"max_staleness": 1})})
    layout = RunLayout("prep")
    _commit(store, last=0, cursor=2)
    prepared = prepare_step(overlapped, None, store)
    assert prepared.iteration == 1 and prepared.generate and prepared.generate_next
    plan, ahead = (json.loads(store.get_bytes(layout.plan(k))) for k in (1, 2))
    # Two tasks per iteration from three: iteration 2 starts where iteration 1 leaves the cursor.
    assert (plan["task_cursor"], plan["next_task_cursor"], ahead["task_cursor"]) == (2, 4, 4)
    assert {r["task_id"] for r in prepared.next_rollouts} == set(ahead["tasks"])
    assert "overlapped: iteration 2 planned: 4 of 4 rollouts" in prepared.reason and "on checkpoint 1" in prepared.reason
    # A resumed attempt reuses the next iteration's plan and leaves out its stored rollouts.
    store.put_bytes(layout.outcome(2, prepared.next_rollouts[0]["rollout_id"]), b"{}")
    again = prepare_step(overlapped, None, store)
    assert len(again.next_rollouts) == 3 and "iteration 2 resumed" in again.reason
    assert json.loads(store.get_bytes(layout.plan(2))) == ahead
    # The end of a bounded run: nothing ahead of it; the same with overlap off.
    assert prepare_step(overlapped, None, store, stop_at=2).next_rollouts == []
    assert not prepare_step(config, None, store).generate_next


def test_an_iteration_already_committed_plans_nothing_ahead(config: ExperimentConfig, store: LocalStore) -> None:
    overlapped = config.model_copy(update={"algorithm": config.algorithm.model_copy(update={"max_staleness": 1})})
    _commit(store, last=1, cursor=4)
    done = prepare_step(overlapped, 1, store)
    assert not done.pending and not done.generate_next
    assert not store.exists(RunLayout("prep").plan(2))


def test_parse_iteration_takes_next_or_a_number() -> None:
    assert parse_iteration("next") is None and parse_iteration("7") == 7
    with pytest.raises(PrepareError, match="non-negative number or 'next'"):
        parse_iteration("-1")


def test_prepare_command_writes_one_file_per_output(config: ExperimentConfig, tmp_path: Path) -> None:
    from pipelines.cli import app

    env = {CONFIG_ENV: yaml.safe_dump(config.model_dump(mode="json"))}
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["step", "prepare", "--iteration", "next", "--out-dir", str(out)], env=env)
    assert result.exit_code == 0, result.output
    assert {p.name: p.read_text() for p in out.iterdir() if p.name != "rollouts.json"} == {
        "iteration": "0",
        "pending": "true",
        "generate": "true",
        "next-iteration": "1",
        "next-generate": "false",  # max_staleness 0: nothing is planned ahead
        "next-rollouts.json": "[]",
    }
    assert len(json.loads((out / "rollouts.json").read_text())) == 4
    refused = CliRunner().invoke(app, ["step", "prepare", "--iteration", "3", "--out-dir", str(out)], env=env)
    assert refused.exit_code == 2 and "iteration=next" in refused.output


def test_prepare_command_reports_a_broken_task(config: ExperimentConfig, tmp_path: Path) -> None:
    from pipelines.cli import app

    (tmp_path / "tasks" / "beta" / "task.yaml").write_text("id: beta\nprompt: x\n")
    env = {CONFIG_ENV: yaml.safe_dump(config.model_dump(mode="json"))}
    result = CliRunner().invoke(app, ["step", "prepare", "--iteration", "0", "--out-dir", str(tmp_path / "o")], env=env)
    assert result.exit_code == 2
    assert "beta/task.yaml" in result.output and "verifier: required field is missing" in result.output
    assert not (tmp_path / "o").exists()
