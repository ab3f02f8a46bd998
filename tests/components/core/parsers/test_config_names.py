"""Parser names are checked where configs load: an unknown one fails, naming the supported ones."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from components.core.vllm_config import VllmConfig
from components.engine.vllm_launch import vllm_serve_command
from components.proxy.config import ProxyConfig


@pytest.mark.parametrize("field", ["tool_call_parser", "reasoning_parser"])
def test_an_unknown_parser_is_refused_with_the_supported_names(field: str, tmp_path) -> None:
    with pytest.raises(ValidationError) as engine:
        VllmConfig(**{field: "nonsense"})
    with pytest.raises(ValidationError) as proxy:
        ProxyConfig(upstream="http://127.0.0.1:1", out=tmp_path, **{field: "nonsense"})
    for error in (engine, proxy):
        message = str(error.value)
        assert "'nonsense' is not supported" in message
        expected = ("hermes", "qwen3_coder", "llama3_json", "mistral") if field == "tool_call_parser" else ("qwen3", "deepseek_r1")
        assert all(name in message for name in expected)


def test_the_configured_formats_reach_vllms_flags(tmp_path) -> None:
    from components.core.config import ExperimentConfig
    from components.engine.vllm_launch import StagedPolicy

    vllm = {"tool_call_parser": "qwen3_coder", "reasoning_parser": "qwen3"}
    config = ExperimentConfig(name="unit", tasks={"source": "t"}, engine={"kind": "vllm", "vllm": vllm})
    argv = vllm_serve_command(config, StagedPolicy(tmp_path, "1", "m"), host="h", port=1).argv
    assert argv[argv.index("--tool-call-parser") + 1] == "qwen3_coder" and "--enable-auto-tool-choice" in argv
    assert argv[argv.index("--reasoning-parser") + 1] == "qwen3"
