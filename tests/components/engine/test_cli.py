"""The engine's command lines: help answers, bad settings fail with a message."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from components.engine.cli import engine_app, model_app
from tests._servers import REPO


def test_help_of_every_command_answers() -> None:
    runner = CliRunner()
    for app, args, option in [
        (model_app, ["--help"], "init-tiny"),
        (model_app, ["init-tiny", "--help"], "--seed"),
        (engine_app, ["--help"], "serve"),
        (engine_app, ["serve", "--help"], "--served-model-name"),
    ]:
        result = runner.invoke(app, args)
        assert result.exit_code == 0 and option in result.output, result.output


def test_module_entry_point_answers_help_without_loading_torch() -> None:
    argv = [sys.executable, "-X", "importtime", "-m", "components.engine", "--help"]
    out = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "serve" in out.stdout, out.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}
    assert "components.engine.cli" in imported and not {"torch", "transformers", "aiohttp"} & imported


def test_serve_refuses_an_invalid_script_naming_the_file(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text('{"turns": [{"tool_calls": [{"arguments": {}}]}]}')
    result = CliRunner().invoke(engine_app, ["serve", "--model", str(tmp_path), "--script", str(script)])
    assert result.exit_code == 2 and str(script) in result.output and "name" in result.output


def test_serve_refuses_a_directory_without_a_model(tmp_path: Path) -> None:
    result = CliRunner().invoke(engine_app, ["serve", "--model", str(tmp_path)])
    assert result.exit_code == 2 and "init-tiny" in result.output


def test_init_tiny_vision_writes_a_qwen2_vl_model_with_its_image_processor(tmp_path: Path) -> None:
    import json

    result = CliRunner().invoke(model_app, ["init-tiny", str(tmp_path / "vl"), "--vision"])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "vl" / "config.json").read_text())["model_type"] == "qwen2_vl"
    assert json.loads((tmp_path / "vl" / "preprocessor_config.json").read_text())["merge_size"] == 2
