"""`openforge sft` on ``trainer.backend: verl``: veRL's own SFT trainer on our imitation rows.

The rows are the CPU path's (``sft.sft_rows``, the same session split); veRL's
``SFTTrainer`` (FSDP engine, ``verl/trainer/config/sft_trainer_engine.yaml``) trains on
them as they are. They travel as a JSON-lines file (``input_ids``, ``loss_mask``: context
0, completion 1, as ``row_tensors``' response mask) that ``RowsDataset``, named by
``data.custom_cls``, hands over exactly as ``MultiTurnSFTDataset`` does in ``pad_mode:
no_padding``: no chat template is applied again, so veRL sees the student's recorded ids.

veRL's trainer needs ``torch.distributed``, so it runs in child processes (one per rank,
``trainer.n_gpus_per_node`` on one node, rendezvous on 127.0.0.1); ``trainer.device:
cpu`` gives them the CPU platform (``verl_cpu_platform.py``) and gloo. Our settings:

| ours | veRL |
|---|---|
| sft.learning_rate | optim.lr (constant, no warm-up) |
| sft.micro_batch_size (capped at the rows, rounded down to a multiple of the ranks) | data.train_batch_size: rows a step |
| sft.max_epochs | trainer.total_epochs |
| seed | engine.seed |
| trainer.device, n_gpus_per_node, strategy, gradient_checkpointing, max_token_len_per_gpu | the same keys |

``trainer.overrides`` name keys of veRL's PPO config and are not applied here.

What differs from the CPU path, as veRL's trainer does it:

- **The epoch kept is the last**: veRL's trainer saves once, after its last step
  (``hf_model``: a HuggingFace folder), and cannot go back to the epoch with the lowest
  validation loss; the report's ``chosen_epoch`` is the last.
- **Partial batches are dropped** (``drop_last``): each epoch the rows past a whole number
  of batches are left out, different ones each epoch (the sampler reshuffles).
- **Validation** runs after each epoch in batches of the training batch, also with
  ``drop_last``: with fewer held-out rows than one batch veRL would average no batch, so
  then no validation runs and ``val_loss`` is None.
- **Token accuracy** is not among veRL's SFT metrics: ``token_accuracy`` and
  ``val_token_accuracy`` are NaN, not a number made up here.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from components.core.checkpoints import write_checkpoint_info
from components.core.config import ExperimentConfig
from components.core.sft_config import SftConfig
from components.core.trajectory import RecordedCall
from components.trainer.checkpoint import inherit_files, is_inherited
from components.trainer.ray_placement import CPU_WORKER_ENV
from components.trainer.rows import Row
from components.trainer.sft import SftEpoch, SftError, SftReport, sft_rows, split_sessions

SFT_CONFIG_NAME = "sft_trainer_engine"
ROWS_DATASET = ("pkg://components.trainer.verl_sft", "RowsDataset")
HF_MODEL_DIR = "huggingface"  # where veRL's FSDP checkpoint manager writes "hf_model"
_OUTPUT_TAIL = 4000  # characters of a failed rank's output quoted in the error


class RowsDataset:
    """Our rows as ``MultiTurnSFTDataset`` gives them in ``pad_mode: no_padding``; veRL's
    ``create_sft_dataset`` constructs it with this signature (``data.custom_cls``)."""

    def __init__(self, parquet_files: Any, tokenizer: Any, config: Any, processor: Any = None, max_samples: int = -1):
        files = [parquet_files] if isinstance(parquet_files, str) else list(parquet_files)
        rows = [json.loads(line) for name in files for line in Path(name).read_text().splitlines()]
        self.rows = rows[:max_samples] if max_samples > 0 else rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> dict[str, Any]:
        import torch

        row = self.rows[index]
        input_ids = torch.tensor(row["input_ids"], dtype=torch.long)
        return {
            "input_ids": input_ids,
            "position_ids": torch.arange(len(input_ids), dtype=torch.long),
            "loss_mask": torch.tensor(row["loss_mask"], dtype=torch.long),
        }


@dataclass
class VerlSftRun:
    """What veRL's trainer logged and wrote."""

    model_dir: Path  # the last step's HuggingFace folder
    train_losses: list[float]  # train/loss of each optimizer step, measured before the step
    val_losses: dict[int, float]  # epoch -> val/loss after it
    steps_per_epoch: int

    def epochs(self) -> list[SftEpoch]:
        out = []
        for epoch in range(1, len(self.train_losses) // self.steps_per_epoch + 1):
            steps = self.train_losses[(epoch - 1) * self.steps_per_epoch : epoch * self.steps_per_epoch]
            val = self.val_losses.get(epoch)
            record = SftEpoch(epoch=epoch, loss=sum(steps) / len(steps), token_accuracy=math.nan, val_loss=val)
            record.val_token_accuracy = None if val is None else math.nan
            out.append(record)
        return out


def verl_sft_update(
    config: ExperimentConfig, sessions: Mapping[str, Sequence[RecordedCall]], base: Path, work: Path
) -> tuple[SftReport, VerlSftRun]:
    """Fine-tune ``base`` on the sessions with veRL's SFT trainer, in ``work``."""
    sft = config.sft
    if sft is None or not sessions:
        raise SftError("no recorded session to learn from; record some first (openforge eval, or a run's iterations)")
    train_ids, held_ids = split_sessions(list(sessions), sft.held_out, config.seed)
    limits = config.algorithm.row_limits(config.engine.max_model_len)
    train_rows = sft_rows({s: sessions[s] for s in train_ids}, limits)
    held_rows = sft_rows({s: sessions[s] for s in held_ids}, limits)
    if not train_rows:
        raise SftError(f"the {len(train_ids)} training sessions hold no completion to imitate")
    run = run_verl_sft(config, sft, base, (train_rows, held_rows), work)
    report = SftReport(
        sessions=len(sessions),
        held_out_sessions=held_ids,
        rows=len(train_rows),
        target_tokens=sum(sum(r.response_mask) for r in train_rows),
        held_out_tokens=sum(sum(r.response_mask) for r in held_rows),
        epochs=run.epochs(),
        chosen_epoch=sft.max_epochs,
    )
    return report, run


def run_verl_sft(
    config: ExperimentConfig, sft: SftConfig, base: Path, rows: tuple[list[Row], list[Row]], work: Path
) -> VerlSftRun:
    """veRL's SFT trainer on (training, held-out) rows, in child processes; its per-step losses
    and output folder."""
    from omegaconf import OmegaConf

    trainer, (train_rows, held_rows) = config.trainer, rows
    if trainer.nnodes != 1:
        raise SftError(f"SFT with veRL runs on one node, not trainer.nnodes {trainer.nnodes}; set trainer.nnodes: 1")
    world = trainer.n_gpus_per_node
    if len(train_rows) < world:
        raise SftError(
            f"{len(train_rows)} training rows cannot feed {world} ranks; record more or lower trainer.n_gpus_per_node"
        )
    per_rank = max(1, min(sft.micro_batch_size, len(train_rows)) // world)
    validate = len(held_rows) // world >= per_rank
    work.mkdir(parents=True, exist_ok=True)
    train_file, val_file = write_rows(work / "train.jsonl", train_rows), write_rows(work / "val.jsonl", held_rows)
    settings = {
        "model.path": str(base),
        "model.use_remove_padding": True,
        "model.enable_gradient_checkpointing": trainer.gradient_checkpointing,
        "engine.strategy": trainer.strategy,
        "engine.seed": config.seed,
        "optim.lr": sft.learning_rate,
        "optim.lr_warmup_steps_ratio": 0.0,
        "optim.lr_scheduler_type": "constant",
        "data.train_files": str(train_file),
        "data.val_files": str(val_file) if validate else None,
        "data.custom_cls.path": ROWS_DATASET[0],
        "data.custom_cls.name": ROWS_DATASET[1],
        "data.pad_mode": "no_padding",
        "data.train_batch_size": per_rank * world,
        "data.micro_batch_size_per_gpu": per_rank,
        "data.use_dynamic_bsz": False,
        "data.max_token_len_per_gpu": trainer.max_token_len_per_gpu,
        "data.num_workers": 0,
        "checkpoint.save_contents": ["hf_model"],
        "checkpoint.load_contents": ["hf_model"],
        "trainer.default_local_dir": str(work / "checkpoints"),
        "trainer.project_name": config.name,
        "trainer.experiment_name": f"{config.name}-sft",
        "trainer.total_epochs": sft.max_epochs,
        "trainer.logger": ["console", "file"],  # file: the metrics this module reads back
        "trainer.seed": config.seed,
        "trainer.save_freq": -1,  # veRL saves after the last step anyway
        "trainer.test_freq": "after_each_epoch" if validate else -1,
        "trainer.resume_mode": "disable",
        "trainer.device": trainer.device,
        "trainer.nnodes": 1,
        "trainer.n_gpus_per_node": world,
    }
    if trainer.device == "cpu":
        settings["model.override_config.attn_implementation"] = "sdpa"  # flash-attn is a CUDA kernel
    config_file = work / f"{SFT_CONFIG_NAME}.yaml"
    OmegaConf.save(sft_trainer_config(settings), config_file)
    metrics_file = work / "metrics.jsonl"
    _run_ranks(config_file, world, trainer.device, metrics_file, work)
    steps_per_epoch = (len(train_rows) // world) // per_rank
    return _read_run(metrics_file, work / "checkpoints", steps_per_epoch, sft.max_epochs)


def sft_trainer_config(settings: Mapping[str, Any]) -> Any:
    """veRL's packaged ``sft_trainer_engine`` config with ``settings`` (dotted key -> value) set."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf import OmegaConf, open_dict
    from omegaconf.errors import OmegaConfBaseException

    import verl

    try:
        with initialize_config_dir(config_dir=str(Path(verl.__file__).parent / "trainer" / "config"), version_base=None):
            composed = compose(config_name=SFT_CONFIG_NAME)
        with open_dict(composed):
            for key, value in settings.items():
                OmegaConf.update(composed, key, value, force_add=True)
    except (HydraException, OmegaConfBaseException) as exc:
        raise SftError(
            f"veRL's {SFT_CONFIG_NAME}.yaml does not take our settings ({exc}); check the installed veRL version"
        ) from None
    return composed


def export_hf_model(model_dir: Path, parent: Path, out: Path, info: dict[str, Any]) -> Path:
    """Checkpoint ``out``: veRL's weights and config, the parent's tokenizer files byte for byte
    (veRL re-saves the tokenizer, which transformers may rewrite), and ``info``."""
    inherit_files(parent, out)
    for path in sorted(model_dir.iterdir()):
        if path.is_file() and not is_inherited(path.name):
            shutil.copy2(path, out / path.name)
    write_checkpoint_info(out, info)
    return out


def write_rows(path: Path, rows: list[Row]) -> Path:
    """The rows as ``RowsDataset`` reads them: one JSON object a line."""
    with path.open("w") as f:
        for row in rows:
            f.write(json.dumps({"input_ids": row.tokens(), "loss_mask": [0] * len(row.prompt) + row.response_mask}) + "\n")
    return path


def _run_ranks(config_file: Path, world: int, device: str, metrics_file: Path, work: Path) -> None:
    """One child per rank, as torchrun would start them; the first failure stops the others."""
    checkout = str(Path(__file__).resolve().parents[2])  # the children import this checkout's code
    with socket.socket() as probe:  # a free port for the rendezvous, on loopback
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (checkout, os.environ.get("PYTHONPATH")) if p),
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
        "WORLD_SIZE": str(world),
        "VERL_FILE_LOGGER_PATH": str(metrics_file),
    }
    env.setdefault("GLOO_SOCKET_IFNAME", "lo")  # the ranks share this machine: loopback only
    if device == "cpu":
        env |= CPU_WORKER_ENV
    logs = [work / f"rank{rank}.log" for rank in range(world)]
    procs = []
    for rank, log in enumerate(logs):
        with log.open("wb") as out:
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", __name__, str(config_file)],
                    env={**env, "RANK": str(rank), "LOCAL_RANK": str(rank)},
                    stdout=out, stderr=subprocess.STDOUT, cwd=work,
                )
            )  # fmt: skip
    while None in (codes := [p.poll() for p in procs]) and not any(codes):
        time.sleep(0.5)
    failed = next((rank for rank, code in enumerate(codes) if code), None)
    if failed is None:
        return
    for p in procs:
        if p.poll() is None:
            p.terminate()
            p.wait()
    tail = logs[failed].read_text(errors="replace")[-_OUTPUT_TAIL:]
    raise SftError(f"veRL's SFT trainer failed on rank {failed} (exit code {codes[failed]}); the end of its output:\n{tail}")


def _read_run(metrics_file: Path, checkpoints: Path, steps_per_epoch: int, epochs: int) -> VerlSftRun:
    records = [json.loads(line) for line in metrics_file.read_text().splitlines()] if metrics_file.is_file() else []
    train = {r["step"]: float(r["data"]["train/loss"]) for r in records if "train/loss" in r["data"]}
    val = {r["step"] // steps_per_epoch: float(r["data"]["val/loss"]) for r in records if "val/loss" in r["data"]}
    total = steps_per_epoch * epochs
    model_dir = checkpoints / f"global_step_{total}" / HF_MODEL_DIR
    if sorted(train) != list(range(1, total + 1)) or not (model_dir / "config.json").is_file():
        raise SftError(
            f"veRL's SFT trainer finished without logging steps 1..{total} (logged: {sorted(train)}) or without "
            f"{model_dir}: this veRL logs or saves unlike 0.9.1's verl/trainer/sft_trainer.py; install the veRL pinned "
            "in pyproject.toml"
        )
    return VerlSftRun(model_dir, [train[s] for s in sorted(train)], val, steps_per_epoch)


def _train(config_file: str) -> None:
    """A rank's work: veRL's ``run_sft``, with a gloo process group on the CPU platform
    (veRL's initializer asks for ``cpu:gloo,cpu:gloo``, which torch refuses)."""
    import torch.distributed as dist
    from omegaconf import OmegaConf
    from verl.trainer.sft_trainer import SFTTrainer
    from verl.utils.distributed import initialize_global_process_group

    config = OmegaConf.load(config_file)
    if config.trainer.device == "cpu":
        dist.init_process_group(backend="gloo")
    else:
        initialize_global_process_group()
    try:
        SFTTrainer(config=config).fit()
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    _train(sys.argv[1])
