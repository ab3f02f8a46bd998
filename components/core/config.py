"""The experiment config: one YAML file drives the local run and the Argo workflow alike.

Every field is declared once here with its meaning and default. Validation happens at
the edge (``load_config``) and its errors name the field and the fix.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal, get_args
from urllib.parse import urlsplit

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from components.core.algorithm_config import AlgorithmConfig
from components.core.cluster_config import ClusterConfig
from components.core.cluster_fit import cluster_fit_problem
from components.core.sft_config import SftConfig
from components.core.teacher_config import TeacherConfig
from components.core.trainer_config import TrainerConfig
from components.core.validation import describe_errors
from components.core.vllm_config import VllmConfig

_DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class _Section(BaseModel):
    # A misspelled key is the commonest config mistake: refuse it instead of ignoring it.
    model_config = ConfigDict(extra="forbid")


class ModelConfig(_Section):
    path: str | None = Field(None, description="HuggingFace model directory (local path or s3:// prefix).")
    tiny_seed: int | None = Field(
        0, description="Build the tiny CPU model with this seed when `path` is not given."
    )
    tiny_vision: bool = Field(
        False,
        description="Build the tiny vision-language model (Qwen2-VL: a small vision tower that reads screenshots) "
        "instead of the text one, for GUI agents (docs/engine.md and docs/trainer.md, \"Images\").",
    )

    @model_validator(mode="after")
    def _one_source(self) -> "ModelConfig":
        if self.path is None and self.tiny_seed is None:
            raise ValueError("set model.path to a checkpoint, or model.tiny_seed to build the tiny model")
        return self


class EngineConfig(_Section):
    kind: Literal["dev", "vllm"] = Field("dev", description="`dev`: CPU dev engine; `vllm`: vLLM (GPU, or its CPU build: `make vllm`, docs/engine.md).")
    max_model_len: int = Field(32768, gt=0, description="Longest prompt + completion the engine accepts.")
    startup_timeout_s: float = Field(120.0, gt=0, description="How long to wait for the engine to be healthy.")
    dev_unconstrained_json: bool = Field(
        False,
        description="Dev engine only: serve `response_format` json_schema/json_object requests without the "
        "constraint (it cannot constrain decoding; by default they are a 400). For harnesses that ask for JSON "
        "on every call (browser-use) on a CPU run; the tiny model's answers will not parse.",
    )
    dev_mode: Literal["sample", "choice"] = Field(
        "sample",
        description="Dev engine only. `sample`: the model samples freely. `choice`: for tasks that offer candidate "
        "turns (`choices` in task.yaml), the model draws one candidate per turn by its own probability and the "
        "engine answers with that candidate's tokens and logprobs, so a tiny model can act in a real harness and "
        "still learn (docs/engine.md, \"Choice mode\").",
    )
    replicas: int = Field(
        1,
        ge=1,
        le=64,
        description="Serve daemons per iteration, all on the same checkpoint (on a cluster each its own GPU "
        "share). Each rollout's proxy pins a session to one replica by its id, so the session's calls share that "
        "replica's prefix cache; a replica that dies fails its sessions over to the next (docs/engine.md, "
        "'Replicas').",
    )
    restarts: int = Field(
        2,
        ge=0,
        le=10,
        description="engine.kind vllm: times the serve step starts vLLM again after it exits without being told to "
        "(a crash), on the same address, so the rollouts' proxies find it again; their calls meanwhile fail over "
        "to another replica or are retried (docs/engine.md, 'Replicas').",
    )
    vllm: VllmConfig = Field(default_factory=VllmConfig)

    @model_validator(mode="after")
    def _dev_only(self) -> "EngineConfig":
        if self.dev_unconstrained_json and self.kind != "dev":
            raise ValueError(
                "dev_unconstrained_json applies to the dev engine only (vLLM enforces response_format); remove it"
            )
        if self.dev_mode != "sample" and self.kind != "dev":
            raise ValueError(f"dev_mode {self.dev_mode!r} applies to the dev engine only; remove it or set kind: dev")
        return self


# The adapters of components/rollout/harnesses (a test keeps the two lists equal).
HarnessName = Literal["reference", "claude-code", "codex", "openclaw", "mini-swe-agent", "browser-use", "stagehand", "cua-agent"]
# Stagehand's computer-use modes, by the API each speaks (docs/harnesses.md).
StagehandMode = Literal["responses", "messages", "chat"]
_MODES: dict[str, tuple[str, ...]] = {"stagehand": get_args(StagehandMode)}
# Harnesses that take `harness.settings`, and the keys of theirs the adapter sets from other fields.
SETTINGS_RESERVED: dict[str, dict[str, str]] = {
    "mini-swe-agent": {
        "model.": "the proxy serves the model",
        "agent.step_limit": "set harness.max_turns",
        "agent.cost_limit": "the served model has no price",
        "agent.wall_time_limit_seconds": "set rollout.time_limit_s",
    }
}


class HarnessConfig(_Section):
    name: HarnessName = Field(
        "reference", description="Harness adapter; install third-party ones with `openforge harness install NAME`."
    )
    max_turns: int = Field(
        8, gt=0, description="Model calls one rollout may make (Codex and OpenClaw have no such limit: ignored)."
    )
    max_tokens: int = Field(64, gt=0, description="Completion tokens per model call.")
    mode: str | None = Field(
        None,
        description="The harness's API mode, for harnesses that have several. Stagehand: `responses` (OpenAI "
        "Responses computer use, the default), `messages` (Anthropic computer use) or `chat` (chat completions, "
        "Fara-7B style). Unset for every other harness.",
    )

    settings: dict[str, Any] = Field(
        default_factory=dict,
        description="The harness's own config keys, for harnesses that read one (mini-swe-agent: dotted keys of its "
        "YAML config, such as agent.instance_template, each passed as `--config key=value`). The keys the adapter "
        "sets from other fields (turns, time, the model) are refused.",
    )

    @model_validator(mode="after")
    def _settings_this_harness_reads(self) -> "HarnessConfig":
        if not self.settings:
            return self
        reserved = SETTINGS_RESERVED.get(self.name)
        if reserved is None:
            raise ValueError(
                f"harness.settings is set but harness {self.name!r} takes none (only {', '.join(SETTINGS_RESERVED)}): "
                "remove harness.settings"
            )
        for key in self.settings:
            for prefix, why in reserved.items():
                if key == prefix or (prefix.endswith(".") and key.startswith(prefix)):
                    raise ValueError(f"harness.settings may not set {key!r}: {why}")
        return self

    @model_validator(mode="after")
    def _known_mode(self) -> "HarnessConfig":
        if self.mode is None:
            return self
        modes = _MODES.get(self.name)
        if modes is None:
            raise ValueError(f"harness.mode is set but harness {self.name!r} has no modes: remove harness.mode")
        if self.mode not in modes:
            raise ValueError(f"harness.mode {self.mode!r} is not a {self.name} mode; use one of: {', '.join(modes)}")
        return self


class TasksConfig(_Section):
    source: str = Field(description="Task set: a folder of tasks or an s3:// prefix.")
    per_iteration: int | None = Field(
        None, gt=0, description="Tasks sampled per iteration (all tasks when unset)."
    )


class RolloutConfig(_Section):
    samples_per_task: int = Field(4, ge=1, description="GRPO group size: rollouts per task per iteration.")
    concurrency: int = Field(8, ge=1, description="Rollouts running at once.")
    time_limit_s: float = Field(120.0, gt=0, description="Wall-clock limit of one rollout, start-up included.")
    min_usable_fraction: float = Field(
        0.5, ge=0, le=1, description="Stop the iteration instead of training when fewer rollouts are usable."
    )
    infra_retries: int = Field(
        2,
        ge=0,
        le=98,  # attempt k is the proxy route /s/<id>/a/<k>/, k in 1..99
        description="Extra attempts for a rollout that failed on infrastructure (engine or proxy), within its time limit.",
    )
    max_output_mb: float = Field(
        64.0, gt=0, description="Cap on each of the harness's stdout and stderr files; a harness writing more is a harness error."
    )
    tmp_mb: int = Field(
        2048,
        gt=0,
        description="Size of a sandboxed rollout's private /tmp, where its workspace, home and scratch live "
        "(memory-backed); past it writes fail with 'no space left on device' (--runtime sandbox).",
    )
    finish_fraction: float = Field(
        1.0,
        gt=0,
        le=1,
        description="The straggler cut: once this share of an iteration's rollouts has ended and rollout.grace_s has "
        "passed, the rest are stopped and masked with status 'cut' (1: wait for every rollout). Long rollouts are then "
        "under-represented; docs/reliability.md, 'The straggler cut'.",
    )
    grace_s: float = Field(30.0, ge=0, description="The straggler cut's wait after rollout.finish_fraction is reached.")
    seeded_sampling: bool = Field(
        False,
        description="Seed every model call from the experiment seed, the iteration, the rollout and its turn (the proxy's "
        "--sampling-seed), so rerunning an iteration draws the same samples for the same prompts. Costs vLLM some "
        "batching throughput; for debugging, tests and benchmarks.",
    )

    @model_validator(mode="after")
    def _cut_leaves_enough(self) -> "RolloutConfig":
        if self.finish_fraction < self.min_usable_fraction:
            raise ValueError(
                f"rollout.finish_fraction {self.finish_fraction:g} is below rollout.min_usable_fraction "
                f"{self.min_usable_fraction:g}: the straggler cut could mask more rollouts than the train step accepts; "
                "raise finish_fraction or lower min_usable_fraction"
            )
        return self


class StorageConfig(_Section):
    uri: str = Field("file://.openforge/runs", description="Artifact root: file://PATH or s3://BUCKET/PREFIX.")
    endpoint_url: str | None = Field(None, description="S3 endpoint (MinIO, moto, ...); AWS when unset.")

    @field_validator("uri")
    @classmethod
    def _scheme(cls, value: str) -> str:
        if not value.startswith(("file://", "s3://")):
            raise ValueError(f"storage.uri {value!r} must start with file:// or s3://")
        return value.rstrip("/")


class TrackingConfig(_Section):
    uri: str = Field("sqlite:///.openforge/mlflow.db", description="MLflow tracking URI.")
    experiment: str | None = Field(None, description="MLflow experiment name (defaults to the config's name).")
    viewer_url: str = Field(
        "http://127.0.0.1:8585",
        description="Where `openforge view CONFIG` serves (its default address) and what the links the commit step "
        "leaves in MLflow point at.",
    )
    ui_url: str | None = Field(
        None,
        description="Where MLflow's UI shows this store, for the viewer's links to MLflow runs; unset: the tracking "
        "URI when it is a server, else `mlflow ui`'s default http://127.0.0.1:5000.",
    )

    @field_validator("viewer_url", "ui_url")
    @classmethod
    def _http(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and not (value.startswith(("http://", "https://")) and urlsplit(value).port is not None):
            raise ValueError(f"tracking.{info.field_name} {value!r} must be http(s)://HOST:PORT, e.g. http://127.0.0.1:8585")
        return value.rstrip("/") if value else value


CheckpointChoice = Literal["base", "latest"]


class EvaluationConfig(_Section):
    """Set by `openforge eval` only: turns the iteration's steps into an evaluation (no training).

    Its presence is what the steps read: prepare ignores the run's state, serve serves the
    chosen policy without committing anything, and every key goes under
    ``<name>/evals/<id>/`` (components/core/storage.py, docs/operations.md).
    """

    id: str = Field(description="Names the evaluation's folder `<name>/evals/<id>/`; reusing an id resumes it.")
    checkpoint: CheckpointChoice | int = Field(
        "latest",
        description="`base`: the configured model (model.path, or the tiny model); `latest`: the run's newest "
        "committed checkpoint; a number: that committed checkpoint version.",
    )

    recording: bool = Field(
        False, description="Set by `openforge record`: the config's `teacher` answers instead of the policy."
    )

    @field_validator("id")
    @classmethod
    def _label(cls, value: str) -> str:
        if len(value) > 40 or not _DNS1123.match(value):
            raise ValueError(
                f"evaluation.id {value!r} must be lower-case letters, digits and '-', at most 40 characters "
                "(it names a folder and an MLflow run)"
            )
        return value

    @field_validator("checkpoint")
    @classmethod
    def _version(cls, value: str | int) -> str | int:
        if isinstance(value, int) and value < 0:
            raise ValueError(f"evaluation.checkpoint {value} must be a version >= 0, 'base' or 'latest'")
        return value


class ExperimentConfig(_Section):
    name: str = Field(description="Run name: lower-case letters, digits and '-', at most 40 characters.")
    seed: int = Field(0, description="Seeds task sampling, the tiny model and the trainer.")
    iterations: int = Field(3, ge=1, description="RL iterations `openforge run` performs.")
    model: ModelConfig = Field(default_factory=ModelConfig)
    engine: EngineConfig = Field(default_factory=EngineConfig)
    harness: HarnessConfig = Field(default_factory=HarnessConfig)
    tasks: TasksConfig
    rollout: RolloutConfig = Field(default_factory=RolloutConfig)
    algorithm: AlgorithmConfig = Field(default_factory=AlgorithmConfig)
    trainer: TrainerConfig = Field(default_factory=TrainerConfig)
    storage: StorageConfig = Field(default_factory=StorageConfig)
    tracking: TrackingConfig = Field(default_factory=TrackingConfig)
    cluster: ClusterConfig = Field(default_factory=ClusterConfig)
    evaluation: EvaluationConfig | None = Field(
        None, description="Set by `openforge eval` on the config its workflow receives; leave unset in a YAML file."
    )
    sft: SftConfig | None = Field(None, description="`openforge sft`: fine-tune on recorded sessions before RL.")
    teacher: TeacherConfig | None = Field(None, description="`openforge record`: the teacher recorded through the harness.")

    @field_validator("name")
    @classmethod
    def _dns_name(cls, value: str) -> str:
        # The name becomes part of Argo object names (DNS-1123, <= 63 with suffixes).
        if len(value) > 40 or not _DNS1123.match(value):
            raise ValueError(
                f"name {value!r} must be lower-case letters, digits and '-', start and end with a "
                "letter or digit, at most 40 characters (it names Argo objects)"
            )
        return value

    @model_validator(mode="after")
    def _images_resolve(self) -> "ExperimentConfig":
        # Fails at load time, not at compile time, when an image cannot be derived (a digest).
        self.cluster.train_image(self.trainer.backend)
        self.cluster.harness_image(self.harness.name)
        return self

    @model_validator(mode="after")
    def _fits_the_cluster(self) -> "ExperimentConfig":
        problem = cluster_fit_problem(self)
        if problem:
            raise ValueError(problem)
        return self

    @model_validator(mode="after")
    def _row_limits_fit_the_engine(self) -> "ExperimentConfig":
        # A limit above the context length never binds: it would promise rows the engine cannot serve.
        context = self.engine.max_model_len
        for name in ("max_prompt_tokens", "max_response_tokens"):
            value = getattr(self.algorithm, name)
            if value is not None and value > context:
                raise ValueError(
                    f"algorithm.{name} {value} exceeds engine.max_model_len {context}: no call the engine serves "
                    f"is that long. Remove algorithm.{name} (it then follows engine.max_model_len) or raise "
                    "engine.max_model_len"
                )
        return self

    @property
    def recording_teacher(self) -> TeacherConfig | None:
        """The teacher that answers this config's rollouts: set in a recording (`openforge record`) only."""
        return self.teacher if self.evaluation is not None and self.evaluation.recording else None

    @property
    def plays_reference(self) -> bool:
        """A recording whose teacher is the dev engine playing the tasks' reference turns."""
        return self.recording_teacher is not None and self.recording_teacher.kind == "reference"

    @property
    def endpoint_teacher(self) -> TeacherConfig | None:
        """A recording's endpoint teacher: the rollouts' proxies call it, and no serve step runs."""
        teacher = self.recording_teacher
        return teacher if teacher is not None and teacher.kind == "endpoint" else None

    @property
    def served_teacher(self) -> TeacherConfig | None:
        """A recording's checkpoint teacher: its serve step serves ``teacher.path``, which the proxies record as text."""
        teacher = self.recording_teacher
        return teacher if teacher is not None and teacher.kind == "checkpoint" else None

    @property
    def serves_a_book(self) -> bool:
        """The dev engine plays a book the prepare step writes: choice mode, or a reference teacher."""
        return self.engine.dev_mode == "choice" or self.plays_reference

    @model_validator(mode="after")
    def _recording_has_a_teacher(self) -> "ExperimentConfig":
        if self.evaluation is not None and self.evaluation.recording and self.teacher is None:
            raise ValueError("a recording needs a `teacher:` section (kind reference, endpoint or checkpoint; docs/trainer.md)")
        if self.plays_reference and self.engine.kind != "dev":
            raise ValueError("teacher.kind reference is played by the dev engine: record with engine.kind dev")
        return self

    @model_validator(mode="after")
    def _lora_is_served(self) -> "ExperimentConfig":
        # A LoRA policy exists only as base + adapter: only vLLM can serve it as trained.
        lora = self.trainer.lora
        if lora.enabled and self.engine.kind != "vllm":
            raise ValueError("trainer.lora.rank > 0 needs engine.kind 'vllm' (the dev engine cannot load adapters)")
        if lora.rank > self.engine.vllm.max_lora_rank:
            raise ValueError(
                f"trainer.lora.rank {lora.rank} exceeds engine.vllm.max_lora_rank {self.engine.vllm.max_lora_rank}; raise the latter"
            )
        return self


class ConfigError(ValueError):
    """A config file that cannot be used; the message names the file, the field and the fix."""


def _format(path: Path, exc: ValidationError) -> str:
    problems = describe_errors(exc, "misspelled? see components/core/config.py and its *_config.py sections for the fields")
    return "\n".join([f"{path}: invalid experiment config", *(f"  {field}: {msg}" for field, msg in problems)])


def load_config(path: str | Path) -> ExperimentConfig:
    """Read and validate an experiment YAML; relative file:// and task paths stay relative to the CWD."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    return config_from_text(text, str(path))


CONFIG_ENV = "OPENFORGE_CONFIG_YAML"


def config_from_text(text: str, origin: str = CONFIG_ENV) -> ExperimentConfig:
    """Validate config YAML given as text (how workflow steps receive it)."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{origin}: not valid YAML ({exc})") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{origin}: the top level must be a mapping of fields")
    try:
        return ExperimentConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(_format(Path(origin), exc)) from None


def config_from_env() -> ExperimentConfig:
    """The config a workflow step receives as YAML text in ``OPENFORGE_CONFIG_YAML``."""
    import os

    text = os.environ.get(CONFIG_ENV)
    if not text:
        raise ConfigError(f"{CONFIG_ENV} is not set: put the experiment config YAML in it (the workflow does)")
    return config_from_text(text)



def config_for_step() -> ExperimentConfig:
    """A step CLI's config from its environment; a bad one is a usage error naming the problem."""
    import typer

    try:
        return config_from_env()
    except ConfigError as exc:
        raise typer.BadParameter(str(exc)) from None
