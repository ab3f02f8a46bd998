"""What one DAG step is, declared once: its flags, what the workflow hands it, what it hands back.

A ``StepSpec`` is the contract between three places that used to spell it by hand: the
Argo template (``pipelines/iteration.py`` builds the container's command, inputs and
outputs from it), the ``openforge step <name>`` command (``pipelines/steps/cli.py``
generates it from the flags) and the step's own body (which reads only the flags and
writes the output files the spec names). The local executor runs the compiled manifest,
so it too sees nothing the spec does not declare. Plain dataclasses, not pydantic: these
are the program's own declarations, and ``openforge --help`` imports them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from components.core.storage import RunLayout

REQUIRED = ...


def input_value(name: str) -> str:
    """The Argo expression of the template's input parameter ``name``."""
    return "{{inputs.parameters.%s}}" % name


ITERATION = input_value("iteration")


@dataclass(frozen=True)
class Flag:
    """One ``--flag`` of the step's command.

    ``value`` is what the workflow passes (an input's expression, a path of the pod, a
    constant); ``None`` leaves the flag at its default in the manifest (a flag for
    someone running the step by hand).
    """

    name: str  # the step body's keyword argument; the flag is --name-with-dashes
    kind: type
    help: str
    value: str | None = None
    default: object = REQUIRED
    min: int | None = None
    max: int | None = None

    @property
    def option(self) -> str:
        return "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class OutputFile:
    """An Argo output parameter: the step writes ``file`` in its output folder; the DAG reads it as ``name``."""

    name: str
    file: str


@dataclass(frozen=True)
class Artifact:
    """A file or folder the executor moves between the pod and the store (the step never holds the store)."""

    name: str
    path: str
    key: Callable[[RunLayout], str]  # its store key, in the run's layout (may hold Argo expressions)
    optional: bool = False


@dataclass(frozen=True)
class StepSpec:
    """One step of the iteration's DAG.

    ``reads`` and ``writes`` name the ``RunLayout`` keys (by method name) the step reads or
    writes in the store itself (an iteration step's own cost record among them: ``costs``);
    the contract tests hold the step to them.
    """

    name: str
    summary: str
    calls: str  # "module:function": the component function that does the step's work
    run: Callable[..., None]  # the step's body: the flags as keyword arguments
    flags: tuple[Flag, ...]
    inputs: tuple[str, ...] = ("iteration",)
    artifacts_in: tuple[Artifact, ...] = ()
    outputs: tuple[OutputFile, ...] = ()
    output_dir: str | None = None  # where the output files go: the value of the step's --out-dir
    artifacts_out: tuple[Artifact, ...] = ()
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    # Its cost record (pipelines/steps/_costs.py): the flag telling a fanned-out step's runs
    # apart, and for a step without a store the flag of the folder its record goes to.
    cost_part: str | None = None
    cost_dir: str | None = None

    def command(self) -> list[str]:
        """The container's command: every flag the workflow passes, in declaration order."""
        args = [arg for flag in self.flags if flag.value is not None for arg in (flag.option, flag.value)]
        return ["openforge", "step", self.name, *args]

    def component(self) -> Callable[..., object]:
        """The component function, imported only when the step runs (so ``--help`` stays light)."""
        module, _, function = self.calls.partition(":")
        return getattr(importlib.import_module(module), function)

    def output_path(self, name: str) -> str:
        """Where the pod's file for output parameter ``name`` lies."""
        (output,) = (o for o in self.outputs if o.name == name)
        return str(Path(self.output_dir or ".") / output.file)


def iteration_flag(help: str) -> Flag:
    """The ``--iteration K`` every iteration step takes, from the template's input."""
    return Flag("iteration", int, help, value=ITERATION, min=0)
