"""Each step's spec against what crosses the process boundary: the compiled manifest and the command.

The manifest is what Argo (or the local executor) runs; the generated ``openforge step``
command is what the container parses. Both must say exactly what the spec declares.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
import typer

from components.core.config import ExperimentConfig
from components.core.storage import RunLayout
from pipelines.iteration import EXIT_HANDLER, build_eval_workflow, build_iteration_template
from pipelines.sft_workflow import build_sft_template
from pipelines.steps import STEPS
from pipelines.steps._spec import Flag, StepSpec
from pipelines.steps.cli import step_app, step_command

_EXPRESSION = re.compile(r"\{\{([^}]+)\}\}")
# A value the workflow could put in each expression, as the container would receive it.
_SAMPLES = {
    "inputs.parameters.iteration": "3",
    "inputs.parameters.stop-at": "5",
    "inputs.parameters.rollout-id": "write-hello-s0",
    "inputs.parameters.teacher-address": "10.0.0.7:8000",
    "workflow.name": "demo-iteration-x7k2p",
    "workflow.status": "Succeeded",
}


def _config(tmp_path: Path) -> ExperimentConfig:
    return ExperimentConfig(name="demo", tasks={"source": str(tmp_path)}, storage={"uri": f"file://{tmp_path}"})


def _templates(config: ExperimentConfig) -> dict[str, dict]:
    """Every step template of the training manifest (distilling: serve-teacher and distill too),
    report from the evaluation's and sft from `openforge sft`'s, by step name."""
    raw = config.model_dump()
    distilling = ExperimentConfig.model_validate(
        {**raw, "algorithm": {**raw["algorithm"], "distillation": {"teacher_model": "/models/teacher"}}}
    )
    training = build_iteration_template(distilling).to_dict()["spec"]["templates"]
    evaluation = ExperimentConfig.model_validate({**config.model_dump(), "evaluation": {"id": "e1"}})
    (report,) = (t for t in build_eval_workflow(evaluation).to_dict()["spec"]["templates"] if t["name"] == "report")
    fine_tuning = ExperimentConfig.model_validate({**config.model_dump(), "sft": {"recordings": "demo"}})
    (sft,) = build_sft_template(fine_tuning).to_dict()["spec"]["templates"]
    found = {t["name"]: t for t in training if "container" in t}
    found["record-status"] = found.pop(EXIT_HANDLER)
    return {**found, "report": report, "sft": sft}


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    return _templates(_config(tmp_path_factory.mktemp("tasks")))


def test_every_step_has_a_template_and_every_template_a_step(templates: dict[str, dict]) -> None:
    assert set(templates) == set(STEPS)


@pytest.mark.parametrize("name", list(STEPS))
def test_the_manifest_passes_what_the_spec_declares(name: str, templates: dict[str, dict], tmp_path: Path) -> None:
    spec, template = STEPS[name], templates[name]
    layout = RunLayout("demo")
    assert template["container"]["command"] == spec.command()
    inputs = template.get("inputs", {})
    assert [p["name"] for p in inputs.get("parameters", [])] == list(spec.inputs)
    assert [(a["name"], a["path"], a["s3"]["key"]) for a in inputs.get("artifacts", [])] == [
        (a.name, a.path, a.key(layout)) for a in spec.artifacts_in
    ]
    outputs = template.get("outputs", {})
    assert [(p["name"], p["valueFrom"]["path"]) for p in outputs.get("parameters", [])] == [
        (o.name, spec.output_path(o.name)) for o in spec.outputs
    ]
    assert [(a["name"], a["path"], a["s3"]["key"], a.get("optional", False)) for a in outputs.get("artifacts", [])] == [
        (a.name, a.path, a.key(layout), a.optional) for a in spec.artifacts_out
    ]


@pytest.mark.parametrize("name", list(STEPS))
def test_every_input_a_flag_reads_is_declared(name: str) -> None:
    spec = STEPS[name]
    read = {m.removeprefix("inputs.parameters.") for f in spec.flags if f.value for m in _EXPRESSION.findall(f.value)}
    assert {r for r in read if "." not in r} <= set(spec.inputs)


@pytest.mark.parametrize("name", list(STEPS))
def test_the_generated_command_parses_what_the_manifest_passes(name: str, templates: dict[str, dict]) -> None:
    spec = STEPS[name]
    args = [_EXPRESSION.sub(lambda m: _SAMPLES[m.group(1)], arg) for arg in templates[name]["container"]["command"][3:]]
    command = typer.main.get_command(step_app).commands[name]

    parsed = command.make_context(name, args).params

    assert set(parsed) == {f.name for f in spec.flags}
    passed = {f.name for f in spec.flags if f.value is not None}
    for flag in spec.flags:
        value = parsed[flag.name]
        assert isinstance(value, flag.kind), (flag.name, value)
        if flag.name not in passed:
            assert value == flag.default


@pytest.mark.parametrize("name", list(STEPS))
def test_the_component_a_spec_names_exists(name: str) -> None:
    assert callable(STEPS[name].component())


def test_a_changed_spec_changes_the_manifest_and_the_command_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    extra = Flag("dry_run", str, "A flag the workflow now passes.", value="yes")
    changed: StepSpec = dataclasses.replace(STEPS["score"], flags=(*STEPS["score"].flags, extra))
    monkeypatch.setitem(STEPS, "score", changed)

    manifest = _templates(_config(tmp_path))["score"]["container"]["command"]
    options = {p.opts[0] for p in typer.main.get_command(_app_of(changed)).params}

    assert manifest[-2:] == ["--dry-run", "yes"]
    assert "--dry-run" in options


def _app_of(spec: StepSpec) -> typer.Typer:
    app = typer.Typer()
    app.command(spec.name)(step_command(spec))
    return app
