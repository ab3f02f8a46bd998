"""The experiment config refuses mistakes at the edge, naming the field and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.core.config import ConfigError, config_from_text, load_config

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def _load(tmp_path: Path, text: str):
    path = tmp_path / "exp.yaml"
    path.write_text(text)
    return load_config(path)


def test_minimal_config_gets_defaults(tmp_path: Path) -> None:
    config = _load(tmp_path, "name: demo\ntasks: {source: examples/tasks/quickstart}\n")
    assert config.rollout.samples_per_task == 4
    assert config.storage.uri.startswith("file://")


def test_misspelled_field_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"rollout\.samples_per_tsk: unknown field"):
        _load(tmp_path, "name: demo\ntasks: {source: x}\nrollout: {samples_per_tsk: 3}\n")


def test_missing_tasks_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"tasks: required field is missing"):
        _load(tmp_path, "name: demo\n")


def test_bad_name_explains_the_rule(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"name: .*lower-case letters"):
        _load(tmp_path, "name: My_Run\ntasks: {source: x}\n")


def test_bad_storage_scheme(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"storage\.uri: .*file:// or s3://"):
        _load(tmp_path, "name: demo\ntasks: {source: x}\nstorage: {uri: 'http://bucket'}\n")


def test_harness_mode_is_checked_against_the_harness(tmp_path: Path) -> None:
    config = _load(tmp_path, "name: demo\ntasks: {source: x}\nharness: {name: stagehand, mode: messages}\n")
    assert config.harness.mode == "messages"
    with pytest.raises(ConfigError, match=r"harness: .*'anthropic' is not a stagehand mode; use one of: responses, messages, chat"):
        _load(tmp_path, "name: demo\ntasks: {source: x}\nharness: {name: stagehand, mode: anthropic}\n")
    with pytest.raises(ConfigError, match=r"harness: .*harness 'codex' has no modes: remove harness.mode"):
        _load(tmp_path, "name: demo\ntasks: {source: x}\nharness: {name: codex, mode: chat}\n")


def test_wrong_type_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"rollout\.concurrency"):
        _load(tmp_path, "name: demo\ntasks: {source: x}\nrollout: {concurrency: many}\n")


def test_missing_file_and_bad_yaml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "absent.yaml")
    with pytest.raises(ConfigError, match="not valid YAML"):
        config_from_text("name: [unclosed")
    with pytest.raises(ConfigError, match="mapping of fields"):
        config_from_text("- a list")


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_example_configs_validate(path: Path) -> None:
    assert load_config(path).name


def _refuses_rollout_fields(tmp_path: Path, *bad_sections: str) -> None:
    """Each ``{field: value}`` as the rollout section is refused, naming the field."""
    for bad in bad_sections:
        field = bad.strip("{}").split(":")[0]
        with pytest.raises(ConfigError, match=rf"rollout\.{field}"):
            _load(tmp_path, f"name: demo\ntasks: {{source: x}}\nrollout: {bad}\n")


def test_reliability_limits_default_and_bounds(tmp_path: Path) -> None:
    config = _load(tmp_path, "name: demo\ntasks: {source: x}\n")
    assert (config.rollout.infra_retries, config.rollout.max_output_mb) == (2, 64.0)
    _refuses_rollout_fields(tmp_path, "{infra_retries: -1}", "{infra_retries: 99}", "{max_output_mb: 0}")


def test_the_straggler_cut_is_off_by_default_and_must_leave_enough_usable(tmp_path: Path) -> None:
    config = _load(tmp_path, "name: demo\ntasks: {source: x}\n")
    assert (config.rollout.finish_fraction, config.rollout.grace_s) == (1.0, 30.0)
    _refuses_rollout_fields(tmp_path, "{finish_fraction: 0}", "{finish_fraction: 1.5}", "{grace_s: -1}")
    with pytest.raises(ConfigError, match=r"finish_fraction 0\.4 is below rollout\.min_usable_fraction 0\.5"):
        _load(tmp_path, "name: demo\ntasks: {source: x}\nrollout: {finish_fraction: 0.4}\n")
    assert _load(tmp_path, "name: demo\ntasks: {source: x}\nrollout: {finish_fraction: 0.4, min_usable_fraction: 0.3}\n")


def test_unconstrained_json_is_for_the_dev_engine_only(tmp_path: Path) -> None:
    assert _load(tmp_path, "name: demo\ntasks: {source: x}\nengine: {dev_unconstrained_json: true}\n").engine.dev_unconstrained_json
    with pytest.raises(ConfigError, match="dev_unconstrained_json applies to the dev engine only"):
        _load(tmp_path, "name: demo\ntasks: {source: x}\nengine: {kind: vllm, dev_unconstrained_json: true}\n")


def test_row_limits_follow_the_engine_unless_set_and_must_fit_it(tmp_path: Path) -> None:
    config = _load(tmp_path, "name: x\ntasks: {source: t}\nengine: {max_model_len: 24000}\n")
    assert config.algorithm.row_limits(config.engine.max_model_len) == (24000, 24000)
    assert not config.algorithm.allow_empty_update

    set_one = _load(tmp_path, "name: x\ntasks: {source: t}\nalgorithm: {max_response_tokens: 4096}\n")
    assert set_one.algorithm.row_limits(set_one.engine.max_model_len) == (32768, 4096)

    too_long = "name: x\ntasks: {source: t}\nengine: {max_model_len: 16384}\nalgorithm: {max_prompt_tokens: 22000}\n"
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, too_long)
    message = str(caught.value)
    assert "algorithm.max_prompt_tokens 22000 exceeds engine.max_model_len 16384" in message
    assert "Remove algorithm.max_prompt_tokens" in message and "raise engine.max_model_len" in message
