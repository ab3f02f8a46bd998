"""The quickstart's compiled manifest, shared by the pipeline tests (compiled once per session)."""

from __future__ import annotations

import copy
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

from components.core.config import ExperimentConfig, load_config
from pipelines.compile import compile_config
from pipelines.validate import default_schema_path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = PROJECT_ROOT / "examples" / "quickstart.yaml"


def quickstart_config() -> ExperimentConfig:
    return load_config(QUICKSTART)


@lru_cache(maxsize=1)
def _compiled() -> tuple[dict[str, Any], ...]:
    return tuple(compile_config(quickstart_config()))


def quickstart_manifest() -> dict[str, Any]:
    """A private copy of the quickstart's iteration template, free to mutate."""
    return copy.deepcopy(_compiled()[0])


def template(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(t for t in doc["spec"]["templates"] if t["name"] == name)


def dag_task(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(t for t in template(doc, "iteration")["dag"]["tasks"] if t["name"] == name)


def require_schema() -> Path:
    path = default_schema_path()
    if not path.is_file():
        pytest.skip(f"Argo's JSON schema is not at {path}: ../shared/argo/ exists in CI, not in every clone")
    return path
