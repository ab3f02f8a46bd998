"""The veRL step's export: FSDP actor shards -> veRL's model merger -> a checkpoint the engines load.

Shards written by veRL's real workers (tokenizer and template kept, bf16, loads in the dev
engine) are ``test_verl_workers_cpu.py``. The shards here are made by hand, for what that
run cannot show: logits identical to a known model's (its weights move in the update)
and a LoRA model's adapter.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from components.trainer.verl_export import ExportError, export_checkpoint

PROMPT = torch.tensor([[1, 17, 250, 31, 999, 4, 77, 3000]])


def _bf16_exact(model) -> None:
    # veRL's merger stores bfloat16 (what vLLM serves); weights that are already bfloat16
    # values survive it exactly, so any logit difference would be the export's fault.
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(parameter.to(torch.bfloat16).to(torch.float32))


def _fsdp_actor_dir(model, source: Path, actor: Path, extra: dict | None = None) -> Path:
    """What veRL's FSDP checkpoint manager writes at world size 1 (plain tensors, one rank)."""
    (actor / "huggingface").mkdir(parents=True)
    torch.save(model.state_dict(), actor / "model_world_size_1_rank_0.pt")
    (actor / "fsdp_config.json").write_text(json.dumps({"FSDP_version": 2, "world_size": 1}))
    for path in source.iterdir():
        if path.is_file() and not path.name.endswith(".safetensors"):
            shutil.copy2(path, actor / "huggingface" / path.name)
    for name, content in (extra or {}).items():
        (actor / name).write_text(json.dumps(content))
    return actor


@pytest.fixture(scope="module")
def parent(tmp_path_factory) -> Path:
    from components.engine.tiny_model import init_tiny_model

    return init_tiny_model(tmp_path_factory.mktemp("export") / "v0", seed=3)


@pytest.fixture(scope="module")
def trained(parent, tmp_path_factory):
    """A 'trained' model (bfloat16-exact weights) and the checkpoint exported from its shards."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(parent, dtype=torch.float32).eval()
    _bf16_exact(model)
    work = tmp_path_factory.mktemp("export-work")
    actor = _fsdp_actor_dir(model, parent, work / "actor")
    out = export_checkpoint(actor, parent, work / "v1", {"policy_version": "1", "parent_version": "0"})
    return model, out


def test_exported_checkpoint_loads_in_the_dev_engine_with_identical_logits(trained):
    from components.engine._generation import ModelRunner
    from components.engine.server import policy_version_of

    model, out = trained
    runner = ModelRunner(out, threads=1)
    with torch.no_grad():
        expected = model(input_ids=PROMPT).logits
        served = runner.model(input_ids=PROMPT).logits

    assert torch.equal(served, expected)
    assert policy_version_of(out) == "1"


def test_lora_shards_export_base_weights_and_a_loadable_adapter(parent, tmp_path):
    from peft import LoraConfig, PeftModel, get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(parent, dtype=torch.float32).eval()
    _bf16_exact(base)
    peft_model = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]))
    with torch.no_grad():
        for name, parameter in peft_model.named_parameters():
            if "lora_B" in name:  # B starts at zero; a trained adapter is not
                parameter.copy_(torch.randn_like(parameter) * 0.05)
    _bf16_exact(peft_model)
    meta = {"lora_train_meta.json": {"r": 4, "lora_alpha": 8, "task_type": "CAUSAL_LM"}}
    actor = _fsdp_actor_dir(peft_model, parent, tmp_path / "actor", meta)

    out = export_checkpoint(actor, parent, tmp_path / "v1", {"policy_version": "1"})

    adapter = json.loads((out / "lora_adapter" / "adapter_config.json").read_text())
    assert (adapter["r"], adapter["lora_alpha"], sorted(adapter["target_modules"])) == (4, 8, ["q_proj", "v_proj"])
    reloaded = PeftModel.from_pretrained(
        AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32), out / "lora_adapter"
    ).eval()
    with torch.no_grad():
        assert torch.equal(reloaded(input_ids=PROMPT).logits, peft_model(input_ids=PROMPT).logits)


def test_a_folder_without_fsdp_shards_is_refused_naming_what_is_missing(tmp_path, parent):
    with pytest.raises(ExportError, match="fsdp_config.json"):
        export_checkpoint(tmp_path, parent, tmp_path / "out", {"policy_version": "1"})
