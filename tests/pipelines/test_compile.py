"""`openforge compile`: the committed golden manifests, stable bytes, and the command itself.

Regenerate the golden files after an intended change with
``OPENFORGE_REGEN_GOLDEN=1 pytest tests/pipelines/test_compile.py`` and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml
from tests.pipelines._manifests import PROJECT_ROOT, QUICKSTART, quickstart_config, quickstart_manifests
from typer.testing import CliRunner

from pipelines.cli import app
from pipelines.compile import compile_config, write_manifests
from pipelines.manifest_yaml import dump_manifest

GOLDEN_DIR = PROJECT_ROOT / "argo" / "quickstart"
REGEN = os.environ.get("OPENFORGE_REGEN_GOLDEN") == "1"


def test_quickstart_compiles_to_the_committed_golden_manifests(tmp_path: Path) -> None:
    written = write_manifests(quickstart_config(), tmp_path)
    assert [p.name for p in written] == ["iteration-template.yaml", "continual-cron.yaml", "train-workflow.yaml"]
    for path in written:
        golden = GOLDEN_DIR / path.name
        if REGEN:
            golden.parent.mkdir(parents=True, exist_ok=True)
            golden.write_bytes(path.read_bytes())
        assert golden.is_file(), f"{golden} is missing: run with OPENFORGE_REGEN_GOLDEN=1 to write it"
        # Text, so that pytest shows a line diff; UTF-8 makes equal text equal bytes.
        assert path.read_text() == golden.read_text(), (
            f"{path.name} differs from {golden}: if the change is intended, regenerate with "
            "OPENFORGE_REGEN_GOLDEN=1 and review the diff"
        )


def test_compiling_twice_gives_the_same_bytes() -> None:
    first = [dump_manifest(d) for d in compile_config(quickstart_config())]
    second = [dump_manifest(d) for d in compile_config(quickstart_config())]
    assert first == second


def test_written_yaml_reads_back_as_the_compiled_manifests(tmp_path: Path) -> None:
    paths = write_manifests(quickstart_config(), tmp_path)
    assert [yaml.safe_load(p.read_text()) for p in paths] == compile_config(quickstart_config())
    # The embedded config stays a readable literal block, not one escaped line.
    assert "value: |\n" in paths[0].read_text()


def test_compile_command_writes_under_the_experiment_name_and_checks(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["compile", str(QUICKSTART), "--out", str(tmp_path), "--check"])
    assert result.exit_code == 0, result.output
    written = tmp_path / "quickstart" / "iteration-template.yaml"
    assert written.read_bytes() == dump_manifest(compile_config(quickstart_config())[0]).encode()
    assert "no problems" in result.output


def test_compile_command_names_the_bad_field_of_a_broken_config(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("name: demo\ntasks: {source: x}\nrollout: {concurrancy: 4}\n")
    result = CliRunner().invoke(app, ["compile", str(config), "--out", str(tmp_path / "argo")])
    assert result.exit_code == 2
    assert "rollout.concurrancy" in result.output
    assert not (tmp_path / "argo").exists()


def test_compile_check_with_a_missing_schema_file_says_where_it_looked(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.json"
    result = CliRunner().invoke(
        app, ["compile", str(QUICKSTART), "--out", str(tmp_path), "--check", "--schema", str(missing)]
    )
    assert result.exit_code == 2
    assert str(missing) in result.output


def test_an_evaluation_compiles_to_the_iteration_dag_without_train_and_commit(tmp_path: Path) -> None:
    from pipelines.evaluate import eval_config
    from pipelines.validate import check_manifests, default_schema_path

    config = eval_config(quickstart_config(), "latest", eval_id="example")
    (path,) = write_manifests(config, tmp_path)
    golden = GOLDEN_DIR / "eval-workflow.yaml"
    if REGEN:
        golden.write_bytes(path.read_bytes())
    assert path.read_text() == golden.read_text(), "regenerate with OPENFORGE_REGEN_GOLDEN=1 and review the diff"
    doc = yaml.safe_load(path.read_text())
    assert check_manifests([doc], default_schema_path()) == []
    training = {t["name"]: t for t in quickstart_manifests()[0]["spec"]["templates"]}
    evaluation = {t["name"]: t for t in doc["spec"]["templates"]}
    assert set(training) - set(evaluation) == {"train", "commit", "exit-handler"}
    assert set(evaluation) - set(training) == {"report"}
    # The shared steps are the training ones, their keys moved under evals/<id>/.
    assert evaluation["serve"]["container"]["command"] == training["serve"]["container"]["command"]
    outcome = next(a for a in evaluation["rollout"]["outputs"]["artifacts"] if a["name"] == "outcome")
    assert outcome["s3"]["key"].startswith("quickstart/evals/example/iterations/")
    dag = [t["name"] for t in evaluation["iteration"]["dag"]["tasks"]]
    assert dag == ["prepare", "generate", "score", "report"]


def test_eval_compile_only_writes_the_workflow(tmp_path: Path) -> None:
    args = ["eval", str(QUICKSTART), "--compile-only", "--out", str(tmp_path), "--id", "x1", "--checkpoint", "base"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "checkpoint: base" in (tmp_path / "quickstart" / "eval-workflow.yaml").read_text()
