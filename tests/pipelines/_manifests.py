"""The quickstart's compiled manifest, shared by the pipeline tests (compiled once per session)."""

from __future__ import annotations

import copy
from functools import lru_cache
from pathlib import Path
from typing import Any

from components.core.config import ExperimentConfig, load_config
from pipelines.compile import compile_config
from pipelines.validate import default_schema_path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = PROJECT_ROOT / "examples" / "quickstart.yaml"
CLUSTER_EXAMPLE = PROJECT_ROOT / "examples" / "cluster.yaml"


def quickstart_config() -> ExperimentConfig:
    return load_config(QUICKSTART)


def cluster_example_config() -> ExperimentConfig:
    """The quickstart as deployed on a cluster (s3:// store, MLflow server)."""
    return load_config(CLUSTER_EXAMPLE)


@lru_cache(maxsize=1)
def _compiled() -> tuple[dict[str, Any], ...]:
    return tuple(compile_config(quickstart_config()))


def quickstart_manifests() -> list[dict[str, Any]]:
    """Private copies of all three compiled manifests: template, cron, bounded workflow."""
    return copy.deepcopy(list(_compiled()))


def quickstart_manifest(kind: str = "WorkflowTemplate") -> dict[str, Any]:
    """A private copy of one quickstart manifest (by default the iteration template), free to mutate."""
    return next(doc for doc in quickstart_manifests() if doc["kind"] == kind)


def _templates(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return doc["spec"]["templates"]


def template(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(t for t in _templates(doc) if t["name"] == name)


def dag_task(doc: dict[str, Any], name: str) -> dict[str, Any]:
    """A task of any DAG template (task names are unique across the iteration's DAGs)."""
    return next(t for tmpl in _templates(doc) for t in (tmpl.get("dag") or {}).get("tasks", []) if t["name"] == name)


def template_path(doc: dict[str, Any], name: str) -> str:
    """``spec.templates[i]`` of template ``name``, as findings name it."""
    return f"spec.templates[{[t['name'] for t in _templates(doc)].index(name)}]"


def task_path(doc: dict[str, Any], name: str) -> str:
    """``spec.templates[i].dag.tasks[j]`` of DAG task ``name``."""
    for i, tmpl in enumerate(_templates(doc)):
        names = [t["name"] for t in (tmpl.get("dag") or {}).get("tasks", [])]
        if name in names:
            return f"spec.templates[{i}].dag.tasks[{names.index(name)}]"
    raise KeyError(name)


def require_schema() -> Path:
    """The schema the project ships: missing, the checkout is broken, so this fails, never skips."""
    path = default_schema_path()
    assert path.is_file(), f"Argo's JSON schema is missing from the repository: {path}"
    return path
