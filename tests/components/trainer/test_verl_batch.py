"""The recorded batch through veRL's own update path on a CPU.

What the GPU step does to a batch, minus the GPUs: ``update_batch`` (temperature check,
padding to the world size, bypass mode), old log-probs (decoupled mode), veRL's rollout
correction, ``to_tensordict`` + ``left_right_2_no_padding``, then veRL's worker loss
``verl.workers.utils.losses.ppo_loss`` on log-probs computed the way veRL's engine
returns them (packed, one per token, predicting the next one).
"""

from __future__ import annotations

import pytest
import torch
from tests.components.trainer._verl_worker import assign_global_batch_info, packed_log_probs

from components.core.config import ExperimentConfig
from components.trainer.batch import build_batch
from components.trainer.cpu_update import actor_config, policy_loss, response_log_probs
from components.trainer.rows import TemperatureMismatchError
from components.trainer.verl_config import trainer_verl_config
from components.trainer.verl_trainer import PAD_UID, correct_for_rollout, update_batch

LIMITS = {"max_prompt_tokens": 6, "max_response_tokens": 7, "micro_batch_size": 2}


@pytest.fixture
def awkward_batch(call, record, model):
    """Three rows from a group of three: s0 merged from two calls, s1 split in two rows
    (its merged response is over the limit; the second row's prompt holds the first's
    answer), s2 dropped (its prompt is too long). On-policy: the recorded logprobs are the
    model's own, so no token is clipped out of the loss."""
    calls = {
        "t-s0": [call(0, [1, 2, 3], [4, 5]), call(1, [1, 2, 3, 4, 5, 20, 21], [6, 7, 8])],
        "t-s1": [call(0, [1, 2], [6, 7, 8], session="t-s1"), call(1, [1, 2, 6, 7, 8, 30], [9, 10, 11, 12], session="t-s1")],
        "t-s2": [call(0, [1, 2, 3, 4, 5, 6, 7], [6], session="t-s2")],
    }
    records = [record("t-s0", 1.0), record("t-s1", 0.0), record("t-s2", 1.0)]
    data, stats = build_batch(calls, records, ExperimentConfig(name="u", tasks={"source": "t"}, algorithm=LIMITS).algorithm)
    assert (stats.rows, stats.merge_continuations, stats.split_rows, stats.dropped_rows) == (3, 2, 1, 1)
    with torch.no_grad():
        log_prob, _ = response_log_probs(model, data.batch, temperature=1.0)
    data.batch["rollout_log_probs"] = log_prob * data.batch["response_mask"]
    return data


def _verl_config(bypass: bool):
    config = ExperimentConfig(
        name="u",
        tasks={"source": "t"},
        algorithm=LIMITS,
        trainer={"backend": "verl", "rollout_correction": {"bypass_mode": bypass}},
    )
    return trainer_verl_config(config, model_path="/m", output_dir="/o", rows=4)


@pytest.fixture(scope="module", params=[True, False], ids=["bypass", "decoupled"])
def verl_config(request):
    return _verl_config(request.param)


@pytest.fixture
def model(tiny_model_dir):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)


def _prepared(data, verl_config, model, world: int):
    """Our data steps, plus the actor's old log-probs in decoupled mode (a worker's job on GPUs)."""
    batch = update_batch(data, verl_config, world)
    if "old_log_probs" not in batch.batch.keys():
        with torch.no_grad():
            old, _ = response_log_probs(model, batch.batch, temperature=1.0)
        batch.batch["old_log_probs"] = old
    batch, _ = correct_for_rollout(batch, verl_config)
    return batch


def _verl_loss(batch, verl_config, log_probs_values):
    from verl.utils.config import omega_conf_to_dataclass
    from verl.workers.utils.losses import ppo_loss

    packed = batch.packed
    assign_global_batch_info(packed, len(batch.proto))
    nested = torch.nested.nested_tensor_from_jagged(log_probs_values, offsets=packed["input_ids"].offsets())
    config = omega_conf_to_dataclass(verl_config.actor_rollout_ref.actor)
    return ppo_loss(config, {"log_probs": nested}, packed)


class _Packed:
    def __init__(self, proto):
        from verl.workers.utils.padding import left_right_2_no_padding

        self.proto = proto
        self.packed = left_right_2_no_padding(proto.to_tensordict())  # veRL's own conversion


@pytest.mark.parametrize("world", [1, 2])
def test_batch_passes_verls_no_padding_conversion_and_loss_checks(awkward_batch, verl_config, model, world):
    batch = _Packed(_prepared(awkward_batch, verl_config, model, world))
    with torch.no_grad():
        log_probs = packed_log_probs(model, batch.packed)

    loss, metrics = _verl_loss(batch, verl_config, log_probs.values())

    assert len(batch.proto) == 4 if world == 2 else 3
    assert list(batch.proto.non_tensor_batch["uid"]).count(PAD_UID) == (1 if world == 2 else 0)
    assert torch.isfinite(loss) and "actor/pg_loss" in metrics
    lengths = batch.proto.batch["attention_mask"].sum(dim=1)
    assert batch.packed["input_ids"].offsets().diff().tolist() == lengths.tolist()


def test_only_sampled_tokens_get_gradient_through_verls_loss(awkward_batch, verl_config, model):
    from verl.workers.utils.padding import no_padding_2_padding

    batch = _Packed(_prepared(awkward_batch, verl_config, model, world=2))
    with torch.no_grad():
        values = packed_log_probs(model, batch.packed).values().clone()
    values.requires_grad_(True)

    _verl_loss(batch, verl_config, values)[0].backward()

    # Which packed position feeds each response slot, as veRL slices them.
    slot_of = no_padding_2_padding(torch.arange(values.numel(), dtype=torch.float32), batch.packed).long()
    sampled = batch.proto.batch["response_mask"].bool()
    trained = torch.zeros_like(values, dtype=torch.bool)
    trained[slot_of[sampled]] = True
    assert torch.all(values.grad[~trained] == 0)  # prompts, tool output, padding, the padded row
    assert torch.all(values.grad[trained] != 0)


def test_bypass_loss_equals_the_cpu_update_loss_on_the_same_batch(awkward_batch, model):
    verl_config = _verl_config(bypass=True)
    batch = _Packed(_prepared(awkward_batch, verl_config, model, world=1))
    with torch.no_grad():
        verl_loss, _ = _verl_loss(batch, verl_config, packed_log_probs(model, batch.packed).values())
        log_prob, entropy = response_log_probs(model, awkward_batch.batch, temperature=1.0)
        cpu_config = actor_config(ExperimentConfig(name="u", tasks={"source": "t"}, algorithm=LIMITS).algorithm, 3)
        mask = awkward_batch.batch["response_mask"]
        cpu_config.global_batch_info.update(dp_size=1, batch_num_tokens=int(mask.sum()), global_batch_size=3)
        cpu_loss, _ = policy_loss(log_prob, entropy, awkward_batch.batch, cpu_config)

    assert float(verl_loss) == pytest.approx(float(cpu_loss), rel=1e-5, abs=1e-7)


def test_one_optimizer_step_on_verls_loss_lowers_it(awkward_batch, model):
    verl_config = _verl_config(bypass=False)
    batch = _Packed(_prepared(awkward_batch, verl_config, model, world=1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)

    before = _verl_loss(batch, verl_config, packed_log_probs(model, batch.packed).values())[0]
    before.backward()
    optimizer.step()
    with torch.no_grad():
        after = _verl_loss(batch, verl_config, packed_log_probs(model, batch.packed).values())[0]

    assert float(after) < float(before.detach())


def test_a_batch_sampled_at_another_temperature_never_reaches_the_workers(awkward_batch):
    colder = awkward_batch.select(deepcopy=True)
    colder.meta_info["temperature"] = 0.7

    with pytest.raises(TemperatureMismatchError, match=r"0\.7.*1\.0"):
        update_batch(colder, _verl_config(bypass=True), world_size=1)


def test_update_batch_leaves_the_loaded_batch_untouched(awkward_batch, verl_config):
    before = {key: value.clone() for key, value in awkward_batch.batch.items()}

    update_batch(awkward_batch, verl_config, world_size=2)

    assert set(awkward_batch.batch.keys()) == set(before)
    assert all(torch.equal(awkward_batch.batch[key], value) for key, value in before.items())
    assert "openforge_batch_stats" in awkward_batch.meta_info
