"""The `teacher:` section: each kind takes its own fields, and the key's name keeps it out of the harness's reach."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from components.core.config import ConfigError, ExperimentConfig
from components.core.teacher_config import TeacherConfig


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"kind": "endpoint", "url": "http://h:1/v1"}, "needs teacher.url and teacher.model"),
        ({"kind": "endpoint", "url": "h:1", "model": "m"}, "must start with http:// or https://"),
        ({"kind": "endpoint", "url": "http://h:1", "model": "m", "error_rate": 0.1}, "error_rate applies to kind reference only"),
        ({"kind": "reference", "model": "m"}, "remove teacher.model"),
        ({"kind": "endpoint", "url": "http://h:1", "model": "m", "api_key_env": "OPENFORGE_KEY"}, "reach every container"),
        ({"kind": "endpoint", "url": "http://h:1", "model": "m", "api_key_env": "MY-KEY"}, "environment variable's name"),
        ({"kind": "reference", "error_rate": 1.5}, "less than or equal to 1"),
        ({"kind": "reference", "api": "messages"}, "remove teacher.api"),
        ({"kind": "endpoint", "url": "http://h:1", "model": "m", "api": "responses"}, "'chat' or 'messages'"),
        ({"kind": "reference", "usd_per_million_tokens": {"prompt": 1, "completion": 2}}, "remove teacher.usd_per_million_tokens"),
        ({"kind": "endpoint", "url": "http://h:1", "model": "m", "usd_per_million_tokens": {"prompt": -1, "completion": 2}},
         "greater than or equal to 0"),
        ({"kind": "checkpoint"}, "needs teacher.path"),
        ({"kind": "checkpoint", "path": "/m", "url": "http://h:1"}, "is served by the recording itself: remove teacher.url"),
        ({"kind": "checkpoint", "path": "/m", "error_rate": 0.2}, "error_rate applies to kind reference only"),
        ({"kind": "reference", "path": "/m"}, "kind reference has none: remove it"),
        ({"kind": "endpoint", "url": "http://h:1", "model": "m", "path": "/m"}, "kind endpoint has none: remove it"),
    ],
)
def test_a_teacher_takes_the_fields_of_its_kind(fields: dict, problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        TeacherConfig.model_validate(fields)


def test_a_recording_needs_a_teacher_and_a_reference_teacher_the_dev_engine() -> None:
    raw = {"name": "r", "tasks": {"source": "x"}, "evaluation": {"id": "e", "checkpoint": "base", "recording": True}}
    with pytest.raises(ValidationError, match="a recording needs a `teacher:` section"):
        ExperimentConfig.model_validate(raw)
    with pytest.raises(ValidationError, match="played by the dev engine"):
        ExperimentConfig.model_validate({**raw, "teacher": {"kind": "reference"}, "engine": {"kind": "vllm"}})
    recording = ExperimentConfig.model_validate({**raw, "teacher": {"kind": "reference"}})
    assert recording.plays_reference and recording.serves_a_book
    # Outside a recording the teacher answers nothing: a training config may carry it for `openforge record`.
    training = ExperimentConfig.model_validate({**raw, "evaluation": None, "teacher": {"kind": "reference"}})
    assert training.recording_teacher is None and not training.serves_a_book


def test_a_priced_teacher_costs_its_tokens_at_its_prices() -> None:
    teacher = TeacherConfig(kind="endpoint", url="http://h:1", model="m", usd_per_million_tokens={"prompt": 3, "completion": 15})
    assert teacher.usd_per_million_tokens.cost({"prompt": 2_000_000, "completion": 100_000}) == pytest.approx(7.5)


def test_a_teachers_egress_defaults_to_public_addresses_on_its_port() -> None:
    from pipelines.teacher_egress import teacher_egress_policy

    raw = {"name": "rec", "tasks": {"source": "x"}, "evaluation": {"id": "e", "checkpoint": "base", "recording": True},
           "teacher": {"kind": "endpoint", "url": "https://api.teacher.example/v1", "model": "m"}}  # fmt: skip
    (rule,) = teacher_egress_policy(ExperimentConfig.model_validate(raw))["spec"]["egress"]
    assert rule["ports"] == [{"protocol": "TCP", "port": 443}]
    (peer,) = rule["to"]
    assert peer["ipBlock"]["cidr"] == "0.0.0.0/0" and {"10.0.0.0/8", "169.254.0.0/16"} <= set(peer["ipBlock"]["except"])
    with pytest.raises(ValidationError, match=r"teacher.egress_cidrs: .* \(write an address block"):
        TeacherConfig(kind="endpoint", url="http://h:1", model="m", egress_cidrs=["api.teacher.example"])


def test_a_checkpoint_teacher_is_served_by_the_recording_and_recorded_as_text(tmp_path) -> None:
    from pipelines.evaluate import eval_config
    from pipelines.rollout_pod import _proxy_sidecar

    teacher = tmp_path / "teacher"
    teacher.mkdir()
    raw = {"name": "r", "model": {"tiny_seed": 3}, "tasks": {"source": "x"}, "engine": {"kind": "vllm"},
           "teacher": {"kind": "checkpoint", "path": str(teacher)}}  # fmt: skip
    config = ExperimentConfig.model_validate(raw)
    recording = eval_config(config, "base", eval_id="e", recording=True)
    # The serve step serves the teacher as a base model, with the config's engine (vLLM here).
    assert recording.model.path == str(teacher) and recording.evaluation.checkpoint == "base"
    assert recording.served_teacher is not None and recording.endpoint_teacher is None and not recording.serves_a_book
    command = _proxy_sidecar(recording).command
    assert "--teacher" in command and "--training" not in command
    # Outside a recording the policy is served, as ever.
    assert config.served_teacher is None and "--training" in _proxy_sidecar(config).command
    missing = ExperimentConfig.model_validate({**raw, "teacher": {"kind": "checkpoint", "path": str(tmp_path / "none")}})
    with pytest.raises(ConfigError, match="teacher.path .* is neither a folder nor an s3:// prefix"):
        eval_config(missing, "base", recording=True)
    with pytest.raises(ConfigError, match="serves its teacher.path"):
        eval_config(config, "latest", recording=True)
