"""On-policy distillation across two steps: distill scores the batch with the teacher, train applies it.

The distill step runs in the iteration's ``teach`` sub-DAG beside the teacher's serve daemon
(pipelines/iteration.py), after score and before train. It builds the iteration's batch
exactly as train will (``step.iteration_batch``), has the teacher score every row's
response tokens (``distillation.teacher_log_probs_of_batch``) and stores them, with the
rows they belong to, under ``RunLayout.teacher_log_probs``. The train step, which runs
when the teacher has been stopped and its GPU freed, reads them back, checks that they
are its own batch's rows, and adds the teacher's term to the advantages
(``distillation.apply_distillation``).
"""

from __future__ import annotations

import io
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from components.core.config import ExperimentConfig
from components.core.storage import ArtifactStore, RunLayout, open_store
from components.trainer.distillation import (
    DistillationError,
    apply_distillation,
    check_same_tokenizer,
    teacher_log_probs_of_batch,
)

# Tokenizer and config files; a teacher's weights are never fetched just to read its vocabulary.
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".msgpack", ".h5")


def score_with_teacher(config: ExperimentConfig, iteration: int, store: ArtifactStore, teacher_address: str) -> dict[str, int]:
    """The distill step: the teacher at ``teacher_address`` (host:port) scores iteration ``iteration``'s
    batch; stores the scores and returns their counts. Idempotent: stored scores are not redone."""
    import torch

    from components.trainer.step import iteration_batch

    distillation = _distillation(config)
    key = RunLayout(config.name).teacher_log_probs(iteration)
    if store.exists(key):
        return _counts(torch.load(io.BytesIO(store.get_bytes(key)), weights_only=False))
    with tempfile.TemporaryDirectory(prefix="openforge-distill-") as tmp:
        work = Path(tmp)
        built = iteration_batch(config, iteration, store, work)
        check_same_tokenizer(work / "base", _teacher_tokenizer(config, distillation.teacher_model, work / "teacher"))
        batch = built.data.batch
        rows = len(built.data)
        scores = (
            teacher_log_probs_of_batch(built.data, f"http://{teacher_address}", config.engine.vllm.served_model_name)
            if rows
            else torch.zeros(0, 0)
        )
        record = {
            "rollout_id": list(built.data.non_tensor_batch["rollout_id"]) if rows else [],
            "responses": batch["responses"] if rows else torch.zeros(0, 0, dtype=torch.long),
            "teacher_log_probs": scores,
            "sampled_tokens": int(batch["response_mask"].sum()) if rows else 0,
        }
    buffer = io.BytesIO()
    torch.save(record, buffer)
    store.put_bytes(key, buffer.getvalue())
    return _counts(record)


def add_teacher_term(config: ExperimentConfig, iteration: int, store: ArtifactStore, data: Any) -> dict[str, float]:
    """The train step's half: the stored scores of this very batch, added to its advantages."""
    import torch

    key = RunLayout(config.name).teacher_log_probs(iteration)
    if not store.exists(key):
        raise DistillationError(
            f"algorithm.distillation is set but {store.root}/{key} does not exist: the distill step (in the "
            "iteration's teach sub-DAG) scores the batch with the teacher before train; run it first"
        )
    record = torch.load(io.BytesIO(store.get_bytes(key)), weights_only=False)
    ids = list(data.non_tensor_batch["rollout_id"])
    responses = data.batch["responses"]
    if record["rollout_id"] != ids or tuple(record["responses"].shape) != tuple(responses.shape) or not torch.equal(
        record["responses"], responses
    ):
        raise DistillationError(
            f"the teacher's scores in {store.root}/{key} are of other rows than this batch's ({len(record['rollout_id'])} "
            f"scored rows, {len(ids)} in the batch): the batch changed after distill ran; delete that key and rerun "
            "the iteration's teach sub-DAG"
        )
    metrics = apply_distillation(data, record["teacher_log_probs"], _distillation(config))
    metrics["batch/teacher_scored_tokens"] = float(data.batch["response_mask"].sum())
    return metrics


def _distillation(config: ExperimentConfig):
    if config.algorithm.distillation is None:
        raise DistillationError("the distill step needs algorithm.distillation in the config (docs/trainer.md)")
    return config.algorithm.distillation


def _counts(record: dict[str, Any]) -> dict[str, int]:
    return {"rows": len(record["rollout_id"]), "sampled_tokens": record["sampled_tokens"]}


def _teacher_tokenizer(config: ExperimentConfig, teacher: str, dest: Path) -> Path:
    """A folder holding the teacher's tokenizer: its own folder, or the non-weight files of its s3:// prefix."""
    if not teacher.startswith("s3://"):
        if not Path(teacher).is_dir():
            raise DistillationError(
                f"algorithm.distillation.teacher_model {teacher!r} is not a directory; point it at a HuggingFace "
                "model folder or an s3:// prefix holding one"
            )
        return Path(teacher)
    parsed = urlparse(teacher)
    source, prefix = open_store(f"s3://{parsed.netloc}", config.storage.endpoint_url), parsed.path.strip("/")
    found = [key for key in source.list(prefix) if not key.endswith(_WEIGHT_SUFFIXES)]
    if not found:
        raise DistillationError(f"algorithm.distillation.teacher_model {teacher!r} holds no files")
    for key in found:
        target = dest / key.removeprefix(prefix).lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(source.get_bytes(key))
    return dest
