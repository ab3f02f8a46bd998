"""The executor runs manifests: it imports neither the CLI above it nor the harnesses the
manifests run. What it needs of them (the warm-start entry point and modules, the harness
folder a pod mounts) its caller passes in."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

EXECUTOR = Path(__file__).resolve().parents[3] / "pipelines" / "executor"
OFF_LIMITS = ("pipelines.cli", "components.rollout.harnesses")


def _named_modules(path: Path) -> Iterator[tuple[int, str]]:
    """Every module an import statement names (function bodies included), and every string
    that names one to import later (``importlib.import_module``, a ``module:function`` entry)."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module
            yield from ((node.lineno, f"{node.module}.{alias.name}") for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value.partition(":")[0]


def _off_limits(module: str) -> bool:
    return any(module == name or module.startswith(name + ".") for name in OFF_LIMITS)


@pytest.mark.parametrize("path", sorted(EXECUTOR.glob("*.py")), ids=lambda p: p.name)
def test_executor_module_imports_nothing_from_the_cli_or_the_harnesses(path: Path) -> None:
    found = [f"{path.name}:{line}: {module}" for line, module in _named_modules(path) if _off_limits(module)]
    assert not found, "the executor must be handed these, not import them:\n" + "\n".join(found)


def test_the_scan_sees_an_import_in_a_function_body_and_a_named_entry_point(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text('def f():\n    from pipelines import cli\n\nENTRY = "components.rollout.harnesses:get_harness"\n')
    assert [m for _, m in _named_modules(sample) if _off_limits(m)] == ["pipelines.cli", "components.rollout.harnesses"]
