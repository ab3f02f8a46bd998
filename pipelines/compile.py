"""Compile an experiment config into Argo manifests: plain dicts, then YAML files with stable bytes.

The YAML written here is committed under ``argo/`` as golden files and is what the local
executor runs, so the same config must always give the same bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

# The config's models load where a config is read: `openforge --help` imports this module.
if TYPE_CHECKING:
    from components.core.config import ExperimentConfig

# File name per kind, after the experiment-name prefix is taken off the object's name.
_KIND_SUFFIX = {"WorkflowTemplate": "template", "CronWorkflow": "cron", "Workflow": "workflow"}


def compile_config(config: ExperimentConfig) -> list[dict[str, Any]]:
    """The experiment's manifests as plain JSON-like dicts, in a fixed order: the iteration
    WorkflowTemplate, the CronWorkflow that runs it, the bounded multi-iteration Workflow.
    An evaluation's config (``openforge eval``) compiles to its one Workflow."""
    from pipelines.continual import build_bounded_workflow, build_cron_workflow
    from pipelines.iteration import build_eval_workflow, build_iteration_template

    if config.evaluation is not None:
        objects = [build_eval_workflow(config)]
    else:
        objects = [build_iteration_template(config), build_cron_workflow(config), build_bounded_workflow(config)]
    return [manifest_dict(o) for o in objects]


def manifest_dict(workflow: Any) -> dict[str, Any]:
    """A Hera workflow object as the manifest dict every compiled document is (stable field order)."""
    return _name_first(workflow.build().model_dump(by_alias=True, exclude_none=True, mode="json"))


def manifest_of_kind(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    """The one compiled manifest of ``kind`` (WorkflowTemplate, CronWorkflow or Workflow)."""
    (doc,) = [d for d in docs if d["kind"] == kind]
    return doc


def _name_first(value: Any) -> Any:
    # Readability only: `name` leads each mapping, the rest keeps the models' (fixed) field order.
    if isinstance(value, dict):
        ordered = {"name": value["name"]} if "name" in value else {}
        ordered.update((k, _name_first(v)) for k, v in value.items() if k != "name")
        return ordered
    if isinstance(value, list):
        return [_name_first(v) for v in value]
    return value


def manifest_filename(doc: dict[str, Any], experiment: str) -> str:
    """`<name>-iteration` of kind WorkflowTemplate -> `iteration-template.yaml`; a
    generateName counts as the name (`<name>-train-` Workflow -> `train-workflow.yaml`)."""
    meta = doc["metadata"]
    stem = (meta.get("name") or meta["generateName"].rstrip("-")).removeprefix(f"{experiment}-")
    return f"{stem}-{_KIND_SUFFIX[doc['kind']]}.yaml"


def write_manifests(config: ExperimentConfig, out_dir: Path) -> list[Path]:
    """Compile ``config`` into ``out_dir/<experiment name>/``, one YAML file per manifest."""
    from pipelines.manifest_yaml import dump_manifest

    target = out_dir / config.name
    target.mkdir(parents=True, exist_ok=True)
    paths = []
    for doc in compile_config(config):
        path = target / manifest_filename(doc, config.name)
        path.write_text(dump_manifest(doc))
        paths.append(path)
    return paths


def compile_command(
    config_path: Path = typer.Argument(..., metavar="CONFIG", help="Experiment config YAML."),
    out: Path = typer.Option(Path("argo"), "--out", help="Folder; manifests go to OUT/<experiment name>/."),
    check: bool = typer.Option(
        False, "--check", help="Validate the manifests: strict Argo schema, Hera round trip, lint."
    ),
    schema: Path | None = typer.Option(
        None, "--schema", help="Argo's JSON schema (default: Argo v4.1.2's, shipped in pipelines/validate/schemas/)."
    ),
) -> None:
    """Compile an experiment config into Argo manifests (the files the local executor runs)."""
    from pipelines.run import load_config_or_exit

    config = load_config_or_exit(config_path)
    for path in write_manifests(config, out):
        typer.echo(f"wrote {path}")
    if check:
        check_or_exit(compile_config(config), schema)


def check_or_exit(docs: list[dict[str, Any]], schema: Path | None = None) -> None:
    """Validate compiled manifests (strict Argo schema, Hera round trip, lint); exit 1 naming each problem."""
    from pipelines.validate import SchemaUnavailable, check_manifests, default_schema_path

    try:
        findings = check_manifests(docs, schema or default_schema_path())
    except SchemaUnavailable as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    for finding in findings:
        typer.echo(str(finding), err=True)
    if findings:
        typer.echo(f"{len(findings)} problem(s) in the compiled manifests", err=True)
        raise typer.Exit(1)
    typer.echo(f"checked {len(docs)} manifest(s): no problems")
