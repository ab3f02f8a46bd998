"""`openforge sft`'s work: the recorded sessions from the store, the fine-tuning, the checkpoint.

It reads the recordings of the run (or evaluation) that ``sft.recordings`` names, in this
config's store; keeps the sessions ``sft.keep`` asks for; fine-tunes the config's model
(``model.path`` or the tiny one) on them (``sft.sft_update``; on ``trainer.backend: verl``,
veRL's own SFT trainer, ``verl_sft.verl_sft_update``); and commits the result under
``<name>/sft/checkpoint`` with its report beside it. A later RL config starts from it with
``model.path`` (the command prints the value). Idempotent: a committed result is not redone.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from pathlib import Path

from pydantic import ValidationError

from components.core.config import ExperimentConfig
from components.core.outcome import Outcome
from components.core.rollout_identity import trajectory_file
from components.core.storage import ArtifactStore, LocalStore, RunLayout, put_dir
from components.core.trajectory import RecordedCall, TrajectoryError, latest_attempt, read_session
from components.reward.scoring import GRADED_STATUSES, judged_attempt
from components.trainer.sft import SftError, SftReport, held_out_shortfall, sft_update
from components.trainer.text_calls import TextCallError, with_student_tokens


def sft_policy_path(store: ArtifactStore, layout: RunLayout) -> str:
    """The ``model.path`` value that names the fine-tuned policy in ``store``."""
    key = layout.sft_checkpoint()
    return str(store.root_path / key) if isinstance(store, LocalStore) else f"{store.root}/{key}"


def recorded_sessions(config: ExperimentConfig, store: ArtifactStore) -> tuple[dict[str, list[RecordedCall]], Counter[str]]:
    """The sessions to learn from, keyed ``<iteration>/<rollout id>``, and what was left out, by reason."""
    sft = _section(config)
    source = RunLayout(sft.recordings, sft.evaluation)
    iterations = sft.iterations if sft.iterations is not None else _recorded_iterations(store, source)
    sessions: dict[str, list[RecordedCall]] = {}
    left_out: Counter[str] = Counter()
    with tempfile.TemporaryDirectory(prefix="openforge-sft-") as scratch:
        for iteration in iterations:
            for key in store.list(source.outcomes(iteration)):
                outcome = _outcome(store, key, left_out)
                if outcome is None:
                    continue
                if outcome.status not in GRADED_STATUSES:
                    left_out[f"status {outcome.status.value}"] += 1
                elif sft.keep == "passed" and not outcome.passed:
                    left_out["not passed"] += 1
                else:
                    calls = _calls(store, source, iteration, outcome, Path(scratch), left_out)
                    if calls:
                        sessions[f"{iteration}/{outcome.rollout_id}"] = calls
    if not sessions:
        where = f"{store.root}/{source.outcomes('K')}"
        found = ", ".join(f"{reason}: {n}" for reason, n in sorted(left_out.items())) or "no outcome at all"
        raise SftError(
            f"no session to learn from under {where} for iterations {list(iterations)} ({found}); record the "
            f"run {sft.recordings!r} first, or set sft.keep: all to learn from failed sessions too"
        )
    return sessions, left_out


def sft_from_store(config: ExperimentConfig, store: ArtifactStore) -> tuple[SftReport, bool]:
    """Fine-tune and commit; returns the report and whether it was already committed (nothing redone)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from components.engine.step import initial_policy
    from components.trainer.checkpoint import save_checkpoint
    from components.trainer.verl_sft import export_hf_model, verl_sft_update

    layout = RunLayout(config.name)
    if store.exists(layout.sft_marker()) and store.exists(layout.sft_report()):
        return SftReport.model_validate_json(store.get_bytes(layout.sft_report())), True
    sft = _section(config)
    sessions, left_out = recorded_sessions(config, store)
    if config.model.tiny_vision:
        raise SftError("SFT of a vision-language policy is not supported yet: its rows need their images")
    with tempfile.TemporaryDirectory(prefix="openforge-sft-") as tmp:
        base, out = Path(tmp) / "base", Path(tmp) / "sft"
        initial_policy(config, base)
        tokenizer = AutoTokenizer.from_pretrained(base)
        try:  # a teacher's text-only calls get the student's own token ids
            sessions = {key: [with_student_tokens(c, tokenizer) for c in calls] for key, calls in sessions.items()}
        except TextCallError as exc:
            raise SftError(str(exc)) from None
        info = {"policy_version": "sft", "iteration": None, "source": f"sft of {sft.recordings}"}
        if config.trainer.backend == "verl":
            report, run = verl_sft_update(config, sessions, base, Path(tmp) / "verl")
            export_hf_model(run.model_dir, base, out, info | {"epoch": report.chosen_epoch})
        else:
            model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
            pad = AutoConfig.from_pretrained(base).pad_token_id
            settings = config.algorithm.model_copy(
                update={"learning_rate": sft.learning_rate, "micro_batch_size": sft.micro_batch_size}
            )
            report = sft_update(
                model, sessions, settings, max_epochs=sft.max_epochs, held_out=sft.held_out, seed=config.seed,
                pad_token_id=pad if pad is not None else 0, max_model_len=config.engine.max_model_len,
                on_epoch=lambda e: print(f"sft epoch {e.epoch}/{sft.max_epochs}: {e.summary()}", flush=True),
            )  # fmt: skip
            save_checkpoint(model, base, out, info | {"epoch": report.chosen_epoch})
        report.left_out = dict(left_out)
        shortfall = held_out_shortfall(report.sessions, len(report.held_out_sessions), sft.held_out)
        if shortfall:
            print(f"warning: {shortfall}", flush=True)
        put_dir(store, layout.sft_checkpoint(), out)
    # json.dumps, not model_dump_json: veRL's report has NaN token accuracies, which pydantic
    # would write as null and then refuse to read back; NaN reads back as NaN.
    store.put_bytes(layout.sft_report(), json.dumps(report.model_dump(), indent=2).encode())
    store.put_bytes(layout.sft_marker(), b"sft\n")  # last: what marks it done
    return report, False


def _section(config: ExperimentConfig):
    if config.sft is None:
        raise SftError(
            "the config has no `sft:` section; add one naming the run whose recordings to learn from "
            "(sft: {recordings: <run name>}, docs/trainer.md)"
        )
    return config.sft


def _recorded_iterations(store: ArtifactStore, source: RunLayout) -> list[int]:
    folder = source.outcomes(0).rsplit("/iterations/", 1)[0] + "/iterations"
    return sorted(int(name) for name in store.children(folder) if name.isdigit())


def _outcome(store: ArtifactStore, key: str, left_out: Counter[str]) -> Outcome | None:
    try:
        return Outcome.model_validate_json(store.get_bytes(key))
    except ValidationError:
        left_out["unreadable outcome"] += 1
        return None


def _calls(
    store: ArtifactStore, source: RunLayout, iteration: int, outcome: Outcome, scratch: Path, left_out: Counter[str]
) -> list[RecordedCall]:
    key = source.trajectory(iteration, outcome.rollout_id)
    if not store.exists(key):
        left_out["no trajectory"] += 1
        return []
    path = scratch / f"{iteration}-{trajectory_file(outcome.rollout_id)}"
    path.write_bytes(store.get_bytes(key))
    try:
        calls = latest_attempt(read_session(path), judged_attempt(outcome))
    except TrajectoryError:
        left_out["unreadable trajectory"] += 1
        return []
    answered = [
        call for call in calls
        if (call.ok and call.prompt_token_ids or call.text_only and call.upstream_status == 200 and call.error is None)
        and not call.tags.get("side_call")
    ]  # fmt: skip
    if not answered:
        left_out["no usable call"] += 1
    return answered
