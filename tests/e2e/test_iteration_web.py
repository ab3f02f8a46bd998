"""A whole iteration of examples/web.yaml: browser-use in a real Chromium on a seeded web
app, the tiny model on the dev engine in choice mode, proxy sidecars, scoring, the batch,
the CPU update.

No stand-in for the reward: the task offers browser-use's candidate turns (the right and
a wrong answer, components/environments/web_choices.py), the policy draws one per step,
and the task's own verifier judges the app's state and the answer. The group's verdicts
differ, so the batch and the update run on the recorded screenshot calls.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import shutil
from pathlib import Path

import pytest
from rich.console import Console
from tests._missing import require_harness

from components.core.checkpoints import committed_versions
from components.core.config import load_config
from components.core.images import pointer_parts, rebuild_request, referenced_images
from components.core.storage import ArtifactStore, RunLayout, get_dir, open_store
from components.core.trajectory import RecordedCall
from pipelines.executor import sandbox_problem
from pipelines.run import run_experiment
from tests.e2e._noisy_reward import noisy_task  # noqa: F401  (tests/e2e/_gui_runs.py imports it from here)

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "web.yaml"
# Two calls: the search, then `done` with the cheapest flight's number or another's.
TASK = REPO / "examples" / "tasks" / "web" / "web-flights-cheapest-code-2"
# Seeded sampling draws the same numbers on every run: sample 0 answers another flight's
# number, sample 1 the cheapest's (examples/web.yaml's own iteration draws the same).
SAMPLES = 2
RUNTIME = "process" if sandbox_problem() else "sandbox"  # where namespaces cannot be made, still test the GUI path


def _images_from_store(store: ArtifactStore, layout: RunLayout, calls: list[RecordedCall], dest: Path) -> Path:
    """What a reader elsewhere does: fetch the files the records name from the iteration's images."""
    dest.mkdir(parents=True, exist_ok=True)
    for call in calls:
        for file in referenced_images(call):
            (dest / Path(file).name).write_bytes(store.get_bytes(f"{layout.images(0)}/{Path(file).name}"))
    return dest


@pytest.mark.slow
@pytest.mark.timeout(1200)  # two ~12k-token calls per rollout, then four such rows in the update, on busy cores
def test_web_iteration_records_screenshots_scores_builds_the_batch_and_trains(
    chromium_ready: None, tmp_path: Path, tracking_uri: str
) -> None:
    require_harness("browser-use")
    shutil.copytree(TASK, tmp_path / "tasks" / TASK.name)
    example = load_config(EXAMPLE)
    config = example.model_copy(
        update={
            "name": "web-e2e",
            "tasks": example.tasks.model_copy(update={"source": str(tmp_path / "tasks")}),
            "rollout": example.rollout.model_copy(update={"samples_per_task": SAMPLES}),
            # No empty update to fall back on: the group must carry signal.
            "algorithm": example.algorithm.model_copy(update={"allow_empty_update": False, "epochs": 1}),
            "storage": example.storage.model_copy(update={"uri": f"file://{tmp_path / 'store'}"}),
            "tracking": example.tracking.model_copy(update={"uri": tracking_uri}),
        }
    )
    # `openforge run`'s default runtime: browser-use and the runner's Chromium in a sandboxed pod.
    logged = run_experiment(config, console=Console(file=io.StringIO(), width=160), workdir=tmp_path / ".openforge", runtime=RUNTIME)

    store, layout = open_store(config.storage.uri), RunLayout(config.name)
    rollout_ids = [r["rollout_id"] for r in json.loads(store.get_bytes(layout.plan(0)))["rollouts"]]
    assert len(rollout_ids) == SAMPLES

    # Every rollout recorded its calls, each with its screenshot stored once by hash in the store.
    stored = {Path(key).name: store.get_bytes(key) for key in store.list(layout.images(0) + "/")}
    assert stored and all(name == f"{hashlib.sha256(data).hexdigest()}.png" for name, data in stored.items())
    all_calls, used, verdicts = [], set(), {}
    goal = json.loads((TASK / "goal.json").read_text())
    for rollout_id in rollout_ids:
        outcome = json.loads(store.get_bytes(layout.outcome(0, rollout_id)))
        assert outcome["status"] == "ok" and outcome["reward"] == float(outcome["passed"]), outcome
        lines = store.get_bytes(layout.trajectory(0, rollout_id)).splitlines()
        calls = [RecordedCall.model_validate_json(line) for line in lines]
        # Both candidate turns played (search, then done), each call with its screenshot.
        assert len(calls) == 2 and all(call.ok and call.images for call in calls), rollout_id
        answer = json.loads(calls[-1].response["choices"][0]["message"]["content"])["action"][0]["done"]["text"]
        assert outcome["final_answer"] == answer
        # The verifier's verdict follows the drawn answer: the cheapest flight's number passes.
        assert outcome["passed"] is (answer == goal["answer_contains"]), (answer, outcome["verifier_output"])
        verdicts[rollout_id] = outcome["passed"]
        all_calls += calls
        used |= {Path(file).name for call in calls for file in referenced_images(call)}
    assert used == set(stored)  # nothing missing, nothing stray

    # ... and rebuilds from there to the PNG data URL browser-use sent.
    images = _images_from_store(store, layout, all_calls, tmp_path / "fetched")
    for call in all_calls:
        rebuilt = {"request": rebuild_request(call, images)}
        for pointer in call.images:  # e.g. /request/messages/1/content/2/image_url/url
            url = rebuilt
            for part in pointer_parts(pointer):
                url = url[int(part)] if isinstance(url, list) else url[part]
            prefix, data = url.split(",", 1)
            assert prefix == "data:image/png;base64"
            assert f"{hashlib.sha256(base64.b64decode(data)).hexdigest()}.png" in stored

    assert set(verdicts.values()) == {True, False}, verdicts  # the group carries signal

    # Scored: every rollout usable, the group's rewards differ (the verdicts), so it trains.
    rewards = json.loads(store.get_bytes(layout.rewards(0)))
    assert rewards["unusable"] == {} and all(r["usable"] for r in rewards["records"])

    # The batch: one row per call that sampled a token (browser-use's calls never extend each
    # other; a step with one candidate is forced whole and trains nothing), each prompt holding
    # its screenshot's placeholder (docs/engine.md, "Images").
    from transformers import AutoTokenizer
    from verl import DataProto

    (tmp_path / "batch.pt").write_bytes(store.get_bytes(layout.batch(0)))
    batch = DataProto.load_from_disk(tmp_path / "batch.pt")
    drawn = [call for call in all_calls if any(call.sampled_mask())]
    assert drawn and len(batch) == len(drawn)
    forced = [call for call in all_calls if call.choice == "forced"]
    assert forced and batch.meta_info["openforge_batch_stats"]["forced_tokens"] > 0
    get_dir(store, layout.checkpoint(0), tmp_path / "ckpt0")
    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "ckpt0")
    prompts = [tokenizer.decode(row, skip_special_tokens=False) for row in batch.batch["prompts"].tolist()]
    placeholders = {f"<|image:{Path(file).stem[:16]}|>" for call in all_calls for file in referenced_images(call)}
    assert all(any(mark in prompt for mark in placeholders) for prompt in prompts)

    # The update ran and checkpoint 1 is committed with weights of its own.
    metrics = logged[0]
    assert metrics["batch/rows"] == len(drawn) and metrics["batch/dropped_rows"] == 0
    assert metrics["groups/skipped_equal"] == 0 and "train/loss" in metrics
    assert metrics["batch/trained_tokens"] > 0 and metrics["batch/empty_update"] == 0
    assert committed_versions(store, layout) == [0, 1]
    weights = [store.get_bytes(f"{layout.checkpoint(v)}/model.safetensors") for v in (0, 1)]
    assert weights[0] != weights[1]
