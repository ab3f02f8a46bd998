"""The iteration's DAG steps, one module each, in the order an iteration runs them.

Each module declares its step's ``SPEC`` (pipelines/steps/_spec.py) and its body. Read
one iteration in order: prepare, serve, rollout, score, train, commit (an evaluation:
report instead of train and commit), and record-status when the workflow ends. With
``algorithm.distillation``, serve-teacher and distill run between score and train. sft is
the one step of `openforge sft`'s own workflow (pipelines/sft_workflow.py).
"""

from __future__ import annotations

from pipelines.steps import (
    commit,
    distill,
    prepare,
    record_status,
    report,
    rollout,
    score,
    serve,
    serve_teacher,
    sft,
    train,
)
from pipelines.steps._spec import StepSpec

STEPS: dict[str, StepSpec] = {
    module.SPEC.name: module.SPEC for module in (
        prepare, serve, rollout, score, serve_teacher, distill, train, commit, report, record_status, sft
    )  # fmt: skip
}

__all__ = ["STEPS", "StepSpec"]
