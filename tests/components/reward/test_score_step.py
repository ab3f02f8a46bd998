"""The score step against a local store: plan in, rewards.json and score metrics out."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from components.core.config import ExperimentConfig
from components.core.storage import LocalStore, RunLayout
from components.reward.step import PlanError, score_iteration

CONFIG_YAML = """
name: unit
tasks: {{source: tasks}}
rollout: {{samples_per_task: 2}}
storage: {{uri: "file://{root}"}}
"""


def _openforge() -> typer.Typer:
    """``openforge step score`` mounted as the pipeline CLI mounts it."""
    from pipelines.steps.cli import step_app

    app = typer.Typer()
    app.add_typer(step_app, name="step")
    return app


@pytest.fixture
def run(tmp_path, outcome, call):
    config = ExperimentConfig(
        name="unit", tasks={"source": "tasks"}, rollout={"samples_per_task": 2}, storage={"uri": f"file://{tmp_path}"}
    )
    store, layout = LocalStore(tmp_path), RunLayout("unit")
    rollouts = [
        {"rollout_id": rid, "task_id": rid[:1], "sample_index": int(rid[-1]), "group_id": f"it0-{rid[:1]}"}
        for rid in ("a-s0", "a-s1", "b-s0", "b-s1")
    ]
    store.put_bytes(layout.plan(0), json.dumps({"iteration": 0, "rollouts": rollouts}).encode())
    written = {
        "a-s0": outcome("a-s0", passed=True, duration_s=2.0),
        "a-s1": outcome("a-s1", passed=False, duration_s=4.0),
        "b-s0": outcome("b-s0", "timeout", duration_s=6.0),
        # b-s1 never reported (its pod was lost)
    }
    for rid, result in written.items():
        store.put_bytes(layout.outcome(0, rid), result.model_dump_json().encode())
        session = call(session=rid, completion=(4, 5, 6)).model_dump_json() + "\n"
        store.put_bytes(layout.trajectory(0, rid), session.encode())
    return config, store, layout


def test_score_writes_records_with_lost_rollouts_as_infra_errors(run):
    config, store, layout = run

    report = score_iteration(config, 0, store)

    stored = json.loads(store.get_bytes(layout.rewards(0)))
    records = {r["rollout_id"]: r for r in stored["records"]}
    assert records["b-s1"]["status"] == "infra_error" and not records["b-s1"]["usable"]
    assert "no outcome was stored" in stored["unusable"]["b-s1"]
    assert [records[r]["reward"] for r in ("a-s0", "a-s1", "b-s0")] == [1.0, 0.0, 0.0]
    assert report.metrics == json.loads(store.get_bytes(layout.metrics(0)))


def test_score_metrics_carry_the_contract_names(run):
    config, store, _ = run

    metrics = score_iteration(config, 0, store).metrics

    assert metrics["reward/mean"] == pytest.approx(1 / 3)
    assert metrics["pass@1"] == pytest.approx((0.5 + 0.0) / 2)  # task b: one graded rollout, failed
    assert metrics["pass@k"] == 1.0 and metrics["pass^k"] == 0.0  # only task a has k=2 graded
    assert metrics["rollouts/ok"] == 2 and metrics["rollouts/timeout"] == 1 and metrics["rollouts/infra_error"] == 1
    # task b: its lost rollout leaves b-s0 with no baseline, so the whole group is masked
    assert metrics["rollouts/usable"] == 2 and metrics["tokens/sampled"] == 9
    assert metrics["rollout_time_s/p50"] == 4.0
    assert metrics["groups/skipped_equal"] == 0 and metrics["groups/no_baseline"] == 1
    assert metrics["unusable/infra_error"] == 1 and metrics["unusable/group_no_baseline"] == 1


def test_only_the_judged_attempt_is_inspected(run, call):
    config, store, layout = run
    # a-s0 was retried: attempt 0's call lacks token ids, attempt 1 (the judged one) is fine.
    from components.core.outcome import Outcome

    outcome = Outcome.model_validate_json(store.get_bytes(layout.outcome(0, "a-s0")))
    outcome.extra["attempts"] = 2
    store.put_bytes(layout.outcome(0, "a-s0"), outcome.model_dump_json().encode())
    lines = [
        call(session="a-s0", index=0, prompt_token_ids=[]).model_dump_json(),
        call(session="a-s0", index=1, tags={"attempt": 1}).model_dump_json(),
    ]
    store.put_bytes(layout.trajectory(0, "a-s0"), ("\n".join(lines) + "\n").encode())

    report = score_iteration(config, 0, store)
    assert "a-s0" not in report.unusable
    outcome.extra["attempts"] = 3  # the judged attempt made no call at all
    store.put_bytes(layout.outcome(0, "a-s0"), outcome.model_dump_json().encode())
    report = score_iteration(config, 0, store)
    assert report.unusable["a-s0"] == "the trajectory holds no recorded calls for attempt 2"
    assert report.unusable_reasons["no_calls"] == 1


def test_missing_plan_names_the_step_to_run(tmp_path):
    config = ExperimentConfig(name="unit", tasks={"source": "tasks"}, storage={"uri": f"file://{tmp_path}"})

    with pytest.raises(PlanError, match="run the prepare step"):
        score_iteration(config, 0, LocalStore(tmp_path))


def test_score_command_reads_the_config_from_the_environment(run, tmp_path):
    _, store, layout = run
    result = CliRunner().invoke(
        _openforge(), ["step", "score", "--iteration", "0"], env={"OPENFORGE_CONFIG_YAML": CONFIG_YAML.format(root=tmp_path)}
    )

    assert result.exit_code == 0, result.output
    assert "scored 4 rollouts (2 usable)" in result.output  # b-s0 has no baseline left
    assert store.exists(layout.rewards(0))


def test_score_command_without_config_says_how_to_give_one():
    result = CliRunner().invoke(_openforge(), ["step", "score", "--iteration", "0"], env={"OPENFORGE_CONFIG_YAML": ""})

    assert result.exit_code != 0 and "OPENFORGE_CONFIG_YAML is not set" in result.output


def test_shuffled_reward_control_changes_only_what_the_trainer_reads(run):
    config, store, layout = run
    true_report = score_iteration(config, 0, store)
    control = config.model_copy(update={"algorithm": config.algorithm.model_copy(update={"shuffle_rewards": True})})

    report = score_iteration(control, 0, store)

    stored = json.loads(store.get_bytes(layout.rewards(0)))
    trained = {r["rollout_id"]: r["reward"] for r in stored["records"]}
    # Seed 0, iteration 0 swaps task a's two rewards (a group of two has one other order).
    assert (trained["a-s0"], trained["a-s1"]) == (0.0, 1.0)
    assert stored["verifier_rewards"] == {r.rollout_id: r.reward for r in true_report.records}
    assert report.metrics.pop("control/shuffled_rewards") == 1.0
    assert report.metrics == true_report.metrics  # reward/mean, pass@k, ... are the verifier's
    assert report.tasks == true_report.tasks and report.groups == true_report.groups
    assert json.loads(store.get_bytes(layout.outcome(0, "a-s0")))["passed"] is True
    assert json.loads(store.get_bytes(layout.metrics(0)))["control/shuffled_rewards"] == 1.0


def _write_calls(store, layout, rollout_id, calls):
    store.put_bytes(layout.trajectory(0, rollout_id), "".join(c.model_dump_json() + "\n" for c in calls).encode())


def test_choice_misses_and_forced_tokens_are_counted(run, call):
    config, store, layout = run
    _write_calls(store, layout, "a-s0", [
        call(session="a-s0", index=0, choice="drawn", completion=(4, 5)),
        call(session="a-s0", index=1, choice="forced", forced_from=0, completion=(6, 7, 8)),
        call(session="a-s0", index=2, choice="miss", completion=(9,)),
        call(session="a-s0", index=3, choice="miss", completion=(9,), tags={"side_call": True}),  # not counted
    ])
    _write_calls(store, layout, "a-s1", [call(session="a-s1", choice="miss")])

    metrics = score_iteration(config, 0, store).metrics

    assert (metrics["engine/choice_calls"], metrics["engine/choice_misses"]) == (4, 2)
    assert metrics["tokens/forced"] == 3
    assert metrics["tokens/sampled"] == 2 + 1 + 1 + 2 + 3  # a-s0's sampled ones, a-s1's 2, b-s0's 3


def test_an_iteration_whose_every_call_missed_the_book_fails_naming_task_and_harness(run, call, outcome):
    from components.reward.scoring import ChoiceMissError

    config, store, layout = run
    for rid in ("a-s0", "a-s1", "b-s0"):
        result = outcome(rid, passed=False, extra={"harness": "claude-code", "harness_version": "2.1.3"})
        store.put_bytes(layout.outcome(0, rid), result.model_dump_json().encode())
        _write_calls(store, layout, rid, [
            call(session=rid, index=0, choice="miss"),
            call(session=rid, index=1, choice="drawn", tags={"side_call": True}),  # a side call does not rescue it
        ])

    with pytest.raises(ChoiceMissError) as err:
        score_iteration(config, 0, store)

    message = str(err.value)
    assert "all 3 calls" in message and "tasks a, b" in message and "claude-code 2.1.3" in message
    assert not store.exists(layout.rewards(0))  # the step did not pass
    _write_calls(store, layout, "b-s0", [call(session="b-s0", choice="drawn")])  # one real choice: it passes
    assert score_iteration(config, 0, store).metrics["engine/choice_misses"] == 2
