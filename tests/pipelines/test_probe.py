"""`openforge probe`: which policy it probes, and a whole probe of the quickstart as a real CLI run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from tests.pipelines._manifests import QUICKSTART, quickstart_config

from components.core.storage import RunLayout, open_store
from components.trainer.learnability import GROUP_KINDS, MIXED, ProbeReport
from pipelines.probe import probe_config

REPO = Path(__file__).resolve().parents[2]


def _in_store(tmp_path: Path):
    config = quickstart_config()
    return config.model_copy(update={"storage": config.storage.model_copy(update={"uri": f"file://{tmp_path / 'store'}"})})


def test_before_any_training_the_probe_takes_the_configured_model(tmp_path: Path) -> None:
    config = _in_store(tmp_path)
    assert probe_config(config, samples=3, probe_id="p1").evaluation.checkpoint == "base"
    # Once a checkpoint is committed, `latest` is what the next iteration would train.
    open_store(config.storage.uri).put_bytes(RunLayout(config.name).checkpoint_marker(2), b"")
    probed = probe_config(config, samples=3, probe_id="p2")
    assert (probed.evaluation.checkpoint, probed.rollout.samples_per_task) == ("latest", 3)
    assert probe_config(config, "base", probe_id="p3").evaluation.checkpoint == "base"


@pytest.mark.slow
@pytest.mark.timeout(900)  # an evaluation in a subprocess: engine start, 8 rollouts, scoring, on busy cores
def test_openforge_probe_runs_on_the_quickstart(tmp_path: Path, tracking_uri: str) -> None:
    """The CLI on a fresh quickstart store: nothing trained yet, so it probes the configured model."""
    config = yaml.safe_load(QUICKSTART.read_text())
    config["tasks"]["source"] = str(REPO / "examples" / "tasks" / "quickstart")
    config["storage"]["uri"] = f"file://{tmp_path / 'store'}"
    config["tracking"]["uri"] = tracking_uri
    config["harness"].update(max_turns=2, max_tokens=16)  # as test_evaluate's: a shorter rollout, the same steps
    path = tmp_path / "quickstart.yaml"
    path.write_text(yaml.safe_dump(config))

    run = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "probe", str(path), "--samples", "2", "--id", "probe-ci",
         "--runtime", "process", "--json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=900,
    )  # fmt: skip

    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    report = ProbeReport.model_validate_json(run.stdout)
    found = report.findings
    tasks = sorted(p.name for p in (REPO / "examples" / "tasks" / "quickstart").iterdir() if p.is_dir())
    assert [g.task_id for g in found.tasks] == tasks
    assert (report.harness, report.samples_per_task, found.rollouts) == ("reference", 2, 2 * len(tasks))
    assert report.checkpoint["requested"] == "base" and report.checkpoint["version"] == 0
    assert sum(found.group_kinds[k] for k in GROUP_KINDS) == len(tasks)
    assert found.mixed_share == found.group_kinds[MIXED] / len(tasks)
    # The reference harness samples real tokens, and only mixed groups' tokens train.
    assert found.sampled_tokens > 0
    assert found.trainable_tokens == sum(g.trainable_tokens for g in found.tasks if g.kind == MIXED)
    assert found.verdict and found.reasons
    # Stored beside the evaluation's summary; progress went to stderr, the report alone to stdout.
    store, layout = open_store(config["storage"]["uri"]), RunLayout("quickstart", "probe-ci")
    assert json.loads(store.get_bytes(layout.probe_report())) == json.loads(run.stdout)
    assert store.exists(layout.eval_summary())
    assert "Probe report:" in run.stderr
