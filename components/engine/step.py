"""The serve step's work: put the policy for iteration k on disk and serve it.

Iteration k serves the newest committed checkpoint <= k, or <= k - 1 with overlapped
iterations (``algorithm.max_staleness: 1``: its rollouts run while iteration k - 1 still
trains checkpoint k; ``AlgorithmConfig.sampled_version``); an evaluation serves the one it
names (``evaluation.checkpoint``) and commits nothing. The first iteration of a run
finds none and commits the initial policy (the configured model, or the tiny model
built from its seed) as version 0, so training and every later step read policies from
one place, and a run can be traced back to exactly the weights it started from.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import urlparse

from components.core.checkpoints import commit_checkpoint, committed_versions, fetch_committed, write_checkpoint_info
from components.core.config import ExperimentConfig
from components.core.storage import ArtifactStore, RunLayout, get_dir, open_store, run_layout
from components.engine.cut_watch import CutWatch


def initial_policy(config: ExperimentConfig, dest: Path) -> None:
    path = config.model.path
    if path is None and config.model.tiny_vision:
        from components.engine.tiny_vl_model import init_tiny_vl_model

        init_tiny_vl_model(dest, seed=config.model.tiny_seed)
    elif path is None:
        from components.engine.tiny_model import init_tiny_model

        init_tiny_model(dest, seed=config.model.tiny_seed)
    else:
        fetch_model(config, path, dest, "model.path")
    write_checkpoint_info(dest, {"policy_version": "0", "iteration": None, "source": path or ("tiny-vl" if config.model.tiny_vision else "tiny")})


def fetch_model(config: ExperimentConfig, path: str, dest: Path, field: str) -> None:
    """The HuggingFace folder at ``path`` (a local folder or an s3:// prefix) into ``dest``; ``field`` names
    the config field that gave it, for the error."""
    if path.startswith("s3://"):
        parsed = urlparse(path)
        source = open_store(f"s3://{parsed.netloc}", config.storage.endpoint_url)
        if not get_dir(source, parsed.path.strip("/"), dest):
            raise FileNotFoundError(f"{field} {path!r} holds no files; point it at a HuggingFace model folder")
    elif Path(path).is_dir():
        shutil.copytree(path, dest)
    else:
        raise FileNotFoundError(f"{field} {path!r} is not a directory; point it at a HuggingFace model folder")


def prepare_policy(config: ExperimentConfig, iteration: int, store: ArtifactStore, dest: Path) -> int:
    """Fetch the checkpoint iteration ``iteration`` serves into ``dest``; returns its version."""
    layout = run_layout(config)
    if config.evaluation is not None:
        return _evaluated_policy(config, store, layout, dest)
    version = fetch_committed(store, layout, config.algorithm.sampled_version(iteration), dest)
    if version is not None:
        return version
    if config.sft is not None:
        _fine_tuned_policy(config, store, dest)
    else:
        initial_policy(config, dest)
    commit_checkpoint(store, layout, 0, dest)
    return 0


def _fine_tuned_policy(config: ExperimentConfig, store: ArtifactStore, dest: Path) -> None:
    """The cold start: a config with an `sft:` section begins RL where `openforge sft` left off."""
    sft = RunLayout(config.name)
    if not store.exists(sft.sft_marker()):
        raise FileNotFoundError(
            f"the config has an `sft:` section but {store.root}/{sft.sft_checkpoint()} is not committed: run "
            "`openforge sft CONFIG` first, or remove `sft:` to start from the configured model"
        )
    get_dir(store, sft.sft_checkpoint(), dest)
    (dest / Path(sft.sft_marker()).name).unlink(missing_ok=True)  # commit_checkpoint writes version 0's own, last
    write_checkpoint_info(dest, {"policy_version": "0", "iteration": None, "source": f"{store.root}/{sft.sft_checkpoint()}"})


def _evaluated_policy(config: ExperimentConfig, store: ArtifactStore, layout: RunLayout, dest: Path) -> int:
    """The policy an evaluation asked for, in ``dest``; commits nothing, records what it served."""
    choice = config.evaluation.checkpoint
    if choice == "base":
        initial_policy(config, dest)
        version, source = 0, config.model.path or f"tiny model (seed {config.model.tiny_seed})"
    else:
        versions = committed_versions(store, layout)
        wanted = versions[-1] if choice == "latest" and versions else choice
        if wanted not in versions:
            have = ", ".join(map(str, versions)) or "none"
            raise FileNotFoundError(
                f"checkpoint {choice!r} of {config.name!r} is not committed in {store.root} (committed: {have}); "
                "train first (`openforge run`) or evaluate --checkpoint base"
            )
        fetch_committed(store, layout, wanted, dest)
        version, source = wanted, f"{store.root}/{layout.checkpoint(wanted)}"
    record = {"requested": choice, "version": version, "source": source}
    store.put_bytes(layout.evaluated_checkpoint(), json.dumps(record, indent=2).encode())
    return version


def serve_iteration(
    config: ExperimentConfig, iteration: int, store: ArtifactStore, host: str, port: int, say: Callable[[str], None] = print
) -> int:
    """Serve the checkpoint iteration ``iteration`` serves until stopped; returns the engine's exit code.

    A missing checkpoint or choice book raises FileNotFoundError, vLLM that never became
    ready raises EngineNotReady: both name what to run first.
    """
    with tempfile.TemporaryDirectory(prefix="openforge-policy-") as tmp, ExitStack() as watching:
        policy = Path(tmp) / "policy"
        version = prepare_policy(config, iteration, store, policy)
        say(f"serving checkpoint {version} for iteration {iteration} ({config.engine.kind})")
        cut_file = None
        # An evaluation measures every rollout to its end: a cut would bias it toward short ones.
        if config.rollout.finish_fraction < 1 and config.evaluation is None:
            cut_file = Path(tmp) / "straggler_cut.json"
            watching.enter_context(CutWatch(config, iteration, store, cut_file, say=say))
        engine = config.engine
        if engine.kind == "dev":
            from components.engine.server import chat_parsers, serve

            serve(
                policy,
                # The name vLLM serves too: one name on every replica, so a session that fails over
                # to another replica still names a model it serves.
                served_model_name=engine.vllm.served_model_name,
                host=host,
                port=port,
                max_model_len=engine.max_model_len,
                unconstrained_json=engine.dev_unconstrained_json,
                choices=_choice_book(config, iteration, store, Path(tmp)) if config.serves_a_book else None,
                parsers=chat_parsers(engine.vllm.tool_call_parser, engine.vllm.reasoning_parser),
                cut_file=cut_file,
            )
            return 0
        from components.engine.vllm_serve import serve_vllm

        code = serve_vllm(config, policy, Path(tmp), host=host, port=port, cut_file=cut_file)
        # A vLLM stopped by the signal Argo sends the daemon exits by that signal: not a failure.
        return code if code > 0 else 0


def serve_teacher(
    config: ExperimentConfig, iteration: int, store: ArtifactStore, host: str, port: int, say: Callable[[str], None] = print
) -> int:
    """Serve ``algorithm.distillation.teacher_model`` until stopped, for the distill step's prompt
    log-probs; the same engine (``engine.kind``) and served name as the policy's. Returns its exit code."""
    distillation = config.algorithm.distillation
    if distillation is None:
        raise FileNotFoundError("serve-teacher needs algorithm.distillation.teacher_model in the config (docs/trainer.md)")
    with tempfile.TemporaryDirectory(prefix="openforge-teacher-") as tmp:
        teacher = Path(tmp) / "teacher"
        fetch_model(config, distillation.teacher_model, teacher, "algorithm.distillation.teacher_model")
        say(f"serving the teacher {distillation.teacher_model} for iteration {iteration} ({config.engine.kind})")
        if config.engine.kind == "dev":
            from components.engine.server import serve

            serve(teacher, served_model_name=config.engine.vllm.served_model_name, host=host, port=port,
                  max_model_len=config.engine.max_model_len)  # fmt: skip
            return 0
        from components.engine.vllm_serve import serve_vllm

        code = serve_vllm(config, teacher, Path(tmp), host=host, port=port, cut_file=None)
        return code if code > 0 else 0


def _choice_book(config: ExperimentConfig, iteration: int, store: ArtifactStore, tmp: Path) -> Path:
    """The book the prepare step wrote for this iteration, as a file for the engine."""
    key = run_layout(config).choices(iteration)
    if not store.exists(key):
        raise FileNotFoundError(
            f"the engine plays a book (choice mode or a reference teacher) but {store.root}/{key} does not exist; "
            "the prepare step writes it: run prepare for this iteration first"
        )
    path = tmp / "choices.json"
    path.write_bytes(store.get_bytes(key))
    return path
